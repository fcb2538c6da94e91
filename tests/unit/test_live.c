/* The live path with failures injected between tierbal and the kernel: a
 * real child process, a made-up two-node machine whose page placement a fake
 * "kernel" keeps (move_pages and node sizes through tb_live_mem_ops), and a
 * sampler that sees the child's region in use. Each test injects one kind of
 * failure and checks the counters, that the engine's view stays true to the
 * fake kernel's, and that the engine's invariants hold. */
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

#define PAGES 1024u
#define NODE_PAGES 16384u /* 64 MiB per node */

enum inject { NONE, BUSY_ONCE, NOMEM, CALL_FAILS, EXIT_IN_MOVE };

struct fake {
	enum inject mode;
	pid_t child;
	uintptr_t base;
	int node[PAGES];       /* where each page of the region is */
	bool tried[PAGES];     /* BUSY_ONCE: attempted before */
	unsigned cap0;         /* NOMEM: node 0 holds at most this many of them */
	unsigned failing_calls; /* CALL_FAILS: this many whole calls fail first */
	unsigned others;       /* pages of node 0 that other programs and the kernel hold */
	uint64_t calls, busy, nomem, call_errors, moves_after_exit;
	size_t most_in_call;   /* the largest move to node 0 in one call */
	bool exited;
};

static long index_of(const struct fake *f, const void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (a < f->base || a >= f->base + PAGES * 4096ul)
		return -1;
	return (long)((a - f->base) / 4096);
}

static unsigned on_node(const struct fake *f, int node)
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

static const struct tb_live_mem_ops fake_mem = {fake_move, fake_query, fake_node_size};

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
static const struct tb_access_ops all_hot = {"fake", s_attach, s_detach, s_round, s_mark, s_round_end, s_destroy, NULL};

