/* Access distributions: Gaussian by table lookup, zipf by rejection-inversion. */
#ifndef TB_DIST_H
#define TB_DIST_H

#include <stdint.h>

#include "../util/rng.h"

#define GAUSS_BITS 12 /* 4096 buckets: the table stays in L1 */
#define GAUSS_N (1u << GAUSS_BITS)
#define GAUSS_FRAC_BITS 20 /* interpolation within a bucket */

/* Standard normal quantiles at i / GAUSS_N, i = 0..GAUSS_N; the two outer
 * buckets are extrapolated, so draws stop at about 3.6 sigma. */
struct gauss_table {
	float q[GAUSS_N + 1];
};

void gauss_table_init(struct gauss_table *t);
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
