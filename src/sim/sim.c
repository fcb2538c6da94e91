/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The simulator: an access stream drawn from the workload runs against a
 * modeled page table; the engine sees it only through hint faults, accessed
 * bits and page-cache accesses, exactly what a kernel would give it. */
#include "sim/sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/bigalloc.h"
#include "util/clock.h"
#include "sim/dist.h"
#include "sim/oracle.h"
#include "sim/trace.h"

/* pstate: the modeled page table entry of each page */
#define S_NODE 0x07u
#define S_ARMED 0x08u  /* PROT_NONE for NUMA hinting */
#define S_YOUNG 0x10u  /* accessed bit */
#define S_ABSENT 0x20u /* never touched */
#define S_HUGE 0x40u   /* part of a huge page: its head's entry holds the accessed bit */
#define S_SLOW (S_ARMED | S_ABSENT)

/* per run of TB_HPAGE_PAGES ids: whether a fault there may get a huge page */
#define B_THP 0x1u     /* yes, on the CPU's node only (no direct reclaim) */
#define B_THP_ANY 0x2u /* yes, on any node in fallback order (MADV_HUGEPAGE) */
#define B_PTE 0x4u     /* a base page was faulted there: no huge page any more */

#define TICK_NS 1000000.0 /* engine background work runs every modeled millisecond */

struct region {
	uint32_t base;
	uint64_t n;
	enum tb_dist_kind kind;
	int64_t center;
	float sigma;
	struct tb_gauss_offsets g;
	struct tb_zipf z;
	uint64_t stride;
	const struct tb_trace *trace;
	size_t trace_pos;
};

struct proc {
	struct region anon, file;
	uint32_t write_thresh, file_thresh; /* out of 65536 */
	double think_ns;
	double share; /* of all accesses, from the processes' weights */
	double lat[TB_MAX_NODES][2];
	unsigned cpu_node;
};

#define PIPE 32 /* accesses drawn ahead of time, power of two */
#define WARN 8  /* how many accesses ahead a coming hint fault is announced */

struct pending {
	uint32_t page;
	uint8_t proc;
	bool write, file;
};

struct sim {
	const struct tb_sim_config *cfg;
	const struct tb_machine *m;
	struct tb_engine *eng;
	uint8_t *pstate;
	uint8_t *blk; /* B_* per run of TB_HPAGE_PAGES ids */
	uint32_t nr_pages;
	double t, bg_ns, overhead_ns;
	struct tb_rng rng;
	struct tb_gauss_table *gauss;
	unsigned nr_procs;
	struct proc proc[TB_WL_MAX_PROCS];
	uint32_t pick[TB_WL_MAX_PROCS]; /* cumulative weights out of 65536 */
	double migrate_ns[TB_MAX_NODES][TB_MAX_NODES];
	double migrate_huge_ns[TB_MAX_NODES][TB_MAX_NODES];
	int alloc_error;
	struct pending pipe[PIPE];
	unsigned pipe_head;
};

/* ---- platform and sampler ops: the modeled hardware ---- */

static uint64_t sim_now(void *ctx)
{
	return (uint64_t)((struct sim *)ctx)->t;
}

static int sim_migrate(void *ctx, const uint32_t *pages, size_t n, int dst, enum tb_migrate_reason why, int *status)
{
	struct sim *s = ctx;
	for (size_t i = 0; i < n; i++) {
		uint8_t st = s->pstate[pages[i]];
		bool huge = st & S_HUGE;
		double cost = (huge ? s->migrate_huge_ns : s->migrate_ns)[st & S_NODE][dst];
		/* promotion runs in the faulting task, direct demotion in the allocating one */
		if (why == TB_MIGRATE_DEMOTE_KSWAPD) {
			s->bg_ns += cost;
		} else {
			s->t += cost;
			s->overhead_ns += cost;
		}
		s->pstate[pages[i]] = (uint8_t)((st & ~S_NODE) | (unsigned)dst);
		for (uint32_t j = 1; huge && j < TB_HPAGE_PAGES; j++) {
			uint8_t *t = &s->pstate[pages[i] + j];
			*t = (uint8_t)((*t & ~S_NODE) | (unsigned)dst);
		}
		status[i] = 0;
	}
	return 0;
}

