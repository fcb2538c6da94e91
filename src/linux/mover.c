/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "linux/mover.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>

static void account(struct tb_mover_stats *st, int s, int node)
{
	if (s == node)
		st->moved++;
	else if (s == -EBUSY)
		st->busy++;
	else if (s == -ENOMEM)
		st->nomem++;
	else if (s == -ENOENT || s == -EFAULT)
		st->gone++;
	else
		st->other++;
}

/* move_pages in batches: to `node` (nodes filled with it), or, for node < 0,
 * only asking where the pages are. st, if given, counts calls and outcomes. */
static int batched(pid_t pid, void *const *pages, size_t n, int node, int *status, struct tb_mover_stats *st)
{
	int nodes[TB_MOVE_BATCH];
	for (size_t i = 0; i < TB_MOVE_BATCH; i++)
		nodes[i] = node;
	for (size_t done = 0; done < n;) {
		size_t k = n - done < TB_MOVE_BATCH ? n - done : TB_MOVE_BATCH;
		/* numa_move_pages wants non-const pointers but does not write them */
		long rc = numa_move_pages(pid, (unsigned long)k, (void **)(pages + done), node >= 0 ? nodes : NULL,
					  status + done, node >= 0 ? MPOL_MF_MOVE : 0);
		if (st)
			st->calls++;
		if (rc < 0)
			return -errno;
		if (st)
			for (size_t i = 0; i < k; i++)
				account(st, status[done + i], node);
		done += k;
	}
	return 0;
}

int tb_mover_move(pid_t pid, void *const *pages, size_t n, int node, int *status, struct tb_mover_stats *st)
{
	if (node < 0 || node > numa_max_node())
		return -EINVAL;
	return batched(pid, pages, n, node, status, st);
}

int tb_mover_query(pid_t pid, void *const *pages, size_t n, int *status)
{
	return batched(pid, pages, n, -1, status, NULL);
}

int tb_mover_count(pid_t pid, void *const *pages, size_t n, int node, size_t *count)
{
	int st[TB_MOVE_BATCH];
	*count = 0;
	for (size_t i = 0; i < n; i += TB_MOVE_BATCH) {
		size_t m = n - i < TB_MOVE_BATCH ? n - i : TB_MOVE_BATCH;
		int rc = batched(pid, pages + i, m, -1, st, NULL);
		if (rc)
			return rc;
		for (size_t k = 0; k < m; k++)
			*count += st[k] == node;
	}
	return 0;
}
