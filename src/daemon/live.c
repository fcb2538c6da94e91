/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The live context's life: the engine built over the machine's nodes, the
 * kernel's settings it starts from, and the Linux calls it makes. */
#include "daemon/live_internal.h"

#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux/kpageflags.h"
#include "util/bigalloc.h"

int tb_live_push(struct pending *p, uint32_t v)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 1024;
		uint32_t *nv = realloc(p->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		p->v = nv;
		p->cap = cap;
	}
	p->v[p->n++] = v;
	return 0;
}

/* An allocation of a round failed: what it was for is skipped, counted and
 * said once; the daemon goes on. */
void tb_live_out_of_memory(struct tb_live *l, const char *what)
{
	l->c[TB_L_out_of_memory]++;
	if (!l->warned_nomem)
		fprintf(l->log, "tierbal: out of memory for %s: skipped (counter out_of_memory); tierbal goes on\n",
			what);
	l->warned_nomem = true;
}

/* ---- the kernel's side: Linux, unless a test says otherwise ---- */

static int linux_move(void *ctx, pid_t pid, void *const *pages, size_t n, int node, int *status,
		      struct tb_mover_stats *st)
{
	(void)ctx;
	return tb_mover_move(pid, pages, n, node, status, st);
}

static int linux_query(void *ctx, pid_t pid, void *const *pages, size_t n, int *status)
{
	(void)ctx;
	return tb_mover_query(pid, pages, n, status);
}

static long long linux_node_size(void *ctx, int node, long long *free_bytes)
{
	(void)ctx;
	return numa_node_size64(node, free_bytes);
}

static int linux_huge(void *ctx, pid_t pid, uintptr_t addr, const uint64_t *pm, bool *huge, bool *shared)
{
	const struct tb_live *l = ctx;
	(void)pid;
	(void)addr;
	*huge = *shared = false;
	return l->kpf_fd < 0 ? 0 : tb_kpageflags_thp(l->kpf_fd, pm, huge, shared);
}

static const struct tb_live_mem_ops linux_mem = {
	.move = linux_move,
	.query = linux_query,
	.node_size = linux_node_size,
	.huge = linux_huge,
};

void tb_live_set_mem_ops(struct tb_live *l, const struct tb_live_mem_ops *ops, void *ctx)
{
	l->mem = ops;
	l->mem_ctx = ctx;
}

/* ---- set-up ---- */

static unsigned nearest(const struct tb_topology *topo, unsigned from, const unsigned *tier, bool lower)
{
	unsigned best = from;
	for (unsigned j = 0; j < topo->nr_nodes; j++) {
		bool ok = lower ? tier[j] > tier[from] : tier[j] == 0;
		if (!ok || j == from)
			continue;
		if (best == from || tier[j] < tier[best] ||
		    (tier[j] == tier[best] && topo->node[from].distance[j] < topo->node[from].distance[best]))
			best = j;
	}
	return best;
}

static void apply_sysctls(struct tb_knobs *k)
{
	/* the kernel's own watermark settings, unless the configuration changed them */
	static const struct {
		const char *path;
		size_t off;
	} vm[] = {{"/proc/sys/vm/min_free_kbytes", offsetof(struct tb_knobs, min_free_kbytes)},
		  {"/proc/sys/vm/watermark_scale_factor", offsetof(struct tb_knobs, watermark_scale_factor)}};
	struct tb_knobs def;
	tb_knobs_default(&def);
	for (size_t i = 0; i < sizeof(vm) / sizeof(vm[0]); i++) {
		uint32_t *field = (uint32_t *)((char *)k + vm[i].off);
		if (*field != *(uint32_t *)((char *)&def + vm[i].off))
			continue;
		FILE *f = fopen(vm[i].path, "re");
		unsigned v;
		if (f && fscanf(f, "%u", &v) == 1 && v > 0)
			*field = v;
		if (f)
			fclose(f);
	}
}

