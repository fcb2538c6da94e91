#include "daemon/live.h"

#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/bigalloc.h"
#include "util/clock.h"
#include "linux/pagemap.h"

#define PS_YOUNG 0x1u /* accessed (a fault, or seen by the sampler) since the engine last asked */
/* The sampler saw the page accessed in the last round. It stands for the whole
 * period until the next round, however often kswapd asks: the hardware bit the
 * kernel reads is set again by the next access, but a sampler says so only
 * once a round, and a hot page harvested by aging the active list would
 * otherwise be demoted right after, then promoted back at its next fault. */
#define PS_SEEN 0x2u
/* Within a round: the sampler reported the page (written, for PS_SEEN_W); applied once the
 * sampler has said whether its reports of this round hold */
#define PS_SEEN_NEW 0x4u
#define PS_SEEN_W 0x8u

struct pending {
	uint32_t *v;
	size_t n, cap;
};

struct dry_line {
	pid_t pid;
	int node;
	enum tb_migrate_reason why;
	uint64_t pages;
	uintptr_t first;
};

struct tb_live {
	struct tb_engine *e;
	struct tb_idmap map;
	struct tb_target **t; /* slots; NULL = free */
	size_t nr_t;
	uint8_t *ps;      /* PS_* bits per page id */
	size_t nr_ps;
	unsigned nr_nodes;
	int knode[TB_MAX_NODES]; /* kernel node of each engine node */
	unsigned nr_pools;
	unsigned pool_node[TB_MAX_NODES];
	uint64_t ext[TB_MAX_NODES];
	int64_t dry_delta[TB_MAX_NODES]; /* pages the engine believes moved in, dry run only */
	struct tb_access acc;
	char sampler_why[384];
	uint32_t policy;
	bool dry_run;
	struct tb_mover_stats ms;
	const struct tb_live_mem_ops *mem;
	void *mem_ctx;
	struct pending gone, faults, fault_write;
	uint64_t c[TB_L_NR];
	struct tb_uffd *uffd;  /* tierbal exec: hint faults from userfaultfd; NULL for tierbal run */
	uint64_t now_override; /* the time of the fault being fed to the engine */
	FILE *log;
	struct dry_line dry[32];
	size_t nr_dry;
	/* scratch */
	uint64_t pm[TB_CHUNK_PAGES];
	uint8_t accb[TB_CHUNK_PAGES];
	void *addrs[TB_MOVE_BATCH];
	int status[TB_MOVE_BATCH];
	uint32_t qids[TB_MOVE_BATCH];
	bool warned_full;
	bool warned_nomem;
	uint64_t machine_bytes; /* all memory of all nodes: no mapping larger than that is managed */
};

static const char *const live_names[] = {
#define TB_LNAME(n) #n,
	TB_LIVE_COUNTERS(TB_LNAME)
#undef TB_LNAME
};

static int push(struct pending *p, uint32_t v)
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
static void out_of_memory(struct tb_live *l, const char *what)
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

static const struct tb_live_mem_ops linux_mem = {
	.move = linux_move,
	.query = linux_query,
	.node_size = linux_node_size,
};

void tb_live_set_mem_ops(struct tb_live *l, const struct tb_live_mem_ops *ops, void *ctx)
{
	l->mem = ops;
	l->mem_ctx = ctx;
}

/* ---- platform ops ---- */

static uint64_t live_now(void *ctx)
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
		dry_note(l, t->pid, knode, why, n, (uintptr_t)l->addrs[0]);
		for (size_t i = 0; i < n; i++) {
			unsigned src = tb_engine_page_node(l->e, ids[i]);
			if (src < l->nr_nodes)
				l->dry_delta[src]--;
		}
		l->dry_delta[dst] += (int64_t)n;
		l->c[why == TB_MIGRATE_PROMOTE ? TB_L_dry_run_promote : TB_L_dry_run_demote] += n;
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
		if (push(&l->gone, ids[i])) /* the engine keeps its old view of the page a while */
			out_of_memory(l, "the pages to forget");
	}
	if (rc == -ESRCH)
		t->dead = true;
}

