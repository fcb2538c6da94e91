/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sampler selector: the one asked for, or on "auto" the best this kernel
 * offers (DAMON, then soft-dirty). */
#include "access/access.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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
