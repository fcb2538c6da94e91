/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hint faults and the promotion policies (always, hot-threshold, active-lru),
 * and promotions refused for room that wait for it (promote_retry_ms). */
#include "engine/internal.h"

static uint64_t rate_limit_pages(const struct tb_engine *e)
{
	return (uint64_t)e->k.promote_rate_limit_MBps << (20 - TB_PAGE_SHIFT);
}

/* numa_promotion_adjust_threshold(): once per period, compare the candidates
 * seen against what the rate limit allows and step the threshold by 1/16 of
 * its range (2 x the knob) when outside a +-10% band. */
static void adjust_threshold(struct tb_engine *e, struct tb_node *n)
{
	uint32_t now = now_ms(e), period = e->k.scan_period_max_ms;
	if (now - n->th_start_ms <= period)
		return;
	uint64_t ref_cand = rate_limit_pages(e) * period / 1000;
	uint64_t diff = n->nr_cand - n->th_nr_cand;
	uint32_t ref_th = e->k.hot_threshold_ms;
	uint32_t unit = ref_th * 2 / 16 ? ref_th * 2 / 16 : 1;
	uint32_t th = n->threshold_ms ? n->threshold_ms : ref_th, old = th;
	if (diff > ref_cand * 11 / 10)
		th = th > 2 * unit ? th - unit : unit;
	else if (diff < ref_cand * 9 / 10)
		th = th + unit < ref_th * 2 ? th + unit : ref_th * 2;
	n->th_start_ms = now;
	n->th_nr_cand = n->nr_cand;
	n->threshold_ms = th;
	if (th != old)
		count(e, TB_C_threshold_adjustments, 1);
}

/* tierbal's own controller: a promotion that brings back a page demoted
 * within the ping-pong window was wasted twice. When a tenth of the
 * promotions are such returns, halve the threshold, so that only pages
 * touched sooner after their scan (more often) move; when returns are rare
 * (under 2%), let it grow by a quarter, up to twice the knob. */
static void adapt_threshold(struct tb_engine *e, struct tb_node *n)
{
	uint32_t now = now_ms(e);
	if (now - n->ad_start_ms < e->k.adapt_period_ms)
		return;
	uint64_t promoted = e->counters[TB_C_pgpromote_success] - n->ad_promoted;
	uint64_t returned = e->counters[TB_C_pingpong_demote_promote] - n->ad_returned;
	uint32_t max = 2 * e->k.hot_threshold_ms;
	uint32_t th = n->threshold_ms ? n->threshold_ms : e->k.hot_threshold_ms, old = th;
	if (returned && returned * 10 >= promoted)
		th = th / 2 ? th / 2 : 1;
	else if (returned * 50 <= promoted)
		th = th + th / 4 + 1 < max ? th + th / 4 + 1 : max;
	n->ad_start_ms = now;
	n->ad_promoted = e->counters[TB_C_pgpromote_success];
	n->ad_returned = e->counters[TB_C_pingpong_demote_promote];
	n->threshold_ms = th;
	if (th != old)
		count(e, TB_C_threshold_adjustments, 1);
}

static bool free_space_enough(const struct tb_engine *e, const struct tb_node *n)
{
	uint64_t enough = (1ull << 30) >> TB_PAGE_SHIFT;
	if (enough < n->present >> 4)
		enough = n->present >> 4;
	return e->k.free_space_bypass && node_free(n) > n->wmark_promo + enough;
}

/* should_numa_migrate_memory() for a slow-tier page in tiering mode */
static bool hot_enough(struct tb_engine *e, uint32_t p, struct tb_node *dst)
{
	if (free_space_enough(e, dst)) {
		if (!(e->policy & TB_POLICY_ADAPTIVE))
			dst->threshold_ms = 0; /* plenty of room: the workload changed, start over */
		return true;
	}
	if (e->policy & TB_POLICY_ADAPTIVE)
		adapt_threshold(e, dst);
	else if (e->k.threshold_adjust)
		adjust_threshold(e, dst);
	uint32_t th = dst->threshold_ms ? dst->threshold_ms : e->k.hot_threshold_ms;
	uint32_t latency = now_ms(e) - e->meta[p].scan_ms;
	if (latency >= th) {
		count(e, TB_C_promote_fail_threshold, 1);
		return false;
	}
	uint32_t nr = unit_pages(e, p);
	dst->nr_cand += nr;
	count(e, TB_C_pgpromote_candidate, nr);
	uint32_t now = now_ms(e);
	if (now - dst->rl_start_ms > 1000) {
		dst->rl_start_ms = now;
		dst->rl_nr_cand = dst->nr_cand;
	}
	if (dst->nr_cand - dst->rl_nr_cand >= rate_limit_pages(e)) {
		count(e, TB_C_promote_fail_ratelimit, 1);
		return false;
	}
	return true;
}