static bool sim_young(void *ctx, uint32_t p)
{
	struct sim *s = ctx;
	uint8_t st = s->pstate[p];
	s->pstate[p] = st & (uint8_t)~S_YOUNG;
	return (st & S_YOUNG) != 0;
}

/* split_huge_page(): every base page gets the PMD's bits */
static int sim_split(void *ctx, uint32_t head)
{
	struct sim *s = ctx;
	uint8_t young = s->pstate[head] & S_YOUNG;
	for (uint32_t j = 0; j < TB_HPAGE_PAGES; j++)
		s->pstate[head + j] = (uint8_t)((s->pstate[head + j] & ~S_HUGE) | young);
	return 0;
}

static int sim_arm(void *ctx, const uint32_t *pages, size_t n)
{
	struct sim *s = ctx;
	for (size_t i = 0; i < n; i++) {
		uint32_t p = pages[i], nr = s->pstate[p] & S_HUGE ? TB_HPAGE_PAGES : 1;
		for (uint32_t j = 0; j < nr; j++)
			s->pstate[p + j] |= S_ARMED; /* one PMD covers them all */
	}
	/* change_prot_numa() runs in the task's own context */
	double cost = s->m->scan_pte_ns * (double)n;
	s->t += cost;
	s->overhead_ns += cost;
	return 0;
}

static void *sim_table_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	return tb_big_alloc(bytes);
}

static void sim_table_free(void *ctx, void *p, size_t bytes)
{
	(void)ctx;
	tb_big_free(p, bytes);
}

static const struct tb_platform_ops sim_platform = {sim_now,         sim_migrate,    sim_young,
						    sim_table_alloc, sim_table_free, sim_split};
static const struct tb_sampler_ops sim_sampler = {sim_arm};

/* ---- access stream ---- */

static void region_setup(struct region *r, const struct tb_region_spec *spec, uint32_t base, const struct tb_trace *t,
			 const struct tb_gauss_table *g)
{
	r->base = base;
	r->n = spec->pages;
	r->kind = spec->kind;
	r->center = (int64_t)(spec->center * (double)spec->pages);
	r->sigma = (float)(spec->stddev * (double)spec->pages);
	if (r->kind == TB_DIST_ZIPF && r->n) {
		tb_zipf_init(&r->z, r->n, spec->zipf_s);
		r->stride = tb_zipf_stride(r->n);
	}
	r->trace = t;
	if (r->kind == TB_DIST_GAUSSIAN)
		tb_gauss_offsets_init(&r->g, g, (double)r->sigma);
}

static inline uint64_t region_sample(struct sim *s, struct region *r, bool *write)
{
	uint64_t x = rng_next(&s->rng);
	switch (r->kind) {
	case TB_DIST_GAUSSIAN: {
		int64_t off = gauss_offset(&r->g, x);
		int64_t idx = r->center + off;
		if ((uint64_t)idx >= r->n) {
			idx %= (int64_t)r->n;
			if (idx < 0)
				idx += (int64_t)r->n;
		}
		return (uint64_t)idx;
	}
	case TB_DIST_ZIPF: return ((tb_zipf_next(&r->z, &s->rng) - 1) * r->stride) % r->n;
	case TB_DIST_TRACE: {
		uint32_t op = r->trace->ops[r->trace_pos];
		if (++r->trace_pos == r->trace->nr_ops)
			r->trace_pos = 0;
		*write = (op & TB_TRACE_WRITE) != 0;
		return op & ~TB_TRACE_WRITE;
	}
	default: return (uint64_t)(((__uint128_t)x * r->n) >> 64);
	}
}

/* A first touch: a huge page where the run allows one and a node has room
 * (do_huge_pmd_anonymous_page), else a base page (thp_fault_fallback). */
static int fault_in(struct sim *s, uint32_t page, bool file)
{
	uint32_t head = page & ~(TB_HPAGE_PAGES - 1);
	uint8_t *b = &s->blk[page >> TB_HPAGE_ORDER];
	unsigned node;
	if (!file && (*b & (B_THP | B_THP_ANY)) && !(*b & B_PTE)) {
		if (!tb_engine_alloc_huge(s->eng, head, (*b & B_THP_ANY) != 0, &node)) {
			memset(s->pstate + head, (int)(node | S_HUGE), TB_HPAGE_PAGES);
			return 0;
		}
	}
	*b |= B_PTE;
	int rc = tb_engine_alloc(s->eng, page, file, &node);
	if (!rc)
		s->pstate[page] = (uint8_t)node;
	return rc;
}

