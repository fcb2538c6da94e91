/* The soft-dirty sampler: pagemap bit 55 says "written since clear_refs". */
#include "access.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "softdirty.h"

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
	(void)ctx;
	return tb_sd_clear(pid);
}

static void sd_destroy(void *ctx)
{
	(void)ctx;
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
	a->ops = &softdirty_ops;
	a->ctx = NULL;
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
