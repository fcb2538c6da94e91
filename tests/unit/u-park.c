/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parking: moving a program's cold memory aside and back, in this process,
 * and what happens when the program has gone. */
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

/* The park table with moves done in this process (the kernel moves a
 * process's pages only at its own request): pages away are absent, come
 * back intact, and a page armed again while away stays away (the move of
 * it is not tried again: it failed with EEXIST once, and the slot was
 * forgotten, so that its next access read zeros). */
static int self_move(void *ctx, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved)
{
	struct uffdio_move m = {.dst = dst, .src = src, .len = len, .mode = mode};
	int rc = ioctl(*(int *)ctx, UFFDIO_MOVE, &m) ? -errno : 0;
	*moved = m.move > 0 ? m.move : 0;
	return rc;
}

static int self_move_many(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode)
{
	for (size_t i = 0; i < n; i++)
		m[i].rc = self_move(ctx, m[i].dst, m[i].src, m[i].len, mode, &m[i].moved);
	return 0;
}

static unsigned discarded;
static void self_discard(void *ctx, uintptr_t addr, size_t len)
{
	(void)ctx;
	(void)addr;
	discarded += (unsigned)(len / 4096);
}

static bool present(int pm, uintptr_t a)
{
	uint64_t e;
	assert_int_equal(tb_pagemap_read(pm, a, 1, &e), 0);
	return e & TB_PM_PRESENT;
}

/* A process that exits with pages parked: its mover is gone, the copy
 * fallback finds no memory to read, and no page counts as lost (they went
 * with the memory). */
static int gone_move(void *ctx, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved)
{
	(void)ctx, (void)dst, (void)src, (void)len, (void)mode;
	*moved = 0;
	return -ESRCH;
}

static int parked_move_many(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode)
{
	(void)ctx, (void)mode;
	for (size_t i = 0; i < n; i++) {
		m[i].rc = 0;
		m[i].moved = (int64_t)m[i].len;
	}
	return 0;
}

static void no_discard(void *ctx, uintptr_t addr, size_t len)
{
	(void)ctx, (void)addr, (void)len;
}

static void test_park_exited(void **state)
{
	(void)state;
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t c = fork();
	if (c == 0) {
		char b;
		close(go[1]);
		_exit(read(go[0], &b, 1) < 0); /* until the parent closes its end */
	}
	static const struct tb_park_ops ops = {.move = gone_move, .move_many = parked_move_many, .discard = no_discard};
	struct tb_park p;
	const unsigned win = 4;
	assert_int_equal(tb_park_init(&p, -1, c, &ops, NULL, 0x10000000, 16 * win * 4096, win, 16), 0);
	assert_true(p.pagemap_fd >= 0 && p.mem_fd >= 0);
	assert_int_equal(tb_park_window(&p, 0x20000000, win * 4096, 1), (long)(win * 4096));
	close(go[1]);
	int st;
	assert_int_equal(waitpid(c, &st, 0), c);
	int s = tb_park_find(&p, 0x20000000);
	assert_true(s >= 0);
	assert_int_equal(tb_park_restore(&p, (uint32_t)s, true), 0);
	assert_int_equal(p.st.lost, 0);
	assert_int_equal(tb_park_find(&p, 0x20000000), -1);
	tb_park_fini(&p);
	close(go[0]);
}