static void slow_path(struct sim *s, uint32_t page, bool write, bool file)
{
	uint8_t st = s->pstate[page];
	if (st & S_ABSENT) {
		int rc = fault_in(s, page, file);
		if (rc)
			s->alloc_error = rc;
	} else if (st & S_ARMED) {
		uint32_t first = page, nr = 1;
		if (st & S_HUGE) {
			first = page & ~(TB_HPAGE_PAGES - 1);
			nr = TB_HPAGE_PAGES;
		}
		for (uint32_t j = 0; j < nr; j++)
			s->pstate[first + j] &= (uint8_t)~S_ARMED;
		s->t += s->m->hint_fault_ns;
		s->overhead_ns += s->m->hint_fault_ns;
		tb_engine_hint_fault(s->eng, page, write);
	}
}

struct totals {
	uint64_t acc[TB_MAX_NODES][2];
	double lat_sum;
};

/* Draws one access: which process, read or write, anon or page cache, page. */
static inline struct pending draw(struct sim *s)
{
	uint64_t r = rng_next(&s->rng);
	unsigned i = 0;
	if (s->nr_procs > 1) {
		uint32_t u = (uint32_t)(r >> 48);
		while (i + 1 < s->nr_procs && u >= s->pick[i])
			i++;
	}
	struct proc *pr = &s->proc[i];
	bool write = ((r >> 32) & 0xffff) < pr->write_thresh;
	bool file = ((r >> 16) & 0xffff) < pr->file_thresh;
	struct region *rg = file ? &pr->file : &pr->anon;
	uint32_t page = rg->base + (uint32_t)region_sample(s, rg, &write);
	__builtin_prefetch(&s->pstate[page], 1);
	return (struct pending){page, (uint8_t)i, write, file};
}

/* The hot loop: runs accesses until modeled time reaches `until`. The access
 * stream does not depend on placement, so it is drawn PIPE steps ahead and
 * each page's entry is prefetched while earlier accesses run. */
static void run_until(struct sim *s, double until, struct totals *tot)
{
	double t = s->t, lat_sum = tot->lat_sum;
	unsigned h = s->pipe_head;
	while (t < until) {
		struct pending a = s->pipe[h];
		s->pipe[h] = draw(s);
		h = (h + 1) & (PIPE - 1);
		/* WARN accesses ahead the page's entry has long arrived: if a hint
		 * fault is coming, start loading the engine's metadata for it */
		uint32_t soon = s->pipe[(h + WARN - 1) & (PIPE - 1)].page;
		if (__builtin_expect(s->pstate[soon] & S_ARMED, 0))
			tb_engine_prefetch(s->eng, soon);
		struct proc *pr = &s->proc[a.proc];
		uint8_t st = s->pstate[a.page];
		if (__builtin_expect(st & S_SLOW, 0)) {
			s->t = t;
			slow_path(s, a.page, a.write, a.file);
			if (s->alloc_error)
				break;
			t = s->t;
			st = s->pstate[a.page];
		}
		unsigned node = st & S_NODE;
		double l = pr->lat[node][a.write];
		if (a.file) {
			tb_engine_mark_accessed(s->eng, a.page);
			t += s->m->syscall_ns;
		} else if (__builtin_expect(!(st & S_HUGE), 1)) {
			s->pstate[a.page] = st | S_YOUNG;
		} else {
			s->pstate[a.page & ~(TB_HPAGE_PAGES - 1)] |= S_YOUNG; /* the PMD's accessed bit */
		}
		t += l + pr->think_ns;
		lat_sum += l;
		tot->acc[node][a.write]++;
	}
	s->pipe_head = h;
	s->t = t;
	tot->lat_sum = lat_sum;
}

static void pipe_fill(struct sim *s)
{
	for (unsigned i = 0; i < PIPE; i++)
		s->pipe[i] = draw(s);
	s->pipe_head = 0;
}

/* ---- set-up ---- */

/* Which runs of the anon region may fault in as huge pages: all of it under
 * thp = always (the madvised part with direct reclaim, so on any node), the
 * madvised part under thp = madvise; a run must lie wholly in the region. */
