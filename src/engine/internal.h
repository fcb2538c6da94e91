/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Engine internals shared by its modules; not part of the public API. */
#ifndef TB_ENGINE_INTERNAL_H
#define TB_ENGINE_INTERNAL_H

#include "engine/engine.h"

/* flags byte of a page: bits 0-2 the node (XOR TB_NO_NODE), then page state bits */
#define PF_NODE_MASK 0x07u /* read and set with pf_node(), pf_with_node() */
#define PF_FILE 0x08u
#define PF_ACTIVE 0x10u
#define PF_REFERENCED 0x20u /* PG_referenced: set by mark_page_accessed */
#define PF_ARMED 0x40u      /* made inaccessible by the scanner, fault pending */
#define PF_VISIT 0x80u      /* scratch bit of tb_engine_check */

enum { LRU_INACTIVE_ANON, LRU_ACTIVE_ANON, LRU_INACTIVE_FILE, LRU_ACTIVE_FILE, NR_LRU };

#define BATCH 32       /* SWAP_CLUSTER_MAX: reclaim and migration batch */
#define RETRY_MAX 8192 /* promotions waiting for room (promote_retry_ms) */

struct tb_lru {
	uint32_t head, tail; /* head = most recently added */
	uint64_t count;
};

/* 16 bytes a page: the fault path touches one cache line. */
struct tb_pmeta {
	uint32_t prev, next;
	uint32_t scan_ms;    /* when the scanner armed the page */
	unsigned moved : 24; /* bit 23: last move was a promotion; low bits: 16 ms ticks + 1, 0 = never */
	unsigned flags : 8;
};
#define MOVED_PROMOTE 0x800000u
#define MOVED_TICKS 0x7fffffu

struct tb_node {
	uint64_t present, used;
	uint64_t floor_min, floor_low, floor_high; /* the kernel's own watermarks, 0 if unknown */
	uint64_t external;                         /* in use by memory the engine does not manage (live daemon) */
	uint64_t pending;                          /* promotions decided in a batch, not moved yet */
	uint64_t wmark_min, wmark_low, wmark_high, wmark_promo, wmark_demote;
	uint64_t boost, boost_max;
	unsigned tier, socket;
	int demote_to;
	bool kswapd_awake;
	bool promote_above_demote; /* see struct tb_node_config */
	unsigned kswapd_order;     /* the largest allocation order a wake asked for since kswapd last slept */
	struct tb_lru lru[NR_LRU];
	/* hot threshold and rate limit state, per top-tier node as in pg_data_t */
	uint64_t nr_cand;
	uint32_t rl_start_ms;
	uint64_t rl_nr_cand;
	uint32_t th_start_ms;
	uint64_t th_nr_cand;
	uint32_t threshold_ms; /* 0 = use the knob */
	/* adaptive policy: counters at the start of its period */
	uint32_t ad_start_ms;
	uint64_t ad_promoted, ad_returned;
};

struct tb_space {
	uint32_t first, count;
	uint32_t extent; /* the part from first that can hold pages: what the scanner walks */
	unsigned cpu_node;
	unsigned flags;
	uint64_t next_scan_ns;
	uint32_t offset;                      /* where the next window starts */
	uint32_t period_ms;                   /* time for one full pass, adaptive */
	uint64_t faults_local, faults_remote; /* this pass */
};

struct tb_engine {
	struct tb_knobs k;
	uint32_t policy;
	const struct tb_platform_ops *pops;
	void *pctx;
	const struct tb_sampler_ops *sops;
	void *sctx;

	uint32_t nr_pages;
	struct tb_pmeta *meta;
	uint8_t *huge; /* TB_HUGE* flags per run of TB_HPAGE_PAGES ids */

	unsigned nr_nodes;
	struct tb_node node[TB_MAX_NODES];
	unsigned zonelist[TB_MAX_NODES][TB_MAX_NODES]; /* allocation order per CPU node */

	struct tb_space *spaces;
	size_t nr_spaces, cap_spaces;

	uint64_t counters[TB_NR_COUNTERS];
	uint64_t kswapd_pages_per_sec;
	uint64_t last_tick_ns;
	double kswapd_credit;
	uint64_t now_ns; /* cached per entry point */

	/* tb_engine_batch_begin/end: promotions waiting for one migrate call */
	bool batching;
	unsigned pend_dst;
	size_t nr_pend;
	uint32_t pend[BATCH];

	/* promote_retry_ms: hot pages refused for room, oldest first (a ring) */
	struct tb_retry {
		uint32_t page, scan_ms, at_ms;
		uint8_t dst;
	} retry[RETRY_MAX];
	size_t retry_head, nr_retry;
};

