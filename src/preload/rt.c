/* libtierbal-rt.so: the runtime `tierbal exec` injects with LD_PRELOAD.
 *
 * Its only job is to hand a userfaultfd of this process's memory to the
 * tierbal exec process that started it, which then write-protects scan
 * windows and reads the faults (see src/daemon/uffd.c). A userfaultfd works
 * on the memory of the process that created it, so it must be made here;
 * everything else happens outside: no thread, no signal handler, no mapping
 * is added to the program. It runs once at start (after every exec) and in
 * the child of every fork(), and gives up silently when anything fails, so
 * the program runs as it would without tierbal. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "rt_proto.h"

static void send_fd(int sock, int fd, int32_t err)
{
	struct tb_rt_hello h = {.magic = TB_RT_MAGIC, .version = TB_RT_VERSION, .err = err};
	struct iovec iov = {&h, sizeof(h)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(sock, &m, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* Async-signal-safe (it runs in the child of fork): system calls only. */
static void hand_over(void)
{
	const char *name = getenv(TB_RT_ENV_SOCKET);
	if (!name || !*name || strlen(name) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return;
	int saved = errno; /* the program must not see ours */
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		errno = saved;
		return;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	memcpy(sa.sun_path, name, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* an abstract name: nothing in the file system */
	if (connect(sock, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) == 0) {
		/* no UFFD_USER_MODE_ONLY: writes by the kernel (read(2) into a
		 * protected buffer) must wait for tierbal too, not fail with EFAULT */
		int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		int32_t err = 0;
		if (uffd >= 0) {
			struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP};
			if (ioctl(uffd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
				err = errno ? errno : EOPNOTSUPP;
				close(uffd);
				uffd = -1;
			}
		} else {
			err = errno;
		}
		send_fd(sock, uffd, err);
		/* tierbal keeps the only copy: if it dies, the kernel drops the
		 * registrations and nothing here waits for a handler */
		if (uffd >= 0)
			close(uffd);
	}
	close(sock);
	errno = saved;
}

__attribute__((constructor)) static void tb_rt_init(void)
{
	hand_over();
	pthread_atfork(NULL, NULL, hand_over);
}
