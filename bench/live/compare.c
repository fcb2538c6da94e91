/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs in the guest (tier layout), from bench/kernel-compare: one run of the
 * side-by-side comparison. The workload is guest_hotcold: node 0 full of cold
 * pages, a 64 MiB hot set written without pause on node 1, and after SHIFT_S
 * seconds a second 64 MiB hot set on node 1 takes over.
 *
 *   usage: guest_compare none|kernel|exec|exec-rw|run|damon SECONDS SHIFT_S [huge]
 *
 * huge: the hot sets are MADV_HUGEPAGE (guest_hotcold --huge), for a guest
 * whose THP setting is always or madvise; the RESULT line then also says how
 * much of them THP backed after set-up, at the shift and at the end
 *
 * none    no balancing at all
 * kernel  the kernel's own: numa_balancing = 2 (memory tiering), demotion on
 * exec    tierbal exec (hint faults from userfaultfd), the dynamic guest_hotcold_dyn:
 *         writes only on 6.1, which cannot move pages for a userfaultfd
 * exec-rw the same on a kernel that can (6.12): windows parked, reads fault too
 * run     tierbal run --pid, with its best sampler (soft-dirty on 6.1)
 * damon   tierbal run --pid --sampler damon (a kernel with DAMON: 6.12)
 *
 * Time 0 is when the workload has set up and starts writing its hot set. About
 * every second it prints a SAMPLE line with the real time it read the
 * placement at: the share of the current hot set on node 0 (move_pages,
 * nodes = NULL), page moves and ping-pongs seen by comparing every page's
 * node with the sample before, the workload's passes so far, /proc/vmstat
 * deltas since before the workload started, and tierbal's own counters; at
 * the end a RESULT line (with the moves after the shift on their own: every
 * balancer starts that phase from the same placement). */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux/mover.h"
#include "linux/topology.h"

#define SOCK "/tmp/compare.sock"
#define PAGE 4096u
#define STEADY_S 10

static const char *const vm_names[] = {"pgpromote_success",     "pgpromote_candidate", "pgdemote_kswapd",
				       "pgdemote_direct",       "numa_hint_faults",    "numa_hint_faults_local",
				       "pgmigrate_success",     "pgmigrate_fail",      "numa_pages_migrated",
				       "thp_migration_success", "thp_migration_fail",  "thp_migration_split"};
#define NR_VM (sizeof(vm_names) / sizeof(vm_names[0]))
static const char *const tb_names[] = {"pgpromote_success",   "pgdemote_kswapd",  "numa_hint_faults",
				       "uffd_faults",         "uffd_faults_read", "node0_wmark_high",
				       "node0_wmark_demote",  "pgmigrate_fail",   "thp_migration_success",
				       "thp_migration_split", "uffd_armed_huge",  "uffd_faults_huge"};
#define NR_TB (sizeof(tb_names) / sizeof(tb_names[0]))

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void put(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(val, f);
		fclose(f);
	}
}

static void vmstat(long long *v)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char name[64];
	long long x;
	memset(v, 0, NR_VM * sizeof(*v));
	while (f && fscanf(f, "%63s %lld", name, &x) == 2)
		for (size_t i = 0; i < NR_VM; i++)
			if (!strcmp(name, vm_names[i]))
				v[i] = x;
	if (f)
		fclose(f);
}

/* node 0's watermarks as the kernel keeps them: high, and promo, the level
 * kswapd demotes up to when a promotion found too little free memory, one
 * watermark distance (high - low) above high (6.1 does not list it) */
static void zone_wmarks(long long *high, long long *promo)
{
	struct tb_topology t = {.nr_nodes = 1};
	*high = *promo = 0;
	if (tb_topology_read_zones(&t, ""))
		return;
	*high = (long long)t.node[0].wmark_high;
	*promo = *high + (long long)(t.node[0].wmark_high - t.node[0].wmark_low);
}

/* the process's AnonHugePages in kB (only its hot sets may be huge), or -1 */
static long long anon_huge_kb(pid_t pid)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	FILE *f = fopen(path, "r");
	long long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* the workload's running count of passes over its hot set, or -1 */
