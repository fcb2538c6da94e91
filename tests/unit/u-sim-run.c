/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Simulated runs: the access distributions, determinism, the engine's
 * invariants at every interval, the oracle, run errors and the reports. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sim/dist.h"
#include "sim/machine.h"
#include "sim/oracle.h"
#include "sim/report.h"
#include "sim/sim.h"
#include "sim/trace.h"
#include "sim/workload.h"
#include "lib-run.h"
#include "lib-sim.h"

static void test_distributions(void **state)
{
	(void)state;
	struct tb_gauss_table *g = malloc(sizeof(*g));
	assert_non_null(g);
	tb_gauss_table_init(g);
	assert_true(fabs(g->q[TB_GAUSS_N / 2]) < 1e-3);
	/* Phi(1) = 0.8413 */
	assert_true(fabs(g->q[(unsigned)(0.8413447 * TB_GAUSS_N)] - 1.0) < 1e-3);
	assert_true(fabs(g->q[TB_GAUSS_N / 4] + g->q[3 * TB_GAUSS_N / 4]) < 1e-3);
	/* the second level reaches far into the tail: Phi^-1(1 / 4096^2) = -5.2947 */
	assert_true(fabs(g->tail[1] + 5.2947) < 1e-3);
	assert_true(fabs(g->q[1] + 3.4871) < 1e-3);              /* Phi^-1(1 / 4096) */
	assert_true(fabs(g->tail[TB_GAUSS_N] - g->q[1]) < 1e-4); /* and joins the first */
	/* the sampler: mean 0, sigma as asked, and the tail mass of a true Gaussian */
	struct tb_gauss_offsets *o = malloc(sizeof(*o));
	assert_non_null(o);
	tb_gauss_offsets_init(o, g, 10000);
	struct tb_rng gr;
	rng_seed(&gr, 3);
	double sum = 0, sq = 0;
	unsigned beyond4 = 0, beyond5 = 0, draws = 1u << 24;
	for (unsigned i = 0; i < draws; i++) {
		double v = (double)gauss_offset(o, rng_next(&gr));
		sum += v;
		sq += v * v;
		beyond4 += fabs(v) > 40000;
		beyond5 += fabs(v) > 50000;
	}
	double mean = sum / draws, sd = sqrt(sq / draws - mean * mean);
	assert_true(fabs(mean) < 20);
	assert_true(fabs(sd - 10000) < 30);
	/* P(|Z| > 4) = 6.33e-5: 1062 of 2^24; P(|Z| > 5) = 5.7e-7: about 10 */
	assert_true(beyond4 > 900 && beyond4 < 1230);
	assert_true(beyond5 >= 2 && beyond5 < 30);
	free(o);
	free(g);
	struct tb_zipf z;
	struct tb_rng r;
	rng_seed(&r, 7);
	tb_zipf_init(&z, 1000, 1.0);
	unsigned c1 = 0, c2 = 0, n = 200000;
	for (unsigned i = 0; i < n; i++) {
		uint64_t k = tb_zipf_next(&z, &r);
		assert_true(k >= 1 && k <= 1000);
		c1 += k == 1;
		c2 += k == 2;
	}
	/* P(1)/P(2) = 2^s = 2, and P(1) = 1/H(1000) = 0.1336 */
	assert_true(fabs((double)c1 / c2 - 2.0) < 0.1);
	assert_true(fabs((double)c1 / n - 0.1336) < 0.005);
	uint64_t s = tb_zipf_stride(1000);
	assert_true(s % 2 == 1 && s % 5 != 0);
}

static void load(struct tb_machine *m, struct tb_workload *w, const char *wl)
{
	char err[512];
	if (tb_machine_parse(m, "tiny", tiny_machine, err, sizeof(err)) ||
	    tb_workload_parse(w, "w", wl, err, sizeof(err)))
		fail_msg("%s", err);
}

static const char small_gauss[] = "[workload]\nname = g\n[process a]\nanon_mib = 160\ndistribution = gaussian\n"
				  "stddev = 0.05\nread_ratio = 0.8\n";

static void run(const struct tb_machine *m, const struct tb_workload *w, uint32_t policy, bool oracle, uint64_t seed,
		bool check, struct tb_sim_result *res)
{
	struct tb_sim_config c = {.machine = m,
				  .workload = w,
				  .policy = policy,
				  .oracle = oracle,
				  .seed = seed,
				  .duration_s = 4,
				  .interval_s = 0.25,
				  .check = check};
	tb_knobs_default(&c.knobs);
	char err[512];
	if (tb_sim_run(&c, res, err, sizeof(err)))
		fail_msg("sim_run: %s", err);
}

