/* Access distributions: Gaussian by table lookup, zipf by rejection-inversion. */
#ifndef TB_DIST_H
#define TB_DIST_H

#include <stdint.h>

#include "util/rng.h"

#define GAUSS_BITS 12 /* 4096 buckets: the table stays in L1 */
#define GAUSS_N (1u << GAUSS_BITS)
#define GAUSS_FRAC_BITS 20 /* interpolation within a bucket */

/* Standard normal quantiles at i / GAUSS_N, i = 0..GAUSS_N, and, for the
 * lowest bucket, a second level at j / GAUSS_N^2 (the highest bucket is its
 * mirror image): draws reach about 5.3 sigma while the common case reads one
 * small table. The outermost entries are extrapolated. */
struct gauss_table {
	float q[GAUSS_N + 1];
	float tail[GAUSS_N + 1];
};

void gauss_table_init(struct gauss_table *t);

/* The quantiles scaled to one region's sigma, in pages. */
struct gauss_offsets {
	int32_t main[GAUSS_N + 1];
	int32_t tail[GAUSS_N + 1];
};

void gauss_offsets_init(struct gauss_offsets *o, const struct gauss_table *t, double sigma);

/* A Gaussian offset from 64 random bits: 12 pick the bucket, 20 interpolate;
 * in the two outer buckets the other 32 do the same on the second level. */
static inline int64_t gauss_offset(const struct gauss_offsets *o, uint64_t x)
{
	unsigned i = (unsigned)(x & (GAUSS_N - 1));
	int64_t frac = (int64_t)((x >> GAUSS_BITS) & ((1u << GAUSS_FRAC_BITS) - 1));
	int64_t lo = o->main[i], hi = o->main[i + 1];
	if (__builtin_expect(i == 0 || i == GAUSS_N - 1, 0)) {
		unsigned j = (unsigned)((x >> 32) & (GAUSS_N - 1));
		int64_t f2 = (int64_t)((x >> 44) & ((1u << GAUSS_FRAC_BITS) - 1));
		int64_t off = o->tail[j] + (((int64_t)o->tail[j + 1] - o->tail[j]) * f2 >> GAUSS_FRAC_BITS);
		return i ? -off : off;
	}
	return lo + (((hi - lo) * frac) >> GAUSS_FRAC_BITS);
}
double gauss_pdf(double z);

/* Zipf over ranks 1..n with exponent s (Hormann & Derflinger 1996). */
struct zipf {
	double s, n, h_x1, h_n, sdiff;
};

void zipf_init(struct zipf *z, uint64_t n, double s);
uint64_t zipf_next(const struct zipf *z, struct rng *r);
/* An odd stride coprime with n, so rank -> page scatters the hot ranks. */
uint64_t zipf_stride(uint64_t n);

#endif
