/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What libtierbal-rt.so and `tierbal exec` say to each other on
 * SOCK_SEQPACKET unix sockets. The runtime's pid comes from the socket
 * (SO_PEERCRED).
 * - On the hello socket, one message per process image (start, exec, fork
 *   child), with the process's userfaultfd attached (SCM_RIGHTS) or, when
 *   making one failed, the errno; and where it mapped its own memory (the
 *   keep table, and with a mover its park area). With a
 *   park area the connection stays open: tierbal sends tb_rt_cmd, the
 *   runtime's mover thread carries each out and answers tb_rt_reply. The
 *   kernel moves a process's pages only at that process's own request.
 * - On the fork socket, TB_RT_FORK before a fork (tierbal puts every parked
 *   page back, stops parking in this process and answers one byte), and
 *   TB_RT_FORK_DONE after it, in the parent. */
#ifndef TB_RT_PROTO_H
#define TB_RT_PROTO_H

#include <stdint.h>

#define TB_RT_ENV_SOCKET "TIERBAL_RT_SOCKET" /* "@name": abstract unix socket name */
#define TB_RT_ENV_PARK "TIERBAL_RT_PARK_MB"  /* set: map a park area of this size for read faults */
#define TB_RT_FORK_SUFFIX "-fork"            /* the fork socket: the hello socket's name and this */
#define TB_RT_MAGIC 0x74627274u              /* "tbrt" */
#define TB_RT_VERSION 4u

enum { TB_RT_HELLO = 0, TB_RT_FORK = 1, TB_RT_FORK_DONE = 2 };

struct tb_rt_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t type;
	int32_t err;      /* 0: a userfaultfd is attached; else why there is none */
	int32_t park_err; /* 0: the park area below is mapped; else why there is none (parking was asked for) */
	int32_t mover_tid; /* the mover thread: once it is gone, its process may still be reading its old memory (exec) */
	uint64_t park_addr, park_len; /* the slots pages wait in (0: no mover) */
	uint64_t own_addr, own_len;   /* the runtime's own mapping: slots, keep table, the mover's record and stack */
	uint64_t keep_addr;           /* its struct tb_rt_keep */
};

/* The pages tierbal must never arm: each thread's descriptor, which holds
 * the word the kernel clears when the thread ends (CLONE_CHILD_CLEARTID,
 * what pthread_join waits on). The kernel does not wait on a userfaultfd
 * for an exiting thread, so a write-protected or parked page there would
 * lose that write and leave pthread_join waiting for good. The runtime
 * writes the table (its pthread_create notes each new thread), tierbal
 * reads it through /proc/PID/mem whenever gen changes. */
#define TB_RT_KEEP_MAX 4096
#define TB_RT_KEEP_PAGES 2 /* from each entry: a descriptor may straddle a page boundary */
struct tb_rt_keep {
	uint64_t gen;
	int32_t lock; /* the runtime's, between its threads */
	int32_t reserved;
	uint64_t page[TB_RT_KEEP_MAX]; /* first page of a thread's descriptor; 0: free */
	int32_t tid[TB_RT_KEEP_MAX];   /* whose: an entry of a thread that is gone is taken again */
};

enum { TB_RT_CMD_MOVE = 1, TB_RT_CMD_DISCARD = 2 };
#define TB_RT_MAX_MOVES 64 /* per command: a scan pass parks its windows in few round trips */

#define TB_RT_MAX_PARK_BYTES (64u << 12) /* one move into the slots: a window at most */

/* A command: the header, then count entries. MOVE: UFFDIO_MOVE of [src,
 * src + len) to dst, one end in the slots, entry by entry; a move into the
 * slots whose source is not wholly in one mapping registered with the
 * userfaultfd fails with EPERM, nothing moved. DISCARD: the slot pages
 * [dst, dst + len) hold nothing to put back. tierbal reads none of the
 * userfaultfd's events while a command is under way. */
struct tb_rt_cmd {
	uint32_t op, seq, count, reserved;
};

struct tb_rt_move {
	uint64_t dst, src, len, mode;
};

/* The answer: the header, then one result per entry. */
struct tb_rt_reply {
	uint32_t seq, count;
};

struct tb_rt_result {
	int32_t err; /* 0 or an errno */
	int32_t reserved;
	int64_t moved; /* bytes moved, even when err is set */
};

#endif
