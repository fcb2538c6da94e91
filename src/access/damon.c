/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The DAMON sampler: one kdamond per process, virtual-address monitoring,
 * and a "stat" scheme whose tried regions (kernel 6.2 and later) give each
 * region's access count over the last aggregation interval. */
#include "access/access.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DAMON_ADMIN "/sys/kernel/mm/damon/admin/kdamonds"
#define SAMPLE_US 5000
#define AGGR_US 200000

struct region {
	uintptr_t start, end;
	unsigned nr_accesses;
};

struct watched {
	pid_t pid;
	struct region *r;
	size_t nr;
};

struct damon {
	char root[256]; /* prefix for tests; "" on a live system */
	struct watched *w;
	size_t nr_w;
};

static int path_of(const struct damon *d, char *buf, size_t len, const char *rel)
{
	int n = snprintf(buf, len, "%s" DAMON_ADMIN "/%s", d->root, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int put(const struct damon *d, const char *rel, const char *val)
{
	char p[512];
	int rc = path_of(d, p, sizeof(p), rel);
	if (rc)
		return rc;
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC); /* sysfs ignores the truncation; plain files need it */
	if (fd < 0)
		return -errno;
	size_t n = strlen(val);
	rc = write(fd, val, n) == (ssize_t)n ? 0 : -errno;
	close(fd);
	return rc;
}

static int get(const struct damon *d, const char *rel, char *out, size_t len)
{
	char p[512];
	int rc = path_of(d, p, sizeof(p), rel);
	if (rc)
		return rc;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t got = read(fd, out, len - 1);
	rc = got < 0 ? -errno : 0;
	close(fd);
	if (!rc) {
		out[got] = '\0';
		out[strcspn(out, "\n")] = '\0';
	}
	return rc;
}

static int putf(const struct damon *d, const char *val, const char *fmt, unsigned i)
{
	char rel[256];
	snprintf(rel, sizeof(rel), fmt, i);
	return put(d, rel, val);
}

static int stop_all(struct damon *d)
{
	char buf[64];
	if (get(d, "nr_kdamonds", buf, sizeof(buf)))
		return 0;
	unsigned n = (unsigned)strtoul(buf, NULL, 10);
	for (unsigned i = 0; i < n; i++) {
		char rel[64], st[16];
		snprintf(rel, sizeof(rel), "%u/state", i);
		if (!get(d, rel, st, sizeof(st)) && !strcmp(st, "on"))
			putf(d, "off", "%u/state", i);
	}
	return 0;
}

/* One kdamond watching pid: vaddr operations, a stat scheme matching every region. */
static int setup_one(struct damon *d, unsigned i, pid_t pid)
{
	static const char *const steps[][2] = {
		{"%u/contexts/nr_contexts", "1"},
		{"%u/contexts/0/operations", "vaddr"},
		{"%u/contexts/0/monitoring_attrs/intervals/sample_us", "5000"},
		{"%u/contexts/0/monitoring_attrs/intervals/aggr_us", "200000"},
		{"%u/contexts/0/monitoring_attrs/intervals/update_us", "1000000"},
		{"%u/contexts/0/monitoring_attrs/nr_regions/min", "10"},
		{"%u/contexts/0/monitoring_attrs/nr_regions/max", "4000"},
		{"%u/contexts/0/targets/nr_targets", "1"},
		{"%u/contexts/0/schemes/nr_schemes", "1"},
		{"%u/contexts/0/schemes/0/action", "stat"},
		{"%u/contexts/0/schemes/0/access_pattern/sz/min", "0"},
		{"%u/contexts/0/schemes/0/access_pattern/sz/max", "18446744073709551615"},
		{"%u/contexts/0/schemes/0/access_pattern/nr_accesses/min", "0"},
		{"%u/contexts/0/schemes/0/access_pattern/nr_accesses/max", "4294967295"},
		{"%u/contexts/0/schemes/0/access_pattern/age/min", "0"},
		{"%u/contexts/0/schemes/0/access_pattern/age/max", "4294967295"},
	};
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		int rc = putf(d, steps[s][1], steps[s][0], i);
		if (rc)
			return rc;
	}
	char v[32];
	snprintf(v, sizeof(v), "%d", (int)pid);
	return putf(d, v, "%u/contexts/0/targets/0/pid_target", i);
}

