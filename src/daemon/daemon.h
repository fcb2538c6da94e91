/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's life cycle, shared by tierbal run and tierbal exec: the
 * configuration, the sampler, the live context, the event loop with its
 * rounds, signals and control socket. What differs between the two commands
 * is a mode: a table of hooks called at fixed points of that life cycle. */
#ifndef TB_DAEMON_H
#define TB_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "daemon/dconfig.h"
#include "daemon/loop.h"
#include "linux/topology.h"

#define TB_RUN_MAX_SETS 64

/* What the command line asked for; it wins over the configuration file,
 * also after a reload. */
struct tb_run_opts {
	const char *config;
	pid_t pids[TB_DCFG_MAX_PIDS];
	size_t nr_pids;
	const char *cgroup;
	const char *sampler;
	const char *policy;
	const char *socket;
	bool dry_run;
	bool once;
	unsigned sample_ms; /* 0: the configuration's */
	double duration_s;  /* 0: until stopped */
	const char *sets[TB_RUN_MAX_SETS];
	size_t nr_sets;
};

/* Builds the configuration: defaults, then the file, then the command line.
 * 0, or -EINVAL with a message naming the file, line and key. */
int tb_run_config(const struct tb_run_opts *o, struct tb_dconfig *c, char *err, size_t len);

struct tb_live;
struct tb_uffd;

/* One daemon's state, as the mode's hooks see it. */
struct tb_daemon {
	const struct tb_run_opts *o;
	const char *me; /* "tierbal run", for messages */
	struct tb_dconfig cfg;
	struct tb_topology topo;
	struct tb_loop loop;
	struct tb_live *live;
	struct tb_uffd *uffd;           /* hint faults, if the mode's start made them: the live context takes them */
	pid_t usable[TB_DCFG_MAX_PIDS]; /* the given processes that may be managed */
	size_t nr_usable;
};

/* Every hook but name may be NULL. Those returning int return 0 to go on, or
 * the process exit code to end with. */
struct tb_daemon_mode {
	const char *name;
	/* blocked, and read by the loop, beside SIGTERM, SIGINT and SIGHUP (0-terminated) */
	int signals[4];
	/* true: a sampler "auto" that finds none falls back to none (hint faults only) */
	bool sampler_optional;
	/* true: the loop ends when the last target has exited */
	bool ends_without_targets;
	/* the configuration is built, nothing is open yet */
	int (*check)(void *ctx, struct tb_daemon *d);
	/* before the control socket, the topology and the sampler */
	int (*prepare)(void *ctx, struct tb_daemon *d);
	/* the topology is read and the sampler open; signals are not blocked yet,
	 * no thread is started: a program started here inherits neither */
	int (*start)(void *ctx, struct tb_daemon *d);
	/* signals are blocked: the userfaultfd set for the live context, or NULL */
	struct tb_uffd *(*hint_faults)(void *ctx, struct tb_daemon *d);
	/* the live context manages d->usable: descriptors and hooks go into d->loop */
	int (*attach)(void *ctx, struct tb_daemon *d);
	/* a signal the loop read; true when the mode took care of it (else SIGHUP
	 * reloads the configuration and the others stop the daemon) */
	bool (*signal)(void *ctx, struct tb_daemon *d, int signo);
	/* the loop has ended (d->live may be NULL after a failure), before the
	 * live context is freed */
	void (*stop)(void *ctx, struct tb_daemon *d);
	/* after everything is closed; rc is the daemon's exit code, the result the process's */
	int (*finish)(void *ctx, struct tb_daemon *d, int rc);
};

/* tierbal run: processes given by pid or cgroup */
extern const struct tb_daemon_mode tb_run_mode;

/* Runs the daemon in a mode (ctx is the mode's); returns the process exit
 * code (0, 1 failure, 2 bad configuration, or what the mode's finish says). */
int tb_daemon_run(const struct tb_run_opts *o, const struct tb_daemon_mode *mode, void *ctx);
/* The given pids that may be managed go to d->usable; the others are reported. */
void tb_daemon_pick_targets(struct tb_daemon *d);

#endif