int tb_live_new(struct tb_live **out, const struct tb_dconfig *dc, const struct tb_topology *topo,
		struct tb_access access, const char *sampler_why, struct tb_uffd *uffd, FILE *log, char *err,
		size_t len)
{
	*out = NULL;
	struct tb_live *l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, len, "out of memory");
		access.ops->destroy(access.ctx);
		tb_uffd_free(uffd);
		return -ENOMEM;
	}
	l->acc = access; /* from here on, tb_live_free() releases them */
	l->mem = &linux_mem;
	l->mem_ctx = l;
	l->uffd = uffd;
	l->log = log;
	l->kpf_fd = tb_kpageflags_open();
	if (l->kpf_fd < 0)
		fprintf(log,
			"tierbal: /proc/kpageflags: %s: transparent huge pages are not recognised, each is managed "
			"as 512 pages (run as root to have them moved whole)\n",
			strerror(-l->kpf_fd));
	if (topo->nr_nodes < 1 || topo->nr_nodes > TB_MAX_NODES) {
		snprintf(err, len, "%u NUMA nodes: tierbal handles 1 to %d", topo->nr_nodes, TB_MAX_NODES);
		tb_live_free(l);
		return -EINVAL;
	}
	l->dry_run = dc->dry_run;
	l->policy = dc->policy;
	snprintf(l->sampler_why, sizeof(l->sampler_why), "%s", sampler_why);
	struct tb_engine_config ec = {.policy = dc->policy, .nr_nodes = topo->nr_nodes};
	ec.knobs = dc->knobs;
	apply_sysctls(&ec.knobs);
	unsigned tier[TB_MAX_NODES];
	uint64_t total = 0;
	for (unsigned i = 0; i < topo->nr_nodes; i++) {
		int id = topo->node[i].id;
		tier[i] = id < TB_DCFG_MAX_NODES && dc->tier_override[id] >= 0 ? (unsigned)dc->tier_override[id]
									       : topo->node[i].tier;
		l->knode[i] = id;
		ec.nodes[i].present_pages = topo->node[i].total_bytes >> TB_PAGE_SHIFT;
		ec.nodes[i].floor_min = topo->node[i].wmark_min;
		ec.nodes[i].floor_low = topo->node[i].wmark_low;
		ec.nodes[i].floor_high = topo->node[i].wmark_high;
		ec.nodes[i].promote_above_demote = true;
		total += ec.nodes[i].present_pages;
	}
	l->nr_nodes = topo->nr_nodes;
	for (unsigned i = 0; i < topo->nr_nodes; i++) {
		unsigned below = nearest(topo, i, tier, true);
		ec.nodes[i].tier = tier[i];
		ec.nodes[i].demote_to = below == i ? -1 : (int)below;
		unsigned fast = tier[i] == 0 ? i : nearest(topo, i, tier, false);
		ec.nodes[i].socket = fast;
		if (tier[i] == 0)
			l->pool_node[l->nr_pools++] = i;
	}
	if (!l->nr_pools) {
		snprintf(err, len, "no node in the top tier: every node has a tier override above 0");
		tb_live_free(l);
		return -EINVAL;
	}
	l->machine_bytes = total << TB_PAGE_SHIFT;
	uint64_t want = dc->max_managed_mb ? dc->max_managed_mb << (20 - TB_PAGE_SHIFT) : total;
	uint64_t cpp = (want / l->nr_pools + TB_CHUNK_PAGES - 1) / TB_CHUNK_PAGES;
	if (cpp == 0)
		cpp = 1;
	if (cpp * l->nr_pools * TB_CHUNK_PAGES >= UINT32_MAX)
		cpp = (UINT32_MAX - 1) / TB_CHUNK_PAGES / l->nr_pools;
	int rc = tb_idmap_init(&l->map, l->nr_pools, (uint32_t)cpp);
	if (rc) {
		snprintf(err, len, "out of memory for the page map (%llu chunks)", (unsigned long long)cpp);
		tb_live_free(l);
		return rc;
	}
	ec.nr_pages = (uint32_t)(cpp * l->nr_pools * TB_CHUNK_PAGES);
	ec.kswapd_pages_per_sec = dc->demote_rate_mb << (20 - TB_PAGE_SHIFT);
	ec.platform = &tb_live_platform;
	ec.platform_ctx = l;
	if (uffd) {
		ec.sampler = &tb_live_uffd_sampler;
		ec.sampler_ctx = l;
	}
	l->nr_ps = ec.nr_pages;
	l->ps = tb_big_alloc_sparse(l->nr_ps); /* one byte per page id, touched as ids are */
	if (!l->ps) {
		snprintf(err, len, "out of memory for %u page states", ec.nr_pages);
		tb_live_free(l);
		return -ENOMEM;
	}
	rc = tb_engine_new(&l->e, &ec, err, len);
	for (unsigned s = 0; !rc && s < l->nr_pools; s++) {
		uint32_t per = (uint32_t)cpp * TB_CHUNK_PAGES;
		int sp = tb_engine_add_space(l->e, s * per, per, l->pool_node[s], 0);
		if (sp < 0) {
			snprintf(err, len, "engine: cannot add the address space of node %d",
				 l->knode[l->pool_node[s]]);
			rc = sp;
		}
	}
	if (rc) {
		tb_live_free(l);
		return rc;
	}
	*out = l;
	return 0;
}

void tb_live_free(struct tb_live *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nr_t; i++)
		if (l->t[i]) {
			tb_target_close(l->t[i]);
			free(l->t[i]);
		}
	free(l->t);
	if (l->acc.ops)
		l->acc.ops->destroy(l->acc.ctx);
	tb_engine_free(l->e);
	tb_uffd_free(l->uffd);
	tb_idmap_destroy(&l->map);
	tb_big_free(l->ps, l->nr_ps);
	free(l->gone.v);
	free(l->faults.v);
	free(l->fault_write.v);
	free(l->collapsed.v);
	if (l->kpf_fd >= 0)
		close(l->kpf_fd);
	free(l);
}

void tb_live_reconfigure(struct tb_live *l, const struct tb_dconfig *dc)
{
	struct tb_knobs k = dc->knobs;
	apply_sysctls(&k);
	tb_engine_reconfigure(l->e, &k, dc->policy);
	l->policy = dc->policy;
	l->dry_run = dc->dry_run;
}
