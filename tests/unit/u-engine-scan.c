/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The scanner: which pages it arms, how far one pass goes, its lazy page
 * table, its period and how the adaptive policy slows it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib-engine.h"
#include "lib-run.h"

static void normal_too(struct tb_knobs *k)
{
	k->numa_balancing = TB_NUMA_BALANCING_MEMORY_TIERING | TB_NUMA_BALANCING_NORMAL;
}

static void test_fast_tier_not_scanned(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
	place(f, 0, 1000, 0);
	place(f, 1000, 1000, 1);
	advance(f, 1);
	assert_int_equal(f->armed_on[0], 0);
	assert_int_equal(f->armed_on[1], 1000);
	for (uint32_t p = 0; p < 2000; p++)
		if (f->armed[p])
			fault(f, p);
	assert_int_equal(ctr(f, TB_C_numa_hint_faults_local), 0);
	destroy(f);
	/* with the NORMAL bit set the fast tier is scanned too */
	f = make(TB_POLICY_PROMOTE, normal_too);
	place(f, 0, 1000, 0);
	place(f, 1000, 1000, 1);
	advance(f, 1);
	assert_int_equal(f->armed_on[0], 1000);
	fault(f, 0);
	assert_int_equal(ctr(f, TB_C_numa_hint_faults_local), 1);
	destroy(f);
}

/* The scanner walks only a space's extent (the live daemon's pools span the
 * machine; its targets use the first chunks), and the whole space again once
 * the extent grows. */
static void test_scan_extent(void **state)
{
	struct fake *f = *state;
	place(f, 0, 500, 1);
	place(f, 2000, 500, 1);
	assert_int_equal(tb_engine_set_space_extent(f->e, 0, NR_PAGES + 1), -EINVAL);
	assert_int_equal(tb_engine_set_space_extent(f->e, 1, 10), -EINVAL);
	assert_int_equal(tb_engine_set_space_extent(f->e, 0, 1000), 0);
	advance(f, 1);
	assert_int_equal(f->armed_on[1], 500);
	assert_false(f->armed[2000]);
	assert_int_equal(tb_engine_set_space_extent(f->e, 0, 0), 0);
	advance(f, 5000);
	assert_int_equal(f->armed_on[1], 500); /* nothing to walk */
	assert_int_equal(tb_engine_set_space_extent(f->e, 0, NR_PAGES), 0);
	advance(f, 5000);
	assert_int_equal(f->armed_on[1], 1000);
	assert_true(f->armed[2000] && f->armed[2499]);
}

static long rss_kib(void)
{
	long pages = -1, resident = -1;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = -1;
		fclose(f);
	}
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* fresh anonymous memory, as the live daemon's table comes (calloc could
 * write it all: meson's MALLOC_PERTURB_ makes glibc's do so) */
static void *t_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void t_free(void *ctx, void *p, size_t bytes)
{
	(void)ctx;
	munmap(p, bytes);
}

/* A zeroed page table means "no page here", so a table sized for a big
 * machine (the live daemon's, for all of memory) costs memory only where
 * pages are placed. */
static void test_table_lazy(void **state)
{
	static const struct tb_platform_ops lazy_platform = {f_now, f_migrate, f_young, t_alloc, t_free, f_split};
	(void)state;
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	const uint32_t pages = 1u << 24; /* 256 MiB of table at 16 bytes a page */
	struct tb_engine_config c = config(f, TB_POLICY_PROMOTE, pages, &lazy_platform);
	long before = rss_kib();
	assert_true(before > 0);
	char err[256] = "";
	assert_int_equal(tb_engine_new(&f->e, &c, err, sizeof(err)), 0);
	assert_int_equal(tb_engine_add_space(f->e, 0, pages, 0, 0), 0);
	place(f, 0, 1000, 0);
	place(f, 1000, 1000, 1);
	assert_int_equal(tb_engine_page_node(f->e, 999), 0);
	assert_int_equal(tb_engine_page_node(f->e, 1000), 1);
	assert_int_equal(tb_engine_page_node(f->e, 2000), TB_NO_NODE);
	assert_int_equal(tb_engine_page_node(f->e, pages - 1), TB_NO_NODE);
	tb_engine_unplace(f->e, 5);
	assert_int_equal(tb_engine_page_node(f->e, 5), TB_NO_NODE);
	assert_int_equal(tb_engine_place(f->e, 5, 1, false), 0);
	assert_int_equal(tb_engine_page_node(f->e, 5), 1);
	long grown = rss_kib() - before;
	if (grown > 16 * 1024)
		fail_msg("a 256 MiB table with 2,000 pages placed grew the process by %ld KiB", grown);
	/* last: the check reads every entry, which some kernels count as resident */
	if (tb_engine_check(f->e, err, sizeof(err)))
		fail_msg("invariant broken: %s", err);
	tb_engine_free(f->e);
	free(f);
}