static struct fake *fake_start(enum inject mode)
{
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->mode = mode;
	/* the region exists in the parent before the fork, so the child has it at the same address */
	char *r = mmap(NULL, PAGES * 4096ul, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r != MAP_FAILED);
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
static const struct tb_access_ops hot_half = {"fake-half", s_attach,    s_detach,  s_round,
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
static const struct tb_access_ops half_unreliable = {"fake-unreliable", s_attach, s_detach,  s_round,
						      s_mark,           s_round_end, s_destroy, s_first_half_unreliable};


/* tierbal exec's target: it loads the real runtime (libtierbal-rt.so, as LD_PRELOAD would), which
 * hands its userfaultfd over on the socket tierbal exec listens on; then it writes the second half
 * of its region again and again (the first half stays cold) */
static struct fake *fake_start_exec(int *uffd)
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
static void two_nodes(struct tb_topology *topo, struct tb_dconfig *dc)
{
	*topo = (struct tb_topology){.nr_nodes = 2, .source = TB_TIERS_CPULESS};
	for (int i = 0; i < 2; i++)
		topo->node[i] = (struct tb_topo_node){.id = i, .nr_cpus = i ? 0 : 2, .total_bytes = NODE_PAGES * 4096ull,
						      .free_bytes = NODE_PAGES * 4096ull, .tier = (unsigned)i,
						      .kernel_tier = -1, .distance = {i ? 20 : 10, i ? 10 : 20}};
	tb_dconfig_default(dc);
	dc->knobs.scan_delay_ms = 0;
	dc->knobs.scan_period_min_ms = 10;
	dc->knobs.scan_period_max_ms = 200;
}

static struct tb_live *live_start_sampler(struct fake *f, struct tb_access sampler, struct tb_uffd *u)
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

static struct tb_live *live_start_with(struct fake *f, const struct tb_access_ops *sampler)
{
	return live_start_sampler(f, (struct tb_access){sampler, f}, NULL);
}

static struct tb_live *live_start(struct fake *f)
{
	return live_start_with(f, &all_hot);
}

/* rounds until done says so or max rounds have run; the engine is checked after each */
static unsigned rounds(struct tb_live *l, struct fake *f, unsigned max, bool (*done)(const struct fake *))
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

static bool all_fast(const struct fake *f)
{
	return on_node(f, 0) == PAGES;
}

/* the engine's page count on node 0 equals the fake kernel's, after one more round to resync */
static void assert_engine_true(struct tb_live *l, struct fake *f)
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

static void stop(struct tb_live *l, struct fake *f)
{
	tb_live_free(l);
	if (!f->exited) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	free(f);
}

static void test_no_failure(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	struct tb_live *l = live_start(f);
	unsigned r = rounds(l, f, 2000, all_fast);
	assert_true(all_fast(f));
	assert_int_equal(tb_live_counter(l, TB_L_move_busy), 0);
	assert_true(r < 2000);
	assert_engine_true(l, f);
	stop(l, f);
}

/* every page is busy at its first attempt (locked, under writeback): counted, forgotten, found again
 * where it really is, promoted at a later try */
static void test_busy_pages(void **state)
{
	(void)state;
	struct fake *f = fake_start(BUSY_ONCE);
	struct tb_live *l = live_start(f);
	rounds(l, f, 3000, all_fast);
	assert_true(all_fast(f));
	assert_int_equal(f->busy, PAGES);
	assert_int_equal(tb_live_counter(l, TB_L_move_busy), PAGES);
	assert_engine_true(l, f);
	stop(l, f);
}

/* the fast node fills up before the engine expects: -ENOMEM per page, nothing lost, the engine
 * never believes a page is fast that is not */
static void test_full_fast_node(void **state)
{
	(void)state;
	struct fake *f = fake_start(NOMEM);
	f->cap0 = 300;
	struct tb_live *l = live_start(f);
	rounds(l, f, 400, NULL);
	assert_true(on_node(f, 0) <= f->cap0);
	assert_true(on_node(f, 0) > 0);
	assert_int_equal(on_node(f, 0) + on_node(f, 1), PAGES);
	assert_int_equal(tb_live_counter(l, TB_L_move_nomem), f->nomem);
	struct tb_node_info ni;
	assert_engine_true(l, f);
	tb_engine_node_info(tb_live_engine(l), 0, &ni);
	assert_true(ni.used <= on_node(f, 0));
	stop(l, f);
}

/* move_pages fails as a whole call a few times: counted, and the pages get there later */
static void test_failing_calls(void **state)
{
	(void)state;
	struct fake *f = fake_start(CALL_FAILS);
	f->failing_calls = 5;
	struct tb_live *l = live_start(f);
	rounds(l, f, 3000, all_fast);
	assert_true(all_fast(f));
	assert_int_equal(f->call_errors, 5);
	assert_int_equal(tb_live_counter(l, TB_L_move_failed_calls), 5);
	assert_engine_true(l, f);
	stop(l, f);
}

static bool has_exited(const struct fake *f)
{
	return f->exited;
}

/* the target dies between the sampling round and its moves: dropped at the next refresh, never
 * moved again, and nothing else breaks */
static void test_exit_before_move(void **state)
{
	(void)state;
	struct fake *f = fake_start(EXIT_IN_MOVE);
	struct tb_live *l = live_start(f);
	rounds(l, f, 2000, has_exited);
	assert_true(f->exited);
	tb_live_refresh(l, "");
	assert_int_equal(tb_live_nr_targets(l), 0);
	assert_int_equal(tb_live_counter(l, TB_L_targets_dropped), 1);
	uint64_t calls = f->calls;
	rounds(l, f, 50, NULL);
	assert_int_equal(f->calls, calls);
	assert_int_equal(f->moves_after_exit, 0);
	stop(l, f);
}

/* the target exits and its pid is handed to a new process: the start time tells them apart, the
 * newcomer is not managed, nothing of it is moved */
static void test_pid_reuse(void **state)
{
	(void)state;
	FILE *ns = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!ns)
		skip(); /* needs root and CONFIG_CHECKPOINT_RESTORE; reported as skipped, not passed */
	fclose(ns);
	struct fake *f = fake_start(NONE);
	struct tb_live *l = live_start(f);
	rounds(l, f, 20, NULL);
	pid_t old = f->child;
	kill(old, SIGKILL);
	waitpid(old, NULL, 0);
	f->exited = true;
	pid_t reuse = -1;
	for (int tries = 0; tries < 100 && reuse != old; tries++) {
		ns = fopen("/proc/sys/kernel/ns_last_pid", "w");
		assert_non_null(ns);
		fprintf(ns, "%d", (int)old - 1);
		fclose(ns);
		reuse = fork();
		assert_true(reuse >= 0);
		if (reuse == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
		if (reuse != old) { /* another process took that pid first: again */
			kill(reuse, SIGKILL);
			waitpid(reuse, NULL, 0);
		}
	}
	assert_int_equal(reuse, old);
	uint64_t calls = f->calls;
	tb_live_refresh(l, "");
	assert_int_equal(tb_live_nr_targets(l), 0);
	assert_int_equal(tb_live_counter(l, TB_L_targets_dropped), 1);
	rounds(l, f, 20, NULL);
	assert_int_equal(f->calls, calls);
	kill(reuse, SIGKILL);
	waitpid(reuse, NULL, 0);
	stop(l, f);
}

static unsigned hot_fast(const struct fake *f)
{
	unsigned n = 0;
	for (unsigned i = PAGES / 2; i < PAGES; i++)
		n += f->node[i] == 0;
	return n;
}

static bool hot_half_fast(const struct fake *f)
{
	return hot_fast(f) == PAGES / 2;
}

/* What the sampler takes back after its round is no access: those pages take no hint faults and
 * stay where they are, the others are promoted */
static void test_unreliable_samples(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	struct tb_live *l = live_start_with(f, &half_unreliable);
	rounds(l, f, 2000, hot_half_fast);
	assert_true(hot_half_fast(f));
	assert_int_equal(on_node(f, 1), PAGES / 2);
	assert_true(tb_live_counter(l, TB_L_samples_disregarded) >= PAGES / 2);
	assert_int_equal(tb_engine_counters(tb_live_engine(l))[TB_C_pgpromote_success], PAGES / 2);
	stop(l, f);
}

/* The fast node runs short and kswapd must demote more than the cold half: it demotes the cold
 * pages and keeps every page the sampler saw in its last round, however often it ages the
 * active list meanwhile (taking the sampler's word as a one-shot accessed bit demoted hot pages
 * right after aging them, and promoted them back at their next fault) */
static void test_hot_pages_stay(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	for (unsigned i = 0; i < PAGES; i++)
		f->node[i] = 0;
	struct tb_live *l = live_start_with(f, &hot_half);
	struct tb_node_info ni;
	tb_engine_node_info(tb_live_engine(l), 0, &ni);
	f->others = NODE_PAGES - PAGES - (unsigned)ni.wmark_demote - 16;
	rounds(l, f, 5, NULL); /* found, the hot half seen */
	f->others += PAGES / 2 + 200; /* room only if hot pages go too */
	rounds(l, f, 50, NULL);
	assert_int_equal(hot_fast(f), PAGES / 2);
	assert_int_equal(on_node(f, 1), PAGES / 2); /* the cold half went */
	assert_int_equal(tb_engine_counters(tb_live_engine(l))[TB_C_pgpromote_success], 0);
	stop(l, f);
}

/* tierbal exec under a stream of hint faults while other programs keep allocating on the fast node:
 * no batch of promotions takes node 0 below its high watermark (the engine reads the node's real
 * free memory before each batch, not only at the sampling rounds that such a stream delays),
 * kswapd demotes the cold half to make room in the fault path itself, and promotions move many
 * pages per move_pages call */
static void test_exec_node_filling(void **state)
{
	(void)state;
	int fd;
	struct fake *f = fake_start_exec(&fd); /* before the fault thread: the child loads a library */
	struct tb_uffd *u;
	char err[512];
	assert_int_equal(tb_uffd_new(&u, 4, NULL, err, sizeof(err)), 0);
	struct tb_access none; /* tierbal exec's sampler where the kernel offers none: the faults are all */
	assert_int_equal(tb_access_none_open(&none, err, sizeof(err)), 0);
	struct tb_live *l = live_start_sampler(f, none, u);
	if (tb_live_attach_uffd(l, f->child, fd, NULL, err, sizeof(err)))
		fail_msg("attach: %s", err);
	const struct tb_engine *e = tb_live_engine(l);
	struct tb_node_info ni;
	tb_engine_node_info(e, 0, &ni);
	long high = (long)ni.wmark_high;
	/* 64 pages free above the demotion watermark: the hot half fits once the cold half and 32
	 * pages more than the others take meanwhile have been demoted */
	f->others = NODE_PAGES - PAGES / 2 - (unsigned)ni.wmark_demote - 64;
	tb_live_sample(l); /* finds the pages; the scanner arms them */
	unsigned grown = 0, idle = 0, calls = 0;
	while (!(hot_half_fast(f) && grown == 32) && idle < 100) {
		struct pollfd pf = {tb_uffd_wake_fd(u), POLLIN, 0};
		if (poll(&pf, 1, 100) == 0) { /* nothing armed was touched: the daemon's round comes */
			tb_live_sample(l);
			idle++;
			continue;
		}
		long before = (long)NODE_PAGES - (long)on_node(f, 0) - (long)f->others;
		tb_live_hint_faults(l);
		calls++;
		long after = (long)NODE_PAGES - (long)on_node(f, 0) - (long)f->others;
		if (after < high && after < before)
			fail_msg("call %u: hint faults took node 0 from %ld to %ld free pages, under its high watermark %ld",
				 calls, before, after, high);
		if (grown < 32) {
			f->others++; /* meanwhile, others allocate */
			grown++;
		}
	}
	const uint64_t *c = tb_engine_counters(e);
	if (!hot_half_fast(f))
		fail_msg("%u of %u hot pages reached node 0 (%u calls, %u idle rounds; promoted %llu, demoted %llu, "
			 "refused: %llu watermark, %llu threshold)",
			 hot_fast(f), PAGES / 2, calls, idle, (unsigned long long)c[TB_C_pgpromote_success],
			 (unsigned long long)c[TB_C_pgdemote_kswapd], (unsigned long long)c[TB_C_promote_fail_wmark],
			 (unsigned long long)c[TB_C_promote_fail_threshold]);
	assert_true(c[TB_C_pgdemote_kswapd] >= PAGES / 2 - 64 + 32); /* at least what had to make room */
	assert_true(f->most_in_call > 1); /* promotions were batched */
	assert_true(f->calls < c[TB_C_pgpromote_success] / 2 + c[TB_C_pgdemote_kswapd] / 2);
	if (tb_engine_check((struct tb_engine *)e, err, sizeof(err)))
		fail_msg("engine invariant broken: %s", err);
	stop(l, f);
}

/* The real runtime in a child, with a park area, and tierbal's end of its
 * sockets, for the test_exec_* tests. */
struct rt_session {
	int lfd, ffd; /* the hello and fork sockets */
	char name[108];
	int uffd;
	struct tb_rt_hello h;
	struct tb_uffd_rt rd;
};

static const char *rt_lib(void)
{
	const char *rt = getenv("TB_RT_LIB");
	if (!rt)
		fail_msg("TB_RT_LIB is not set: run this test with meson test in a build with libtierbal-rt.so");
	return rt;
}

static void rt_listen(struct rt_session *r)
{
	char fname[128], err[256];
	r->lfd = tb_exec_listen(r->name, sizeof(r->name), err, sizeof(err));
	snprintf(fname, sizeof(fname), "%s%s", r->name, TB_RT_FORK_SUFFIX);
	r->ffd = tb_exec_listen_at(fname, err, sizeof(err));
	assert_true(r->lfd >= 0 && r->ffd >= 0);
}

/* In the child: the runtime loaded as LD_PRELOAD would, with a 1 MiB park area. */
static void rt_load(const struct rt_session *r, const char *lib)
{
	setenv(TB_RT_ENV_SOCKET, r->name, 1);
	setenv(TB_RT_ENV_PARK, "1", 1);
	if (!dlopen(lib, RTLD_NOW))
		_exit(1);
}

/* The child's hello: its userfaultfd and what its runtime said of itself. */
static void rt_accept(struct rt_session *r, pid_t child)
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
	r->rd = (struct tb_uffd_rt){.chan = chan, .tid = r->h.mover_tid, .park_addr = (uintptr_t)r->h.park_addr,
				    .park_len = (size_t)r->h.park_len, .own_addr = (uintptr_t)r->h.own_addr,
				    .own_len = (size_t)r->h.own_len, .keep_addr = (uintptr_t)r->h.keep_addr};
}

static void rt_close(struct rt_session *r)
{
	close(r->lfd);
	close(r->ffd);
}

/* A registration that met a hole: UFFDIO_REGISTER succeeds over a range
 * with an unmapped stretch, and a mapping made there later is not
 * registered. The kernel checks only the destination of a move, so parking
 * a page of that mapping would leave a hole the program reads as zeros with
 * no fault to bring it back. The runtime's mover must refuse it; the
 * registered rest parks and comes back when read. */
static void test_exec_park_only_registered(void **state)
{
	(void)state;
	const char *rt = rt_lib();
	struct rt_session ses;
	rt_listen(&ses);
	char err[256];
	const size_t chunk = 16 * 4096;
	char *r = mmap(NULL, 2 * chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r != MAP_FAILED);
	madvise(r, 2 * chunk, MADV_NOHUGEPAGE);
	int cmd[2], ack[2];
	assert_int_equal(pipe(cmd), 0);
	assert_int_equal(pipe(ack), 0);
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		memset(r, 1, 2 * chunk);
		rt_load(&ses, rt);
		char b = 'h';
		munmap(r, chunk); /* the hole the registration meets */
		if (write(ack[1], &b, 1) != 1 || read(cmd[0], &b, 1) != 1)
			_exit(2);
		char *n = mmap(r, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (n != r)
			_exit(2);
		madvise(n, chunk, MADV_NOHUGEPAGE);
		memset(n, 7, chunk);
		if (write(ack[1], &b, 1) != 1 || read(cmd[0], &b, 1) != 1)
			_exit(2);
		size_t bad = 0;
		for (size_t i = 0; i < chunk; i += 512)
			bad += (n[i] != 7) + (r[chunk + i] != 1);
		_exit(bad ? 3 : 0);
	}
	rt_accept(&ses, c);
	struct tb_uffd *u;
	struct tb_uffd_park park = {.fork_fd = ses.ffd, .park_ns = 60000000000ull, .max_slots = 64};
	assert_int_equal(tb_uffd_new(&u, 1, &park, err, sizeof(err)), 0);
	assert_int_equal(tb_uffd_attach(u, c, ses.uffd, &ses.rd), 0);
	char b;
	assert_int_equal(read(ack[0], &b, 1), 1);
	/* the maps as read before the hole: both chunks, one mapping */
	struct tb_vma v = {.start = (uintptr_t)r, .end = (uintptr_t)r + 2 * chunk, .readable = true, .writable = true,
			   .private = true, .anon = true};
	assert_int_equal(tb_uffd_sync(u, c, &v, 1), 0); /* the kernel says yes: it registered the second chunk */
	assert_int_equal(write(cmd[1], &b, 1), 1);
	assert_int_equal(read(ack[0], &b, 1), 1); /* the first chunk is mapped again and written */
	assert_int_equal(tb_uffd_arm(u, c, (uintptr_t)r, 2 * chunk, 1), 0);
	assert_int_equal(write(cmd[1], &b, 1), 1);
	int status;
	assert_int_equal(waitpid(c, &status, 0), c);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("the program read wrong data (status %d): a page was parked from a mapping not registered", status);
	struct tb_uffd_stats st;
	tb_uffd_stats(u, &st);
	assert_int_equal(st.arm_unregistered, chunk / 4096); /* the mapping in the hole: left alone */
	assert_int_equal(st.park.windows, chunk / 4096);   /* the registered chunk, page by page */
	assert_int_equal(st.park.restored, chunk / 4096);  /* and back when read */
	assert_int_equal(st.park.lost, 0);
	tb_uffd_free(u);
	rt_close(&ses);
	close(cmd[0]);
	close(cmd[1]);
	close(ack[0]);
	close(ack[1]);
	munmap(r, 2 * chunk);
}

/* Fault injection: this test is linked with --wrap for malloc, calloc and
 * realloc, so that every allocation of the live path (tierbal's code, not
 * the C library's own) can be made to fail. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
static _Atomic long fail_at = -1, allocs;
static bool fail_now(void)
{
	return fail_at >= 0 && allocs++ == fail_at;
}
void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

/* The daemon's set-up and its rounds with each of their allocations failing
 * in turn, one per run: every run either fails with -ENOMEM where it cannot
 * start, or goes on with the engine's invariants intact (ASan sees any read
 * out of bounds), and a run where nothing failed still promotes the hot pages. */
static void test_every_allocation_fails(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	struct tb_topology topo;
	struct tb_dconfig dc;
	two_nodes(&topo, &dc);
	FILE *log = fopen("/dev/null", "w");
	assert_non_null(log);
	long k = 0, refused = 0, survived = 0;
	for (;; k++) {
		for (unsigned i = 0; i < PAGES; i++)
			f->node[i] = 1;
		char err[512];
		struct tb_live *l;
		allocs = 0;
		fail_at = k;
		int rc = tb_live_new(&l, &dc, &topo, (struct tb_access){&all_hot, f}, "fake", NULL, log, err, sizeof(err));
		if (!rc) {
			tb_live_set_mem_ops(l, &fake_mem, f);
			rc = tb_live_add(l, f->child, false, err, sizeof(err));
			if (!rc)
				rounds(l, f, 200, all_fast); /* fails the test if an invariant breaks */
			survived += !rc;
			if (!rc && allocs <= k) /* nothing failed: the run did its job */
				assert_true(all_fast(f));
			if (!rc && allocs > k && k > 0)
				assert_true(tb_live_counter(l, TB_L_out_of_memory) > 0 || all_fast(f));
			tb_live_free(l);
		}
		if (rc) {
			assert_int_equal(rc, -ENOMEM);
			refused++;
		}
		bool injected = allocs > k;
		fail_at = -1;
		if (!injected)
			break; /* the whole run allocated fewer times than k: each allocation has failed once */
	}
	fclose(log);
	assert_true(k > 3 && refused > 0 && survived > 0);
	stop(NULL, f);
}

/* tierbal exec's side with each of its allocations failing in turn (its
 * set-up, registration, arming, the fault thread's backlog): whatever
 * fails, the program reads back what it wrote and ends, and nothing crashes. */
static void test_exec_every_allocation_fails(void **state)
{
	(void)state;
	const char *rt = rt_lib();
	const size_t len = 64 * 4096;
	long k = 0, parked_runs = 0;
	for (;; k++) {
		struct rt_session ses;
		rt_listen(&ses);
		char err[256];
		char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(r != MAP_FAILED);
		madvise(r, len, MADV_NOHUGEPAGE);
		int cmd[2];
		assert_int_equal(pipe(cmd), 0);
		pid_t c = fork();
		assert_true(c >= 0);
		if (c == 0) {
			fail_at = -1; /* the program's own allocations never fail */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (size_t i = 0; i < len; i += 4096)
				memset(r + i, (int)(i / 4096 + 1), 4096);
			rt_load(&ses, rt);
			char b;
			if (read(cmd[0], &b, 1) != 1)
				_exit(2);
			size_t bad = 0;
			for (size_t i = 0; i < len; i += 512)
				bad += r[i] != (char)(i / 4096 + 1);
			_exit(bad ? 3 : 0);
		}
		close(cmd[0]);
		rt_accept(&ses, c);
		allocs = 0;
		fail_at = k;
		struct tb_uffd *u = NULL;
		struct tb_uffd_park park = {.fork_fd = ses.ffd, .park_ns = 60000000000ull, .max_slots = 64};
		int rc = tb_uffd_new(&u, 4, &park, err, sizeof(err));
		if (rc) {
			assert_int_equal(rc, -ENOMEM);
			close(ses.uffd);
			close(ses.rd.chan);
		} else {
			rc = tb_uffd_attach(u, c, ses.uffd, &ses.rd);
			assert_true(rc == 0 || rc == -ENOMEM);
			struct tb_vma v = {.start = (uintptr_t)r, .end = (uintptr_t)r + len, .readable = true,
					   .writable = true, .private = true, .anon = true};
			if (!rc) {
				tb_uffd_sync(u, c, &v, 1); /* a failure leaves the mapping unregistered, and alone */
				int arc = tb_uffd_arm(u, c, (uintptr_t)r, len, 1);
				(void)arc; /* what could not be armed is not: fine either way */
			}
		}
		char b = 'g';
		assert_int_equal(write(cmd[1], &b, 1), 1);
		int status;
		assert_int_equal(waitpid(c, &status, 0), c);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("allocation %ld failing: the program ended with status %d (0: what it wrote read back)", k,
				 status);
		if (u) {
			struct tb_uffd_stats st;
			tb_uffd_stats(u, &st);
			parked_runs += st.park.windows > 0;
			assert_int_equal(st.park.lost, 0);
		}
		tb_uffd_free(u);
		bool injected = allocs > k;
		fail_at = -1;
		rt_close(&ses);
		close(cmd[1]);
		munmap(r, len);
		if (!injected)
			break; /* tierbal's side allocated fewer times than k: each allocation has failed once */
	}
	assert_true(k > 3 && parked_runs > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_failure),    cmocka_unit_test(test_busy_pages),
		cmocka_unit_test(test_full_fast_node), cmocka_unit_test(test_failing_calls),
		cmocka_unit_test(test_exit_before_move), cmocka_unit_test(test_pid_reuse),
		cmocka_unit_test(test_exec_node_filling), cmocka_unit_test(test_hot_pages_stay),
		cmocka_unit_test(test_unreliable_samples), cmocka_unit_test(test_every_allocation_fails),
		cmocka_unit_test(test_exec_park_only_registered),
		cmocka_unit_test(test_exec_every_allocation_fails),
	};
	if (getenv("TB_TEST_SKIP")) /* scripts/valgrind.sh: valgrind has no userfaultfd */
		cmocka_set_skip_filter(getenv("TB_TEST_SKIP"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
