/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE /* accept4, struct ucred */
#include "daemon/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/loop.h"

#define REPLY_MAX 65536

static int fill_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	memcpy(a->sun_path, path, strlen(path) + 1);
	return 0;
}

/* What is at path now: 0 nothing, 1 a socket nobody answers (stale), or a
 * negative errno with err saying why tierbal leaves it alone. */
static int probe_path(const char *path, const struct sockaddr_un *a, char *err, size_t len)
{
	struct stat sb;
	if (lstat(path, &sb)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, len, "control socket %s: %s", path, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(sb.st_mode)) {
		snprintf(err, len,
			 "control socket %s: a symbolic link is there; tierbal neither follows nor replaces "
			 "links: give the socket's own path",
			 path);
		return -EEXIST;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		snprintf(err, len,
			 "control socket %s: a file that is not a socket is there; tierbal removes only a "
			 "stale socket: choose another path, or remove the file yourself",
			 path);
		return -EEXIST;
	}
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0) {
		snprintf(err, len, "control socket %s: %s", path, strerror(errno));
		return -errno;
	}
	int rc = connect(probe, (const struct sockaddr *)a, sizeof(*a)) ? errno : 0;
	close(probe);
	if (!rc) {
		snprintf(err, len,
			 "control socket %s: another tierbal daemon is running there; stop it or set a "
			 "different socket",
			 path);
		return -EADDRINUSE;
	}
	if (rc != ECONNREFUSED) {
		snprintf(err, len, "control socket %s: cannot tell whether a daemon answers there (%s): left alone",
			 path, strerror(rc));
		return -rc;
	}
	return 1;
}

