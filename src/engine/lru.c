/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-node LRU lists: doubly linked through the page metadata array. */
#include "engine/internal.h"

unsigned tb_lru_of(uint8_t flags)
{
	return ((flags & PF_FILE) ? LRU_INACTIVE_FILE : LRU_INACTIVE_ANON) + ((flags & PF_ACTIVE) ? 1 : 0);
}

/* A node with nowhere to demote to never reclaims, so the order of its lists
 * is never used: it keeps counts only, which spares the cache misses of
 * linking and unlinking on every migration. */
static inline bool ordered(const struct tb_engine *e, unsigned node)
{
	return e->node[node].demote_to >= 0;
}

void tb_lru_add_head(struct tb_engine *e, unsigned node, unsigned lru, uint32_t p)
{
	struct tb_lru *l = &e->node[node].lru[lru];
	struct tb_pmeta *m = &e->meta[p];
	uint32_t nr = unit_pages(e, p);
	if (!ordered(e, node)) {
		m->prev = m->next = TB_NIL;
		l->count += nr;
		return;
	}
	m->prev = TB_NIL;
	m->next = l->head;
	if (l->head != TB_NIL)
		e->meta[l->head].prev = p;
	else
		l->tail = p;
	l->head = p;
	l->count += nr;
}

void tb_lru_add_after(struct tb_engine *e, unsigned node, unsigned lru, uint32_t at, uint32_t p)
{
	struct tb_lru *l = &e->node[node].lru[lru];
	struct tb_pmeta *m = &e->meta[p];
	if (!ordered(e, node) || at == TB_NIL) {
		tb_lru_add_head(e, node, lru, p);
		return;
	}
	m->prev = at;
	m->next = e->meta[at].next;
	if (m->next != TB_NIL)
		e->meta[m->next].prev = p;
	else
		l->tail = p;
	e->meta[at].next = p;
	l->count += unit_pages(e, p);
}

void tb_lru_del(struct tb_engine *e, unsigned node, unsigned lru, uint32_t p)
{
	struct tb_lru *l = &e->node[node].lru[lru];
	struct tb_pmeta *m = &e->meta[p];
	l->count -= unit_pages(e, p);
	if (!ordered(e, node))
		return;
	if (m->prev != TB_NIL)
		e->meta[m->prev].next = m->next;
	else
		l->head = m->next;
	if (m->next != TB_NIL)
		e->meta[m->next].prev = m->prev;
	else
		l->tail = m->prev;
	m->prev = m->next = TB_NIL;
}

/* Moves a present page to the head of its node's active list. */
void tb_page_activate(struct tb_engine *e, uint32_t p)
{
	uint8_t f = e->meta[p].flags;
	unsigned n = pf_node(f);
	if (f & PF_ACTIVE)
		return;
	tb_lru_del(e, n, tb_lru_of(f), p);
	f = (uint8_t)((f | PF_ACTIVE) & ~PF_REFERENCED);
	e->meta[p].flags = f;
	tb_lru_add_head(e, n, tb_lru_of(f), p);
	count(e, TB_C_pgactivate, unit_pages(e, p));
}