/* DAMON cannot change its number of kdamonds while one runs: stop, resize, restart. */
static int restart(struct damon *d)
{
	stop_all(d);
	char n[16];
	snprintf(n, sizeof(n), "%zu", d->nr_w);
	int rc = put(d, "nr_kdamonds", n);
	for (size_t i = 0; i < d->nr_w && !rc; i++) {
		rc = setup_one(d, (unsigned)i, d->w[i].pid);
		if (!rc)
			rc = putf(d, "on", "%u/state", (unsigned)i);
	}
	return rc;
}

static int dm_attach(void *ctx, pid_t pid)
{
	struct damon *d = ctx;
	struct watched *nw = realloc(d->w, (d->nr_w + 1) * sizeof(*nw));
	if (!nw)
		return -ENOMEM;
	d->w = nw;
	d->w[d->nr_w++] = (struct watched){.pid = pid};
	int rc = restart(d);
	if (rc) {
		d->nr_w--;
		restart(d);
	}
	return rc;
}

static void dm_detach(void *ctx, pid_t pid)
{
	struct damon *d = ctx;
	for (size_t i = 0; i < d->nr_w; i++)
		if (d->w[i].pid == pid) {
			free(d->w[i].r);
			d->w[i] = d->w[--d->nr_w];
			restart(d);
			return;
		}
}

static int cmp_region(const void *a, const void *b)
{
	const struct region *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int read_regions(struct damon *d, unsigned i, struct watched *w)
{
	char dir[512], rel[256];
	snprintf(rel, sizeof(rel), "%u/contexts/0/schemes/0/tried_regions", i);
	int rc = path_of(d, dir, sizeof(dir), rel);
	if (rc)
		return rc;
	DIR *dp = opendir(dir);
	if (!dp)
		return -errno;
	w->nr = 0;
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(dp))) {
		char *end;
		unsigned long idx = strtoul(de->d_name, &end, 10);
		if (end == de->d_name || *end)
			continue; /* total_bytes and the like */
		char f[320], v[64];
		struct region r = {0};
		snprintf(f, sizeof(f), "%s/%lu/start", rel, idx);
		if (get(d, f, v, sizeof(v)))
			continue;
		r.start = (uintptr_t)strtoull(v, NULL, 10);
		snprintf(f, sizeof(f), "%s/%lu/end", rel, idx);
		if (get(d, f, v, sizeof(v)))
			continue;
		r.end = (uintptr_t)strtoull(v, NULL, 10);
		snprintf(f, sizeof(f), "%s/%lu/nr_accesses", rel, idx);
		if (get(d, f, v, sizeof(v)))
			continue;
		r.nr_accesses = (unsigned)strtoul(v, NULL, 10);
		if (w->nr == cap) {
			cap = cap ? 2 * cap : 64;
			struct region *nr = realloc(w->r, cap * sizeof(*nr));
			if (!nr) {
				closedir(dp);
				return -ENOMEM;
			}
			w->r = nr;
		}
		w->r[w->nr++] = r;
	}
	closedir(dp);
	qsort(w->r, w->nr, sizeof(*w->r), cmp_region);
	return 0;
}

static int dm_round_begin(void *ctx)
{
	struct damon *d = ctx;
	int rc = 0;
	for (size_t i = 0; i < d->nr_w; i++) {
		int r = putf(d, "update_schemes_tried_regions", "%u/state", (unsigned)i);
		if (!r)
			r = read_regions(d, (unsigned)i, &d->w[i]);
		if (r)
			rc = r;
	}
	return rc;
}

