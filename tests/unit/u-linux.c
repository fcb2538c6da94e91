/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The parts of linux/ that need no NUMA machine (the rest runs in the guest). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux/kpageflags.h"
#include "linux/maps.h"
#include "linux/pagemap.h"
#include "linux/mover.h"
#include "linux/softdirty.h"
#include "linux/topology.h"
#include "lib-run.h"

static void test_nodelist(void **state)
{
	(void)state;
	uint64_t m;
	assert_int_equal(tb_parse_nodelist("0", &m), 0);
	assert_int_equal(m, 1);
	assert_int_equal(tb_parse_nodelist("0-2,5\n", &m), 0);
	assert_int_equal(m, 0x27);
	assert_int_equal(tb_parse_nodelist("", &m), 0);
	assert_int_equal(m, 0);
	assert_int_equal(tb_parse_nodelist("3-1", &m), -EINVAL);
	assert_int_equal(tb_parse_nodelist("1,x", &m), -EINVAL);
	assert_int_equal(tb_parse_nodelist("64", &m), -EINVAL);
	assert_int_equal(tb_parse_nodelist("1;2", &m), -EINVAL);
}

static void test_maps_lines(void **state)
{
	(void)state;
	struct tb_vma v;
	assert_int_equal(tb_maps_parse_line("7f12a000-7f12c000 rw-p 00000000 00:00 0 \n", &v), 0);
	assert_true(v.start == 0x7f12a000 && v.end == 0x7f12c000 && v.writable && v.private && v.anon);
	assert_int_equal(tb_maps_parse_line("55d0e000-55d2f000 rw-p 00000000 00:00 0          [heap]\n", &v), 0);
	assert_true(v.anon);
	assert_int_equal(tb_maps_parse_line("7f00-8f00 r-xp 00001000 08:01 131 /usr/lib/libc.so.6\n", &v), 0);
	assert_true(!v.anon && !v.writable && v.readable);
	assert_int_equal(tb_maps_parse_line("7fff0000-7fff2000 r--p 00000000 00:00 0  [vvar]\n", &v), 0);
	assert_false(v.anon);
	assert_int_equal(tb_maps_parse_line("garbage\n", &v), -EINVAL);
	assert_int_equal(tb_maps_parse_line("2000-1000 rw-p 0 00:00 0\n", &v), -EINVAL);
}

static void test_maps_of_self(void **state)
{
	(void)state;
	long psz = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 8 * (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	struct tb_vma *v;
	size_t n;
	assert_int_equal(tb_maps_read(0, &v, &n), 0);
	int found = 0;
	for (size_t i = 0; i < n; i++)
		found |= v[i].start <= (uintptr_t)p && (uintptr_t)p + 8 * (uintptr_t)psz <= v[i].end && v[i].anon &&
			 v[i].writable;
	assert_true(found);
	/* smaps: the same areas (its per-area lines are not taken for areas); the flag is the guest's test */
	struct tb_vma *sv;
	size_t sn;
	assert_int_equal(tb_smaps_read(0, &sv, &sn), 0);
	int same = 0; /* the area holding p, with the bounds maps gave it (others may come and go meanwhile) */
	for (size_t i = 0; i < sn; i++)
		for (size_t k = 0; k < n; k++)
			same |= sv[i].start == v[k].start && sv[i].end == v[k].end && sv[i].anon && v[k].anon &&
				sv[i].start <= (uintptr_t)p && (uintptr_t)p < sv[i].end;
	assert_true(same);
	assert_true(sn > 3 && sn < 2 * n + 8); /* areas, not their smaps lines */
	free(sv);
	free(v);
	munmap(p, 8 * (size_t)psz);
	assert_int_equal(tb_maps_read(999999, &v, &n), -ENOENT);
	assert_int_equal(tb_smaps_read(999999, &v, &n), -ENOENT);
}

/* AnonHugePages of the area of /proc/self/smaps starting at start, in kB */
static long anon_huge_kb(uintptr_t start)
{
	FILE *fp = fopen("/proc/self/smaps", "r");
	assert_non_null(fp);
	char line[512];
	bool in = false;
	long kb = -1;
	while (kb < 0 && fgets(line, sizeof(line), fp)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2)
			in = a == start;
		else if (in)
			sscanf(line, "AnonHugePages: %ld kB", &kb);
	}
	fclose(fp);
	return kb;
}

/* What kpageflags says of one written 2 MiB-aligned stretch, against smaps */
static void thp_of(int kfd, int pfd, char *p, bool *huge, bool *shared)
{
	uint64_t pm[TB_PM_THP_PAGES];
	assert_int_equal(tb_pagemap_read(pfd, (uintptr_t)p, TB_PM_THP_PAGES, pm), 0);
	assert_int_equal(tb_kpageflags_thp(kfd, pm, huge, shared), 0);
}

/* A MADV_HUGEPAGE stretch is one huge page exactly when smaps says so, shared while a forked child
 * maps it too; a MADV_NOHUGEPAGE one never is */
