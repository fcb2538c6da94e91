/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the live context's files share: its state and the helpers one file
 * gives the others. Not for use outside src/daemon/live*.c. */
#ifndef TB_LIVE_INTERNAL_H
#define TB_LIVE_INTERNAL_H

#include "daemon/live.h"

#define PS_YOUNG 0x1u /* accessed (a fault, or seen by the sampler) since the engine last asked */
/* The sampler saw the page accessed in the last round. It stands for the whole
 * period until the next round, however often kswapd asks: the hardware bit the
 * kernel reads is set again by the next access, but a sampler says so only
 * once a round, and a hot page harvested by aging the active list would
 * otherwise be demoted right after, then promoted back at its next fault. */
#define PS_SEEN 0x2u
/* Within a round: the sampler reported the page (written, for PS_SEEN_W); applied once the
 * sampler has said whether its reports of this round hold */
#define PS_SEEN_NEW 0x4u
#define PS_SEEN_W 0x8u

struct pending {
	uint32_t *v;
	size_t n, cap;
};

struct dry_line {
	pid_t pid;
	int node;
	enum tb_migrate_reason why;
	uint64_t pages;
	uintptr_t first;
};

struct tb_live {
	struct tb_engine *e;
	struct tb_idmap map;
	struct tb_target **t; /* slots; NULL = free */
	size_t nr_t;
	uint8_t *ps; /* PS_* bits per page id */
	size_t nr_ps;
	unsigned nr_nodes;
	int knode[TB_MAX_NODES]; /* kernel node of each engine node */
	unsigned nr_pools;
	unsigned pool_node[TB_MAX_NODES];
	uint64_t ext[TB_MAX_NODES];
	int64_t dry_delta[TB_MAX_NODES]; /* pages the engine believes moved in, dry run only */
	struct tb_access acc;
	char sampler_why[384];
	uint32_t policy;
	bool dry_run;
	struct tb_mover_stats ms;
	const struct tb_live_mem_ops *mem;
	void *mem_ctx;
	struct pending gone, faults, fault_write;
	struct pending collapsed; /* heads of the huge pages found this round, taken in once placed */
	int kpf_fd;               /* /proc/kpageflags, or -1: huge pages not recognised */
	uint64_t c[TB_L_NR];
	struct tb_uffd *uffd;  /* tierbal exec: hint faults from userfaultfd; NULL for tierbal run */
	uint64_t now_override; /* the time of the fault being fed to the engine */
	FILE *log;
	struct dry_line dry[32];
	size_t nr_dry;
	/* scratch */
	uint64_t pm[TB_CHUNK_PAGES];
	uint8_t accb[TB_CHUNK_PAGES];
	void *addrs[TB_MOVE_BATCH];
	int status[TB_MOVE_BATCH];
	uint32_t qids[TB_MOVE_BATCH];
	bool warned_full;
	bool warned_nomem;
	uint64_t machine_bytes; /* all memory of all nodes: no mapping larger than that is managed */
};

/* the engine's platform on Linux, and its sampler where a userfaultfd gives hint faults */
extern const struct tb_platform_ops tb_live_platform;
extern const struct tb_sampler_ops tb_live_uffd_sampler;

/* Appends v; -ENOMEM leaves the list as it was. */
int tb_live_push(struct pending *p, uint32_t v);
/* An allocation of a round failed: what it was for is skipped, counted and said once. */
void tb_live_out_of_memory(struct tb_live *l, const char *what);
/* The engine's clock: the time of the fault being fed, or now. */
uint64_t tb_live_now(void *ctx);
/* Says the dry run's moves of the round, one line per process, node and direction. */
void tb_live_flush_dry(struct tb_live *l);
/* Stops managing the target in slot; why is said in the log (NULL: it was never added). */
void tb_live_drop_target(struct tb_live *l, size_t slot, const char *why);
/* Gives the target chunks for the stretches it uses now and frees the others. */
int tb_live_update_chunks(struct tb_live *l, size_t slot);
/* Reads each node's free memory: what the engine does not manage is external. */
void tb_live_update_external(struct tb_live *l);
/* Unplaces the pages whose moves found them elsewhere. */
void tb_live_forget_gone(struct tb_live *l);

#endif
