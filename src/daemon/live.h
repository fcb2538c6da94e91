/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The engine on a real machine: the Linux platform (clock, move_pages,
 * accessed bits from the sampler), the managed processes, and one sampling
 * round that turns what the sampler saw into engine events. */
#ifndef TB_LIVE_H
#define TB_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "access/access.h"
#include "daemon/dconfig.h"
#include "engine/engine.h"
#include "daemon/idmap.h"
#include "linux/mover.h"
#include "daemon/target.h"
#include "linux/topology.h"
#include "exec/uffd.h"

/* The daemon's own counters, after the engine's. */
/* clang-format off */
#define TB_LIVE_COUNTERS(X)                                                                   \
	X(move_pages_calls) X(move_busy) X(move_nomem) X(move_gone) X(move_other) X(pages_managed) \
	X(pages_discovered) X(pages_dropped) X(targets) X(targets_added) X(targets_dropped)         \
	X(targets_refused) X(sample_rounds) X(sample_errors) X(dry_run_promote) X(dry_run_demote)   \
	X(config_reloads) X(config_rejected) X(idmap_full) X(uffd_faults) X(uffd_rearmed) X(move_failed_calls) \
	X(samples_disregarded) X(out_of_memory) X(thp_found) X(thp_split_found) X(thp_unknown)

enum tb_live_counter {
#define TB_LENUM(n) TB_L_##n,
	TB_LIVE_COUNTERS(TB_LENUM)
#undef TB_LENUM
	TB_L_NR
};
/* clang-format on */

struct tb_live;

/* What the live context asks the kernel about pages of a process: move them
 * (as tb_mover_move), where they are (as tb_mover_query), how much memory a
 * node has (as numa_node_size64), whether a 2 MiB-aligned stretch at addr,
 * whose pagemap entries are pm, is one transparent huge page (as
 * tb_kpageflags_thp; NULL: never). Linux by default; tests put failures in between. */
struct tb_live_mem_ops {
	int (*move)(void *ctx, pid_t pid, void *const *pages, size_t n, int node, int *status,
		    struct tb_mover_stats *st);
	int (*query)(void *ctx, pid_t pid, void *const *pages, size_t n, int *status);
	long long (*node_size)(void *ctx, int node, long long *free_bytes);
	int (*huge)(void *ctx, pid_t pid, uintptr_t addr, const uint64_t *pm, bool *huge, bool *shared);
};

/* Builds the engine over the machine's nodes. The access sampler and the
 * userfaultfd set (tierbal exec; NULL for tierbal run) are taken over, also
 * when it fails: they are destroyed with the live context. */
int tb_live_new(struct tb_live **out, const struct tb_dconfig *dc, const struct tb_topology *topo,
		struct tb_access access, const char *sampler_why, struct tb_uffd *uffd, FILE *log, char *err,
		size_t len);
void tb_live_free(struct tb_live *l);
/* Replaces the Linux calls (before the first target is added). */
void tb_live_set_mem_ops(struct tb_live *l, const struct tb_live_mem_ops *ops, void *ctx);

/* Starts managing pid. 0, -EEXIST if it already is, or a negative errno
 * with the reason in err (no such process, no permission, kernel thread, ...). */
int tb_live_add(struct tb_live *l, pid_t pid, bool from_cgroup, char *err, size_t len);
/* tierbal exec: pid handed over its userfaultfd (after start, exec or
 * fork), and what its runtime said of itself (NULL: nothing; see tb_uffd_attach). Manages pid if it
 * is not yet, and registers its mappings. */
int tb_live_attach_uffd(struct tb_live *l, pid_t pid, int fd, const struct tb_uffd_rt *rt, char *err, size_t len);
/* Feeds the engine the write faults the userfaultfds reported, at most
 * TB_LIVE_FAULTS_PER_CALL of them (the wake-up fd stays readable while more
 * wait); their promotions move in batches, then the nodes' real free memory
 * is read again and kswapd runs. */
#define TB_LIVE_FAULTS_PER_CALL 1024
void tb_live_hint_faults(struct tb_live *l);
/* Drops targets that exited, re-reads memory maps, follows the cgroup. */
void tb_live_refresh(struct tb_live *l, const char *cgroup);
/* One sampling round: read accesses, feed the engine, let it move pages. */
void tb_live_sample(struct tb_live *l);
/* New knobs and policy (a SIGHUP reload). */
void tb_live_reconfigure(struct tb_live *l, const struct tb_dconfig *dc);
void tb_live_count(struct tb_live *l, enum tb_live_counter c);
uint64_t tb_live_counter(const struct tb_live *l, enum tb_live_counter c);

size_t tb_live_nr_targets(const struct tb_live *l);
const struct tb_engine *tb_live_engine(const struct tb_live *l);
/* Pages of the targets the engine holds, on all nodes. */
uint64_t tb_live_pages_managed(const struct tb_live *l);
/* "name value" lines: engine counters (vmstat names), then the daemon's,
 * then per-node figures. Returns the length written (truncated at len). */
size_t tb_live_report(const struct tb_live *l, char *buf, size_t len);

#endif
