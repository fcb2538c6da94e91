/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The modeled machine: nodes in tiers with capacity, latency and bandwidth,
 * and the costs of hint faults and page migration. */
#ifndef TB_MACHINE_H
#define TB_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

struct tb_sim_node {
	bool defined;
	bool cpus;
	unsigned tier, socket;
	int demote_to; /* -2: automatic */
	uint64_t capacity_pages;
	double read_ns, write_ns;
	double read_mbps, write_mbps; /* bandwidth, MB/s: bounds the copy of a migrated page */
	unsigned seen;                /* bit per key, to find missing and repeated keys */
};

struct tb_machine {
	char name[64];
	char description[256];
	char source[512];
	unsigned nr_nodes;
	struct tb_sim_node node[TB_MAX_NODES];
	double hint_fault_ns;    /* trap, handler, PTE restore */
	double migrate_fixed_ns; /* unmap, TLB flush, remap of one page, on top of the copy */
	double scan_pte_ns;      /* making one PTE inaccessible */
	double syscall_ns;       /* a page-cache access through read()/write() */
	double remote_socket_ns; /* extra latency when the memory sits on another socket */
};

/* name: a shipped machine or a path to a machine file. */
int tb_machine_load(struct tb_machine *m, const char *name, char *err, size_t errlen);
int tb_machine_parse(struct tb_machine *m, const char *label, const char *text, char *err, size_t errlen);

/* ns to copy one page from node a to node b, fixed cost included */
double tb_machine_migrate_ns(const struct tb_machine *m, unsigned a, unsigned b);
/* access latency seen from a CPU on socket `socket` */
double tb_machine_latency(const struct tb_machine *m, unsigned socket, unsigned node, bool write);

#endif
