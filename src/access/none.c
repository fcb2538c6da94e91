/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sampler that sees nothing (see access.h). */
#include "access/access.h"

#include <stdio.h>
#include <string.h>

static int none_attach(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	return 0;
}

static void none_detach(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}

static int none_round_begin(void *ctx)
{
	(void)ctx;
	return 0;
}

static void none_mark(void *ctx, pid_t pid, uintptr_t addr, size_t n, const uint64_t *pm, uint8_t *acc)
{
	(void)ctx;
	(void)pid;
	(void)addr;
	(void)pm;
	memset(acc, 0, n);
}

static int none_round_end(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	return 0;
}

static void none_destroy(void *ctx)
{
	(void)ctx;
}

static const struct tb_access_ops none_ops = {
	.name = "none",
	.attach = none_attach,
	.detach = none_detach,
	.round_begin = none_round_begin,
	.mark = none_mark,
	.round_end = none_round_end,
	.destroy = none_destroy,
};

int tb_access_none_open(struct tb_access *a, char *why, size_t len)
{
	a->ops = &none_ops;
	a->ctx = NULL;
	snprintf(why, len, "none: only the hint faults of tierbal exec tell what is used");
	return 0;
}