static void dm_mark(void *ctx, pid_t pid, uintptr_t addr, size_t n, const uint64_t *pm, uint8_t *acc)
{
	struct damon *d = ctx;
	(void)pm;
	memset(acc, 0, n);
	const struct watched *w = NULL;
	for (size_t i = 0; i < d->nr_w; i++)
		if (d->w[i].pid == pid)
			w = &d->w[i];
	if (!w)
		return;
	size_t lo = 0, hi = w->nr;
	while (lo < hi) { /* first region ending after addr */
		size_t mid = (lo + hi) / 2;
		if (w->r[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = addr + (i << 12);
		while (lo < w->nr && w->r[lo].end <= a)
			lo++;
		if (lo < w->nr && w->r[lo].start <= a && w->r[lo].nr_accesses)
			acc[i] = TB_ACC_READ; /* DAMON cannot tell reads from writes */
	}
}

static int dm_round_end(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	return 0;
}

static void dm_destroy(void *ctx)
{
	struct damon *d = ctx;
	if (!d)
		return;
	stop_all(d);
	put(d, "nr_kdamonds", "0");
	for (size_t i = 0; i < d->nr_w; i++)
		free(d->w[i].r);
	free(d->w);
	free(d);
}

static const struct tb_access_ops damon_ops = {
	.name = "damon",
	.attach = dm_attach,
	.detach = dm_detach,
	.round_begin = dm_round_begin,
	.mark = dm_mark,
	.round_end = dm_round_end,
	.destroy = dm_destroy,
};

/* Usable when the admin interface exists, no other kdamond runs (DAMON then
 * refuses to add one), and a scheme has tried_regions (kernel >= 6.2). */
static int probe(struct damon *d, char *why, size_t len)
{
	char buf[256], p[512];
	path_of(d, p, sizeof(p), "");
	struct stat sb;
	if (stat(p, &sb)) {
		snprintf(why, len, "DAMON: no sysfs interface (%s" DAMON_ADMIN ": %s)", d->root, strerror(errno));
		return -ENOTSUP;
	}
	if (get(d, "nr_kdamonds", buf, sizeof(buf))) {
		snprintf(why, len, "DAMON: cannot read nr_kdamonds (%s); run as root", strerror(errno));
		return -EACCES;
	}
	unsigned n = (unsigned)strtoul(buf, NULL, 10);
	for (unsigned i = 0; i < n; i++) {
		char rel[64], st[16];
		snprintf(rel, sizeof(rel), "%u/state", i);
		if (!get(d, rel, st, sizeof(st)) && !strcmp(st, "on")) {
			snprintf(why, len,
				 "DAMON: kdamond %u is already running for someone else, and DAMON cannot add "
				 "a kdamond while one runs",
				 i);
			return -EBUSY;
		}
	}
	int rc = put(d, "nr_kdamonds", "1");
	if (!rc)
		rc = put(d, "0/contexts/nr_contexts", "1");
	if (!rc)
		rc = put(d, "0/contexts/0/schemes/nr_schemes", "1");
	if (rc) {
		snprintf(why, len, "DAMON: cannot set up a kdamond: %s", strerror(-rc));
		return rc;
	}
	bool vaddr = !get(d, "0/contexts/0/avail_operations", buf, sizeof(buf)) && strstr(buf, "vaddr");
	path_of(d, p, sizeof(p), "0/contexts/0/schemes/0/tried_regions");
	bool tried = stat(p, &sb) == 0;
	put(d, "nr_kdamonds", "0");
	if (!vaddr) {
		snprintf(why, len, "DAMON: no virtual address monitoring (vaddr) in this kernel");
		return -ENOTSUP;
	}
	if (!tried) {
		snprintf(why, len, "DAMON: schemes have no tried_regions here (needs kernel 6.2 or later)");
		return -ENOTSUP;
	}
	return 0;
}

int tb_access_damon_open(struct tb_access *a, const char *sysfs_root, char *why, size_t len)
{
	struct damon *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(why, len, "DAMON: out of memory");
		return -ENOMEM;
	}
	snprintf(d->root, sizeof(d->root), "%s", sysfs_root);
	int rc = probe(d, why, len);
	if (rc) {
		free(d);
		return rc;
	}
	a->ops = &damon_ops;
	a->ctx = d;
	snprintf(why, len, "DAMON virtual address monitoring (sysfs; sample %d us, aggregation %d ms)", SAMPLE_US,
		 AGGR_US / 1000);
	return 0;
}