static void mark_thp_runs(struct sim *s, const struct tb_proc_spec *ps, uint32_t base)
{
	if (ps->thp == TB_THP_NEVER)
		return;
	uint64_t madvised = (uint64_t)(ps->madvise_share * (double)ps->anon.pages);
	for (uint64_t off = 0; off + TB_HPAGE_PAGES <= ps->anon.pages; off += TB_HPAGE_PAGES) {
		uint8_t b = off + TB_HPAGE_PAGES <= madvised ? B_THP | B_THP_ANY : ps->thp == TB_THP_ALWAYS ? B_THP : 0;
		s->blk[(base + off) >> TB_HPAGE_ORDER] = b;
	}
}

static int setup(struct sim *s, const struct tb_sim_config *cfg, char *err, size_t errlen)
{
	const struct tb_machine *m = cfg->machine;
	const struct tb_workload *w = cfg->workload;
	s->cfg = cfg;
	s->m = m;
	rng_seed(&s->rng, cfg->seed);
	uint64_t pages = tb_workload_pages(w), span = 0;
	for (unsigned i = 0; i < w->nr_procs; i++) {
		/* memory that may be huge starts on a huge page's boundary, as mmap
		 * aligns a large anonymous mapping (thp_get_unmapped_area) */
		if (w->proc[i].thp != TB_THP_NEVER)
			span = (span + TB_HPAGE_PAGES - 1) & ~(uint64_t)(TB_HPAGE_PAGES - 1);
		span += w->proc[i].anon.pages + w->proc[i].file.pages;
	}
	if (span >= TB_NIL) {
		snprintf(err, errlen, "workload %s: %llu pages; at most %u are supported", w->name,
			 (unsigned long long)pages, TB_NIL - 1);
		return -EINVAL;
	}
	s->nr_pages = (uint32_t)span;
	for (unsigned a = 0; a < m->nr_nodes; a++)
		for (unsigned b = 0; b < m->nr_nodes; b++) {
			s->migrate_ns[a][b] = tb_machine_migrate_ns(m, a, b);
			/* one fixed cost, 512 pages' copy */
			s->migrate_huge_ns[a][b] =
				m->migrate_fixed_ns + (s->migrate_ns[a][b] - m->migrate_fixed_ns) * TB_HPAGE_PAGES;
		}

	struct tb_engine_config ec = {
		.knobs = cfg->knobs,
		.policy = cfg->oracle ? 0 : cfg->policy,
		.nr_nodes = m->nr_nodes,
		.nr_pages = s->nr_pages,
		.platform = &sim_platform,
		.platform_ctx = s,
		.sampler = &sim_sampler,
		.sampler_ctx = s,
	};
	double worst = 0;
	for (unsigned i = 0; i < m->nr_nodes; i++) {
		ec.nodes[i] = (struct tb_node_config){.present_pages = m->node[i].capacity_pages,
						      .tier = m->node[i].tier,
						      .demote_to = m->node[i].demote_to,
						      .socket = m->node[i].socket};
		for (unsigned j = 0; j < m->nr_nodes; j++)
			if (s->migrate_ns[i][j] > worst)
				worst = s->migrate_ns[i][j];
	}
	/* kswapd runs on its own CPU; it moves pages as fast as a copy goes */
	ec.kswapd_pages_per_sec = (uint64_t)(1e9 / worst);
	int rc = tb_engine_new(&s->eng, &ec, err, errlen);
	if (rc)
		return rc;
	uint64_t room = 0;
	for (unsigned i = 0; i < m->nr_nodes; i++) {
		struct tb_node_info ni;
		tb_engine_node_info(s->eng, i, &ni);
		room += ni.present - ni.wmark_high;
	}
	if (pages > room) {
		snprintf(err, errlen,
			 "workload %s needs %llu MiB but machine %s holds %llu MiB above its high watermarks; "
			 "use a bigger machine or a smaller workload",
			 w->name, (unsigned long long)(pages >> 8), m->name, (unsigned long long)(room >> 8));
		return -EINVAL;
	}
	s->pstate = tb_big_alloc(s->nr_pages);
	s->blk = calloc(((size_t)s->nr_pages >> TB_HPAGE_ORDER) + 1, 1);
	s->gauss = malloc(sizeof(*s->gauss));
	if (!s->pstate || !s->blk || !s->gauss) {
		snprintf(err, errlen, "out of memory for %u pages", s->nr_pages);
		return -ENOMEM;
	}
	memset(s->pstate, S_ABSENT, s->nr_pages);
	tb_gauss_table_init(s->gauss);

	double wsum = 0;
	for (unsigned i = 0; i < w->nr_procs; i++)
		wsum += w->proc[i].weight;
	double cum = 0;
	uint32_t base = 0;
	s->nr_procs = w->nr_procs;
	for (unsigned i = 0; i < w->nr_procs; i++) {
		const struct tb_proc_spec *ps = &w->proc[i];
		struct proc *pr = &s->proc[i];
		if (ps->cpu_node >= m->nr_nodes || !m->node[ps->cpu_node].cpus) {
			char cpus[128] = "";
			for (unsigned n = 0, k = 0; n < m->nr_nodes && k < sizeof(cpus) - 8; n++)
				if (m->node[n].cpus)
					k += (unsigned)snprintf(cpus + k, sizeof(cpus) - k, "%s%u", k ? ", " : "", n);
			char at[32] = "";
			if (ps->cpu_node_line)
				snprintf(at, sizeof(at), ":%u", ps->cpu_node_line);
			snprintf(err, errlen,
				 "%s%s: [process %s] cpu_node: node %u of machine %s %s (nodes with CPUs: %s)",
				 w->source, at, ps->name, ps->cpu_node, m->name,
				 ps->cpu_node < m->nr_nodes ? "has no CPUs" : "does not exist", cpus);
			return -EINVAL;
		}
		if (ps->thp != TB_THP_NEVER)
			base = (base + TB_HPAGE_PAGES - 1) & ~(TB_HPAGE_PAGES - 1);
		mark_thp_runs(s, ps, base);
		pr->cpu_node = ps->cpu_node;
		pr->think_ns = ps->think_ns;
		pr->write_thresh = (uint32_t)lround((1 - ps->read_ratio) * 65536);
		pr->file_thresh = (uint32_t)lround(ps->file_share * 65536);
		for (unsigned n = 0; n < m->nr_nodes; n++)
			for (unsigned wr = 0; wr < 2; wr++)
				pr->lat[n][wr] = tb_machine_latency(m, m->node[ps->cpu_node].socket, n, wr);
		region_setup(&pr->anon, &ps->anon, base, ps->trace, s->gauss);
		region_setup(&pr->file, &ps->file, base + (uint32_t)ps->anon.pages, NULL, s->gauss);
		/* page-cache pages are reached through system calls, not page tables:
		 * their space is never scanned */
		if (ps->anon.pages &&
		    (rc = tb_engine_add_space(s->eng, base, (uint32_t)ps->anon.pages, ps->cpu_node, 0)) < 0)
			break;
		if (ps->file.pages &&
		    (rc = tb_engine_add_space(s->eng, base + (uint32_t)ps->anon.pages, (uint32_t)ps->file.pages,
					      ps->cpu_node, TB_SPACE_UNMAPPED)) < 0)
			break;
		rc = 0;
		base += (uint32_t)(ps->anon.pages + ps->file.pages);
		pr->share = ps->weight / wsum;
		cum += pr->share;
		s->pick[i] = i + 1 == w->nr_procs ? 65536 : (uint32_t)lround(cum * 65536);
	}
	if (rc < 0) {
		snprintf(err, errlen, "engine refused an address space (%d)", rc);
		return rc;
	}
	return 0;
}

