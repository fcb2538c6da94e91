/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daemon/loop.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "util/clock.h"

uint64_t tb_loop_now_ms(void)
{
	return tb_mono_ns() / 1000000u;
}

void tb_loop_init(struct tb_loop *l)
{
	memset(l, 0, sizeof(*l));
}

int tb_loop_watch(struct tb_loop *l, int fd, tb_loop_fd_fn *fn, void *ctx)
{
	if (l->nfds == TB_LOOP_MAX_FDS)
		return -ENOSPC;
	l->fds[l->nfds++] = (struct tb_loop_fd){fd, fn, ctx};
	return 0;
}

void tb_loop_unwatch(struct tb_loop *l, int fd)
{
	for (size_t i = 0; i < l->nfds; i++)
		if (l->fds[i].fd == fd) {
			memmove(&l->fds[i], &l->fds[i + 1], (l->nfds - i - 1) * sizeof(l->fds[0]));
			l->nfds--;
			return;
		}
}

int tb_loop_timer(struct tb_loop *l, uint64_t at_ms, tb_loop_timer_fn *fn, void *ctx)
{
	if (l->ntimers == TB_LOOP_MAX_TIMERS)
		return -ENOSPC;
	l->timers[l->ntimers++] = (struct tb_loop_timer){at_ms, fn, ctx};
	return 0;
}

int tb_loop_hook(struct tb_loop *l, tb_loop_hook_fn *fn, void *ctx)
{
	if (l->nhooks == TB_LOOP_MAX_HOOKS)
		return -ENOSPC;
	l->hooks[l->nhooks++] = (struct tb_loop_hook){fn, ctx};
	return 0;
}

void tb_loop_stop(struct tb_loop *l, const char *why, int rc)
{
	if (l->why_stop)
		return;
	l->why_stop = why;
	l->rc = rc;
}

/* The hooks and the timers that are due, in the order they were added. */
static void run_due(struct tb_loop *l)
{
	uint64_t now = tb_loop_now_ms();
	for (size_t i = 0; i < l->nhooks && !l->why_stop; i++)
		l->hooks[i].fn(l->hooks[i].ctx, now);
	for (size_t i = 0; i < l->ntimers && !l->why_stop; i++) {
		struct tb_loop_timer *t = &l->timers[i];
		if (now >= t->at_ms)
			t->at_ms = now + t->fn(t->ctx, now);
	}
}

static int next_timeout(const struct tb_loop *l)
{
	uint64_t now = tb_loop_now_ms(), wake = UINT64_MAX;
	for (size_t i = 0; i < l->ntimers; i++)
		if (l->timers[i].at_ms < wake)
			wake = l->timers[i].at_ms;
	if (wake == UINT64_MAX)
		return -1;
	return wake > now ? (int)(wake - now < (uint64_t)1 << 30 ? wake - now : (uint64_t)1 << 30) : 0;
}

/* The handlers of the descriptors poll found ready. A handler may watch or
 * unwatch any descriptor: each one's readiness is looked up by fd. */
static void run_ready(struct tb_loop *l, const struct pollfd *pf, size_t n)
{
	for (size_t i = 0; i < n && !l->why_stop; i++) {
		if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		for (size_t j = 0; j < l->nfds; j++)
			if (l->fds[j].fd == pf[i].fd) {
				l->fds[j].fn(l->fds[j].ctx, pf[i].fd, pf[i].revents);
				break;
			}
	}
}

int tb_loop_run(struct tb_loop *l, const char **why)
{
	while (!l->why_stop) {
		run_due(l);
		if (l->why_stop)
			break;
		struct pollfd pf[TB_LOOP_MAX_FDS];
		size_t n = l->nfds;
		for (size_t i = 0; i < n; i++)
			pf[i] = (struct pollfd){l->fds[i].fd, POLLIN, 0};
		if (poll(pf, n, next_timeout(l)) < 0 && errno != EINTR) {
			fprintf(stderr, "tierbal: poll: %s\n", strerror(errno));
			tb_loop_stop(l, "poll failed", 1);
			break;
		}
		run_ready(l, pf, n);
	}
	*why = l->why_stop;
	return l->rc;
}
