#include "topology.h"

#include <dirent.h>
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	return 0;
}

const char *tb_tier_source_name(enum tb_tier_source s)
{
	return s == TB_TIERS_MEMORY_TIERING ? "memory_tiering" : "cpu-less nodes are slow";
}
