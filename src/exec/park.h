/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Read faults for tierbal exec: parked windows.
 *
 * A write-protected page can still be read, so userfaultfd write protection
 * sees writes only. To see reads, the scanner moves a window's pages
 * (UFFDIO_MOVE, Linux 6.8) into a slot of a park area the runtime mapped in
 * the program: the next access to the window, a read as much as a write,
 * faults as a missing page, and the fault puts the pages back. Nothing is
 * copied: the page itself moves, and keeps its node.
 *
 * The kernel moves a process's pages only at that process's own request,
 * so the moves are carried out by the runtime's mover thread in the program
 * (src/preload/rt.c), through ops; this table is tierbal's view, and the
 * mover keeps its own record, to put every page back if tierbal dies. Not
 * thread-safe: uffd.c calls it under its lock. */
#ifndef TB_PARK_H
#define TB_PARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TB_PARK_MAX_WINDOW 64u /* pages: a window's pages are the bits of one word */

/* One move of a batch: parking a scan pass's windows costs few round trips
 * to the mover. */
struct tb_park_move {
	uintptr_t dst, src;
	size_t len;
	uint32_t slot;
	unsigned first; /* its first page in the window */
	int rc;         /* 0 or a negative errno, and the bytes moved either way: */
	int64_t moved;
};

/* How the pages move: the mover's commands (uffd.c), or ioctls in tests. */
struct tb_park_ops {
	/* UFFDIO_MOVE; 0 or a negative errno, *moved bytes moved either way */
	int (*move)(void *ctx, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved);
	/* n moves in one go, each with its rc and moved; 0, or a negative errno
	 * for the batch as a whole (-ETIMEDOUT: done or not, nobody knows) */
	int (*move_many)(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode);
	/* the slot pages [addr, addr + len) hold nothing to put back */
	void (*discard)(void *ctx, uintptr_t addr, size_t len);
};

struct tb_park_slot {
	uint64_t orig;   /* the window's address in the program */
	uint64_t parked; /* bit i: page i of the window waits in this slot */
	uint64_t junk;   /* pages in the slot the program has since unmapped or discarded: never put back */
	uint64_t t_ns;   /* when the window was last parked */
};

struct tb_park_stats {
	uint64_t windows;   /* windows parked */
	uint64_t fallbacks; /* windows that could not be parked (write-protected instead) */
	uint64_t restored;  /* windows put back, by a fault or otherwise */
	uint64_t expired;   /* of those, put back unaccessed after the park time */
	uint64_t copied;    /* pages put back by copy where a move was refused (mlock, mprotect) */
	uint64_t junk;      /* pages discarded by the program while parked: they stay in the park area */
	uint64_t lost;      /* pages that could not be put back (should stay 0) */
};

struct tb_park {
	int fd; /* the daemon's userfaultfd of the process: copies where a move is refused */
	pid_t pid;
	const struct tb_park_ops *ops;
	void *ctx;
	int pagemap_fd; /* for the copy fallback: which slot pages exist */
	int mem_fd;     /* and what they hold */
	uintptr_t base;
	unsigned win; /* pages per window and per slot */
	uint32_t nslots, nfree, nparked, junk_slots;
	struct tb_park_slot *slot;
	uint32_t *free;
	uint32_t *hash; /* slot + 1 by window address; 0: empty */
	uint32_t hmask;
	struct tb_park_stats st;
};

/* Slots for [base, base + len) of pid's memory, in windows of win pages (1
 * to TB_PARK_MAX_WINDOW), at most max_slots. */
int tb_park_init(struct tb_park *p, int fd, pid_t pid, const struct tb_park_ops *ops, void *ctx, uintptr_t base,
		 size_t len, unsigned win, uint32_t max_slots);
void tb_park_fini(struct tb_park *p);

/* Parks [addr, addr + len), which lies in one window. Returns how many bytes
 * from addr are parked (the caller protects the rest another way), or a
 * negative errno: -ENOSPC when no slot is free. */
long tb_park_window(struct tb_park *p, uintptr_t addr, size_t len, uint64_t now_ns);
/* The same in two steps, for batches: plans parking [addr, addr + len),
 * which lies in one window, appending at most win moves to m (*n grows);
 * returns the bytes from addr that are planned (the caller protects the rest
 * another way), or -ENOSPC. The pages count as away from here on. */
long tb_park_plan(struct tb_park *p, uintptr_t addr, size_t len, uint64_t now_ns, struct tb_park_move *m, size_t *n);
/* After ops->move_many (batch_rc its result): what did not move is where it
 * was. Returns how many windows could not be parked at all. */
size_t tb_park_settle(struct tb_park *p, const struct tb_park_move *m, size_t n, int batch_rc);
/* The slot of the window holding addr, or -1. */
int tb_park_find(const struct tb_park *p, uintptr_t addr);
/* Puts slot s's pages back, waking whoever waits on them if wake. 0, or
 * -EAGAIN: the program is changing its mappings; try again once the
 * userfaultfd's events are read. */
int tb_park_restore(struct tb_park *p, uint32_t s, bool wake);
/* Puts back the windows parked before cutoff_ns, and calls back (if not
 * NULL) with each run of pages that came back; returns how many windows are
 * left for later (-EAGAIN). */
size_t tb_park_expire(struct tb_park *p, uint64_t cutoff_ns, void (*back)(void *ctx, uintptr_t addr, size_t len),
		      void *ctx);
/* Every slot back: 0 or -EAGAIN. */
int tb_park_restore_all(struct tb_park *p);
/* The program unmapped, or discarded with MADV_DONTNEED, [start, end):
 * what was parked there is junk now (its content is gone for the program). */
void tb_park_discard(struct tb_park *p, uintptr_t start, uintptr_t end);
/* Bit i of bits (npages bits): page i of [start, start + npages * 4096)
 * waits in a slot. */
void tb_park_mask(const struct tb_park *p, uintptr_t start, unsigned npages, uint64_t *bits);
/* Whether a page of [start, end) waits in a slot. */
bool tb_park_holds(const struct tb_park *p, uintptr_t start, uintptr_t end);
/* Whether parking should stop for this process: too much of its park area
 * holds junk. */
bool tb_park_spoiled(const struct tb_park *p);

/* A userfaultfd event about the program's mappings (remove, unmap, remap):
 * 0, or -EAGAIN to be handled again later. */
struct uffd_msg;
int tb_park_event(struct tb_park *p, const struct uffd_msg *m);

#endif
