/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal run: the daemon over processes given by pid or cgroup, seen by
 * a sampler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/live.h"

static long read_long(const char *path, long fallback)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return fallback;
	char buf[32] = "";
	long v = fallback;
	if (fgets(buf, sizeof(buf), f))
		v = !strncmp(buf, "true", 4) ? 1 : !strncmp(buf, "false", 5) ? 0 : strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

/* The kernel's own balancing moves the same pages by its own rules. */
static void warn_kernel_balancing(void)
{
	long nb = read_long("/proc/sys/kernel/numa_balancing", 0);
	if (nb > 0)
		fprintf(stderr,
			"tierbal: warning: the kernel's NUMA balancing is on (kernel.numa_balancing = %ld) and will "
			"move the same pages; turn it off with 'sysctl kernel.numa_balancing=0'\n",
			nb);
	if (read_long("/sys/kernel/mm/numa/demotion_enabled", 0) > 0)
		fprintf(stderr, "tierbal: warning: kernel demotion is on (/sys/kernel/mm/numa/demotion_enabled); "
				"kswapd will demote pages by its own rules; write 'false' there to leave it to "
				"tierbal\n");
}


static int run_check(void *ctx, struct tb_daemon *d)
{
	(void)ctx;
	if (d->cfg.sampler == TB_SAMPLER_NONE) {
		fprintf(stderr, "tierbal run: --sampler none sees nothing without the hint faults of tierbal exec\n");
		return 2;
	}
	if (!d->cfg.nr_pids && !d->cfg.cgroup[0]) {
		fprintf(stderr, "tierbal run: nothing to manage: give --pid PID or --cgroup PATH (or [targets] in "
				"the configuration)\n");
		return 2;
	}
	return 0;
}

static int run_prepare(void *ctx, struct tb_daemon *d)
{
	(void)ctx;
	tb_daemon_pick_targets(d);
	if (!d->nr_usable && !d->cfg.cgroup[0]) {
		fprintf(stderr, "tierbal run: none of the given processes can be managed\n");
		return 1;
	}
	return 0;
}

static int run_start(void *ctx, struct tb_daemon *d)
{
	(void)ctx;
	(void)d;
	warn_kernel_balancing();
	return 0;
}

static int run_attach(void *ctx, struct tb_daemon *d)
{
	(void)ctx;
	if (!tb_live_nr_targets(d->live) && !d->cfg.cgroup[0]) {
		fprintf(stderr, "tierbal run: none of the given processes can be managed\n");
		return 1;
	}
	return 0;
}

const struct tb_daemon_mode tb_run_mode = {
	.name = "tierbal run",
	.ends_without_targets = true,
	.check = run_check,
	.prepare = run_prepare,
	.start = run_start,
	.attach = run_attach,
};
