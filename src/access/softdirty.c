/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The soft-dirty sampler: pagemap bit 55 says "written since clear_refs".
 *
 * One quirk is handled here: the kernel marks a whole mapping soft-dirty
 * (VM_SOFTDIRTY) when it is created or grows (an mmap beside it merging into
 * it, brk, mremap), and pagemap then calls every page of it written, written
 * or not, until the next clear. A program that maps a buffer beside its data
 * every second would make all that data look hot, even when the mapping is
 * back to its old bounds by the time the sampler looks. So at the end of each
 * process's round, after its pagemap was read and before the clear, the
 * sampler reads the flag itself (smaps' VmFlags): what it reported in a
 * flagged mapping is unreliable for that round. Read after the pagemap, the
 * flag covers every page the pagemap read saw dirty because of it. */
#include "access/access.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linux/maps.h"
#include "linux/softdirty.h"

struct sd_ctx {
	pid_t pid;              /* whose flagged mappings these are (the last round_end) */
	struct tb_vma *flagged; /* sorted */
	size_t nflagged;
};

static int sd_attach(void *ctx, pid_t pid)
{
	(void)ctx;
	return tb_sd_clear(pid); /* what was written before tierbal came is not a sign of heat */
}

static void sd_detach(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}

static int sd_round_begin(void *ctx)
{
	(void)ctx;
	return 0;
}

static void sd_mark(void *ctx, pid_t pid, uintptr_t addr, size_t n, const uint64_t *pm, uint8_t *acc)
{
	(void)ctx;
	(void)pid;
	(void)addr;
	for (size_t i = 0; i < n; i++)
		acc[i] = (pm[i] & TB_PM_SOFT_DIRTY) ? TB_ACC_READ | TB_ACC_WRITE : 0;
}

static int sd_round_end(void *ctx, pid_t pid)
{
	struct sd_ctx *c = ctx;
	struct tb_vma *v;
	size_t n;
	c->pid = pid;
	c->nflagged = 0;
	if (tb_smaps_read(pid, &v, &n) == 0) { /* failing: gone, and the clear says so */
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (v[i].softdirty)
				v[k++] = v[i];
		free(c->flagged);
		c->flagged = v;
		c->nflagged = k;
	}
	return tb_sd_clear(pid);
}

static bool sd_unreliable(void *ctx, pid_t pid, uintptr_t addr, uintptr_t *end)
{
	const struct sd_ctx *c = ctx;
	*end = UINTPTR_MAX;
	if (pid != c->pid)
		return false;
	size_t lo = 0, hi = c->nflagged; /* the first flagged mapping ending after addr */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->flagged[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == c->nflagged)
		return false;
	if (c->flagged[lo].start > addr) {
		*end = c->flagged[lo].start;
		return false;
	}
	*end = c->flagged[lo].end;
	return true;
}

static void sd_destroy(void *ctx)
{
	struct sd_ctx *c = ctx;
	if (c)
		free(c->flagged);
	free(c);
}

static const struct tb_access_ops softdirty_ops = {
	.name = "softdirty",
	.attach = sd_attach,
	.detach = sd_detach,
	.round_begin = sd_round_begin,
	.mark = sd_mark,
	.round_end = sd_round_end,
	.destroy = sd_destroy,
	.unreliable = sd_unreliable,
};

int tb_access_softdirty_open(struct tb_access *a, char *why, size_t len)
{
	int rc = tb_sd_probe();
	if (rc == -ENOTSUP) {
		snprintf(why, len,
			 "soft-dirty: this kernel accepts clear_refs but never sets the soft-dirty "
			 "bit (CONFIG_MEM_SOFT_DIRTY off or unsupported here)");
		return rc;
	}
	if (rc) {
		snprintf(why, len, "soft-dirty: probe failed: %s", strerror(-rc));
		return rc;
	}
	struct sd_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, len, "soft-dirty: out of memory");
		return -ENOMEM;
	}
	a->ops = &softdirty_ops;
	a->ctx = c;
	snprintf(why, len, "soft-dirty (clear_refs + pagemap): sees writes only");
	return 0;
}
