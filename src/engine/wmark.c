/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Watermarks per node and kswapd's target, in the three promo modes. */
#include "engine/internal.h"

void tb_wmark_setup(struct tb_engine *e)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < e->nr_nodes; i++)
		total += e->node[i].present;
	uint64_t min_kb = e->k.min_free_kbytes;
	if (!min_kb) {
		/* init_per_zone_wmark_min(): sqrt(16 x lowmem KiB), clamped */
		min_kb = isqrt(total * 4 * 16);
		if (min_kb < 128)
			min_kb = 128;
		if (min_kb > 262144)
			min_kb = 262144;
	}
	uint64_t min_pages = min_kb / 4;
	for (unsigned i = 0; i < e->nr_nodes; i++) {
		struct tb_node *n = &e->node[i];
		n->wmark_min = total ? min_pages * n->present / total : 0;
		uint64_t tmp = n->present * e->k.watermark_scale_factor / 10000;
		if (tmp < n->wmark_min / 4)
			tmp = n->wmark_min / 4;
		n->wmark_low = n->wmark_min + tmp;
		n->wmark_high = n->wmark_low + tmp;
		if (n->floor_high > n->wmark_high) {
			/* the kernel keeps more in reserve than the knobs say: its own figures */
			n->wmark_min = n->floor_min > n->wmark_min ? n->floor_min : n->wmark_min;
			n->wmark_low = n->floor_low > n->wmark_low ? n->floor_low : n->wmark_low;
			n->wmark_high = n->floor_high;
			if (n->wmark_high - n->wmark_low > tmp)
				tmp = n->wmark_high - n->wmark_low;
		}
		if (e->k.wmark_mode == TB_WMARK_V10) {
			uint64_t extra = (10ull << 20) >> TB_PAGE_SHIFT;
			if (extra > n->present >> 6)
				extra = n->present >> 6;
			n->wmark_promo = n->wmark_high + extra;
		} else if (e->k.wmark_mode == TB_WMARK_BOOST) {
			n->wmark_promo = n->wmark_high;
		} else {
			n->wmark_promo = n->wmark_high + tmp;
		}
		n->wmark_demote = n->wmark_high;
		if (e->k.demote_scale_factor && n->tier == 0)
			n->wmark_demote = n->wmark_high + n->present * e->k.demote_scale_factor / 10000;
		n->boost_max = n->wmark_high * e->k.watermark_boost_factor / 10000;
		n->boost = 0;
	}
}

bool tb_tiering_on(const struct tb_engine *e)
{
	return (e->policy & TB_POLICY_PROMOTE) && (e->k.numa_balancing & TB_NUMA_BALANCING_MEMORY_TIERING);
}

uint64_t tb_kswapd_target(const struct tb_engine *e, unsigned i)
{
	const struct tb_node *n = &e->node[i];
	uint64_t t = n->wmark_high;
	if (tb_tiering_on(e) && n->demote_to >= 0)
		t = e->k.wmark_mode == TB_WMARK_BOOST ? n->wmark_high + n->boost : n->wmark_promo;
	if (promote_floor(n) > n->wmark_high)
		t = promote_floor(n) + (t - n->wmark_high); /* the same room above where promotions stop */
	else if (n->wmark_demote > t)
		t = n->wmark_demote;
	/* zone_watermark_ok() at order k: 2^k - 1 pages more than the mark */
	if (n->kswapd_order)
		t += (1ull << n->kswapd_order) - 1;
	return t;
}

void tb_kswapd_wake_order(struct tb_engine *e, unsigned n, unsigned order)
{
	if (!e->node[n].kswapd_awake) {
		e->node[n].kswapd_awake = true;
		count(e, TB_C_kswapd_wakeups, 1);
	}
	if (order > e->node[n].kswapd_order)
		e->node[n].kswapd_order = order;
}

void tb_kswapd_wake(struct tb_engine *e, unsigned n)
{
	tb_kswapd_wake_order(e, n, 0);
}

/* A promotion to n was refused for lack of free memory: in boost mode this
 * raises kswapd's target so the next promotions find room. */
void tb_boost_on_refusal(struct tb_engine *e, unsigned i)
{
	struct tb_node *n = &e->node[i];
	if (e->k.wmark_mode != TB_WMARK_BOOST)
		return;
	uint64_t step = ((uint64_t)e->k.boost_step_kb << 10) >> TB_PAGE_SHIFT;
	n->boost = n->boost + step > n->boost_max ? n->boost_max : n->boost + step;
}

void tb_boost_decay(struct tb_engine *e, uint64_t elapsed_ns)
{
	if (e->k.wmark_mode != TB_WMARK_BOOST)
		return;
	uint64_t tau = (uint64_t)e->k.boost_decay_ms * 1000000u;
	for (unsigned i = 0; i < e->nr_nodes; i++) {
		struct tb_node *n = &e->node[i];
		if (!n->boost)
			continue;
		/* first-order decay; small ticks make this close to exp(-t/tau) */
		uint64_t drop =
			elapsed_ns >= tau ? n->boost : (uint64_t)((double)n->boost * (double)elapsed_ns / (double)tau);
		if (drop == 0)
			drop = 1;
		n->boost = drop > n->boost ? 0 : n->boost - drop;
	}
}
