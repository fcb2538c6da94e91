/* The soft-dirty sampler: pagemap bit 55 says "written since clear_refs".
 *
 * One quirk is handled here: the kernel marks a whole mapping soft-dirty
 * (VM_SOFTDIRTY) when it is created or grows (an mmap beside it merging into
 * it, brk, mremap), and pagemap then calls every page of it written, written
 * or not, until the next clear. A program that maps a buffer beside its data
 * every second would make all that data look hot, even when the mapping is
 * back to its old bounds by the time the sampler looks. So each round the
 * sampler reads the flag itself (smaps' VmFlags) and reports nothing in a
 * flagged mapping for that round; the clear at the round's end resets it. */
#include "access.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"
#include "softdirty.h"

struct sd_ctx {
	pid_t pid;           /* whose flagged mappings these are, this round */
	bool fresh;
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
	((struct sd_ctx *)ctx)->fresh = false;
	return 0;
}

/* Reads pid's flagged mappings once per round (a round reads one process at a time). */
static void load_flagged(struct sd_ctx *c, pid_t pid)
{
	if (c->fresh && c->pid == pid)
		return;
	c->pid = pid;
	c->fresh = true;
	c->nflagged = 0;
	struct tb_vma *v;
	size_t n;
	if (tb_smaps_read(pid, &v, &n))
		return; /* gone: the round finds out */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].softdirty)
			v[k++] = v[i];
	free(c->flagged);
	c->flagged = v;
	c->nflagged = k;
}

static void sd_mark(void *ctx, pid_t pid, uintptr_t addr, size_t n, const uint64_t *pm, uint8_t *acc)
{
	struct sd_ctx *c = ctx;
	load_flagged(c, pid);
	size_t k = 0; /* the flagged mapping at or after the current page; pages come in address order */
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = addr + i * 4096;
		acc[i] = (pm[i] & TB_PM_SOFT_DIRTY) ? TB_ACC_READ | TB_ACC_WRITE : 0;
		while (k < c->nflagged && c->flagged[k].end <= a)
			k++;
		if (acc[i] && k < c->nflagged && c->flagged[k].start <= a)
			acc[i] = 0; /* every page of it reads dirty: unknown this round */
	}
}

static int sd_round_end(void *ctx, pid_t pid)
{
	((struct sd_ctx *)ctx)->fresh = false; /* the clear resets the flags */
	return tb_sd_clear(pid);
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
};

int tb_access_softdirty_open(struct tb_access *a, char *why, size_t len)
{
	int rc = tb_sd_probe();
	if (rc == -ENOTSUP) {
		snprintf(why, len, "soft-dirty: this kernel accepts clear_refs but never sets the soft-dirty "
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

int tb_access_open(struct tb_access *a, const char *choice, char *why, size_t len)
{
	if (!strcmp(choice, "softdirty"))
		return tb_access_softdirty_open(a, why, len);
	if (!strcmp(choice, "damon"))
		return tb_access_damon_open(a, "", why, len);
	if (!strcmp(choice, "none"))
		return tb_access_none_open(a, why, len);
	if (strcmp(choice, "auto")) {
		snprintf(why, len, "unknown sampler '%s' (auto, damon, softdirty or none)", choice);
		return -EINVAL;
	}
	char dwhy[384];
	if (tb_access_damon_open(a, "", dwhy, sizeof(dwhy)) == 0) {
		snprintf(why, len, "%s", dwhy);
		return 0;
	}
	char swhy[256];
	int rc = tb_access_softdirty_open(a, swhy, sizeof(swhy));
	snprintf(why, len, "%s; not DAMON: %s", swhy, dwhy);
	return rc;
}