static int live_migrate(void *ctx, const uint32_t *pages, size_t n, int dst, enum tb_migrate_reason why,
			int *status)
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

static const struct tb_platform_ops live_platform = {
	.now_ns = live_now,
	.migrate = live_migrate,
	.test_and_clear_young = live_young,
	.table_alloc = live_table_alloc,
	.table_free = live_table_free,
};

/* The scanner armed these pages: park or write-protect them, in runs of
 * adjacent pages of one process. */
static int live_arm(void *ctx, const uint32_t *pages, size_t n)
{
	struct tb_live *l = ctx;
	size_t i = 0;
	while (i < n) {
		uint32_t owner = l->map.owner[pages[i] >> TB_CHUNK_SHIFT];
		uintptr_t a = tb_idmap_addr(&l->map, pages[i]);
		size_t j = i + 1;
		while (j < n && l->map.owner[pages[j] >> TB_CHUNK_SHIFT] == owner &&
		       tb_idmap_addr(&l->map, pages[j]) == a + ((j - i) << TB_PAGE_SHIFT))
			j++;
		struct tb_target *t = owner < l->nr_t ? l->t[owner] : NULL;
		if (t && !t->dead && tb_uffd_has(l->uffd, t->pid))
			tb_uffd_arm(l->uffd, t->pid, a, (j - i) << TB_PAGE_SHIFT, live_now(l));
		i = j;
	}
	return 0;
}

static const struct tb_sampler_ops uffd_sampler = {
	.arm = live_arm,
};

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
	l->uffd = uffd;
	l->log = log;
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
	ec.platform = &live_platform;
	ec.platform_ctx = l;
	if (uffd) {
		ec.sampler = &uffd_sampler;
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
			snprintf(err, len, "engine: cannot add the address space of node %d", l->knode[l->pool_node[s]]);
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

static void drop_pages(struct tb_live *l, uint32_t chunk)
{
	for (unsigned i = 0; i < TB_CHUNK_PAGES; i++) {
		uint32_t id = tb_idmap_page(chunk, i);
		if (tb_engine_page_node(l->e, id) != TB_NO_NODE) {
			tb_engine_unplace(l->e, id);
			l->c[TB_L_pages_dropped]++;
		}
		l->ps[id] = 0;
	}
}

static void drop_target(struct tb_live *l, size_t slot, const char *why)
{
	struct tb_target *t = l->t[slot];
	for (size_t i = 0; i < t->nr_chunks; i++) {
		drop_pages(l, t->chunks[i].chunk);
		tb_idmap_put(&l->map, t->chunks[i].chunk);
	}
	l->acc.ops->detach(l->acc.ctx, t->pid);
	if (l->uffd)
		tb_uffd_detach(l->uffd, t->pid);
	if (why) { /* NULL: it was never added, so it is not counted as dropped */
		fprintf(l->log, "tierbal: pid %d (%s) %s; no longer managed\n", (int)t->pid, t->comm, why);
		l->c[TB_L_targets_dropped]++;
	}
	tb_target_close(t);
	free(t);
	l->t[slot] = NULL;
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
	free(l);
}

/* ---- targets ---- */

/* Gives the target chunks for the stretches it uses now, frees the others,
 * and registers its mappings with its userfaultfd if it has one. */
static int update_chunks(struct tb_live *l, size_t slot)
{
	struct tb_target *t = l->t[slot];
	struct tb_tchunk *want;
	struct tb_vma *v = NULL;
	size_t n, nv = 0;
	bool uffd = l->uffd && tb_uffd_has(l->uffd, t->pid);
	unsigned skipped = t->skipped_vmas;
	int rc = tb_target_stretches(t, &want, &n, uffd ? &v : NULL, &nv);
	if (rc)
		return rc;
	if (t->skipped_vmas > skipped)
		fprintf(l->log,
			"tierbal: pid %d (%s): %u mappings larger than all memory of this machine are left alone "
			"(reservations such as sanitizer shadow memory: they cannot be resident as a whole)\n",
			(int)t->pid, t->comm, t->skipped_vmas);
	if (uffd) {
		tb_uffd_sync(l->uffd, t->pid, v, nv);
		free(v);
	}
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		while (j < t->nr_chunks && t->chunks[j].base < want[i].base) {
			drop_pages(l, t->chunks[j].chunk);
			tb_idmap_put(&l->map, t->chunks[j].chunk);
			j++;
		}
		if (j < t->nr_chunks && t->chunks[j].base == want[i].base) {
			want[i].chunk = t->chunks[j++].chunk;
			continue;
		}
		if (tb_idmap_get(&l->map, t->pool, (uint32_t)slot, want[i].base, &want[i].chunk)) {
			want[i].chunk = UINT32_MAX;
			l->c[TB_L_idmap_full]++;
			if (!l->warned_full)
				fprintf(l->log, "tierbal: managed memory limit reached (%u MiB per fast node); raise "
						"max_managed_mb to manage more\n",
					l->map.chunks_per_pool * 2);
			l->warned_full = true;
		}
	}
	for (; j < t->nr_chunks; j++) {
		drop_pages(l, t->chunks[j].chunk);
		tb_idmap_put(&l->map, t->chunks[j].chunk);
	}
	/* keep only stretches that got a chunk */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (want[i].chunk != UINT32_MAX)
			want[k++] = want[i];
	free(t->chunks);
	t->chunks = want;
	t->nr_chunks = k;
	return 0;
}

