/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "linux/kpageflags.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "linux/pagemap.h"

int tb_kpageflags_open(void)
{
	int fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int tb_kpageflags_thp(int fd, const uint64_t *pm, bool *huge, bool *shared)
{
	*huge = *shared = false;
	uint64_t pfn0 = pm[0] & TB_PM_PFN_MASK;
	/* frame 0 is what pagemap shows without CAP_SYS_ADMIN: nothing to learn */
	if (!(pm[0] & TB_PM_PRESENT) || !pfn0 || pfn0 % TB_PM_THP_PAGES)
		return 0;
	bool excl = true;
	for (unsigned i = 0; i < TB_PM_THP_PAGES; i++) {
		if (!(pm[i] & TB_PM_PRESENT) || (pm[i] & TB_PM_PFN_MASK) != pfn0 + i)
			return 0;
		excl &= (pm[i] & TB_PM_EXCLUSIVE) != 0;
	}
	uint64_t flags;
	ssize_t got = pread(fd, &flags, sizeof(flags), (off_t)(pfn0 * sizeof(flags)));
	if (got < 0)
		return -errno;
	if (got != (ssize_t)sizeof(flags))
		return -EIO;
	*huge = (flags >> TB_KPF_THP & 1) && (flags >> TB_KPF_COMPOUND_HEAD & 1);
	*shared = *huge && !excl;
	return 0;
}
