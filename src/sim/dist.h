/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Access distributions: Gaussian by table lookup, zipf by rejection-inversion. */
#ifndef TB_DIST_H
#define TB_DIST_H

#include <stdint.h>

#include "util/rng.h"

#define TB_GAUSS_BITS 12 /* 4096 buckets: the table stays in L1 */
#define TB_GAUSS_N (1u << TB_GAUSS_BITS)
#define TB_GAUSS_FRAC_BITS 20 /* interpolation within a bucket */

/* Standard normal quantiles at i / TB_GAUSS_N, i = 0..TB_GAUSS_N, and, for the
 * lowest bucket, a second level at j / TB_GAUSS_N^2 (the highest bucket is its
 * mirror image): draws reach about 5.3 sigma while the common case reads one
 * small table. The outermost entries are extrapolated. */
struct tb_gauss_table {
	float q[TB_GAUSS_N + 1];
	float tail[TB_GAUSS_N + 1];
};

void tb_gauss_table_init(struct tb_gauss_table *t);

/* The quantiles scaled to one region's sigma, in pages. */
struct tb_gauss_offsets {
	int32_t main[TB_GAUSS_N + 1];
	int32_t tail[TB_GAUSS_N + 1];
};

void tb_gauss_offsets_init(struct tb_gauss_offsets *o, const struct tb_gauss_table *t, double sigma);

/* A Gaussian offset from 64 random bits: 12 pick the bucket, 20 interpolate;
 * in the two outer buckets the other 32 do the same on the second level. */
static inline int64_t gauss_offset(const struct tb_gauss_offsets *o, uint64_t x)
{
	unsigned i = (unsigned)(x & (TB_GAUSS_N - 1));
	int64_t frac = (int64_t)((x >> TB_GAUSS_BITS) & ((1u << TB_GAUSS_FRAC_BITS) - 1));
	int64_t lo = o->main[i], hi = o->main[i + 1];
	if (__builtin_expect(i == 0 || i == TB_GAUSS_N - 1, 0)) {
		unsigned j = (unsigned)((x >> 32) & (TB_GAUSS_N - 1));
		int64_t f2 = (int64_t)((x >> 44) & ((1u << TB_GAUSS_FRAC_BITS) - 1));
		int64_t off = o->tail[j] + (((int64_t)o->tail[j + 1] - o->tail[j]) * f2 >> TB_GAUSS_FRAC_BITS);
		return i ? -off : off;
	}
	return lo + (((hi - lo) * frac) >> TB_GAUSS_FRAC_BITS);
}
double tb_gauss_pdf(double z);

/* Zipf over ranks 1..n with exponent s (Hormann & Derflinger 1996). */
struct tb_zipf {
	double s, n, h_x1, h_n, sdiff;
};

void tb_zipf_init(struct tb_zipf *z, uint64_t n, double s);
uint64_t tb_zipf_next(const struct tb_zipf *z, struct tb_rng *r);
/* An odd stride coprime with n, so rank -> page scatters the hot ranks. */
uint64_t tb_zipf_stride(uint64_t n);

#endif
