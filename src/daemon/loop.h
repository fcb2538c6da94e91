/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's event loop: descriptors with their handlers, timers that say
 * when they want to run next, and hooks run at the top of every turn. One
 * thread; handlers run to completion; nothing here knows what the events mean. */
#ifndef TB_LOOP_H
#define TB_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_LOOP_MAX_FDS 32
#define TB_LOOP_MAX_TIMERS 8
#define TB_LOOP_MAX_HOOKS 4

/* revents as poll(2) gives them */
typedef void tb_loop_fd_fn(void *ctx, int fd, short revents);
/* Runs at or after its time; returns the milliseconds until its next run. */
typedef uint64_t tb_loop_timer_fn(void *ctx, uint64_t now_ms);
/* Runs at the top of each turn, before the timers. */
typedef void tb_loop_hook_fn(void *ctx, uint64_t now_ms);

struct tb_loop_fd {
	int fd;
	tb_loop_fd_fn *fn;
	void *ctx;
};

struct tb_loop_timer {
	uint64_t at_ms;
	tb_loop_timer_fn *fn;
	void *ctx;
};

struct tb_loop_hook {
	tb_loop_hook_fn *fn;
	void *ctx;
};

struct tb_loop {
	struct tb_loop_fd fds[TB_LOOP_MAX_FDS];
	size_t nfds;
	struct tb_loop_timer timers[TB_LOOP_MAX_TIMERS];
	size_t ntimers;
	struct tb_loop_hook hooks[TB_LOOP_MAX_HOOKS];
	size_t nhooks;
	const char *why_stop; /* non-NULL: the loop ends after this turn */
	int rc;
};

void tb_loop_init(struct tb_loop *l);
/* Calls fn when fd is readable (or hung up, or in error). -ENOSPC when full. */
int tb_loop_watch(struct tb_loop *l, int fd, tb_loop_fd_fn *fn, void *ctx);
/* Forgets fd; allowed from any handler, for any fd. */
void tb_loop_unwatch(struct tb_loop *l, int fd);
/* First run at at_ms (tb_mono_ns based milliseconds). -ENOSPC when full. */
int tb_loop_timer(struct tb_loop *l, uint64_t at_ms, tb_loop_timer_fn *fn, void *ctx);
int tb_loop_hook(struct tb_loop *l, tb_loop_hook_fn *fn, void *ctx);
/* Ends the loop after the present turn, with why and the exit code rc (the
 * first call wins). */
void tb_loop_stop(struct tb_loop *l, const char *why, int rc);
/* Turns until a handler stops it; returns its rc, *why its reason. A failed
 * poll stops the loop with rc 1. */
int tb_loop_run(struct tb_loop *l, const char **why);
uint64_t tb_loop_now_ms(void);

#endif
