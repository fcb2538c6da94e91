/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Migration bookkeeping, LRU aging and demotion (kswapd and direct). */
#include "engine/internal.h"

#include <errno.h>

static void note_move(struct tb_engine *e, uint32_t p, bool promote)
{
	struct tb_pmeta *m = &e->meta[p];
	uint32_t tick = (now_ms(e) >> 4) & MOVED_TICKS;
	if (m->moved) {
		bool last_promote = (m->moved & MOVED_PROMOTE) != 0;
		uint32_t last = ((m->moved & MOVED_TICKS) - 1) & MOVED_TICKS;
		if (last_promote != promote && ((tick - last) & MOVED_TICKS) <= e->k.pingpong_window_ms >> 4)
			count(e, promote ? TB_C_pingpong_demote_promote : TB_C_pingpong_promote_demote, 1);
	}
	uint32_t stamp = (tick + 1) & MOVED_TICKS;
	m->moved = (stamp ? stamp : 1) | (promote ? MOVED_PROMOTE : 0);
}

static bool promoted_lately(const struct tb_engine *e, uint32_t p)
{
	uint32_t m = e->meta[p].moved, tick = (now_ms(e) >> 4) & MOVED_TICKS;
	uint32_t last = ((m & MOVED_TICKS) - 1) & MOVED_TICKS;
	return (m & MOVED_PROMOTE) && ((tick - last) & MOVED_TICKS) <= e->k.pingpong_window_ms >> 4;
}

/* A demotion that found no room for a huge page splits it and tries its base
 * pages next, as migrate_pages() does on -ENOMEM for every reason but a NUMA
 * hint fault's (which keeps the huge page and fails). The base pages wait at
 * the tail of the list, where reclaim takes its next candidates. */
static bool split_for_demotion(struct tb_engine *e, uint32_t head, unsigned src, enum tb_migrate_reason why, int st)
{
	if (why == TB_MIGRATE_PROMOTE || st != -ENOMEM || !e->pops->split)
		return false;
	unsigned lru = tb_lru_of(e->meta[head].flags);
	tb_lru_add_after(e, src, lru, e->node[src].lru[lru].tail, head);
	if (tb_huge_split(e, head)) {
		tb_lru_del(e, src, lru, head);
		return false;
	}
	count(e, TB_C_thp_migration_split, 1);
	return true;
}

/* Pages in `pages` are isolated (on no list): base pages and heads of huge
 * pages. Moved ones join dst's lists, the rest go back where they were.
 * Returns the base pages moved. */
size_t tb_migrate_pages(struct tb_engine *e, const uint32_t *pages, size_t n, unsigned dst, enum tb_migrate_reason why)
{
	int status[BATCH];
	struct tb_node *d = &e->node[dst];
	uint64_t avail = node_free(d);
	if (why != TB_MIGRATE_PROMOTE) {
		/* Demotion allocates on the lower node above its min watermark; direct
		 * demotion runs when every node is at min, so it may use half of the
		 * reserve below min, as __GFP_HIGH allocations may. */
		uint64_t floor = why == TB_MIGRATE_DEMOTE_DIRECT ? d->wmark_min / 2 : d->wmark_min;
		avail = avail > floor ? avail - floor : 0;
	}
	/* the first page that finds no room ends the call, as in migrate_pages() */
	size_t room = 0;
	for (; room < n && unit_pages(e, pages[room]) <= avail; room++)
		avail -= unit_pages(e, pages[room]);
	for (size_t i = 0; i < n; i++)
		status[i] = i < room ? 0 : -ENOMEM;
	if (room) {
		int rc = e->pops->migrate(e->pctx, pages, room, (int)dst, why, status);
		if (rc < 0)
			for (size_t i = 0; i < room; i++)
				status[i] = rc;
	}
	size_t moved = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t p = pages[i], nr = unit_pages(e, p);
		uint8_t f = e->meta[p].flags;
		unsigned src = pf_node(f);
		if (status[i] != 0) {
			if (nr > 1)
				count(e, TB_C_thp_migration_fail, 1);
			if (nr > 1 && split_for_demotion(e, p, src, why, status[i]))
				continue;
			count(e, TB_C_pgmigrate_fail, nr);
			if (why == TB_MIGRATE_PROMOTE)
				count(e, TB_C_promote_fail_migrate, 1);
			tb_lru_add_head(e, src, tb_lru_of(f), p);
			continue;
		}
		e->node[src].used -= nr;
		d->used += nr;
		for (uint32_t j = 1; j < nr; j++)
			e->meta[p + j].flags = pf_with_node(e->meta[p + j].flags, dst);
		f = pf_with_node(f, dst);
		e->meta[p].flags = f;
		tb_lru_add_head(e, dst, tb_lru_of(f), p);
		note_move(e, p, why == TB_MIGRATE_PROMOTE);
		if (nr > 1)
			count(e, TB_C_thp_migration_success, 1);
		moved += nr;
	}
	count(e, TB_C_pgmigrate_success, moved);
	if (why == TB_MIGRATE_PROMOTE) {
		count(e, TB_C_pgpromote_success, moved);
		count(e, TB_C_numa_pages_migrated, moved);
	} else {
		count(e, why == TB_MIGRATE_DEMOTE_KSWAPD ? TB_C_pgdemote_kswapd : TB_C_pgdemote_direct, moved);
	}
	return moved;
}

/* inactive_is_low(): the kernel keeps inactive >= active / sqrt(10 x GiB). */
static bool inactive_is_low(const struct tb_node *n, unsigned inactive)
{
	uint64_t ina = n->lru[inactive].count, act = n->lru[inactive + 1].count;
	uint64_t gb = (ina + act) >> (30 - TB_PAGE_SHIFT);
	uint64_t ratio = gb ? isqrt(10 * gb) : 1;
	return ina * ratio < act;
}

