/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Opening and reading a process's files under /proc, and cgroup v2 members. */
#ifndef TB_PROCFS_H
#define TB_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Opens /proc/PID/FILE (pid 0 = this process) with open(2) flags; returns
 * the descriptor (close-on-exec) or a negative errno. */
int tb_proc_open(pid_t pid, const char *file, int flags);

struct tb_proc_stat {
	char comm[32];
	char state;
	pid_t ppid;
	unsigned long flags; /* PF_* of the task */
	uint64_t starttime;  /* clock ticks after boot: tells a reused pid apart */
	int processor;       /* CPU it last ran on */
	bool kernel_thread;  /* PF_KTHREAD: no user memory to manage */
};

/* Parses /proc/PID/stat. -ESRCH when the process does not exist. */
int tb_proc_stat(pid_t pid, struct tb_proc_stat *st);
/* Parses the text of a stat file (tests feed it lines). -EINVAL if it is not one. */
int tb_proc_stat_parse(const char *text, struct tb_proc_stat *st);

/* Reads the pids of a cgroup v2 directory (its cgroup.procs) into a malloc'd array. */
int tb_cgroup_pids(const char *dir, pid_t **out, size_t *n);

#endif
