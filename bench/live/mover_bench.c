/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs in the guest: tierbal's mover (move_pages(2) in batches) against
 * numactl's migratepages (migrate_pages(2)) moving the same 256 MiB of a
 * quiet process between node 0 and node 1, both directions, several rounds
 * (medians, because the emulated machine's timings are noisy).
 * usage: guest_mover_bench [MIB [ROUNDS]]
 * prints one "RESULT mover ..." line per move and a "RESULT mover_summary ..."
 * line; exits 0 only if every move put every page where it was sent and the
 * target's checksums held. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux/mover.h"

#define PAGE 4096u

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static size_t on_node(pid_t pid, void **pages, size_t n, int node)
{
	size_t c;
	return tb_mover_count(pid, pages, n, node, &c) ? 0 : c;
}

/* migratepages PID FROM TO, timed from fork to exit: what a user of it pays */
static int migratepages(pid_t pid, int from, int to, double *secs)
{
	char p[16], f[8], t[8];
	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(f, sizeof(f), "%d", from);
	snprintf(t, sizeof(t), "%d", to);
	double t0 = now_s();
	pid_t c = fork();
	if (c == 0) {
		execlp("migratepages", "migratepages", p, f, t, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (c < 0 || waitpid(c, &st, 0) != c)
		return -errno;
	*secs = now_s() - t0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 256;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	if (mib <= 0 || rounds <= 0 || rounds > 25) {
		fprintf(stderr, "usage: guest_mover_bench [MIB [ROUNDS]] (MIB > 0, 1 <= ROUNDS <= 25)\n");
		return 2;
	}
	/* the target: exactly MIB of checksummed pages on node 0, then idle */
	char leave[32];
	snprintf(leave, sizeof(leave), "-%ld", mib);
	int fds[2];
	if (pipe(fds))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		execlp("guest_hotcold", "guest_hotcold", leave, "0", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *out = fdopen(fds[0], "r");
	char line[256];
	unsigned long addr = 0, hot = 0;
	size_t n = 0, nhot = 0;
	int rpid = 0;
	if (!out || !fgets(line, sizeof(line), out) ||
	    sscanf(line, "ready %d cold %lx %zu hot %lx %zu", &rpid, &addr, &n, &hot, &nhot) != 5) {
		fprintf(stderr, "mover_bench: guest_hotcold did not start (is it on PATH?)\n");
		return 1;
	}
	void **pages = malloc(n * sizeof(*pages));
	int *status = malloc(n * sizeof(*status));
	if (!pages || !status)
		return 1;
	for (size_t i = 0; i < n; i++)
		pages[i] = (void *)(addr + i * PAGE);
	int bad = 0;
	if (on_node(pid, pages, n, 0) != n) {
		fprintf(stderr, "mover_bench: the target's pages are not all on node 0 to begin with\n");
		bad = 1;
	}

	/* Each round moves the pages 0 -> 1 -> 0 twice, once per tool and direction,
	 * and odd rounds let the other tool go first, so that neither tool always
	 * meets the same state of the machine. */
	double mp[100], tb[100];
	int nmp = 0, ntb = 0;
	for (int r = 0; r < rounds && !bad; r++) {
		for (int step = 0; step < 4 && !bad; step++) {
			int from = step % 2, to = 1 - from;
			bool mig = (step == 0 || step == 3) ^ (r % 2);
			struct tb_mover_stats st = {0};
			double s = 0;
			int rc;
			if (mig) {
				rc = migratepages(pid, from, to, &s);
			} else {
				double t0 = now_s();
				rc = tb_mover_move(pid, pages, n, to, status, &st);
				s = now_s() - t0;
			}
			size_t there = on_node(pid, pages, n, to);
			printf("RESULT mover tool=%s round=%d from=%d to=%d pages=%zu on_target=%zu secs=%.4f mib_per_s=%.1f "
			       "rc=%d calls=%llu busy=%llu nomem=%llu\n",
			       mig ? "migratepages" : "tierbal", r + 1, from, to, n, there, s,
			       (double)n * PAGE / (1 << 20) / s, rc, (unsigned long long)st.calls,
			       (unsigned long long)st.busy, (unsigned long long)st.nomem);
			if (rc || there != n)
				bad = 1;
			if (mig)
				mp[nmp++] = s;
			else
				tb[ntb++] = s;
		}
		fflush(stdout);
	}

	/* the cost of starting migratepages alone: a move from node 0 to node 0 */
	double start_s = 0;
	if (!bad && migratepages(pid, 0, 0, &start_s))
		bad = 1;

	kill(pid, SIGUSR1);
	size_t checked = 0, mism = 1;
	if (!fgets(line, sizeof(line), out) || sscanf(line, "verify: %zu pages, %zu mismatches", &checked, &mism) != 2)
		bad = 1;
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || mism)
		bad = 1;
	if (nmp && ntb) {
		double mmed = median(mp, nmp), tmed = median(tb, ntb);
		double mb = (double)n * PAGE / (1 << 20);
		printf("RESULT mover_summary mib=%.0f moves=%d migratepages_median_s=%.4f migratepages_mib_per_s=%.1f "
		       "migratepages_start_s=%.4f tierbal_median_s=%.4f tierbal_mib_per_s=%.1f ratio=%.3f "
		       "checked_pages=%zu mismatches=%zu ok=%d\n",
		       mb, nmp, mmed, mb / mmed, start_s, tmed, mb / tmed, mmed / tmed, checked, mism, !bad);
	}
	free(pages);
	free(status);
	return bad;
}
