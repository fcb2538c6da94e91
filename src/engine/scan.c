/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The NUMA hint-fault scanner: task_numa_work() per address space. */
#include "engine/internal.h"

#define MAX_SCAN_WINDOW_MB 2560 /* kernel: at most 2.5 GiB scanned per second */

struct tb_space *tb_space_of(struct tb_engine *e, uint32_t p)
{
	size_t lo = 0, hi = e->nr_spaces;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct tb_space *s = &e->spaces[mid];
		if (p < s->first)
			hi = mid;
		else if (p - s->first >= s->count)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

static uint64_t scan_pages(const struct tb_engine *e)
{
	return (uint64_t)e->k.scan_size_mb << (20 - TB_PAGE_SHIFT);
}

/* task_scan_min(): the period covers the whole space, split into windows,
 * never faster than MAX_SCAN_WINDOW_MB per second. */
static uint64_t window_interval_ms(const struct tb_engine *e, const struct tb_space *sp)
{
	uint64_t per = scan_pages(e) ? scan_pages(e) : 1; /* the knob's minimum is 1 MiB; the analyzer cannot know */
	uint64_t windows = (sp->extent + per - 1) / per;
	uint64_t floor = 1000ull * e->k.scan_size_mb / MAX_SCAN_WINDOW_MB;
	uint64_t ms = sp->period_ms / (windows ? windows : 1);
	if (ms < floor)
		ms = floor;
	return ms ? ms : 1;
}

/* update_task_scan_period(): scan slower when most faults are local (nothing
 * to move), faster when they are remote, in slots of a tenth of the period. */
static void pass_done(struct tb_engine *e, struct tb_space *sp)
{
	uint64_t local = sp->faults_local, remote = sp->faults_remote;
	int64_t period = sp->period_ms;
	int64_t slot = (period + 9) / 10;
	if (local + remote == 0) {
		period *= 2;
	} else {
		int64_t ratio = (int64_t)(local * 10 / (local + remote));
		if (ratio >= 7)
			period += (ratio - 7 ? ratio - 7 : 1) * slot;
		else
			period -= (7 - ratio) * slot;
	}
	if (period < e->k.scan_period_min_ms)
		period = e->k.scan_period_min_ms;
	if (period > e->k.scan_period_max_ms)
		period = e->k.scan_period_max_ms;
	sp->period_ms = (uint32_t)period;
	sp->faults_local = sp->faults_remote = 0;
}

static void arm_flush(struct tb_engine *e, uint32_t *buf, size_t *k)
{
	if (*k && e->sops && e->sops->arm)
		e->sops->arm(e->sctx, buf, *k);
	*k = 0;
}

static void scan_window(struct tb_engine *e, struct tb_space *sp)
{
	uint64_t want = scan_pages(e), virt_limit = 8 * want, armed = 0, walked = 0;
	uint32_t mode = e->k.numa_balancing;
	/* as "memory tiering: skip to scan fast memory": in tiering-only mode fast-tier pages have nowhere to go */
	bool skip_fast = (mode & TB_NUMA_BALANCING_MEMORY_TIERING) && !(mode & TB_NUMA_BALANCING_NORMAL);
	uint32_t ms = now_ms(e), buf[BATCH];
	size_t k = 0;
	while (armed < want && walked < virt_limit) {
		uint32_t p = sp->first + sp->offset, step = 1;
		if (in_huge(e, p)) {
			/* one PMD: arm the head; a walk that starts inside one skips it */
			step = TB_HPAGE_PAGES - (p & (TB_HPAGE_PAGES - 1));
			if (p != head_of(e, p))
				p = TB_NIL;
		}
		uint8_t f = p != TB_NIL ? e->meta[p].flags : 0;
		unsigned n = pf_node(f);
		if (n != TB_NO_NODE && !(f & PF_ARMED) && !(skip_fast && node_fast(e, n))) {
			e->meta[p].flags = f | PF_ARMED;
			e->meta[p].scan_ms = ms;
			buf[k++] = p;
			armed += step;
			if (step > 1)
				count(e, TB_C_numa_huge_pte_updates, 1);
			if (k == BATCH)
				arm_flush(e, buf, &k);
		}
		walked += step;
		sp->offset += step;
		if (sp->offset >= sp->extent) {
			sp->offset = 0;
			pass_done(e, sp);
			break;
		}
	}
	arm_flush(e, buf, &k);
	count(e, TB_C_numa_pte_updates, armed);
}

void tb_scan_run(struct tb_engine *e)
{
	if (!(e->policy & TB_POLICY_PROMOTE) || !e->k.numa_balancing)
		return;
	for (size_t i = 0; i < e->nr_spaces; i++) {
		struct tb_space *sp = &e->spaces[i];
		if ((sp->flags & TB_SPACE_UNMAPPED) || !sp->extent || e->now_ns < sp->next_scan_ns)
			continue;
		scan_window(e, sp);
		sp->next_scan_ns = e->now_ns + window_interval_ms(e, sp) * 1000000u;
	}
}
