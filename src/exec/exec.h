/* SPDX-License-Identifier: GPL-2.0-or-later */
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
/* Each process's park area (address space; the pages in it are the
 * program's own, away from their addresses), and the slots tierbal keeps
 * for it: 4,096 windows of 64 KiB. */
#define TB_EXEC_PARK_MB 256
#define TB_EXEC_PARK_SLOTS 8192

/* The runtime library: $TIERBAL_RT_LIB, else next to the tierbal binary,
 * else where meson installed it. 0, or -ENOENT with a message. */
int tb_exec_rt_path(char *buf, size_t len, char *err, size_t elen);

/* Whether the program (looked up in PATH like execvp) is an ELF file
 * without an interpreter: LD_PRELOAD cannot reach into it. */
bool tb_exec_is_static(const char *prog);

/* A listening unix socket with a fresh abstract name, which goes into the
 * program's environment. Returns the fd or a negative errno. */
int tb_exec_listen(char *name, size_t len, char *err, size_t elen);
/* The same, at a given name (the fork socket: the hello socket's name and
 * TB_RT_FORK_SUFFIX). */
int tb_exec_listen_at(const char *name, char *err, size_t elen);

/* Starts argv with the runtime preloaded and the socket name in its
 * environment, and the signal mask tierbal itself was started with (mask),
 * so that it runs as it would without tierbal. Returns once exec succeeded:
 * 0 and *pid, or a negative errno with a message (no such program, not
 * executable, ...). */
int tb_exec_spawn(char *const argv[], const char *rtlib, const char *sockname, unsigned park_mb, const sigset_t *mask,
		  pid_t *pid, char *err, size_t len);

/* Takes one connection: the sender's pid, its userfaultfd (-1 when the
 * runtime could not make one; hello->err then says why) and its park area;
 * with one, *chan is the connection, kept open for the runtime's mover
 * (else -1). 0 or a negative errno (a connection that was not the runtime's). */
struct tb_rt_hello;
int tb_exec_accept(int lfd, pid_t *pid, int *uffd, int *chan, struct tb_rt_hello *hello);

/* Whether pid is root or one of its descendants. */
bool tb_exec_descends(pid_t pid, pid_t root);

#endif
