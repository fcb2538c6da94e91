/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The runtime's mover: a thread in the program that moves its pages for
 * parking (UFFDIO_MOVE works only from inside the process), driven over a socket. */
#include "exec/uffd_internal.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/rt_proto.h"

#define MOVER_TIMEOUT_MS 5000 /* a mover this slow is stopped (SIGSTOP), or its process is going */
#define MOVER_CHECK_MS 20     /* how often a wait for the mover checks that its thread still exists */

/* Waits a little for the mover's answer. -ESRCH: the mover's thread is gone
 * while its process goes on, which happens in exec: the kernel ends the
 * other threads first, then may still read the old memory (the robust futex
 * list) and wait on a parked page that only a copy can bring back now.
 * -ETIMEDOUT after MOVER_TIMEOUT_MS. */
static int mover_wait(struct proc *p, int *waited)
{
	struct pollfd pf = {.fd = p->chan, .events = POLLIN};
	if (poll(&pf, 1, MOVER_CHECK_MS) > 0)
		return 0;
	*waited += MOVER_CHECK_MS;
	if (p->mover_tid > 0 && syscall(SYS_tgkill, p->pid, p->mover_tid, 0) && errno == ESRCH) {
		p->mover_gone = true;
		p->parking = false;
		return -ESRCH;
	}
	if (*waited < MOVER_TIMEOUT_MS)
		return 0;
	p->stuck = true;
	return -ETIMEDOUT;
}

/* One command to the process's mover (n entries), and its answer. A late
 * answer to an earlier command is skipped: what that command did is
 * covered, as the table assumes the worst (pages away) until a move back
 * is answered. */
static int mover_rpc(struct proc *p, uint32_t op, const struct tb_rt_move *e, size_t n, struct tb_rt_result *res)
{
	if (p->chan < 0)
		return -ENOTCONN;
	if (p->mover_gone)
		return -ESRCH;
	struct {
		struct tb_rt_cmd h;
		struct tb_rt_move e[TB_RT_MAX_MOVES];
	} c;
	c.h = (struct tb_rt_cmd){.op = op, .seq = ++p->seq, .count = (uint32_t)n};
	memcpy(c.e, e, n * sizeof(*e));
	size_t len = sizeof(c.h) + n * sizeof(*e);
	if (send(p->chan, &c, len, MSG_NOSIGNAL) != (ssize_t)len) {
		int e = errno ? errno : EIO;
		if (e == EPIPE || e == ECONNRESET) { /* gone, as below */
			close(p->chan);
			p->chan = -1;
			p->parking = false;
			return -ENOTCONN;
		}
		return -e;
	}
	struct {
		struct tb_rt_reply h;
		struct tb_rt_result e[TB_RT_MAX_MOVES];
	} r;
	for (int waited = 0;;) {
		ssize_t got = recv(p->chan, &r, sizeof(r), MSG_DONTWAIT);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = mover_wait(p, &waited);
			if (rc)
				return rc;
			continue;
		}
		if (got < (ssize_t)sizeof(r.h)) {
			/* the process exited or ran exec: its mover put every page back
			 * before it went, or the pages went with the memory */
			close(p->chan);
			p->chan = -1;
			p->parking = false;
			return -ENOTCONN;
		}
		if (r.h.seq == c.h.seq && r.h.count == n && (size_t)got == sizeof(r.h) + n * sizeof(*res)) {
			memcpy(res, r.e, n * sizeof(*res));
			p->stuck = false;
			return 0;
		}
	}
}

int tb_uffd_mover_move_many(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode)
{
	struct tb_rt_move e[TB_RT_MAX_MOVES];
	struct tb_rt_result r[TB_RT_MAX_MOVES] = {{0}};
	for (size_t done = 0; done < n;) {
		size_t k = n - done < TB_RT_MAX_MOVES ? n - done : TB_RT_MAX_MOVES;
		for (size_t i = 0; i < k; i++)
			e[i] = (struct tb_rt_move){
				.dst = m[done + i].dst, .src = m[done + i].src, .len = m[done + i].len, .mode = mode};
		int rc = mover_rpc(ctx, TB_RT_CMD_MOVE, e, k, r);
		if (rc)
			return rc;
		for (size_t i = 0; i < k; i++) {
			m[done + i].rc = -r[i].err;
			m[done + i].moved = r[i].moved;
		}
		done += k;
	}
	return 0;
}

static int mover_move(void *ctx, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved)
{
	struct tb_park_move m = {.dst = dst, .src = src, .len = len};
	*moved = 0;
	int rc = tb_uffd_mover_move_many(ctx, &m, 1, mode);
	if (rc)
		return rc;
	*moved = m.moved;
	return m.rc;
}

static void mover_discard(void *ctx, uintptr_t addr, size_t len)
{
	struct tb_rt_move e = {.dst = addr, .len = len};
	struct tb_rt_result r;
	mover_rpc(ctx, TB_RT_CMD_DISCARD, &e, 1, &r);
}

const struct tb_park_ops tb_uffd_mover_ops = {
	.move = mover_move, .move_many = tb_uffd_mover_move_many, .discard = mover_discard};
