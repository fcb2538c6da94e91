/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal exec's helpers: the runtime's socket and who descends from whom. */
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

static int connect_to(const char *name)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t l = strlen(name);
	memcpy(sa.sun_path, name, l);
	sa.sun_path[0] = '\0';
	assert_int_equal(connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l)),
			 0);
	return s;
}

/* tierbal exec's helpers: static programs, the runtime's hello, descendants */
static void test_exec_helpers(void **state)
{
	(void)state;
	assert_false(tb_exec_is_static("sh"));
	assert_false(tb_exec_is_static("/nonexistent/prog"));
	char name[108], err[256];
	int l = tb_exec_listen(name, sizeof(name), err, sizeof(err));
	assert_true(l >= 0);
	assert_true(name[0] == '@');
	pid_t pid;
	int uffd, chan;
	struct tb_rt_hello got;
	assert_int_equal(tb_exec_accept(l, &pid, &uffd, &chan, &got), -EAGAIN); /* nobody there */
	int c = connect_to(name);
	assert_int_equal(send(c, "hello", 5, 0), 5);
	assert_int_equal(tb_exec_accept(l, &pid, &uffd, &chan, &got), -EPROTO);
	close(c);
	c = connect_to(name);
	struct tb_rt_hello h = {.magic = TB_RT_MAGIC, .version = TB_RT_VERSION, .err = EPERM, .park_err = EINVAL};
	assert_int_equal(send(c, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	assert_int_equal(tb_exec_accept(l, &pid, &uffd, &chan, &got), 0);
	assert_int_equal(pid, getpid());
	assert_int_equal(uffd, -1);
	assert_int_equal(got.err, EPERM);
	assert_int_equal(got.park_err, EINVAL);
	close(c);
	close(l);
	assert_true(tb_exec_descends(getpid(), getpid()));
	assert_true(tb_exec_descends(getpid(), getppid()));
	assert_false(tb_exec_descends(getppid(), getpid()));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_helpers),
	};
	return tb_test_run("exec-helpers", tests, sizeof(tests) / sizeof(tests[0]));
}