int tb_ctl_listen(struct tb_ctl_sock *s, const char *path, char *err, size_t len)
{
	struct sockaddr_un a;
	*s = (struct tb_ctl_sock){.fd = -1};
	if (fill_addr(&a, path)) {
		snprintf(err, len, "control socket %s: path too long (at most %zu bytes)", path,
			 sizeof(a.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	int rc = probe_path(path, &a, err, len);
	if (rc < 0)
		return rc;
	if (rc == 1 && unlink(path) && errno != ENOENT) { /* stale: left by a daemon that was killed */
		snprintf(err, len, "control socket %s: cannot remove the stale socket: %s", path, strerror(errno));
		return -errno;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, len, "control socket: %s", strerror(errno));
		return -errno;
	}
	mode_t old = umask(0177); /* the socket is born 0600: no window where others may connect */
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	bool bound = rc == 0;
	struct stat sb;
	if (rc || listen(fd, 16) || lstat(path, &sb)) {
		rc = -errno;
		/* EADDRINUSE here: something appeared at the path meanwhile, and stays */
		snprintf(err, len, "control socket %s: %s", path, strerror(-rc));
		/* bound, then failed: the socket file is this daemon's, and goes */
		if (bound && !lstat(path, &sb) && S_ISSOCK(sb.st_mode))
			unlink(path);
		close(fd);
		return rc;
	}
	*s = (struct tb_ctl_sock){.fd = fd, .dev = sb.st_dev, .ino = sb.st_ino};
	memcpy(s->path, path, strlen(path) + 1);
	return fd;
}

void tb_ctl_unlisten(struct tb_ctl_sock *s)
{
	if (s->fd < 0)
		return;
	close(s->fd);
	s->fd = -1;
	struct stat sb;
	/* only the socket this daemon made: another one may have replaced it */
	if (!lstat(s->path, &sb) && S_ISSOCK(sb.st_mode) && sb.st_dev == s->dev && sb.st_ino == s->ino)
		unlink(s->path);
}

static void reply(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

int tb_ctl_accept(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return -1;
	struct timeval tv = {0, 100000}; /* a reader that stalls does not hold the daemon */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) || cred.uid != 0) {
		static const char denied[] = "error: permission denied: only root may talk to tierbal\n";
		reply(fd, denied, sizeof(denied) - 1);
		close(fd);
		return -1;
	}
	return fd;
}

int tb_ctl_handle(struct tb_ctl_client *c, size_t (*report)(void *ctx, char *buf, size_t len), void *ctx)
{
	ssize_t got = read(c->fd, c->req + c->n, sizeof(c->req) - 1 - c->n);
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (got < 0 || (got == 0 && !c->n)) {
		close(c->fd);
		return 1;
	}
	c->n += (size_t)got;
	c->req[c->n] = '\0';
	/* the end of the input ends the line too: a client may shut down its side without a newline */
	if (got && !memchr(c->req, '\n', c->n) && c->n < sizeof(c->req) - 1)
		return 0; /* the line is not complete yet */
	c->req[strcspn(c->req, "\r\n")] = '\0';
	if (!strcmp(c->req, "stat")) {
		char *buf = malloc(REPLY_MAX);
		if (buf) {
			size_t n = report(ctx, buf, REPLY_MAX);
			/* a blocking write, bounded by SO_SNDTIMEO: a client that does not read cannot stall us */
			int fl = fcntl(c->fd, F_GETFL);
			fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
			reply(c->fd, buf, n);
			free(buf);
		}
	} else {
		static const char unknown[] = "error: unknown request (known: stat)\n";
		reply(c->fd, unknown, sizeof(unknown) - 1);
	}
	close(c->fd);
	return 1;
}

static void drop_client(struct tb_ctl_server *s, size_t i)
{
	tb_loop_unwatch(s->loop, s->cl[i].fd);
	s->cl[i] = s->cl[--s->ncl];
}

static void on_client(void *ctx, int fd, short revents)
{
	struct tb_ctl_server *s = ctx;
	(void)revents;
	for (size_t i = 0; i < s->ncl; i++)
		if (s->cl[i].fd == fd) {
			if (tb_ctl_handle(&s->cl[i], s->report, s->ctx))
				drop_client(s, i); /* tb_ctl_handle closed it */
			return;
		}
}

static void on_listen(void *ctx, int fd, short revents)
{
	struct tb_ctl_server *s = ctx;
	if (!(revents & POLLIN))
		return;
	int cfd = tb_ctl_accept(fd);
	if (cfd < 0)
		return;
	if (s->ncl == TB_CTL_MAX_CLIENTS) { /* the oldest waits longest: it goes first */
		int old = s->cl[0].fd;
		drop_client(s, 0);
		close(old);
	}
	if (tb_loop_watch(s->loop, cfd, on_client, s)) {
		close(cfd);
		return;
	}
	s->cl[s->ncl++] = (struct tb_ctl_client){.fd = cfd, .since_ms = tb_loop_now_ms()};
}

/* connected and said nothing */
static void drop_silent(void *ctx, uint64_t now)
{
	struct tb_ctl_server *s = ctx;
	for (size_t i = s->ncl; i-- > 0;)
		if (now - s->cl[i].since_ms > TB_CTL_CLIENT_TIMEOUT_MS) {
			int fd = s->cl[i].fd;
			drop_client(s, i);
			close(fd);
		}
}

int tb_ctl_serve(struct tb_ctl_server *s, struct tb_loop *loop, int lfd,
		 size_t (*report)(void *ctx, char *buf, size_t len), void *ctx)
{
	*s = (struct tb_ctl_server){.loop = loop, .lfd = lfd, .report = report, .ctx = ctx};
	if (lfd < 0)
		return 0;
	int rc = tb_loop_watch(loop, lfd, on_listen, s);
	return rc ? rc : tb_loop_hook(loop, drop_silent, s);
}

void tb_ctl_serve_end(struct tb_ctl_server *s)
{
	while (s->ncl) {
		int fd = s->cl[0].fd;
		drop_client(s, 0);
		close(fd);
	}
}

int tb_ctl_request(const char *path, const char *request, char **answer, char *err, size_t len)
{
	struct sockaddr_un a;
	*answer = NULL;
	if (fill_addr(&a, path)) {
		snprintf(err, len, "%s: path too long for a unix socket", path);
		return -ENAMETOOLONG;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, len, "socket: %s", strerror(errno));
		return -errno;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;
		if (e == ENOENT || e == ECONNREFUSED)
			snprintf(err, len, "no tierbal daemon at %s (start one with 'tierbal run')", path);
		else if (e == EACCES)
			snprintf(err, len, "%s: permission denied: only root may read the daemon's counters", path);
		else
			snprintf(err, len, "%s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	reply(fd, request, strlen(request));
	reply(fd, "\n", 1);
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n + 1 == cap) {
			char *nb = cap < (size_t)REPLY_MAX * 2 ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t got = read(fd, buf + n, cap - n - 1);
		if (got < 0) {
			snprintf(err, len, "%s: no answer from the daemon: %s", path, strerror(errno));
			free(buf);
			close(fd);
			return -EIO;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (!buf) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	buf[n] = '\0';
	if (!strncmp(buf, "error: ", 7)) {
		snprintf(err, len, "%s: %s", path, buf + 7);
		err[strcspn(err, "\n")] = '\0';
		free(buf);
		return -EPERM;
	}
	*answer = buf;
	return 0;
}
