/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daemon/daemon.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "access/access.h"
#include "daemon/ctl.h"
#include "daemon/live.h"
#include "daemon/target.h"
#include "linux/procfs.h"

#define STATUS_EVERY_MS 30000

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
		snprintf(err, len, "--sampler: '%s' is not auto, damon, softdirty or none", o->sampler);
		return -EINVAL;
	}
	if (o->dry_run)
		c->dry_run = true;
	if (o->sample_ms)
		c->sample_ms = o->sample_ms;
	if (o->socket)
		snprintf(c->socket, sizeof(c->socket), "%s", o->socket);
	for (size_t i = 0; i < o->nr_sets; i++) {
		char msg[256];
		if (tb_knob_set(&c->knobs, o->sets[i], msg, sizeof(msg))) {
			snprintf(err, len, "--set %s: %s", o->sets[i], msg);
			return -EINVAL;
		}
	}
	char msg[256];
	if (tb_knobs_check(&c->knobs, msg, sizeof(msg))) {
		snprintf(err, len, "knobs: %s", msg);
		return -EINVAL;
	}
	for (size_t i = 0; i < o->nr_pids && c->nr_pids < TB_DCFG_MAX_PIDS; i++)
		c->pids[c->nr_pids++] = o->pids[i];
	if (o->cgroup)
		snprintf(c->cgroup, sizeof(c->cgroup), "%s", o->cgroup);
	return 0;
}

static size_t report(void *ctx, char *buf, size_t len)
{
	return tb_live_report(ctx, buf, len);
}

