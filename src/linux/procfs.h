/* Opening a process's files under /proc. */
#ifndef TB_PROCFS_H
#define TB_PROCFS_H

#include <sys/types.h>

/* Opens /proc/PID/FILE (pid 0 = this process) with open(2) flags; returns
 * the descriptor (close-on-exec) or a negative errno. */
int tb_proc_open(pid_t pid, const char *file, int flags);

#endif
