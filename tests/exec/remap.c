/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Mappings that come and go at the same addresses, as an interpreter's
 * frame stacks do: each thread maps 16 KiB, fills it, reads it back a few
 * times, and unmaps it, over and over; a second mapping at an address
 * tierbal still knows from the first must read what this one wrote. Also
 * a thread that discards (MADV_DONTNEED) and refills a buffer, which must
 * then read zeros where it did not write. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define THREADS 3
#define CYCLES 3000u
#define CHUNK (16u << 10)

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uintptr_t bad = 0;
	for (unsigned c = 0; c < CYCLES; c++) {
		uint64_t *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return (void *)-1;
		for (size_t i = 0; i < CHUNK / 8; i += 64)
			if (p[i]) /* a fresh mapping holds zeros */
				bad++;
		for (size_t i = 0; i < CHUNK / 8; i++)
			p[i] = (id << 48) ^ ((uint64_t)c << 20) ^ i;
		for (int pass = 0; pass < 4; pass++)
			for (size_t i = 0; i < CHUNK / 8; i += 8)
				bad += p[i] != ((id << 48) ^ ((uint64_t)c << 20) ^ i);
		munmap(p, CHUNK);
	}
	return (void *)bad;
}

static void *discard(void *arg)
{
	(void)arg;
	size_t len = 4u << 20;
	uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return (void *)-1;
	uintptr_t bad = 0;
	for (unsigned c = 1; c <= 300; c++) {
		for (size_t i = 0; i < len / 8; i += 512)
			p[i] = c;
		for (size_t i = 0; i < len / 8; i += 512)
			bad += p[i] != c;
		madvise(p, len, MADV_DONTNEED);
		for (size_t i = 0; i < len / 8; i += 512)
			bad += p[i] != 0; /* discarded: zeros, not an older page */
	}
	munmap(p, len);
	return (void *)bad;
}

int main(void)
{
	pthread_t t[THREADS + 1];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, churn, (void *)i);
	pthread_create(&t[THREADS], NULL, discard, NULL);
	uintptr_t bad = 0;
	for (int i = 0; i <= THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += (uintptr_t)r;
	}
	printf("%d threads mapped and unmapped %u chunks each, one discarded a buffer 300 times: %lu bad words\n",
	       THREADS, CYCLES, (unsigned long)bad);
	return bad != 0;
}
