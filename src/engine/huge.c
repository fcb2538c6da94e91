/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Huge pages: splitting one into base pages, and taking in what the platform
 * found (a collapse, a split, a page now shared). */
#include "engine/internal.h"

#include <errno.h>

/* The books of a split: the head leaves the LRU as one unit of
 * TB_HPAGE_PAGES and comes back, with its tails, as as many base pages in its
 * place, each with the head's state (a split PMD gives every PTE its bits). */
static void split_books(struct tb_engine *e, uint32_t head)
{
	struct tb_pmeta *h = &e->meta[head];
	uint8_t f = h->flags;
	unsigned n = pf_node(f), lru = tb_lru_of(f);
	uint32_t at = h->prev;
	tb_lru_del(e, n, lru, head);
	e->huge[head >> TB_HPAGE_ORDER] = 0;
	for (uint32_t i = 0; i < TB_HPAGE_PAGES; i++) {
		struct tb_pmeta *m = &e->meta[head + i];
		if (i) {
			m->flags = f;
			m->scan_ms = h->scan_ms;
			m->moved = h->moved;
		}
		tb_lru_add_after(e, n, lru, at, head + i);
		at = head + i;
	}
}

int tb_huge_split(struct tb_engine *e, uint32_t head)
{
	if (!e->pops->split)
		return -EOPNOTSUPP;
	int rc = e->pops->split(e->pctx, head);
	if (rc)
		return rc;
	split_books(e, head);
	count(e, TB_C_thp_split_page, 1);
	return 0;
}

/* khugepaged made one huge page of 512 base pages on one node: one LRU entry,
 * active if any of them was, not armed (a new PMD carries no hinting). */
static int collapse_books(struct tb_engine *e, uint32_t head, unsigned flags)
{
	unsigned n = pnode(e, head);
	const struct tb_space *sp = tb_space_of(e, head);
	if (n == TB_NO_NODE || !sp || head + TB_HPAGE_PAGES > sp->first + sp->count)
		return -EINVAL;
	uint8_t any = 0;
	for (uint32_t i = 0; i < TB_HPAGE_PAGES; i++) {
		uint8_t f = e->meta[head + i].flags;
		if (pf_node(f) != n || (f & PF_FILE))
			return -EINVAL;
		any |= f;
	}
	for (uint32_t i = 0; i < TB_HPAGE_PAGES; i++) {
		tb_lru_del(e, n, tb_lru_of(e->meta[head + i].flags), head + i);
		e->meta[head + i].flags = pf_with_node(0, n);
	}
	e->huge[head >> TB_HPAGE_ORDER] = (uint8_t)(flags & (TB_HUGE | TB_HUGE_SHARED));
	e->meta[head].flags = pf_with_node(any & PF_ACTIVE, n);
	tb_lru_add_head(e, n, tb_lru_of(e->meta[head].flags), head);
	return 0;
}

int tb_engine_set_huge(struct tb_engine *e, uint32_t head, unsigned flags)
{
	promote_flush(e);
	if (head >= e->nr_pages || head > e->nr_pages - TB_HPAGE_PAGES || (head & (TB_HPAGE_PAGES - 1)))
		return -EINVAL;
	if (!(flags & TB_HUGE)) {
		if (in_huge(e, head))
			split_books(e, head);
		return 0;
	}
	if (in_huge(e, head)) {
		e->huge[head >> TB_HPAGE_ORDER] = (uint8_t)(flags & (TB_HUGE | TB_HUGE_SHARED));
		return 0;
	}
	return collapse_books(e, head, flags);
}