static void test_kpageflags_thp(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* pagemap hides frames from others than root; reported as skipped */
	const size_t H = (size_t)TB_PM_THP_PAGES * 4096;
	char *m = mmap(NULL, 4 * H, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	char *a = (char *)(((uintptr_t)m + H - 1) & ~(uintptr_t)(H - 1)), *b = a + H;
	assert_int_equal(madvise(a, H, MADV_HUGEPAGE), 0);
	assert_int_equal(madvise(b, H, MADV_NOHUGEPAGE), 0);
	memset(a, 1, 2 * H);
	int kfd = tb_kpageflags_open();
	assert_true(kfd >= 0);
	int pfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	assert_true(pfd >= 0);
	bool huge, shared;
	thp_of(kfd, pfd, a, &huge, &shared);
	long kb = anon_huge_kb((uintptr_t)a);
	assert_true(kb == 0 || kb == 2048);
	assert_int_equal(huge, kb == 2048); /* the kernel may have had no huge page to give */
	assert_false(shared);
	thp_of(kfd, pfd, b, &huge, &shared);
	assert_false(huge);
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) { /* holds the copied mappings until the parent closes the pipe */
		char c;
		close(go[1]);
		_exit(read(go[0], &c, 1) == 0 ? 0 : 1);
	}
	close(go[0]);
	thp_of(kfd, pfd, a, &huge, &shared);
	assert_int_equal(huge, kb == 2048);
	assert_int_equal(shared, kb == 2048);
	close(go[1]);
	int st;
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(pfd);
	close(kfd);
	munmap(m, 4 * H);
}

static void test_softdirty_probe_answers(void **state)
{
	(void)state;
	/* the host kernel may or may not track soft-dirty pages; the probe must
	 * say which (the guest test checks the tracking itself) */
	int rc = tb_sd_probe();
	assert_true(rc == 0 || rc == -ENOTSUP);
	uint8_t w[4], pr[4];
	long psz = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 4 * (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	p[0] = 1;
	p[2 * psz] = 1;
	assert_int_equal(tb_sd_scan(0, (uintptr_t)p, 4, w, pr), 0);
	assert_true(pr[0] && !pr[1] && pr[2] && !pr[3]); /* present bits: only the touched pages */
	munmap(p, 4 * (size_t)psz);
	assert_int_equal(tb_sd_clear(999999), -ENOENT);
}

/* On this one-node machine every present page is on node 0: counted across
 * more than one move_pages batch; pages never touched are on no node. */
static void test_mover_count(void **state)
{
	(void)state;
	size_t n = TB_MOVE_BATCH * 2 + 100;
	char *m = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	madvise(m, n * 4096, MADV_NOHUGEPAGE); /* about 4 KiB pages: with THP a touch fills its whole huge page */
	void **pages = calloc(n, sizeof(*pages));
	assert_non_null(pages);
	for (size_t i = 0; i < n; i++) {
		pages[i] = m + i * 4096;
		if (i % 3)
			m[i * 4096] = 1;
	}
	size_t c = 99;
	assert_int_equal(tb_mover_count(0, pages, n, 0, &c), 0);
	assert_int_equal(c, n - (n + 2) / 3);
	assert_int_equal(tb_mover_count(0, pages, n, 1, &c), 0);
	assert_int_equal(c, 0);
	assert_int_equal(tb_mover_count(4194304, pages, n, 0, &c), -ESRCH);
	free(pages);
	munmap(m, n * 4096);
}

/* zoneinfo as 6.12 prints it in the tier-layout guest (abridged; the DMA32
 * zone boosted for the test): node 1 is all ZONE_MOVABLE, and the empty
 * zones' watermarks do not count */
static const char zoneinfo[] =
	"Node 0, zone      DMA\n  per-node stats\n      nr_inactive_anon 20\n  pages free     3808\n"
	"        boost    0\n        min      187\n        low      233\n        high     279\n"
	"        promo    325\n        spanned  4095\n        managed  3840\n"
	"Node 0, zone    DMA32\n  pages free     212840\n        boost    100\n        min      11176\n"
	"        low      13945\n        high     16714\n        managed  226661\n"
	"  pagesets\n    cpu: 0\n              count: 50\n              high:  378\n"
	"Node 0, zone  Movable\n  pages free     0\n        boost    0\n        min      32\n"
	"        low      32\n        high     32\n        managed  0\n"
	"Node 1, zone   Normal\n  pages free     0\n        min      0\n        managed  0\n"
	"Node 1, zone  Movable\n  pages free     229102\n        boost    0\n        min      128\n"
	"        low      357\n        high     586\n        managed  229376\n"
	"        protection: (0, 0, 0, 0, 0)\n"
	"Node 2, zone  Movable\n        min      1\n        managed  5\n"; /* a node tierbal does not use */

static void test_zoneinfo(void **state)
{
	(void)state;
	char root[] = "/tmp/tb-zoneinfo-XXXXXX", dir[64], path[96];
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/proc", root);
	snprintf(path, sizeof(path), "%s/zoneinfo", dir);
	struct tb_topology t = {.nr_nodes = 2};
	t.node[0].id = 0;
	t.node[1].id = 1;
	t.node[0].movable_bytes = t.node[0].wmark_high = 77; /* stale: read anew */
	assert_int_equal(tb_topology_read_zones(&t, root), -ENOENT);
	assert_int_equal(mkdir(dir, 0700), 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(zoneinfo, f);
	fclose(f);
	assert_int_equal(tb_topology_read_zones(&t, root), 0);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	assert_int_equal(t.node[0].movable_bytes, 0);
	assert_int_equal(t.node[0].wmark_min, 187 + 11076); /* the boost taken out, the empty Movable zone left out */
	assert_int_equal(t.node[0].wmark_low, 233 + 13845);
	assert_int_equal(t.node[0].wmark_high, 279 + 16614);
	assert_int_equal(t.node[1].movable_bytes, 229376 * page);
	assert_int_equal(t.node[1].wmark_min, 128);
	assert_int_equal(t.node[1].wmark_high, 586);
	unlink(path);
	rmdir(dir);
	rmdir(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nodelist),       cmocka_unit_test(test_maps_lines),
		cmocka_unit_test(test_maps_of_self),   cmocka_unit_test(test_softdirty_probe_answers),
		cmocka_unit_test(test_mover_count),    cmocka_unit_test(test_zoneinfo),
		cmocka_unit_test(test_kpageflags_thp),
	};
	return tb_test_run("linux", tests, sizeof(tests) / sizeof(tests[0]));
}
