/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The live path of tierbal exec against a fake kernel, with the real runtime
 * loaded into the target: filling the fast node through the fault path, and
 * parking only what the runtime registered. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include "lib-run.h"

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
			fail_msg(
				"call %u: hint faults took node 0 from %ld to %ld free pages, under its high watermark %ld",
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
	/* at least what had to make room: promotions may take node 0 down to its high watermark, below
	 * the demotion watermark, when kswapd has not caught up yet */
	long room = 64 + (long)ni.wmark_demote - high;
	assert_true((long)c[TB_C_pgdemote_kswapd] >= (long)PAGES / 2 - room + 32);
	assert_true(f->most_in_call > 1); /* promotions were batched */
	assert_true(f->calls < c[TB_C_pgpromote_success] / 2 + c[TB_C_pgdemote_kswapd] / 2);
	if (tb_engine_check((struct tb_engine *)e, err, sizeof(err)))
		fail_msg("engine invariant broken: %s", err);
	stop(l, f);
}

/* The child's runtime accepted, and its userfaultfd attached with parking:
 * one-page windows, parked a minute at most, 64 slots. */
static struct tb_uffd *parking_uffd(struct rt_session *ses, pid_t c)
{
	char err[256];
	rt_accept(ses, c);
	struct tb_uffd *u;
	struct tb_uffd_park park = {.fork_fd = ses->ffd, .park_ns = 60000000000ull, .max_slots = 64};
	assert_int_equal(tb_uffd_new(&u, 1, &park, err, sizeof(err)), 0);
	assert_int_equal(tb_uffd_attach(u, c, ses->uffd, &ses->rd), 0);
	return u;
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
		char *n = mmap(r, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			       0);
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
	struct tb_uffd *u = parking_uffd(&ses, c);
	char b;
	assert_int_equal(read(ack[0], &b, 1), 1);
	/* the maps as read before the hole: both chunks, one mapping */
	struct tb_vma v = {.start = (uintptr_t)r,
			   .end = (uintptr_t)r + 2 * chunk,
			   .readable = true,
			   .writable = true,
			   .private = true,
			   .anon = true};
	assert_int_equal(tb_uffd_sync(u, c, &v, 1), 0); /* the kernel says yes: it registered the second chunk */
	assert_int_equal(write(cmd[1], &b, 1), 1);
	assert_int_equal(read(ack[0], &b, 1), 1); /* the first chunk is mapped again and written */
	assert_int_equal(tb_uffd_arm(u, c, (uintptr_t)r, 2 * chunk, 1), 0);
	assert_int_equal(write(cmd[1], &b, 1), 1);
	int status;
	assert_int_equal(waitpid(c, &status, 0), c);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("the program read wrong data (status %d): a page was parked from a mapping not registered",
			 status);
	struct tb_uffd_stats st;
	tb_uffd_stats(u, &st);
	assert_int_equal(st.arm_unregistered, chunk / 4096); /* the mapping in the hole: left alone */
	assert_int_equal(st.park.windows, chunk / 4096);     /* the registered chunk, page by page */
	assert_int_equal(st.park.restored, chunk / 4096);    /* and back when read */
	assert_int_equal(st.park.lost, 0);
	tb_uffd_free(u);
	rt_close(&ses);
	close(cmd[0]);
	close(cmd[1]);
	close(ack[0]);
	close(ack[1]);
	munmap(r, 2 * chunk);
}

/* AnonHugePages (kB) of this process's area that starts at a, from smaps */
static long huge_kb_at(uintptr_t a)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long kb = -1;
	unsigned long lo;
	bool in = false;
	while (f && fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' ') && sscanf(line, "%lx-", &lo) == 1)
			in = lo == a;
		else if (in)
			sscanf(line, "AnonHugePages: %ld kB", &kb);
	}
	if (f)
		fclose(f);
	return kb;
}

/* the mode of /sys/kernel/mm/transparent_hugepage/enabled in force: 'a'lways, 'm'advise or 'n'ever */
static char thp_mode(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char buf[64] = "";
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	const char *br = strchr(buf, '[');
	return br ? br[1] : 'n';
}

/* With parking, a mapping registered for missing pages gets no huge page at
 * its first touches. A new mapping the kernel calls THPeligible is registered
 * for write protection only: its first touches get huge pages and it is never
 * parked, while a MADV_NOHUGEPAGE mapping beside it is parked and comes back. */
