/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Large zeroed tables straight from mmap. tb_big_alloc: on transparent huge
 * pages where the kernel allows it (the simulator's tables are read at
 * random, and 4 KiB pages would make most reads TLB misses). tb_big_alloc_sparse:
 * on 4 KiB pages, for a table used only in part, which then costs only the
 * pages touched (malloc's calloc may write it all, e.g. with MALLOC_PERTURB_). */
#ifndef TB_BIGALLOC_H
#define TB_BIGALLOC_H

#include <stddef.h>

void *tb_big_alloc(size_t bytes);
void *tb_big_alloc_sparse(size_t bytes);
/* frees either */
void tb_big_free(void *p, size_t bytes);

#endif
