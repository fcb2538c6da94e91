/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sim/machine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/builtin.h"
#include "util/cfg.h"
#include "util/number.h"

enum {
	K_CPUS = 1 << 0,
	K_TIER = 1 << 1,
	K_SOCKET = 1 << 2,
	K_CAPACITY = 1 << 3,
	K_READ = 1 << 4,
	K_WRITE = 1 << 5,
	K_RBW = 1 << 6,
	K_WBW = 1 << 7,
	K_DEMOTE = 1 << 8,
};

static const struct {
	const char *key;
	unsigned bit;
} node_keys[] = {
	{"cpus", K_CPUS},        {"tier", K_TIER},      {"socket", K_SOCKET}, {"capacity_mib", K_CAPACITY},
	{"read_ns", K_READ},     {"write_ns", K_WRITE}, {"read_mbps", K_RBW}, {"write_mbps", K_WBW},
	{"demote_to", K_DEMOTE},
};

static bool node_entry(struct tb_cfg *c, struct tb_machine *m, const char *sec, const char *id, const char *key,
		       const char *val)
{
	unsigned long long n;
	uint64_t v;
	if (tb_parse_whole(id, 0, TB_MAX_NODES - 1, &n))
		return tb_cfg_error(c, sec, NULL, "node id '%s' is not 0..%d", id, TB_MAX_NODES - 1);
	struct tb_sim_node *nd = &m->node[n];
	unsigned bit = 0;
	for (size_t i = 0; i < sizeof(node_keys) / sizeof(node_keys[0]); i++)
		if (!strcmp(key, node_keys[i].key))
			bit = node_keys[i].bit;
	if (!bit)
		return tb_cfg_error(c, sec, key,
				    "unknown key (known: cpus, tier, socket, capacity_mib, read_ns, "
				    "write_ns, read_mbps, write_mbps, demote_to)");
	if (nd->seen & bit)
		return tb_cfg_error(c, sec, key, "set twice");
	nd->seen |= bit;
	nd->defined = true;
	if (n + 1 > m->nr_nodes)
		m->nr_nodes = (unsigned)n + 1;
	switch (bit) {
	case K_CPUS: return tb_cfg_bool(c, sec, key, val, &nd->cpus);
	case K_TIER:
		if (!tb_cfg_u64(c, sec, key, val, 0, 3, &v))
			return false;
		nd->tier = (unsigned)v;
		return true;
	case K_SOCKET:
		if (!tb_cfg_u64(c, sec, key, val, 0, 63, &v))
			return false;
		nd->socket = (unsigned)v;
		return true;
	case K_CAPACITY:
		if (!tb_cfg_u64(c, sec, key, val, 16, 1ull << 24, &v))
			return false;
		nd->capacity_pages = v << (20 - TB_PAGE_SHIFT);
		return true;
	case K_READ: return tb_cfg_double(c, sec, key, val, 1, 1e6, &nd->read_ns);
	case K_WRITE: return tb_cfg_double(c, sec, key, val, 1, 1e6, &nd->write_ns);
	case K_RBW: return tb_cfg_double(c, sec, key, val, 1, 1e7, &nd->read_mbps);
	case K_WBW: return tb_cfg_double(c, sec, key, val, 1, 1e7, &nd->write_mbps);
	default:
		if (!strcmp(val, "none")) {
			nd->demote_to = -1;
			return true;
		}
		if (!tb_cfg_u64(c, sec, key, val, 0, TB_MAX_NODES - 1, &v))
			return false;
		nd->demote_to = (int)v;
		return true;
	}
}

static bool machine_section(struct tb_cfg *c, const char *sec)
{
	const char *id;
	if (tb_cfg_section_is(sec, "node", &id)) {
		unsigned long long n;
		if (tb_parse_whole(id, 0, TB_MAX_NODES - 1, &n))
			return tb_cfg_error(c, sec, NULL, "node id '%s' is not 0..%d", id, TB_MAX_NODES - 1);
		return true;
	}
	if (strcmp(sec, "machine") != 0)
		return tb_cfg_error(c, sec, NULL, "unknown section (expected [machine] or [node N])");
	return true;
}

static bool machine_entry(struct tb_cfg *c, const char *sec, const char *key, const char *val)
{
	struct tb_machine *m = c->user;
	const char *id;
	if (tb_cfg_section_is(sec, "node", &id))
		return node_entry(c, m, sec, id, key, val);
	if (strcmp(sec, "machine") != 0)
		return tb_cfg_error(c, sec, NULL, "unknown section (expected [machine] or [node N])");
	if (!strcmp(key, "name"))
		return tb_cfg_string(c, sec, key, val, m->name, sizeof(m->name));
	if (!strcmp(key, "description"))
		return tb_cfg_string(c, sec, key, val, m->description, sizeof(m->description));
	if (!strcmp(key, "hint_fault_ns"))
		return tb_cfg_double(c, sec, key, val, 0, 1e7, &m->hint_fault_ns);
	if (!strcmp(key, "migrate_fixed_ns"))
		return tb_cfg_double(c, sec, key, val, 0, 1e8, &m->migrate_fixed_ns);
	if (!strcmp(key, "scan_pte_ns"))
		return tb_cfg_double(c, sec, key, val, 0, 1e6, &m->scan_pte_ns);
	if (!strcmp(key, "syscall_ns"))
		return tb_cfg_double(c, sec, key, val, 0, 1e7, &m->syscall_ns);
	if (!strcmp(key, "remote_socket_ns"))
		return tb_cfg_double(c, sec, key, val, 0, 1e6, &m->remote_socket_ns);
	return tb_cfg_error(c, sec, key,
			    "unknown key (known: name, description, hint_fault_ns, migrate_fixed_ns, "
			    "scan_pte_ns, syscall_ns, remote_socket_ns)");
}

