/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hint faults in user space, for the processes of `tierbal exec`: the pages
 * the engine's scanner arms are parked (park.h: the next read or write
 * faults) where the kernel can move pages (6.8 and later) and the runtime
 * mapped a park area, and write-protected otherwise (the next write faults).
 *
 * Each process hands over a userfaultfd of its own memory (libtierbal-rt.so).
 * The main thread registers the process's managed mappings and arms scan
 * windows; a fault thread reads the faults, puts back or unprotects the
 * faulting window at once (the program waits only for that), and queues the
 * event with its time for the main thread, which feeds the engine. The
 * kernel's own accesses on the program's behalf (read(2) into an armed
 * buffer) wait the same way instead of failing. The fault thread also reads
 * the events that say the program unmapped, discarded or moved memory, and
 * the runtime's notes around fork(): before one, every parked page goes back
 * and nothing is parked in that process until the fork is done. */
#ifndef TB_UFFD_H
#define TB_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "linux/maps.h"
#include "exec/park.h"

struct tb_uffd;

struct tb_uffd_event {
	uintptr_t addr; /* the start of the window the fault opened */
	uint64_t t_ns;  /* CLOCK_MONOTONIC, when the fault was read */
	pid_t pid;
	unsigned pages; /* its length: the window, or 1 where the window would leave the mapping */
	bool write;
};

struct tb_uffd_stats {
	uint64_t processes;       /* userfaultfds taken over */
	uint64_t faults;          /* hint faults resolved (write-protect or parked) */
	uint64_t faults_read;     /* of those, reads (only parked windows can show them) */
	uint64_t faults_huge;     /* of those, on huge pages lifted whole: each stands for 512 pages */
	uint64_t fills;           /* first touches of never-used pages given a zero page (parking only) */
	uint64_t resolve_errors;  /* lifting a protection failed (the process is going away) */
	uint64_t registered;      /* mappings registered */
	uint64_t registered_huge; /* of those, left without missing-page faults so that THP backs them: never parked */
	uint64_t armed_huge;      /* huge pages write-protected whole */
	uint64_t register_errors;
	uint64_t protect_calls;
	uint64_t protected_pages;
	uint64_t arm_skipped;      /* pages the scanner chose in mappings not (or no longer) registered: left alone */
	uint64_t arm_unregistered; /* of the pages to park, those the mover found in no mapping registered here */
	uint64_t queue_dropped;    /* events lost because the main thread fell behind */
	uint64_t parking;          /* processes whose windows are parked */
	uint64_t forks_held;       /* forks before which every parked page went back */
	uint64_t forks_unsafe;     /* forks before which some could not (should stay 0) */
	struct tb_park_stats park;
};

/* Parking, for read faults. */
struct tb_uffd_park {
	int fork_fd;        /* the listening socket of the runtime's fork notes */
	uint64_t park_ns;   /* a window parked this long unaccessed goes back */
	uint32_t max_slots; /* per process */
};

/* Starts the fault thread. A fault lifts the protection of the whole
 * aligned window of window_pages (a power of two, 1 to 512) around it: one
 * round trip to tierbal per window instead of per page. With park (NULL:
 * writes only), windows of up to TB_PARK_MAX_WINDOW pages are parked where
 * a process's runtime runs a mover. */
int tb_uffd_new(struct tb_uffd **out, unsigned window_pages, const struct tb_uffd_park *park, char *err, size_t len);
/* Stops the thread and closes every userfaultfd: the kernel then drops the
 * registrations, and a process waiting on a fault goes on. */
void tb_uffd_free(struct tb_uffd *u);

/* Readable (poll) while events wait in the queue. */
int tb_uffd_wake_fd(const struct tb_uffd *u);
/* A process's runtime, as its hello describes it: the connection to its
 * mover (-1: none) and the mover's thread, the park slots [park_addr, +
 * park_len), the runtime's own mapping (never the program's memory), and
 * its keep table (struct tb_rt_keep; 0: none). */
struct tb_uffd_rt {
	int chan;
	pid_t tid;
	uintptr_t park_addr;
	size_t park_len;
	uintptr_t own_addr;
	size_t own_len;
	uintptr_t keep_addr;
};

/* Takes over fd as pid's userfaultfd (closing an older one of the same pid,
 * from before an exec), and rt->chan (rt NULL: no runtime details). */
int tb_uffd_attach(struct tb_uffd *u, pid_t pid, int fd, const struct tb_uffd_rt *rt);
/* pid's runtime mapping, which is not the program's memory: false if none. */
bool tb_uffd_park_area(const struct tb_uffd *u, pid_t pid, uintptr_t *addr, size_t *len);
void tb_uffd_detach(struct tb_uffd *u, pid_t pid);
bool tb_uffd_has(const struct tb_uffd *u, pid_t pid);

/* Registers those of the given mappings not registered yet (whole mappings,
 * so none is split). Returns how many failed. */
size_t tb_uffd_sync(struct tb_uffd *u, pid_t pid, const struct tb_vma *v, size_t n);
/* Arms [addr, addr + len): parks what it can, write-protects the rest. 0
 * or a negative errno. */
int tb_uffd_arm(struct tb_uffd *u, pid_t pid, uintptr_t addr, size_t len, uint64_t now_ns);
/* Arms the huge page at addr (2 MiB-aligned): write-protects all of it, in
 * one call that keeps it huge, and its fault lifts all of it. Never parked:
 * moving it would take a slot of 512 pages. 0 or a negative errno. */
int tb_uffd_arm_huge(struct tb_uffd *u, pid_t pid, uintptr_t addr);
/* Bit i of bits: page i of [start, start + npages pages) is parked (it looks
 * absent in pagemap, but it is the program's). False: nothing parked there. */
bool tb_uffd_parked(struct tb_uffd *u, pid_t pid, uintptr_t start, unsigned npages, uint64_t *bits);
/* Puts back the windows parked longer than the park time, unaccessed. */
void tb_uffd_expire(struct tb_uffd *u, uint64_t now_ns);
/* Moves up to max queued events to ev; returns how many. */
size_t tb_uffd_drain(struct tb_uffd *u, struct tb_uffd_event *ev, size_t max);
void tb_uffd_stats(const struct tb_uffd *u, struct tb_uffd_stats *st);

#endif
