/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal exec's session: the daemon's hooks for a program it starts. The
 * program starts before tierbal blocks a signal or starts a thread; its
 * processes hand over their userfaultfds on the runtime's socket; tierbal
 * passes SIGTERM and SIGHUP on, stays until the program has exited, and
 * exits as it did. */
#include "exec/session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/live.h"
#include "exec/exec.h"
#include "exec/rt_proto.h"
#include "exec/uffd.h"
#include "util/outfile.h"

/* tierbal exec's part of the daemon: the program, the runtime's socket */
struct exec_state {
	const struct tb_exec_opts *o;
	pid_t child;
	int rtfd;
	int forkfd; /* the runtime's fork notes, when windows are parked; else -1 */
	unsigned park_mb;
	char rtname[108];
	bool exited, park_warned;
	bool scans;          /* the scanner arms anything here: a slow tier, or the normal mode's every page */
	int status;          /* wait status of the child */
	int stderr_fd;       /* the user's standard error, for --stats */
	struct tb_daemon *d; /* from attach on */
};

/* Starts the program before anything else: it inherits no thread, no signal
 * mask, no socket of tierbal's. Then standard error goes to the log. */
static int exec_start(const struct tb_exec_opts *o, struct exec_state *x, struct tb_dconfig *cfg)
{
	char err[1024], rtlib[4096];
	const char *prog = o->argv[0];
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
	unsigned window = o->window_pages ? o->window_pages : TB_EXEC_WINDOW_PAGES;
	if (!o->no_reads && window <= TB_PARK_MAX_WINDOW && x->scans) {
		/* it must listen before the program can fork */
		char fname[sizeof(x->rtname) + sizeof(TB_RT_FORK_SUFFIX)];
		snprintf(fname, sizeof(fname), "%s%s", x->rtname, TB_RT_FORK_SUFFIX);
		x->forkfd = tb_exec_listen_at(fname, err, sizeof(err));
		if (x->forkfd < 0) {
			fprintf(stderr, "tierbal exec: %s\n", err);
			return 1;
		}
		x->park_mb = o->park_mb ? o->park_mb : TB_EXEC_PARK_MB;
	}
	x->stderr_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	int logfd = -1;
	if (o->stats_file) { /* a path that cannot take the counters fails now, not after the program */
		struct tb_outfile of;
		if (tb_outfile_open(&of, o->stats_file, err, sizeof(err))) {
			fprintf(stderr, "tierbal exec: --stats=%s\n", err);
			return 2;
		}
		tb_outfile_abort(&of);
	}
	if (o->log) {
		/* appended to; never through a symbolic link, and never a FIFO that would block */
		logfd = open(o->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
		struct stat sb;
		if (logfd < 0 || fstat(logfd, &sb) || !(S_ISREG(sb.st_mode) || S_ISCHR(sb.st_mode))) {
			fprintf(stderr, "tierbal exec: --log %s: %s\n", o->log,
				logfd < 0 && errno == ELOOP ? "a symbolic link; the log is never written through links"
				: logfd < 0 && errno == ENXIO ? "a FIFO nobody reads; give a file's path"
				: logfd < 0                   ? strerror(errno)
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
	rc = tb_exec_spawn(o->argv, rtlib, x->rtname, x->park_mb, &mask, &x->child, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tierbal exec: %s\n", err);
		if (logfd >= 0)
			close(logfd);
		return rc == -ENOENT ? 127 : 126;
	}
	if (!o->verbose) {
		if (logfd < 0)
			logfd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (logfd >= 0)
			dup2(logfd, 2);
	}
	if (logfd >= 0)
		close(logfd);
	fprintf(stderr, "tierbal exec: started %s as pid %d, runtime %s\n", prog, (int)x->child, rtlib);
	if (static_prog)
		fprintf(stderr,
			"tierbal exec: %s is statically linked: LD_PRELOAD cannot reach it, so there are no "
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
			fprintf(stderr,
				"tierbal exec: ignored a runtime message from pid %d, which the program did "
				"not start\n",
				(int)pid);
			if (uffd >= 0)
				close(uffd);
			if (chan >= 0)
				close(chan);
			continue;
		}
		if (uffd < 0) {
			fprintf(stderr,
				"tierbal exec: pid %d could not make a userfaultfd (%s%s); it is managed with the "
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
			fprintf(stderr, "tierbal exec: pid %d: no read faults, writes only: %s%s\n", (int)pid,
				strerror(h.park_err),
				h.park_err == EINVAL ? " (moving pages needs UFFDIO_MOVE, Linux 6.8 or later)" : "");
			x->park_warned = true; /* every process of the program meets the same kernel */
		}
		char msg[512];
		struct tb_uffd_rt rt = {.chan = chan,
					.tid = h.mover_tid,
					.park_addr = (uintptr_t)h.park_addr,
					.park_len = (size_t)h.park_len,
					.own_addr = (uintptr_t)h.own_addr,
					.own_len = (size_t)h.own_len,
					.keep_addr = (uintptr_t)h.keep_addr};
		if (tb_live_attach_uffd(l, pid, uffd, &rt, msg, sizeof(msg)))
			fprintf(stderr, "tierbal exec: %s\n", msg);
	}
}

static void on_runtime(void *ctx, int fd, short revents)
{
	struct exec_state *x = ctx;
	(void)fd;
	if (revents & POLLIN)
		exec_accept(x, x->d->live);
}

/* At the top of each turn. Without WUNTRACED, only an exit or a fatal signal is reported. */
static void reap(void *ctx, uint64_t now)
{
	struct exec_state *x = ctx;
	(void)now;
	if (!x->exited && waitpid(x->child, &x->status, WNOHANG) == x->child)
		x->exited = true;
	if (x->exited)
		tb_loop_stop(&x->d->loop, "the program exited", 0);
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

static int exec_check(void *ctx, struct tb_daemon *d)
{
	(void)ctx;
	if (!d->o->socket && !strcmp(d->cfg.socket, TB_DEFAULT_SOCKET))
		d->cfg.socket[0] = '\0'; /* a control socket only when asked for */
	return 0;
}

static void close_runtime_sockets(struct exec_state *x)
{
	if (x->rtfd >= 0)
		close(x->rtfd);
	if (x->forkfd >= 0)
		close(x->forkfd);
	x->rtfd = x->forkfd = -1;
}

static int exec_begin(void *ctx, struct tb_daemon *d)
{
	struct exec_state *x = ctx;
	/* parking registers the program's memory for missing pages, so that
	 * first touches come to tierbal too: not where nothing is ever armed */
	for (unsigned i = 0; i < d->topo.nr_nodes; i++)
		x->scans |= d->topo.node[i].tier > 0;
	x->scans |= (d->cfg.knobs.numa_balancing & TB_NUMA_BALANCING_NORMAL) != 0;
	int rc = exec_start(x->o, x, &d->cfg);
	if (rc) {
		close_runtime_sockets(x);
		return rc;
	}
	tb_daemon_pick_targets(d);
	return 0;
}

static struct tb_uffd *exec_hint_faults(void *ctx, struct tb_daemon *d)
{
	struct exec_state *x = ctx;
	char err[512];
	struct tb_uffd *uffd = NULL;
	struct tb_uffd_park park = {.fork_fd = x->forkfd,
				    .max_slots = TB_EXEC_PARK_SLOTS,
				    /* then a window goes back write-protected: a later access would be cold anyway */
				    .park_ns = 2ull * d->cfg.knobs.hot_threshold_ms * 1000000ull};
	if (tb_uffd_new(&uffd, x->o->window_pages ? x->o->window_pages : TB_EXEC_WINDOW_PAGES,
			x->forkfd >= 0 ? &park : NULL, err, sizeof(err)))
		fprintf(stderr, "tierbal exec: no hint faults: %s\n", err);
	return uffd;
}

static int exec_attach(void *ctx, struct tb_daemon *d)
{
	struct exec_state *x = ctx;
	x->d = d;
	if (tb_loop_hook(&d->loop, reap, x) || tb_loop_watch(&d->loop, x->rtfd, on_runtime, x))
		return 1;
	return 0;
}

/* The program decides: tierbal passes on what the terminal did not already
 * send it, and stays until the program has gone. */
static bool exec_signal(void *ctx, struct tb_daemon *d, int signo)
{
	struct exec_state *x = ctx;
	(void)d;
	if (signo == SIGTERM || signo == SIGHUP)
		kill(x->child, signo);
	return true; /* SIGCHLD: the next turn reaps it */
}

static void exec_stop(void *ctx, struct tb_daemon *d)
{
	struct exec_state *x = ctx;
	const struct tb_exec_opts *o = x->o;
	char err[1024];
	if (o->stats && !o->stats_file) {
		print_stats(x->stderr_fd, d->live);
	} else if (o->stats) { /* whole or not at all: an old file stays if this fails */
		struct tb_outfile of;
		if (tb_outfile_open(&of, o->stats_file, err, sizeof(err))) {
			fprintf(stderr, "tierbal exec: --stats=%s\n", err);
		} else {
			print_stats(fileno(of.f), d->live);
			if (tb_outfile_commit(&of, err, sizeof(err)))
				fprintf(stderr, "tierbal exec: --stats: %s\n", err);
		}
	}
}

static int exec_end(void *ctx, struct tb_daemon *d, int rc)
{
	struct exec_state *x = ctx;
	(void)d;
	close_runtime_sockets(x);
	if (!x->exited) { /* tierbal failed before the program ended: wait for it all the same */
		while (waitpid(x->child, &x->status, 0) < 0 && errno == EINTR)
			;
		x->exited = true;
	}
	/* into the log (or nowhere), as every message while the program runs: its stderr is its own */
	if (rc)
		fprintf(stderr, "tierbal exec: tierbal stopped managing the program early\n");
	if (x->stderr_fd >= 0) {
		dup2(x->stderr_fd, 2);
		close(x->stderr_fd);
	}
	return exec_finish(x);
}

static const struct tb_daemon_mode exec_mode = {
	.name = "tierbal exec",
	.signals = {SIGCHLD, SIGQUIT},
	.sampler_optional = true,
	.check = exec_check,
	.start = exec_begin,
	.hint_faults = exec_hint_faults,
	.attach = exec_attach,
	.signal = exec_signal,
	.stop = exec_stop,
	.finish = exec_end,
};

int tb_exec_run(const struct tb_exec_opts *o)
{
	struct exec_state x = {.o = o, .rtfd = -1, .forkfd = -1, .stderr_fd = -1};
	return tb_daemon_run(&o->run, &exec_mode, &x);
}
