/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Targets: /proc/PID/stat, which processes may be managed, the privileges
 * asked for, a cgroup's processes, the id map and memory stretches. */
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

static void test_proc_stat(void **state)
{
	(void)state;
	struct tb_proc_stat st;
	/* a comm with spaces and a parenthesis, then fields 3.. */
	const char *line = "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 "
			   "987654 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
	assert_int_equal(tb_proc_stat_parse(line, &st), 0);
	assert_string_equal(st.comm, "my (odd) prog");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.starttime, 987654);
	assert_int_equal(st.processor, 1);
	assert_false(st.kernel_thread);
	const char *kt = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 "
			 "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0\n";
	assert_int_equal(tb_proc_stat_parse(kt, &st), 0);
	assert_true(st.kernel_thread);
	assert_int_equal(tb_proc_stat_parse("1 (short) S 1 2\n", &st), -EINVAL);
	assert_int_equal(tb_proc_stat_parse("no parens at all", &st), -EINVAL);
	assert_int_equal(tb_proc_stat(getpid(), &st), 0);
	assert_false(st.kernel_thread);
	assert_int_equal(tb_proc_stat(4194304 + 1, &st), -ESRCH);
}

static void test_target_checks(void **state)
{
	(void)state;
	struct tb_proc_stat st;
	char err[256];
	assert_int_equal(tb_target_check(getpid(), &st, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "tierbal itself"));
	assert_int_equal(tb_target_check(4194304 + 1, &st, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "no such process"));
	assert_int_equal(tb_target_check(0, &st, err, sizeof(err)), -EINVAL);
	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(tb_target_check(child, &st, err, sizeof(err)), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* an unprivileged caller: no CAP_SYS_NICE, and no ptrace access to a root process */
static void test_privileges(void **state)
{
	(void)state;
	char err[512];
	if (geteuid() != 0)
		skip(); /* needs root to drop to nobody; reported as skipped */
	assert_int_equal(tb_target_check_caps("tierbal run", err, sizeof(err)), 0);
	pid_t root_proc = fork();
	if (root_proc == 0) {
		pause();
		_exit(0);
	}
	pid_t c = fork();
	if (c == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		struct tb_proc_stat st;
		int caps = tb_target_check_caps("tierbal run", err, sizeof(err));
		if (caps != -EPERM || !strstr(err, "needs CAP_SYS_NICE"))
			_exit(11);
		int rc = tb_target_check(root_proc, &st, err, sizeof(err));
		if ((rc != -EACCES && rc != -EPERM) || !strstr(err, "no permission to ptrace it"))
			_exit(12);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	kill(root_proc, SIGKILL);
	waitpid(root_proc, NULL, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_cgroup_pids(void **state)
{
	(void)state;
	char dir[] = "/tmp/tb-cg-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "w");
	fputs("12\n345\n6789\n", f);
	fclose(f);
	pid_t *v;
	size_t n;
	assert_int_equal(tb_cgroup_pids(dir, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[2], 6789);
	free(v);
	unlink(path);
	rmdir(dir);
	assert_int_equal(tb_cgroup_pids(dir, &v, &n), -ENOENT);
}

static void test_idmap(void **state)
{
	(void)state;
	struct tb_idmap m;
	assert_int_equal(tb_idmap_init(&m, 2, 3), 0);
	uint32_t c[4];
	assert_int_equal(tb_idmap_extent(&m, 1), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 7, 0x200000, &c[0]), 0);
	assert_int_equal(c[0], 3); /* pool 1 holds chunks 3..5, lowest first */
	assert_int_equal(tb_idmap_extent(&m, 1), 1);
	assert_int_equal(tb_idmap_extent(&m, 0), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 7, 0x400000, &c[1]), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 8, 0x600000, &c[2]), 0);
	assert_int_equal(tb_idmap_extent(&m, 1), 3);
	assert_int_equal(tb_idmap_get(&m, 1, 8, 0x800000, &c[3]), -ENOSPC);
	uint32_t page = tb_idmap_page(c[1], 5);
	assert_true(tb_idmap_addr(&m, page) == 0x400000 + 5 * 4096);
	assert_int_equal(m.owner[c[2]], 8);
	tb_idmap_put(&m, c[1]);
	assert_int_equal(m.owner[c[1]], TB_NO_OWNER);
	assert_int_equal(tb_idmap_extent(&m, 1), 3); /* a hole below the highest chunk in use */
	tb_idmap_put(&m, c[2]);
	assert_int_equal(tb_idmap_extent(&m, 1), 1);
	assert_int_equal(tb_idmap_get(&m, 1, 8, 0x600000, &c[2]), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 9, 0xa00000, &c[3]), 0);
	assert_int_equal(c[3], c[1]); /* reused */
	assert_int_equal(tb_idmap_extent(&m, 5), 0);
	assert_int_equal(tb_idmap_get(&m, 2, 9, 0, &c[3]), -EINVAL);
	tb_idmap_destroy(&m);
}

static void test_stretches(void **state)
{
	(void)state;
	/* 3 pages of anonymous memory starting 1 page into a 2 MiB stretch */
	char *big = mmap(NULL, 3 * TB_CHUNK_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(big != MAP_FAILED);
	uintptr_t base = ((uintptr_t)big + TB_CHUNK_BYTES - 1) & ~(TB_CHUNK_BYTES - 1);
	char *p = mmap((void *)(base + 4096), 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0);
	assert_true(p == (char *)(base + 4096));
	struct tb_target t = {.pid = getpid(), .pagemap_fd = -1};
	struct tb_tchunk *s;
	size_t n;
	assert_int_equal(tb_target_stretches(&t, &s, &n, NULL, NULL), 0);
	const struct tb_tchunk *found = NULL;
	for (size_t i = 0; i < n; i++) {
		if (i)
			assert_true(s[i].base > s[i - 1].base);
		if (s[i].base == base)
			found = &s[i];
	}
	assert_non_null(found);
	assert_true(found->elig[0] == 0xeull); /* pages 1, 2, 3 */
	for (int w = 1; w < 8; w++)
		assert_true(found->elig[w] == 0);
	free(s);
	/* a limit below the 3-page mapping: it is left alone and counted */
	t.max_vma_bytes = 2 * 4096;
	assert_int_equal(tb_target_stretches(&t, &s, &n, NULL, NULL), 0);
	assert_true(t.skipped_vmas >= 1);
	for (size_t i = 0; i < n; i++)
		assert_true(s[i].base != base);
	free(s);
	munmap(big, 3 * TB_CHUNK_BYTES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_stat),  cmocka_unit_test(test_target_checks),
		cmocka_unit_test(test_privileges), cmocka_unit_test(test_cgroup_pids),
		cmocka_unit_test(test_idmap),      cmocka_unit_test(test_stretches),
	};
	return tb_test_run("target", tests, sizeof(tests) / sizeof(tests[0]));
}
