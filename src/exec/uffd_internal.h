/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the userfaultfd set's files share: its state, and the helpers one
 * file gives the others. Not for use outside src/exec/uffd*.c. */
#ifndef TB_UFFD_INTERNAL_H
#define TB_UFFD_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "exec/hugeset.h"
#include "exec/park.h"
#include "exec/uffd.h"
#include "exec/uffd_abi.h"

#define MAX_PROCS 256
#define QUEUE 65536 /* events; a power of two */
#define PAGE 4096u
#define EV_STOP UINT64_MAX
#define EV_FORK (UINT64_MAX - 1)
#define RETRY_NS 2000000ull    /* how long one pass keeps trying what the kernel refuses while mappings change */
#define HOLD_NS 10000000000ull /* a fork that never says it is done stops holding after this */
#define TB_UFFD_HPAGE ((uintptr_t)2 << 20) /* a transparent huge page */

/* A mapping as the last registration left it: ours, or one tierbal may not
 * register (the program's own userfaultfd is there); missing: registered
 * for missing pages too, so that its windows may be parked. */
struct range {
	uintptr_t start, end;
	bool ours, missing;
};

/* A range the program discarded (MADV_DONTNEED and friends), and when
 * tierbal read that: the kernel clears the range only after the event is
 * read, so a page parked from it meanwhile would escape the clearing and
 * come back later with its old content. Such ranges are not parked for
 * REMOVE_HOLD_NS. */
struct removed {
	uintptr_t start, end;
	uint64_t t_ns;
};
#define REMOVED 16
#define REMOVE_HOLD_NS 1000000000ull

struct proc {
	pid_t pid; /* 0: free slot */
	int fd;
	uint32_t gen;      /* tells a reused slot from the old one in epoll events */
	struct range *reg; /* by address; an unmap or move forgets what it touches until the next sync */
	size_t nr_reg;
	struct tb_vma *smaps;   /* its areas as smaps last said, for THPeligible (see tb_uffd_sync) */
	struct tb_hugeset huge; /* huge pages write-protected whole, not faulted since */
	size_t nr_smaps;
	bool parking, spoiled;
	bool park_init;  /* p->park was set up (parking may have stopped since) */
	bool stuck;      /* the mover did not answer in time: no new parking until it does */
	bool mover_gone; /* its thread ended, its process did not (exec): parked pages come back by copy */
	int chan;        /* to the runtime's mover; -1: none */
	pid_t mover_tid; /* its thread; 0: unknown */
	uint32_t seq;
	uintptr_t area, area_len; /* the runtime's own mapping: slots, keep table, the mover's record and stack */
	int mem_fd;               /* /proc/PID/mem, for the keep table; -1: none */
	uintptr_t keep_addr;
	uint64_t keep_gen;
	uint64_t *keep; /* the pages of the keep table, sorted; TB_RT_KEEP_PAGES from each */
	size_t nkeep;
	uint64_t hold_until;             /* a fork is under way: nothing is parked before this */
	struct removed removed[REMOVED]; /* the latest discards, a ring */
	unsigned nremoved;
	uint64_t removed_all_until; /* the ring overflowed: nothing is parked before this */
	struct tb_park park;
	struct uffd_msg *q; /* read, not handled yet: the kernel refused while mappings changed */
	size_t nq, capq;
};

struct tb_uffd {
	unsigned window; /* pages */
	pthread_t thread;
	bool running;
	int epfd, stopfd, wakefd;
	bool park; /* parking asked for and possible */
	struct tb_uffd_park popt;
	pthread_mutex_t lock; /* procs[], the queue and the stats */
	struct proc procs[MAX_PROCS];
	struct tb_uffd_event q[QUEUE];
	size_t head, tail;
	struct tb_uffd_stats st;
};

/* the runtime's mover thread, which moves pages inside the process for parking */
extern const struct tb_park_ops tb_uffd_mover_ops;
int tb_uffd_mover_move_many(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode);
/* the fault thread, started by tb_uffd_new() */
void *tb_uffd_fault_thread(void *arg);
/* the process of pid (0: a free slot), or NULL */
struct proc *tb_uffd_find(const struct tb_uffd *u, pid_t pid);
/* [start, end) was unmapped or moved: not registered until the next sync says so. Locked. */
void tb_uffd_forget_reg(struct proc *p, uintptr_t start, uintptr_t end);
/* Whether [a, end) may be parked now: no discard in it lately (REMOVE_HOLD_NS). */
bool tb_uffd_may_park(const struct proc *p, uintptr_t a, uintptr_t end, uint64_t now);
/* Events other than page faults wait in the process's queue of messages read but not handled. */
bool tb_uffd_events_waiting(const struct proc *p);

#endif
