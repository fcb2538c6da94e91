/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reclaim: the watermarks (v13, v10, boost), kswapd's wake-ups and its demotion,
 * direct demotion, TPP's demotion watermark, memory of other programs, second chance. */
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

static void test_watermarks(void **state)
{
	(void)state;
	/* kernel rules: min_free_kbytes = sqrt(16 x KiB), split by node size;
	 * distance = max(min/4, present x scale_factor / 10000) */
	uint64_t total_kb = (uint64_t)NR_PAGES * 4, min_kb = 0;
	while ((min_kb + 1) * (min_kb + 1) <= total_kb * 16)
		min_kb++;
	uint64_t min0 = (min_kb / 4) * FAST_PAGES / NR_PAGES;
	uint64_t tmp = FAST_PAGES * 10 / 10000 > min0 / 4 ? FAST_PAGES * 10 / 10000 : min0 / 4;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
	struct tb_node_info ni = info(f, 0);
	assert_int_equal(ni.wmark_min, min0);
	assert_int_equal(ni.wmark_low, min0 + tmp);
	assert_int_equal(ni.wmark_high, min0 + 2 * tmp);
	assert_int_equal(ni.wmark_promo, min0 + 3 * tmp); /* v13: one more distance */
	destroy(f);
}

/* The kernel's own watermarks are floors. Debian's 6.12 in the tier-layout
 * guest, whose slow node is all ZONE_MOVABLE, keeps min_free_kbytes (45056
 * KiB) on the fast node alone: min 11263, low 14078, high 16893 pages in
 * /proc/zoneinfo, where the knobs' rule (shared by size, as 6.1 does) gives
 * about half. Floors below the knobs' figures change nothing. */
static void test_watermarks_kernel_floor(void **state)
{
	(void)state;
	struct tb_engine_config c = {
		.policy = TB_POLICY_PROMOTE,
		.nr_nodes = 2,
		.nodes = {{.present_pages = 230501,
			   .tier = 0,
			   .demote_to = 1,
			   .socket = 0,
			   .floor_min = 11263,
			   .floor_low = 14078,
			   .floor_high = 16893},
			  {.present_pages = 229376,
			   .tier = 1,
			   .demote_to = -1,
			   .socket = 0,
			   .floor_min = 10,
			   .floor_low = 12,
			   .floor_high = 14}},
		.nr_pages = 64,
		.platform = &fake_platform,
		.sampler = &fake_sampler,
	};
	tb_knobs_default(&c.knobs);
	c.knobs.min_free_kbytes = 45056;
	c.knobs.watermark_scale_factor = 10;
	c.knobs.demote_scale_factor = 200;
	uint64_t min0 = 11264ull * 230501 / (230501 + 229376), tmp0 = min0 / 4; /* the knobs' own figures */
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	c.platform_ctx = c.sampler_ctx = f;
	char err[256];
	assert_int_equal(tb_engine_new(&f->e, &c, err, sizeof(err)), 0);
	struct tb_node_info fast = info(f, 0), slow = info(f, 1);
	assert_int_equal(fast.wmark_min, 11263);
	assert_int_equal(fast.wmark_low, 14078);
	assert_int_equal(fast.wmark_high, 16893);
	assert_int_equal(fast.wmark_promo, 16893 + (16893 - 14078)); /* one distance above high */
	assert_int_equal(fast.wmark_demote, 16893 + 230501 * 200 / 10000);
	assert_true(tmp0 < 16893 - 14078);
	uint64_t min1 = 11264ull * 229376 / (230501 + 229376), tmp1 = min1 / 4;
	assert_int_equal(slow.wmark_min, min1); /* floors below the knobs' figures: the knobs' */
	assert_int_equal(slow.wmark_high, min1 + 2 * tmp1);
	destroy(f);
	/* knobs that ask for more than the kernel keeps: the knobs win */
	c.knobs.min_free_kbytes = 4 * 45056;
	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	c.platform_ctx = c.sampler_ctx = f;
	assert_int_equal(tb_engine_new(&f->e, &c, err, sizeof(err)), 0);
	assert_int_equal(info(f, 0).wmark_min, 45056ull * 230501 / (230501 + 229376)); /* 4 x 45056 KiB in pages */
	assert_true(info(f, 0).wmark_high > 16893);
	destroy(f);
}

