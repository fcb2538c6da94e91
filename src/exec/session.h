/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal exec's session: the daemon's mode for a program tierbal starts
 * itself, with the runtime preloaded, and hint faults from its userfaultfds. */
#ifndef TB_SESSION_H
#define TB_SESSION_H

#include <stdbool.h>

#include "daemon/daemon.h"

struct tb_exec_opts {
	struct tb_run_opts run; /* what tierbal run takes too */
	char *const *argv;      /* the program and its arguments */
	const char *log;        /* where tierbal's messages go (NULL: nowhere, unless verbose) */
	bool verbose;           /* messages on standard error */
	unsigned window_pages;  /* pages opened by one fault (0: the default) */
	bool no_reads;          /* write-protect only, never park */
	unsigned park_mb;       /* each process's park area (0: the default) */
	bool stats;             /* the counters when the program has exited: */
	const char *stats_file; /* into this file, or (NULL) on standard error */
};

/* Starts the program, manages it and what it starts, until it exits.
 * Returns the program's exit status, or 128 + the signal that killed it
 * (after re-raising that signal); 126/127 when it cannot be run, 1 or 2
 * when tierbal fails before it starts. */
int tb_exec_run(const struct tb_exec_opts *o);

#endif
