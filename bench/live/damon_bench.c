/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs on the build machine: does tierbal's DAMON sampler find a known hot
 * region? A child maps 256 MiB, writes all of it once, then keeps touching
 * only a 32 MiB stretch in the middle. After a warm-up, every round's pages
 * marked accessed are compared with that stretch.
 * usage: damon_bench [SECONDS]
 * prints "RESULT damon ..." with precision and recall (means over rounds),
 * or "RESULT damon skipped=REASON" and exits 77 when the kernel's DAMON is
 * missing or busy. Exit 0: measured, 1: error. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "access/access.h"

#define PAGE 4096u
#define AREA_PAGES (256u << 20) / PAGE
#define HOT_FIRST (96u << 20) / PAGE
#define HOT_PAGES (32u << 20) / PAGE
#define ROUND_MS 200
#define WARMUP_ROUNDS 10

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

static void reason_token(char *s)
{
	for (; *s; s++)
		if (*s == ' ')
			*s = '_';
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 20;
	if (secs * 1000 / ROUND_MS <= WARMUP_ROUNDS) {
		fprintf(stderr, "usage: damon_bench [SECONDS] (more than %d s)\n", WARMUP_ROUNDS * ROUND_MS / 1000);
		return 2;
	}
	struct tb_access a;
	char why[512];
	if (tb_access_damon_open(&a, "", why, sizeof(why))) {
		reason_token(why);
		printf("RESULT damon skipped=%s\n", why);
		return 77;
	}

	char *area = mmap(NULL, (size_t)AREA_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return 1;
	madvise(area, (size_t)AREA_PAGES * PAGE, MADV_NOHUGEPAGE);
	memset(area, 1, (size_t)AREA_PAGES * PAGE);
	pid_t child = fork();
	if (child == 0) { /* the program under watch: the hot stretch, over and over */
		for (unsigned long g = 0;; g++)
			for (size_t i = 0; i < HOT_PAGES; i++)
				area[(HOT_FIRST + i) * PAGE + (g % PAGE)] ^= 1;
	}
	if (child < 0 || a.ops->attach(a.ctx, child)) {
		fprintf(stderr, "damon_bench: cannot watch the child process with DAMON\n");
		if (child > 0)
			kill(child, SIGKILL);
		a.ops->destroy(a.ctx);
		return 1;
	}
	uint8_t *acc = malloc(AREA_PAGES);
	int rounds = secs * 1000 / ROUND_MS, measured = 0, rc = 0;
	double psum = 0, rsum = 0;
	for (int r = 0; r < rounds && acc; r++) {
		sleep_ms(ROUND_MS);
		if (a.ops->round_begin(a.ctx)) {
			rc = 1;
			break;
		}
		a.ops->mark(a.ctx, child, (uintptr_t)area, AREA_PAGES, NULL, acc);
		a.ops->round_end(a.ctx, child);
		if (r < WARMUP_ROUNDS)
			continue; /* DAMON's regions need a few aggregations to split and settle */
		size_t marked = 0, hit = 0;
		for (size_t i = 0; i < AREA_PAGES; i++) {
			if (!acc[i])
				continue;
			marked++;
			hit += i >= HOT_FIRST && i < HOT_FIRST + HOT_PAGES;
		}
		psum += marked ? (double)hit / (double)marked : 0;
		rsum += (double)hit / HOT_PAGES;
		measured++;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	a.ops->detach(a.ctx, child);
	a.ops->destroy(a.ctx);
	free(acc);
	if (rc || !measured) {
		fprintf(stderr, "damon_bench: reading DAMON's regions failed\n");
		return 1;
	}
	printf("RESULT damon rounds=%d area_mib=256 hot_mib=32 precision=%.3f recall=%.3f\n", measured, psum / measured,
	       rsum / measured);
	return 0;
}
