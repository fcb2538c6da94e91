/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Promotion: retries, the hot threshold under the rate limit, active-LRU
 * promotion, ping-pong, the adaptive threshold, failed and batched migrations. */
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

static void retry_500(struct tb_knobs *k)
{
	k->promote_retry_ms = 500;
}

static void retry_5000(struct tb_knobs *k)
{
	k->promote_retry_ms = 5000;
}

/* promote_retry_ms: hot pages refused for room move in the tick in which
 * kswapd makes it, not at their next scan; an entry too old, or whose page
 * was scanned again, is dropped. */
static void test_promote_retry(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, retry_500);
	uint32_t next = 64;
	place(f, 0, 64, 1);
	fill_fast(f, &next, info(f, 0).wmark_high);
	advance(f, 1);
	for (uint32_t p = 0; p < 3; p++)
		fault(f, p);
	assert_int_equal(ctr(f, TB_C_promote_fail_wmark), 3);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	advance(f, 1); /* kswapd demotes, then the three move */
	assert_true(ctr(f, TB_C_pgdemote_kswapd) > 0);
	for (uint32_t p = 0; p < 3; p++)
		assert_int_equal(tb_engine_page_node(f->e, p), 0);
	assert_int_equal(ctr(f, TB_C_promote_retried), 3);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 3);

	/* no room for longer than promote_retry_ms: dropped, and it stays */
	fill_fast(f, &next, info(f, 0).wmark_high);
	f->migrate_rc = -16; /* EBUSY: kswapd cannot demote either */
	fault(f, 3);
	advance(f, 600);
	assert_int_equal(ctr(f, TB_C_promote_retry_expired), 1);
	f->migrate_rc = 0;
	advance(f, 10);
	assert_int_equal(tb_engine_page_node(f->e, 3), 1);
	assert_int_equal(ctr(f, TB_C_promote_retried), 3);
	destroy(f);

	/* scanned again before there is room: its next fault decides, not the queue */
	f = make(TB_POLICY_PROMOTE, retry_5000);
	next = 64;
	place(f, 0, 64, 1);
	fill_fast(f, &next, info(f, 0).wmark_high);
	advance(f, 1);
	f->migrate_rc = -16;
	fault(f, 0);
	advance(f, 1500); /* the next pass (1 s) arms page 0 again */
	assert_true(f->armed[0]);
	f->migrate_rc = 0;
	advance(f, 10);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	assert_int_equal(ctr(f, TB_C_promote_retried), 0);
	assert_int_equal(ctr(f, TB_C_promote_retry_expired), 0);
	destroy(f);
}

static void rate_limited(struct tb_knobs *k)
{
	k->promote_rate_limit_MBps = 1; /* 256 pages a second */
	k->scan_period_max_ms = 1000;   /* adjust the threshold every second */
	k->scan_period_min_ms = 100;
	k->scan_size_mb = 1; /* windows of 256 pages, every 100 ms / 80 windows */
	k->free_space_bypass = 0;
}

static void test_threshold_follows_rate_limit(void **state)
{
	struct fake *f = *state;
	place(f, 0, SLOW_PAGES, 1);
	uint32_t ref = 1000, unit = ref * 2 / 16;
	/* first second: 400 fresh candidates, well above 256 x 1.1 */
	unsigned got = 0;
	for (int i = 0; i < 20 && got < 400; i++) {
		advance(f, 40);
		got += fault_all_armed_slow(f, 400 - got);
	}
	assert_int_equal(got, 400);
	assert_true(ctr(f, TB_C_pgpromote_candidate) >= 400);
	assert_true(ctr(f, TB_C_promote_fail_ratelimit) > 0); /* the limit bit within the second */
	while (f->now < 1100 * 1000000ull)
		advance(f, 1);
	fault_all_armed_slow(f, 1); /* the first fault after the period adjusts */
	assert_int_equal(info(f, 0).threshold_ms, ref - unit);
	/* next period: almost no candidates, under 256 x 0.9: the threshold climbs back */
	while (f->now < 2200 * 1000000ull)
		advance(f, 1);
	fault_all_armed_slow(f, 1);
	assert_int_equal(info(f, 0).threshold_ms, ref);
	assert_int_equal(ctr(f, TB_C_threshold_adjustments), 2);
}