static inline uint64_t isqrt(uint64_t x)
{
	uint64_t r = 0, bit = 1ull << 62;
	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

/* The node field holds node ^ TB_NO_NODE, so that an all-zero entry is a page
 * that is not present: the table needs no initialisation, and a live daemon's
 * table (sized for all memory) costs memory only where its ids are used. */
static inline unsigned pf_node(uint8_t f)
{
	return (f & PF_NODE_MASK) ^ TB_NO_NODE;
}

static inline uint8_t pf_with_node(uint8_t f, unsigned node)
{
	return (uint8_t)((f & ~PF_NODE_MASK) | ((node ^ TB_NO_NODE) & PF_NODE_MASK));
}

static inline unsigned pnode(const struct tb_engine *e, uint32_t p)
{
	return pf_node(e->meta[p].flags);
}

static inline bool node_fast(const struct tb_engine *e, unsigned n)
{
	return e->node[n].tier == 0;
}

static inline uint64_t node_free(const struct tb_node *n)
{
	uint64_t taken = n->used + n->external + n->pending;
	return taken < n->present ? n->present - taken : 0;
}

/* Free pages a promotion may not take the node below: migrate_balanced_pgdat()'s
 * high watermark, or the demotion watermark where nothing else reclaims. */
static inline uint64_t promote_floor(const struct tb_node *n)
{
	return n->promote_above_demote && n->wmark_demote > n->wmark_high ? n->wmark_demote : n->wmark_high;
}

/* A huge page's head carries its state and sits on the LRU; its tails keep
 * only the node, so that any id answers where its memory is. */
static inline bool in_huge(const struct tb_engine *e, uint32_t p)
{
	return (e->huge[p >> TB_HPAGE_ORDER] & TB_HUGE) != 0;
}

static inline uint32_t head_of(const struct tb_engine *e, uint32_t p)
{
	return in_huge(e, p) ? p & ~(TB_HPAGE_PAGES - 1) : p;
}

/* base pages of the unit whose head (or base page) is p */
static inline uint32_t unit_pages(const struct tb_engine *e, uint32_t p)
{
	return in_huge(e, p) ? TB_HPAGE_PAGES : 1;
}

static inline uint32_t now_ms(const struct tb_engine *e)
{
	return (uint32_t)(e->now_ns / 1000000u);
}

static inline void count(struct tb_engine *e, enum tb_counter c, uint64_t n)
{
	e->counters[c] += n;
}

/* lru.c */
unsigned tb_lru_of(uint8_t flags);
void tb_lru_add_head(struct tb_engine *e, unsigned node, unsigned lru, uint32_t p);
/* Puts p right after `at` (towards the tail); at == TB_NIL: at the head. */
void tb_lru_add_after(struct tb_engine *e, unsigned node, unsigned lru, uint32_t at, uint32_t p);
void tb_lru_del(struct tb_engine *e, unsigned node, unsigned lru, uint32_t p);
void tb_page_activate(struct tb_engine *e, uint32_t p);

/* huge.c */
/* Splits the huge page at head into base pages that keep its state and its
 * place on the LRU, asking the platform first; 0 or the platform's error. */
int tb_huge_split(struct tb_engine *e, uint32_t head);

/* wmark.c */
void tb_wmark_setup(struct tb_engine *e);
uint64_t tb_kswapd_target(const struct tb_engine *e, unsigned n);
bool tb_tiering_on(const struct tb_engine *e);
void tb_boost_on_refusal(struct tb_engine *e, unsigned n);
void tb_boost_decay(struct tb_engine *e, uint64_t elapsed_ns);
void tb_kswapd_wake(struct tb_engine *e, unsigned n);
/* The same for an allocation of 2^order pages (wakeup_kswapd's order): kswapd
 * then works until that many pages are free above its target, as
 * zone_watermark_ok() asks at that order. */
void tb_kswapd_wake_order(struct tb_engine *e, unsigned n, unsigned order);

/* reclaim.c */
uint64_t tb_reclaim_node(struct tb_engine *e, unsigned n, uint64_t nr, enum tb_migrate_reason why);
void tb_kswapd_run(struct tb_engine *e, uint64_t elapsed_ns);
/* Moves pages and updates lists, counters and ping-pong state; returns pages moved. */
size_t tb_migrate_pages(struct tb_engine *e, const uint32_t *pages, size_t n, unsigned dst, enum tb_migrate_reason why);

/* promote.c */
void tb_promote_flush_now(struct tb_engine *e);
void tb_promote_retry_run(struct tb_engine *e);
/* Base pages of the valid promotions queued for node (promote_retry_ms) */
uint64_t tb_promote_waiting(const struct tb_engine *e, unsigned node);
/* Moves the promotions a batch holds; every call that changes placement starts with it. */
static inline void promote_flush(struct tb_engine *e)
{
	if (e->nr_pend)
		tb_promote_flush_now(e);
}

/* scan.c */
void tb_scan_run(struct tb_engine *e);
struct tb_space *tb_space_of(struct tb_engine *e, uint32_t p);

#endif