static void v10(struct tb_knobs *k)
{
	k->wmark_mode = TB_WMARK_V10;
}

static void boost(struct tb_knobs *k)
{
	k->wmark_mode = TB_WMARK_BOOST;
	k->boost_step_kb = 64;
}

static void test_watermarks_v10_and_boost(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, v10);
	struct tb_node_info ni = info(f, 0);
	uint64_t extra = FAST_PAGES >> 6 < 2560 ? FAST_PAGES >> 6 : 2560; /* min(10 MiB, present >> 6) */
	assert_int_equal(ni.wmark_promo, ni.wmark_high + extra);
	destroy(f);
	f = make(TB_POLICY_PROMOTE, boost);
	ni = info(f, 0);
	assert_int_equal(ni.wmark_promo, ni.wmark_high); /* no static headroom: it comes on demand */
	assert_int_equal(ni.boost, 0);
	destroy(f);
}

static void test_refused_promotion_wakes_kswapd(void **state)
{
	struct fake *f = *state;
	uint32_t next = 0;
	place(f, 0, 64, 1); /* slow pages 0..63 */
	next = 64;
	fill_fast(f, &next, info(f, 0).wmark_high);
	advance(f, 1); /* the scanner arms the slow pages */
	assert_int_equal(f->armed_on[0], 0);
	assert_true(f->armed[0]);
	fault(f, 0);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	assert_int_equal(ctr(f, TB_C_promote_fail_wmark), 1);
	assert_int_equal(ctr(f, TB_C_kswapd_wakeups), 1);
	assert_true(info(f, 0).kswapd_awake);
	advance(f, 10);
	assert_true(ctr(f, TB_C_pgdemote_kswapd) > 0);
	assert_true(free_pages(f, 0) >= info(f, 0).wmark_promo); /* tiering mode: kswapd stops at promo */
	assert_false(info(f, 0).kswapd_awake);
	fault(f, 1);
	assert_int_equal(tb_engine_page_node(f->e, 1), 0);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 1);
	assert_int_equal(ctr(f, TB_C_numa_pages_migrated), 1);
}

/* Memory the engine does not manage (other processes, the kernel) leaves the
 * fast node short; kswapd makes room by demoting managed pages only. */
static void test_external_memory(void **state)
{
	struct fake *f = *state;
	place(f, 0, 64, 1);
	place(f, 64, 512, 0); /* the managed pages on the fast node */
	struct tb_node_info ni = info(f, 0);
	uint64_t external = ni.present - ni.used - ni.wmark_high;
	assert_int_equal(tb_engine_set_external(f->e, 0, external), 0);
	assert_int_equal(tb_engine_set_external(f->e, 2, 1), -EINVAL);
	ni = info(f, 0);
	assert_int_equal(ni.external, external);
	assert_int_equal(ni.present - ni.used - ni.external, ni.wmark_high);
	advance(f, 1);
	fault(f, 0);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1); /* refused: the node is at high */
	assert_int_equal(ctr(f, TB_C_promote_fail_wmark), 1);
	advance(f, 10);
	ni = info(f, 0);
	assert_true(ctr(f, TB_C_pgdemote_kswapd) > 0);
	assert_true(ni.used < 512);
	assert_true(ni.present - ni.used - ni.external >= ni.wmark_promo);
	fault(f, 1);
	assert_int_equal(tb_engine_page_node(f->e, 1), 0);
	/* more external use than the node holds: free is zero, never negative */
	assert_int_equal(tb_engine_set_external(f->e, 0, ni.present), 0);
	assert_int_equal(tb_engine_place(f->e, 4000, 0, false), -ENOMEM);
}

static void no_tiering(struct tb_knobs *k)
{
	k->numa_balancing = 0;
}

static void test_fallback_leaves_kswapd_asleep(void **state)
{
	struct fake *f = *state;
	uint32_t next = 0;
	fill_fast(f, &next, info(f, 0).wmark_min);
	unsigned node;
	/* every node above low? node 1 is: the page falls back there, kswapd sleeps */
	assert_int_equal(tb_engine_alloc(f->e, next++, false, &node), 0);
	assert_int_equal(node, 1);
	assert_int_equal(ctr(f, TB_C_numa_miss), 1);
	assert_int_equal(ctr(f, TB_C_kswapd_wakeups), 0);
}