static int prefault(struct sim *s, char *err, size_t errlen)
{
	const struct tb_workload *w = s->cfg->workload;
	for (unsigned i = 0; i < w->nr_procs; i++) {
		const struct tb_proc_spec *ps = &w->proc[i];
		if (!ps->prefault)
			continue;
		const struct region *order[2] = {&s->proc[i].anon, &s->proc[i].file};
		if (ps->file_first) {
			order[0] = &s->proc[i].file;
			order[1] = &s->proc[i].anon;
		}
		for (unsigned k = 0; k < 2; k++)
			for (uint64_t j = 0; j < order[k]->n; j++) {
				uint32_t p = order[k]->base + (uint32_t)j;
				if (!(s->pstate[p] & S_ABSENT))
					continue; /* in a huge page faulted in just before */
				int rc = fault_in(s, p, order[k] == &s->proc[i].file);
				if (rc) {
					snprintf(err, errlen, "prefault of [process %s]: allocation failed (%d)",
						 ps->name, rc);
					return rc;
				}
			}
	}
	return 0;
}

static void apply_phase(struct sim *s, const struct tb_phase_spec *ph)
{
	const struct tb_workload *w = s->cfg->workload;
	struct tb_proc_spec spec = w->proc[ph->proc];
	struct proc *pr = &s->proc[ph->proc];
	struct tb_region_spec r = spec.anon;
	r.center = (double)pr->anon.center / (double)(pr->anon.n ? pr->anon.n : 1);
	r.stddev = (double)pr->anon.sigma / (double)(pr->anon.n ? pr->anon.n : 1);
	r.kind = pr->anon.kind;
	r.zipf_s = pr->anon.kind == TB_DIST_ZIPF ? pr->anon.z.s : spec.anon.zipf_s;
	if (ph->set & TB_PH_CENTER)
		r.center = ph->anon.center;
	if (ph->set & TB_PH_STDDEV)
		r.stddev = ph->anon.stddev;
	if (ph->set & TB_PH_DIST)
		r.kind = ph->anon.kind;
	if (ph->set & TB_PH_ZIPF)
		r.zipf_s = ph->anon.zipf_s;
	region_setup(&pr->anon, &r, pr->anon.base, NULL, s->gauss);
	if (ph->set & TB_PH_READ)
		pr->write_thresh = (uint32_t)lround((1 - ph->read_ratio) * 65536);
}

