/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The live context's counters and the text of its report. */
#include "daemon/live_internal.h"

#include <string.h>

static const char *const live_names[] = {
#define TB_LNAME(n) #n,
	TB_LIVE_COUNTERS(TB_LNAME)
#undef TB_LNAME
};

void tb_live_count(struct tb_live *l, enum tb_live_counter c)
{
	l->c[c]++;
}

/* the counters as reported: some are kept by the mover or computed on demand */
static void live_counters(const struct tb_live *l, uint64_t *c)
{
	memcpy(c, l->c, sizeof(l->c));
	c[TB_L_move_pages_calls] = l->ms.calls;
	c[TB_L_move_busy] = l->ms.busy;
	c[TB_L_move_nomem] = l->ms.nomem;
	c[TB_L_move_gone] = l->ms.gone;
	c[TB_L_move_other] = l->ms.other;
	c[TB_L_targets] = tb_live_nr_targets(l);
	c[TB_L_pages_managed] = tb_live_pages_managed(l);
}

uint64_t tb_live_counter(const struct tb_live *l, enum tb_live_counter c)
{
	uint64_t all[TB_L_NR];
	live_counters(l, all);
	return all[c];
}

const struct tb_engine *tb_live_engine(const struct tb_live *l)
{
	return l->e;
}

uint64_t tb_live_pages_managed(const struct tb_live *l)
{
	uint64_t managed = 0;
	for (unsigned i = 0; i < l->nr_nodes; i++) {
		struct tb_node_info ni;
		tb_engine_node_info(l->e, i, &ni);
		managed += ni.used;
	}
	return managed;
}

size_t tb_live_nr_targets(const struct tb_live *l)
{
	size_t n = 0;
	for (size_t i = 0; i < l->nr_t; i++)
		n += l->t[i] && !l->t[i]->dead;
	return n;
}

#define EMIT(...)                                                                                                      \
	do {                                                                                                           \
		int w_ = snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__);                                  \
		if (w_ > 0)                                                                                            \
			off += (size_t)w_;                                                                             \
	} while (0)

size_t tb_live_report(const struct tb_live *l, char *buf, size_t len)
{
	size_t off = 0;
	const uint64_t *ec = tb_engine_counters(l->e);
	for (unsigned i = 0; i < TB_NR_COUNTERS; i++)
		EMIT("%s %llu\n", tb_counter_name((enum tb_counter)i), (unsigned long long)ec[i]);
	uint64_t c[TB_L_NR];
	live_counters(l, c);
	for (unsigned i = 0; i < TB_L_NR; i++)
		EMIT("%s %llu\n", live_names[i], (unsigned long long)c[i]);
	for (unsigned i = 0; i < l->nr_nodes; i++) {
		struct tb_node_info ni;
		tb_engine_node_info(l->e, i, &ni);
		int k = l->knode[i];
		EMIT("node%d_managed_pages %llu\n", k, (unsigned long long)ni.used);
		EMIT("node%d_other_pages %llu\n", k, (unsigned long long)ni.external);
		EMIT("node%d_present_pages %llu\n", k, (unsigned long long)ni.present);
		EMIT("node%d_wmark_high %llu\n", k, (unsigned long long)ni.wmark_high);
		EMIT("node%d_wmark_demote %llu\n", k, (unsigned long long)ni.wmark_demote);
		/* the engine's LRU lists, as Inactive(anon) and Active(anon) in /proc/meminfo */
		EMIT("node%d_inactive_anon %llu\n", k, (unsigned long long)ni.lru[0]);
		EMIT("node%d_active_anon %llu\n", k, (unsigned long long)ni.lru[1]);
	}
	struct tb_node_info top;
	tb_engine_node_info(l->e, l->pool_node[0], &top);
	EMIT("hot_threshold_ms %u\n", top.threshold_ms);
	if (l->uffd) {
		struct tb_uffd_stats us;
		tb_uffd_stats(l->uffd, &us);
		EMIT("uffd_processes %llu\n", (unsigned long long)us.processes);
		EMIT("uffd_faults_resolved %llu\n", (unsigned long long)us.faults);
		EMIT("uffd_faults_read %llu\n", (unsigned long long)us.faults_read);
		EMIT("uffd_faults_huge %llu\n", (unsigned long long)us.faults_huge);
		EMIT("uffd_first_touch_fills %llu\n", (unsigned long long)us.fills);
		EMIT("park_processes %llu\n", (unsigned long long)us.parking);
		EMIT("park_windows %llu\n", (unsigned long long)us.park.windows);
		EMIT("park_fallbacks %llu\n", (unsigned long long)us.park.fallbacks);
		EMIT("park_restored %llu\n", (unsigned long long)us.park.restored);
		EMIT("park_expired %llu\n", (unsigned long long)us.park.expired);
		EMIT("park_copied %llu\n", (unsigned long long)us.park.copied);
		EMIT("park_junk_pages %llu\n", (unsigned long long)us.park.junk);
		EMIT("park_lost_pages %llu\n", (unsigned long long)us.park.lost);
		EMIT("park_forks_held %llu\n", (unsigned long long)us.forks_held);
		EMIT("park_forks_unsafe %llu\n", (unsigned long long)us.forks_unsafe);
		EMIT("uffd_resolve_errors %llu\n", (unsigned long long)us.resolve_errors);
		EMIT("uffd_mappings_registered %llu\n", (unsigned long long)us.registered);
		EMIT("uffd_mappings_thp %llu\n", (unsigned long long)us.registered_huge);
		EMIT("uffd_armed_huge %llu\n", (unsigned long long)us.armed_huge);
		EMIT("uffd_register_errors %llu\n", (unsigned long long)us.register_errors);
		EMIT("uffd_protected_pages %llu\n", (unsigned long long)us.protected_pages);
		EMIT("uffd_arm_skipped %llu\n", (unsigned long long)us.arm_skipped);
		EMIT("uffd_arm_unregistered %llu\n", (unsigned long long)us.arm_unregistered);
		EMIT("uffd_queue_dropped %llu\n", (unsigned long long)us.queue_dropped);
	}
	EMIT("sampler %s\n", l->acc.ops->name);
	EMIT("policy %s\n", tb_policy_name(l->policy));
	EMIT("dry_run %d\n", l->dry_run ? 1 : 0);
	return off < len ? off : len;
}
