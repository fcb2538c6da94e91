/* SPDX-License-Identifier: GPL-2.0-or-later */
/* posix_spawn and vfork: children that share the parent's memory until
 * they exec, and read it meanwhile (a vfork child sums a buffer the parent
 * keeps writing between spawns). Output and exit status must be the same
 * with and without tierbal exec. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define WORDS ((32u << 20) / 8)

static uint64_t sum(const uint64_t *b, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i += 64)
		s = s * 1000003u + b[i];
	return s;
}

/* vfork in functions of their own: the child borrows the caller's stack */
static __attribute__((noinline)) int vfork_reads(const uint64_t *buf, uint64_t want)
{
	int st;
	pid_t pid = vfork();
	if (pid == 0)
		_exit(sum(buf, WORDS) == want ? 0 : 1);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WEXITSTATUS(st);
}

static __attribute__((noinline)) int vfork_execs(void)
{
	int st;
	pid_t pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WEXITSTATUS(st);
}

int main(void)
{
	uint64_t *buf = malloc(WORDS * 8);
	if (!buf)
		return 2;
	for (size_t i = 0; i < WORDS; i++)
		buf[i] = i * 2654435761u;
	uint64_t total = 0;
	for (int round = 0; round < 16; round++) {
		for (size_t i = (size_t)round; i < WORDS; i += 512)
			buf[i] += (uint64_t)round;
		/* posix_spawn: CLONE_VM | CLONE_VFORK in the C library, no fork handlers */
		char code[32];
		snprintf(code, sizeof(code), "exit %d", round % 7);
		char *sh[] = {"sh", "-c", code, NULL};
		pid_t pid;
		int st;
		if (posix_spawn(&pid, "/bin/sh", NULL, NULL, sh, environ) || waitpid(pid, &st, 0) != pid)
			return 3;
		total += (uint64_t)WEXITSTATUS(st);
		/* a spawned child whose output comes back through a pipe */
		int p[2];
		if (pipe(p))
			return 4;
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[1], 1);
		posix_spawn_file_actions_addclose(&fa, p[0]);
		char arg[32];
		snprintf(arg, sizeof(arg), "%d", round * 3);
		char *ex[] = {"expr", arg, "+", "1", NULL};
		if (posix_spawnp(&pid, "expr", &fa, NULL, ex, environ))
			return 5;
		posix_spawn_file_actions_destroy(&fa);
		close(p[1]);
		char out[32] = {0};
		ssize_t n = read(p[0], out, sizeof(out) - 1);
		close(p[0]);
		waitpid(pid, &st, 0);
		total += n > 0 ? (uint64_t)strtoul(out, NULL, 10) : 1000000;
		/* vfork: the child reads the parent's memory before it leaves */
		int rc = vfork_reads(buf, sum(buf, WORDS));
		if (rc < 0)
			return 6;
		if (rc)
			printf("round %d: the vfork child read other memory than its parent\n", round);
		/* vfork then exec */
		rc = vfork_execs();
		if (rc < 0)
			return 7;
		total += (uint64_t)rc;
	}
	printf("spawned 64 children, total %llu, memory %016llx\n", (unsigned long long)total,
	       (unsigned long long)sum(buf, WORDS));
	free(buf);
	return 0;
}
