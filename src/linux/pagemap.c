/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "linux/pagemap.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int tb_pagemap_read(int fd, uintptr_t start, size_t npages, uint64_t *entries)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE), want = npages * sizeof(uint64_t);
	off_t off = (off_t)(start / psz * sizeof(uint64_t));
	ssize_t got = pread(fd, entries, want, off);
	if (got < 0)
		return -errno;
	if (got == 0 && want)
		return -ESRCH; /* the address space is gone: the process exited */
	if ((size_t)got < want)
		memset((char *)entries + got, 0, want - (size_t)got);
	return 0;
}
