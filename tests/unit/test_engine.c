/* Engine mechanisms, each against a fake platform whose clock and accessed
 * bits the test sets by hand. */
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

#include "engine/engine.h"
#include "engine/internal.h"

#define FAST_PAGES 4096u
#define SLOW_PAGES 16384u
#define NR_PAGES (FAST_PAGES + SLOW_PAGES)

struct fake {
	uint64_t now;
	uint8_t young[NR_PAGES];
	uint8_t armed[NR_PAGES];
	uint64_t armed_on[2];
	int migrate_rc;
	unsigned migrate_calls;
	size_t migrate_most;
	struct tb_engine *e;
};

static uint64_t f_now(void *ctx)
{
	return ((struct fake *)ctx)->now;
}

static int f_migrate(void *ctx, const uint32_t *pages, size_t n, int dst, enum tb_migrate_reason why, int *st)
{
	struct fake *f = ctx;
	(void)pages;
	(void)dst;
	(void)why;
	f->migrate_calls++;
	if (n > f->migrate_most)
		f->migrate_most = n;
	for (size_t i = 0; i < n; i++)
		st[i] = f->migrate_rc;
	return 0;
}

static bool f_young(void *ctx, uint32_t p)
{
	struct fake *f = ctx;
	bool y = f->young[p];
	f->young[p] = 0;
	return y;
}

static int f_arm(void *ctx, const uint32_t *pages, size_t n)
{
	struct fake *f = ctx;
	for (size_t i = 0; i < n; i++) {
		f->armed[pages[i]] = 1;
		f->armed_on[tb_engine_page_node(f->e, pages[i])]++;
	}
	return 0;
}

static const struct tb_platform_ops fake_platform = {f_now, f_migrate, f_young, NULL, NULL};
static const struct tb_sampler_ops fake_sampler = {f_arm};

/* a fast and a slow node, the kernel's knobs */
static struct tb_engine_config config(struct fake *f, uint32_t policy, uint32_t nr_pages,
				      const struct tb_platform_ops *platform)
{
	struct tb_engine_config c = {
		.policy = policy,
		.nr_nodes = 2,
		.nodes = {{.present_pages = FAST_PAGES, .tier = 0, .demote_to = 1, .socket = 0},
			  {.present_pages = SLOW_PAGES, .tier = 1, .demote_to = -1, .socket = 0}},
		.nr_pages = nr_pages,
		.kswapd_pages_per_sec = 1000000,
		.platform = platform,
		.platform_ctx = f,
		.sampler = &fake_sampler,
		.sampler_ctx = f,
	};
	tb_knobs_default(&c.knobs);
	return c;
}

static struct fake *make(uint32_t policy, void (*tweak)(struct tb_knobs *))
{
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	struct tb_engine_config c = config(f, policy, NR_PAGES, &fake_platform);
	c.knobs.scan_delay_ms = 0;
	c.knobs.scan_size_mb = 64; /* one window covers the whole space */
	if (tweak)
		tweak(&c.knobs);
	char err[256];
	assert_int_equal(tb_engine_new(&f->e, &c, err, sizeof(err)), 0);
	assert_int_equal(tb_engine_add_space(f->e, 0, NR_PAGES, 0, 0), 0);
	return f;
}

static void destroy(struct fake *f)
{
	char err[256] = "";
	int rc = tb_engine_check(f->e, err, sizeof(err));
	if (rc)
		fail_msg("invariant broken: %s", err);
	tb_engine_free(f->e);
	free(f);
}

static uint64_t ctr(struct fake *f, enum tb_counter c)
{
	return tb_engine_counters(f->e)[c];
}

static struct tb_node_info info(struct fake *f, unsigned n)
{
	struct tb_node_info ni;
	tb_engine_node_info(f->e, n, &ni);
	return ni;
}

static uint64_t free_pages(struct fake *f, unsigned n)
{
	struct tb_node_info ni = info(f, n);
	return ni.present - ni.used;
}

/* advance the clock by ms, ticking every millisecond as the simulator does */
static void advance(struct fake *f, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		f->now += 1000000;
		tb_engine_tick(f->e);
	}
}

/* pages [first, first+n) placed on node */
static void place(struct fake *f, uint32_t first, uint32_t n, unsigned node)
{
	for (uint32_t p = first; p < first + n; p++)
		assert_int_equal(tb_engine_place(f->e, p, node, false), 0);
}

