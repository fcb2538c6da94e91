/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The live path's tests' fake kernel and fixture (lib-live.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "exec/exec.h"
#include "daemon/live.h"
#include "linux/maps.h"
#include "exec/rt_proto.h"
#include "exec/uffd.h"

#include "lib-live.h"

static long index_of(const struct fake *f, const void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (a < f->base || a >= f->base + PAGES * 4096ul)
		return -1;
	return (long)((a - f->base) / 4096);
}

unsigned on_node(const struct fake *f, int node)
{
	unsigned n = 0;
	for (unsigned i = 0; i < PAGES; i++)
		n += f->node[i] == node;
	return n;
}

static int fake_move(void *ctx, pid_t pid, void *const *pages, size_t n, int node, int *status,
		     struct tb_mover_stats *st)
{
	struct fake *f = ctx;
	f->calls++;
	if (f->exited) {
		f->moves_after_exit++;
		return -ESRCH;
	}
	assert_int_equal(pid, f->child);
	if (f->mode == EXIT_IN_MOVE) { /* the target exits between sampling and moving */
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
		f->exited = true;
		return -ESRCH;
	}
	if (f->mode == CALL_FAILS && f->failing_calls) {
		f->failing_calls--;
		f->call_errors++;
		return -ENOMEM; /* the whole call: the kernel could not even allocate its bookkeeping */
	}
	st->calls++;
	if (node == 0 && n > f->most_in_call)
		f->most_in_call = n;
	for (size_t i = 0; i < n; i++) {
		long k = index_of(f, pages[i]);
		if (k < 0) {
			status[i] = -EFAULT;
			st->gone++;
			continue;
		}
		if (f->mode == BUSY_ONCE && !f->tried[k]) {
			f->tried[k] = true;
			status[i] = -EBUSY;
			st->busy++;
			f->busy++;
			continue;
		}
		if (f->mode == NOMEM && node == 0 && f->node[k] != 0 && on_node(f, 0) >= f->cap0) {
			status[i] = -ENOMEM;
			st->nomem++;
			f->nomem++;
			continue;
		}
		if (f->thp[k / 512]) { /* the kernel moves the whole huge page holding the address */
			for (long j = k / 512 * 512; j < k / 512 * 512 + 512; j++)
				f->node[j] = node;
			f->thp_moves++;
		}
		f->node[k] = node;
		status[i] = node;
		st->moved++;
	}
	return 0;
}

static int fake_query(void *ctx, pid_t pid, void *const *pages, size_t n, int *status)
{
	struct fake *f = ctx;
	if (f->exited)
		return -ESRCH;
	(void)pid;
	for (size_t i = 0; i < n; i++) {
		long k = index_of(f, pages[i]);
		status[i] = k < 0 ? -ENOENT : f->node[k]; /* only the region is tierbal's business here */
	}
	return 0;
}

static long long fake_node_size(void *ctx, int node, long long *free_bytes)
{
	struct fake *f = ctx;
	/* NOMEM: the node says it has room, and then has none (others allocated meanwhile) */
	*free_bytes = (long long)(NODE_PAGES - on_node(f, node) - (node ? 0 : f->others)) * 4096;
	return (long long)NODE_PAGES * 4096;
}

static int fake_huge(void *ctx, pid_t pid, uintptr_t addr, const uint64_t *pm, bool *huge, bool *shared)
{
	const struct fake *f = ctx;
	(void)pid;
	(void)pm;
	long k = index_of(f, (void *)addr);
	*huge = k >= 0 && k % 512 == 0 && f->thp[k / 512];
	*shared = *huge && f->thp_shared;
	return 0;
}

const struct tb_live_mem_ops fake_mem = {fake_move, fake_query, fake_node_size, fake_huge};

/* the sampler: every page of the region was just written */
static int s_attach(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	return 0;
}
static void s_detach(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}
static int s_round(void *ctx)
{
	(void)ctx;
	return 0;
}
static void s_mark(void *ctx, pid_t pid, uintptr_t addr, size_t n, const uint64_t *pm, uint8_t *acc)
{
	const struct fake *f = ctx;
	(void)pid;
	(void)pm;
	for (size_t i = 0; i < n; i++)
		acc[i] = index_of(f, (void *)(addr + i * 4096)) >= 0 ? TB_ACC_READ | TB_ACC_WRITE : 0;
}
static int s_round_end(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	return 0;
}
static void s_destroy(void *ctx)
{
	(void)ctx;
}
const struct tb_access_ops all_hot = {"fake", s_attach, s_detach, s_round, s_mark, s_round_end, s_destroy, NULL};

struct fake *fake_start(enum inject mode)
{
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->mode = mode;
	/* the region exists in the parent before the fork, so the child has it at
	 * the same address; 2 MiB-aligned, so that its halves can be huge pages */
	const size_t align = 512 * 4096ul;
	char *m = mmap(NULL, PAGES * 4096ul + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	char *r = (char *)(((uintptr_t)m + align - 1) & ~(align - 1));
	if (r > m)
		munmap(m, (size_t)(r - m));
	munmap(r + PAGES * 4096ul, (size_t)(m + align - r));
	f->base = (uintptr_t)r;
	int go[2];
	assert_int_equal(pipe(go), 0);
	f->child = fork();
	assert_true(f->child >= 0);
	if (f->child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed assertion leaves no child behind */
		memset(r, 7, PAGES * 4096ul);
		close(go[0]);
		close(go[1]); /* tells the parent its pages are there */
		pause();
		_exit(0);
	}
	close(go[1]);
	char c;
	assert_int_equal(read(go[0], &c, 1), 0); /* end of file once the child has written its region */
	close(go[0]);
	munmap(r, PAGES * 4096ul);
	for (unsigned i = 0; i < PAGES; i++)
		f->node[i] = 1; /* the whole region starts in the slow node */
	return f;
}

/* the sampler: the second half of the region was just written, the first half is cold */
static void s_mark_hot_half(void *ctx, pid_t pid, uintptr_t addr, size_t n, const uint64_t *pm, uint8_t *acc)
{
	const struct fake *f = ctx;
	(void)pid;
	(void)pm;
	for (size_t i = 0; i < n; i++) {
		long k = index_of(f, (void *)(addr + i * 4096));
		acc[i] = k >= (long)PAGES / 2 ? TB_ACC_READ | TB_ACC_WRITE : 0;
	}
}
const struct tb_access_ops hot_half = {"fake-half",     s_attach,    s_detach,  s_round,
				       s_mark_hot_half, s_round_end, s_destroy, NULL};

/* the sampler: every page written, but it takes back what it said about the first half (as the
 * soft-dirty sampler does for a mapping the kernel flagged dirty as a whole) */
static bool s_first_half_unreliable(void *ctx, pid_t pid, uintptr_t addr, uintptr_t *end)
{
	const struct fake *f = ctx;
	(void)pid;
	uintptr_t mid = f->base + PAGES / 2 * 4096ul;
	*end = addr < f->base ? f->base : addr < mid ? mid : UINTPTR_MAX;
	return addr >= f->base && addr < mid;
}
const struct tb_access_ops half_unreliable = {
	"fake-unreliable", s_attach, s_detach, s_round, s_mark, s_round_end, s_destroy, s_first_half_unreliable};


/* tierbal exec's target: it loads the real runtime (libtierbal-rt.so, as LD_PRELOAD would), which
 * hands its userfaultfd over on the socket tierbal exec listens on; then it writes the second half
 * of its region again and again (the first half stays cold) */
struct fake *fake_start_exec(int *uffd)
{
	const char *rt = getenv("TB_RT_LIB");
	if (!rt)
		fail_msg("TB_RT_LIB is not set: run this test with meson test in a build with libtierbal-rt.so");
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	char *r = mmap(NULL, PAGES * 4096ul, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r != MAP_FAILED);
	madvise(r, PAGES * 4096ul, MADV_NOHUGEPAGE); /* 4 KiB pages: protection per window */
	f->base = (uintptr_t)r;
	char name[108], err[256];
	int lfd = tb_exec_listen(name, sizeof(name), err, sizeof(err));
	if (lfd < 0)
		fail_msg("%s", err);
	f->child = fork();
	assert_true(f->child >= 0);
	if (f->child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		memset(r, 7, PAGES * 4096ul);
		setenv(TB_RT_ENV_SOCKET, name, 1);
		if (!dlopen(rt, RTLD_NOW))
			_exit(1);
		for (volatile char *h = r;;)
			for (unsigned i = PAGES / 2; i < PAGES; i++)
				h[i * 4096ul]++;
	}
	pid_t from = 0;
	int chan;
	struct tb_rt_hello h;
	struct pollfd pf = {lfd, POLLIN, 0}; /* the socket does not block, as the daemon polls it */
	int rc = poll(&pf, 1, 10000) == 1 ? tb_exec_accept(lfd, &from, uffd, &chan, &h) : -ETIMEDOUT;
	int rt_err = h.err;
	close(lfd);
	if (rc || *uffd < 0)
		fail_msg("the runtime handed over no userfaultfd (%s; tierbal exec needs it: run the tests as root)",
			 strerror(rc ? -rc : rt_err));
	assert_int_equal(from, f->child);
	munmap(r, PAGES * 4096ul);
	for (unsigned i = 0; i < PAGES; i++)
		f->node[i] = i < PAGES / 2 ? 0 : 1;
	return f;
}

/* The made-up machine (node 0 with CPUs, node 1 without) and a
 * configuration that scans at once, and often: the tests run rounds back to back. */
void two_nodes(struct tb_topology *topo, struct tb_dconfig *dc)
{
	*topo = (struct tb_topology){.nr_nodes = 2, .source = TB_TIERS_CPULESS};
	for (int i = 0; i < 2; i++)
		topo->node[i] = (struct tb_topo_node){.id = i,
						      .nr_cpus = i ? 0 : 2,
						      .total_bytes = NODE_PAGES * 4096ull,
						      .free_bytes = NODE_PAGES * 4096ull,
						      .tier = (unsigned)i,
						      .kernel_tier = -1,
						      .distance = {i ? 20 : 10, i ? 10 : 20}};
	tb_dconfig_default(dc);
	dc->knobs.scan_delay_ms = 0;
	dc->knobs.scan_period_min_ms = 10;
	dc->knobs.scan_period_max_ms = 200;
}

struct tb_live *live_start_sampler(struct fake *f, struct tb_access sampler, struct tb_uffd *u)
{
	struct tb_topology topo;
	struct tb_dconfig dc;
	two_nodes(&topo, &dc);
	struct tb_live *l;
	char err[512];
	FILE *log = fopen("/dev/null", "w");
	assert_non_null(log);
	int rc = tb_live_new(&l, &dc, &topo, sampler, "fake", u, log, err, sizeof(err));
	if (rc)
		fail_msg("tb_live_new: %s", err);
	tb_live_set_mem_ops(l, &fake_mem, f);
	rc = tb_live_add(l, f->child, false, err, sizeof(err));
	if (rc)
		fail_msg("tb_live_add: %s", err);
	return l;
}

struct tb_live *live_start_with(struct fake *f, const struct tb_access_ops *sampler)
{
	return live_start_sampler(f, (struct tb_access){sampler, f}, NULL);
}

struct tb_live *live_start(struct fake *f)
{
	return live_start_with(f, &all_hot);
}

/* rounds until done says so or max rounds have run; the engine is checked after each */
unsigned rounds(struct tb_live *l, struct fake *f, unsigned max, bool (*done)(const struct fake *))
{
	char err[256];
	unsigned r = 0;
	while (r < max && !(done && done(f))) {
		tb_live_sample(l);
		r++;
		if (tb_engine_check((struct tb_engine *)tb_live_engine(l), err, sizeof(err)))
			fail_msg("engine invariant broken after round %u: %s", r, err);
	}
	return r;
}

bool all_fast(const struct fake *f)
{
	return on_node(f, 0) == PAGES;
}

/* the engine's page count on node 0 equals the fake kernel's, after one more round to resync */
void assert_engine_true(struct tb_live *l, struct fake *f)
{
	rounds(l, f, 1, NULL);
	struct tb_node_info ni;
	tb_engine_node_info(tb_live_engine(l), 0, &ni);
	unsigned real = on_node(f, 0);
	/* moves of that last round may not be seen yet; the engine never believes more than is true */
	assert_true(ni.used <= real);
	rounds(l, f, 1, NULL);
	tb_engine_node_info(tb_live_engine(l), 0, &ni);
	if (f->mode != NOMEM)
		assert_int_equal(ni.used, on_node(f, 0));
}

void stop(struct tb_live *l, struct fake *f)
{
	tb_live_free(l);
	if (!f->exited) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	free(f);
}

const char *rt_lib(void)
{
	const char *rt = getenv("TB_RT_LIB");
	if (!rt)
		fail_msg("TB_RT_LIB is not set: run this test with meson test in a build with libtierbal-rt.so");
	return rt;
}

void rt_listen(struct rt_session *r)
{
	char fname[128], err[256];
	r->lfd = tb_exec_listen(r->name, sizeof(r->name), err, sizeof(err));
	snprintf(fname, sizeof(fname), "%s%s", r->name, TB_RT_FORK_SUFFIX);
	r->ffd = tb_exec_listen_at(fname, err, sizeof(err));
	assert_true(r->lfd >= 0 && r->ffd >= 0);
}

/* In the child: the runtime loaded as LD_PRELOAD would, with a 1 MiB park area. */
void rt_load(const struct rt_session *r, const char *lib)
{
	setenv(TB_RT_ENV_SOCKET, r->name, 1);
	setenv(TB_RT_ENV_PARK, "1", 1);
	if (!dlopen(lib, RTLD_NOW))
		_exit(1);
}

/* The child's hello: its userfaultfd and what its runtime said of itself. */
void rt_accept(struct rt_session *r, pid_t child)
{
	struct pollfd pf = {r->lfd, POLLIN, 0};
	pid_t from;
	int chan = -1;
	r->uffd = -1;
	assert_int_equal(poll(&pf, 1, 10000), 1);
	assert_int_equal(tb_exec_accept(r->lfd, &from, &r->uffd, &chan, &r->h), 0);
	assert_int_equal(from, child);
	if (r->uffd < 0 || !r->h.park_addr)
		fail_msg("the runtime set up no park area (uffd %d, error %s)", r->uffd,
			 strerror(r->h.park_err ? r->h.park_err : r->h.err));
	r->rd = (struct tb_uffd_rt){.chan = chan,
				    .tid = r->h.mover_tid,
				    .park_addr = (uintptr_t)r->h.park_addr,
				    .park_len = (size_t)r->h.park_len,
				    .own_addr = (uintptr_t)r->h.own_addr,
				    .own_len = (size_t)r->h.own_len,
				    .keep_addr = (uintptr_t)r->h.keep_addr};
}

void rt_close(struct rt_session *r)
{
	close(r->lfd);
	close(r->ffd);
}

int live_setup(void **state)
{
	struct live_fixture *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	x->f = fake_start((enum inject)(uintptr_t)*state);
	x->l = live_start(x->f);
	*state = x;
	return 0;
}

int live_teardown(void **state)
{
	struct live_fixture *x = *state;
	stop(x->l, x->f);
	free(x);
	return 0;
}

unsigned hot_fast(const struct fake *f)
{
	unsigned n = 0;
	for (unsigned i = PAGES / 2; i < PAGES; i++)
		n += f->node[i] == 0;
	return n;
}

bool hot_half_fast(const struct fake *f)
{
	return hot_fast(f) == PAGES / 2;
}
