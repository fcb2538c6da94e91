/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The engine's tests' fake platform: a clock, accessed bits and migrations
 * that the test sets by hand, on a fast and a slow node; and the fixture
 * that makes one engine per test and checks its invariants at the end. */
#ifndef TB_LIB_ENGINE_H
#define TB_LIB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	unsigned splits; /* huge pages the engine asked to split */
	int split_rc;
	struct tb_engine *e;
};

/* the fake platform and sampler (f_* for tests that build their own ops table) */
uint64_t f_now(void *ctx);
int f_migrate(void *ctx, const uint32_t *pages, size_t n, int dst, enum tb_migrate_reason why, int *st);
bool f_young(void *ctx, uint32_t p);
int f_split(void *ctx, uint32_t head);
extern const struct tb_platform_ops fake_platform;
extern const struct tb_sampler_ops fake_sampler;

/* a fast and a slow node with the kernel's knobs; an engine on it (scan delay 0, one window over
 * the whole space), and its end with the invariants checked */
struct tb_engine_config config(struct fake *f, uint32_t policy, uint32_t nr_pages,
			       const struct tb_platform_ops *platform);
struct fake *make(uint32_t policy, void (*tweak)(struct tb_knobs *));
void destroy(struct fake *f);

/* what the engine says */
uint64_t ctr(struct fake *f, enum tb_counter c);
struct tb_node_info info(struct fake *f, unsigned n);
uint64_t free_pages(struct fake *f, unsigned n);

/* what the test does: time passing (a tick a millisecond), pages placed, a hint fault on an armed
 * page, the fast node filled until LEFT pages are free, hint faults on up to MAX armed slow pages */
void advance(struct fake *f, unsigned ms);
void place(struct fake *f, uint32_t first, uint32_t n, unsigned node);
void fault(struct fake *f, uint32_t p);
void fill_fast(struct fake *f, uint32_t *next, uint64_t left);
unsigned fault_all_armed_slow(struct fake *f, unsigned max);

/* The fixture: an engine of POLICY, its knobs changed by TWEAK (may be NULL), in *state. */
struct engine_case {
	uint32_t policy;
	void (*tweak)(struct tb_knobs *);
};
int engine_setup(void **state);
int engine_teardown(void **state);
#define engine_test(fn, policy, tweak)                                                                                 \
	cmocka_unit_test_prestate_setup_teardown(fn, engine_setup, engine_teardown,                                    \
						 &((struct engine_case){(policy), (tweak)}))

#endif
