/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fork, exec and exit statuses: children inherit a working runtime (fork)
 * or get a fresh one (exec); both must behave as without tierbal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t churn(uint64_t *buf, size_t words, int rounds)
{
	uint64_t s = 0;
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < words; i += 512)
			buf[i] = buf[i] * 31 + (uint64_t)r;
	for (size_t i = 0; i < words; i += 512)
		s += buf[i];
	return s;
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* the exec'd image */
		uint64_t *b = calloc((8u << 20) / 8, 8);
		printf("exec'd image (%s): %016llx\n", argv[1], (unsigned long long)churn(b, (8u << 20) / 8, 100000));
		free(b);
		return 5;
	}
	size_t words = (16u << 20) / 8;
	uint64_t *buf = calloc(words, 8);
	printf("parent before fork: %016llx\n", (unsigned long long)churn(buf, words, 50000));
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		printf("child: %016llx\n", (unsigned long long)churn(buf, words, 80000));
		fflush(stdout);
		_exit(7);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child exit status %d\n", WEXITSTATUS(st));
	printf("parent after fork: %016llx\n", (unsigned long long)churn(buf, words, 100));
	fflush(stdout);
	c = fork();
	if (c == 0) {
		execl("/proc/self/exe", argv[0], "again", (char *)NULL);
		_exit(127);
	}
	waitpid(c, &st, 0);
	printf("exec'd child exit status %d\n", WEXITSTATUS(st));
	return 0;
}
