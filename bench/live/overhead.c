/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The workload of bench/exec-overhead: a fixed amount of writing over a
 * region, every page each pass, timed from the first pass to the last.
 * usage: exec_overhead_work MIB PASSES    prints "seconds S checksum C" */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	long passes = argc > 2 ? atol(argv[2]) : 1000;
	size_t pages = mib << 8;
	if (!pages || passes <= 0) {
		fprintf(stderr, "usage: exec_overhead_work MIB PASSES\n");
		return 2;
	}
	uint64_t *m = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	madvise(m, pages * 4096, MADV_NOHUGEPAGE); /* 4 KiB pages, as the guest benchmarks */
	memset(m, 0, pages * 4096);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t sum = 0;
	for (long p = 0; p < passes; p++)
		for (size_t i = 0; i < pages; i++) {
			uint64_t *w = m + i * 512;
			w[0] += (uint64_t)p;
			sum += w[1]++;
		}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("seconds %.4f checksum %llu\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
	       (unsigned long long)sum);
	return 0;
}
