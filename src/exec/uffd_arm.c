/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Arming pages for hint faults: parked away where the process allows it,
 * write-protected otherwise; parked windows that expire come back. */
#include "exec/uffd_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "exec/rt_proto.h"

/* How much of [a, end) from a lies in one registered mapping of ours: the
 * kernel moves a page out of a mapping that is not registered, and the
 * program would then read a fresh zero page there; *missing: whether that
 * mapping faults on missing pages, which parking needs for the same reason. Locked. */
static uintptr_t ours_from(const struct proc *p, uintptr_t a, uintptr_t end, bool *missing)
{
	size_t lo = 0, hi = p->nr_reg;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->reg[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->nr_reg || p->reg[lo].start > a || !p->reg[lo].ours)
		return 0;
	*missing = p->reg[lo].missing;
	return (p->reg[lo].end < end ? p->reg[lo].end : end) - a;
}

static int protect(struct tb_uffd *u, struct proc *p, uintptr_t addr, size_t len)
{
	struct uffdio_writeprotect wp = {.range = {addr, len}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
	int rc = ioctl(p->fd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
	u->st.protect_calls++;
	if (!rc)
		u->st.protected_pages += len / PAGE;
	return rc;
}

/* Parks a batch planned by tb_park_plan, and write-protects what did not
 * move. Locked. */
static int park_batch(struct tb_uffd *u, struct proc *p, struct tb_park_move *m, size_t n)
{
	if (!n)
		return 0;
	int rc = tb_uffd_mover_move_many(p, m, n, UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES | UFFDIO_MOVE_MODE_DONTWAKE);
	tb_park_settle(&p->park, m, n, rc);
	if (rc == -ETIMEDOUT || rc == -ESRCH)
		return 0;
	int prc = 0;
	for (size_t k = 0; k < n; k++) {
		if (!rc && m[k].rc == -EPERM) {
			/* not registered after all (a mapping came where the registration
			 * found a hole): left alone until a sync registers it */
			tb_uffd_forget_reg(p, m[k].src, m[k].src + m[k].len);
			u->st.arm_unregistered += m[k].len / PAGE;
			continue;
		}
		size_t moved = rc ? 0 : m[k].rc ? (size_t)(m[k].moved > 0 ? m[k].moved : 0) : m[k].len;
		if (moved < m[k].len)
			prc = protect(u, p, m[k].src + moved, m[k].len - moved);
	}
	return prc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Reads the runtime's keep table again if it changed. A table that cannot
 * be read keeps the last one. Locked. */
static void refresh_keep(struct proc *p)
{
	uint64_t gen;
	if (p->mem_fd < 0 || pread(p->mem_fd, &gen, sizeof(gen), (off_t)p->keep_addr) != sizeof(gen) ||
	    gen == p->keep_gen)
		return;
	static uint64_t page[TB_RT_KEEP_MAX]; /* locked: one reader at a time */
	if (pread(p->mem_fd, page, sizeof(page), (off_t)(p->keep_addr + offsetof(struct tb_rt_keep, page))) !=
	    (ssize_t)sizeof(page))
		return;
	uint64_t *k = realloc(p->keep, sizeof(page));
	if (!k)
		return;
	size_t n = 0;
	for (size_t i = 0; i < TB_RT_KEEP_MAX; i++)
		if (page[i])
			k[n++] = page[i] & ~(uint64_t)(PAGE - 1);
	qsort(k, n, sizeof(*k), cmp_u64);
	p->keep = k;
	p->nkeep = n;
	p->keep_gen = gen;
}

/* Whether page a is a thread descriptor's (see struct tb_rt_keep), or how
 * far from a the next one starts (up to end). Locked. */
static uintptr_t keep_free_from(const struct proc *p, uintptr_t a, uintptr_t end)
{
	size_t lo = 0, hi = p->nkeep;
	while (lo < hi) { /* the first entry whose pages end after a */
		size_t mid = (lo + hi) / 2;
		if (p->keep[mid] + (uint64_t)TB_RT_KEEP_PAGES * PAGE <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->nkeep || p->keep[lo] >= end)
		return end - a;
	return p->keep[lo] <= a ? 0 : p->keep[lo] - a;
}

/* Parks (or write-protects) [addr, end), which lies in one registered
 * mapping of ours. Locked. */
static int arm_range(struct tb_uffd *u, struct proc *p, uintptr_t addr, uintptr_t end, bool park, uint64_t now)
{
	uintptr_t span = (uintptr_t)u->window * PAGE, a = addr;
	int rc = 0;
	struct tb_park_move m[TB_RT_MAX_MOVES];
	size_t n = 0;
	while (park && a < end) {
		if (TB_RT_MAX_MOVES - n < u->window) { /* one window plans at most this many moves */
			rc = park_batch(u, p, m, n);
			n = 0;
		}
		uintptr_t stop = a - a % span + span < end ? a - a % span + span : end;
		if (!tb_uffd_may_park(p, a, stop, now)) {
			rc = protect(u, p, a, stop - a);
			a = stop;
			continue;
		}
		long got = tb_park_plan(&p->park, a, stop - a, now, m, &n);
		if (got == -ENOSPC)
			break; /* no slot left: the rest is write-protected */
		if (got < 0)
			got = 0;
		if ((uintptr_t)got < stop - a)
			rc = protect(u, p, a + (uintptr_t)got, stop - a - (uintptr_t)got);
		a = stop;
	}
	int brc = park_batch(u, p, m, n);
	rc = rc ? rc : brc;
	if (a < end)
		rc = protect(u, p, a, end - a);
	return rc;
}

int tb_uffd_arm(struct tb_uffd *u, pid_t pid, uintptr_t addr, size_t len, uint64_t now)
{
	struct proc *p = tb_uffd_find(u, pid);
	if (!p || pid <= 0)
		return -ENOENT;
	pthread_mutex_lock(&u->lock);
	/* a mapping change read but not yet applied: its pages wait where they are */
	bool park = p->parking && !p->spoiled && !p->stuck && now >= p->hold_until && !tb_uffd_events_waiting(p);
	if (park && tb_park_spoiled(&p->park)) {
		p->spoiled = true; /* the program discards parked memory too often: writes only from now on */
		park = false;
	}
	int rc = 0;
	refresh_keep(p);
	/* only what lies in mappings registered with this userfaultfd: the rest
	 * (mapped since the last sync, or the program's own userfaultfd's) is
	 * left alone, and so are the threads' descriptors */
	for (uintptr_t a = addr, end = addr + len; a < end;) {
		bool missing = false;
		uintptr_t in = ours_from(p, a, end, &missing);
		if (in)
			in = keep_free_from(p, a, a + in);
		if (!in) {
			u->st.arm_skipped++;
			a += PAGE;
			continue;
		}
		int r = arm_range(u, p, a, a + in, park && missing, now);
		rc = rc ? rc : r;
		a += in;
	}
	pthread_mutex_unlock(&u->lock);
	return rc;
}

int tb_uffd_arm_huge(struct tb_uffd *u, pid_t pid, uintptr_t addr)
{
	struct proc *p = tb_uffd_find(u, pid);
	if (!p || pid <= 0 || addr % TB_UFFD_HPAGE)
		return p && pid > 0 ? -EINVAL : -ENOENT;
	pthread_mutex_lock(&u->lock);
	refresh_keep(p);
	bool missing;
	uintptr_t end = addr + TB_UFFD_HPAGE, in = ours_from(p, addr, end, &missing);
	if (in == TB_UFFD_HPAGE)
		in = keep_free_from(p, addr, end);
	int rc = 0;
	if (in < TB_UFFD_HPAGE) { /* not all in one mapping of ours, or a thread's descriptor in it */
		u->st.arm_skipped += TB_UFFD_HPAGE / PAGE;
	} else if ((rc = tb_hugeset_add(&p->huge, addr)) == 0) {
		rc = protect(u, p, addr, TB_UFFD_HPAGE);
		if (rc)
			tb_hugeset_take(&p->huge, addr);
		else
			u->st.armed_huge++;
	}
	pthread_mutex_unlock(&u->lock);
	return rc;
}

bool tb_uffd_parked(struct tb_uffd *u, pid_t pid, uintptr_t start, unsigned npages, uint64_t *bits)
{
	struct proc *p = pid > 0 ? tb_uffd_find(u, pid) : NULL;
	if (!p || !p->park_init)
		return false;
	pthread_mutex_lock(&u->lock);
	bool any = p->park.nparked > 0;
	if (any)
		tb_park_mask(&p->park, start, npages, bits);
	pthread_mutex_unlock(&u->lock);
	return any;
}

struct expire_ctx {
	struct tb_uffd *u;
	struct proc *p;
};

/* A window back unaccessed stays armed, write-protected: as the kernel's
 * scanned page, it faults on its next write until the next scan, however
 * late (a read then goes unseen). */
static void expired(void *ctx, uintptr_t addr, size_t len)
{
	struct expire_ctx *c = ctx;
	protect(c->u, c->p, addr, len);
}

void tb_uffd_expire(struct tb_uffd *u, uint64_t now)
{
	if (!u->park || now < u->popt.park_ns)
		return;
	pthread_mutex_lock(&u->lock);
	for (size_t i = 0; i < MAX_PROCS; i++) {
		struct proc *p = &u->procs[i];
		/* what the kernel refuses now (a mapping changing) goes back next time */
		if (p->pid && p->park_init) {
			struct expire_ctx c = {u, p};
			tb_park_expire(&p->park, now - u->popt.park_ns, expired, &c);
		}
	}
	pthread_mutex_unlock(&u->lock);
}
