/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The managed processes: added, followed through their memory maps (a chunk
 * of page ids per 2 MiB stretch in use), dropped when they exit or leave the cgroup. */
#include "daemon/live_internal.h"

#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void drop_pages(struct tb_live *l, uint32_t chunk)
{
	for (unsigned i = 0; i < TB_CHUNK_PAGES; i++) {
		uint32_t id = tb_idmap_page(chunk, i);
		if (tb_engine_page_node(l->e, id) != TB_NO_NODE) {
			tb_engine_unplace(l->e, id);
			l->c[TB_L_pages_dropped]++;
		}
		l->ps[id] = 0;
	}
}

void tb_live_drop_target(struct tb_live *l, size_t slot, const char *why)
{
	struct tb_target *t = l->t[slot];
	for (size_t i = 0; i < t->nr_chunks; i++) {
		drop_pages(l, t->chunks[i].chunk);
		tb_idmap_put(&l->map, t->chunks[i].chunk);
	}
	l->acc.ops->detach(l->acc.ctx, t->pid);
	if (l->uffd)
		tb_uffd_detach(l->uffd, t->pid);
	if (why) { /* NULL: it was never added, so it is not counted as dropped */
		fprintf(l->log, "tierbal: pid %d (%s) %s; no longer managed\n", (int)t->pid, t->comm, why);
		l->c[TB_L_targets_dropped]++;
	}
	tb_target_close(t);
	free(t);
	l->t[slot] = NULL;
}

/* Gives the target chunks for the stretches it uses now, frees the others,
 * and registers its mappings with its userfaultfd if it has one. */
int tb_live_update_chunks(struct tb_live *l, size_t slot)
{
	struct tb_target *t = l->t[slot];
	struct tb_tchunk *want;
	struct tb_vma *v = NULL;
	size_t n, nv = 0;
	bool uffd = l->uffd && tb_uffd_has(l->uffd, t->pid);
	unsigned skipped = t->skipped_vmas;
	int rc = tb_target_stretches(t, &want, &n, uffd ? &v : NULL, &nv);
	if (rc)
		return rc;
	if (t->skipped_vmas > skipped)
		fprintf(l->log,
			"tierbal: pid %d (%s): %u mappings larger than all memory of this machine are left alone "
			"(reservations such as sanitizer shadow memory: they cannot be resident as a whole)\n",
			(int)t->pid, t->comm, t->skipped_vmas);
	if (uffd) {
		tb_uffd_sync(l->uffd, t->pid, v, nv);
		free(v);
	}
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		while (j < t->nr_chunks && t->chunks[j].base < want[i].base) {
			drop_pages(l, t->chunks[j].chunk);
			tb_idmap_put(&l->map, t->chunks[j].chunk);
			j++;
		}
		if (j < t->nr_chunks && t->chunks[j].base == want[i].base) {
			want[i].chunk = t->chunks[j++].chunk;
			continue;
		}
		if (tb_idmap_get(&l->map, t->pool, (uint32_t)slot, want[i].base, &want[i].chunk)) {
			want[i].chunk = UINT32_MAX;
			l->c[TB_L_idmap_full]++;
			if (!l->warned_full)
				fprintf(l->log,
					"tierbal: managed memory limit reached (%u MiB per fast node); raise "
					"max_managed_mb to manage more\n",
					l->map.chunks_per_pool * 2);
			l->warned_full = true;
		}
	}
	for (; j < t->nr_chunks; j++) {
		drop_pages(l, t->chunks[j].chunk);
		tb_idmap_put(&l->map, t->chunks[j].chunk);
	}
	/* keep only stretches that got a chunk */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (want[i].chunk != UINT32_MAX)
			want[k++] = want[i];
	free(t->chunks);
	t->chunks = want;
	t->nr_chunks = k;
	return 0;
}

int tb_live_add(struct tb_live *l, pid_t pid, bool from_cgroup, char *err, size_t len)
{
	for (size_t i = 0; i < l->nr_t; i++)
		if (l->t[i] && l->t[i]->pid == pid && !l->t[i]->dead)
			return -EEXIST;
	struct tb_proc_stat st;
	int rc = tb_target_check(pid, &st, err, len);
	if (rc) {
		l->c[TB_L_targets_refused]++;
		return rc;
	}
	size_t slot = 0;
	while (slot < l->nr_t && l->t[slot])
		slot++;
	if (slot == l->nr_t) {
		struct tb_target **nt = realloc(
			l->t, (l->nr_t + 1) * sizeof(*nt)); // NOLINT(bugprone-sizeof-expression): an array of pointers
		if (!nt) {
			snprintf(err, len, "out of memory");
			return -ENOMEM;
		}
		l->t = nt;
		l->t[l->nr_t++] = NULL;
	}
	struct tb_target *t = malloc(sizeof(*t));
	if (!t) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	rc = tb_target_open(t, pid, &st, err, len);
	if (rc) {
		free(t);
		return rc;
	}
	t->from_cgroup = from_cgroup;
	t->max_vma_bytes = l->machine_bytes;
	/* its pages join the engine space of the fast node it runs on */
	int cpu_node = numa_node_of_cpu(st.processor);
	t->pool = 0;
	for (unsigned s = 0; s < l->nr_pools; s++)
		if (l->knode[l->pool_node[s]] == cpu_node)
			t->pool = s;
	rc = l->acc.ops->attach(l->acc.ctx, pid);
	if (rc) {
		snprintf(err, len, "pid %d (%s): the %s sampler cannot watch it: %s", (int)pid, st.comm,
			 l->acc.ops->name, strerror(-rc));
		tb_target_close(t);
		free(t);
		return rc;
	}
	l->t[slot] = t;
	rc = tb_live_update_chunks(l, slot);
	if (rc) {
		snprintf(err, len, "pid %d (%s): cannot read its memory maps: %s", (int)pid, st.comm, strerror(-rc));
		tb_live_drop_target(l, slot, NULL);
		return rc;
	}
	l->c[TB_L_targets_added]++;
	fprintf(l->log, "tierbal: managing pid %d (%s)%s\n", (int)pid, t->comm, from_cgroup ? " from the cgroup" : "");
	return 0;
}

static bool in_list(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

void tb_live_refresh(struct tb_live *l, const char *cgroup)
{
	pid_t *members = NULL;
	size_t nm = 0;
	bool have_cg = cgroup && cgroup[0] && tb_cgroup_pids(cgroup, &members, &nm) == 0;
	for (size_t i = 0; i < l->nr_t; i++) {
		struct tb_target *t = l->t[i];
		if (!t)
			continue;
		if (!tb_target_alive(t)) {
			tb_live_drop_target(l, i, "exited");
			continue;
		}
		if (t->from_cgroup && have_cg && !in_list(members, nm, t->pid)) {
			tb_live_drop_target(l, i, "left the cgroup");
			continue;
		}
		int rc = tb_live_update_chunks(l, i);
		if (rc == -ESRCH)
			tb_live_drop_target(l, i, "exited");
		else if (rc)
			l->c[TB_L_sample_errors]++;
	}
	for (size_t i = 0; have_cg && i < nm; i++) {
		char err[256];
		bool known = false;
		for (size_t k = 0; k < l->nr_t; k++)
			known |= l->t[k] && l->t[k]->pid == members[i];
		if (known || members[i] == getpid())
			continue;
		int rc = tb_live_add(l, members[i], true, err, sizeof(err));
		if (rc && rc != -EEXIST && rc != -ESRCH)
			fprintf(l->log, "tierbal: cgroup member refused: %s\n", err);
	}
	free(members);
}
