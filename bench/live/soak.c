/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The soak bench's workload (bench/soak), run in the guest under tierbal run
 * or tierbal exec. Node 0 is filled with cold pages (LEAVE_MB left free),
 * SETS hot sets of HOT_MB start on node 1 and take turns being written, PHASE_S
 * seconds each; a churn area is mapped, filled and unmapped every second.
 * Every page carries a checksum. Every 10 s all of them are verified and a
 * line is printed:
 *   SOAK label=L t=S pages=N mismatches=M hot_share=F maps=K phase=P
 * (hot_share: the current hot set's share on node 0; maps: this process's
 * mappings). Exits 0 after SECONDS only if no check ever failed.
 * usage: soak_work LABEL SECONDS LEAVE_MB HOT_MB SETS PHASE_S */
#include <numa.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "linux/mover.h"
#include "pages.h"

#define PAGE TB_PAGE
#define CHURN_PAGES 2048u /* 8 MiB */

struct area {
	char *p;
	size_t pages;
	uint64_t id;   /* distinguishes the pattern of each area */
	uint64_t *gen; /* per page: how often it was rewritten */
};

static void write_page(struct area *a, size_t i)
{
	tb_page_touch(a->p + i * PAGE, a->id, i, ++a->gen[i]);
}

static int make(struct area *a, size_t pages, int node, uint64_t id)
{
	a->pages = pages;
	a->id = id;
	a->gen = calloc(pages, sizeof(*a->gen));
	a->p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!a->gen || a->p == MAP_FAILED)
		return -1;
	madvise(a->p, pages * PAGE, MADV_NOHUGEPAGE);
	unsigned long mask = node >= 0 ? 1ul << node : 0;
	if (node >= 0 && mbind(a->p, pages * PAGE, MPOL_BIND, &mask, sizeof(mask) * 8, 0))
		return -1;
	for (size_t i = 0; i < pages; i++)
		tb_page_fill(a->p + i * PAGE, a->id, i, ++a->gen[i]);
	if (node >= 0)
		mbind(a->p, pages * PAGE, MPOL_DEFAULT, NULL, 0, 0); /* moves are tierbal's business */
	return 0;
}

static size_t verify(const struct area *a)
{
	return tb_pages_bad(a->p, a->pages, a->id, 0, a->gen);
}

static void unmake(struct area *a)
{
	munmap(a->p, a->pages * PAGE);
	free(a->gen);
}

static double share_on_node0(const struct area *a)
{
	void **pages = malloc(a->pages * sizeof(*pages));
	size_t on0 = 0;
	int rc = pages ? 0 : -1;
	for (size_t i = 0; pages && i < a->pages; i++)
		pages[i] = a->p + i * PAGE;
	if (pages)
		rc = tb_mover_count(0, pages, a->pages, 0, &on0);
	free(pages);
	return rc ? -1 : (double)on0 / (double)a->pages;
}

static int nr_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;
	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 7 || numa_available() < 0 || numa_max_node() < 1) {
		fprintf(stderr, "usage: soak_work LABEL SECONDS LEAVE_MB HOT_MB SETS PHASE_S (on two nodes)\n");
		return 2;
	}
	const char *label = argv[1];
	double secs = atof(argv[2]), phase_s = atof(argv[6]);
	long leave = atol(argv[3]), hot_mb = atol(argv[4]), sets = atol(argv[5]);
	if (secs <= 0 || phase_s <= 0 || hot_mb <= 0 || sets < 1 || sets > 8) {
		fprintf(stderr, "soak_work: bad arguments (SETS 1..8, the others positive)\n");
		return 2;
	}
	size_t nhot = (size_t)hot_mb << 8;
	struct area hot[8], churn = {0}, cold;
	for (long s = 0; s < sets; s++)
		if (make(&hot[s], nhot, 1, 100 + (uint64_t)s)) {
			fprintf(stderr, "soak_work: cannot place hot set %ld (%zu pages) on node 1\n", s, nhot);
			return 2;
		}
	long long free0 = 0;
	numa_node_size64(0, &free0);
	long long cold_b = free0 - leave * (1ll << 20) - (long long)CHURN_PAGES * PAGE;
	if (make(&cold, cold_b > (long long)PAGE ? (size_t)cold_b / PAGE : 1, 0, 1)) {
		fprintf(stderr, "soak_work: cannot place the cold pages on node 0\n");
		return 2;
	}
	printf("ready label=%s pid=%d cold_pages=%zu hot_pages=%zu sets=%ld\n", label, (int)getpid(), cold.pages, nhot,
	       sets);
	fflush(stdout);
	double t0 = now_s(), next_check = t0 + 10, next_churn = t0 + 1;
	size_t total_bad = 0, churn_bad = 0;
	uint64_t churn_id = 1000;
	for (;;) {
		double t = now_s();
		long phase = (long)((t - t0) / phase_s);
		struct area *h = &hot[phase % sets];
		for (size_t i = 0; i < h->pages; i++)
			write_page(h, i);
		if (t >= next_churn) { /* mapping churn: checked, unmapped, mapped again somewhere */
			if (churn.p) {
				churn_bad += verify(&churn);
				unmake(&churn);
			}
			if (make(&churn, CHURN_PAGES, -1, churn_id++))
				churn.p = NULL;
			next_churn += 1;
		}
		if (t >= next_check || t - t0 >= secs) {
			size_t bad = verify(&cold) + churn_bad;
			size_t pages = cold.pages + (churn.p ? churn.pages : 0) + (size_t)sets * nhot;
			for (long s = 0; s < sets; s++)
				bad += verify(&hot[s]);
			if (churn.p)
				bad += verify(&churn);
			churn_bad = 0;
			total_bad += bad;
			printf("SOAK label=%s t=%.0f pages=%zu mismatches=%zu hot_share=%.3f maps=%d phase=%ld\n",
			       label, t - t0, pages, bad, share_on_node0(h), nr_maps(), phase);
			fflush(stdout);
			next_check += 10;
			if (t - t0 >= secs)
				break;
		}
	}
	printf("done label=%s mismatches=%zu\n", label, total_bad);
	return total_bad ? 1 : 0;
}
