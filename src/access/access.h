/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Access samplers of the live daemon: what tells it that a page was used.
 * Each one turns its kernel interface into the same per-page answer, so the
 * engine sees one kind of event whatever the sampler. */
#ifndef TB_ACCESS_H
#define TB_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TB_ACC_READ 1u  /* accessed (read or write, as far as the sampler can tell) */
#define TB_ACC_WRITE 2u /* written */

struct tb_access_ops {
	const char *name;
	/* Starts or stops watching a process. */
	int (*attach)(void *ctx, pid_t pid);
	void (*detach)(void *ctx, pid_t pid);
	/* Once per round, before any process is read. */
	int (*round_begin)(void *ctx);
	/* For n pages from addr, with their pagemap entries: what was accessed
	 * since the process's previous round (acc[i] = TB_ACC_* bits). */
	void (*mark)(void *ctx, pid_t pid, uintptr_t addr, size_t n, const uint64_t *pagemap, uint8_t *acc);
	/* After a process has been read. */
	int (*round_end)(void *ctx, pid_t pid);
	void (*destroy)(void *ctx);
	/* After round_end: true if what mark said about addr this round must be
	 * disregarded, and through *end; NULL if a sampler is always to be believed. */
	bool (*unreliable)(void *ctx, pid_t pid, uintptr_t addr, uintptr_t *end);
};

struct tb_access {
	const struct tb_access_ops *ops;
	void *ctx;
};

/* Picks a sampler: "damon", "softdirty" or "auto" (DAMON where the kernel
 * offers it, soft-dirty otherwise). why gets the reason for the choice, or
 * for the refusal when the asked one cannot work here. */
int tb_access_open(struct tb_access *a, const char *choice, char *why, size_t len);

int tb_access_softdirty_open(struct tb_access *a, char *why, size_t len);
/* Sees nothing: for tierbal exec where the kernel offers no sampler, so that
 * the userfaultfd hint faults are the only signal. */
int tb_access_none_open(struct tb_access *a, char *why, size_t len);
int tb_access_damon_open(struct tb_access *a, const char *sysfs_root, char *why, size_t len);

#endif