static void test_uffd_park(void **state)
{
	(void)state;
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		fail_msg("userfaultfd: %s (tierbal exec needs it: run the tests as root)", strerror(errno));
	struct uffdio_api api = {.api = UFFD_API, .features = TB_UFFD_PARK_FEATURES};
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		skip(); /* a kernel before 6.8: no UFFDIO_MOVE, no parking (reported as skipped, not passed) */
	}
	const size_t win = 16, n = 64;
	char *m = mmap(NULL, (n + win) * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *pa =
		mmap(NULL, 64 * win * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(m != MAP_FAILED && pa != MAP_FAILED);
	char *r = (char *)(((uintptr_t)m + win * 4096 - 1) & ~(uintptr_t)(win * 4096 - 1)); /* window-aligned */
	madvise(m, (n + win) * 4096, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < n; i++)
		memset(r + i * 4096, (int)(i + 1), 4096);
	struct uffdio_register rg = {.range = {(uintptr_t)m, (n + win) * 4096},
				     .mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP};
	assert_int_equal(ioctl(fd, UFFDIO_REGISTER, &rg), 0);
	rg = (struct uffdio_register){.range = {(uintptr_t)pa, 64 * win * 4096}, .mode = UFFDIO_REGISTER_MODE_WP};
	assert_int_equal(ioctl(fd, UFFDIO_REGISTER, &rg), 0);
	static const struct tb_park_ops ops = {.move = self_move, .move_many = self_move_many, .discard = self_discard};
	struct tb_park p;
	assert_int_equal(tb_park_init(&p, fd, getpid(), &ops, &fd, (uintptr_t)pa, 64 * win * 4096, win, 64), 0);
	int pm = tb_proc_open(0, "pagemap", O_RDONLY);
	assert_true(pm >= 0);

	uintptr_t w0 = (uintptr_t)r, w1 = w0 + win * 4096, w2 = w1 + win * 4096, w3 = w2 + win * 4096;
	assert_int_equal(tb_park_window(&p, w0, win * 4096, 100), (long)(win * 4096));
	assert_int_equal(tb_park_window(&p, w1 + 2 * 4096, 4 * 4096, 200), 4 * 4096);
	assert_int_equal(tb_park_window(&p, w0, win * 4096, 300), (long)(win * 4096)); /* armed again while away */
	assert_int_equal(tb_park_window(&p, w1 + 4 * 4096, 4 * 4096, 300), 4 * 4096);  /* half away already */
	for (size_t i = 0; i < win; i++)
		assert_false(present(pm, w0 + i * 4096));
	assert_true(present(pm, w1 + 1 * 4096));
	for (size_t i = 2; i < 8; i++)
		assert_false(present(pm, w1 + i * 4096));
	assert_true(present(pm, w1 + 8 * 4096));
	assert_true(tb_park_find(&p, w0 + 5 * 4096) >= 0);
	assert_int_equal(tb_park_find(&p, w2), -1);
	uint64_t bits[1];
	tb_park_mask(&p, w0, 64, bits);
	assert_true(bits[0] == (0xffffull | (0x3full << (win + 2))));

	/* back, intact */
	int s = tb_park_find(&p, w0);
	assert_int_equal(tb_park_restore(&p, (uint32_t)s, true), 0);
	for (size_t i = 0; i < win; i++) {
		assert_true(present(pm, w0 + i * 4096));
		assert_int_equal(r[i * 4096 + 7], (char)(i + 1));
	}
	assert_int_equal(tb_park_find(&p, w0), -1);

	/* discarded while away (MADV_DONTNEED, munmap): junk, never put back; the rest is */
	discarded = 0;
	tb_park_discard(&p, w1 + 2 * 4096, w1 + 4 * 4096);
	assert_int_equal(discarded, 2);
	s = tb_park_find(&p, w1);
	assert_int_equal(tb_park_restore(&p, (uint32_t)s, true), 0);
	assert_false(present(pm, w1 + 2 * 4096));
	assert_false(present(pm, w1 + 3 * 4096));
	for (size_t i = 4; i < 8; i++)
		assert_int_equal(r[win * 4096 + i * 4096 + 9], (char)(win + i + 1));
	assert_int_equal(p.st.junk, 2);
	assert_int_equal(p.junk_slots, 1); /* its slot is not used again */

	/* expiry: only what waited long enough */
	assert_int_equal(tb_park_window(&p, w2, win * 4096, 1000), (long)(win * 4096));
	assert_int_equal(tb_park_window(&p, w3, win * 4096, 5000), (long)(win * 4096));
	assert_int_equal(tb_park_expire(&p, 2000, NULL, NULL), 0);
	assert_true(present(pm, w2));
	assert_false(present(pm, w3));
	assert_int_equal(p.st.expired, 1);
	assert_int_equal(tb_park_restore_all(&p), 0);
	assert_int_equal(r[(3 * win + 5) * 4096], (char)(3 * win + 6));
	assert_int_equal(p.nparked, 0);
	tb_park_fini(&p);

	/* the window table under churn: one-page windows parked and put back in a
	 * scrambled order, every lookup right (deletion shifts entries back) */
	assert_int_equal(tb_park_init(&p, fd, getpid(), &ops, &fd, (uintptr_t)pa, 64 * win * 4096, 1, 48), 0);
	uint32_t seed = 12345;
	bool away[64] = {0};
	for (int step = 0; step < 4000; step++) {
		seed = seed * 1103515245u + 12345u;
		size_t i = (seed >> 16) % n;
		uintptr_t a = w0 + i * 4096;
		if (away[i]) {
			assert_int_equal(tb_park_restore(&p, (uint32_t)tb_park_find(&p, a), true), 0);
			away[i] = false;
		} else if (tb_park_window(&p, a, 4096, (uint64_t)step) == 4096) {
			away[i] = true;
		}
		if (step % 97 == 0)
			for (size_t k = 0; k < n; k++)
				assert_int_equal(tb_park_find(&p, w0 + k * 4096) >= 0, away[k]);
	}
	assert_int_equal(tb_park_restore_all(&p), 0);
	for (size_t i = 0; i < n; i++)
		if (i < win + 2 || i >= win + 4) /* the two discarded pages stay absent */
			assert_int_equal(r[i * 4096 + 100], (char)(i + 1));
	tb_park_fini(&p);
	close(pm);
	close(fd);
	munmap(m, (n + win) * 4096);
	munmap(pa, 64 * win * 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_park_exited),
		cmocka_unit_test(test_uffd_park),
	};
	return tb_test_run("park", tests, sizeof(tests) / sizeof(tests[0]));
}