static void shrink_active(struct tb_engine *e, unsigned ni, unsigned inactive)
{
	struct tb_node *n = &e->node[ni];
	for (unsigned i = 0; i < BATCH && n->lru[inactive + 1].count; i++) {
		uint32_t p = n->lru[inactive + 1].tail;
		tb_lru_del(e, ni, inactive + 1, p);
		/* page_referenced() harvests the accessed bit; anon pages go inactive anyway */
		e->pops->test_and_clear_young(e->pctx, p);
		e->meta[p].flags &= (uint8_t)~PF_ACTIVE;
		tb_lru_add_head(e, ni, inactive, p);
		count(e, TB_C_pgdeactivate, unit_pages(e, p));
	}
}

uint64_t tb_reclaim_node(struct tb_engine *e, unsigned ni, uint64_t nr, enum tb_migrate_reason why)
{
	struct tb_node *n = &e->node[ni];
	if (n->demote_to < 0 || nr == 0)
		return 0;
	uint64_t reclaimed = 0, scanned = 0, limit = 2 * n->used + BATCH;
	enum tb_counter scan_ctr = why == TB_MIGRATE_DEMOTE_KSWAPD ? TB_C_pgscan_kswapd : TB_C_pgscan_direct;
	while (reclaimed < nr && scanned < limit) {
		for (unsigned t = LRU_INACTIVE_ANON; t <= LRU_INACTIVE_FILE; t += 2)
			if (inactive_is_low(n, t))
				shrink_active(e, ni, t);
		unsigned t = n->lru[LRU_INACTIVE_ANON].count >= n->lru[LRU_INACTIVE_FILE].count ? LRU_INACTIVE_ANON
												: LRU_INACTIVE_FILE;
		if (!n->lru[t].count) {
			/* everything is active: age the larger active list */
			t = n->lru[LRU_ACTIVE_ANON].count >= n->lru[LRU_ACTIVE_FILE].count ? LRU_INACTIVE_ANON
											   : LRU_INACTIVE_FILE;
			if (!n->lru[t + 1].count)
				break;
			shrink_active(e, ni, t);
		}
		uint32_t cand[BATCH];
		size_t k = 0;
		uint64_t want = nr - reclaimed < BATCH ? nr - reclaimed : BATCH;
		while (k < want && n->lru[t].count && scanned < limit) {
			uint32_t p = n->lru[t].tail;
			if (e->meta[p].prev != TB_NIL)
				__builtin_prefetch(&e->meta[e->meta[p].prev], 1); /* the next tail */
			tb_lru_del(e, ni, t, p);
			scanned++;
			count(e, scan_ctr, unit_pages(e, p));
			uint8_t f = e->meta[p].flags;
			if (e->pops->test_and_clear_young(e->pctx, p)) {
				/* page_check_references(): mapped anon, or a file page seen twice, activates */
				if (!(f & PF_FILE) || (f & PF_REFERENCED)) {
					e->meta[p].flags = (uint8_t)((f | PF_ACTIVE) & ~PF_REFERENCED);
					count(e, TB_C_pgactivate, unit_pages(e, p));
				} else {
					e->meta[p].flags = f | PF_REFERENCED;
				}
				tb_lru_add_head(e, ni, tb_lru_of(e->meta[p].flags), p);
				continue;
			}
			e->meta[p].flags = f & (uint8_t)~PF_REFERENCED;
			if ((e->policy & TB_POLICY_ADAPTIVE) && in_huge(e, p) && promoted_lately(e, p)) {
				/* adaptive: a huge page promoted and cold again within the
				 * ping-pong window was hot in part only. Its base pages get
				 * a second chance each, at the head of the list: those used
				 * since stay, the rest go down alone. */
				tb_lru_add_head(e, ni, t, p);
				if (tb_huge_split(e, p))
					tb_lru_del(e, ni, t, p);
				else
					continue;
			}
			cand[k++] = p;
		}
		if (k) {
			size_t moved = tb_migrate_pages(e, cand, k, (unsigned)n->demote_to, why);
			reclaimed += moved;
			if (moved == 0)
				break; /* the lower node is full */
		}
	}
	return reclaimed;
}

void tb_kswapd_run(struct tb_engine *e, uint64_t elapsed_ns)
{
	double cap = (double)e->kswapd_pages_per_sec / 10.0;
	if (cap < BATCH)
		cap = BATCH;
	e->kswapd_credit += (double)e->kswapd_pages_per_sec * (double)elapsed_ns / 1e9;
	if (e->kswapd_credit > cap)
		e->kswapd_credit = cap;
	for (unsigned i = 0; i < e->nr_nodes; i++) {
		struct tb_node *n = &e->node[i];
		if (!n->kswapd_awake)
			continue;
		/* The kernel's kswapd, woken by every refused promotion, makes room
		 * as they come; run once per tick, it makes room for those queued since */
		uint64_t target = tb_kswapd_target(e, i) + (e->nr_retry ? tb_promote_waiting(e, i) : 0);
		if (node_free(n) >= target) {
			n->kswapd_awake = false;
			n->kswapd_order = 0;
			continue;
		}
		uint64_t want = target - node_free(n);
		uint64_t budget = (uint64_t)e->kswapd_credit;
		if (budget > want)
			budget = want;
		if (!budget)
			continue;
		uint64_t got = tb_reclaim_node(e, i, budget, TB_MIGRATE_DEMOTE_KSWAPD);
		e->kswapd_credit -= (double)got;
		if (got == 0 || node_free(n) >= target) {
			n->kswapd_awake = false;
			n->kswapd_order = 0;
		}
	}
}
