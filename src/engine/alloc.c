/* SPDX-License-Identifier: GPL-2.0-or-later */
/* First-touch allocation, modeled on get_page_from_freelist() with
 * node_reclaim_mode = 0: a node below its low watermark is skipped, not
 * reclaimed, which is how anon pages end up trapped on the slow tier. */
#include "engine/internal.h"

#include <errno.h>

static void add_unit(struct tb_engine *e, uint32_t p, unsigned node, bool file, bool huge)
{
	uint8_t f = pf_with_node(file ? PF_FILE : 0, node);
	if (huge) {
		e->huge[p >> TB_HPAGE_ORDER] = TB_HUGE;
		for (uint32_t i = 1; i < TB_HPAGE_PAGES; i++)
			e->meta[p + i] =
				(struct tb_pmeta){.prev = TB_NIL, .next = TB_NIL, .flags = pf_with_node(0, node)};
	}
	e->meta[p].flags = f;
	e->meta[p].moved = 0;
	e->meta[p].scan_ms = 0; /* never scanned: a retry queued for this id's last page does not match */
	tb_lru_add_head(e, node, tb_lru_of(f), p);
	e->node[node].used += unit_pages(e, p);
}

/* the whole run at head is absent and inside one space */
static bool run_absent(struct tb_engine *e, uint32_t head)
{
	if (head & (TB_HPAGE_PAGES - 1) || head > e->nr_pages - TB_HPAGE_PAGES || in_huge(e, head))
		return false;
	const struct tb_space *sp = tb_space_of(e, head);
	if (!sp || head + TB_HPAGE_PAGES > sp->first + sp->count)
		return false;
	for (uint32_t i = 0; i < TB_HPAGE_PAGES; i++)
		if (pnode(e, head + i) != TB_NO_NODE)
			return false;
	return true;
}

static int pick_node(struct tb_engine *e, const unsigned *zl, unsigned nr_zones, bool low_mark, uint32_t nr)
{
	for (unsigned i = 0; i < nr_zones; i++) {
		const struct tb_node *n = &e->node[zl[i]];
		if (node_free(n) >= (low_mark ? n->wmark_low : n->wmark_min) + nr)
			return (int)zl[i];
	}
	return -1;
}

int tb_engine_alloc(struct tb_engine *e, uint32_t p, bool file, unsigned *node)
{
	promote_flush(e);
	if (p >= e->nr_pages || pnode(e, p) != TB_NO_NODE)
		return -EINVAL;
	struct tb_space *sp = tb_space_of(e, p);
	if (!sp)
		return -EINVAL;
	e->now_ns = e->pops->now_ns(e->pctx);
	const unsigned *zl = e->zonelist[sp->cpu_node];
	const struct tb_node *local = &e->node[zl[0]];
	/* TPP: demotion on the top tier starts at its own, higher watermark */
	if (e->k.demote_scale_factor && local->tier == 0 && node_free(local) < local->wmark_demote)
		tb_kswapd_wake(e, zl[0]);
	int n = pick_node(e, zl, e->nr_nodes, true, 1);
	if (n < 0) {
		for (unsigned i = 0; i < e->nr_nodes; i++)
			if (node_free(&e->node[zl[i]]) < tb_kswapd_target(e, zl[i]))
				tb_kswapd_wake(e, zl[i]);
		n = pick_node(e, zl, e->nr_nodes, false, 1);
	}
	if (n < 0) {
		count(e, TB_C_allocstall, 1);
		for (unsigned i = 0; i < e->nr_nodes && n < 0; i++) {
			tb_reclaim_node(e, zl[i], BATCH, TB_MIGRATE_DEMOTE_DIRECT);
			if (node_free(&e->node[zl[i]]) > e->node[zl[i]].wmark_min)
				n = (int)zl[i];
		}
	}
	if (n < 0)
		return -ENOMEM;
	if ((unsigned)n != zl[0])
		count(e, TB_C_numa_miss, 1);
	add_unit(e, p, (unsigned)n, file, false);
	*node = (unsigned)n;
	return 0;
}

int tb_engine_alloc_huge(struct tb_engine *e, uint32_t head, bool any_node, unsigned *node)
{
	promote_flush(e);
	if (head >= e->nr_pages || !run_absent(e, head))
		return -EINVAL;
	e->now_ns = e->pops->now_ns(e->pctx);
	const unsigned *zl = e->zonelist[tb_space_of(e, head)->cpu_node];
	int n = pick_node(e, zl, any_node ? e->nr_nodes : 1, true, TB_HPAGE_PAGES);
	if (n < 0) {
		count(e, TB_C_thp_fault_fallback, 1);
		return -ENOMEM;
	}
	const struct tb_node *local = &e->node[zl[0]];
	if (e->k.demote_scale_factor && local->tier == 0 && node_free(local) < local->wmark_demote + TB_HPAGE_PAGES)
		tb_kswapd_wake(e, zl[0]);
	if ((unsigned)n != zl[0])
		count(e, TB_C_numa_miss, 1);
	add_unit(e, head, (unsigned)n, false, true);
	count(e, TB_C_thp_fault_alloc, 1);
	*node = (unsigned)n;
	return 0;
}

int tb_engine_place_huge(struct tb_engine *e, uint32_t head, unsigned node)
{
	promote_flush(e);
	if (head >= e->nr_pages || node >= e->nr_nodes || !run_absent(e, head))
		return -EINVAL;
	if (node_free(&e->node[node]) < TB_HPAGE_PAGES)
		return -ENOMEM;
	add_unit(e, head, node, false, true);
	return 0;
}

int tb_engine_place(struct tb_engine *e, uint32_t p, unsigned node, bool file)
{
	promote_flush(e);
	if (p >= e->nr_pages || node >= e->nr_nodes || pnode(e, p) != TB_NO_NODE)
		return -EINVAL;
	if (node_free(&e->node[node]) == 0)
		return -ENOMEM;
	add_unit(e, p, node, file, false);
	return 0;
}

void tb_engine_unplace(struct tb_engine *e, uint32_t p)
{
	promote_flush(e);
	if (p >= e->nr_pages)
		return;
	p = head_of(e, p);
	uint8_t f = e->meta[p].flags;
	unsigned n = pf_node(f);
	if (n == TB_NO_NODE)
		return;
	tb_lru_del(e, n, tb_lru_of(f), p);
	e->node[n].used -= unit_pages(e, p);
	if (in_huge(e, p)) {
		e->huge[p >> TB_HPAGE_ORDER] = 0;
		for (uint32_t i = 1; i < TB_HPAGE_PAGES; i++)
			e->meta[p + i].flags = 0;
	}
	e->meta[p].flags = 0; /* not present */
}
