/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small, fast, seedable PRNG (wyrand step, splitmix64 seeding). Same seed,
 * same stream on every machine: the simulator's determinism rests on it. */
#ifndef TB_RNG_H
#define TB_RNG_H

#include <stdint.h>

struct tb_rng {
	uint64_t s;
};

static inline uint64_t rng_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void rng_seed(struct tb_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	r->s = rng_splitmix(&x);
}

static inline uint64_t rng_next(struct tb_rng *r)
{
	r->s += 0xa0761d6478bd642full;
	__uint128_t t = (__uint128_t)r->s * (r->s ^ 0xe7037ed1a0b428dbull);
	return (uint64_t)(t >> 64) ^ (uint64_t)t;
}

/* uniform in [0, n) without division */
static inline uint64_t rng_below(struct tb_rng *r, uint64_t n)
{
	return (uint64_t)(((__uint128_t)rng_next(r) * n) >> 64);
}

/* uniform in (0, 1) */
static inline double rng_unit(struct tb_rng *r)
{
	return ((double)(rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

#endif
