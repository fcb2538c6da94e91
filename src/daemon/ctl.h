/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control socket: a running daemon answers "stat" with its counters.
 * A unix socket with mode 0600, owned by root, and every peer's uid checked:
 * only root may read (and, later, steer) the daemon. */
#ifndef TB_CTL_H
#define TB_CTL_H

#include <stddef.h>
#include <sys/types.h>

/* A listening control socket, and the file it made. */
struct tb_ctl_sock {
	int fd; /* -1: none */
	dev_t dev;
	ino_t ino;
	char path[108];
};

/* Creates and listens on path; -EADDRINUSE if a daemon already answers
 * there. Only a stale socket (nobody answers) is replaced: a symbolic link
 * or any other file at path is refused (-EEXIST), never removed. Returns
 * the fd or -errno. */
int tb_ctl_listen(struct tb_ctl_sock *s, const char *path, char *err, size_t len);
/* Closes it, and removes the socket file if it is still the one listen made. */
void tb_ctl_unlisten(struct tb_ctl_sock *s);
/* Accepts one client: returns its non-blocking fd, or -1 (none waiting, or
 * a peer that is not root: it is told so and hung up on). */
int tb_ctl_accept(int lfd);
/* Reads what a client sent (kept in c between calls); once its request line is complete, answers from
 * report(ctx, buf, len) and closes. Returns 1 when the client is done with
 * (answered or gone), 0 while its request is still incomplete. Never blocks. */
struct tb_ctl_client {
	int fd;
	size_t n;
	char req[64];
	unsigned long long since_ms; /* when it connected, for the caller's timeout */
};
int tb_ctl_handle(struct tb_ctl_client *c, size_t (*report)(void *ctx, char *buf, size_t len), void *ctx);
/* The daemon's side in its event loop: the listening socket and up to
 * TB_CTL_MAX_CLIENTS clients, each answered once its request is in, and
 * hung up on after TB_CTL_CLIENT_TIMEOUT_MS if it has said nothing. */
#define TB_CTL_MAX_CLIENTS 16
#define TB_CTL_CLIENT_TIMEOUT_MS 2000
struct tb_loop;
struct tb_ctl_server {
	struct tb_loop *loop;
	int lfd;
	size_t (*report)(void *ctx, char *buf, size_t len);
	void *ctx;
	struct tb_ctl_client cl[TB_CTL_MAX_CLIENTS];
	size_t ncl;
};
/* 0, or -ENOSPC when the loop has no room left. */
int tb_ctl_serve(struct tb_ctl_server *s, struct tb_loop *loop, int lfd,
		 size_t (*report)(void *ctx, char *buf, size_t len), void *ctx);
/* Hangs up on the clients still connected. */
void tb_ctl_serve_end(struct tb_ctl_server *s);
/* Client side: sends request, reads the whole answer into a malloc'd string. */
int tb_ctl_request(const char *path, const char *request, char **answer, char *err, size_t len);

#endif
