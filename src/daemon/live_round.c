/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One sampling round: what the sampler saw in each target's pagemap becomes
 * pages placed, young bits and hint faults for the engine. */
#include "daemon/live_internal.h"

#include <errno.h>

#include "linux/pagemap.h"

void tb_live_forget_gone(struct tb_live *l)
{
	for (size_t i = 0; i < l->gone.n; i++) {
		tb_engine_unplace(l->e, l->gone.v[i]);
		l->ps[l->gone.v[i]] = 0;
	}
	l->gone.n = 0;
}

static unsigned engine_node(const struct tb_live *l, int knode)
{
	for (unsigned i = 0; i < l->nr_nodes; i++)
		if (l->knode[i] == knode)
			return i;
	return TB_NO_NODE;
}

static void place_found(struct tb_live *l, struct tb_target *t, size_t n)
{
	if (!n)
		return;
	if (l->mem->query(l->mem_ctx, t->pid, l->addrs, n, l->status)) {
		l->c[TB_L_sample_errors]++;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned node = l->status[i] >= 0 ? engine_node(l, l->status[i]) : TB_NO_NODE;
		if (node == TB_NO_NODE)
			continue;
		/* the page was counted as someone else's memory until now */
		if (l->ext[node]) {
			l->ext[node]--;
			tb_engine_set_external(l->e, node, l->ext[node]);
		}
		if (tb_engine_place(l->e, l->qids[i], node, false) == 0)
			l->c[TB_L_pages_discovered]++;
	}
}

void tb_live_update_external(struct tb_live *l)
{
	for (unsigned i = 0; i < l->nr_nodes; i++) {
		long long free_b = 0;
		long long size = l->mem->node_size(l->mem_ctx, l->knode[i], &free_b);
		if (size < 0)
			continue;
		struct tb_node_info ni;
		tb_engine_node_info(l->e, i, &ni);
		uint64_t free_p = (uint64_t)free_b >> TB_PAGE_SHIFT;
		uint64_t real_used = ni.present > free_p ? ni.present - free_p : 0;
		/* a dry run's moves never happened: the node really holds used - delta managed pages */
		int64_t managed = (int64_t)ni.used - l->dry_delta[i];
		l->ext[i] = (int64_t)real_used > managed ? (uint64_t)((int64_t)real_used - managed) : 0;
		tb_engine_set_external(l->e, i, l->ext[i]);
	}
}

/* The round reads one id-map chunk as one possible huge page: the three sizes
 * are equal by design, and the assertion keeps them so */
_Static_assert(TB_CHUNK_PAGES == TB_HPAGE_PAGES &&        // NOLINT(misc-redundant-expression)
		       TB_PM_THP_PAGES == TB_HPAGE_PAGES, // NOLINT(misc-redundant-expression)
	       "an id-map chunk, the engine's huge page and pagemap's are the same 512 pages");

static bool whole_present(const uint64_t *pm)
{
	for (unsigned i = 0; i < TB_CHUNK_PAGES; i++)
		if (!(pm[i] & TB_PM_PRESENT))
			return false;
	return true;
}

static bool all_eligible(const struct tb_tchunk *ch)
{
	for (unsigned w = 0; w < TB_CHUNK_PAGES / 64; w++)
		if (ch->elig[w] != UINT64_MAX)
			return false;
	return true;
}

/* Forgets the pages of a run: the next round finds each where it really is. */
static void rediscover(struct tb_live *l, uint32_t head)
{
	for (unsigned i = 0; i < TB_CHUNK_PAGES; i++) {
		tb_engine_unplace(l->e, head + i);
		l->ps[head + i] = 0;
	}
}

/* What the kernel made of the stretch, read from its pagemap entries l->pm:
 * one huge page, or base pages. A split is taken in at once, and its pages
 * are found again (a move the kernel split on the way may have left some
 * behind); a new huge page is taken in once this round has placed its pages. */