/* What the oracle needs to know of each process at this moment. */
static void oracle_inputs(struct sim *s, struct tb_oracle_proc *op)
{
	for (unsigned i = 0; i < s->nr_procs; i++) {
		struct proc *pr = &s->proc[i];
		double wr = pr->write_thresh / 65536.0, fs = pr->file_thresh / 65536.0;
		double share = pr->share;
		op[i] = (struct tb_oracle_proc){.cpu_node = pr->cpu_node};
		for (unsigned n = 0; n < s->m->nr_nodes; n++)
			op[i].cost[n] = (1 - wr) * pr->lat[n][0] + wr * pr->lat[n][1];
		const struct region *rs[2] = {&pr->anon, &pr->file};
		for (unsigned k = 0; k < 2; k++) {
			struct tb_oracle_region *o = &op[i].region[k];
			const struct region *r = rs[k];
			*o = (struct tb_oracle_region){.base = r->base,
						       .n = r->n,
						       .kind = r->kind,
						       .share = share * (k ? fs : 1 - fs),
						       .center = (double)r->center,
						       .sigma = r->sigma,
						       .zipf_s = r->z.s,
						       .stride = r->stride,
						       .trace = r->trace};
		}
	}
}

static int oracle_apply(struct sim *s, char *err, size_t errlen)
{
	struct tb_oracle_proc op[TB_WL_MAX_PROCS];
	oracle_inputs(s, op);
	uint64_t cap[TB_MAX_NODES];
	for (unsigned n = 0; n < s->m->nr_nodes; n++) {
		struct tb_node_info ni;
		tb_engine_node_info(s->eng, n, &ni);
		cap[n] = ni.present - ni.wmark_high;
	}
	uint8_t *node = s->pstate; /* oracle writes the node of each page here */
	/* the oracle's memory is mapped as the workload's would be: every run that
	 * may be huge is */
	size_t nr_runs = s->nr_pages >> TB_HPAGE_ORDER;
	uint8_t *huge = calloc(nr_runs + 1, 1);
	if (!huge) {
		snprintf(err, errlen, "out of memory for the oracle's huge page map");
		return -ENOMEM;
	}
	for (size_t b = 0; b < nr_runs; b++)
		huge[b] = (s->blk[b] & (B_THP | B_THP_ANY)) != 0;
	int rc = tb_oracle_place(op, s->nr_procs, s->m->nr_nodes, cap, s->nr_pages, huge, node, err, errlen);
	for (uint32_t p = 0; !rc && p < s->nr_pages; p++)
		tb_engine_unplace(s->eng, p);
	for (unsigned i = 0; !rc && i < s->nr_procs; i++) {
		const struct region *rs[2] = {&s->proc[i].anon, &s->proc[i].file};
		for (unsigned k = 0; k < 2 && !rc; k++)
			for (uint32_t j = 0; j < rs[k]->n && !rc; j++) {
				uint32_t p = rs[k]->base + j;
				unsigned n = node[p] & S_NODE;
				if (huge[p >> TB_HPAGE_ORDER]) {
					if (p & (TB_HPAGE_PAGES - 1))
						continue;
					rc = tb_engine_place_huge(s->eng, p, n);
					memset(node + p, (int)(n | S_HUGE), TB_HPAGE_PAGES);
				} else {
					rc = tb_engine_place(s->eng, p, n, k == 1);
				}
				if (rc)
					snprintf(err, errlen, "oracle placement of page %u on node %u failed (%d)", p,
						 n, rc);
			}
	}
	free(huge);
	return rc;
}

