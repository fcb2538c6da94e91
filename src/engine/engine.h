/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tierbal policy engine: hint-fault scanner, promotion policies,
 * watermarks, LRU aging and demotion, counters.
 *
 * Pure C: no syscalls, no globals. Time comes from the platform's clock and
 * every action on real (or modeled) memory goes through the platform and
 * sampler ops, so the simulator and the live daemon share this code. */
#ifndef TB_ENGINE_H
#define TB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/knobs.h"

#define TB_MAX_NODES 7
#define TB_NO_NODE 7 /* node field value of a page that is not present */
#define TB_NIL UINT32_MAX
#define TB_PAGE_SHIFT 12
#define TB_HPAGE_ORDER 9 /* a transparent huge page: 2 MiB, 512 base pages */
#define TB_HPAGE_PAGES (1u << TB_HPAGE_ORDER)

/* Counters: kernel /proc/vmstat names first, then tierbal's own. */
/* clang-format off */
#define TB_COUNTERS(X)                                                                      \
	X(numa_pte_updates) X(numa_hint_faults) X(numa_hint_faults_local) X(numa_pages_migrated) \
	X(pgpromote_success) X(pgpromote_candidate) X(pgdemote_kswapd) X(pgdemote_direct)        \
	X(pgmigrate_success) X(pgmigrate_fail) X(pgactivate) X(pgdeactivate) X(pgscan_kswapd)    \
	X(pgscan_direct) X(allocstall) X(numa_miss) X(numa_huge_pte_updates)                     \
	X(thp_fault_alloc) X(thp_fault_fallback) X(thp_migration_success)                        \
	X(thp_migration_fail) X(thp_migration_split) X(thp_split_page)                           \
	X(promote_fail_threshold)                                                                \
	X(promote_fail_ratelimit) X(promote_defer_inactive) X(promote_fail_wmark)                \
	X(promote_fail_migrate) X(promote_fail_shared) X(pingpong_promote_demote)                \
	X(pingpong_demote_promote)                                                               \
	X(kswapd_wakeups) X(threshold_adjustments) X(promote_retried) X(promote_retry_expired)

enum tb_counter {
#define TB_ENUM(name) TB_C_##name,
	TB_COUNTERS(TB_ENUM)
#undef TB_ENUM
	TB_NR_COUNTERS
};
/* clang-format on */

const char *tb_counter_name(enum tb_counter c);

enum tb_migrate_reason {
	TB_MIGRATE_PROMOTE,
	TB_MIGRATE_DEMOTE_KSWAPD,
	TB_MIGRATE_DEMOTE_DIRECT,
};

struct tb_platform_ops {
	/* Monotonic time in nanoseconds. */
	uint64_t (*now_ns)(void *ctx);
	/* Moves pages to node dst; status[i] = 0 or a negative errno per page.
	 * A page the engine holds as huge (tb_engine_alloc_huge, tb_engine_set_huge)
	 * is passed as its head and moves whole.
	 * Returns 0, or a negative errno if the whole call failed. */
	int (*migrate)(void *ctx, const uint32_t *pages, size_t n, int dst, enum tb_migrate_reason why, int *status);
	/* Reads and clears the page's accessed ("young") bit. */
	bool (*test_and_clear_young)(void *ctx, uint32_t page);
	/* Optional: zeroed memory for the per-page table (NULL: calloc/free). */
	void *(*table_alloc)(void *ctx, size_t bytes);
	void (*table_free)(void *ctx, void *table, size_t bytes);
	/* Optional: splits the huge page at head into base pages, as
	 * split_huge_page() does, and returns 0; without it the engine never
	 * splits one itself (a live platform learns of the kernel's splits and
	 * tells the engine with tb_engine_set_huge). */
	int (*split)(void *ctx, uint32_t head);
};

struct tb_sampler_ops {
	/* Makes the pages report their next access as a hint fault. */
	int (*arm)(void *ctx, const uint32_t *pages, size_t n);
};

struct tb_node_config {
	uint64_t present_pages;
	unsigned tier;   /* 0 = top tier (has CPUs) */
	int demote_to;   /* -1: lowest tier, nothing below */
	unsigned socket; /* orders allocation fallback */
	/* the kernel's own min/low/high watermarks of the node (live), as floors:
	 * whatever the knobs say, the engine never plans to take the node below
	 * them. How a kernel shares min_free_kbytes out between nodes changes
	 * between versions (6.12 leaves ZONE_MOVABLE memory out, 6.1 does not), so
	 * they are read, not modeled. 0: no floor (the simulator). */
	uint64_t floor_min, floor_low, floor_high;
	/* live: nothing but the engine reclaims the node (the kernel's demotion
	 * may be off, and its kswapd cannot wait for tierbal), so promotions stop
	 * at the demotion watermark instead of high, keeping that headroom for
	 * the kernel's own allocations, and kswapd makes room above it */
	bool promote_above_demote;
};

struct tb_engine_config {
	struct tb_knobs knobs;
	uint32_t policy; /* TB_POLICY_* flags; 0 disables hint-fault sampling */
	unsigned nr_nodes;
	struct tb_node_config nodes[TB_MAX_NODES];
	uint32_t nr_pages;             /* page ids are 0 .. nr_pages-1 */
	uint64_t kswapd_pages_per_sec; /* how fast background demotion can move pages */
	const struct tb_platform_ops *platform;
	void *platform_ctx;
	const struct tb_sampler_ops *sampler;
	void *sampler_ctx;
};

struct tb_engine;

struct tb_node_info {
	uint64_t present, used, external;
	uint64_t wmark_min, wmark_low, wmark_high, wmark_promo, wmark_demote, boost;
	uint64_t lru[4]; /* anon inactive, anon active, file inactive, file active */
	bool kswapd_awake;
	uint32_t threshold_ms; /* current hot threshold (top tier) */
};