static long long read_passes(pid_t pid, unsigned long addr)
{
	unsigned long v;
	struct iovec local = {&v, sizeof(v)}, remote = {(void *)addr, sizeof(v)};
	if (!addr || process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(v))
		return -1;
	return (long long)v;
}

/* tierbal's counters through its control socket (tierbal stat), or -1: the
 * daemon answers between its rounds, so the question gets half a second */
static void tb_stats(long long *v)
{
	for (size_t i = 0; i < NR_TB; i++)
		v[i] = -1;
	FILE *p = popen("timeout 0.5 tierbal stat --socket " SOCK " 2>/dev/null", "r");
	char name[64];
	char val[64];
	while (p && fscanf(p, "%63s %63s", name, val) == 2)
		for (size_t i = 0; i < NR_TB; i++)
			if (!strcmp(name, tb_names[i]))
				v[i] = atoll(val);
	if (p)
		pclose(p);
}

/* passes per second from the first sample at or after `from` seconds to the
 * last one at or before `to`, or -1 where there are none */
static double rate(const long long *passes, const double *at, int samples, double from, double to)
{
	int a = -1, b = -1;
	for (int s = 1; s <= samples; s++) {
		if (passes[s] < 0)
			continue;
		if (a < 0 && at[s] >= from)
			a = s;
		if (at[s] <= to)
			b = s;
	}
	if (a < 0 || b <= a || at[b] - at[a] < 1)
		return -1;
	return (double)(passes[b] - passes[a]) / (at[b] - at[a]);
}

