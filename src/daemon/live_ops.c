/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The engine's platform and sampler ops on Linux: the clock, the young bits
 * the sampler set, move_pages by runs of one process (or a dry run's notes),
 * and arming pages through userfaultfd. */
#include "daemon/live_internal.h"

#include <errno.h>
#include <string.h>

#include "util/bigalloc.h"
#include "util/clock.h"

uint64_t tb_live_now(void *ctx)
{
	const struct tb_live *l = ctx;
	if (l->now_override)
		return l->now_override;
	return tb_mono_ns();
}

static bool live_young(void *ctx, uint32_t page)
{
	struct tb_live *l = ctx;
	bool y = l->ps[page] & (PS_YOUNG | PS_SEEN);
	l->ps[page] &= (uint8_t)~PS_YOUNG;
	return y;
}

static void dry_note(struct tb_live *l, pid_t pid, int node, enum tb_migrate_reason why, size_t n, uintptr_t a)
{
	for (size_t i = 0; i < l->nr_dry; i++)
		if (l->dry[i].pid == pid && l->dry[i].node == node && l->dry[i].why == why) {
			l->dry[i].pages += n;
			return;
		}
	if (l->nr_dry < sizeof(l->dry) / sizeof(l->dry[0]))
		l->dry[l->nr_dry++] = (struct dry_line){pid, node, why, n, a};
}

/* Moves one run of pages that all belong to target t. */
static void move_run(struct tb_live *l, struct tb_target *t, const uint32_t *ids, size_t n, int dst,
		     enum tb_migrate_reason why, int *status)
{
	int knode = l->knode[dst];
	for (size_t i = 0; i < n; i++)
		l->addrs[i] = (void *)tb_idmap_addr(&l->map, ids[i]);
	if (l->dry_run) {
		uint64_t pages = 0; /* a huge page counts its base pages, as the engine's books do */
		for (size_t i = 0; i < n; i++) {
			uint64_t nr = (tb_engine_huge_flags(l->e, ids[i]) & TB_HUGE) ? TB_HPAGE_PAGES : 1;
			unsigned src = tb_engine_page_node(l->e, ids[i]);
			if (src < l->nr_nodes)
				l->dry_delta[src] -= (int64_t)nr;
			pages += nr;
		}
		dry_note(l, t->pid, knode, why, pages, (uintptr_t)l->addrs[0]);
		l->dry_delta[dst] += (int64_t)pages;
		l->c[why == TB_MIGRATE_PROMOTE ? TB_L_dry_run_promote : TB_L_dry_run_demote] += pages;
		memset(status, 0, n * sizeof(*status));
		return;
	}
	int rc = l->mem->move(l->mem_ctx, t->pid, l->addrs, n, knode, l->status, &l->ms);
	if (rc)
		l->c[TB_L_move_failed_calls]++;
	for (size_t i = 0; i < n; i++) {
		int st = rc ? rc : l->status[i];
		if (st == knode) {
			status[i] = 0;
			continue;
		}
		/* not there: forget the page, the next round finds it where it really is */
		status[i] = st < 0 ? st : -EAGAIN;
		if (tb_live_push(&l->gone, ids[i])) /* the engine keeps its old view of the page a while */
			tb_live_out_of_memory(l, "the pages to forget");
	}
	if (rc == -ESRCH)
		t->dead = true;
}

static int live_migrate(void *ctx, const uint32_t *pages, size_t n, int dst, enum tb_migrate_reason why, int *status)
{
	struct tb_live *l = ctx;
	size_t i = 0;
	while (i < n) {
		uint32_t owner = l->map.owner[pages[i] >> TB_CHUNK_SHIFT];
		size_t j = i + 1;
		while (j < n && j - i < TB_MOVE_BATCH && l->map.owner[pages[j] >> TB_CHUNK_SHIFT] == owner)
			j++;
		struct tb_target *t = owner < l->nr_t ? l->t[owner] : NULL;
		if (!t || t->dead) {
			for (size_t k = i; k < j; k++)
				status[k] = -ESRCH;
		} else {
			move_run(l, t, pages + i, j - i, dst, why, status + i);
		}
		i = j;
	}
	return 0;
}

/* The table is sized for all the memory the daemon may manage; ids are handed
 * out lowest first, so only its low part is ever touched. */
static void *live_table_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	return tb_big_alloc_sparse(bytes);
}

static void live_table_free(void *ctx, void *table, size_t bytes)
{
	(void)ctx;
	tb_big_free(table, bytes);
}

const struct tb_platform_ops tb_live_platform = {
	.now_ns = tb_live_now,
	.migrate = live_migrate,
	.test_and_clear_young = live_young,
	.table_alloc = live_table_alloc,
	.table_free = live_table_free,
};

/* The scanner armed these pages: park or write-protect them, in runs of
 * adjacent pages of one process. A huge page is write-protected whole:
 * protecting part of it would split it. */
static int live_arm(void *ctx, const uint32_t *pages, size_t n)
{
	struct tb_live *l = ctx;
	size_t i = 0;
	while (i < n) {
		uint32_t owner = l->map.owner[pages[i] >> TB_CHUNK_SHIFT];
		uintptr_t a = tb_idmap_addr(&l->map, pages[i]);
		if (tb_engine_huge_flags(l->e, pages[i]) & TB_HUGE) {
			struct tb_target *t = owner < l->nr_t ? l->t[owner] : NULL;
			if (t && !t->dead && tb_uffd_has(l->uffd, t->pid))
				tb_uffd_arm_huge(l->uffd, t->pid, a & ~((uintptr_t)TB_CHUNK_BYTES - 1));
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < n && l->map.owner[pages[j] >> TB_CHUNK_SHIFT] == owner &&
		       !(tb_engine_huge_flags(l->e, pages[j]) & TB_HUGE) &&
		       tb_idmap_addr(&l->map, pages[j]) == a + ((j - i) << TB_PAGE_SHIFT))
			j++;
		struct tb_target *t = owner < l->nr_t ? l->t[owner] : NULL;
		if (t && !t->dead && tb_uffd_has(l->uffd, t->pid))
			tb_uffd_arm(l->uffd, t->pid, a, (j - i) << TB_PAGE_SHIFT, tb_live_now(l));
		i = j;
	}
	return 0;
}

const struct tb_sampler_ops tb_live_uffd_sampler = {
	.arm = live_arm,
};

void tb_live_flush_dry(struct tb_live *l)
{
	for (size_t i = 0; i < l->nr_dry; i++) {
		const struct dry_line *d = &l->dry[i];
		fprintf(l->log, "tierbal: dry run: would %s %llu pages of pid %d to node %d (first at %#lx)\n",
			d->why == TB_MIGRATE_PROMOTE ? "promote" : "demote", (unsigned long long)d->pages, (int)d->pid,
			d->node, (unsigned long)d->first);
	}
	l->nr_dry = 0;
}
