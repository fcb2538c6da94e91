/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daemon/idmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tb_idmap_init(struct tb_idmap *m, uint32_t nr_pools, uint32_t chunks_per_pool)
{
	memset(m, 0, sizeof(*m));
	if (!nr_pools || !chunks_per_pool || (uint64_t)nr_pools * chunks_per_pool > (UINT32_MAX >> TB_CHUNK_SHIFT))
		return -EINVAL;
	m->nr_pools = nr_pools;
	m->chunks_per_pool = chunks_per_pool;
	m->nr_chunks = nr_pools * chunks_per_pool;
	m->owner = malloc(m->nr_chunks * sizeof(*m->owner));
	m->base = calloc(m->nr_chunks, sizeof(*m->base));
	m->free = calloc(nr_pools, sizeof(*m->free));
	m->nr_free = calloc(nr_pools, sizeof(*m->nr_free));
	m->extent = calloc(nr_pools, sizeof(*m->extent));
	if (!m->owner || !m->base || !m->free || !m->nr_free || !m->extent)
		goto nomem;
	for (uint32_t p = 0; p < nr_pools; p++) {
		m->free[p] = malloc(chunks_per_pool * sizeof(**m->free));
		if (!m->free[p])
			goto nomem;
		/* lowest chunk on top: ids stay dense, which keeps the engine's table warm */
		for (uint32_t i = 0; i < chunks_per_pool; i++)
			m->free[p][i] = (p + 1) * chunks_per_pool - 1 - i;
		m->nr_free[p] = chunks_per_pool;
	}
	for (uint32_t c = 0; c < m->nr_chunks; c++)
		m->owner[c] = TB_NO_OWNER;
	return 0;
nomem:
	tb_idmap_destroy(m);
	return -ENOMEM;
}

void tb_idmap_destroy(struct tb_idmap *m)
{
	if (m->free)
		for (uint32_t p = 0; p < m->nr_pools; p++)
			free(m->free[p]);
	free(m->free);
	free(m->nr_free);
	free(m->extent);
	free(m->owner);
	free(m->base);
	memset(m, 0, sizeof(*m));
}

int tb_idmap_get(struct tb_idmap *m, uint32_t pool, uint32_t owner, uintptr_t base, uint32_t *chunk)
{
	if (pool >= m->nr_pools || owner == TB_NO_OWNER)
		return -EINVAL;
	if (!m->nr_free[pool])
		return -ENOSPC;
	uint32_t c = m->free[pool][--m->nr_free[pool]];
	m->owner[c] = owner;
	m->base[c] = base;
	uint32_t reach = c - pool * m->chunks_per_pool + 1;
	if (reach > m->extent[pool])
		m->extent[pool] = reach;
	*chunk = c;
	return 0;
}

void tb_idmap_put(struct tb_idmap *m, uint32_t c)
{
	if (c >= m->nr_chunks || m->owner[c] == TB_NO_OWNER)
		return;
	uint32_t pool = c / m->chunks_per_pool, first = pool * m->chunks_per_pool;
	m->owner[c] = TB_NO_OWNER;
	m->free[pool][m->nr_free[pool]++] = c;
	/* the highest chunk went: down to the next one in use (chunks are handed out lowest first) */
	while (m->extent[pool] && m->owner[first + m->extent[pool] - 1] == TB_NO_OWNER)
		m->extent[pool]--;
}

uint32_t tb_idmap_extent(const struct tb_idmap *m, uint32_t pool)
{
	return pool < m->nr_pools ? m->extent[pool] : 0;
}
