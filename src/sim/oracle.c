/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sim/oracle.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/dist.h"
#include "sim/trace.h"

/* Probability of each page of a region, times `scale`, into w[]. */
static void region_weights(const struct tb_oracle_region *r, double scale, float *w)
{
	double n = (double)r->n;
	switch (r->kind) {
	case TB_DIST_GAUSSIAN:
		for (uint64_t i = 0; i < r->n; i++) {
			double d = (double)i - r->center, p = 0;
			for (int k = -1; k <= 1; k++) /* the sampler wraps around the region */
				p += tb_gauss_pdf((d + k * n) / r->sigma);
			w[i] = (float)(scale * p / r->sigma);
		}
		break;
	case TB_DIST_ZIPF: {
		double h = 0;
		for (uint64_t k = 1; k <= r->n; k++)
			h += pow((double)k, -r->zipf_s);
		uint64_t pos = 0;
		for (uint64_t k = 1; k <= r->n; k++) {
			w[pos] = (float)(scale * pow((double)k, -r->zipf_s) / h);
			pos += r->stride;
			if (pos >= r->n)
				pos -= r->n;
		}
		break;
	}
	case TB_DIST_TRACE:
		for (uint64_t i = 0; i < r->n; i++)
			w[i] = (float)(scale * (double)r->trace->hits[i] / (double)r->trace->nr_ops);
		break;
	default:
		for (uint64_t i = 0; i < r->n; i++)
			w[i] = (float)(scale / n);
	}
}

static void swap(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;
	*a = *b;
	*b = t;
}

/* In-place quicksort, descending; keys are distinct (page id in the low bits). */
static void sort_desc(uint64_t *a, size_t n)
{
	while (n > 16) {
		size_t mid = n / 2;
		if (a[0] < a[mid])
			swap(&a[0], &a[mid]);
		if (a[mid] < a[n - 1])
			swap(&a[mid], &a[n - 1]);
		if (a[0] < a[mid])
			swap(&a[0], &a[mid]);
		uint64_t pivot = a[mid];
		size_t i = 0, j = n - 1;
		for (;;) {
			while (a[i] > pivot)
				i++;
			while (a[j] < pivot)
				j--;
			if (i >= j)
				break;
			swap(&a[i++], &a[j--]);
		}
		/* recurse into the smaller side, loop on the larger */
		size_t left = j + 1;
		if (left < n - left) {
			sort_desc(a, left);
			a += left;
			n -= left;
		} else {
			sort_desc(a + left, n - left);
			n = left;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && a[j] > a[j - 1]; j--)
			swap(&a[j], &a[j - 1]);
}

int tb_oracle_place(const struct tb_oracle_proc *procs, unsigned nr_procs, unsigned nr_nodes, const uint64_t *cap,
		    uint32_t nr_pages, const uint8_t *huge, uint8_t *node, char *err, size_t errlen)
{
	if (!nr_procs || nr_procs > TB_WL_MAX_PROCS || nr_nodes > TB_MAX_NODES) {
		snprintf(err, errlen, "oracle: %u processes on %u nodes is out of range", nr_procs, nr_nodes);
		return -EINVAL;
	}
	uint64_t *keys = malloc((size_t)nr_pages * sizeof(*keys));
	float *w = calloc(nr_pages, sizeof(*w));
	if (!keys || !w) {
		free(keys);
		free(w);
		snprintf(err, errlen, "oracle: out of memory for %u pages", nr_pages);
		return -ENOMEM;
	}
	unsigned order[TB_WL_MAX_PROCS][TB_MAX_NODES];
	for (unsigned i = 0; i < nr_procs; i++) {
		const struct tb_oracle_proc *p = &procs[i];
		double lo = INFINITY, hi = 0;
		for (unsigned n = 0; n < nr_nodes; n++) {
			order[i][n] = n;
			lo = fmin(lo, p->cost[n]);
			hi = fmax(hi, p->cost[n]);
		}
		for (unsigned a = 1; a < nr_nodes; a++)
			for (unsigned b = a; b > 0 && p->cost[order[i][b]] < p->cost[order[i][b - 1]]; b--) {
				unsigned t = order[i][b];
				order[i][b] = order[i][b - 1];
				order[i][b - 1] = t;
			}
		for (unsigned k = 0; k < 2; k++)
			if (p->region[k].n)
				region_weights(&p->region[k], p->region[k].share * (hi - lo), w + p->region[k].base);
	}
	for (uint32_t b = 0; huge && b < nr_pages >> TB_HPAGE_ORDER; b++) {
		if (!huge[b])
			continue;
		float *u = w + ((size_t)b << TB_HPAGE_ORDER);
		double sum = 0;
		for (uint32_t i = 0; i < TB_HPAGE_PAGES; i++)
			sum += u[i];
		for (uint32_t i = 0; i < TB_HPAGE_PAGES; i++)
			u[i] = (float)(sum / TB_HPAGE_PAGES);
	}
	size_t nk = 0;
	for (unsigned i = 0; i < nr_procs; i++)
		for (unsigned k = 0; k < 2; k++)
			for (uint64_t j = 0; j < procs[i].region[k].n; j++) {
				uint32_t pg = procs[i].region[k].base + (uint32_t)j, bits;
				memcpy(&bits, &w[pg], sizeof(bits)); /* non-negative floats order like their bits */
				keys[nk++] = (uint64_t)bits << 32 | pg;
			}
	free(w);
	sort_desc(keys, nk);
	uint64_t left[TB_MAX_NODES];
	memcpy(left, cap, nr_nodes * sizeof(*left));
	for (size_t i = 0; i < nk; i++) {
		uint32_t pg = (uint32_t)keys[i];
		unsigned owner = 0;
		while (owner + 1 < nr_procs && pg >= procs[owner + 1].region[0].base)
			owner++;
		int dst = -1;
		for (unsigned k = 0; k < nr_nodes && dst < 0; k++)
			if (left[order[owner][k]])
				dst = (int)order[owner][k];
		if (dst < 0) {
			free(keys);
			snprintf(err, errlen, "oracle: the pages do not fit the nodes' capacity");
			return -ENOSPC;
		}
		left[dst]--;
		node[pg] = (uint8_t)dst;
	}
	free(keys);
	for (uint32_t b = 0; huge && b < nr_pages >> TB_HPAGE_ORDER; b++)
		if (huge[b])
			memset(node + ((size_t)b << TB_HPAGE_ORDER), node[(size_t)b << TB_HPAGE_ORDER], TB_HPAGE_PAGES);
	return 0;
}
