/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs in the guest: the CPU time `tierbal run` spends on one target, per
 * managed GiB and per sampling round, for one sampler.
 * usage: guest_cpu_bench SAMPLER SECONDS COLD_MB HOT_MB
 * The target is guest_hotcold (COLD_MB written once on node 0, HOT_MB on
 * node 1 written without pause). The daemon's user + system time comes from
 * wait4(); its managed pages and rounds from its last status line.
 * prints "RESULT cpu ..." (or "RESULT cpu ... skipped=REASON" when tierbal
 * refuses the sampler here); exits 0 when measured or skipped, 1 on error. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOG "/tmp/cpu_bench.log"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 5 || atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: guest_cpu_bench SAMPLER SECONDS COLD_MB HOT_MB\n");
		return 2;
	}
	const char *sampler = argv[1], *secs = argv[2];
	char leave[32];
	snprintf(leave, sizeof(leave), "-%s", argv[3]);
	int fds[2];
	if (pipe(fds))
		return 1;
	pid_t target = fork();
	if (target == 0) {
		dup2(fds[1], 1);
		execlp("guest_hotcold", "guest_hotcold", leave, argv[4], (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *out = fdopen(fds[0], "r");
	char line[512];
	if (!out || !fgets(line, sizeof(line), out) || strncmp(line, "ready ", 6)) {
		fprintf(stderr, "cpu_bench: guest_hotcold did not start (is it on PATH?)\n");
		return 1;
	}

	char pid_s[16];
	snprintf(pid_s, sizeof(pid_s), "%d", (int)target);
	double t0 = now_s();
	pid_t d = fork();
	if (d == 0) {
		int fd = open(LOG, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp("tierbal", "tierbal", "run", "--pid", pid_s, "--sampler", sampler, "--duration", secs,
		       "--socket", "/tmp/cpu_bench.sock", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	struct rusage ru;
	if (d < 0 || wait4(d, &st, 0, &ru) != d)
		return 1;
	double wall = now_s() - t0;

	/* the last status line, or the reason tierbal gave for refusing */
	FILE *log = fopen(LOG, "r");
	unsigned long long managed = 0, rounds = 0, promoted = 0, demoted = 0;
	char last[512] = "";
	while (log && fgets(line, sizeof(line), log)) {
		line[strcspn(line, "\n")] = 0;
		snprintf(last, sizeof(last), "%s", line);
		const char *m = strstr(line, " pages managed");
		const char *r = strstr(line, "rounds ");
		if (m && r) {
			const char *c = strstr(line, "targets, ");
			managed = c ? strtoull(c + 9, NULL, 10) : 0;
			rounds = strtoull(r + 7, NULL, 10);
			const char *p = strstr(line, "promoted "), *q = strstr(line, "demoted ");
			promoted = p ? strtoull(p + 9, NULL, 10) : 0;
			demoted = q ? strtoull(q + 8, NULL, 10) : 0;
		}
	}
	if (log)
		fclose(log);

	kill(target, SIGUSR1);
	size_t checked = 0, mism = 1;
	if (!fgets(line, sizeof(line), out) || sscanf(line, "verify: %zu pages, %zu mismatches", &checked, &mism) != 2)
		mism = 1;
	int tst = 0;
	waitpid(target, &tst, 0);

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		for (char *c = last; *c; c++)
			if (*c == ' ')
				*c = '_'; /* one token for the report parser */
		printf("RESULT cpu sampler=%s skipped=%s\n", sampler, last[0] ? last : "tierbal_run_failed");
		return WIFEXITED(st) && WEXITSTATUS(st) == 1 ? 0 : 1;
	}
	double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		     ru.ru_stime.tv_usec / 1e6;
	double gib = (double)managed * 4096 / (1u << 30);
	printf("RESULT cpu sampler=%s cold_mb=%s hot_mb=%s seconds=%s wall_s=%.1f managed_pages=%llu managed_gib=%.3f rounds=%llu "
	       "cpu_s=%.3f user_s=%.3f sys_s=%.3f cpu_pct=%.2f ms_per_gib_per_round=%.2f promoted=%llu demoted=%llu "
	       "checked_pages=%zu mismatches=%zu\n",
	       sampler, argv[3], argv[4], secs, wall, managed, gib, rounds, cpu,
	       (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, 100 * cpu / wall,
	       rounds && gib > 0 ? 1000 * cpu / gib / (double)rounds : 0, promoted, demoted, checked, mism);
	return managed && rounds && !mism ? 0 : 1;
}
