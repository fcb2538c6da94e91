#include "dist.h"

#include <math.h>

double gauss_pdf(double z)
{
	return exp(-0.5 * z * z) * 0.3989422804014327;
}

void gauss_table_init(struct gauss_table *t)
{
	/* Walk the CDF in fine steps and record where it crosses each i / N. */
	const double lo = -6.0, hi = 6.0;
	const unsigned steps = 1u << 20;
	const double dz = (hi - lo) / steps;
	double prev_z = lo, prev_c = 0.5 * erfc(-lo / sqrt(2.0));
	unsigned i = 1;
	t->q[0] = (float)lo;
	for (unsigned s = 1; s <= steps && i < GAUSS_N; s++) {
		double z = lo + s * dz, c = 0.5 * erfc(-z / sqrt(2.0));
		while (i < GAUSS_N && c >= (double)i / GAUSS_N) {
			double f = (double)i / GAUSS_N;
			t->q[i] = (float)(prev_z + (z - prev_z) * (f - prev_c) / (c - prev_c));
			i++;
		}
		prev_z = z;
		prev_c = c;
	}
	for (; i <= GAUSS_N; i++)
		t->q[i] = (float)hi;
	/* the outermost buckets hold the tails beyond +-4.2 sigma: keep them bounded */
	t->q[0] = 2 * t->q[1] - t->q[2];
	t->q[GAUSS_N] = 2 * t->q[GAUSS_N - 1] - t->q[GAUSS_N - 2];
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

void zipf_init(struct zipf *z, uint64_t n, double s)
{
	z->s = s;
	z->n = (double)n;
	z->h_x1 = h_integral(1.5, s) - 1.0;
	z->h_n = h_integral(z->n + 0.5, s);
	z->sdiff = 2.0 - h_integral_inv(h_integral(2.5, s) - h(2.0, s), s);
}

uint64_t zipf_next(const struct zipf *z, struct rng *r)
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

uint64_t zipf_stride(uint64_t n)
{
	if (n < 3)
		return 1;
	uint64_t s = (uint64_t)((double)n * 0.6180339887) | 1;
	while (gcd(s, n) != 1)
		s += 2;
	return s % n ? s % n : 1;
}