static void fault(struct fake *f, uint32_t p)
{
	assert_true(f->armed[p]);
	f->armed[p] = 0;
	tb_engine_hint_fault(f->e, p, false);
}

/* fill the fast node until exactly `left` pages are free */
static void fill_fast(struct fake *f, uint32_t *next, uint64_t left)
{
	while (free_pages(f, 0) > left)
		place(f, (*next)++, 1, 0);
}

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
		.nodes = {{.present_pages = 230501, .tier = 0, .demote_to = 1, .socket = 0,
			   .floor_min = 11263, .floor_low = 14078, .floor_high = 16893},
			  {.present_pages = 229376, .tier = 1, .demote_to = -1, .socket = 0,
			   .floor_min = 10, .floor_low = 12, .floor_high = 14}},
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
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
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
	destroy(f);
}

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

/* Memory the engine does not manage (other processes, the kernel) leaves the
 * fast node short; kswapd makes room by demoting managed pages only. */
static void test_external_memory(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
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
	destroy(f);
}

static void no_tiering(struct tb_knobs *k)
{
	k->numa_balancing = 0;
}

static void test_fallback_leaves_kswapd_asleep(void **state)
{
	(void)state;
	struct fake *f = make(0, no_tiering);
	uint32_t next = 0;
	fill_fast(f, &next, info(f, 0).wmark_min);
	unsigned node;
	/* every node above low? node 1 is: the page falls back there, kswapd sleeps */
	assert_int_equal(tb_engine_alloc(f->e, next++, false, &node), 0);
	assert_int_equal(node, 1);
	assert_int_equal(ctr(f, TB_C_numa_miss), 1);
	assert_int_equal(ctr(f, TB_C_kswapd_wakeups), 0);
	destroy(f);
}

static void test_direct_demotion(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
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
	destroy(f);
}

static void rate_limited(struct tb_knobs *k)
{
	k->promote_rate_limit_MBps = 1; /* 256 pages a second */
	k->scan_period_max_ms = 1000;   /* adjust the threshold every second */
	k->scan_period_min_ms = 100;
	k->scan_size_mb = 1;            /* windows of 256 pages, every 100 ms / 80 windows */
	k->free_space_bypass = 0;
}

static unsigned fault_all_armed_slow(struct fake *f, unsigned max)
{
	unsigned n = 0;
	for (uint32_t p = 0; p < NR_PAGES && n < max; p++)
		if (f->armed[p] && tb_engine_page_node(f->e, p) == 1) {
			fault(f, p);
			n++;
		}
	return n;
}

static void test_threshold_follows_rate_limit(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE | TB_POLICY_HOT, rate_limited);
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
	destroy(f);
}

static void test_cold_page_not_promoted(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE | TB_POLICY_HOT, rate_limited);
	place(f, 0, 256, 1);
	advance(f, 1);
	assert_true(f->armed[0]);
	advance(f, 1500); /* longer than the 1000 ms threshold */
	uint64_t before = ctr(f, TB_C_promote_fail_threshold);
	tb_engine_hint_fault(f->e, 0, false);
	assert_int_equal(ctr(f, TB_C_promote_fail_threshold), before + 1);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	destroy(f);
}

static void test_active_lru_second_fault(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE | TB_POLICY_ACTIVE_LRU, NULL);
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
	destroy(f);
}

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
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
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
	destroy(f);
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
	static const struct tb_platform_ops lazy_platform = {f_now, f_migrate, f_young, t_alloc, t_free};
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

static void test_boost_raises_then_decays(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, boost);
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
	destroy(f);
}

static void test_pingpong(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
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
	destroy(f);
}

static void short_window(struct tb_knobs *k)
{
	k->pingpong_window_ms = 100;
}

static void test_pingpong_window(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, short_window);
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
	destroy(f);
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
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE | TB_POLICY_HOT, slow_scan);
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
	destroy(f);
}

static void test_adaptive_threshold(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ADAPTIVE, NULL);
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
	destroy(f);
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
		struct fake *f = make(TB_POLICY_PROMOTE | TB_POLICY_HOT | (adaptive ? TB_POLICY_ADAPTIVE : 0),
				      adaptive_scan);
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

static void test_second_chance(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
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
	destroy(f);
}

