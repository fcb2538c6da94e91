/* What libtierbal-rt.so sends to `tierbal exec`: one message per process
 * image (start, exec, fork child) on a SOCK_SEQPACKET unix socket, with the
 * process's userfaultfd attached (SCM_RIGHTS) or, when making one failed,
 * the errno. The sender's pid comes from the socket (SO_PEERCRED). */
#ifndef TB_RT_PROTO_H
#define TB_RT_PROTO_H

#include <stdint.h>

#define TB_RT_ENV_SOCKET "TIERBAL_RT_SOCKET" /* "@name": abstract unix socket name */
#define TB_RT_MAGIC 0x74627274u             /* "tbrt" */
#define TB_RT_VERSION 1u

struct tb_rt_hello {
	uint32_t magic;
	uint32_t version;
	int32_t err; /* 0: a userfaultfd is attached; else why there is none */
	uint32_t reserved;
};

#endif