static void test_direct_demotion(void **state)
{
	struct fake *f = *state;
	uint32_t next = 0;
	/* both nodes at their min watermark: only direct demotion makes room */
	uint64_t slow_left = info(f, 1).wmark_min;
	while (free_pages(f, 1) > slow_left)
		place(f, next++, 1, 1);
	fill_fast(f, &next, info(f, 0).wmark_min);
	unsigned node;
	assert_int_equal(tb_engine_alloc(f->e, next++, false, &node), 0);
	assert_int_equal(node, 0);
	assert_int_equal(ctr(f, TB_C_allocstall), 1);
	assert_true(ctr(f, TB_C_pgdemote_direct) >= 1);
	assert_true(ctr(f, TB_C_kswapd_wakeups) >= 1);
}

static void test_boost_raises_then_decays(void **state)
{
	struct fake *f = *state;
	place(f, 0, 64, 1);
	uint32_t next = 64;
	fill_fast(f, &next, info(f, 0).wmark_high);
	advance(f, 1);
	fault(f, 0);
	uint64_t b1 = info(f, 0).boost;
	assert_int_equal(b1, 64 / 4); /* one step of 64 KiB */
	fault(f, 1);
	assert_int_equal(info(f, 0).boost, 2 * b1); /* refused again before any tick */
	uint64_t target = info(f, 0).wmark_high + info(f, 0).boost;
	f->now += 1000000;
	tb_engine_tick(f->e); /* kswapd reclaims past high, towards high + boost */
	assert_true(free_pages(f, 0) > info(f, 0).wmark_high);
	assert_true(free_pages(f, 0) <= target);
	advance(f, 5000); /* five time constants, no refusals */
	assert_int_equal(info(f, 0).boost, 0);
}

static void tpp(struct tb_knobs *k)
{
	k->demote_scale_factor = 200; /* 2% of the node above high */
}

static void test_tpp_demotion_watermark(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE | TB_POLICY_ACTIVE_LRU, tpp);
	struct tb_node_info ni = info(f, 0);
	assert_int_equal(ni.wmark_demote, ni.wmark_high + FAST_PAGES * 200 / 10000);
	assert_true(ni.wmark_demote > ni.wmark_promo);
	/* allocations land on the fast node while it is above low, but below the
	 * demotion watermark they wake kswapd, which frees up to that mark */
	uint32_t next = 0;
	unsigned node;
	while (free_pages(f, 0) >= ni.wmark_demote)
		assert_int_equal(tb_engine_alloc(f->e, next++, false, &node), 0);
	assert_int_equal(ctr(f, TB_C_kswapd_wakeups), 0);
	assert_int_equal(tb_engine_alloc(f->e, next++, false, &node), 0);
	assert_int_equal(node, 0);
	assert_int_equal(ctr(f, TB_C_kswapd_wakeups), 1);
	advance(f, 5);
	assert_true(free_pages(f, 0) >= ni.wmark_demote);
	assert_true(ctr(f, TB_C_pgdemote_kswapd) > 0);
	destroy(f);
	/* without TPP the same allocations leave kswapd asleep */
	f = make(TB_POLICY_PROMOTE | TB_POLICY_ACTIVE_LRU, NULL);
	for (uint32_t p = 0; p < next; p++)
		assert_int_equal(tb_engine_alloc(f->e, p, false, &node), 0);
	assert_int_equal(ctr(f, TB_C_kswapd_wakeups), 0);
	destroy(f);
}

/* Where nothing but the engine reclaims the fast node (the live daemon), a
 * promotion may not take it below the demotion watermark: the headroom is
 * there before the kernel's own allocations need it, and kswapd makes room
 * above that mark for the next promotions. */
