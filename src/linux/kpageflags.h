/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Transparent huge pages of a process, from its pagemap entries and
 * /proc/kpageflags (Documentation/admin-guide/mm/pagemap.rst). Both need
 * CAP_SYS_ADMIN: without it pagemap hides the frame numbers. */
#ifndef TB_KPAGEFLAGS_H
#define TB_KPAGEFLAGS_H

#include <stdbool.h>
#include <stdint.h>

#define TB_KPF_COMPOUND_HEAD 15
#define TB_KPF_THP 22

/* Opens /proc/kpageflags: a descriptor, or a negative errno. */
int tb_kpageflags_open(void);
/* Whether the 512 pagemap entries pm of a 2 MiB-aligned stretch map one
 * transparent huge page (its frames contiguous from a head the kernel flags
 * THP), and whether another process maps it too (pagemap's exclusive bit
 * clear). 0 with *huge and *shared set, or a negative errno from kpageflags. */
int tb_kpageflags_thp(int fd, const uint64_t *pm, bool *huge, bool *shared);

#endif