static void test_failed_migration_counted(void **state)
{
	(void)state;
	struct fake *f = make(TB_POLICY_PROMOTE, NULL);
	place(f, 0, 4, 1);
	advance(f, 1);
	f->migrate_rc = -16; /* EBUSY */
	fault(f, 0);
	assert_int_equal(tb_engine_page_node(f->e, 0), 1);
	assert_int_equal(ctr(f, TB_C_pgmigrate_fail), 1);
	assert_int_equal(ctr(f, TB_C_promote_fail_migrate), 1);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 0);
	destroy(f);
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

static void test_check_catches_corruption(void **state)
{
	(void)state;
	struct fake *f = make(0, NULL);
	place(f, 0, 10, 0);
	char err[256];
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), 0);
	f->e->node[0].used++;
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), -EFAULT);
	assert_non_null(strstr(err, "accounted used"));
	f->e->node[0].used--;
	f->e->meta[3].prev = 7; /* a broken link */
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), -EFAULT);
	f->e->meta[3].prev = 4;
	destroy(f);
}

static void test_knobs_and_policies(void **state)
{
	(void)state;
	struct tb_knobs k;
	char err[256];
	tb_knobs_default(&k);
	assert_int_equal(k.hot_threshold_ms, 1000);
	assert_int_equal(k.promote_rate_limit_MBps, 65536);
	assert_int_equal(tb_knob_set(&k, "numa_balancing_hot_threshold_ms=500", err, sizeof(err)), 0);
	assert_int_equal(k.hot_threshold_ms, 500);
	assert_int_equal(tb_knob_set(&k, "promo_wmark_mode=boost", err, sizeof(err)), 0);
	assert_int_equal(k.wmark_mode, TB_WMARK_BOOST);
	assert_int_equal(tb_knob_set(&k, "no_such_knob=1", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown knob"));
	assert_int_equal(tb_knob_set(&k, "numa_balancing=9", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "outside"));
	assert_int_equal(tb_knob_set(&k, "watermark_scale_factor=ten", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knob_set(&k, "watermark_scale_factor", err, sizeof(err)), -EINVAL);
	uint32_t p;
	assert_int_equal(tb_policy_parse("combined", &p), 0);
	assert_int_equal(p, TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ACTIVE_LRU);
	assert_int_equal(tb_policy_parse("hot-threshold+active-lru", &p), 0);
	assert_string_equal(tb_policy_name(p), "combined");
	assert_int_equal(tb_policy_parse("always+", &p), -EINVAL);
	assert_int_equal(tb_policy_parse("fast", &p), -EINVAL);
	assert_int_equal(tb_policy_parse("adaptive", &p), 0);
	assert_int_equal(p, TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ADAPTIVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watermarks),
		cmocka_unit_test(test_watermarks_kernel_floor),
		cmocka_unit_test(test_watermarks_v10_and_boost),
		cmocka_unit_test(test_refused_promotion_wakes_kswapd),
		cmocka_unit_test(test_batched_promotions),
		cmocka_unit_test(test_fallback_leaves_kswapd_asleep),
		cmocka_unit_test(test_direct_demotion),
		cmocka_unit_test(test_threshold_follows_rate_limit),
		cmocka_unit_test(test_cold_page_not_promoted),
		cmocka_unit_test(test_active_lru_second_fault),
		cmocka_unit_test(test_fast_tier_not_scanned),
		cmocka_unit_test(test_scan_extent),
		cmocka_unit_test(test_table_lazy),
		cmocka_unit_test(test_promote_retry),
		cmocka_unit_test(test_boost_raises_then_decays),
		cmocka_unit_test(test_pingpong),
		cmocka_unit_test(test_pingpong_window),
		cmocka_unit_test(test_tpp_demotion_watermark),
		cmocka_unit_test(test_scan_period_adapts),
		cmocka_unit_test(test_adaptive_threshold),
		cmocka_unit_test(test_adaptive_slows_scanner),
		cmocka_unit_test(test_second_chance),
		cmocka_unit_test(test_failed_migration_counted),
		cmocka_unit_test(test_check_catches_corruption),
		cmocka_unit_test(test_external_memory),
		cmocka_unit_test(test_knobs_and_policies),
	};
	if (getenv("TB_TEST_SKIP")) /* scripts/valgrind.sh: under valgrind the RSS is valgrind's too */
		cmocka_set_skip_filter(getenv("TB_TEST_SKIP"));
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
