/* What libtierbal-rt.so and `tierbal exec` say to each other on
 * SOCK_SEQPACKET unix sockets. The runtime's pid comes from the socket
 * (SO_PEERCRED).
 * - On the hello socket, one message per process image (start, exec, fork
 *   child), with the process's userfaultfd attached (SCM_RIGHTS) or, when
 *   making one failed, the errno; and where it mapped its park area. With a
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
#define TB_RT_VERSION 2u

enum { TB_RT_HELLO = 0, TB_RT_FORK = 1, TB_RT_FORK_DONE = 2 };

struct tb_rt_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t type;
	int32_t err;      /* 0: a userfaultfd is attached; else why there is none */
	int32_t park_err; /* 0: the park area below is mapped; else why there is none (parking was asked for) */
	uint32_t reserved;
	uint64_t park_addr, park_len; /* the slots pages wait in */
	uint64_t area_len;            /* the slots, the mover's table and stack: none of it the program's */
};

enum { TB_RT_CMD_MOVE = 1, TB_RT_CMD_DISCARD = 2 };
#define TB_RT_MAX_MOVES 64 /* per command: a scan pass parks its windows in few round trips */

/* A command: the header, then count entries. MOVE: UFFDIO_MOVE of [src,
 * src + len) to dst, one end in the slots, entry by entry. DISCARD: the slot
 * pages [dst, dst + len) hold nothing to put back. */
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
	int32_t err;   /* 0 or an errno */
	int32_t reserved;
	int64_t moved; /* bytes moved, even when err is set */
};

#endif
