/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE /* accept4, pipe2, struct ucred */
#include "exec/exec.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux/procfs.h"
#include "exec/rt_proto.h"

#define RT_NAME "libtierbal-rt.so"

int tb_exec_rt_path(char *buf, size_t len, char *err, size_t elen)
{
	const char *env = getenv("TIERBAL_RT_LIB");
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		if (access(buf, R_OK) == 0)
			return 0;
		snprintf(err, elen, "TIERBAL_RT_LIB=%s: %s", env, strerror(errno));
		return -ENOENT;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, len, "%s/" RT_NAME, exe);
			if (access(buf, R_OK) == 0)
				return 0;
		}
	}
	snprintf(buf, len, "%s", TB_RT_INSTALL_PATH);
	if (access(buf, R_OK) == 0)
		return 0;
	snprintf(err, elen,
		 "cannot find the runtime " RT_NAME " (not next to the tierbal binary, not at %s); set "
		 "TIERBAL_RT_LIB to its path",
		 TB_RT_INSTALL_PATH);
	return -ENOENT;
}

static int lookup(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return access(out, X_OK) ? -errno : 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t l = strcspn(path, ":");
		snprintf(out, len, "%.*s/%s", (int)l, path, prog);
		if (l && access(out, X_OK) == 0)
			return 0;
		path += l + (path[l] == ':');
	}
	return -ENOENT;
}

bool tb_exec_is_static(const char *prog)
{
	char path[PATH_MAX];
	if (lookup(prog, path, sizeof(path)))
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	Elf64_Ehdr eh;
	bool elf = pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
		   eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr);
	bool interp = false;
	for (unsigned i = 0; elf && i < eh.e_phnum && !interp; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			break;
		interp = ph.p_type == PT_INTERP;
	}
	close(fd);
	return elf && !interp; /* scripts go through an interpreter that is dynamic, as a rule */
}

int tb_exec_listen_at(const char *name, char *err, size_t elen)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, elen, "runtime socket: %s", strerror(errno));
		return -errno;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t nl = strlen(name);
	if (nl >= sizeof(sa.sun_path)) {
		close(fd);
		snprintf(err, elen, "runtime socket %s: name too long", name);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, name, nl);
	sa.sun_path[0] = '\0';
	if (bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + nl)) ||
	    listen(fd, 64)) {
		snprintf(err, elen, "runtime socket %s: %s", name, strerror(errno));
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int tb_exec_listen(char *name, size_t len, char *err, size_t elen)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, len, "@tierbal-exec-%d-%lx", (int)getpid(), (unsigned long)(ts.tv_nsec ^ (ts.tv_sec << 20)));
	return tb_exec_listen_at(name, err, elen);
}

/* LD_PRELOAD takes colon- or space-separated names: ours goes first */
static void set_preload(const char *rtlib)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old) {
		setenv("LD_PRELOAD", rtlib, 1);
		return;
	}
	size_t n = strlen(rtlib) + strlen(old) + 2;
	char *v = malloc(n);
	if (!v)
		return;
	snprintf(v, n, "%s:%s", rtlib, old);
	setenv("LD_PRELOAD", v, 1);
	free(v);
}

int tb_exec_spawn(char *const argv[], const char *rtlib, const char *sockname, unsigned park_mb, const sigset_t *mask,
		  pid_t *pid, char *err, size_t len)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, len, "pipe: %s", strerror(errno));
		return -errno;
	}
	pid_t c = fork();
	if (c < 0) {
		snprintf(err, len, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (c == 0) {
		close(p[0]);
		/* the mask tierbal was started with; ignored signals stay ignored (nohup),
		 * handlers are reset by exec */
		sigprocmask(SIG_SETMASK, mask, NULL);
		if (rtlib)
			set_preload(rtlib);
		setenv(TB_RT_ENV_SOCKET, sockname, 1);
		if (park_mb) {
			char v[16];
			snprintf(v, sizeof(v), "%u", park_mb);
			setenv(TB_RT_ENV_PARK, v, 1);
		} else {
			unsetenv(TB_RT_ENV_PARK);
		}
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(p[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(p[1]);
	int e = 0;
	ssize_t r;
	while ((r = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (r == (ssize_t)sizeof(e)) {
		waitpid(c, NULL, 0);
		snprintf(err, len, "cannot run %s: %s", argv[0], strerror(e));
		return -e;
	}
	*pid = c;
	return 0;
}

int tb_exec_accept(int lfd, pid_t *pid, int *uffd, int *chan, struct tb_rt_hello *hello)
{
	*uffd = -1;
	*chan = -1;
	memset(hello, 0, sizeof(*hello));
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return -errno;
	/* the runtime sends right after connecting; a silent peer is not it */
	struct timeval tv = {1, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct tb_rt_hello h;
	struct iovec iov = {&h, sizeof(h)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	int rc = 0;
	ssize_t n = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
		rc = -errno;
	else if (n != (ssize_t)sizeof(h) || h.magic != TB_RT_MAGIC || h.version != TB_RT_VERSION ||
		 h.type != TB_RT_HELLO)
		rc = -EPROTO;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (n > 0 && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(uffd, CMSG_DATA(cm), sizeof(int));
	/* a hello says either "here is my userfaultfd" or why there is none */
	if (!rc && (h.err ? *uffd >= 0 : *uffd < 0))
		rc = -EPROTO;
	if (!rc && *uffd >= 0 && h.park_addr)
		*chan = c; /* the runtime's mover listens on it */
	else
		close(c);
	if (rc) {
		if (*uffd >= 0)
			close(*uffd);
		*uffd = -1;
		return rc;
	}
	*pid = cr.pid;
	*hello = h;
	return 0;
}

bool tb_exec_descends(pid_t pid, pid_t root)
{
	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		if (pid == root)
			return true;
		struct tb_proc_stat st;
		if (tb_proc_stat(pid, &st))
			return false;
		pid = st.ppid;
	}
	return false;
}
