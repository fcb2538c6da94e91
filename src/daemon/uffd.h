/* Hint faults in user space: userfaultfd write protection on the pages the
 * engine's scanner arms, for the processes of `tierbal exec`.
 *
 * Each process hands over a userfaultfd of its own memory (libtierbal-rt.so).
 * The main thread registers the process's managed mappings and write-protects
 * scan windows; a fault thread reads the faults, lifts the protection of the
 * faulting page at once (the program waits only for that), and queues the
 * event with its time for the main thread, which feeds the engine. Writes by
 * the kernel on the program's behalf (read(2) into a protected buffer) wait
 * the same way instead of failing. Reads are not seen: a write-protected page
 * can still be read, which is what keeps this invisible to the program. */
#ifndef TB_UFFD_H
#define TB_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "maps.h"

struct tb_uffd;

struct tb_uffd_event {
	uintptr_t addr; /* the start of the window the fault opened */
	uint64_t t_ns;  /* CLOCK_MONOTONIC, when the fault was read */
	pid_t pid;
	unsigned pages; /* its length: the window, or 1 where the window would leave the mapping */
	bool write;
};

struct tb_uffd_stats {
	uint64_t processes;      /* userfaultfds taken over */
	uint64_t faults;         /* write-protect faults resolved */
	uint64_t resolve_errors; /* lifting a protection failed (the process is going away) */
	uint64_t registered;     /* mappings registered */
	uint64_t register_errors;
	uint64_t protect_calls;
	uint64_t protected_pages;
	uint64_t queue_dropped;  /* events lost because the main thread fell behind */
};

/* Starts the fault thread. A fault lifts the protection of the whole
 * aligned window of window_pages (a power of two, 1 to 512) around it: one
 * round trip to tierbal per window instead of per page. */
int tb_uffd_new(struct tb_uffd **out, unsigned window_pages, char *err, size_t len);
/* Stops the thread and closes every userfaultfd: the kernel then drops the
 * registrations, and a process waiting on a fault goes on. */
void tb_uffd_free(struct tb_uffd *u);

/* Readable (poll) while events wait in the queue. */
int tb_uffd_wake_fd(const struct tb_uffd *u);
/* Takes over fd as pid's userfaultfd (closing an older one of the same pid,
 * from before an exec). */
int tb_uffd_attach(struct tb_uffd *u, pid_t pid, int fd);
void tb_uffd_detach(struct tb_uffd *u, pid_t pid);
bool tb_uffd_has(const struct tb_uffd *u, pid_t pid);

/* Registers those of the given mappings not registered yet (whole mappings,
 * so none is split). Returns how many failed. */
size_t tb_uffd_sync(struct tb_uffd *u, pid_t pid, const struct tb_vma *v, size_t n);
/* Write-protects [addr, addr + len). 0 or a negative errno. */
int tb_uffd_protect(struct tb_uffd *u, pid_t pid, uintptr_t addr, size_t len);
/* Moves up to max queued events to ev; returns how many. */
size_t tb_uffd_drain(struct tb_uffd *u, struct tb_uffd_event *ev, size_t max);
void tb_uffd_stats(const struct tb_uffd *u, struct tb_uffd_stats *st);

#endif
