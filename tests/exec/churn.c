/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mmap, mremap, madvise and munmap in a loop while writing: the number of
 * mappings must stay bounded (tierbal registers whole mappings, it never
 * splits one), and every page must keep what was written. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;
	while (f && (c = fgetc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

int main(void)
{
	size_t keep_n = (16u << 20) / 8;
	/* the long-lived buffer in 4 KiB pages, for hint faults enough to tell
	 * that tierbal watched (a huge page faults once for 512); the churned
	 * mappings get huge pages where the kernel gives them */
	uint64_t *keep = mmap(NULL, keep_n * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (keep == MAP_FAILED)
		return 2;
	madvise(keep, keep_n * 8, MADV_NOHUGEPAGE);
	int base = maps_count(), most = base, bad = 0;
	for (int it = 0; it < 500; it++) {
		size_t len = (size_t)(1 + it % 7) << 20;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 2;
		for (size_t i = 0; i < len; i += 4096)
			p[i] = (char)(i >> 12);
		char *q = mremap(p, len, 2 * len, MREMAP_MAYMOVE);
		if (q == MAP_FAILED)
			return 2;
		for (size_t i = 0; i < len; i += 4096)
			bad += q[i] != (char)(i >> 12);
		madvise(q, len / 2, MADV_DONTNEED);
		for (size_t i = 0; i < len / 2; i += 4096)
			bad += q[i] != 0;
		munmap(q, 2 * len);
		for (size_t i = it % 512; i < keep_n; i += 512)
			keep[i] += (uint64_t)it;
		if (it % 50 == 0) {
			int m = maps_count();
			most = m > most ? m : most;
		}
	}
	uint64_t s = 0;
	for (size_t i = 0; i < keep_n; i++)
		s += keep[i];
	printf("mappings grew by %s, %d wrong bytes, checksum %016llx\n",
	       most - base <= 16 ? "at most 16" : "more than 16", bad, (unsigned long long)s);
	if (most - base > 16)
		fprintf(stderr, "churn: %d mappings at most, %d at start\n", most, base);
	return bad || most - base > 16;
}
