/* Large tables on transparent huge pages where the kernel allows it: the
 * simulator's page tables are read at random, and 4 KiB pages would make
 * most of those reads TLB misses. */
#ifndef TB_BIGALLOC_H
#define TB_BIGALLOC_H

#include <stddef.h>

void *big_alloc(size_t bytes);
void big_free(void *p, size_t bytes);

#endif
