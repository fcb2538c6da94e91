/* tierbal run: the daemon's life cycle (configuration, targets, the
 * sampling loop, signals, the control socket). */
#ifndef TB_DAEMON_H
#define TB_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "dconfig.h"

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
	double duration_s; /* 0: until stopped */
	const char *sets[TB_RUN_MAX_SETS];
	size_t nr_sets;
	/* tierbal exec: the program to start and manage (NULL for tierbal run) */
	char *const *exec_argv;
	const char *exec_log; /* where the daemon's messages go (NULL: nowhere, unless verbose) */
	bool exec_verbose;    /* messages on standard error */
	unsigned exec_window_pages; /* pages opened by one fault (0: the default) */
	bool exec_no_reads;   /* write-protect only, never park */
	unsigned exec_park_mb; /* each process's park area (0: the default) */
	bool exec_stats;      /* the counters when the program has exited: */
	const char *exec_stats_file; /* into this file, or (NULL) on standard error */
};

/* Builds the configuration: defaults, then the file, then the command line.
 * 0, or -EINVAL with a message naming the file, line and key. */
int tb_run_config(const struct tb_run_opts *o, struct tb_dconfig *c, char *err, size_t len);

/* Runs the daemon; returns the process exit code (0, 1 failure, 2 bad
 * configuration). With exec_argv, the program's: its exit status, or
 * 128 + the signal that killed it (after re-raising that signal). */
int tb_daemon_run(const struct tb_run_opts *o);

#endif
