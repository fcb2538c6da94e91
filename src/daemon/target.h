/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A managed process: who it is (pid + start time, so a reused pid is not
 * mistaken for it), whether tierbal may touch it, and the 2 MiB stretches
 * of its address space that hold memory tierbal manages. */
#ifndef TB_TARGET_H
#define TB_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "linux/maps.h"
#include "linux/procfs.h"

struct tb_tchunk {
	uintptr_t base;   /* 2 MiB aligned */
	uint32_t chunk;   /* idmap chunk */
	uint64_t elig[8]; /* pages inside a managed mapping (512 bits) */
};

struct tb_target {
	pid_t pid;
	uint64_t starttime;
	char comm[32];
	unsigned pool; /* engine space: the fast node it runs on */
	bool from_cgroup;
	bool dead; /* exited (or the pid was reused): drop at the next refresh */
	int pagemap_fd;
	int pidfd;                /* -1 where the kernel has no pidfd_open */
	struct tb_tchunk *chunks; /* sorted by base */
	size_t nr_chunks;
	/* a mapping larger than this is a reservation, never resident as a whole (sanitizer shadow,
	 * allocator arenas): left alone, so that its terabytes do not use up the page map (0: no limit) */
	uint64_t max_vma_bytes;
	unsigned skipped_vmas;          /* how many the last read of the maps left alone */
	uintptr_t hide_start, hide_end; /* not the program's memory: tierbal exec's park area */
};

/* Whether pid may be managed: not tierbal itself, not a kernel thread, one
 * tierbal may ptrace (attach mode), with a readable pagemap. 0, or a negative
 * errno with a message that says what to do. */
int tb_target_check(pid_t pid, struct tb_proc_stat *st, char *err, size_t len);
/* 0 if this process holds CAP_SYS_NICE (moving another process's pages needs it), else -EPERM
 * with a message for who: "tierbal run" or "tierbal exec". */
int tb_target_check_caps(const char *who, char *err, size_t len);
/* Opens what sampling needs (its pagemap). */
int tb_target_open(struct tb_target *t, pid_t pid, const struct tb_proc_stat *st, char *err, size_t len);
void tb_target_close(struct tb_target *t);
/* True while the same process (same start time) still exists. */
bool tb_target_alive(const struct tb_target *t);


/* The stretches that should have chunks now: for each 2 MiB stretch that
 * overlaps a private anonymous writable mapping, its eligibility mask.
 * Returns a malloc'd array sorted by base. With managed non-NULL, also
 * those mappings themselves (malloc'd), from the same read of the maps. */
int tb_target_stretches(struct tb_target *t, struct tb_tchunk **out, size_t *n, struct tb_vma **managed,
			size_t *nmanaged);

/* The chunk covering addr, or NULL. */
struct tb_tchunk *tb_target_find(struct tb_target *t, uintptr_t base);

#endif