int tb_live_add(struct tb_live *l, pid_t pid, bool from_cgroup, char *err, size_t len)
{
	for (size_t i = 0; i < l->nr_t; i++)
		if (l->t[i] && l->t[i]->pid == pid && !l->t[i]->dead)
			return -EEXIST;
	struct tb_proc_stat st;
	int rc = tb_target_check(pid, &st, err, len);
	if (rc) {
		l->c[TB_L_targets_refused]++;
		return rc;
	}
	size_t slot = 0;
	while (slot < l->nr_t && l->t[slot])
		slot++;
	if (slot == l->nr_t) {
		struct tb_target **nt = realloc(l->t, (l->nr_t + 1) * sizeof(*nt)); // NOLINT(bugprone-sizeof-expression): an array of pointers
		if (!nt) {
			snprintf(err, len, "out of memory");
			return -ENOMEM;
		}
		l->t = nt;
		l->t[l->nr_t++] = NULL;
	}
	struct tb_target *t = malloc(sizeof(*t));
	if (!t) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	rc = tb_target_open(t, pid, &st, err, len);
	if (rc) {
		free(t);
		return rc;
	}
	t->from_cgroup = from_cgroup;
	t->max_vma_bytes = l->machine_bytes;
	/* its pages join the engine space of the fast node it runs on */
	int cpu_node = numa_node_of_cpu(st.processor);
	t->pool = 0;
	for (unsigned s = 0; s < l->nr_pools; s++)
		if (l->knode[l->pool_node[s]] == cpu_node)
			t->pool = s;
	rc = l->acc.ops->attach(l->acc.ctx, pid);
	if (rc) {
		snprintf(err, len, "pid %d (%s): the %s sampler cannot watch it: %s", (int)pid, st.comm,
			 l->acc.ops->name, strerror(-rc));
		tb_target_close(t);
		free(t);
		return rc;
	}
	l->t[slot] = t;
	rc = update_chunks(l, slot);
	if (rc) {
		snprintf(err, len, "pid %d (%s): cannot read its memory maps: %s", (int)pid, st.comm, strerror(-rc));
		drop_target(l, slot, NULL);
		return rc;
	}
	l->c[TB_L_targets_added]++;
	fprintf(l->log, "tierbal: managing pid %d (%s)%s\n", (int)pid, t->comm, from_cgroup ? " from the cgroup" : "");
	return 0;
}