static void test_determinism(void **state)
{
	(void)state;
	struct tb_machine m;
	struct tb_workload w;
	load(&m, &w, small_gauss);
	struct tb_sim_result a, b, c;
	run(&m, &w, TB_POLICY_PROMOTE | TB_POLICY_HOT, false, 42, false, &a);
	run(&m, &w, TB_POLICY_PROMOTE | TB_POLICY_HOT, false, 42, false, &b);
	run(&m, &w, TB_POLICY_PROMOTE | TB_POLICY_HOT, false, 43, false, &c);
	assert_true(a.accesses > 1000000);
	assert_true(a.counters[TB_C_pgpromote_success] > 0);
	assert_int_equal(a.nr_rows, 16);
	assert_int_equal(a.nr_rows, b.nr_rows);
	assert_memory_equal(a.counters, b.counters, sizeof(a.counters));
	assert_memory_equal(a.rows, b.rows, a.nr_rows * sizeof(*a.rows));
	assert_true(a.accesses != c.accesses || memcmp(a.counters, c.counters, sizeof(a.counters)));
	tb_sim_result_free(&a);
	tb_sim_result_free(&b);
	tb_sim_result_free(&c);
	tb_workload_free(&w);
}

/* The same process with and without huge pages: with them, its first-touch
 * memory on the fast node is huge, a hint fault covers 512 pages, huge pages
 * move whole, and the engine's books hold at every interval; the oracle maps
 * every eligible run huge. */
