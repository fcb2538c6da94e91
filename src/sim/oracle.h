/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The oracle: the best static placement for the current access
 * distribution, the upper bound every policy is measured against. */
#ifndef TB_ORACLE_H
#define TB_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "sim/workload.h"

struct tb_oracle_region {
	uint32_t base;
	uint64_t n;
	enum tb_dist_kind kind;
	double share; /* of all accesses */
	double center, sigma, zipf_s;
	uint64_t stride;
	const struct tb_trace *trace;
};

struct tb_oracle_proc {
	unsigned cpu_node;
	double cost[TB_MAX_NODES]; /* mean access cost on each node, read/write mix applied */
	struct tb_oracle_region region[2];
};

/* Ranks every page of the regions by access probability x cost saved and
 * fills the cheapest nodes first, within cap[n] pages per node. huge (NULL:
 * none) marks each run of TB_HPAGE_PAGES ids that is one huge page: it is
 * ranked by its pages' mean and placed whole, on the node its last-ranked
 * page got (so a run across a node's limit goes to the lower node). Writes
 * each region page's node to node[]. */
int tb_oracle_place(const struct tb_oracle_proc *procs, unsigned nr_procs, unsigned nr_nodes, const uint64_t *cap,
		    uint32_t nr_pages, const uint8_t *huge, uint8_t *node, char *err, size_t errlen);

#endif
