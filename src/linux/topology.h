/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The machine's NUMA nodes and memory tiers, read from libnuma and sysfs. */
#ifndef TB_TOPOLOGY_H
#define TB_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_TOPO_MAX_NODES 64

struct tb_topo_node {
	int id; /* kernel node number */
	unsigned nr_cpus;
	uint64_t total_bytes, free_bytes;
	uint64_t movable_bytes; /* of it in ZONE_MOVABLE (memory onlined movable, as CXL memory often is) */
	uint64_t wmark_min, wmark_low, wmark_high; /* the kernel's, in pages, boost left out; 0 if unknown */
	unsigned tier;                             /* 0 = fastest */
	int kernel_tier;                           /* memory_tierN of the kernel, -1 if none */
	int distance[TB_TOPO_MAX_NODES];           /* to the other nodes, in node order */
};

enum tb_tier_source {
	TB_TIERS_MEMORY_TIERING, /* the kernel's /sys/devices/virtual/memory_tiering */
	TB_TIERS_CPULESS,        /* no tiers from the kernel: nodes without CPUs are slow */
};

struct tb_topology {
	unsigned nr_nodes;
	struct tb_topo_node node[TB_TOPO_MAX_NODES];
	enum tb_tier_source source;
};

/* sysfs_root is "" for the live system (tests may point it elsewhere). */
int tb_topology_read(struct tb_topology *t, const char *sysfs_root, char *err, size_t errlen);
const char *tb_tier_source_name(enum tb_tier_source s);
/* Sets each node's movable_bytes (the managed pages of its Movable zone) and
 * the kernel's watermarks (the sums over its zones that have memory, less
 * their boost, which comes and goes) from <root>/proc/zoneinfo. A node
 * zoneinfo does not list keeps 0. -errno if the file cannot be read. */
int tb_topology_read_zones(struct tb_topology *t, const char *root);
/* Parses a kernel node list ("0-2,5") into a bit mask. -EINVAL on bad input. */
int tb_parse_nodelist(const char *s, uint64_t *mask);

#endif