static void test_thp_always_vs_never(void **state)
{
	(void)state;
	struct tb_machine m;
	struct tb_workload never, always;
	load(&m, &never, small_gauss);
	char text[512];
	snprintf(text, sizeof(text), "%sthp = always\n", small_gauss);
	load(&m, &always, text);
	struct tb_sim_result a, b, o;
	run(&m, &never, TB_POLICY_PROMOTE | TB_POLICY_HOT, false, 7, true, &a);
	run(&m, &always, TB_POLICY_PROMOTE | TB_POLICY_HOT, false, 7, true, &b);
	run(&m, &always, 0, true, 7, false, &o);
	assert_int_equal(a.anon_huge_pages, 0);
	assert_int_equal(a.counters[TB_C_thp_fault_alloc], 0);
	assert_true(b.anon_huge_pages > 0);
	assert_true(b.counters[TB_C_thp_fault_alloc] > 0);
	assert_true(b.counters[TB_C_numa_huge_pte_updates] > 0);
	assert_true(b.counters[TB_C_thp_migration_success] > 0);
	assert_true(b.counters[TB_C_numa_hint_faults] < a.counters[TB_C_numa_hint_faults]);
	assert_int_equal(o.anon_huge_pages, o.anon_pages); /* 160 MiB: every run whole */
	tb_sim_result_free(&a);
	tb_sim_result_free(&b);
	tb_sim_result_free(&o);
	tb_workload_free(&never);
	tb_workload_free(&always);
	struct tb_workload bad;
	char err[256];
	snprintf(text, sizeof(text), "%sthp = sometimes\n", small_gauss);
	assert_int_equal(tb_workload_parse(&bad, "w", text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'sometimes' is not one of always, madvise, never"));
}

static void test_invariants_every_interval(void **state)
{
	(void)state;
	const char *workloads[] = {
		small_gauss,
		/* page cache warmed first, plus anon, plus a phase change and a second process */
		"[workload]\nname = mix\n[process c]\nfile_mib = 48\nfile_first = yes\nfile_share = 0.3\n"
		"file_distribution = zipf\nanon_mib = 96\ndistribution = gaussian\nstddev = 0.1\n"
		"[process u]\nanon_mib = 40\ndistribution = uniform\nread_ratio = 0.5\nweight = 0.5\n"
		"[phase s]\nat_s = 2\nprocess = c\ncenter = 0.9\n",
		/* first touch during the run: allocation pressure, direct demotion */
		"[workload]\nname = grow\n[process a]\nanon_mib = 200\nprefault = no\ndistribution = uniform\n",
	};
	const uint32_t policies[] = {0, TB_POLICY_PROMOTE, TB_POLICY_PROMOTE | TB_POLICY_HOT,
				     TB_POLICY_PROMOTE | TB_POLICY_ACTIVE_LRU,
				     TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ACTIVE_LRU};
	for (size_t i = 0; i < 3; i++) {
		struct tb_machine m;
		struct tb_workload w;
		load(&m, &w, workloads[i]);
		for (size_t p = 0; p < 6; p++) {
			struct tb_sim_result r;
			run(&m, &w, p < 5 ? policies[p] : 0, p == 5, 1, true, &r);
			assert_int_equal(r.checks, r.nr_rows);
			assert_true(r.checks >= 16);
			tb_sim_result_free(&r);
		}
		tb_workload_free(&w);
	}
}

static void test_oracle_is_upper_bound(void **state)
{
	(void)state;
	struct tb_machine m;
	struct tb_workload w;
	load(&m, &w, small_gauss);
	struct tb_sim_result o, none, hot;
	run(&m, &w, 0, true, 1, false, &o);
	run(&m, &w, 0, false, 1, false, &none);
	run(&m, &w, TB_POLICY_PROMOTE | TB_POLICY_HOT, false, 1, false, &hot);
	assert_true(o.score >= hot.score);
	assert_true(hot.score > none.score); /* the hot set starts on the slow node */
	assert_true(o.fast_share > 0.95);
	assert_int_equal(o.counters[TB_C_numa_hint_faults], 0);
	tb_sim_result_free(&o);
	tb_sim_result_free(&none);
	tb_sim_result_free(&hot);
	tb_workload_free(&w);
}

static void test_oracle_place(void **state)
{
	(void)state;
	/* 100 pages, uniform except zipf-like hits from a trace: the oracle puts
	 * the most used pages on the cheapest node */
	struct tb_trace t = {0};
	uint64_t hits[10] = {1, 50, 2, 40, 3, 30, 4, 20, 5, 10};
	t.hits = hits;
	t.nr_ops = 165;
	t.nr_pages = 10;
	struct tb_oracle_proc p = {.cpu_node = 0, .cost = {80, 300}};
	p.region[0] = (struct tb_oracle_region){.base = 0, .n = 10, .kind = TB_DIST_TRACE, .share = 1, .trace = &t};
	uint64_t cap[2] = {4, 10};
	uint8_t node[10];
	char err[256];
	assert_int_equal(tb_oracle_place(&p, 1, 2, cap, 10, NULL, node, err, sizeof(err)), 0);
	const uint8_t want[10] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 1};
	assert_memory_equal(node, want, 10);
	cap[0] = 2;
	cap[1] = 2;
	assert_int_equal(tb_oracle_place(&p, 1, 2, cap, 10, NULL, node, err, sizeof(err)), -ENOSPC);
}

static void test_run_errors(void **state)
{
	(void)state;
	struct tb_machine m;
	struct tb_workload w;
	load(&m, &w, "[workload]\nname = big\n[process a]\nanon_mib = 300\n");
	struct tb_sim_config c = {.machine = &m, .workload = &w, .seed = 1, .duration_s = 1, .interval_s = 1};
	tb_knobs_default(&c.knobs);
	struct tb_sim_result r;
	char err[512];
	assert_int_equal(tb_sim_run(&c, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs 300 MiB"));
	tb_workload_free(&w);
	load(&m, &w, "[workload]\nname = w\n[process a]\nanon_mib = 10\ncpu_node = 1\n");
	assert_int_equal(tb_sim_run(&c, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cpu_node: node 1 of machine tiny has no CPUs"));
	tb_workload_free(&w);
}

static void test_reports(void **state)
{
	(void)state;
	struct tb_machine m;
	struct tb_workload w;
	load(&m, &w, small_gauss);
	struct tb_sim_result r[2];
	run(&m, &w, TB_POLICY_PROMOTE, false, 1, false, &r[0]);
	run(&m, &w, 0, true, 1, false, &r[1]);
	struct tb_report rep = {.machine = &m,
				.workload = &w,
				.seed = 1,
				.duration_s = 4,
				.results = r,
				.nr_results = 1,
				.oracle = &r[1]};
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	tb_report_json(f, &rep);
	fclose(f);
	assert_non_null(strstr(buf, "\"policy\": \"always\""));
	assert_non_null(strstr(buf, "\"pgpromote_success\": "));
	assert_non_null(strstr(buf, "\"oracle_pct\": 100,"));
	free(buf);
	f = open_memstream(&buf, &len);
	tb_report_csv(f, &rep);
	fclose(f);
	size_t lines = 0;
	for (char *p = buf; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 1 + r[0].nr_rows + r[1].nr_rows);
	assert_int_equal(strncmp(buf, "policy,t_s,", 11), 0);
	free(buf);
	assert_true(tb_report_oracle_pct(&rep, &r[0]) < 100.0);
	tb_sim_result_free(&r[0]);
	tb_sim_result_free(&r[1]);
	tb_workload_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distributions),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_invariants_every_interval),
		cmocka_unit_test(test_thp_always_vs_never),
		cmocka_unit_test(test_oracle_is_upper_bound),
		cmocka_unit_test(test_oracle_place),
		cmocka_unit_test(test_run_errors),
		cmocka_unit_test(test_reports),
	};
	return tb_test_run("sim-run", tests, sizeof(tests) / sizeof(tests[0]));
}