/* Applies the policy to a hint fault on a slow-tier page; true if it was promoted. */
static bool promote_fault(struct tb_engine *e, uint32_t p, uint8_t f, struct tb_space *sp);
static bool promote_page(struct tb_engine *e, uint32_t p, unsigned src, unsigned dst);

/* The kernel forgets a hot page it had no room for until its next scan,
 * seconds later; with promote_retry_ms it waits here for kswapd's room. A
 * full queue gives up its oldest entry, whose evidence is the stalest. */
static void retry_later(struct tb_engine *e, uint32_t p, unsigned dst)
{
	if (!e->k.promote_retry_ms)
		return;
	if (e->nr_retry == RETRY_MAX) {
		e->retry_head = (e->retry_head + 1) % RETRY_MAX;
		e->nr_retry--;
		count(e, TB_C_promote_retry_expired, 1);
	}
	e->retry[(e->retry_head + e->nr_retry++) % RETRY_MAX] =
		(struct tb_retry){.page = p, .scan_ms = e->meta[p].scan_ms, .at_ms = now_ms(e), .dst = (uint8_t)dst};
}

/* An entry still stands for its page: on the slow tier, not scanned again since */
static bool retry_valid(const struct tb_engine *e, const struct tb_retry *r)
{
	uint8_t f = e->meta[r->page].flags;
	unsigned src = pf_node(f);
	return src != TB_NO_NODE && !node_fast(e, src) && !(f & PF_ARMED) && head_of(e, r->page) == r->page &&
	       e->meta[r->page].scan_ms == r->scan_ms;
}

uint64_t tb_promote_waiting(const struct tb_engine *e, unsigned node)
{
	uint64_t pages = 0;
	for (size_t i = 0; i < e->nr_retry; i++) {
		const struct tb_retry *r = &e->retry[(e->retry_head + i) % RETRY_MAX];
		if (r->dst == node && retry_valid(e, r))
			pages += unit_pages(e, r->page);
	}
	return pages;
}

/* Promotes queued pages, oldest first, while their node has room. An entry
 * whose page has moved, gone, or been scanned again since is dropped: its
 * next fault decides. */
void tb_promote_retry_run(struct tb_engine *e)
{
	uint32_t now = now_ms(e);
	bool was_batching = e->batching;
	e->batching = true; /* one migrate call per 32 pages */
	while (e->nr_retry) {
		const struct tb_retry *r = &e->retry[e->retry_head];
		bool valid = retry_valid(e, r);
		unsigned src = pf_node(e->meta[r->page].flags);
		if (valid && now - r->at_ms > e->k.promote_retry_ms) {
			count(e, TB_C_promote_retry_expired, 1);
			valid = false;
		}
		if (valid) {
			const struct tb_node *d = &e->node[r->dst];
			if (node_free(d) <= promote_floor(d) + unit_pages(e, r->page)) {
				/* still no room: kswapd's next run makes it */
				tb_kswapd_wake_order(e, r->dst, in_huge(e, r->page) ? TB_HPAGE_ORDER : 0);
				break;
			}
			promote_page(e, r->page, src, r->dst);
			count(e, TB_C_promote_retried, 1);
		}
		e->retry_head = (e->retry_head + 1) % RETRY_MAX;
		e->nr_retry--;
	}
	promote_flush(e);
	e->batching = was_batching;
}

void tb_engine_prefetch(const struct tb_engine *e, uint32_t p)
{
	if (p < e->nr_pages)
		__builtin_prefetch(&e->meta[p], 1);
}