static void status_line(struct tb_live *l, const char *when)
{
	const uint64_t *c = tb_engine_counters(tb_live_engine(l));
	uint64_t managed = tb_live_pages_managed(l);
	fprintf(stderr,
		"tierbal: %s: %zu targets, %llu pages managed, promoted %llu, demoted %llu, hint faults %llu, "
		"moves failed %llu, rounds %llu\n",
		when, tb_live_nr_targets(l), (unsigned long long)managed, (unsigned long long)c[TB_C_pgpromote_success],
		(unsigned long long)c[TB_C_pgdemote_kswapd], (unsigned long long)c[TB_C_numa_hint_faults],
		(unsigned long long)c[TB_C_pgmigrate_fail], (unsigned long long)tb_live_counter(l, TB_L_sample_rounds));
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

static int setup_signals(const struct tb_daemon_mode *m)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	for (size_t i = 0; i < sizeof(m->signals) / sizeof(m->signals[0]) && m->signals[i]; i++)
		sigaddset(&set, m->signals[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client that hangs up must not kill the daemon */
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}


void tb_daemon_pick_targets(struct tb_daemon *d)
{
	d->nr_usable = 0;
	for (size_t i = 0; i < d->cfg.nr_pids; i++) {
		struct tb_proc_stat st;
		char msg[512];
		if (tb_target_check(d->cfg.pids[i], &st, msg, sizeof(msg)))
			fprintf(stderr, "%s: %s\n", d->me, msg);
		else
			d->usable[d->nr_usable++] = d->cfg.pids[i];
	}
}

/* The loop's handlers and timers, over the daemon and its mode. */
struct serve_ctx {
	struct tb_daemon *d;
	const struct tb_daemon_mode *m;
	void *mctx;
	int sfd;
	uint64_t deadline_ms;
};

static void on_signals(void *ctx, int fd, short revents)
{
	struct serve_ctx *s = ctx;
	struct signalfd_siginfo si;
	bool stop = false;
	(void)revents;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (s->m->signal && s->m->signal(s->mctx, s->d, (int)si.ssi_signo))
			continue;
		if (si.ssi_signo == SIGHUP)
			reload(s->d->o, &s->d->cfg, s->d->live);
		else
			stop = true;
	}
	if (stop)
		tb_loop_stop(&s->d->loop, "stopped by a signal", 0);
}

static void on_hint_faults(void *ctx, int fd, short revents)
{
	(void)fd;
	if (revents & POLLIN)
		tb_live_hint_faults(ctx);
}

static uint64_t at_deadline(void *ctx, uint64_t now)
{
	struct serve_ctx *s = ctx;
	tb_loop_stop(&s->d->loop, s->d->o->once ? "one pass done" : "duration reached", 0);
	(void)now;
	return 0;
}

static uint64_t refresh_round(void *ctx, uint64_t now)
{
	struct serve_ctx *s = ctx;
	(void)now;
	tb_live_refresh(s->d->live, s->d->cfg.cgroup);
	if (s->m->ends_without_targets && !tb_live_nr_targets(s->d->live) && !s->d->cfg.cgroup[0])
		tb_loop_stop(&s->d->loop, "every target has exited", 0);
	return s->d->cfg.refresh_ms;
}

static uint64_t sample_round(void *ctx, uint64_t now)
{
	struct serve_ctx *s = ctx;
	(void)now;
	tb_live_sample(s->d->live);
	return s->d->cfg.sample_ms;
}

static uint64_t status_round(void *ctx, uint64_t now)
{
	struct serve_ctx *s = ctx;
	(void)now;
	status_line(s->d->live, "status");
	return STATUS_EVERY_MS;
}

/* The timers, in the order a turn runs them: the end, the target list, the round, the status line. */
static int add_timers(struct serve_ctx *s)
{
	struct tb_daemon *d = s->d;
	uint64_t start = tb_loop_now_ms();
	int rc = 0;
	if (d->o->duration_s > 0)
		s->deadline_ms = start + (uint64_t)(d->o->duration_s * 1000);
	if (d->o->once) /* one scan pass over every page, and the round that reads its faults */
		s->deadline_ms =
			start + d->cfg.knobs.scan_delay_ms + d->cfg.knobs.scan_period_min_ms + 2ull * d->cfg.sample_ms;
	if (s->deadline_ms)
		rc = tb_loop_timer(&d->loop, s->deadline_ms, at_deadline, s);
	if (!rc)
		rc = tb_loop_timer(&d->loop, start + d->cfg.refresh_ms, refresh_round, s);
	if (!rc)
		rc = tb_loop_timer(&d->loop, start, sample_round, s);
	if (!rc)
		rc = tb_loop_timer(&d->loop, start + STATUS_EVERY_MS, status_round, s);
	return rc;
}

/* From blocked signals to the loop's end: the live context, its targets, the loop. */
static int serve(struct tb_daemon *d, const struct tb_daemon_mode *m, void *mctx, struct tb_access acc, const char *why,
		 struct tb_ctl_sock *ctl)
{
	char err[1024];
	int rc = 0;
	struct serve_ctx s = {.d = d, .m = m, .mctx = mctx, .sfd = -1};
	struct tb_ctl_server srv = {.ncl = 0};
	/* before any thread starts (the fault thread): a thread that does not block them would take
	 * SIGTERM's default action for the whole process, and tierbal exec would not pass it on */
	s.sfd = setup_signals(m);
	if (s.sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", d->me, strerror(errno));
		acc.ops->destroy(acc.ctx);
		return 1;
	}
	d->uffd = m->hint_faults ? m->hint_faults(mctx, d) : NULL;
	if (tb_live_new(&d->live, &d->cfg, &d->topo, acc, why, d->uffd, stderr, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", d->me, err); /* the sampler and uffd went with it */
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < d->nr_usable; i++) { /* the refused ones were reported before */
		char msg[512];
		int r = tb_live_add(d->live, d->usable[i], false, msg, sizeof(msg));
		if (r && r != -EEXIST)
			fprintf(stderr, "%s: %s\n", d->me, msg);
	}
	tb_live_refresh(d->live, d->cfg.cgroup);
	rc = m->attach ? m->attach(mctx, d) : 0;
	if (!rc && d->uffd && tb_loop_watch(&d->loop, tb_uffd_wake_fd(d->uffd), on_hint_faults, d->live))
		rc = 1;
	if (!rc && (tb_ctl_serve(&srv, &d->loop, ctl->fd, report, d->live) ||
		    tb_loop_watch(&d->loop, s.sfd, on_signals, &s) || add_timers(&s)))
		rc = 1; /* the loop's tables are sized for what is added here */
	if (rc)
		goto out;
	fprintf(stderr, "tierbal: running: policy %s, sampling every %u ms, control socket %s%s\n",
		tb_policy_name(d->cfg.policy), d->cfg.sample_ms, d->cfg.socket[0] ? d->cfg.socket : "none",
		d->cfg.dry_run ? ", dry run: nothing is moved" : "");
	const char *why_stop = "stopped";
	rc = tb_loop_run(&d->loop, &why_stop);
	status_line(d->live, why_stop);
	if (m->stop)
		m->stop(mctx, d);
	tb_ctl_serve_end(&srv);
out:
	close(s.sfd);
	tb_ctl_unlisten(ctl);
	tb_live_free(d->live); /* the movers see their channels close and put parked pages back */
	d->live = NULL;
	return rc;
}

/* The sampler asked for; "auto" in a mode that has its own signal may find none. */
static int open_sampler(struct tb_daemon *d, const struct tb_daemon_mode *m, struct tb_access *acc, char *why,
			size_t len)
{
	int rc = tb_access_open(acc, tb_sampler_choice_name(d->cfg.sampler), why, len);
	if (rc && m->sampler_optional && d->cfg.sampler == TB_SAMPLER_AUTO) {
		char nwhy[512];
		tb_access_none_open(acc, nwhy, sizeof(nwhy));
		snprintf(nwhy, sizeof(nwhy), "none (the kernel offers no sampler: %.400s); hint faults only", why);
		snprintf(why, len, "%s", nwhy);
		rc = 0;
	}
	if (rc)
		fprintf(stderr, "%s: no usable access sampler: %s\n", d->me, why);
	return rc;
}

int tb_daemon_run(const struct tb_run_opts *o, const struct tb_daemon_mode *m, void *mctx)
{
	struct tb_daemon d = {.o = o, .me = m->name};
	char err[1024];
	tb_loop_init(&d.loop);
	if (tb_run_config(o, &d.cfg, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", d.me, err);
		return 2;
	}
	if (tb_target_check_caps(d.me, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	int rc = m->check ? m->check(mctx, &d) : 0;
	if (rc)
		return rc;
	if (d.cfg.cgroup[0]) {
		pid_t *pids;
		size_t n;
		int crc = tb_cgroup_pids(d.cfg.cgroup, &pids, &n);
		if (crc) {
			fprintf(stderr,
				"%s: cgroup %s: cannot read its cgroup.procs: %s (is it a cgroup v2 "
				"directory under /sys/fs/cgroup?)\n",
				d.me, d.cfg.cgroup, strerror(-crc));
			return 2; /* a path that is not a cgroup: bad input */
		}
		free(pids);
	}
	/* refusals first: they are the user's business, the sampler is the machine's */
	rc = m->prepare ? m->prepare(mctx, &d) : 0;
	if (rc)
		return rc;
	/* the socket path is the user's business too, and is settled before a program starts */
	struct tb_ctl_sock ctl = {.fd = -1};
	if (d.cfg.socket[0]) {
		int lrc = tb_ctl_listen(&ctl, d.cfg.socket, err, sizeof(err));
		if (lrc < 0) {
			fprintf(stderr, "%s: %s\n", d.me, err);
			return lrc == -EEXIST || lrc == -ENAMETOOLONG
				       ? 2
				       : 1; /* a path that cannot be a socket: bad input */
		}
	}
	if (tb_topology_read(&d.topo, "", err, sizeof(err))) {
		fprintf(stderr, "%s: topology: %s\n", d.me, err);
		tb_ctl_unlisten(&ctl);
		return 1;
	}
	struct tb_access acc;
	char why[512];
	if (open_sampler(&d, m, &acc, why, sizeof(why))) {
		tb_ctl_unlisten(&ctl);
		return 1;
	}
	rc = m->start ? m->start(mctx, &d) : 0;
	if (rc) { /* the mode has undone its own part */
		acc.ops->destroy(acc.ctx);
		tb_ctl_unlisten(&ctl);
		return rc;
	}
	fprintf(stderr, "tierbal: sampler: %s\n", why);
	rc = serve(&d, m, mctx, acc, why, &ctl);
	return m->finish ? m->finish(mctx, &d, rc) : rc;
}