static void test_promote_above_demote(void **state)
{
	(void)state;
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	struct tb_engine_config c = config(f, TB_POLICY_PROMOTE, NR_PAGES, &fake_platform);
	c.knobs.scan_delay_ms = 0;
	c.knobs.scan_size_mb = 64;
	c.knobs.demote_scale_factor = 200;
	c.nodes[0].promote_above_demote = true;
	char err[256];
	assert_int_equal(tb_engine_new(&f->e, &c, err, sizeof(err)), 0);
	assert_int_equal(tb_engine_add_space(f->e, 0, NR_PAGES, 0, 0), 0);
	struct tb_node_info ni = info(f, 0);
	assert_true(ni.wmark_demote > ni.wmark_promo);
	place(f, 0, 64, 1);
	uint32_t next = 64;
	/* between high and the demotion watermark: the kernel's rule would promote */
	fill_fast(f, &next, (ni.wmark_high + ni.wmark_demote) / 2);
	advance(f, 1);
	fault(f, 0);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	assert_int_equal(ctr(f, TB_C_promote_fail_wmark), 1);
	assert_true(info(f, 0).kswapd_awake);
	advance(f, 10);
	/* kswapd stops one promo distance above the demotion watermark */
	assert_int_equal(free_pages(f, 0), ni.wmark_demote + (ni.wmark_promo - ni.wmark_high));
	fault(f, 1);
	assert_int_equal(tb_engine_page_node(f->e, 1), 0);
	assert_true(free_pages(f, 0) > ni.wmark_demote);
	destroy(f);
}

/* Promotions refused between two ticks are room kswapd owes: it runs once
 * per tick, so it makes room for all of them at once, and they move in that
 * tick rather than a few per tick until their evidence expires. */
static void test_kswapd_makes_room_for_queue(void **state)
{
	(void)state;
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	struct tb_engine_config c = config(f, TB_POLICY_PROMOTE, NR_PAGES, &fake_platform);
	c.knobs.scan_delay_ms = 0;
	c.knobs.scan_size_mb = 64;
	c.knobs.demote_scale_factor = 200;
	c.knobs.promote_retry_ms = 500;
	c.nodes[0].promote_above_demote = true;
	char err[256];
	assert_int_equal(tb_engine_new(&f->e, &c, err, sizeof(err)), 0);
	assert_int_equal(tb_engine_add_space(f->e, 0, NR_PAGES, 0, 0), 0);
	struct tb_node_info ni = info(f, 0);
	uint32_t burst = 4 * (uint32_t)(ni.wmark_promo - ni.wmark_high);
	place(f, 0, burst, 1);
	uint32_t next = burst;
	fill_fast(f, &next, ni.wmark_demote + 2);
	advance(f, 1);
	for (uint32_t p = 0; p < burst; p++)
		fault(f, p);
	assert_true(ctr(f, TB_C_promote_fail_wmark) >= burst - 2);
	advance(f, 1);
	for (uint32_t p = 0; p < burst; p++)
		assert_int_equal(tb_engine_page_node(f->e, p), 0);
	assert_int_equal(ctr(f, TB_C_promote_retry_expired), 0);
	assert_true(free_pages(f, 0) > ni.wmark_demote);
	destroy(f);
}

static void test_second_chance(void **state)
{
	struct fake *f = *state;
	place(f, 0, 2, 1);
	uint32_t next = 2;
	fill_fast(f, &next, info(f, 0).wmark_high);
	/* the 100 oldest fast pages were accessed since they were added */
	for (uint32_t p = 2; p < 102; p++)
		f->young[p] = 1;
	advance(f, 1);
	fault(f, 0);
	advance(f, 5);
	for (uint32_t p = 2; p < 102; p++)
		assert_int_equal(tb_engine_page_node(f->e, p), 0);
	assert_true(ctr(f, TB_C_pgactivate) >= 100);
	assert_int_equal(tb_engine_page_node(f->e, 102), 1); /* the next oldest, not accessed, went */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watermarks),
		cmocka_unit_test(test_watermarks_kernel_floor),
		cmocka_unit_test(test_watermarks_v10_and_boost),
		engine_test(test_refused_promotion_wakes_kswapd, TB_POLICY_PROMOTE, NULL),
		engine_test(test_external_memory, TB_POLICY_PROMOTE, NULL),
		engine_test(test_fallback_leaves_kswapd_asleep, 0, no_tiering),
		engine_test(test_direct_demotion, TB_POLICY_PROMOTE, NULL),
		engine_test(test_boost_raises_then_decays, TB_POLICY_PROMOTE, boost),
		cmocka_unit_test(test_tpp_demotion_watermark),
		cmocka_unit_test(test_promote_above_demote),
		cmocka_unit_test(test_kswapd_makes_room_for_queue),
		engine_test(test_second_chance, TB_POLICY_PROMOTE, NULL),
	};
	return tb_test_run("engine-reclaim", tests, sizeof(tests) / sizeof(tests[0]));
}
