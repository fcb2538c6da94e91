/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The engine's tests' fake platform and fixture (lib-engine.h). */
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

uint64_t f_now(void *ctx)
{
	return ((struct fake *)ctx)->now;
}

int f_migrate(void *ctx, const uint32_t *pages, size_t n, int dst, enum tb_migrate_reason why, int *st)
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

bool f_young(void *ctx, uint32_t p)
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

int f_split(void *ctx, uint32_t head)
{
	struct fake *f = ctx;
	(void)head;
	f->splits++;
	return f->split_rc;
}

const struct tb_platform_ops fake_platform = {f_now, f_migrate, f_young, NULL, NULL, f_split};
const struct tb_sampler_ops fake_sampler = {f_arm};

/* a fast and a slow node, the kernel's knobs */
struct tb_engine_config config(struct fake *f, uint32_t policy, uint32_t nr_pages,
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

struct fake *make(uint32_t policy, void (*tweak)(struct tb_knobs *))
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

void destroy(struct fake *f)
{
	char err[256] = "";
	int rc = tb_engine_check(f->e, err, sizeof(err));
	if (rc)
		fail_msg("invariant broken: %s", err);
	tb_engine_free(f->e);
	free(f);
}

uint64_t ctr(struct fake *f, enum tb_counter c)
{
	return tb_engine_counters(f->e)[c];
}

struct tb_node_info info(struct fake *f, unsigned n)
{
	struct tb_node_info ni;
	tb_engine_node_info(f->e, n, &ni);
	return ni;
}

uint64_t free_pages(struct fake *f, unsigned n)
{
	struct tb_node_info ni = info(f, n);
	return ni.present - ni.used;
}

/* advance the clock by ms, ticking every millisecond as the simulator does */
void advance(struct fake *f, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		f->now += 1000000;
		tb_engine_tick(f->e);
	}
}

/* pages [first, first+n) placed on node */
void place(struct fake *f, uint32_t first, uint32_t n, unsigned node)
{
	for (uint32_t p = first; p < first + n; p++)
		assert_int_equal(tb_engine_place(f->e, p, node, false), 0);
}

void fault(struct fake *f, uint32_t p)
{
	assert_true(f->armed[p]);
	f->armed[p] = 0;
	tb_engine_hint_fault(f->e, p, false);
}

/* fill the fast node until exactly `left` pages are free */
void fill_fast(struct fake *f, uint32_t *next, uint64_t left)
{
	while (free_pages(f, 0) > left)
		place(f, (*next)++, 1, 0);
}

unsigned fault_all_armed_slow(struct fake *f, unsigned max)
{
	unsigned n = 0;
	for (uint32_t p = 0; p < NR_PAGES && n < max; p++)
		if (f->armed[p] && tb_engine_page_node(f->e, p) == 1) {
			fault(f, p);
			n++;
		}
	return n;
}

int engine_setup(void **state)
{
	const struct engine_case *c = *state;
	*state = make(c->policy, c->tweak);
	return 0;
}

int engine_teardown(void **state)
{
	destroy(*state);
	return 0;
}
