/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sim/dist.h"

#include <math.h>

double tb_gauss_pdf(double z)
{
	return exp(-0.5 * z * z) * 0.3989422804014327;
}

/* Phi^-1(p) by bisection on erfc: exact enough, and only run at set-up. */
static double norm_quantile(double p)
{
	double lo = -9, hi = 9;
	for (int i = 0; i < 64; i++) {
		double mid = (lo + hi) / 2;
		if (0.5 * erfc(-mid / sqrt(2.0)) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

void tb_gauss_table_init(struct tb_gauss_table *t)
{
	const double n = TB_GAUSS_N;
	for (unsigned i = 1; i < TB_GAUSS_N; i++)
		t->q[i] = (float)norm_quantile(i / n);
	t->q[0] = -t->q[1]; /* unused: the lowest bucket reads tail[] */
	t->q[TB_GAUSS_N] = -t->q[0];
	for (unsigned j = 1; j <= TB_GAUSS_N; j++)
		t->tail[j] = (float)norm_quantile(j / (n * n));
	t->tail[0] = 2 * t->tail[1] - t->tail[2];
}

void tb_gauss_offsets_init(struct tb_gauss_offsets *o, const struct tb_gauss_table *t, double sigma)
{
	for (unsigned i = 0; i <= TB_GAUSS_N; i++) {
		o->main[i] = (int32_t)lrint((double)t->q[i] * sigma);
		o->tail[i] = (int32_t)lrint((double)t->tail[i] * sigma);
	}
}

/* H(x) = integral of x^-s, written so that s = 1 (log) needs no special case */
static double h_integral(double x, double s)
{
	double lx = log(x), t = (1 - s) * lx;
	return (fabs(t) > 1e-8 ? expm1(t) / t : 1 + t / 2) * lx;
}

static double h(double x, double s)
{
	return exp(-s * log(x));
}

static double h_integral_inv(double y, double s)
{
	double t = y * (1 - s);
	if (t < -1)
		t = -1;
	return exp((fabs(t) > 1e-8 ? log1p(t) / t : 1 - t / 2) * y);
}

void tb_zipf_init(struct tb_zipf *z, uint64_t n, double s)
{
	z->s = s;
	z->n = (double)n;
	z->h_x1 = h_integral(1.5, s) - 1.0;
	z->h_n = h_integral(z->n + 0.5, s);
	z->sdiff = 2.0 - h_integral_inv(h_integral(2.5, s) - h(2.0, s), s);
}

uint64_t tb_zipf_next(const struct tb_zipf *z, struct tb_rng *r)
{
	for (;;) {
		double u = z->h_n + rng_unit(r) * (z->h_x1 - z->h_n);
		double x = h_integral_inv(u, z->s);
		double k = floor(x + 0.5);
		if (k < 1)
			k = 1;
		else if (k > z->n)
			k = z->n;
		if (k - x <= z->sdiff || u >= h_integral(k + 0.5, z->s) - h(k, z->s))
			return (uint64_t)k;
	}
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

uint64_t tb_zipf_stride(uint64_t n)
{
	if (n < 3)
		return 1;
	uint64_t s = (uint64_t)((double)n * 0.6180339887) | 1;
	while (gcd(s, n) != 1)
		s += 2;
	return s % n ? s % n : 1;
}
