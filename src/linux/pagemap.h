/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/pagemap: one 64-bit entry per virtual page, saying whether the
 * page is present, swapped, soft-dirty or write-protected by a userfaultfd
 * (Documentation/admin-guide/mm/pagemap.rst). */
#ifndef TB_PAGEMAP_H
#define TB_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>

#define TB_PM_PRESENT (1ull << 63)
#define TB_PM_SWAPPED (1ull << 62)
#define TB_PM_SOFT_DIRTY (1ull << 55)
#define TB_PM_UFFD_WP (1ull << 57) /* write-protected by a userfaultfd (kernel 5.13 and later) */

/* Reads npages raw pagemap entries from start (page-aligned) of an open
 * /proc/PID/pagemap. 0, -ESRCH if the process has exited, or another errno. */
int tb_pagemap_read(int fd, uintptr_t start, size_t npages, uint64_t *entries);

#endif