void tb_engine_hint_fault(struct tb_engine *e, uint32_t p, bool write)
{
	(void)write; /* the kernel's policies do not tell reads from writes */
	if (p >= e->nr_pages)
		return;
	p = head_of(e, p); /* one PMD: a fault anywhere in a huge page is its fault */
	uint8_t f = e->meta[p].flags;
	unsigned src = pf_node(f);
	if (src == TB_NO_NODE || !(f & PF_ARMED))
		return;
	e->meta[p].flags = f & (uint8_t)~PF_ARMED;
	struct tb_space *sp = tb_space_of(e, p);
	if (!sp)
		return;
	e->now_ns = e->pops->now_ns(e->pctx);
	count(e, TB_C_numa_hint_faults, 1);
	if (src == sp->cpu_node) {
		count(e, TB_C_numa_hint_faults_local, 1);
		sp->faults_local++;
	} else {
		sp->faults_remote++;
	}
	if (!tb_tiering_on(e) || node_fast(e, src))
		return;
	/* adaptive: a fault that moved nothing tells the scanner what a local
	 * fault tells it, that there is little to do here, so it slows down */
	if (!promote_fault(e, p, f, sp) && (e->policy & TB_POLICY_ADAPTIVE)) {
		sp->faults_remote--;
		sp->faults_local++;
	}
}

static bool promote_fault(struct tb_engine *e, uint32_t p, uint8_t f, struct tb_space *sp)
{
	unsigned src = pf_node(f);
	unsigned dst = sp->cpu_node;
	struct tb_node *d = &e->node[dst];
	if ((e->policy & TB_POLICY_ACTIVE_LRU) && !(f & PF_ACTIVE)) {
		/* TPP: an inactive page is only activated; a later fault promotes it */
		tb_page_activate(e, p);
		count(e, TB_C_promote_defer_inactive, 1);
		return false;
	}
	/* numamigrate_isolate_page(): a huge page mapped by several processes stays */
	if (e->huge[p >> TB_HPAGE_ORDER] & TB_HUGE_SHARED) {
		count(e, TB_C_promote_fail_shared, 1);
		return false;
	}
	if ((e->policy & TB_POLICY_HOT) && !hot_enough(e, p, d))
		return false;
	/* migrate_balanced_pgdat(): promotion may not push the node below high (promote_floor) */
	if (node_free(d) <= promote_floor(d) + unit_pages(e, p)) {
		count(e, TB_C_promote_fail_wmark, 1);
		tb_boost_on_refusal(e, dst);
		tb_kswapd_wake_order(e, dst, in_huge(e, p) ? TB_HPAGE_ORDER : 0); /* as numamigrate_isolate_page() */
		retry_later(e, p, dst);
		return false;
	}
	return promote_page(e, p, src, dst);
}

/* Moves a slow-tier page to dst now, or into the batch. */
static bool promote_page(struct tb_engine *e, uint32_t p, unsigned src, unsigned dst)
{
	struct tb_node *d = &e->node[dst];
	tb_lru_del(e, src, tb_lru_of(e->meta[p].flags), p);
	if (!e->batching)
		return tb_migrate_pages(e, &p, 1, dst, TB_MIGRATE_PROMOTE) == 1;
	if (e->nr_pend && (e->pend_dst != dst || e->nr_pend == BATCH))
		promote_flush(e);
	e->pend[e->nr_pend++] = p;
	e->pend_dst = dst;
	d->pending += unit_pages(e, p); /* the next fault's watermark check sees this page as arrived */
	return true;
}

void tb_promote_flush_now(struct tb_engine *e)
{
	size_t n = e->nr_pend;
	e->nr_pend = 0;
	e->node[e->pend_dst].pending = 0;
	tb_migrate_pages(e, e->pend, n, e->pend_dst, TB_MIGRATE_PROMOTE);
}

void tb_engine_batch_begin(struct tb_engine *e)
{
	e->batching = true;
}

void tb_engine_batch_end(struct tb_engine *e)
{
	promote_flush(e);
	e->batching = false;
}

void tb_engine_mark_accessed(struct tb_engine *e, uint32_t p)
{
	promote_flush(e);
	if (p >= e->nr_pages)
		return;
	p = head_of(e, p);
	uint8_t f = e->meta[p].flags;
	if (pf_node(f) == TB_NO_NODE)
		return;
	if (!(f & PF_REFERENCED))
		e->meta[p].flags = f | PF_REFERENCED;
	else if (!(f & PF_ACTIVE))
		tb_page_activate(e, p);
}
