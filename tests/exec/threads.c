/* SPDX-License-Identifier: GPL-2.0-or-later */
/* 8 threads, each writing its own 8 MiB over and over: the results must not
 * depend on tierbal exec write-protecting and releasing their pages. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define WORDS ((8u << 20) / 8)

static void *work(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg, *buf = calloc(WORDS, 8), *sum = malloc(8);
	if (!buf || !sum)
		return NULL;
	for (int round = 0; round < 7200; round++)
		for (size_t i = 0; i < WORDS; i += 64)
			buf[i] = buf[i] * 6364136223846793005ull + seed + (uint64_t)round;
	*sum = 0;
	for (size_t i = 0; i < WORDS; i += 64)
		*sum ^= buf[i] + i;
	free(buf);
	return sum;
}

int main(void)
{
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, work, (void *)(i + 1)))
			return 2;
	for (int i = 0; i < THREADS; i++) {
		uint64_t *s;
		pthread_join(t[i], (void **)&s);
		printf("thread %d: %016llx\n", i, s ? (unsigned long long)*s : 0ull);
		free(s);
	}
	return 0;
}
