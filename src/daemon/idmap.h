/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Page ids of the live daemon: the engine numbers pages 0..N-1, real pages
 * are (process, address). Ids are handed out in chunks that each cover one
 * 2 MiB-aligned stretch of one process's address space. */
#ifndef TB_IDMAP_H
#define TB_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#define TB_CHUNK_SHIFT 9 /* 512 pages, 2 MiB */
#define TB_CHUNK_PAGES (1u << TB_CHUNK_SHIFT)
#define TB_CHUNK_BYTES ((uintptr_t)TB_CHUNK_PAGES << 12)
#define TB_NO_OWNER UINT32_MAX

struct tb_idmap {
	uint32_t nr_chunks, nr_pools, chunks_per_pool;
	uint32_t *owner; /* target index per chunk, TB_NO_OWNER when free */
	uintptr_t *base; /* first address per chunk */
	uint32_t **free; /* per pool: stack of free chunks */
	uint32_t *nr_free;
	uint32_t *extent; /* per pool: chunks from its first up to its highest in use */
};

/* nr_pools pools (one per engine space) of chunks_per_pool chunks each. */
int tb_idmap_init(struct tb_idmap *m, uint32_t nr_pools, uint32_t chunks_per_pool);
void tb_idmap_destroy(struct tb_idmap *m);
/* Takes a free chunk of pool for owner's stretch at base; -ENOSPC when the pool is empty. */
int tb_idmap_get(struct tb_idmap *m, uint32_t pool, uint32_t owner, uintptr_t base, uint32_t *chunk);
void tb_idmap_put(struct tb_idmap *m, uint32_t chunk);
/* How many chunks of pool, from its first, reach its highest chunk in use
 * (0 if none is), kept as chunks come and go: handed out lowest first, so it
 * stays small. */
uint32_t tb_idmap_extent(const struct tb_idmap *m, uint32_t pool);

static inline uint32_t tb_idmap_page(uint32_t chunk, unsigned i)
{
	return (chunk << TB_CHUNK_SHIFT) | i;
}

static inline uintptr_t tb_idmap_addr(const struct tb_idmap *m, uint32_t page)
{
	return m->base[page >> TB_CHUNK_SHIFT] + ((uintptr_t)(page & (TB_CHUNK_PAGES - 1)) << 12);
}

#endif
