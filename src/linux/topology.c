/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "linux/topology.h"

#include <dirent.h>
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tb_parse_nodelist(const char *s, uint64_t *mask)
{
	*mask = 0;
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s || a < 0 || a >= TB_TOPO_MAX_NODES)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b >= TB_TOPO_MAX_NODES)
				return -EINVAL;
			s = end;
		}
		for (long i = a; i <= b; i++)
			*mask |= 1ull << i;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return 0;
}

/* memory_tierN/nodelist (6.1) or /nodes: which kernel tier each node is in. */
static void read_kernel_tiers(struct tb_topology *t, const char *root)
{
	char dir[384];
	snprintf(dir, sizeof(dir), "%.300s/sys/devices/virtual/memory_tiering", root);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		int tier;
		if (sscanf(de->d_name, "memory_tier%d", &tier) != 1)
			continue;
		static const char *const files[] = {"nodelist", "nodes"};
		for (int f = 0; f < 2; f++) {
			char path[1024], buf[256];
			snprintf(path, sizeof(path), "%s/%s/%s", dir, de->d_name, files[f]);
			FILE *fp = fopen(path, "r");
			if (!fp)
				continue;
			uint64_t mask = 0;
			if (fgets(buf, sizeof(buf), fp) && tb_parse_nodelist(buf, &mask) == 0)
				for (unsigned i = 0; i < t->nr_nodes; i++)
					if (mask & (1ull << t->node[i].id))
						t->node[i].kernel_tier = tier;
			fclose(fp);
			break;
		}
	}
	closedir(d);
}

/* Tiers from the kernel when it tells them apart, else CPU-less = slow. */
static void assign_tiers(struct tb_topology *t)
{
	int tiers[TB_TOPO_MAX_NODES];
	unsigned n = 0;
	bool all = true;
	for (unsigned i = 0; i < t->nr_nodes; i++) {
		int k = t->node[i].kernel_tier;
		all &= k >= 0;
		bool seen = false;
		for (unsigned j = 0; j < n; j++)
			seen |= tiers[j] == k;
		if (k >= 0 && !seen)
			tiers[n++] = k;
	}
	if (all && n > 1) {
		t->source = TB_TIERS_MEMORY_TIERING;
		for (unsigned i = 0; i < t->nr_nodes; i++) {
			unsigned rank = 0; /* lower memory_tier number = faster */
			for (unsigned j = 0; j < n; j++)
				rank += tiers[j] < t->node[i].kernel_tier;
			t->node[i].tier = rank;
		}
		return;
	}
	t->source = TB_TIERS_CPULESS;
	for (unsigned i = 0; i < t->nr_nodes; i++)
		t->node[i].tier = t->node[i].nr_cpus ? 0 : 1;
}

int tb_topology_read(struct tb_topology *t, const char *root, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (numa_available() < 0) {
		snprintf(err, errlen, "the kernel has no NUMA support (libnuma: numa_available failed)");
		return -ENOSYS;
	}
	int max = numa_max_node();
	struct bitmask *cpus = numa_allocate_cpumask();
	if (!cpus) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int id = 0; id <= max && t->nr_nodes < TB_TOPO_MAX_NODES; id++) {
		long long free = 0, total = numa_node_size64(id, &free);
		if (total <= 0)
			continue; /* no memory on this node */
		struct tb_topo_node *n = &t->node[t->nr_nodes++];
		n->id = id;
		n->total_bytes = (uint64_t)total;
		n->free_bytes = free > 0 ? (uint64_t)free : 0;
		n->kernel_tier = -1;
		if (numa_node_to_cpus(id, cpus) == 0)
			n->nr_cpus = numa_bitmask_weight(cpus);
	}
	numa_free_cpumask(cpus);
	if (!t->nr_nodes) {
		snprintf(err, errlen, "libnuma reports no node with memory");
		return -ENODEV;
	}
	for (unsigned i = 0; i < t->nr_nodes; i++)
		for (unsigned j = 0; j < t->nr_nodes; j++)
			t->node[i].distance[j] = numa_distance(t->node[i].id, t->node[j].id);
	read_kernel_tiers(t, root);
	assign_tiers(t);
	tb_topology_read_zones(t, root); /* without zoneinfo: no floors, nothing taken as movable */
	return 0;
}

static struct tb_topo_node *node_by_id(struct tb_topology *t, int id)
{
	for (unsigned i = 0; i < t->nr_nodes; i++)
		if (t->node[i].id == id)
			return &t->node[i];
	return NULL;
}

int tb_topology_read_zones(struct tb_topology *t, const char *root)
{
	char path[384];
	snprintf(path, sizeof(path), "%.300s/proc/zoneinfo", root);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	for (unsigned i = 0; i < t->nr_nodes; i++) {
		struct tb_topo_node *n = &t->node[i];
		n->movable_bytes = n->wmark_min = n->wmark_low = n->wmark_high = 0;
	}
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t page = ps > 0 ? (uint64_t)ps : 4096; /* zoneinfo counts base pages */
	char line[256], zone[32] = "";
	struct tb_topo_node *n = NULL;
	/* a zone lists boost, min, low and high before managed, which says whether it counts */
	unsigned long long boost = 0, min = 0, low = 0, high = 0, v;
	int id;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &id, zone) == 2) {
			n = node_by_id(t, id);
			boost = min = low = high = 0;
		} else if (sscanf(line, " boost %llu", &v) == 1) {
			boost = v;
		} else if (sscanf(line, " min %llu", &v) == 1) {
			min = v;
		} else if (sscanf(line, " low %llu", &v) == 1) {
			low = v;
		} else if (sscanf(line, " high %llu", &v) == 1) {
			high = v;
		} else if (n && sscanf(line, " managed %llu", &v) == 1 && v > 0) {
			if (!strcmp(zone, "Movable"))
				n->movable_bytes += (uint64_t)v * page;
			/* the boost raises all three for a while after fragmenting allocations */
			n->wmark_min += min > boost ? min - boost : 0;
			n->wmark_low += low > boost ? low - boost : 0;
			n->wmark_high += high > boost ? high - boost : 0;
		}
	}
	fclose(f);
	return 0;
}

const char *tb_tier_source_name(enum tb_tier_source s)
{
	return s == TB_TIERS_MEMORY_TIERING ? "memory_tiering" : "cpu-less nodes are slow";
}
