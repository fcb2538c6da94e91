/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal topology: what tierbal sees of this machine's nodes and tiers. */
#include <stdio.h>
#include <string.h>

#include "linux/topology.h"
#include "cli/cli.h"

int tb_cmd_topology(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help")) {
			printf("usage: tierbal topology [--json]\n\nPrints the NUMA nodes with memory, their CPUs, "
			       "memory, distances and tier (0 = fastest).\n");
			return TB_EXIT_OK;
		} else {
			fprintf(stderr, "tierbal topology: unknown argument '%s'\nTry 'tierbal topology --help'.\n",
				argv[i]);
			return TB_EXIT_USAGE;
		}
	}
	struct tb_topology t;
	char err[256];
	if (tb_topology_read(&t, "", err, sizeof(err))) {
		fprintf(stderr, "tierbal topology: %s\n", err);
		return TB_EXIT_FAIL;
	}
	if (json) {
		printf("{\"tier_source\": \"%s\", \"nodes\": [", tb_tier_source_name(t.source));
		for (unsigned i = 0; i < t.nr_nodes; i++) {
			const struct tb_topo_node *n = &t.node[i];
			printf("%s\n  {\"node\": %d, \"cpus\": %u, \"total_bytes\": %llu, \"free_bytes\": %llu, "
			       "\"movable_bytes\": %llu, \"kernel_wmark_pages\": [%llu, %llu, %llu], \"tier\": %u, "
			       "\"kernel_tier\": %d, \"distance\": [",
			       i ? "," : "", n->id, n->nr_cpus, (unsigned long long)n->total_bytes,
			       (unsigned long long)n->free_bytes, (unsigned long long)n->movable_bytes,
			       (unsigned long long)n->wmark_min, (unsigned long long)n->wmark_low,
			       (unsigned long long)n->wmark_high, n->tier, n->kernel_tier);
			for (unsigned j = 0; j < t.nr_nodes; j++)
				printf("%s%d", j ? ", " : "", n->distance[j]);
			printf("]}");
		}
		printf("]}\n");
		return TB_EXIT_OK;
	}
	printf("tiers from: %s\n%-5s %5s %10s %10s %12s %5s %12s  %s\n", tb_tier_source_name(t.source), "node", "cpus",
	       "MiB", "free MiB", "movable MiB", "tier", "memory_tier", "distances");
	for (unsigned i = 0; i < t.nr_nodes; i++) {
		const struct tb_topo_node *n = &t.node[i];
		printf("%-5d %5u %10llu %10llu %12llu %5u %12d ", n->id, n->nr_cpus,
		       (unsigned long long)(n->total_bytes >> 20), (unsigned long long)(n->free_bytes >> 20),
		       (unsigned long long)(n->movable_bytes >> 20), n->tier, n->kernel_tier);
		for (unsigned j = 0; j < t.nr_nodes; j++)
			printf(" %d", n->distance[j]);
		printf("\n");
	}
	return TB_EXIT_OK;
}
