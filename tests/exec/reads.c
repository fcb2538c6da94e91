/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A program that only reads its memory once it is written: under tierbal
 * exec its hint faults are reads (where the kernel lets tierbal park pages),
 * and its data must come back intact from every trip. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv)
{
	size_t n = (argc > 1 ? strtoul(argv[1], NULL, 10) : 64) << 20;
	int rounds = argc > 2 ? atoi(argv[2]) : 40;
	uint64_t *b = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return 2;
	/* 4 KiB pages: tierbal exec parks no mapping that could hold huge pages */
	madvise(b, n, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < n / 8; i++)
		b[i] = i * 0x9e3779b97f4a7c15ull;
	uint64_t want = 0;
	for (size_t i = 0; i < n / 8; i++)
		want += b[i] ^ (i >> 3);
	for (int r = 0; r < rounds; r++) {
		uint64_t sum = 0;
		for (size_t i = 0; i < n / 8; i++)
			sum += ((volatile uint64_t *)b)[i] ^ (i >> 3);
		if (sum != want) {
			printf("round %d: checksum %016llx, wanted %016llx\n", r, (unsigned long long)sum,
			       (unsigned long long)want);
			return 1;
		}
		struct timespec ts = {0, 50000000}; /* reads come back after a while: scanned windows wait in between */
		nanosleep(&ts, NULL);
	}
	printf("%d rounds of reads, checksum %016llx\n", rounds, (unsigned long long)want);
	return 0;
}