static void test_cold_page_not_promoted(void **state)
{
	struct fake *f = *state;
	place(f, 0, 256, 1);
	advance(f, 1);
	assert_true(f->armed[0]);
	advance(f, 1500); /* longer than the 1000 ms threshold */
	uint64_t before = ctr(f, TB_C_promote_fail_threshold);
	tb_engine_hint_fault(f->e, 0, false);
	assert_int_equal(ctr(f, TB_C_promote_fail_threshold), before + 1);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
}

static void test_active_lru_second_fault(void **state)
{
	struct fake *f = *state;
	place(f, 0, 64, 1);
	advance(f, 1);
	fault(f, 5);
	assert_int_equal(tb_engine_page_node(f->e, 5), 1); /* first fault: only activated */
	assert_int_equal(ctr(f, TB_C_promote_defer_inactive), 1);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 0);
	assert_int_equal(info(f, 1).lru[1], 1); /* on node 1's active anon list */
	for (int i = 0; i < 300 && !f->armed[5]; i++)
		advance(f, 10); /* the next scan pass re-arms it */
	fault(f, 5);
	assert_int_equal(tb_engine_page_node(f->e, 5), 0);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 1);
}

static void test_pingpong(void **state)
{
	struct fake *f = *state;
	place(f, 0, 2, 1);
	advance(f, 1);
	fault(f, 0); /* page 0 promoted first: the oldest page of the fast node */
	assert_int_equal(tb_engine_page_node(f->e, 0), 0);
	uint32_t next = 2;
	fill_fast(f, &next, info(f, 0).wmark_high);
	fault(f, 1); /* refused: kswapd demotes the fast node's oldest pages */
	advance(f, 5);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	assert_int_equal(ctr(f, TB_C_pingpong_promote_demote), 1);
	assert_int_equal(ctr(f, TB_C_pingpong_demote_promote), 0);
	/* and back again, still within the window: the reverse ping-pong */
	for (int i = 0; i < 300 && !f->armed[0]; i++)
		advance(f, 10);
	fault(f, 0);
	assert_int_equal(tb_engine_page_node(f->e, 0), 0);
	assert_int_equal(ctr(f, TB_C_pingpong_demote_promote), 1);
}

static void short_window(struct tb_knobs *k)
{
	k->pingpong_window_ms = 100;
}

static void test_pingpong_window(void **state)
{
	struct fake *f = *state;
	place(f, 0, 2, 1);
	advance(f, 1);
	fault(f, 0);
	uint32_t next = 2;
	fill_fast(f, &next, info(f, 0).wmark_high);
	advance(f, 500); /* past the 100 ms window */
	fault(f, 1);
	advance(f, 5);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	assert_int_equal(ctr(f, TB_C_pingpong_promote_demote), 0);
}

static void test_adaptive_threshold(void **state)
{
	struct fake *f = *state;
	place(f, 0, 64, 1);
	advance(f, 1);
	/* a period in which 20 of 100 promotions brought back pages demoted
	 * moments before: the threshold halves */
	f->e->counters[TB_C_pgpromote_success] = 100;
	f->e->counters[TB_C_pingpong_demote_promote] = 20;
	advance(f, 1000);
	fault(f, 0);
	assert_int_equal(info(f, 0).threshold_ms, 500);
	/* a period with 100 promotions and no return: it grows by a quarter */
	f->e->counters[TB_C_pgpromote_success] += 100;
	advance(f, 1000);
	fault(f, 1);
	assert_int_equal(info(f, 0).threshold_ms, 500 + 125 + 1);
	/* a period with 1 return in 100 is in the dead band: unchanged */
	f->e->counters[TB_C_pgpromote_success] += 100;
	f->e->counters[TB_C_pingpong_demote_promote] += 3;
	advance(f, 1000);
	fault(f, 2);
	assert_int_equal(info(f, 0).threshold_ms, 626);
	f->e->counters[TB_C_pgpromote_success] = 0; /* the checker does not look at counters */
}