static bool in_list(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

static void forget_gone(struct tb_live *l);
static void feed_faults(struct tb_live *l, const struct tb_uffd_event *ev, size_t n);

int tb_live_attach_uffd(struct tb_live *l, pid_t pid, int fd, const struct tb_uffd_rt *rt, char *err, size_t len)
{
	int chan = rt ? rt->chan : -1;
	if (!l->uffd) {
		close(fd);
		if (chan >= 0)
			close(chan);
		snprintf(err, len, "pid %d: no userfaultfd hint faults in this daemon", (int)pid);
		return -EINVAL;
	}
	for (size_t i = 0; i < l->nr_t; i++)
		if (l->t[i] && l->t[i]->pid == pid && tb_uffd_has(l->uffd, pid))
			drop_target(l, i, NULL); /* it ran exec: a new memory image, a new start */
	int rc = tb_live_add(l, pid, false, err, len);
	if (rc && rc != -EEXIST) {
		close(fd);
		if (chan >= 0)
			close(chan);
		return rc;
	}
	rc = tb_uffd_attach(l->uffd, pid, fd, rt);
	if (rc) {
		snprintf(err, len, "pid %d: cannot watch its userfaultfd: %s", (int)pid, strerror(-rc));
		return rc;
	}
	uintptr_t pa;
	size_t pl;
	bool parks = tb_uffd_park_area(l->uffd, pid, &pa, &pl);
	for (size_t i = 0; i < l->nr_t; i++) {
		if (!l->t[i] || l->t[i]->pid != pid)
			continue;
		if (parks) {
			l->t[i]->hide_start = pa;
			l->t[i]->hide_end = pa + pl;
		}
		if (update_chunks(l, i))
			l->c[TB_L_sample_errors]++; /* the next refresh tries again */
	}
	return 0;
}

static void update_external(struct tb_live *l);

void tb_live_hint_faults(struct tb_live *l)
{
	if (!l->uffd)
		return;
	struct tb_uffd_event ev[64]; /* up to 1024 pages at the default window between two reads of free memory */
	size_t n, fed = 0;
	/* A bounded share per call: the queue refills as fast as promotions free
	 * the program, and the main loop must come back to its other work. */
	while (fed < TB_LIVE_FAULTS_PER_CALL && (n = tb_uffd_drain(l->uffd, ev, sizeof(ev) / sizeof(ev[0]))) > 0) {
		/* promotions are refused at the watermarks of what the nodes really
		 * have free now, not of what they had at the last round */
		update_external(l);
		feed_faults(l, ev, n);
		fed += n;
	}
	if (fed) /* kswapd makes room for the next faults now, not at the next round */
		tb_engine_tick(l->e);
	forget_gone(l);
}

static void feed_faults(struct tb_live *l, const struct tb_uffd_event *ev, size_t n)
{
	tb_engine_batch_begin(l->e);
	for (size_t k = 0; k < n; k++) {
		struct tb_target *t = NULL;
		for (size_t i = 0; i < l->nr_t && !t; i++)
			if (l->t[i] && l->t[i]->pid == ev[k].pid && !l->t[i]->dead)
				t = l->t[i];
		uintptr_t base = ev[k].addr & ~((uintptr_t)TB_CHUNK_BYTES - 1);
		struct tb_tchunk *ch = t ? tb_target_find(t, base) : NULL;
		if (!ch)
			continue;
		l->c[TB_L_uffd_faults]++;
		/* every armed page of the window the fault opened: as the kernel's
		 * fault on a huge page stands for all of its pages */
		unsigned first = (unsigned)((ev[k].addr - base) >> TB_PAGE_SHIFT);
		for (unsigned i = first; i < first + ev[k].pages && i < TB_CHUNK_PAGES; i++) {
			uint32_t id = tb_idmap_page(ch->chunk, i);
			if (tb_engine_page_node(l->e, id) == TB_NO_NODE)
				continue; /* not discovered yet: the next round places it */
			l->ps[id] |= PS_YOUNG;
			l->now_override = ev[k].t_ns; /* the latency is from the scan to the fault, not to now */
			tb_engine_hint_fault(l->e, id, ev[k].write);
			l->now_override = 0;
		}
	}
	tb_engine_batch_end(l->e);
}

void tb_live_refresh(struct tb_live *l, const char *cgroup)
{
	pid_t *members = NULL;
	size_t nm = 0;
	bool have_cg = cgroup && cgroup[0] && tb_cgroup_pids(cgroup, &members, &nm) == 0;
	for (size_t i = 0; i < l->nr_t; i++) {
		struct tb_target *t = l->t[i];
		if (!t)
			continue;
		if (!tb_target_alive(t)) {
			drop_target(l, i, "exited");
			continue;
		}
		if (t->from_cgroup && have_cg && !in_list(members, nm, t->pid)) {
			drop_target(l, i, "left the cgroup");
			continue;
		}
		int rc = update_chunks(l, i);
		if (rc == -ESRCH)
			drop_target(l, i, "exited");
		else if (rc)
			l->c[TB_L_sample_errors]++;
	}
	for (size_t i = 0; have_cg && i < nm; i++) {
		char err[256];
		bool known = false;
		for (size_t k = 0; k < l->nr_t; k++)
			known |= l->t[k] && l->t[k]->pid == members[i];
		if (known || members[i] == getpid())
			continue;
		int rc = tb_live_add(l, members[i], true, err, sizeof(err));
		if (rc && rc != -EEXIST && rc != -ESRCH)
			fprintf(l->log, "tierbal: cgroup member refused: %s\n", err);
	}
	free(members);
}

/* ---- one round ---- */

static void forget_gone(struct tb_live *l)
{
	for (size_t i = 0; i < l->gone.n; i++) {
		tb_engine_unplace(l->e, l->gone.v[i]);
		l->ps[l->gone.v[i]] = 0;
	}
	l->gone.n = 0;
}

static unsigned engine_node(const struct tb_live *l, int knode)
{
	for (unsigned i = 0; i < l->nr_nodes; i++)
		if (l->knode[i] == knode)
			return i;
	return TB_NO_NODE;
}

static void place_found(struct tb_live *l, struct tb_target *t, size_t n)
{
	if (!n)
		return;
	if (l->mem->query(l->mem_ctx, t->pid, l->addrs, n, l->status)) {
		l->c[TB_L_sample_errors]++;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned node = l->status[i] >= 0 ? engine_node(l, l->status[i]) : TB_NO_NODE;
		if (node == TB_NO_NODE)
			continue;
		/* the page was counted as someone else's memory until now */
		if (l->ext[node]) {
			l->ext[node]--;
			tb_engine_set_external(l->e, node, l->ext[node]);
		}
		if (tb_engine_place(l->e, l->qids[i], node, false) == 0)
			l->c[TB_L_pages_discovered]++;
	}
}

static void update_external(struct tb_live *l)
{
	for (unsigned i = 0; i < l->nr_nodes; i++) {
		long long free_b = 0;
		long long size = l->mem->node_size(l->mem_ctx, l->knode[i], &free_b);
		if (size < 0)
			continue;
		struct tb_node_info ni;
		tb_engine_node_info(l->e, i, &ni);
		uint64_t free_p = (uint64_t)free_b >> TB_PAGE_SHIFT;
		uint64_t real_used = ni.present > free_p ? ni.present - free_p : 0;
		/* a dry run's moves never happened: the node really holds used - delta managed pages */
		int64_t managed = (int64_t)ni.used - l->dry_delta[i];
		l->ext[i] = (int64_t)real_used > managed ? (uint64_t)((int64_t)real_used - managed) : 0;
		tb_engine_set_external(l->e, i, l->ext[i]);
	}
}

/* The sampler's reports of this round, now that it has said which hold: a
 * page seen is young, and an armed one took a hint fault (from the sampler
 * where no userfaultfd gives them). */
static void apply_seen(struct tb_live *l, struct tb_target *t, bool uffd)
{
	uintptr_t bad_end = 0, checked_end = 0; /* pages come in address order: one answer serves a stretch */
	for (size_t c = 0; c < t->nr_chunks; c++) {
		const struct tb_tchunk *ch = &t->chunks[c];
		for (unsigned i = 0; i < TB_CHUNK_PAGES; i++) {
			uint32_t id = tb_idmap_page(ch->chunk, i);
			uint8_t ps = l->ps[id];
			if (!(ps & PS_SEEN_NEW))
				continue;
			l->ps[id] = (uint8_t)(ps & ~(PS_SEEN_NEW | PS_SEEN_W));
			uintptr_t a = ch->base + ((uintptr_t)i << TB_PAGE_SHIFT);
			if (l->acc.ops->unreliable && a >= checked_end) {
				uintptr_t end;
				bool bad = l->acc.ops->unreliable(l->acc.ctx, t->pid, a, &end);
				checked_end = end;
				bad_end = bad ? end : 0;
			}
			if (a < bad_end) {
				l->c[TB_L_samples_disregarded]++;
				continue;
			}
			l->ps[id] |= PS_SEEN | PS_YOUNG;
			if (!uffd) { /* with a userfaultfd, hint faults come from it */
				/* both or neither: the two lists stay the same length */
				if (push(&l->faults, id)) {
					out_of_memory(l, "the hint faults of a round");
				} else if (push(&l->fault_write, (ps & PS_SEEN_W) != 0)) {
					l->faults.n--;
					out_of_memory(l, "the hint faults of a round");
				}
			}
		}
	}
}

static void sample_target(struct tb_live *l, struct tb_target *t)
{
	size_t nq = 0, seen = 0;
	bool uffd = l->uffd && tb_uffd_has(l->uffd, t->pid);
	uint64_t parked[TB_CHUNK_PAGES / 64];
	l->faults.n = l->fault_write.n = 0;
	for (size_t c = 0; c < t->nr_chunks && !t->dead; c++) {
		const struct tb_tchunk *ch = &t->chunks[c];
		int rc = tb_pagemap_read(t->pagemap_fd, ch->base, TB_CHUNK_PAGES, l->pm);
		if (rc == -ESRCH) {
			t->dead = true;
			break;
		}
		if (rc) {
			l->c[TB_L_sample_errors]++;
			continue;
		}
		l->acc.ops->mark(l->acc.ctx, t->pid, ch->base, TB_CHUNK_PAGES, l->pm, l->accb);
		/* read after the pagemap: a window put back in between is present in
		 * neither view, but one parked in between cannot be (the scanner parks
		 * in this thread) */
		bool anyp = uffd && tb_uffd_parked(l->uffd, t->pid, ch->base, TB_CHUNK_PAGES, parked);
		for (unsigned i = 0; i < TB_CHUNK_PAGES; i++) {
			uint32_t id = tb_idmap_page(ch->chunk, i);
			bool elig = ch->elig[i / 64] >> (i % 64) & 1;
			bool present = elig && (l->pm[i] & TB_PM_PRESENT);
			unsigned node = tb_engine_page_node(l->e, id);
			if (anyp && elig && !present && node != TB_NO_NODE && (parked[i / 64] >> (i % 64) & 1))
				continue; /* parked: armed, and away until its next access */
			if (node == TB_NO_NODE) {
				if (!present)
					continue;
				l->addrs[nq] = (void *)(ch->base + ((uintptr_t)i << 12));
				l->qids[nq++] = id;
				if (nq == TB_MOVE_BATCH) {
					place_found(l, t, nq);
					nq = 0;
				}
			} else if (!present) {
				tb_engine_unplace(l->e, id);
				l->ps[id] = 0;
				l->c[TB_L_pages_dropped]++;
			} else {
				uint8_t ps = (uint8_t)(l->ps[id] & ~(PS_SEEN | PS_SEEN_NEW | PS_SEEN_W));
				if (l->accb[i])
					ps |= (uint8_t)(PS_SEEN_NEW | ((l->accb[i] & TB_ACC_WRITE) ? PS_SEEN_W : 0));
				l->ps[id] = ps;
				seen += l->accb[i] != 0;
				if (uffd && !(l->pm[i] & TB_PM_UFFD_WP) && tb_engine_disarm(l->e, id))
					/* armed, but not protected: armed before the userfaultfd
					 * came, or zapped since; the next pass protects it again */
					l->c[TB_L_uffd_rearmed]++;
			}
		}
	}
	place_found(l, t, nq);
	if (!t->dead && l->acc.ops->round_end(l->acc.ctx, t->pid))
		l->c[TB_L_sample_errors]++;
	if (seen && !t->dead)
		apply_seen(l, t, uffd);
	/* an access to a page the scanner armed is a hint fault; the engine ignores the others */
	tb_engine_batch_begin(l->e);
	for (size_t i = 0; i < l->faults.n && !t->dead; i++)
		tb_engine_hint_fault(l->e, l->faults.v[i], l->fault_write.v[i]);
	tb_engine_batch_end(l->e);
	forget_gone(l);
}

static void flush_dry(struct tb_live *l)
{
	for (size_t i = 0; i < l->nr_dry; i++) {
		const struct dry_line *d = &l->dry[i];
		fprintf(l->log, "tierbal: dry run: would %s %llu pages of pid %d to node %d (first at %#lx)\n",
			d->why == TB_MIGRATE_PROMOTE ? "promote" : "demote", (unsigned long long)d->pages, (int)d->pid,
			d->node, (unsigned long)d->first);
	}
	l->nr_dry = 0;
}

/* The scanner walks each pool only up to its highest chunk in use, as the
 * kernel's walks a task's mappings, not the machine: a pool spans all memory */
static void set_extents(struct tb_live *l)
{
	for (uint32_t s = 0; s < l->nr_pools; s++)
		tb_engine_set_space_extent(l->e, (int)s, tb_idmap_extent(&l->map, s) * TB_CHUNK_PAGES);
}

void tb_live_sample(struct tb_live *l)
{
	if (l->uffd) /* a page accessed later than twice the hot threshold after its scan is cold anyway */
		tb_uffd_expire(l->uffd, live_now(l));
	tb_live_hint_faults(l); /* faults already resolved must not look like lost protections below */
	set_extents(l);
	if (l->acc.ops->round_begin(l->acc.ctx))
		l->c[TB_L_sample_errors]++;
	update_external(l);
	for (size_t i = 0; i < l->nr_t; i++)
		if (l->t[i] && !l->t[i]->dead)
			sample_target(l, l->t[i]);
	tb_engine_tick(l->e);
	forget_gone(l);
	flush_dry(l);
	l->c[TB_L_sample_rounds]++;
}

void tb_live_reconfigure(struct tb_live *l, const struct tb_dconfig *dc)
{
	struct tb_knobs k = dc->knobs;
	apply_sysctls(&k);
	tb_engine_reconfigure(l->e, &k, dc->policy);
	l->policy = dc->policy;
	l->dry_run = dc->dry_run;
}

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

#define EMIT(...)                                                                 \
	do {                                                                      \
		int w_ = snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__); \
		if (w_ > 0)                                                       \
			off += (size_t)w_;                                        \
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
