/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A program that really crashes: it must die of SIGSEGV under tierbal exec too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	size_t n = 16u << 20;
	volatile uint64_t *buf = malloc(n);
	if (!buf)
		return 2;
	for (int round = 0; round < 40000; round++)
		for (size_t i = 0; i < n / 8; i += 512)
			buf[i] += (uint64_t)round;
	printf("about to crash\n");
	fflush(stdout);
	volatile int *bad = (volatile int *)(uintptr_t)strtoul("8", NULL, 10); /* hidden from the compiler */
	*bad = 1;
	printf("not reached\n");
	return 0;
}