static void test_failed_migration_counted(void **state)
{
	struct fake *f = *state;
	place(f, 0, 4, 1);
	advance(f, 1);
	f->migrate_rc = -16; /* EBUSY */
	fault(f, 0);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	assert_int_equal(ctr(f, TB_C_pgmigrate_fail), 1);
	assert_int_equal(ctr(f, TB_C_promote_fail_migrate), 1);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 0);
}

/* Faults in a batch decide as they would one by one (the watermark sees the
 * pages still waiting to move), and their promotions reach the platform in
 * calls of up to 32 pages; a failed call leaves its pages where they were. */
static void test_batched_promotions(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
	place(f, 0, 100, 1);
	uint32_t next = 100;
	uint64_t high = info(f, 0).wmark_high;
	fill_fast(f, &next, high + 1 + 40); /* room for 40 promotions */
	advance(f, 1);
	tb_engine_batch_begin(f->e);
	for (uint32_t p = 0; p < 100; p++)
		fault(f, p);
	assert_true(f->migrate_calls <= 1); /* the first full batch may have gone */
	tb_engine_batch_end(f->e);
	assert_int_equal(f->migrate_calls, 2);
	assert_int_equal(f->migrate_most, 32);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 40);
	assert_int_equal(ctr(f, TB_C_promote_fail_wmark), 60);
	assert_int_equal(free_pages(f, 0), high + 1);
	for (uint32_t p = 0; p < 100; p++)
		assert_int_equal(tb_engine_page_node(f->e, p), p < 40 ? 0 : 1);

	/* room again; the platform fails the whole batch; a tick flushes a batch left open */
	struct fake *g = make(TB_POLICY_PROMOTE, NULL);
	place(g, 0, 8, 1);
	advance(g, 1);
	g->migrate_rc = -16; /* EBUSY */
	tb_engine_batch_begin(g->e);
	for (uint32_t p = 0; p < 4; p++)
		fault(g, p);
	tb_engine_batch_end(g->e);
	assert_int_equal(ctr(g, TB_C_promote_fail_migrate), 4);
	assert_int_equal(ctr(g, TB_C_pgpromote_success), 0);
	for (uint32_t p = 0; p < 4; p++)
		assert_int_equal(tb_engine_page_node(g->e, p), 1);
	g->migrate_rc = 0;
	tb_engine_batch_begin(g->e);
	fault(g, 4);
	fault(g, 5);
	advance(g, 1);
	assert_int_equal(ctr(g, TB_C_pgpromote_success), 2);
	assert_int_equal(tb_engine_page_node(g->e, 5), 0);
	tb_engine_batch_end(g->e);
	destroy(g);
	destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_promote_retry),
		engine_test(test_threshold_follows_rate_limit, TB_POLICY_PROMOTE | TB_POLICY_HOT, rate_limited),
		engine_test(test_cold_page_not_promoted, TB_POLICY_PROMOTE | TB_POLICY_HOT, rate_limited),
		engine_test(test_active_lru_second_fault, TB_POLICY_PROMOTE | TB_POLICY_ACTIVE_LRU, NULL),
		engine_test(test_pingpong, TB_POLICY_PROMOTE, NULL),
		engine_test(test_pingpong_window, TB_POLICY_PROMOTE, short_window),
		engine_test(test_adaptive_threshold, TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ADAPTIVE, NULL),
		engine_test(test_failed_migration_counted, TB_POLICY_PROMOTE, NULL),
		cmocka_unit_test(test_batched_promotions),
	};
	return tb_test_run("engine-promote", tests, sizeof(tests) / sizeof(tests[0]));
}
