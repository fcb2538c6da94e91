/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "util/bigalloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#define HUGE_PAGE (2u << 20)

static void *alloc_aligned(size_t bytes, bool huge)
{
	size_t len = (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
	/* over-allocate by one huge page and trim, so the table starts aligned */
	char *raw = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	char *p = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	size_t tail = (size_t)(raw + len + HUGE_PAGE - (p + len));
	if (tail)
		munmap(p + len, tail);
	if (huge)
		madvise(p, len, MADV_HUGEPAGE); /* a hint: without THP the table still works */
	return p;
}

void *tb_big_alloc(size_t bytes)
{
	return alloc_aligned(bytes, true);
}

void *tb_big_alloc_sparse(size_t bytes)
{
	return alloc_aligned(bytes, false);
}

void tb_big_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1));
}