/* Demotion target by default: the nearest node one tier down, same socket first. */
static int auto_demote(const struct tb_machine *m, unsigned i)
{
	int best = -1;
	for (unsigned j = 0; j < m->nr_nodes; j++) {
		const struct tb_sim_node *a = &m->node[i], *b = &m->node[j];
		if (b->tier != a->tier + 1)
			continue;
		if (best < 0 || (b->socket == a->socket && m->node[best].socket != a->socket))
			best = (int)j;
	}
	return best;
}

static int validate(struct tb_machine *m, const char *label, char *err, size_t len)
{
	if (m->nr_nodes < 2) {
		snprintf(err, len, "%s: needs at least two [node N] sections (a fast and a slow node)", label);
		return -EINVAL;
	}
	unsigned fast = 0, slow = 0;
	for (unsigned i = 0; i < m->nr_nodes; i++) {
		struct tb_sim_node *n = &m->node[i];
		if (!n->defined) {
			snprintf(err, len, "%s: [node %u] is missing; nodes are numbered 0..%u without gaps", label, i,
				 m->nr_nodes - 1);
			return -EINVAL;
		}
		static const unsigned required[] = {K_CAPACITY, K_READ, K_WRITE, K_RBW, K_WBW};
		static const char *const names[] = {"capacity_mib", "read_ns", "write_ns", "read_mbps", "write_mbps"};
		for (size_t r = 0; r < 5; r++)
			if (!(n->seen & required[r])) {
				snprintf(err, len, "%s: [node %u] %s: missing (required)", label, i, names[r]);
				return -EINVAL;
			}
		if (!(n->seen & K_TIER))
			n->tier = n->cpus ? 0 : 1;
		if (n->cpus && n->tier != 0) {
			snprintf(err, len, "%s: [node %u] tier: a node with CPUs is in tier 0", label, i);
			return -EINVAL;
		}
		if (!n->cpus && n->tier == 0) {
			snprintf(err, len, "%s: [node %u] tier: a CPU-less node cannot be in tier 0 here", label, i);
			return -EINVAL;
		}
		fast += n->tier == 0;
		slow += n->tier != 0;
	}
	if (!fast || !slow) {
		snprintf(err, len, "%s: needs a node with cpus = yes and a CPU-less node", label);
		return -EINVAL;
	}
	for (unsigned i = 0; i < m->nr_nodes; i++) {
		struct tb_sim_node *n = &m->node[i];
		if (!(n->seen & K_DEMOTE))
			n->demote_to = auto_demote(m, i);
		if (n->demote_to >= 0 &&
		    ((unsigned)n->demote_to >= m->nr_nodes || m->node[n->demote_to].tier <= n->tier)) {
			snprintf(err, len, "%s: [node %u] demote_to: node %d is not in a lower tier", label, i,
				 n->demote_to);
			return -EINVAL;
		}
	}
	return 0;
}

int tb_machine_parse(struct tb_machine *m, const char *label, const char *text, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	m->hint_fault_ns = 1000;
	m->migrate_fixed_ns = 3000;
	m->scan_pte_ns = 10;
	m->syscall_ns = 250;
	m->remote_socket_ns = 0;
	snprintf(m->source, sizeof(m->source), "%s", label);
	int rc = tb_cfg_parse(label, text, machine_entry, machine_section, m, err, errlen);
	if (rc)
		return rc;
	if (!m->name[0]) {
		snprintf(err, errlen, "%s: [machine] name: missing (required)", label);
		return -EINVAL;
	}
	return validate(m, label, err, errlen);
}

int tb_machine_load(struct tb_machine *m, const char *name, char *err, size_t errlen)
{
	char label[512];
	char *text = tb_builtin_or_file("machines", name, label, sizeof(label), err, errlen);
	if (!text)
		return -ENOENT;
	int rc = tb_machine_parse(m, label, text, err, errlen);
	free(text);
	return rc;
}

double tb_machine_migrate_ns(const struct tb_machine *m, unsigned a, unsigned b)
{
	double bw = m->node[a].read_mbps < m->node[b].write_mbps ? m->node[a].read_mbps : m->node[b].write_mbps;
	/* MB/s = bytes per microsecond */
	return m->migrate_fixed_ns + 4096.0 / bw * 1000.0;
}

double tb_machine_latency(const struct tb_machine *m, unsigned socket, unsigned node, bool write)
{
	const struct tb_sim_node *n = &m->node[node];
	return (write ? n->write_ns : n->read_ns) + (n->socket != socket ? m->remote_socket_ns : 0);
}