static pid_t spawn(char *const argv[], int out_fd, const char *log)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, 1);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "huge"))) {
		fprintf(stderr, "usage: guest_compare none|kernel|exec|exec-rw|run|damon SECONDS SHIFT_S [huge]\n");
		return 2;
	}
	bool huge = argc == 5;
	const char *mode = argv[1];
	int secs = atoi(argv[2]), shift = atoi(argv[3]);
	bool kernel = !strcmp(mode, "kernel"), exec = !strcmp(mode, "exec") || !strcmp(mode, "exec-rw"),
	     damon = !strcmp(mode, "damon"), run = damon || !strcmp(mode, "run");
	if (!kernel && !exec && !run && strcmp(mode, "none")) {
		fprintf(stderr, "guest_compare: unknown mode '%s'\n", mode);
		return 2;
	}
	put("/proc/sys/kernel/numa_balancing", kernel ? "2" : "0");
	put("/sys/kernel/mm/numa/demotion_enabled", kernel ? "true" : "false");
	signal(SIGPIPE, SIG_IGN);
	/* counters from before the workload starts: the kernel's balancing (and
	 * tierbal exec's runtime) already moves pages while the program sets up */
	long long vm0[NR_VM], vm[NR_VM], tb[NR_TB];
	vmstat(vm0);

	int fds[2];
	if (pipe(fds))
		return 1;
	char shift_s[16];
	snprintf(shift_s, sizeof(shift_s), "%d", shift);
	/* 100 MiB left free: tierbal exec starts while the program fills node 0 and needs some */
	char *direct[] = {"guest_hotcold", "100", "64", shift_s, NULL, NULL};
	char *under[] = {
		"tierbal", "exec", "--socket", SOCK, "--log", "/tmp/compare-exec.log", "--", "guest_hotcold_dyn",
		"100",     "64",   shift_s,    NULL, NULL};
	if (huge) { /* the option goes first: guest_hotcold [--huge] LEAVE_MB HOT_MB SHIFT_S */
		char **v = exec ? under + 7 : direct;
		memmove(v + 2, v + 1, 3 * sizeof(*v));
		v[1] = "--huge";
	}
	pid_t runner = spawn(exec ? under : direct, fds[1], "/tmp/compare-target.log");
	close(fds[1]);
	FILE *out = fdopen(fds[0], "r");
	char line[512];
	int pid = 0;
	unsigned long cold, hot, hot2, passes_at = 0;
	size_t ncold, nhot, nhot2;
	if (!out || !fgets(line, sizeof(line), out) ||
	    sscanf(line, "ready %d cold %lx %zu hot %lx %zu hot2 %lx %zu", &pid, &cold, &ncold, &hot, &nhot, &hot2,
		   &nhot2) != 7) {
		fprintf(stderr, "guest_compare: the workload did not start (see /tmp/compare-target.log)\n");
		return 1;
	}
	/* time 0: the hot set starts being written without pause */
	double t0 = now_s();
	long long huge_start = huge ? anon_huge_kb(pid) : -1, huge_shift = -1, huge_end = -1;
	const char *pa = strstr(line, " passes ");
	if (!pa || sscanf(pa, " passes %lx", &passes_at) != 1)
		passes_at = 0;
	pid_t daemon = 0;
	if (run) {
		char p[16];
		snprintf(p, sizeof(p), "%d", pid);
		char *d[] = {"tierbal", "run", "--pid", p, "--socket", SOCK, "--sampler", damon ? "damon" : "auto",
			     NULL};
		daemon = spawn(d, -1, "/tmp/compare-run.log");
	}
	/* every page of the workload, and where it was a second ago */
	size_t n = ncold + nhot + nhot2;
	void **pages = malloc(n * sizeof(*pages));
	int *node = malloc(n * sizeof(*node)), *last = malloc(n * sizeof(*last)), *before = malloc(n * sizeof(*before));
	if (!pages || !node || !last || !before)
		return 1;
	for (size_t i = 0; i < ncold; i++)
		pages[i] = (void *)(cold + i * PAGE);
	for (size_t i = 0; i < nhot; i++)
		pages[ncold + i] = (void *)(hot + i * PAGE);
	for (size_t i = 0; i < nhot2; i++)
		pages[ncold + nhot + i] = (void *)(hot2 + i * PAGE);
	tb_mover_query(pid, pages, n, last);
	for (size_t i = 0; i < n; i++)
		before[i] = -1;
	double t90a = -1, t90b = -1, share_a = 0, share_b = 0, early_b = 0;
	/* moves_a, pingpong_a: as of the last sample before the shift */
	long long moves = 0, pingpong = 0, moves_a = 0, pingpong_a = 0;
	/* steady state: the passes of the last STEADY_S seconds of each phase, when
	 * every balancer has long since brought the hot set in */
	long long *passes = calloc((size_t)secs + 1, sizeof(*passes));
	if (!passes)
		return 1;
	for (int s = 0; s <= secs; s++)
		passes[s] = -1;
	passes[0] = read_passes(pid, passes_at);
	/* t: real seconds since the start, taken when placement was read; a sample
	 * can come late (the query of every page, tierbal stat) and must not
	 * pretend to be on time */
	double *at = calloc((size_t)secs + 1, sizeof(*at));
	if (!at)
		return 1;
	long long tb_last[NR_TB];
	for (size_t i = 0; i < NR_TB; i++)
		tb[i] = tb_last[i] = -1;
	int samples = 0;
	for (int s = 1; s <= secs; s++) {
		double next = t0 + s;
		for (double w; (w = next - now_s()) > 0;) {
			struct timespec ts = {(time_t)w, (long)((w - (double)(time_t)w) * 1e9)};
			nanosleep(&ts, NULL);
		}
		if (tb_mover_query(pid, pages, n, node))
			break;
		double t = now_s() - t0;
		passes[s] = read_passes(pid, passes_at);
		at[s] = t;
		samples = s;
		for (size_t i = 0; i < n; i++) {
			if (node[i] < 0 || node[i] == last[i] || last[i] < 0) {
				if (last[i] < 0)
					last[i] = node[i];
				continue;
			}
			moves++;
			if (node[i] == before[i])
				pingpong++; /* back where it was before its last move */
			before[i] = last[i];
			last[i] = node[i];
		}
		bool second = t >= shift;
		size_t first = second ? ncold + nhot : ncold, cnt = second ? nhot2 : nhot, on0 = 0;
		for (size_t i = first; i < first + cnt; i++)
			on0 += node[i] == 0;
		double share = (double)on0 / (double)cnt;
		if (!second) {
			/* the second hot set, not yet written: a balancer that brings it in
			 * now took cold pages for hot ones */
			size_t early = 0;
			for (size_t i = ncold + nhot; i < n; i++)
				early += node[i] == 0;
			early_b = nhot2 ? (double)early / (double)nhot2 : 0;
			share_a = share;
			moves_a = moves;
			pingpong_a = pingpong;
			if (huge)
				huge_shift = anon_huge_kb(pid);
			if (t90a < 0 && share >= 0.9)
				t90a = t;
		} else {
			share_b = share;
			if (t90b < 0 && share >= 0.9)
				t90b = t - shift;
		}
		vmstat(vm);
		if (exec || run) {
			tb_stats(tb_last); /* a daemon busy with a long round leaves the last answer standing */
			for (size_t i = 0; i < NR_TB; i++)
				if (tb_last[i] >= 0)
					tb[i] = tb_last[i];
		}
		printf("SAMPLE mode=%s t=%.2f phase=%d hot_share=%.4f moves=%lld pingpong=%lld passes=%lld", mode, t,
		       second ? 2 : 1, share, moves, pingpong, passes[s]);
		for (size_t i = 0; i < NR_VM; i++)
			printf(" vm_%s=%lld", vm_names[i], vm[i] - vm0[i]);
		for (size_t i = 0; i < NR_TB; i++)
			printf(" tb_%s=%lld", tb_names[i], tb[i]);
		printf("\n");
		fflush(stdout);
	}
	if (huge)
		huge_end = anon_huge_kb(pid);
	kill(pid, SIGUSR1);
	size_t checked = 0, mism = 1;
	unsigned long total_passes = 0;
	if (!fgets(line, sizeof(line), out) ||
	    sscanf(line, "verify: %zu pages, %zu mismatches, %lu passes", &checked, &mism, &total_passes) != 3)
		mism = 1;
	if (daemon) {
		kill(daemon, SIGTERM);
		waitpid(daemon, NULL, 0);
	}
	int st = 0;
	waitpid(runner, &st, 0);
	put("/proc/sys/kernel/numa_balancing", "0");
	put("/sys/kernel/mm/numa/demotion_enabled", "false");
	long long khigh, kpromo;
	zone_wmarks(&khigh, &kpromo);
	int steady = shift / 3 < STEADY_S ? shift / 3 : STEADY_S;
	printf("RESULT compare mode=%s seconds=%d shift=%d t90_phase1=%.1f share_phase1=%.4f t90_phase2=%.1f "
	       "share_phase2=%.4f early_phase2=%.4f hot_pages=%zu moves=%lld pingpong=%lld moves_phase2=%lld pingpong_phase2=%lld "
	       "steady_s=%d rate_phase1=%.1f rate_phase2=%.1f kernel_node0_high=%lld kernel_node0_promo=%lld",
	       mode, secs, shift, t90a, share_a, t90b, share_b, early_b, nhot, moves, pingpong, moves - moves_a,
	       pingpong - pingpong_a, steady, rate(passes, at, samples, shift - 1 - steady, shift - 1),
	       rate(passes, at, samples, secs - steady, secs), khigh, kpromo);
	for (size_t i = 0; i < NR_VM; i++)
		printf(" vm_%s=%lld", vm_names[i], vm[i] - vm0[i]);
	for (size_t i = 0; i < NR_TB; i++)
		printf(" tb_%s=%lld", tb_names[i], tb[i]);
	if (huge)
		printf(" huge_kb_start=%lld huge_kb_shift=%lld huge_kb_end=%lld", huge_start, huge_shift, huge_end);
	printf(" checked_pages=%zu mismatches=%zu passes=%lu exit=%d\n", checked, mism, total_passes,
	       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	free(passes);
	free(at);
	return mism != 0;
}