int tb_engine_new(struct tb_engine **out, const struct tb_engine_config *cfg, char *err, size_t errlen);
void tb_engine_free(struct tb_engine *e);

#define TB_SPACE_UNMAPPED 0x1u /* page cache reached by system calls: never scanned */

/* Registers an address space (a process): pages [first, first+count), its
 * CPUs on cpu_node. Spaces are added in increasing page order. */
int tb_engine_add_space(struct tb_engine *e, uint32_t first, uint32_t count, unsigned cpu_node, unsigned flags);
/* How much of space `space`, from its start, can hold pages now (at most its
 * count; initially all of it): the scanner walks only that, as the kernel's
 * walks only a task's mappings. The live daemon's spaces are pools as large as
 * the machine, of which its targets use the first chunks. */
int tb_engine_set_space_extent(struct tb_engine *e, int space, uint32_t extent);

/* First touch: allocates the page on a node the way the kernel's allocator
 * would (watermarks, fallback, kswapd wake-up, direct demotion). */
int tb_engine_alloc(struct tb_engine *e, uint32_t page, bool file, unsigned *node);
/* Puts a page on a node with no allocator logic (oracle placement), or takes it off. */
int tb_engine_place(struct tb_engine *e, uint32_t page, unsigned node, bool file);
void tb_engine_unplace(struct tb_engine *e, uint32_t page);

/* Huge pages. A huge page is the run of TB_HPAGE_PAGES ids from a head that
 * is a multiple of TB_HPAGE_PAGES, inside one space, on one node. It is one
 * entry of the LRU (its head), armed, faulted, aged and migrated as one unit;
 * counts of pages (used, LRU sizes, pgpromote_*, pgdemote_*, the promotion
 * rate limit, the watermark checks) count its base pages, as the kernel's do. */
#define TB_HUGE 0x1u        /* the run is one huge page */
#define TB_HUGE_SHARED 0x2u /* mapped by more than one process: never promoted */
/* First touch of a whole absent run as a huge page: on the CPU's node only if
 * it has room above its low watermark (a THP fault without direct reclaim),
 * or, with any_node, on the first node of the fallback order that has (a
 * madvised THP fault). -ENOMEM: no node can take it; the caller falls back to
 * base pages (counted as thp_fault_fallback). */
int tb_engine_alloc_huge(struct tb_engine *e, uint32_t head, bool any_node, unsigned *node);
/* Oracle placement of a whole absent run as a huge page. */
int tb_engine_place_huge(struct tb_engine *e, uint32_t head, unsigned node);
/* What the platform found: the run at head is a huge page (flags with
 * TB_HUGE; every page of it present on one node: khugepaged's collapse) or
 * no longer one (flags 0: the kernel split it). -EINVAL if the run cannot be
 * one huge page (not aligned, not all present on one node, outside a space). */
int tb_engine_set_huge(struct tb_engine *e, uint32_t head, unsigned flags);
/* The flags of the run holding page p (0: base pages). */
unsigned tb_engine_huge_flags(const struct tb_engine *e, uint32_t p);

/* New knobs and policy while running (a reloaded configuration): watermarks
 * are recomputed, learned state (thresholds, scan periods, LRU) is kept. */
void tb_engine_reconfigure(struct tb_engine *e, const struct tb_knobs *k, uint32_t policy);

/* Pages of the node in use by memory the engine does not manage (other
 * processes, page cache, the kernel): they count against free memory, so
 * watermarks and demotion follow what the real node has left. */
int tb_engine_set_external(struct tb_engine *e, unsigned node, uint64_t pages);
/* (When that leaves a fast node below its wake-up mark, kswapd wakes, as
 * the allocations that used the memory would have woken it.) */

/* A hint that a hint fault on this page is near: starts loading its metadata. */
void tb_engine_prefetch(const struct tb_engine *e, uint32_t page);
/* An armed page was accessed. */
void tb_engine_hint_fault(struct tb_engine *e, uint32_t page, bool write);
/* Between these two calls the promotions that hint faults decide reach the
 * platform in batches, one migrate call per BATCH pages and destination,
 * instead of one call per fault: a real move_pages(2) costs a system-wide
 * LRU drain whatever its size. Every decision is the one a fault alone would
 * get (a page waiting for the batch counts as used on its destination); a
 * page the platform then fails to move counts as a failed promotion. The
 * calls that change placement or nodes (alloc, place, unplace, tick,
 * set_external, reconfigure, mark_accessed, check) flush the batch first. */
void tb_engine_batch_begin(struct tb_engine *e);
void tb_engine_batch_end(struct tb_engine *e);
/* The platform could not arm the page, or lost its protection without an
 * access (the mapping was zapped): it is not armed, and the next scan pass
 * arms it again. Returns whether it was armed. */
bool tb_engine_disarm(struct tb_engine *e, uint32_t page);
/* A page-cache access through a system call (mark_page_accessed). */
void tb_engine_mark_accessed(struct tb_engine *e, uint32_t page);
/* Runs due background work: scanner windows, kswapd, decays, adjustments. */
void tb_engine_tick(struct tb_engine *e);

const uint64_t *tb_engine_counters(const struct tb_engine *e);
void tb_engine_node_info(const struct tb_engine *e, unsigned node, struct tb_node_info *out);
unsigned tb_engine_page_node(const struct tb_engine *e, uint32_t page);

/* Checks every invariant (each present page on exactly one list of its node,
 * counts conserved, free never negative, links consistent). 0 or -EFAULT. */
int tb_engine_check(struct tb_engine *e, char *err, size_t errlen);

#endif
