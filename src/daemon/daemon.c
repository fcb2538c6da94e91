#include "daemon.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "clock.h"
#include "ctl.h"
#include "exec.h"
#include "live.h"
#include "outfile.h"
#include "procfs.h"
#include "rt_proto.h"
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

static uint64_t now_ms(void)
{
	return tb_mono_ns() / 1000000u;
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

static int setup_signals(bool exec)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (exec) {
		sigaddset(&set, SIGCHLD);
		sigaddset(&set, SIGQUIT);
	}
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client that hangs up must not kill the daemon */
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* tierbal exec's part of the daemon: the program, the runtime's socket */
struct exec_state {
	pid_t child;
	int rtfd;
	int forkfd; /* the runtime's fork notes, when windows are parked; else -1 */
	unsigned park_mb;
	char rtname[108];
	bool exited, park_warned;
	bool scans; /* the scanner arms anything here: a slow tier, or the normal mode's every page */
	int status; /* wait status of the child */
	int stderr_fd; /* the user's standard error, for --stats */
};

/* Starts the program before anything else: it inherits no thread, no signal
 * mask, no socket of tierbal's. Then standard error goes to the log. */
static int exec_start(const struct tb_run_opts *o, struct exec_state *x, struct tb_dconfig *cfg)
{
	char err[1024], rtlib[4096];
	const char *prog = o->exec_argv[0];
	bool static_prog = tb_exec_is_static(prog);
	int rc = tb_exec_rt_path(rtlib, sizeof(rtlib), err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tierbal exec: %s\n", err);
		return 1;
	}
	x->rtfd = tb_exec_listen(x->rtname, sizeof(x->rtname), err, sizeof(err));
	if (x->rtfd < 0) {
		fprintf(stderr, "tierbal exec: %s\n", err);
		return 1;
	}
	x->forkfd = -1;
	unsigned window = o->exec_window_pages ? o->exec_window_pages : TB_EXEC_WINDOW_PAGES;
	if (!o->exec_no_reads && window <= TB_PARK_MAX_WINDOW && x->scans) {
		/* it must listen before the program can fork */
		char fname[sizeof(x->rtname) + sizeof(TB_RT_FORK_SUFFIX)];
		snprintf(fname, sizeof(fname), "%s%s", x->rtname, TB_RT_FORK_SUFFIX);
		x->forkfd = tb_exec_listen_at(fname, err, sizeof(err));
		if (x->forkfd < 0) {
			fprintf(stderr, "tierbal exec: %s\n", err);
			return 1;
		}
		x->park_mb = o->exec_park_mb ? o->exec_park_mb : TB_EXEC_PARK_MB;
	}
	x->stderr_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	int logfd = -1;
	if (o->exec_stats_file) { /* a path that cannot take the counters fails now, not after the program */
		struct tb_outfile of;
		if (tb_outfile_open(&of, o->exec_stats_file, err, sizeof(err))) {
			fprintf(stderr, "tierbal exec: --stats=%s\n", err);
			return 2;
		}
		tb_outfile_abort(&of);
	}
	if (o->exec_log) {
		/* appended to; never through a symbolic link, and never a FIFO that would block */
		logfd = open(o->exec_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
		struct stat sb;
		if (logfd < 0 || fstat(logfd, &sb) || !(S_ISREG(sb.st_mode) || S_ISCHR(sb.st_mode))) {
			fprintf(stderr, "tierbal exec: --log %s: %s\n", o->exec_log,
				logfd < 0 && errno == ELOOP   ? "a symbolic link; the log is never written through links"
				: logfd < 0 && errno == ENXIO ? "a FIFO nobody reads; give a file's path"
				: logfd < 0		      ? strerror(errno)
					    : "not a regular file or a device: give a file's path");
			if (logfd >= 0)
				close(logfd);
			return 2;
		}
		fcntl(logfd, F_SETFL, O_APPEND); /* writes wait as usual from here on */
	}
	/* blocked before the fork, or a quick program's SIGCHLD is lost before signalfd exists */
	sigset_t chld, mask;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &mask);
	rc = tb_exec_spawn(o->exec_argv, rtlib, x->rtname, x->park_mb, &mask, &x->child, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tierbal exec: %s\n", err);
		if (logfd >= 0)
			close(logfd);
		return rc == -ENOENT ? 127 : 126;
	}
	if (!o->exec_verbose) {
		if (logfd < 0)
			logfd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (logfd >= 0)
			dup2(logfd, 2);
	}
	if (logfd >= 0)
		close(logfd);
	fprintf(stderr, "tierbal exec: started %s as pid %d, runtime %s\n", prog, (int)x->child, rtlib);
	if (static_prog)
		fprintf(stderr, "tierbal exec: %s is statically linked: LD_PRELOAD cannot reach it, so there are no "
				"hint faults; its pages are managed with the sampler only\n",
			prog);
	cfg->pids[0] = x->child;
	cfg->nr_pids = 1;
	return 0;
}

static void exec_accept(struct exec_state *x, struct tb_live *l)
{
	for (;;) {
		pid_t pid = 0;
		int uffd, chan;
		struct tb_rt_hello h;
		int rc = tb_exec_accept(x->rtfd, &pid, &uffd, &chan, &h);
		int rt_err = h.err;
		if (rc == -EPROTO)
			continue; /* not the runtime: closed */
		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			break;
		if (rc) {
			fprintf(stderr, "tierbal exec: runtime socket: %s\n", strerror(-rc));
			break;
		}
		if (kill(pid, 0) && errno == ESRCH) { /* came and went between two rounds */
			if (uffd >= 0)
				close(uffd);
			if (chan >= 0)
				close(chan);
			continue;
		}
		if (!tb_exec_descends(pid, x->child)) {
			fprintf(stderr, "tierbal exec: ignored a runtime message from pid %d, which the program did "
					"not start\n",
				(int)pid);
			if (uffd >= 0)
				close(uffd);
			if (chan >= 0)
				close(chan);
			continue;
		}
		if (uffd < 0) {
			fprintf(stderr, "tierbal exec: pid %d could not make a userfaultfd (%s%s); it is managed with the "
					"sampler only\n",
				(int)pid, strerror(rt_err),
				rt_err == EPERM ? ": it needs CAP_SYS_PTRACE, or vm.unprivileged_userfaultfd = 1" : "");
			char msg[512];
			int r = tb_live_add(l, pid, false, msg, sizeof(msg));
			if (r && r != -EEXIST)
				fprintf(stderr, "tierbal exec: %s\n", msg);
			continue;
		}
		if (x->park_mb && h.park_err && !x->park_warned) {
			fprintf(stderr, "tierbal exec: pid %d: no read faults, writes only: %s%s\n", (int)pid, strerror(h.park_err),
				h.park_err == EINVAL ? " (moving pages needs UFFDIO_MOVE, Linux 6.8 or later)" : "");
			x->park_warned = true; /* every process of the program meets the same kernel */
		}
		char msg[512];
		struct tb_uffd_rt rt = {.chan = chan, .tid = h.mover_tid, .park_addr = (uintptr_t)h.park_addr,
					.park_len = (size_t)h.park_len, .own_addr = (uintptr_t)h.own_addr,
					.own_len = (size_t)h.own_len, .keep_addr = (uintptr_t)h.keep_addr};
		if (tb_live_attach_uffd(l, pid, uffd, &rt, msg, sizeof(msg)))
			fprintf(stderr, "tierbal exec: %s\n", msg);
	}
}

/* The program's own way out: its exit status, or death by the same signal. */
static int exec_finish(const struct exec_state *x)
{
	if (WIFEXITED(x->status))
		return WEXITSTATUS(x->status);
	if (WIFSIGNALED(x->status)) {
		int sig = WTERMSIG(x->status);
		struct rlimit no = {0, 0};
		setrlimit(RLIMIT_CORE, &no); /* the program's core is the one that matters */
		signal(sig, SIG_DFL);
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		raise(sig);
		return 128 + sig;
	}
	return 1;
}

static void print_stats(int fd, struct tb_live *l)
{
	char buf[16384];
	size_t n = tb_live_report(l, buf, sizeof(buf));
	FILE *f = fd >= 0 ? fdopen(dup(fd), "w") : NULL;
	if (!f)
		return;
	fprintf(f, "tierbal exec: counters\n");
	fwrite(buf, 1, n, f);
	fclose(f);
}

/* The given pids that may be managed; the others are reported. */
static size_t check_targets(const struct tb_dconfig *cfg, const char *me, pid_t *usable)
{
	size_t n = 0;
	for (size_t i = 0; i < cfg->nr_pids; i++) {
		struct tb_proc_stat st;
		char msg[512];
		if (tb_target_check(cfg->pids[i], &st, msg, sizeof(msg)))
			fprintf(stderr, "%s: %s\n", me, msg);
		else
			usable[n++] = cfg->pids[i];
	}
	return n;
}

int tb_daemon_run(const struct tb_run_opts *o)
{
	struct tb_dconfig cfg;
	char err[1024];
	const char *me = o->exec_argv ? "tierbal exec" : "tierbal run";
	if (tb_run_config(o, &cfg, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", me, err);
		return 2;
	}
	if (tb_target_check_caps(me, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	struct exec_state x = {.rtfd = -1, .forkfd = -1, .stderr_fd = -1};
	if (o->exec_argv) {
		if (!o->socket && !strcmp(cfg.socket, TB_DEFAULT_SOCKET))
			cfg.socket[0] = '\0'; /* a control socket only when asked for */
	} else if (cfg.sampler == TB_SAMPLER_NONE) {
		fprintf(stderr, "tierbal run: --sampler none sees nothing without the hint faults of tierbal exec\n");
		return 2;
	} else if (!cfg.nr_pids && !cfg.cgroup[0]) {
		fprintf(stderr, "tierbal run: nothing to manage: give --pid PID or --cgroup PATH (or [targets] in "
				"the configuration)\n");
		return 2;
	}
	if (cfg.cgroup[0]) {
		pid_t *m;
		size_t n;
		int rc = tb_cgroup_pids(cfg.cgroup, &m, &n);
		if (rc) {
			fprintf(stderr, "%s: cgroup %s: cannot read its cgroup.procs: %s (is it a cgroup v2 "
					"directory under /sys/fs/cgroup?)\n",
				me, cfg.cgroup, strerror(-rc));
			return 2; /* a path that is not a cgroup: bad input */
		}
		free(m);
	}
	/* refusals first: they are the user's business, the sampler is the machine's */
	pid_t usable_pid[TB_DCFG_MAX_PIDS];
	size_t usable = 0;
	if (!o->exec_argv) {
		usable = check_targets(&cfg, me, usable_pid);
		if (!usable && !cfg.cgroup[0]) {
			fprintf(stderr, "tierbal run: none of the given processes can be managed\n");
			return 1;
		}
	}
	/* the socket path is the user's business too, and is settled before a program starts */
	struct tb_ctl_sock ctl = {.fd = -1};
	if (cfg.socket[0]) {
		int lrc = tb_ctl_listen(&ctl, cfg.socket, err, sizeof(err));
		if (lrc < 0) {
			fprintf(stderr, "%s: %s\n", me, err);
			return lrc == -EEXIST || lrc == -ENAMETOOLONG ? 2 : 1; /* a path that cannot be a socket: bad input */
		}
	}
	struct tb_topology topo;
	if (tb_topology_read(&topo, "", err, sizeof(err))) {
		fprintf(stderr, "%s: topology: %s\n", me, err);
		tb_ctl_unlisten(&ctl);
		return 1;
	}
	struct tb_access acc;
	char why[512];
	int arc = tb_access_open(&acc, tb_sampler_choice_name(cfg.sampler), why, sizeof(why));
	if (arc && o->exec_argv && cfg.sampler == TB_SAMPLER_AUTO) {
		char nwhy[512];
		tb_access_none_open(&acc, nwhy, sizeof(nwhy));
		snprintf(nwhy, sizeof(nwhy), "none (the kernel offers no sampler: %.400s); hint faults only", why);
		snprintf(why, sizeof(why), "%s", nwhy);
		arc = 0;
	}
	if (arc) {
		fprintf(stderr, "%s: no usable access sampler: %s\n", me, why);
		tb_ctl_unlisten(&ctl);
		return 1;
	}
	if (o->exec_argv) {
		/* parking registers the program's memory for missing pages, so that
		 * first touches come to tierbal too: not where nothing is ever armed */
		for (unsigned i = 0; i < topo.nr_nodes; i++)
			x.scans |= topo.node[i].tier > 0;
		x.scans |= (cfg.knobs.numa_balancing & TB_NUMA_BALANCING_NORMAL) != 0;
		int rc = exec_start(o, &x, &cfg);
		if (rc) {
			acc.ops->destroy(acc.ctx);
			if (x.rtfd >= 0)
				close(x.rtfd);
			if (x.forkfd >= 0)
				close(x.forkfd);
			tb_ctl_unlisten(&ctl);
			return rc;
		}
	}
	if (o->exec_argv)
		usable = check_targets(&cfg, me, usable_pid);
	int rc = 0;
	struct tb_live *l = NULL;
	int lfd = ctl.fd, sfd = -1;
	if (!o->exec_argv)
		warn_kernel_balancing();
	fprintf(stderr, "tierbal: sampler: %s\n", why);
	/* before any thread starts (the fault thread): a thread that does not block them would take
	 * SIGTERM's default action for the whole process, and tierbal exec would not pass it on */
	sfd = setup_signals(o->exec_argv != NULL);
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", me, strerror(errno));
		rc = 1;
		goto out;
	}
	struct tb_uffd *uffd = NULL;
	struct tb_uffd_park park = {.fork_fd = x.forkfd, .max_slots = TB_EXEC_PARK_SLOTS,
				    /* then a window goes back write-protected: a later access would be cold anyway */
				    .park_ns = 2ull * cfg.knobs.hot_threshold_ms * 1000000ull};
	if (o->exec_argv && tb_uffd_new(&uffd, o->exec_window_pages ? o->exec_window_pages : TB_EXEC_WINDOW_PAGES,
					x.forkfd >= 0 ? &park : NULL, err, sizeof(err)))
		fprintf(stderr, "tierbal exec: no hint faults: %s\n", err);
	if (tb_live_new(&l, &cfg, &topo, acc, why, uffd, stderr, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", me, err); /* the sampler and uffd went with it */
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < usable; i++) { /* the refused ones were reported above */
		char msg[512];
		int r = tb_live_add(l, usable_pid[i], false, msg, sizeof(msg));
		if (r && r != -EEXIST)
			fprintf(stderr, "%s: %s\n", me, msg);
	}
	tb_live_refresh(l, cfg.cgroup);
	if (!tb_live_nr_targets(l) && !cfg.cgroup[0] && !o->exec_argv) {
		fprintf(stderr, "tierbal run: none of the given processes can be managed\n");
		rc = 1;
		goto out;
	}
	fprintf(stderr, "tierbal: running: policy %s, sampling every %u ms, control socket %s%s\n",
		tb_policy_name(cfg.policy), cfg.sample_ms, cfg.socket[0] ? cfg.socket : "none",
		cfg.dry_run ? ", dry run: nothing is moved" : "");
	uint64_t start = now_ms(), next_sample = start, next_refresh = start + cfg.refresh_ms,
		 next_status = start + STATUS_EVERY_MS;
	uint64_t deadline = 0;
	if (o->duration_s > 0)
		deadline = start + (uint64_t)(o->duration_s * 1000);
	if (o->once) /* one scan pass over every page, and the round that reads its faults */
		deadline = start + cfg.knobs.scan_delay_ms + cfg.knobs.scan_period_min_ms + 2ull * cfg.sample_ms;
	struct report_ctx rctx = {l};
	struct tb_ctl_client cl[MAX_CLIENTS];
	size_t ncl = 0;
	const char *why_stop = "stopped";
	enum { PF_SIG, PF_CTL, PF_RT, PF_UFFD, PF_CLIENTS };
	for (;;) {
		uint64_t now = now_ms();
		if (deadline && now >= deadline) {
			why_stop = o->once ? "one pass done" : "duration reached";
			break;
		}
		if (o->exec_argv && !x.exited && waitpid(x.child, &x.status, WNOHANG) == x.child)
			x.exited = true; /* without WUNTRACED, only an exit or a fatal signal is reported */
		if (x.exited) {
			why_stop = "the program exited";
			break;
		}
		if (now >= next_refresh) {
			tb_live_refresh(l, cfg.cgroup);
			next_refresh = now + cfg.refresh_ms;
			if (!tb_live_nr_targets(l) && !cfg.cgroup[0] && !o->exec_argv) {
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
		struct pollfd pf[PF_CLIENTS + MAX_CLIENTS] = {
			{sfd, POLLIN, 0}, {lfd, POLLIN, 0}, {x.rtfd, POLLIN, 0}, {uffd ? tb_uffd_wake_fd(uffd) : -1, POLLIN, 0}};
		for (size_t i = 0; i < ncl; i++)
			pf[PF_CLIENTS + i] = (struct pollfd){cl[i].fd, POLLIN, 0};
		if (poll(pf, PF_CLIENTS + ncl, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: poll: %s\n", me, strerror(errno));
			rc = 1;
			break;
		}
		now = now_ms();
		if (pf[PF_UFFD].revents & POLLIN)
			tb_live_hint_faults(l);
		if (pf[PF_RT].revents & POLLIN)
			exec_accept(&x, l);
		for (size_t i = ncl; i-- > 0;) {
			int done = (pf[PF_CLIENTS + i].revents & (POLLIN | POLLHUP | POLLERR))
					   ? tb_ctl_handle(&cl[i], report, &rctx)
					   : 0;
			if (!done && now - cl[i].since_ms > CLIENT_TIMEOUT_MS) {
				close(cl[i].fd); /* connected and said nothing */
				done = 1;
			}
			if (done)
				cl[i] = cl[--ncl];
		}
		if (pf[PF_CTL].revents & POLLIN) {
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
			if (o->exec_argv) {
				/* the program decides: tierbal passes on what the terminal did not
				 * already send it, and stays until the program has gone */
				if (si.ssi_signo == SIGCHLD) {
					continue; /* the top of the loop reaps it */
				} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP) {
					kill(x.child, (int)si.ssi_signo);
				}
			} else if (si.ssi_signo == SIGHUP) {
				reload(o, &cfg, l);
			} else {
				stop = true;
			}
		}
		if (stop) {
			why_stop = "stopped by a signal";
			break;
		}
	}
	status_line(l, why_stop);
	if (o->exec_stats && !o->exec_stats_file) {
		print_stats(x.stderr_fd, l);
	} else if (o->exec_stats) { /* whole or not at all: an old file stays if this fails */
		struct tb_outfile of;
		if (tb_outfile_open(&of, o->exec_stats_file, err, sizeof(err))) {
			fprintf(stderr, "tierbal exec: --stats=%s\n", err);
		} else {
			print_stats(fileno(of.f), l);
			if (tb_outfile_commit(&of, err, sizeof(err)))
				fprintf(stderr, "tierbal exec: --stats: %s\n", err);
		}
	}
	for (size_t i = 0; i < ncl; i++)
		close(cl[i].fd);
out:
	if (sfd >= 0)
		close(sfd);
	tb_ctl_unlisten(&ctl);
	tb_live_free(l); /* the movers see their channels close and put parked pages back */
	if (x.rtfd >= 0)
		close(x.rtfd);
	if (x.forkfd >= 0)
		close(x.forkfd);
	if (o->exec_argv) {
		if (!x.exited) { /* tierbal failed before the program ended: wait for it all the same */
			while (waitpid(x.child, &x.status, 0) < 0 && errno == EINTR)
				;
			x.exited = true;
		}
		/* into the log (or nowhere), as every message while the program runs: its stderr is its own */
		if (rc)
			fprintf(stderr, "tierbal exec: tierbal stopped managing the program early\n");
		if (x.stderr_fd >= 0) {
			dup2(x.stderr_fd, 2);
			close(x.stderr_fd);
		}
		return exec_finish(&x);
	}
	return rc;
}
