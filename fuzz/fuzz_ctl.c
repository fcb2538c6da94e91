/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: what arrives on tierbal's sockets. First byte even: a
 * client of the control socket (tb_ctl_handle, fed through a socketpair in
 * pieces, then end of file); odd: a message on the runtime socket of
 * tierbal exec (tb_exec_accept), with a file descriptor attached if bit 1 is set. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/ctl.h"
#include "exec/exec.h"
#include "exec/rt_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t report(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	return (size_t)snprintf(buf, len, "pgpromote_success 1\n");
}

static void control(const uint8_t *data, size_t size)
{
	int sv[2];
	if (size > 4096)
		size = 4096;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		return;
	if (size && write(sv[1], data, size) != (ssize_t)size)
		__builtin_trap();
	shutdown(sv[1], SHUT_WR);
	struct tb_ctl_client c = {.fd = sv[0]};
	/* every byte is there and then end of file: the handler must finish */
	size_t calls = 0;
	while (!tb_ctl_handle(&c, report, NULL))
		if (++calls > size + 2)
			__builtin_trap();
	char buf[256];
	while (read(sv[1], buf, sizeof(buf)) > 0)
		;
	close(sv[1]);
}

static void runtime_hello(const uint8_t *data, size_t size, int with_fd)
{
	static int lfd = -1;
	static struct sockaddr_un sa;
	static socklen_t sl;
	if (lfd < 0) {
		sa.sun_family = AF_UNIX;
		snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "tierbal-fuzz-%d", (int)getpid());
		sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
		lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sl) || listen(lfd, 4))
			__builtin_trap();
	}
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sl))
		__builtin_trap();
	if (size > 256)
		size = 256;
	struct iovec iov = {(void *)data, size};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	int fd = with_fd ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	sendmsg(c, &m, 0);
	if (fd >= 0)
		close(fd);
	pid_t pid;
	int uffd;
	struct tb_rt_hello h;
	int chan;
	int rc = tb_exec_accept(lfd, &pid, &uffd, &chan, &h);
	if (chan >= 0)
		close(chan);
	/* accepted: a descriptor to manage, or the runtime's reason for having none */
	if (rc == 0 && uffd < 0 && h.err == 0)
		__builtin_trap();
	if (rc != 0 && uffd >= 0)
		__builtin_trap();
	if (uffd >= 0)
		close(uffd);
	close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		runtime_hello(data + 1, size - 1, data[0] & 2);
	else
		control(data + 1, size - 1);
	return 0;
}
