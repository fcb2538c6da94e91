/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The live path when memory runs out: every allocation of tierbal's side
 * fails in turn (malloc, calloc and realloc are wrapped at link time), and
 * the target never notices. */
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
#include "lib-run.h"

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
		int rc = tb_live_new(&l, &dc, &topo, (struct tb_access){&all_hot, f}, "fake", NULL, log, err,
				     sizeof(err));
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
			struct tb_vma v = {.start = (uintptr_t)r,
					   .end = (uintptr_t)r + len,
					   .readable = true,
					   .writable = true,
					   .private = true,
					   .anon = true};
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
			fail_msg(
				"allocation %ld failing: the program ended with status %d (0: what it wrote read back)",
				k, status);
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
		cmocka_unit_test(test_every_allocation_fails),
		cmocka_unit_test(test_exec_every_allocation_fails),
	};
	return tb_test_run("live-oom", tests, sizeof(tests) / sizeof(tests[0]));
}
