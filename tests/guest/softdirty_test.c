/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs in the guest, whose Debian kernel tracks soft-dirty pages: the
 * sampler sees exactly the pages written since its last clear, also when a
 * mapping grows and the kernel marks all of it soft-dirty. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "access/access.h"
#include "linux/procfs.h"
#include "linux/softdirty.h"

static int pass, fail;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	ok ? pass++ : fail++;
}

/* one round of the sampler over n pages at p: how many it reports written, which in w */
static size_t round_of(struct tb_access *a, int pm_fd, volatile char *p, size_t n, uint8_t *w)
{
	uint64_t pm[512];
	a->ops->round_begin(a->ctx);
	if (n > 512 || tb_pagemap_read(pm_fd, (uintptr_t)p, n, pm))
		return (size_t)-1;
	a->ops->mark(a->ctx, getpid(), (uintptr_t)p, n, pm, w);
	a->ops->round_end(a->ctx, getpid());
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uintptr_t end;
		if (w[i] && a->ops->unreliable(a->ctx, getpid(), (uintptr_t)p + i * 4096, &end))
			w[i] = 0; /* what the daemon does with a report the sampler takes back */
		k += w[i] != 0;
	}
	return k;
}

/* A mapping that grows by a neighbour merging into it is soft-dirty as a whole
 * in the kernel's eyes; the sampler must not call its untouched pages written. */
static void sampler_checks(long psz)
{
	struct tb_access a;
	char why[256];
	check(tb_access_softdirty_open(&a, why, sizeof(why)) == 0, "the soft-dirty sampler opens");
	size_t n = 64, sz = n * (size_t)psz;
	/* room for a neighbour below, then the area itself in the upper half */
	char *both = mmap(NULL, 2 * sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int pm_fd = tb_proc_open(0, "pagemap", O_RDONLY);
	if (both == MAP_FAILED || pm_fd < 0) {
		check(0, "area and pagemap");
		return;
	}
	munmap(both, sz);
	volatile char *p = both + sz;
	madvise((void *)p, sz, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < n; i++)
		p[i * (size_t)psz] = 1;
	check(a.ops->attach(a.ctx, getpid()) == 0, "attach");
	uint8_t w[64];
	check(round_of(&a, pm_fd, p, n, w) == 0, "a round with no writes reports none");
	p[5 * psz] = 2;
	check(round_of(&a, pm_fd, p, n, w) == 1 && w[5], "a round reports the one page written");
	/* the neighbour: same protection and flags, so the kernel merges it into the area */
	char *nb = mmap(both, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	check(nb == both, "the neighbour mapping is placed below the area");
	madvise(nb, sz, MADV_NOHUGEPAGE);
	uint64_t pm[64];
	size_t raw = 0;
	if (tb_pagemap_read(pm_fd, (uintptr_t)p, n, pm) == 0)
		for (size_t i = 0; i < n; i++)
			raw += (pm[i] & TB_PM_SOFT_DIRTY) != 0;
	printf("info: after the merge pagemap calls %zu of %zu untouched pages soft-dirty\n", raw, n);
	check(round_of(&a, pm_fd, p, n, w) == 0, "after a mapping merged into the area: no untouched page reported");
	p[9 * psz] = 3;
	check(round_of(&a, pm_fd, p, n, w) == 1 && w[9], "the next round reports the one page written again");
	/* a neighbour mapped and unmapped between two rounds: the area has its old bounds again, and the
	 * kernel's flag is still set (a program's buffer churn next to its data) */
	munmap(nb, sz);
	check(round_of(&a, pm_fd, p, n, w) == 0, "a round after the neighbour went reports none");
	nb = mmap(both, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (nb == both)
		munmap(nb, sz);
	check(round_of(&a, pm_fd, p, n, w) == 0, "a neighbour that came and went between two rounds: none reported");
	a.ops->detach(a.ctx, getpid());
	a.ops->destroy(a.ctx);
	close(pm_fd);
	munmap(both, 2 * sz);
}

int main(void)
{
	check(tb_sd_probe() == 0, "the kernel tracks soft-dirty pages");
	long psz = sysconf(_SC_PAGESIZE);
	size_t n = 256;
	volatile char *p = mmap(NULL, n * (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("FAIL mmap\nsoftdirty: %d passed, %d failed\n", pass, fail + 1);
		return 1;
	}
	madvise((void *)p, n * (size_t)psz, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < n; i++)
		p[i * (size_t)psz] = 1;
	check(tb_sd_clear(0) == 0, "clear_refs accepted");
	p[3 * psz] = 2;
	p[100 * psz + 17] = 2;
	p[255 * psz] = 2;
	char sink = p[50 * psz]; /* a read does not make a page dirty */
	(void)sink;
	uint8_t w[256], pr[256];
	check(tb_sd_scan(0, (uintptr_t)p, n, w, pr) == 0, "pagemap read");
	size_t dirty = 0, present = 0;
	for (size_t i = 0; i < n; i++) {
		dirty += w[i];
		present += pr[i];
	}
	check(dirty == 3 && w[3] && w[100] && w[255], "exactly the 3 written pages are soft-dirty");
	check(!w[50], "the page only read is not");
	check(present == n, "all 256 pages present");
	check(tb_sd_clear(0) == 0 && tb_sd_scan(0, (uintptr_t)p, n, w, NULL) == 0 && memchr(w, 1, n) == NULL,
	      "a second clear leaves none dirty");
	sampler_checks(psz);
	printf("softdirty: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