static void follow_huge(struct tb_live *l, const struct tb_target *t, const struct tb_tchunk *ch)
{
	uint32_t head = tb_idmap_page(ch->chunk, 0);
	unsigned had = tb_engine_huge_flags(l->e, head);
	bool huge = false, shared = false;
	if (l->mem->huge && all_eligible(ch)) {
		int rc = l->mem->huge(l->mem_ctx, t->pid, ch->base, l->pm, &huge, &shared);
		if (rc) { /* keep the engine's view until kpageflags answers */
			l->c[TB_L_thp_unknown]++;
			return;
		}
	}
	unsigned now = huge ? TB_HUGE | (shared ? TB_HUGE_SHARED : 0) : 0;
	if (now == had)
		return;
	if (!huge) {
		tb_engine_set_huge(l->e, head, 0);
		rediscover(l, head);
		l->c[TB_L_thp_split_found]++;
	} else if (had) { /* now shared, or no longer */
		tb_engine_set_huge(l->e, head, now);
	} else if (tb_live_push(&l->collapsed, head | shared)) { /* a head's low bits are free */
		tb_live_out_of_memory(l, "the huge pages found in a round");
	}
}

/* Takes in the huge pages this round found: the engine holds each as one
 * unit once all its pages are placed on one node, else they are found again. */
static void take_in_huge(struct tb_live *l)
{
	for (size_t i = 0; i < l->collapsed.n; i++) {
		uint32_t v = l->collapsed.v[i], head = v & ~(TB_CHUNK_PAGES - 1);
		if (tb_engine_set_huge(l->e, head, TB_HUGE | ((v & 1) ? TB_HUGE_SHARED : 0)) == 0)
			l->c[TB_L_thp_found]++;
		else
			rediscover(l, head);
	}
	l->collapsed.n = 0;
}

/* The sampler's reports of this round, now that it has said which hold: a
 * page seen is young, and an armed one took a hint fault (from the sampler
 * where no userfaultfd gives them). */
static void apply_seen(struct tb_live *l, struct tb_target *t, bool uffd)
{
	uintptr_t bad_end = 0, checked_end = 0; /* pages come in address order: one answer serves a stretch */
	for (size_t c = 0; c < t->nr_chunks; c++) {
		const struct tb_tchunk *ch = &t->chunks[c];
		for (unsigned i = 0; i < TB_CHUNK_PAGES; i++) {
			uint32_t id = tb_idmap_page(ch->chunk, i);
			uint8_t ps = l->ps[id];
			if (!(ps & PS_SEEN_NEW))
				continue;
			l->ps[id] = (uint8_t)(ps & ~(PS_SEEN_NEW | PS_SEEN_W));
			uintptr_t a = ch->base + ((uintptr_t)i << TB_PAGE_SHIFT);
			if (l->acc.ops->unreliable && a >= checked_end) {
				uintptr_t end;
				bool bad = l->acc.ops->unreliable(l->acc.ctx, t->pid, a, &end);
				checked_end = end;
				bad_end = bad ? end : 0;
			}
			if (a < bad_end) {
				l->c[TB_L_samples_disregarded]++;
				continue;
			}
			l->ps[id] |= PS_SEEN | PS_YOUNG;
			/* with a userfaultfd, hint faults come from it; a huge page, never parked, shows it only
			 * its writes, so the sampler reports its reads as hint faults too */
			if (!uffd || (tb_engine_huge_flags(l->e, id) & TB_HUGE)) {
				/* both or neither: the two lists stay the same length */
				if (tb_live_push(&l->faults, id)) {
					tb_live_out_of_memory(l, "the hint faults of a round");
				} else if (tb_live_push(&l->fault_write, (ps & PS_SEEN_W) != 0)) {
					l->faults.n--;
					tb_live_out_of_memory(l, "the hint faults of a round");
				}
			}
		}
	}
}

