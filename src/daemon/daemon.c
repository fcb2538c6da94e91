#include "daemon.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "ctl.h"
#include "live.h"
#include "procfs.h"
#include "target.h"
#include "topology.h"

#define STATUS_EVERY_MS 30000
#define MAX_CLIENTS 16
#define CLIENT_TIMEOUT_MS 2000

int tb_run_config(const struct tb_run_opts *o, struct tb_dconfig *c, char *err, size_t len)
{
	tb_dconfig_default(c);
	if (o->config) {
		int rc = tb_dconfig_load(c, o->config, err, len);
		if (rc)
			return -EINVAL;
	}
	if (o->policy && tb_policy_parse(o->policy, &c->policy)) {
		snprintf(err, len, "--policy: unknown policy '%s' (try 'tierbal sim --list')", o->policy);
		return -EINVAL;
	}
	if (o->sampler && tb_sampler_choice_parse(o->sampler, &c->sampler)) {
		snprintf(err, len, "--sampler: '%s' is not auto, damon or softdirty", o->sampler);
		return -EINVAL;
	}
	if (o->dry_run)
		c->dry_run = true;
	if (o->socket)
		snprintf(c->socket, sizeof(c->socket), "%s", o->socket);
	for (size_t i = 0; i < o->nr_sets; i++) {
		char msg[256];
		if (tb_knob_set(&c->knobs, o->sets[i], msg, sizeof(msg))) {
			snprintf(err, len, "--set %s: %s", o->sets[i], msg);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < o->nr_pids && c->nr_pids < TB_DCFG_MAX_PIDS; i++)
		c->pids[c->nr_pids++] = o->pids[i];
	if (o->cgroup)
		snprintf(c->cgroup, sizeof(c->cgroup), "%s", o->cgroup);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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

struct report_ctx {
	struct tb_live *live;
};

static size_t report(void *ctx, char *buf, size_t len)
{
	return tb_live_report(((struct report_ctx *)ctx)->live, buf, len);
}

static void status_line(struct tb_live *l, const char *when)
{
	const uint64_t *c = tb_engine_counters(tb_live_engine(l));
	uint64_t managed = tb_live_pages_managed(l);
	fprintf(stderr,
		"tierbal: %s: %zu targets, %llu pages managed, promoted %llu, demoted %llu, hint faults %llu, "
		"moves failed %llu\n",
		when, tb_live_nr_targets(l), (unsigned long long)managed, (unsigned long long)c[TB_C_pgpromote_success],
		(unsigned long long)c[TB_C_pgdemote_kswapd], (unsigned long long)c[TB_C_numa_hint_faults],
		(unsigned long long)c[TB_C_pgmigrate_fail]);
}

static void reload(const struct tb_run_opts *o, struct tb_dconfig *cur, struct tb_live *l)
{
	struct tb_dconfig next;
	char err[512];
	if (tb_run_config(o, &next, err, sizeof(err))) {
		fprintf(stderr, "tierbal: SIGHUP: configuration rejected, the old one stays: %s\n", err);
		tb_live_count(l, TB_L_config_rejected);
		return;
	}
	if (next.sampler != cur->sampler || strcmp(next.socket, cur->socket) ||
	    memcmp(next.tier_override, cur->tier_override, sizeof(next.tier_override)) ||
	    next.max_managed_mb != cur->max_managed_mb)
		fprintf(stderr, "tierbal: SIGHUP: sampler, socket, node tiers and max_managed_mb take effect at "
				"the next start only\n");
	tb_live_reconfigure(l, &next);
	for (size_t i = 0; i < next.nr_pids; i++) {
		char msg[256];
		int rc = tb_live_add(l, next.pids[i], false, msg, sizeof(msg));
		if (rc && rc != -EEXIST)
			fprintf(stderr, "tierbal: SIGHUP: %s\n", msg);
	}
	snprintf(cur->cgroup, sizeof(cur->cgroup), "%s", next.cgroup);
	cur->policy = next.policy;
	cur->knobs = next.knobs;
	cur->dry_run = next.dry_run;
	cur->sample_ms = next.sample_ms;
	cur->refresh_ms = next.refresh_ms;
	tb_live_count(l, TB_L_config_reloads);
	fprintf(stderr, "tierbal: SIGHUP: configuration reloaded (policy %s)\n", tb_policy_name(cur->policy));
}

static int setup_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client that hangs up must not kill the daemon */
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int tb_daemon_run(const struct tb_run_opts *o)
{
	struct tb_dconfig cfg;
	char err[1024];
	if (tb_run_config(o, &cfg, err, sizeof(err))) {
		fprintf(stderr, "tierbal run: %s\n", err);
		return 2;
	}
	if (!cfg.nr_pids && !cfg.cgroup[0]) {
		fprintf(stderr, "tierbal run: nothing to manage: give --pid PID or --cgroup PATH (or [targets] in "
				"the configuration)\n");
		return 2;
	}
	if (cfg.cgroup[0]) {
		pid_t *m;
		size_t n;
		int rc = tb_cgroup_pids(cfg.cgroup, &m, &n);
		if (rc) {
			fprintf(stderr, "tierbal run: cgroup %s: cannot read its cgroup.procs: %s (is it a cgroup v2 "
					"directory under /sys/fs/cgroup?)\n",
				cfg.cgroup, strerror(-rc));
			return 1;
		}
		free(m);
	}
	/* refusals first: they are the user's business, the sampler is the machine's */
	pid_t usable_pid[TB_DCFG_MAX_PIDS];
	size_t usable = 0;
	for (size_t i = 0; i < cfg.nr_pids; i++) {
		struct tb_proc_stat st;
		char msg[512];
		if (tb_target_check(cfg.pids[i], &st, msg, sizeof(msg)))
			fprintf(stderr, "tierbal run: %s\n", msg);
		else
			usable_pid[usable++] = cfg.pids[i];
	}
	if (!usable && !cfg.cgroup[0]) {
		fprintf(stderr, "tierbal run: none of the given processes can be managed\n");
		return 1;
	}
	warn_kernel_balancing();
	struct tb_topology topo;
	if (tb_topology_read(&topo, "", err, sizeof(err))) {
		fprintf(stderr, "tierbal run: topology: %s\n", err);
		return 1;
	}
	struct tb_access acc;
	char why[512];
	if (tb_access_open(&acc, tb_sampler_choice_name(cfg.sampler), why, sizeof(why))) {
		fprintf(stderr, "tierbal run: no usable access sampler: %s\n", why);
		return 1;
	}
	fprintf(stderr, "tierbal: sampler: %s\n", why);
	struct tb_live *l;
	if (tb_live_new(&l, &cfg, &topo, acc, why, stderr, err, sizeof(err))) {
		fprintf(stderr, "tierbal run: %s\n", err);
		acc.ops->destroy(acc.ctx);
		return 1;
	}
	int rc = 0;
	for (size_t i = 0; i < usable; i++) { /* the refused ones were reported above */
		char msg[512];
		int r = tb_live_add(l, usable_pid[i], false, msg, sizeof(msg));
		if (r && r != -EEXIST)
			fprintf(stderr, "tierbal run: %s\n", msg);
	}
	tb_live_refresh(l, cfg.cgroup);
	if (!tb_live_nr_targets(l) && !cfg.cgroup[0]) {
		fprintf(stderr, "tierbal run: none of the given processes can be managed\n");
		tb_live_free(l);
		return 1;
	}
	int lfd = tb_ctl_listen(cfg.socket, err, sizeof(err));
	if (lfd < 0) {
		fprintf(stderr, "tierbal run: %s\n", err);
		tb_live_free(l);
		return 1;
	}
	int sfd = setup_signals();
	if (sfd < 0) {
		fprintf(stderr, "tierbal run: signalfd: %s\n", strerror(errno));
		close(lfd);
		unlink(cfg.socket);
		tb_live_free(l);
		return 1;
	}
	fprintf(stderr, "tierbal: running: policy %s, sampling every %u ms, control socket %s%s\n",
		tb_policy_name(cfg.policy), cfg.sample_ms, cfg.socket, cfg.dry_run ? ", dry run: nothing is moved" : "");
	uint64_t start = now_ms(), next_sample = start, next_refresh = start + cfg.refresh_ms,
		 next_status = start + STATUS_EVERY_MS;
	uint64_t deadline = 0;
	if (o->duration_s > 0)
		deadline = start + (uint64_t)(o->duration_s * 1000);
	if (o->once) /* one scan pass over every page, and the round that reads its faults */
		deadline = start + cfg.knobs.scan_delay_ms + cfg.knobs.scan_period_min_ms + 2 * cfg.sample_ms;
	struct report_ctx rctx = {l};
	struct tb_ctl_client cl[MAX_CLIENTS];
	size_t ncl = 0;
	const char *why_stop = "stopped";
	for (;;) {
		uint64_t now = now_ms();
		if (deadline && now >= deadline) {
			why_stop = o->once ? "one pass done" : "duration reached";
			break;
		}
		if (now >= next_refresh) {
			tb_live_refresh(l, cfg.cgroup);
			next_refresh = now + cfg.refresh_ms;
			if (!tb_live_nr_targets(l) && !cfg.cgroup[0]) {
				why_stop = "every target has exited";
				break;
			}
		}
		if (now >= next_sample) {
			tb_live_sample(l);
			next_sample = now + cfg.sample_ms;
		}
		if (now >= next_status) {
			status_line(l, "status");
			next_status = now + STATUS_EVERY_MS;
		}
		now = now_ms();
		uint64_t wake = next_sample < next_refresh ? next_sample : next_refresh;
		if (deadline && deadline < wake)
			wake = deadline;
		int timeout = wake > now ? (int)(wake - now) : 0;
		struct pollfd pf[2 + MAX_CLIENTS] = {{sfd, POLLIN, 0}, {lfd, POLLIN, 0}};
		for (size_t i = 0; i < ncl; i++)
			pf[2 + i] = (struct pollfd){cl[i].fd, POLLIN, 0};
		if (poll(pf, 2 + ncl, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "tierbal run: poll: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		now = now_ms();
		for (size_t i = ncl; i-- > 0;) {
			int done = (pf[2 + i].revents & (POLLIN | POLLHUP | POLLERR)) ? tb_ctl_handle(&cl[i], report, &rctx) : 0;
			if (!done && now - cl[i].since_ms > CLIENT_TIMEOUT_MS) {
				close(cl[i].fd); /* connected and said nothing */
				done = 1;
			}
			if (done)
				cl[i] = cl[--ncl];
		}
		if (pf[1].revents & POLLIN) {
			int fd = tb_ctl_accept(lfd);
			if (fd >= 0 && ncl == MAX_CLIENTS) {
				close(cl[0].fd); /* the oldest waits longest: it goes first */
				cl[0] = cl[--ncl];
			}
			if (fd >= 0)
				cl[ncl++] = (struct tb_ctl_client){.fd = fd, .since_ms = now};
		}
		bool stop = false;
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP)
				reload(o, &cfg, l);
			else
				stop = true;
		}
		if (stop) {
			why_stop = "stopped by a signal";
			break;
		}
	}
	status_line(l, why_stop);
	for (size_t i = 0; i < ncl; i++)
		close(cl[i].fd);
	close(sfd);
	close(lfd);
	unlink(cfg.socket);
	tb_live_free(l);
	return rc;
}