static void slow_scan(struct tb_knobs *k)
{
	k->scan_period_min_ms = 1000;
	k->scan_period_max_ms = 8000;
	/* faults come 50 ms after the scan: too late to promote, so the pages
	 * stay on the slow tier and keep being scanned */
	k->hot_threshold_ms = 1;
	k->free_space_bypass = 0;
	k->threshold_adjust = 0;
}

static void test_scan_period_adapts(void **state)
{
	struct fake *f = *state;
	place(f, 0, 64, 1);
	struct tb_space *sp = &f->e->spaces[0];
	assert_int_equal(sp->period_ms, 1000);
	/* passes without a fault: the period doubles up to the maximum */
	uint32_t seen[8], n = 0;
	for (int i = 0; i < 400 && n < 8; i++) { /* 40 s: enough for passes of 1+2+4+8 s and more */
		uint32_t before = sp->period_ms;
		advance(f, 100);
		if (sp->period_ms != before)
			seen[n++] = sp->period_ms;
	}
	assert_int_equal(n, 3); /* then it stays at the maximum */
	assert_int_equal(seen[0], 2000);
	assert_int_equal(seen[1], 4000);
	assert_int_equal(seen[2], 8000);
	assert_int_equal(sp->period_ms, 8000);
	/* passes where every fault is remote (slow tier): it shrinks back to the minimum */
	for (int i = 0; i < 600 && sp->period_ms > 1000; i++) { /* passes of 8 s, then 2.4 s */
		advance(f, 50);
		fault_all_armed_slow(f, 64);
	}
	assert_int_equal(sp->period_ms, 1000);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 0);
}

static void adaptive_scan(struct tb_knobs *k)
{
	slow_scan(k);
	k->hot_threshold_ms = 100; /* adaptive grows it at most to 200 ms */
}

static void test_adaptive_slows_scanner(void **state)
{
	(void)state;
	/* faults 300 ms after the scan never promote: the plain policy keeps
	 * scanning at the fastest period, adaptive backs off to the slowest */
	for (int adaptive = 0; adaptive < 2; adaptive++) {
		struct fake *f =
			make(TB_POLICY_PROMOTE | TB_POLICY_HOT | (adaptive ? TB_POLICY_ADAPTIVE : 0), adaptive_scan);
		f->e->k.threshold_adjust = 0;
		place(f, 0, 64, 1);
		struct tb_space *sp = &f->e->spaces[0];
		for (int i = 0; i < 600; i++) {
			advance(f, 50);
			for (uint32_t p = 0; p < 64; p++)
				if (f->armed[p] && f->now - f->e->meta[p].scan_ms * 1000000ull >= 300000000ull)
					fault(f, p);
		}
		assert_int_equal(ctr(f, TB_C_pgpromote_success), 0);
		assert_true(ctr(f, TB_C_numa_hint_faults) > 0);
		assert_int_equal(sp->period_ms, adaptive ? 8000 : 1000);
		destroy(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast_tier_not_scanned),
		engine_test(test_scan_extent, TB_POLICY_PROMOTE, NULL),
		cmocka_unit_test(test_table_lazy),
		engine_test(test_scan_period_adapts, TB_POLICY_PROMOTE | TB_POLICY_HOT, slow_scan),
		cmocka_unit_test(test_adaptive_slows_scanner),
	};
	return tb_test_run("engine-scan", tests, sizeof(tests) / sizeof(tests[0]));
}
