/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Engine life cycle, background tick, introspection and invariant checks. */
#include "engine/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const counter_names[] = {
#define TB_NAME(name) #name,
	TB_COUNTERS(TB_NAME)
#undef TB_NAME
};

const char *tb_counter_name(enum tb_counter c)
{
	return (unsigned)c < TB_NR_COUNTERS ? counter_names[c] : "?";
}

/* Allocation fallback order from a CPU node: itself, then lower tiers of its
 * socket, then other sockets (the order SLIT distances give on such boxes). */
static void build_zonelists(struct tb_engine *e)
{
	for (unsigned c = 0; c < e->nr_nodes; c++) {
		unsigned key[TB_MAX_NODES];
		for (unsigned n = 0; n < e->nr_nodes; n++) {
			key[n] = (e->node[n].socket != e->node[c].socket) * 1000 + e->node[n].tier * 10 + (n != c);
			e->zonelist[c][n] = n;
		}
		for (unsigned i = 1; i < e->nr_nodes; i++)
			for (unsigned j = i; j > 0 && key[e->zonelist[c][j]] < key[e->zonelist[c][j - 1]]; j--) {
				unsigned t = e->zonelist[c][j];
				e->zonelist[c][j] = e->zonelist[c][j - 1];
				e->zonelist[c][j - 1] = t;
			}
	}
}

int tb_engine_new(struct tb_engine **out, const struct tb_engine_config *cfg, char *err, size_t errlen)
{
	*out = NULL;
	if (!cfg->platform || !cfg->platform->now_ns || !cfg->platform->migrate ||
	    !cfg->platform->test_and_clear_young) {
		snprintf(err, errlen, "engine: platform ops incomplete (now_ns, migrate, test_and_clear_young)");
		return -EINVAL;
	}
	if (cfg->nr_nodes < 1 || cfg->nr_nodes > TB_MAX_NODES) {
		snprintf(err, errlen, "engine: %u nodes; 1 to %d are supported", cfg->nr_nodes, TB_MAX_NODES);
		return -EINVAL;
	}
	if (cfg->nr_pages == 0 || cfg->nr_pages == TB_NIL) {
		snprintf(err, errlen, "engine: %u pages; 1 to %u are supported", cfg->nr_pages, TB_NIL - 1);
		return -EINVAL;
	}
	bool top = false;
	for (unsigned i = 0; i < cfg->nr_nodes; i++) {
		const struct tb_node_config *n = &cfg->nodes[i];
		top |= n->tier == 0;
		if (n->demote_to >= (int)cfg->nr_nodes || n->demote_to == (int)i ||
		    (n->demote_to >= 0 && cfg->nodes[n->demote_to].tier <= n->tier)) {
			snprintf(err, errlen, "engine: node %u demotes to node %d, which is not a lower tier", i,
				 n->demote_to);
			return -EINVAL;
		}
	}
	if (!top) {
		snprintf(err, errlen, "engine: no node in the top tier (tier 0)");
		return -EINVAL;
	}
	struct tb_engine *e = calloc(1, sizeof(*e));
	if (!e)
		goto nomem;
	e->pops = cfg->platform;
	e->pctx = cfg->platform_ctx;
	e->nr_pages = cfg->nr_pages;
	size_t bytes = (size_t)cfg->nr_pages * sizeof(*e->meta);
	/* zeroed: every page absent (pf_node), and untouched parts cost nothing */
	e->meta = e->pops->table_alloc ? e->pops->table_alloc(e->pctx, bytes) : calloc(cfg->nr_pages, sizeof(*e->meta));
	e->huge = calloc(((size_t)cfg->nr_pages + TB_HPAGE_PAGES - 1) >> TB_HPAGE_ORDER, 1);
	if (!e->meta || !e->huge)
		goto nomem;
	e->k = cfg->knobs;
	e->policy = cfg->policy;
	e->sops = cfg->sampler;
	e->sctx = cfg->sampler_ctx;
	e->nr_nodes = cfg->nr_nodes;
	e->kswapd_pages_per_sec = cfg->kswapd_pages_per_sec ? cfg->kswapd_pages_per_sec : 1000000;
	for (unsigned i = 0; i < cfg->nr_nodes; i++) {
		struct tb_node *n = &e->node[i];
		n->present = cfg->nodes[i].present_pages;
		n->floor_min = cfg->nodes[i].floor_min;
		n->floor_low = cfg->nodes[i].floor_low;
		n->floor_high = cfg->nodes[i].floor_high;
		n->promote_above_demote = cfg->nodes[i].promote_above_demote;
		n->tier = cfg->nodes[i].tier;
		n->socket = cfg->nodes[i].socket;
		n->demote_to = cfg->nodes[i].demote_to;
		for (unsigned l = 0; l < NR_LRU; l++)
			n->lru[l] = (struct tb_lru){TB_NIL, TB_NIL, 0};
	}
	tb_wmark_setup(e);
	build_zonelists(e);
	e->now_ns = e->last_tick_ns = e->pops->now_ns(e->pctx);
	*out = e;
	return 0;
nomem:
	tb_engine_free(e);
	snprintf(err, errlen, "engine: out of memory for %u pages (%zu bytes each)", cfg->nr_pages,
		 sizeof(struct tb_pmeta));
	return -ENOMEM;
}

