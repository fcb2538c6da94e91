/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/pagemap: one 64-bit entry per virtual page, saying whether the
 * page is present, swapped, soft-dirty, write-protected by a userfaultfd
 * or mapped by this process only, and its frame
 * (Documentation/admin-guide/mm/pagemap.rst). */
#ifndef TB_PAGEMAP_H
#define TB_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>

#define TB_PM_PRESENT (1ull << 63)
#define TB_PM_SWAPPED (1ull << 62)
#define TB_PM_SOFT_DIRTY (1ull << 55)
#define TB_PM_UFFD_WP (1ull << 57)        /* write-protected by a userfaultfd (kernel 5.13 and later) */
#define TB_PM_EXCLUSIVE (1ull << 56)      /* mapped by this process only */
#define TB_PM_PFN_MASK ((1ull << 55) - 1) /* the frame number, if present (0 without CAP_SYS_ADMIN) */
#define TB_PM_THP_PAGES 512u              /* base pages of a transparent huge page on x86-64 */

/* Reads npages raw pagemap entries from start (page-aligned) of an open
 * /proc/PID/pagemap. 0, -ESRCH if the process has exited, or another errno. */
int tb_pagemap_read(int fd, uintptr_t start, size_t npages, uint64_t *entries);

#endif