/* ---- results ---- */

static bool push_row(struct tb_sim_result *res, const struct tb_sim_row *row)
{
	if ((res->nr_rows & (res->nr_rows - 1)) == 0) {
		size_t cap = res->nr_rows ? 2 * res->nr_rows : 1;
		struct tb_sim_row *r = realloc(res->rows, cap * sizeof(*r));
		if (!r)
			return false;
		res->rows = r;
	}
	res->rows[res->nr_rows++] = *row;
	return true;
}

struct snapshot {
	double t, lat_sum;
	uint64_t acc, fast;
	uint64_t c[TB_NR_COUNTERS];
};

static void take_snapshot(const struct sim *s, const struct totals *tot, struct snapshot *sn)
{
	sn->t = s->t;
	sn->lat_sum = tot->lat_sum;
	sn->acc = sn->fast = 0;
	for (unsigned n = 0; n < s->m->nr_nodes; n++) {
		uint64_t a = tot->acc[n][0] + tot->acc[n][1];
		sn->acc += a;
		if (s->m->node[n].tier == 0)
			sn->fast += a;
	}
	memcpy(sn->c, tb_engine_counters(s->eng), sizeof(sn->c));
}

static void make_row(const struct sim *s, const struct snapshot *a, const struct snapshot *b, struct tb_sim_row *row)
{
	double dt = (b->t - a->t) / 1e9;
	uint64_t acc = b->acc - a->acc;
	const uint64_t *ca = a->c, *cb = b->c;
	*row = (struct tb_sim_row){
		.t_s = b->t / 1e9,
		.accesses = acc,
		.score = dt > 0 ? (double)acc / dt : 0,
		.mean_latency_ns = acc ? (b->lat_sum - a->lat_sum) / (double)acc : 0,
		.fast_share = acc ? (double)(b->fast - a->fast) / (double)acc : 0,
		.promoted = cb[TB_C_pgpromote_success] - ca[TB_C_pgpromote_success],
		.demoted = cb[TB_C_pgdemote_kswapd] + cb[TB_C_pgdemote_direct] - ca[TB_C_pgdemote_kswapd] -
			   ca[TB_C_pgdemote_direct],
		.hint_faults = cb[TB_C_numa_hint_faults] - ca[TB_C_numa_hint_faults],
		.pingpong = cb[TB_C_pingpong_promote_demote] + cb[TB_C_pingpong_demote_promote] -
			    ca[TB_C_pingpong_promote_demote] - ca[TB_C_pingpong_demote_promote],
	};
	row->promote_mbps = dt > 0 ? (double)row->promoted * 4096.0 / 1e6 / dt : 0;
	struct tb_node_info ni;
	tb_engine_node_info(s->eng, s->proc[0].cpu_node, &ni);
	row->threshold_ms = ni.threshold_ms;
	double free_pages = 0, boost = 0;
	for (unsigned n = 0; n < s->m->nr_nodes; n++)
		if (s->m->node[n].tier == 0) {
			tb_engine_node_info(s->eng, n, &ni);
			free_pages += (double)(ni.present - ni.used);
			boost += (double)ni.boost;
		}
	row->fast_free_mib = free_pages / 256.0;
	row->boost_mib = boost / 256.0;
}