static void test_exec_thp_first_touch(void **state)
{
	(void)state;
	const char *rt = rt_lib();
	struct rt_session ses;
	rt_listen(&ses);
	const size_t H = 2ul << 20, hlen = 4 * H, slen = 16 * 4096;
	char *m = mmap(NULL, hlen + H, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *s = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED && s != MAP_FAILED);
	char *h = (char *)(((uintptr_t)m + H - 1) & ~(uintptr_t)(H - 1));
	assert_int_equal(madvise(h, hlen, MADV_HUGEPAGE), 0);
	assert_int_equal(madvise(s, slen, MADV_NOHUGEPAGE), 0);
	int cmd[2], ack[2];
	assert_int_equal(pipe(cmd), 0);
	assert_int_equal(pipe(ack), 0);
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		memset(s, 1, slen); /* the child's own pages: a page shared with the parent cannot be moved */
		rt_load(&ses, rt);
		char b = 'h';
		if (write(ack[1], &b, 1) != 1 || read(cmd[0], &b, 1) != 1)
			_exit(2);
		memset(h, 5, hlen); /* first touches, after the registration */
		long kb = huge_kb_at((uintptr_t)h);
		char k = (char)(kb < 0 ? 0 : kb / 2048); /* huge pages it got */
		if (write(ack[1], &k, 1) != 1 || read(cmd[0], &b, 1) != 1)
			_exit(2);
		for (size_t i = 0; i < hlen; i += H)
			h[i + 8] = 6; /* a write fault on each huge page armed whole */
		kb = huge_kb_at((uintptr_t)h);
		k = (char)(kb < 0 ? 0 : kb / 2048);
		if (write(ack[1], &k, 1) != 1 || read(cmd[0], &b, 1) != 1)
			_exit(2);
		size_t bad = 0;
		for (size_t i = 0; i < hlen; i += H)
			bad += h[i + 8] != 6;
		for (size_t i = 0; i < hlen; i += 4096)
			bad += h[i] != 5;
		for (size_t i = 0; i < slen; i += 4096)
			bad += s[i] != 1;
		_exit(bad ? 3 : 0);
	}
	struct tb_uffd *u = parking_uffd(&ses, c);
	char b;
	assert_int_equal(read(ack[0], &b, 1), 1);
	struct tb_vma v[2] = {
		{.start = (uintptr_t)h,
		 .end = (uintptr_t)h + hlen,
		 .readable = true,
		 .writable = true,
		 .private = true,
		 .anon = true},
		{.start = (uintptr_t)s,
		 .end = (uintptr_t)s + slen,
		 .readable = true,
		 .writable = true,
		 .private = true,
		 .anon = true},
	};
	/* the first sync registers the small mapping and reads smaps for the other, which the second registers */
	assert_int_equal(tb_uffd_sync(u, c, v, 2), 0);
	struct tb_uffd_stats st;
	tb_uffd_stats(u, &st);
	assert_int_equal(st.registered, 1);
	assert_int_equal(tb_uffd_sync(u, c, v, 2), 0);
	assert_int_equal(write(cmd[1], &b, 1), 1);
	char got;
	assert_int_equal(read(ack[0], &got, 1), 1);
	bool thp = thp_mode() != 'n';
	tb_uffd_stats(u, &st);
	assert_int_equal(st.registered, 2);
	assert_int_equal(st.registered_huge, thp ? 1 : 0);
	/* the kernel may lack a free 2 MiB block for some of them, never for all */
	if (thp && got < 1)
		fail_msg("first touches under tierbal exec got no huge page in a MADV_HUGEPAGE mapping");
	/* with THP, each huge page is write-protected whole, as tierbal run's round does for one it found */
	for (size_t i = 0; thp && i < hlen; i += H)
		assert_int_equal(tb_uffd_arm_huge(u, c, v[0].start + i), 0);
	if (!thp)
		assert_int_equal(tb_uffd_arm(u, c, v[0].start, hlen, 1), 0);
	assert_int_equal(tb_uffd_arm(u, c, v[1].start, slen, 1), 0);
	tb_uffd_stats(u, &st);
	assert_int_equal(st.armed_huge, thp ? hlen / H : 0);
	/* parked: the small mapping page by page, and the huge-page one only without THP */
	assert_int_equal(st.park.windows, slen / 4096 + (thp ? 0 : hlen / 4096 < 64 ? hlen / 4096 : 64));
	assert_int_equal(write(cmd[1], &b, 1), 1);
	char kept;
	assert_int_equal(read(ack[0], &kept, 1), 1);
	tb_uffd_stats(u, &st);
	if (thp && (kept != got || st.faults < hlen / H))
		fail_msg("write faults on huge pages armed whole: %d of %d huge pages kept, %llu faults", kept, got,
			 (unsigned long long)st.faults);
	assert_int_equal(write(cmd[1], &b, 1), 1);
	int status;
	assert_int_equal(waitpid(c, &status, 0), c);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("the program read wrong data (status %d)", status);
	tb_uffd_stats(u, &st);
	assert_int_equal(st.park.lost, 0);
	tb_uffd_free(u);
	rt_close(&ses);
	close(cmd[0]);
	close(cmd[1]);
	close(ack[0]);
	close(ack[1]);
	munmap(m, hlen + H);
	munmap(s, slen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_node_filling),
		cmocka_unit_test(test_exec_park_only_registered),
		cmocka_unit_test(test_exec_thp_first_touch),
	};
	return tb_test_run("live-exec", tests, sizeof(tests) / sizeof(tests[0]));
}