static void sample_target(struct tb_live *l, struct tb_target *t)
{
	size_t nq = 0, seen = 0;
	bool uffd = l->uffd && tb_uffd_has(l->uffd, t->pid);
	uint64_t parked[TB_CHUNK_PAGES / 64];
	l->faults.n = l->fault_write.n = 0;
	for (size_t c = 0; c < t->nr_chunks && !t->dead; c++) {
		const struct tb_tchunk *ch = &t->chunks[c];
		int rc = tb_pagemap_read(t->pagemap_fd, ch->base, TB_CHUNK_PAGES, l->pm);
		if (rc == -ESRCH) {
			t->dead = true;
			break;
		}
		if (rc) {
			l->c[TB_L_sample_errors]++;
			continue;
		}
		l->acc.ops->mark(l->acc.ctx, t->pid, ch->base, TB_CHUNK_PAGES, l->pm, l->accb);
		/* read after the pagemap: a window put back in between is present in
		 * neither view, but one parked in between cannot be (the scanner parks
		 * in this thread) */
		bool anyp = uffd && tb_uffd_parked(l->uffd, t->pid, ch->base, TB_CHUNK_PAGES, parked);
		follow_huge(l, t, ch);
		/* a huge page is one unit: its head stands for it, seen if any part of it was */
		unsigned span = TB_CHUNK_PAGES;
		bool huge = tb_engine_huge_flags(l->e, tb_idmap_page(ch->chunk, 0)) & TB_HUGE;
		if (huge && whole_present(l->pm)) {
			for (unsigned i = 1; i < TB_CHUNK_PAGES; i++)
				l->accb[0] |= l->accb[i];
			span = 1;
		}
		for (unsigned i = 0; i < span; i++) {
			uint32_t id = tb_idmap_page(ch->chunk, i);
			bool elig = ch->elig[i / 64] >> (i % 64) & 1;
			bool present = elig && (l->pm[i] & TB_PM_PRESENT);
			unsigned node = tb_engine_page_node(l->e, id);
			if (anyp && elig && !present && node != TB_NO_NODE && (parked[i / 64] >> (i % 64) & 1))
				continue; /* parked: armed, and away until its next access */
			if (node == TB_NO_NODE) {
				if (!present)
					continue;
				l->addrs[nq] = (void *)(ch->base + ((uintptr_t)i << 12));
				l->qids[nq++] = id;
				if (nq == TB_MOVE_BATCH) {
					place_found(l, t, nq);
					nq = 0;
				}
			} else if (!present) {
				tb_engine_unplace(l->e, id);
				l->ps[id] = 0;
				l->c[TB_L_pages_dropped]++;
			} else {
				uint8_t ps = (uint8_t)(l->ps[id] & ~(PS_SEEN | PS_SEEN_NEW | PS_SEEN_W));
				if (l->accb[i])
					ps |= (uint8_t)(PS_SEEN_NEW | ((l->accb[i] & TB_ACC_WRITE) ? PS_SEEN_W : 0));
				l->ps[id] = ps;
				seen += l->accb[i] != 0;
				if (uffd && !huge && !(l->pm[i] & TB_PM_UFFD_WP) && tb_engine_disarm(l->e, id))
					/* armed, but not protected: armed before the userfaultfd
					 * came, or zapped since; the next pass protects it again */
					l->c[TB_L_uffd_rearmed]++;
			}
		}
	}
	place_found(l, t, nq);
	take_in_huge(l);
	if (!t->dead && l->acc.ops->round_end(l->acc.ctx, t->pid))
		l->c[TB_L_sample_errors]++;
	if (seen && !t->dead)
		apply_seen(l, t, uffd);
	/* an access to a page the scanner armed is a hint fault; the engine ignores the others */
	tb_engine_batch_begin(l->e);
	for (size_t i = 0; i < l->faults.n && !t->dead; i++)
		tb_engine_hint_fault(l->e, l->faults.v[i], l->fault_write.v[i]);
	tb_engine_batch_end(l->e);
	tb_live_forget_gone(l);
}

/* The scanner walks each pool only up to its highest chunk in use, as the
 * kernel's walks a task's mappings, not the machine: a pool spans all memory */
static void set_extents(struct tb_live *l)
{
	for (uint32_t s = 0; s < l->nr_pools; s++)
		tb_engine_set_space_extent(l->e, (int)s, tb_idmap_extent(&l->map, s) * TB_CHUNK_PAGES);
}

void tb_live_sample(struct tb_live *l)
{
	if (l->uffd) /* a page accessed later than twice the hot threshold after its scan is cold anyway */
		tb_uffd_expire(l->uffd, tb_live_now(l));
	tb_live_hint_faults(l); /* faults already resolved must not look like lost protections below */
	set_extents(l);
	if (l->acc.ops->round_begin(l->acc.ctx))
		l->c[TB_L_sample_errors]++;
	tb_live_update_external(l);
	for (size_t i = 0; i < l->nr_t; i++)
		if (l->t[i] && !l->t[i]->dead)
			sample_target(l, l->t[i]);
	tb_engine_tick(l->e);
	tb_live_forget_gone(l);
	tb_live_flush_dry(l);
	l->c[TB_L_sample_rounds]++;
}
