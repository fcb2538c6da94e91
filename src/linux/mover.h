/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Moves pages of a process between NUMA nodes with move_pages(2), in
 * batches, and turns the kernel's per-page status into counters. */
#ifndef TB_MOVER_H
#define TB_MOVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TB_MOVE_BATCH 1024 /* pages per move_pages call */

struct tb_mover_stats {
	uint64_t calls;
	uint64_t moved; /* the page is on the target node now (or already was) */
	uint64_t busy;  /* -EBUSY: locked, under writeback, pinned */
	uint64_t nomem; /* -ENOMEM: the target node has no room */
	uint64_t gone;  /* -ENOENT / -EFAULT: not present, or no longer mapped */
	uint64_t other; /* anything else (-EACCES for shared pages, ...) */
};

/* Moves n pages (page-aligned addresses) of pid (0 = this process) to node.
 * status[i] gets the page's node or a negative errno. Returns 0 when the
 * calls went through (see status and stats for each page), or a negative
 * errno for the whole call: -ESRCH (the process is gone), -EPERM (not
 * allowed), -EINVAL (bad node). */
int tb_mover_move(pid_t pid, void *const *pages, size_t n, int node, int *status, struct tb_mover_stats *st);

/* Where the pages are: status[i] = node or a negative errno (move_pages with nodes = NULL). */
int tb_mover_query(pid_t pid, void *const *pages, size_t n, int *status);
/* How many of the pages are on node (0 when the query fails, with its errno returned). */
int tb_mover_count(pid_t pid, void *const *pages, size_t n, int node, size_t *count);

#endif
