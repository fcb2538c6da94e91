/* Simulator: parsers and their messages, distributions, determinism, and
 * the engine's invariants held at every interval of real runs. */
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

static const char tiny_machine[] = "[machine]\n"
				   "name = tiny\n"
				   "[node 0]\n"
				   "cpus = yes\n"
				   "capacity_mib = 64\n"
				   "read_ns = 80\n"
				   "write_ns = 80\n"
				   "read_mbps = 50000\n"
				   "write_mbps = 50000\n"
				   "[node 1]\n"
				   "capacity_mib = 192\n"
				   "read_ns = 300\n"
				   "write_ns = 100\n"
				   "read_mbps = 20000\n"
				   "write_mbps = 8000\n";

static void expect_machine_error(const char *text, const char *needle)
{
	struct tb_machine m;
	char err[512];
	assert_int_equal(tb_machine_parse(&m, "m.ini", text, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not contain '%s'", err, needle);
}

static void test_machine_parse(void **state)
{
	(void)state;
	struct tb_machine m;
	char err[512];
	assert_int_equal(tb_machine_parse(&m, "tiny", tiny_machine, err, sizeof(err)), 0);
	assert_int_equal(m.nr_nodes, 2);
	assert_int_equal(m.node[1].tier, 1);    /* CPU-less means slow */
	assert_int_equal(m.node[0].demote_to, 1); /* automatic demotion target */
	assert_int_equal(m.node[0].capacity_pages, 64 * 256);
	/* copy = 4096 B at the slower of 50000 MB/s read and 8000 MB/s write */
	assert_true(fabs(tb_machine_migrate_ns(&m, 0, 1) - (3000 + 4096.0 / 8000 * 1000)) < 1e-9);
	expect_machine_error("[machine]\nname = x\n[node 0]\ncpus = maybe\n", "m.ini:4: [node 0] cpus: 'maybe'");
	expect_machine_error("[machine]\nname = x\n\n[node 0]\nbogus = 1\n", "m.ini:5: [node 0] bogus: unknown key");
	expect_machine_error("[machine]\nname = x\n[node 0]\nread_ns = fast\n", "m.ini:4: [node 0] read_ns: 'fast'");
	expect_machine_error("[machine]\nname = x\n[node 0]\nread_ns = 1\nread_ns = 2\n", "m.ini:5: [node 0] read_ns: set twice");
	expect_machine_error("[gpu]\nx = 1\n", "m.ini:1: [gpu]: unknown section");
	expect_machine_error("[machine]\nname = m\n[gpu]\n", "m.ini:3: [gpu]: unknown section");
	expect_machine_error("[machine]\nname = m\n[node 0]\n\n", "m.ini:3: [node 0]: empty section");
	expect_machine_error("[machine]\nname = x\nthis is not ini\n", "m.ini:3: not an INI line");
	expect_machine_error("[machine]\nname = x\n[node 0]\ncpus = yes\ncapacity_mib = 64\n", "at least two [node N]");
	expect_machine_error("[machine]\nname = x\n[node 0]\ncpus = yes\ncapacity_mib = 64\n[node 1]\n"
			     "capacity_mib = 64\n", "[node 0] read_ns: missing");
	char gap[1024];
	snprintf(gap, sizeof(gap), "%s[node 3]\ncapacity_mib = 64\n", tiny_machine);
	expect_machine_error(gap, "[node 2] is missing");
	char bad_demote[1024];
	snprintf(bad_demote, sizeof(bad_demote), "%s", tiny_machine);
	strcat(bad_demote, "[node 2]\ncapacity_mib=64\nread_ns=1\nwrite_ns=1\nread_mbps=1\nwrite_mbps=1\ndemote_to=0\n");
	expect_machine_error(bad_demote, "[node 2] demote_to: node 0 is not in a lower tier");
}

static void test_shipped_configs_parse(void **state)
{
	(void)state;
	char err[512];
	const char *machines[] = {"small", "optane-2s", "cxl-1to4"};
	for (size_t i = 0; i < 3; i++) {
		struct tb_machine m;
		if (tb_machine_load(&m, machines[i], err, sizeof(err)))
			fail_msg("%s", err);
	}
	const char *workloads[] = {"gauss", "gauss-wide", "uniform", "zipf", "phase", "tpp-mix", "multi"};
	for (size_t i = 0; i < 7; i++) {
		struct tb_workload w;
		if (tb_workload_load(&w, workloads[i], err, sizeof(err)))
			fail_msg("%s", err);
		tb_workload_free(&w);
	}
	struct tb_machine m;
	assert_int_equal(tb_machine_load(&m, "nosuch", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "shipped: "));
	assert_int_equal(tb_machine_load(&m, "/nonexistent/m.ini", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/m.ini: cannot open"));
}

static void expect_workload_error(const char *text, const char *needle)
{
	struct tb_workload w;
	char err[512];
	assert_int_equal(tb_workload_parse(&w, "w.ini", text, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not contain '%s'", err, needle);
}

static void test_workload_parse(void **state)
{
	(void)state;
	struct tb_workload w;
	char err[512];
	const char *ok = "[workload]\nname = t\n[process a]\nanon_mib = 10\ndistribution = zipf\n"
			 "[phase late]\nat_s = 5\nprocess = a\ncenter = 0.9\n[phase early]\nat_s = 1\nprocess = a\n";
	assert_int_equal(tb_workload_parse(&w, "w.ini", ok, err, sizeof(err)), 0);
	assert_int_equal(w.nr_procs, 1);
	assert_int_equal(w.proc[0].anon.pages, 2560);
	assert_int_equal(w.proc[0].anon.kind, TB_DIST_ZIPF);
	assert_string_equal(w.phase[0].name, "early"); /* sorted by time */
	tb_workload_free(&w);
	expect_workload_error("[workload]\nname = t\n[process a]\nanon_mib = -1\n", "w.ini:4: [process a] anon_mib");
	expect_workload_error("[workload]\nname = t\n[process a]\nread_ratio = 1.5\n", "w.ini:4: [process a] read_ratio: 1.5 is outside");
	expect_workload_error("[workload]\nname = t\n[process a]\ndistribution = pareto\n", "w.ini:4: [process a] distribution");
	expect_workload_error("[workload]\nname = t\n[phase p]\nprocess = b\n", "w.ini:4: [phase p] process: no [process b]");
	expect_workload_error("[workload]\nname = t\n[process a]\nanon_mib = 8\nfile_share = 0.5\n", "file_share");
	expect_workload_error("[workload]\nname = t\n", "no [process NAME] section");
	expect_workload_error("[process a]\nanon_mib = 8\n", "[workload] name: missing");
	expect_workload_error("[workload]\nname = t\n[process a]\nanon_mib = 8\ntrace = /nonexistent.trace\n",
			      "[process a] trace: /nonexistent.trace: cannot open");
}

static void test_trace(void **state)
{
	(void)state;
	struct tb_trace *t;
	char err[512];
	const char *text = "# a comment\ntierbal-trace 1\nR 0x3000\nw 0x1000\nR 12288 # again page 3\nW 0x1fff\n";
	assert_int_equal(tb_trace_parse(&t, "t", text, err, sizeof(err)), 0);
	assert_int_equal(t->nr_ops, 4);
	assert_int_equal(t->nr_pages, 2); /* pages 1 and 3, densely renumbered 0 and 1 */
	assert_int_equal(t->ops[0], 1);
	assert_int_equal(t->ops[1], 0 | TB_TRACE_WRITE);
	assert_int_equal(t->ops[2], 1);
	assert_int_equal(t->ops[3], 0 | TB_TRACE_WRITE);
	assert_int_equal(t->hits[0], 2);
	tb_trace_free(t);
	assert_int_equal(tb_trace_parse(&t, "t", "R 0x1000\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:1: expected the header"));
	assert_int_equal(tb_trace_parse(&t, "t", "tierbal-trace 1\nR 0x1000\nX 0x2000\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:3: op"));
	assert_int_equal(tb_trace_parse(&t, "t", "tierbal-trace 1\nR 0xzz\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:2: address"));
	assert_int_equal(tb_trace_parse(&t, "t", "tierbal-trace 1\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no accesses"));
}

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
	assert_true(fabs(g->q[1] + 3.4871) < 1e-3); /* Phi^-1(1 / 4096) */
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
	if (tb_machine_parse(m, "tiny", tiny_machine, err, sizeof(err)) || tb_workload_parse(w, "w", wl, err, sizeof(err)))
		fail_msg("%s", err);
}

static const char small_gauss[] = "[workload]\nname = g\n[process a]\nanon_mib = 160\ndistribution = gaussian\n"
				  "stddev = 0.05\nread_ratio = 0.8\n";

static void run(const struct tb_machine *m, const struct tb_workload *w, uint32_t policy, bool oracle, uint64_t seed,
		bool check, struct tb_sim_result *res)
{
	struct tb_sim_config c = {.machine = m, .workload = w, .policy = policy, .oracle = oracle, .seed = seed,
			       .duration_s = 4, .interval_s = 0.25, .check = check};
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
	assert_int_equal(tb_oracle_place(&p, 1, 2, cap, 10, node, err, sizeof(err)), 0);
	const uint8_t want[10] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 1};
	assert_memory_equal(node, want, 10);
	cap[0] = 2;
	cap[1] = 2;
	assert_int_equal(tb_oracle_place(&p, 1, 2, cap, 10, node, err, sizeof(err)), -ENOSPC);
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
	struct tb_report rep = {.machine = &m, .workload = &w, .seed = 1, .duration_s = 4, .results = r, .nr_results = 1,
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
		cmocka_unit_test(test_machine_parse),      cmocka_unit_test(test_shipped_configs_parse),
		cmocka_unit_test(test_workload_parse),     cmocka_unit_test(test_trace),
		cmocka_unit_test(test_distributions),      cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_invariants_every_interval), cmocka_unit_test(test_oracle_is_upper_bound),
		cmocka_unit_test(test_oracle_place),       cmocka_unit_test(test_run_errors),
		cmocka_unit_test(test_reports),
	};
	return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
