/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The userfaultfd set of tierbal exec, in this process. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include "access/access.h"
#include "exec/exec.h"
#include "exec/rt_proto.h"
#include "linux/pagemap.h"
#include "exec/uffd.h"
#include "exec/park.h"
#include "exec/uffd_abi.h"
#include "daemon/ctl.h"
#include "daemon/dconfig.h"
#include "daemon/idmap.h"
#include "linux/procfs.h"
#include "daemon/target.h"
#include "lib-run.h"

/* The fault path of tierbal exec, in this process: a write to a protected
 * page blocks until the fault thread opens its window, and the event names
 * the window; the rest of the region stays protected (pagemap says so). */
static void test_uffd(void **state)
{
	(void)state;
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		fail_msg("userfaultfd: %s (tierbal exec needs it: run the tests as root)", strerror(errno));
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP};
	assert_int_equal(ioctl(fd, UFFDIO_API, &api), 0);
	struct tb_uffd *u;
	char err[256];
	assert_int_equal(tb_uffd_new(&u, 3, NULL, err, sizeof(err)), -EINVAL); /* not a power of two */
	assert_int_equal(tb_uffd_new(&u, 4, NULL, err, sizeof(err)), 0);
	pid_t me = getpid();
	assert_int_equal(tb_uffd_attach(u, me, fd, NULL), 0);
	assert_true(tb_uffd_has(u, me));
	size_t n = 64;
	/* windows are aligned in the address space: align the region so that they are in it too */
	char *m = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	char *r = (char *)(((uintptr_t)m + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
	madvise(r, n * 4096, MADV_NOHUGEPAGE);
	memset(r, 1, n * 4096);
	struct tb_vma v = {.start = (uintptr_t)m,
			   .end = (uintptr_t)m + (4u << 20),
			   .readable = true,
			   .writable = true,
			   .private = true,
			   .anon = true};
	assert_int_equal(tb_uffd_sync(u, me, &v, 1), 0);
	assert_int_equal(tb_uffd_sync(u, me, &v, 1), 0); /* known: not registered twice */
	assert_int_equal(tb_uffd_arm(u, me, (uintptr_t)r, n * 4096, 0), 0);
	/* a mapping the last sync did not register is left alone: the kernel
	 * would move a page out of it, and the program read a fresh zero page */
	char *other = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(other != MAP_FAILED);
	memset(other, 5, 16 * 4096);
	assert_int_equal(tb_uffd_arm(u, me, (uintptr_t)other, 16 * 4096, 0), 0);

	r[10 * 4096] = 2; /* blocks until the fault thread lifts the protection */
	r[9 * 4096] = 2;  /* same window of 4 pages: no second fault */
	r[20 * 4096] = 2;
	struct tb_uffd_event ev[8];
	size_t got = 0;
	for (int i = 0; i < 50 && got < 2; i++) {
		struct pollfd pf = {tb_uffd_wake_fd(u), POLLIN, 0};
		poll(&pf, 1, 100);
		got += tb_uffd_drain(u, ev + got, 8 - got);
	}
	assert_int_equal(got, 2);
	assert_int_equal(ev[0].pid, me);
	assert_true(ev[0].addr == (uintptr_t)r + 8 * 4096 && ev[0].pages == 4 && ev[0].write);
	assert_true(ev[1].addr == (uintptr_t)r + 20 * 4096 && ev[1].pages == 4);
	assert_true(ev[1].t_ns >= ev[0].t_ns);

	int pm = tb_proc_open(0, "pagemap", O_RDONLY);
	assert_true(pm >= 0);
	uint64_t e[64];
	assert_int_equal(tb_pagemap_read(pm, (uintptr_t)r, n, e), 0);
	close(pm);
	assert_false(e[9] & TB_PM_UFFD_WP);
	assert_false(e[11] & TB_PM_UFFD_WP);
	assert_true(e[12] & TB_PM_UFFD_WP); /* outside the opened window: still protected */
	assert_true(e[63] & TB_PM_UFFD_WP);
	struct tb_uffd_stats st;
	tb_uffd_stats(u, &st);
	assert_int_equal(st.faults, 2);
	assert_int_equal(st.resolve_errors, 0);
	assert_int_equal(st.registered, 1);
	assert_int_equal(st.protected_pages, n);
	assert_int_equal(st.arm_skipped, 16);
	other[3 * 4096] = 6; /* not protected: no fault, no wait */
	assert_int_equal(other[3 * 4096], 6);
	munmap(other, 16 * 4096);
	/* freeing drops the registration: writes go through without anyone answering */
	tb_uffd_free(u);
	r[40 * 4096] = 3;
	assert_int_equal(r[40 * 4096], 3);
	munmap(m, 4u << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uffd),
	};
	return tb_test_run("uffd", tests, sizeof(tests) / sizeof(tests[0]));
}
