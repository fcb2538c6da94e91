/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A multithreaded program that forks while its other threads write: each
 * word a writer stores says which generation wrote it and checks itself, so
 * the child of each fork can tell that every word it sees is one the parent
 * really wrote (a page away from its address would read as zeros). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define WRITERS 3
#define WORDS ((8u << 20) / 8)
#define FORKS 30

static uint64_t *region[WRITERS];
static volatile int stop;

static uint64_t word(unsigned r, size_t i, uint64_t gen)
{
	uint64_t h = (gen * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull) ^ r;
	h ^= h >> 29;
	return (gen << 40) | (h & 0xffffffffffull) | 1ull << 63;
}

static size_t bad_words(unsigned r)
{
	size_t bad = 0;
	for (size_t i = 0; i < WORDS; i++) {
		uint64_t w = region[r][i];
		if (w != word(r, i, (w >> 40) & 0x7fffff))
			bad++;
	}
	return bad;
}

static void *writer(void *arg)
{
	unsigned r = (unsigned)(uintptr_t)arg;
	size_t bad = 0;
	for (uint64_t gen = 1; !stop || gen < 4; gen++) {
		for (size_t i = 0; i < WORDS; i += 7)
			region[r][i] = word(r, i, gen);
		for (size_t i = 0; i < WORDS; i++)
			if (i % 7)
				region[r][i] = word(r, i, gen);
		bad += bad_words(r);
	}
	return (void *)bad;
}

int main(void)
{
	for (unsigned r = 0; r < WRITERS; r++) {
		region[r] = malloc(WORDS * 8);
		if (!region[r])
			return 2;
		for (size_t i = 0; i < WORDS; i++)
			region[r][i] = word(r, i, 0);
	}
	pthread_t t[WRITERS];
	for (unsigned r = 0; r < WRITERS; r++)
		pthread_create(&t[r], NULL, writer, (void *)(uintptr_t)r);
	int children_bad = 0;
	for (int f = 0; f < FORKS; f++) {
		pid_t c = fork();
		if (c == 0) {
			size_t bad = 0;
			for (unsigned r = 0; r < WRITERS; r++)
				bad += bad_words(r);
			_exit(bad ? 1 : 0);
		}
		int st;
		if (c < 0 || waitpid(c, &st, 0) != c)
			return 3;
		children_bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	stop = 1;
	size_t parent_bad = 0;
	for (unsigned r = 0; r < WRITERS; r++) {
		void *b;
		pthread_join(t[r], &b);
		parent_bad += (size_t)b;
	}
	printf("%d forks beside %d writing threads: %d children saw a word nobody wrote, the writers %zu\n", FORKS,
	       WRITERS, children_bad, parent_bad);
	return children_bad || parent_bad;
}
