/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The managed program of the live tests. It fills node 0 with cold pages
 * (leaving LEAVE_MB free there), puts HOT_MB of hot pages on node 1 and keeps
 * writing them. Every page carries a checksum; on SIGUSR1 it stops, checks
 * every page and exits 0 only if none is wrong.
 * usage: guest_hotcold [--huge] [--hold] LEAVE_MB HOT_MB [SHIFT_S]
 *        --huge: the hot sets are 2 MiB-aligned and MADV_HUGEPAGE (the cold
 *        pages stay 4 KiB), so that THP backs them where the kernel allows it
 *        --hold: once the first hot set is mapped, prints "mapped PID" and
 *        touches it first only on SIGUSR2 (a harness can let tierbal see the
 *        mapping before any page of it exists)
 *        LEAVE_MB = -N: exactly N MiB of cold pages; HOT_MB = 0: no hot set, the
 *        program sleeps until SIGUSR1; SHIFT_S: a second hot set of the same size
 *        on node 1 takes over after SHIFT_S seconds (the first one turns cold)
 * prints: "ready PID cold ADDR PAGES hot ADDR PAGES [hot2 ADDR PAGES] passes ADDR", then on
 * SIGUSR1 "verify: N pages, M mismatches, P passes" (P: passes over a hot set) */
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pages.h"

#define PAGE TB_PAGE

static volatile sig_atomic_t stop, go;
/* passes over the hot set so far: its address is on the "ready" line, so that
 * a harness can read the running count (process_vm_readv) without stopping it */
static volatile unsigned long passes;

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	go = 1;
}

/* With SIGUSR2 blocked since the start, none is lost before the wait. */
static void hold_until_usr2(void)
{
	sigset_t wait;
	sigprocmask(SIG_SETMASK, NULL, &wait);
	sigdelset(&wait, SIGUSR2);
	printf("mapped %d\n", (int)getpid());
	fflush(stdout);
	while (!go)
		sigsuspend(&wait);
}

#define HUGE (2ul << 20)

static char *area(size_t pages, int node, size_t first, bool huge, bool hold)
{
	/* a huge area is mapped with a huge page's slack and starts at its first aligned byte */
	size_t len = pages * PAGE + (huge ? HUGE : 0);
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	char *p = huge ? (char *)(((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1)) : m;
	/* 4 KiB pages unless asked: placement is then per page */
	madvise(p, pages * PAGE, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	unsigned long mask = 1ul << node;
	if (mbind(p, pages * PAGE, MPOL_BIND, &mask, sizeof(mask) * 8, 0))
		return NULL;
	if (hold)
		hold_until_usr2();
	tb_pages_fill(p, pages, 0, first);
	/* later moves are tierbal's business: no policy pins the pages any more */
	mbind(p, pages * PAGE, MPOL_DEFAULT, NULL, 0, 0);
	return p;
}

int main(int argc, char **argv)
{
	bool huge = false, hold = false;
	for (; argc > 1 && !strncmp(argv[1], "--", 2); argc--, argv++) {
		if (!strcmp(argv[1], "--huge"))
			huge = true;
		else if (!strcmp(argv[1], "--hold"))
			hold = true;
		else
			break;
	}
	if (argc < 3 || argc > 4 || numa_available() < 0 || numa_max_node() < 1) {
		fprintf(stderr, "usage: guest_hotcold [--huge] [--hold] LEAVE_MB HOT_MB [SHIFT_S] (on a machine with "
				"two nodes)\n");
		return 2;
	}
	long leave = atol(argv[1]), hot_mb = atol(argv[2]), shift_s = argc > 3 ? atol(argv[3]) : 0;
	long long free0 = 0;
	numa_node_size64(0, &free0);
	long long cold_b = leave < 0 ? -leave * (1ll << 20) : free0 - leave * (1ll << 20);
	if (cold_b < (long long)PAGE)
		cold_b = PAGE;
	size_t ncold = (size_t)cold_b / PAGE, nhot = (size_t)hot_mb * (1u << 20) / PAGE;
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (hold)
		sigprocmask(SIG_BLOCK, &usr2, NULL);
	uint64_t *gen = calloc(nhot + 1, sizeof(*gen)), *gen2 = calloc(nhot + 1, sizeof(*gen2));
	char *cold = area(ncold, 0, 0, false, false);
	char *hot = cold && gen && nhot ? area(nhot, 1, ncold, huge, hold) : NULL;
	char *hot2 = hot && gen2 && shift_s > 0 ? area(nhot, 1, ncold + nhot, huge, false) : NULL;
	if (!cold || (nhot && !hot) || (shift_s > 0 && !hot2)) {
		fprintf(stderr, "guest_hotcold: cannot place %zu cold + %zu hot pages\n", ncold,
			nhot * (shift_s > 0 ? 2 : 1));
		free(gen);
		free(gen2);
		return 2;
	}
	if (hot2)
		printf("ready %d cold %lx %zu hot %lx %zu hot2 %lx %zu passes %lx\n", (int)getpid(),
		       (unsigned long)cold, ncold, (unsigned long)hot, nhot, (unsigned long)hot2, nhot,
		       (unsigned long)&passes);
	else
		printf("ready %d cold %lx %zu hot %lx %zu passes %lx\n", (int)getpid(), (unsigned long)cold, ncold,
		       (unsigned long)hot, nhot, (unsigned long)&passes);
	fflush(stdout);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop && !nhot)
		sleep(1); /* no hot set: a quiet target that only holds its pages (SIGUSR1 cuts the sleep short) */
	while (!stop) {
		bool second = false;
		if (hot2) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			second = t.tv_sec - t0.tv_sec >= shift_s;
		}
		char *h = second ? hot2 : hot;
		uint64_t *gn = second ? gen2 : gen;
		size_t first = ncold + (second ? nhot : 0);
		for (size_t i = 0; i < nhot && !stop; i++) {
			tb_page_touch(h + i * PAGE, 0, first + i, gn[i] + 1);
			gn[i]++;
		}
		passes++;
	}
	size_t bad = tb_pages_bad(cold, ncold, 0, 0, NULL) + tb_pages_bad(hot, nhot, 0, ncold, gen);
	if (hot2)
		bad += tb_pages_bad(hot2, nhot, 0, ncold + nhot, gen2);
	printf("verify: %zu pages, %zu mismatches, %lu passes\n", ncold + nhot * (hot2 ? 2 : 1), bad,
	       (unsigned long)passes);
	fflush(stdout);
	return bad ? 1 : 0;
}
