/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A program with its own SIGSEGV handler: it protects a page, touches it,
 * and its handler lifts the protection. Under tierbal exec the handler must
 * see exactly its own faults, and the program's data must stay right. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *page;
static volatile sig_atomic_t hits, wrong;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (((uintptr_t)si->si_addr & ~(uintptr_t)4095) != (uintptr_t)page)
		wrong = 1;
	hits++;
	mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

int main(void)
{
	size_t n = 32u << 20;
	uint64_t *buf = malloc(n);
	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!buf || page == MAP_FAILED)
		return 2;
	struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO};
	sigaction(SIGSEGV, &sa, NULL);
	uint64_t sum = 0;
	for (int round = 0; round < 12000; round++) {
		for (size_t i = 0; i < n / 8; i += 512)
			buf[i] = buf[i] * 31 + (uint64_t)round + i;
		mprotect(page, 4096, PROT_NONE);
		page[round % 4096] = (char)round; /* faults: the handler opens the page */
	}
	for (size_t i = 0; i < n / 8; i += 512)
		sum += buf[i];
	printf("handler ran %d times (wanted 12000), %s fault addresses, checksum %016llx\n", (int)hits,
	       wrong ? "wrong" : "right", (unsigned long long)sum);
	return hits == 12000 && !wrong ? 0 : 1;
}