void tb_engine_free(struct tb_engine *e)
{
	if (!e)
		return;
	if (e->meta && e->pops->table_free)
		e->pops->table_free(e->pctx, e->meta, (size_t)e->nr_pages * sizeof(*e->meta));
	else
		free(e->meta);
	free(e->huge);
	free(e->spaces);
	free(e);
}

int tb_engine_add_space(struct tb_engine *e, uint32_t first, uint32_t count, unsigned cpu_node, unsigned flags)
{
	if (count == 0 || first >= e->nr_pages || count > e->nr_pages - first || cpu_node >= e->nr_nodes ||
	    e->node[cpu_node].tier != 0)
		return -EINVAL;
	if (e->nr_spaces) {
		const struct tb_space *last = &e->spaces[e->nr_spaces - 1];
		if (first < last->first + last->count)
			return -EINVAL; /* spaces are added in order and do not overlap */
	}
	if (e->nr_spaces == e->cap_spaces) {
		size_t cap = e->cap_spaces ? 2 * e->cap_spaces : 4;
		struct tb_space *s = realloc(e->spaces, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		e->spaces = s;
		e->cap_spaces = cap;
	}
	struct tb_space *sp = &e->spaces[e->nr_spaces];
	*sp = (struct tb_space){.first = first, .count = count, .extent = count, .cpu_node = cpu_node, .flags = flags};
	sp->period_ms = e->k.scan_period_min_ms;
	sp->next_scan_ns = e->pops->now_ns(e->pctx) + (uint64_t)e->k.scan_delay_ms * 1000000u;
	return (int)e->nr_spaces++;
}

int tb_engine_set_space_extent(struct tb_engine *e, int space, uint32_t extent)
{
	if (space < 0 || (size_t)space >= e->nr_spaces || extent > e->spaces[space].count)
		return -EINVAL;
	struct tb_space *sp = &e->spaces[space];
	sp->extent = extent;
	if (sp->offset >= extent)
		sp->offset = 0; /* the part it was in has gone: start the next pass */
	return 0;
}

int tb_engine_set_external(struct tb_engine *e, unsigned node, uint64_t pages)
{
	promote_flush(e);
	if (node >= e->nr_nodes)
		return -EINVAL;
	struct tb_node *n = &e->node[node];
	n->external = pages;
	uint64_t wake = e->k.demote_scale_factor && n->tier == 0 ? n->wmark_demote : n->wmark_low;
	if (n->demote_to >= 0 && node_free(n) < wake)
		tb_kswapd_wake(e, node);
	return 0;
}

void tb_engine_reconfigure(struct tb_engine *e, const struct tb_knobs *k, uint32_t policy)
{
	promote_flush(e);
	e->k = *k;
	e->policy = policy;
	tb_wmark_setup(e);
}

void tb_engine_tick(struct tb_engine *e)
{
	promote_flush(e);
	e->now_ns = e->pops->now_ns(e->pctx);
	uint64_t elapsed = e->now_ns - e->last_tick_ns;
	e->last_tick_ns = e->now_ns;
	tb_scan_run(e);
	tb_boost_decay(e, elapsed);
	tb_kswapd_run(e, elapsed);
	if (e->nr_retry)
		tb_promote_retry_run(e); /* into the room kswapd just made */
}

const uint64_t *tb_engine_counters(const struct tb_engine *e)
{
	return e->counters;
}

bool tb_engine_disarm(struct tb_engine *e, uint32_t p)
{
	if (p >= e->nr_pages)
		return false;
	p = head_of(e, p);
	if (!(e->meta[p].flags & PF_ARMED))
		return false;
	e->meta[p].flags &= (uint8_t)~PF_ARMED;
	return true;
}

unsigned tb_engine_huge_flags(const struct tb_engine *e, uint32_t p)
{
	return p < e->nr_pages ? e->huge[p >> TB_HPAGE_ORDER] : 0;
}

unsigned tb_engine_page_node(const struct tb_engine *e, uint32_t p)
{
	return p < e->nr_pages ? pnode(e, p) : TB_NO_NODE;
}

void tb_engine_node_info(const struct tb_engine *e, unsigned i, struct tb_node_info *out)
{
	const struct tb_node *n = &e->node[i];
	*out = (struct tb_node_info){
		.present = n->present,
		.used = n->used,
		.external = n->external,
		.wmark_min = n->wmark_min,
		.wmark_low = n->wmark_low,
		.wmark_high = n->wmark_high,
		.wmark_promo = n->wmark_promo,
		.wmark_demote = n->wmark_demote,
		.boost = n->boost,
		.kswapd_awake = n->kswapd_awake,
		.threshold_ms = n->threshold_ms ? n->threshold_ms : e->k.hot_threshold_ms,
	};
	for (unsigned l = 0; l < NR_LRU; l++)
		out->lru[l] = n->lru[l].count;
}

static int check_list(struct tb_engine *e, unsigned ni, unsigned l, char *err, size_t len)
{
	const struct tb_lru *lru = &e->node[ni].lru[l];
	uint32_t prev = TB_NIL, p = lru->head;
	uint64_t n = 0;
	while (p != TB_NIL) {
		if (p >= e->nr_pages || n > (uint64_t)e->nr_pages) {
			snprintf(err, len, "node %u list %u: bad link %u", ni, l, p);
			return -EFAULT;
		}
		uint8_t f = e->meta[p].flags;
		if (f & PF_VISIT) {
			snprintf(err, len, "page %u is on more than one list (again on node %u list %u)", p, ni, l);
			return -EFAULT;
		}
		if (pf_node(f) != ni || tb_lru_of(f) != l) {
			snprintf(err, len, "page %u (node %u, list %u) found on node %u list %u", p, pf_node(f),
				 tb_lru_of(f), ni, l);
			return -EFAULT;
		}
		if (e->meta[p].prev != prev) {
			snprintf(err, len, "page %u: prev link %u, expected %u", p, e->meta[p].prev, prev);
			return -EFAULT;
		}
		e->meta[p].flags = f | PF_VISIT;
		if (in_huge(e, p) && p != head_of(e, p)) {
			snprintf(err, len, "page %u, a tail of a huge page, is on node %u list %u", p, ni, l);
			return -EFAULT;
		}
		prev = p;
		n += unit_pages(e, p);
		p = e->meta[p].next;
	}
	if (prev != lru->tail || n != lru->count) {
		snprintf(err, len, "node %u list %u: %llu pages walked, count %llu, tail %u vs %u", ni, l,
			 (unsigned long long)n, (unsigned long long)lru->count, prev, lru->tail);
		return -EFAULT;
	}
	return 0;
}

int tb_engine_check(struct tb_engine *e, char *err, size_t len)
{
	promote_flush(e);
	int rc = 0;
	uint64_t listed[TB_MAX_NODES][NR_LRU] = {{0}};
	for (unsigned ni = 0; ni < e->nr_nodes && !rc; ni++) {
		const struct tb_node *n = &e->node[ni];
		if (n->demote_to >= 0)
			for (unsigned l = 0; l < NR_LRU && !rc; l++)
				rc = check_list(e, ni, l, err, len);
		if (!rc && n->used > n->present) {
			snprintf(err, len, "node %u: %llu used of %llu present: free is negative", ni,
				 (unsigned long long)n->used, (unsigned long long)n->present);
			rc = -EFAULT;
		}
	}
	for (uint32_t p = 0; p < e->nr_pages; p++) {
		uint8_t f = e->meta[p].flags;
		unsigned ni = pf_node(f);
		if (ni != TB_NO_NODE) {
			if (ni >= e->nr_nodes) {
				if (!rc)
					snprintf(err, len, "page %u claims node %u of %u", p, ni, e->nr_nodes);
				rc = -EFAULT;
			} else if (in_huge(e, p) && p != head_of(e, p)) {
				if (!rc && (ni != pnode(e, head_of(e, p)) || (f & PF_VISIT))) {
					snprintf(err, len, "page %u, a tail of the huge page at %u, is on node %u%s", p,
						 head_of(e, p), ni,
						 (f & PF_VISIT) ? " and on a list" : ", its head elsewhere");
					rc = -EFAULT;
				}
			} else {
				listed[ni][tb_lru_of(f)] += unit_pages(e, p);
				if (!rc && e->node[ni].demote_to >= 0 && !(f & PF_VISIT)) {
					snprintf(err, len, "page %u is on node %u but on none of its lists", p, ni);
					rc = -EFAULT;
				}
			}
		}
		if (!rc && ni == TB_NO_NODE && in_huge(e, p)) {
			snprintf(err, len, "page %u of the huge page at %u is not present", p, head_of(e, p));
			rc = -EFAULT;
		}
		if (f & PF_VISIT) /* only pages on a list: the rest of the table stays untouched */
			e->meta[p].flags = f & (uint8_t)~PF_VISIT;
	}
	for (unsigned ni = 0; ni < e->nr_nodes && !rc; ni++) {
		uint64_t used = 0;
		for (unsigned l = 0; l < NR_LRU; l++) {
			used += listed[ni][l];
			if (listed[ni][l] != e->node[ni].lru[l].count) {
				snprintf(err, len, "node %u list %u: %llu pages belong to it, count says %llu", ni, l,
					 (unsigned long long)listed[ni][l],
					 (unsigned long long)e->node[ni].lru[l].count);
				rc = -EFAULT;
			}
		}
		if (!rc && used != e->node[ni].used) {
			snprintf(err, len, "node %u: %llu pages on lists, %llu accounted used", ni,
				 (unsigned long long)used, (unsigned long long)e->node[ni].used);
			rc = -EFAULT;
		}
	}
	return rc;
}
