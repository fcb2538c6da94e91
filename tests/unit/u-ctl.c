/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control socket: requests and answers, and its refusals. */
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

static size_t fake_report(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	return (size_t)snprintf(buf, len, "pgpromote_success 7\nsampler softdirty\n");
}

static void wait_readable(int fd)
{
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	assert_true(select(fd + 1, &rd, NULL, NULL, NULL) == 1);
}

/* Accepts the next client and answers it once its request is complete. */
static void serve_one(int lfd)
{
	wait_readable(lfd);
	int fd = tb_ctl_accept(lfd);
	assert_true(fd >= 0);
	struct tb_ctl_client cc = {.fd = fd};
	do
		wait_readable(fd); /* the request, or the rest of its line */
	while (!tb_ctl_handle(&cc, fake_report, NULL));
}

static void test_ctl(void **state)
{
	(void)state;
	char path[64], err[256];
	snprintf(path, sizeof(path), "/tmp/tb-ctl-%d.sock", (int)getpid());
	struct tb_ctl_sock cs, cs2;
	int lfd = tb_ctl_listen(&cs, path, err, sizeof(err));
	assert_true(lfd >= 0);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(tb_ctl_listen(&cs2, path, err, sizeof(err)), -EADDRINUSE);
	assert_non_null(strstr(err, "another tierbal daemon"));
	int probe = tb_ctl_accept(lfd); /* that check connected once: its hung-up connection is first in line */
	assert_true(probe >= 0);
	struct tb_ctl_client pc = {.fd = probe};
	assert_int_equal(tb_ctl_handle(&pc, fake_report, NULL), 1);
	for (int round = 0; round < 2; round++) {
		pid_t c = fork();
		if (c == 0) {
			char *ans = NULL, e[256];
			int rc = tb_ctl_request(path, round ? "bogus" : "stat", &ans, e, sizeof(e));
			int ok = round ? rc == -EPERM && strstr(e, "unknown request")
				       : rc == 0 && !strcmp(ans, "pgpromote_success 7\nsampler softdirty\n");
			if (!ok)
				fprintf(stderr, "round %d: rc %d, err '%s', answer '%s'\n", round, rc, e,
					ans ? ans : "");
			_exit(ok ? 0 : 1);
		}
		/* the client's connection waits in the backlog until served */
		serve_one(lfd);
		int st;
		waitpid(c, &st, 0);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	close(lfd);
	/* a stale socket (nobody listening) is replaced, and removed at the end */
	lfd = tb_ctl_listen(&cs, path, err, sizeof(err));
	assert_true(lfd >= 0);
	/* a request ended by the end of the input, without a newline, is answered */
	pid_t c = fork();
	if (c == 0) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) || write(fd, "stat", 4) != 4 ||
		    shutdown(fd, SHUT_WR))
			_exit(2);
		char buf[128];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		_exit(n > 0 && !strncmp(buf, "pgpromote_success 7", 19) ? 0 : 1);
	}
	serve_one(lfd);
	int st;
	waitpid(c, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tb_ctl_unlisten(&cs);
	assert_int_equal(lstat(path, &sb), -1);
	char *ans;
	assert_int_equal(tb_ctl_request(path, "stat", &ans, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no tierbal daemon"));

	/* anything at the path that is not a stale socket is refused and left as it was */
	FILE *f = fopen(path, "w");
	fputs("IMPORTANT\n", f);
	fclose(f);
	assert_int_equal(tb_ctl_listen(&cs, path, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "not a socket"));
	char link[80];
	snprintf(link, sizeof(link), "%s.link", path);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(tb_ctl_listen(&cs, link, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(lstat(link, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	unlink(link);
	char text[32] = "";
	f = fopen(path, "r");
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "IMPORTANT\n");
	unlink(path);

	/* a file that replaced the socket while the daemon ran stays at the end */
	lfd = tb_ctl_listen(&cs, path, err, sizeof(err));
	assert_true(lfd >= 0);
	unlink(path);
	f = fopen(path, "w");
	fputs("IMPORTANT\n", f);
	fclose(f);
	tb_ctl_unlisten(&cs);
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctl),
	};
	return tb_test_run("ctl", tests, sizeof(tests) / sizeof(tests[0]));
}