static void finish_result(struct sim *s, const struct totals *tot, struct tb_sim_result *res)
{
	const struct tb_machine *m = s->m;
	res->modeled_s = s->t / 1e9;
	res->overhead_ns = s->overhead_ns;
	res->background_ns = s->bg_ns;
	for (unsigned n = 0; n < m->nr_nodes; n++) {
		uint64_t a = tot->acc[n][0] + tot->acc[n][1];
		res->accesses += a;
		res->reads += tot->acc[n][0];
		if (m->node[n].tier == 0)
			res->fast_accesses += a;
		else
			res->slow_reads += tot->acc[n][0];
	}
	res->score = res->modeled_s > 0 ? (double)res->accesses / res->modeled_s : 0;
	res->mean_latency_ns = res->accesses ? tot->lat_sum / (double)res->accesses : 0;
	res->fast_share = res->accesses ? (double)res->fast_accesses / (double)res->accesses : 0;
	memcpy(res->counters, tb_engine_counters(s->eng), sizeof(res->counters));
	for (unsigned i = 0; i < s->nr_procs; i++) {
		const struct region *r = &s->proc[i].anon;
		for (uint64_t j = 0; j < r->n; j++) {
			uint8_t st = s->pstate[r->base + j];
			if (st & S_ABSENT)
				continue;
			res->anon_pages++;
			res->anon_huge_pages += (st & S_HUGE) != 0;
			res->anon_fast_pages += m->node[st & S_NODE].tier == 0;
		}
	}
}

static double wall_now(void)
{
	return (double)tb_mono_ns() / 1e9;
}

int tb_sim_run(const struct tb_sim_config *cfg, struct tb_sim_result *res, char *err, size_t errlen)
{
	double wall0 = wall_now();
	memset(res, 0, sizeof(*res));
	snprintf(res->policy, sizeof(res->policy), "%s", cfg->oracle ? "oracle" : tb_policy_name(cfg->policy));
	struct sim *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = setup(s, cfg, err, errlen);
	if (!rc)
		rc = cfg->oracle ? oracle_apply(s, err, errlen) : prefault(s, err, errlen);
	struct totals tot = {0};
	struct snapshot prev, cur;
	const struct tb_workload *w = cfg->workload;
	unsigned next_phase = 0;
	double end = cfg->duration_s * 1e9, interval = cfg->interval_s * 1e9;
	double next_row = interval;
	if (!rc) {
		pipe_fill(s);
		take_snapshot(s, &tot, &prev);
		while (s->t < end) {
			double until = s->t + TICK_NS;
			if (until > next_row)
				until = next_row;
			if (until > end)
				until = end;
			run_until(s, until, &tot);
			if (s->alloc_error) {
				snprintf(err, errlen,
					 "workload %s: a page allocation failed on machine %s (%d): the "
					 "machine is out of memory",
					 w->name, cfg->machine->name, s->alloc_error);
				rc = s->alloc_error;
				break;
			}
			tb_engine_tick(s->eng);
			if (s->t >= next_row || s->t >= end) {
				struct tb_sim_row row;
				take_snapshot(s, &tot, &cur);
				make_row(s, &prev, &cur, &row);
				if (!push_row(res, &row)) {
					snprintf(err, errlen, "out of memory for the time series");
					rc = -ENOMEM;
					break;
				}
				prev = cur;
				next_row += interval;
				if (cfg->check) {
					char cerr[256];
					if (tb_engine_check(s->eng, cerr, sizeof(cerr))) {
						snprintf(err, errlen, "invariant broken at t=%.3f s: %s", s->t / 1e9,
							 cerr);
						rc = -EFAULT;
						break;
					}
					res->checks++;
				}
				if (cfg->progress_permille)
					atomic_store(cfg->progress_permille, (unsigned)(1000.0 * s->t / end));
			}
			while (next_phase < w->nr_phases && s->t >= w->phase[next_phase].at_s * 1e9) {
				apply_phase(s, &w->phase[next_phase++]);
				if (cfg->oracle && (rc = oracle_apply(s, err, errlen)))
					break;
			}
			if (rc)
				break;
		}
	}
	if (!rc)
		finish_result(s, &tot, res);
	tb_engine_free(s->eng);
	tb_big_free(s->pstate, s->nr_pages);
	free(s->blk);
	free(s->gauss);
	free(s);
	res->wall_s = wall_now() - wall0;
	if (rc)
		tb_sim_result_free(res);
	return rc;
}

void tb_sim_result_free(struct tb_sim_result *r)
{
	free(r->rows);
	r->rows = NULL;
	r->nr_rows = 0;
}
