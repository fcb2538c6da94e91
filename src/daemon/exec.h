/* tierbal exec: starting a program with libtierbal-rt.so injected, and
 * taking the userfaultfds its processes hand over. */
#ifndef TB_EXEC_H
#define TB_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <sys/types.h>

/* Pages one write fault opens by default (64 KiB): one round trip to tierbal
 * per window, not per page, keeps a program that writes through freshly
 * scanned memory from waiting on tierbal for every page. */
#define TB_EXEC_WINDOW_PAGES 16

/* The runtime library: $TIERBAL_RT_LIB, else next to the tierbal binary,
 * else where meson installed it. 0, or -ENOENT with a message. */
int tb_exec_rt_path(char *buf, size_t len, char *err, size_t elen);

/* Whether the program (looked up in PATH like execvp) is an ELF file
 * without an interpreter: LD_PRELOAD cannot reach into it. */
bool tb_exec_is_static(const char *prog);

/* A listening unix socket with a fresh abstract name, which goes into the
 * program's environment. Returns the fd or a negative errno. */
int tb_exec_listen(char *name, size_t len, char *err, size_t elen);

/* Starts argv with the runtime preloaded and the socket name in its
 * environment, and the signal mask tierbal itself was started with (mask),
 * so that it runs as it would without tierbal. Returns once exec succeeded:
 * 0 and *pid, or a negative errno with a message (no such program, not
 * executable, ...). */
int tb_exec_spawn(char *const argv[], const char *rtlib, const char *sockname, const sigset_t *mask, pid_t *pid,
		  char *err, size_t len);

/* Takes one connection: the sender's pid, and its userfaultfd (-1 when the
 * runtime could not make one; *rt_err then says why). 0 or a negative errno
 * (a connection that was not the runtime's). */
int tb_exec_accept(int lfd, pid_t *pid, int *uffd, int *rt_err);

/* Whether pid is root or one of its descendants. */
bool tb_exec_descends(pid_t pid, pid_t root);

#endif
