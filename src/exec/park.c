/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "exec/park.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "linux/pagemap.h"
#include "exec/uffd_abi.h"

#define PAGE 4096u

static uintptr_t slot_addr(const struct tb_park *p, uint32_t s)
{
	return p->base + (uintptr_t)s * p->win * PAGE;
}

static uint64_t pages_mask(unsigned from, unsigned n)
{
	return (n >= 64 ? ~0ull : ((1ull << n) - 1)) << from;
}

static uint32_t hash_of(uintptr_t w)
{
	uint64_t h = (uint64_t)w * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

static uint32_t tb_park_slots_for(size_t len, unsigned win, uint32_t max_slots)
{
	size_t n = win ? len / ((size_t)win * PAGE) : 0;
	return (uint32_t)(n < max_slots ? n : max_slots);
}

int tb_park_init(struct tb_park *p, int fd, pid_t pid, const struct tb_park_ops *ops, void *ctx, uintptr_t base,
		 size_t len, unsigned win, uint32_t max_slots)
{
	memset(p, 0, sizeof(*p));
	p->fd = fd;
	p->pid = pid;
	p->ops = ops;
	p->ctx = ctx;
	p->pagemap_fd = p->mem_fd = -1;
	if (!win || win > TB_PARK_MAX_WINDOW || base % PAGE)
		return -EINVAL;
	p->nslots = tb_park_slots_for(len, win, max_slots);
	if (!p->nslots)
		return -EINVAL;
	uint32_t cap = 1;
	while (cap < 2 * p->nslots)
		cap <<= 1;
	p->free = malloc(sizeof(*p->free) * p->nslots);
	p->hash = calloc(cap, sizeof(*p->hash));
	p->slot = calloc(p->nslots, sizeof(*p->slot));
	if (!p->free || !p->hash || !p->slot) {
		tb_park_fini(p);
		return -ENOMEM;
	}
	p->hmask = cap - 1;
	p->base = base;
	p->win = win;
	for (uint32_t i = 0; i < p->nslots; i++)
		p->free[i] = p->nslots - 1 - i; /* slot 0 first */
	p->nfree = p->nslots;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	p->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	p->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	return 0;
}

void tb_park_fini(struct tb_park *p)
{
	free(p->free);
	free(p->hash);
	free(p->slot);
	if (p->pagemap_fd >= 0)
		close(p->pagemap_fd);
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	p->free = p->hash = NULL;
	p->slot = NULL;
	p->pagemap_fd = p->mem_fd = -1;
}

static uintptr_t window_of(const struct tb_park *p, uintptr_t a)
{
	return a - a % ((uintptr_t)p->win * PAGE);
}

int tb_park_find(const struct tb_park *p, uintptr_t addr)
{
	uintptr_t w = window_of(p, addr);
	for (uint32_t h = hash_of(w) & p->hmask;; h = (h + 1) & p->hmask) {
		uint32_t v = p->hash[h];
		if (!v)
			return -1;
		if (p->slot[v - 1].orig == w)
			return (int)(v - 1);
	}
}

static void hash_add(struct tb_park *p, uint32_t s)
{
	uint32_t h = hash_of(p->slot[s].orig) & p->hmask;
	while (p->hash[h])
		h = (h + 1) & p->hmask;
	p->hash[h] = s + 1;
}

/* linear probing: deletion shifts back the entries that probed past it */
static void hash_del(struct tb_park *p, uint32_t s)
{
	uint32_t h = hash_of(p->slot[s].orig) & p->hmask;
	while (p->hash[h] != s + 1)
		h = (h + 1) & p->hmask;
	for (uint32_t j = (h + 1) & p->hmask; p->hash[j]; j = (j + 1) & p->hmask) {
		uint32_t home = hash_of(p->slot[p->hash[j] - 1].orig) & p->hmask;
		/* the entry at j may move to h if h lies cyclically in [home, j) */
		if (((j - home) & p->hmask) >= ((j - h) & p->hmask)) {
			p->hash[h] = p->hash[j];
			h = j;
		}
	}
	p->hash[h] = 0;
}

/* A slot whose last parked page went: out of the table, and free again
 * unless junk stays in it. */
static void settle(struct tb_park *p, uint32_t s)
{
	struct tb_park_slot *sl = &p->slot[s];
	if (sl->parked)
		return;
	hash_del(p, s);
	p->nparked--;
	if (sl->junk) {
		p->junk_slots++;
		return;
	}
	sl->orig = 0;
	p->free[p->nfree++] = s;
}

static int move_range(const struct tb_park *p, uintptr_t dst, uintptr_t src, size_t len, bool wake, size_t *done)
{
	*done = 0;
	while (*done < len) {
		int64_t moved = 0;
		int rc =
			p->ops->move(p->ctx, dst + *done, src + *done, len - *done,
				     UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES | (wake ? 0 : UFFDIO_MOVE_MODE_DONTWAKE), &moved);
		if (!rc) {
			*done = len;
			break;
		}
		if (moved > 0) { /* partial: go on, to learn what stopped it */
			*done += (size_t)moved;
			continue;
		}
		return rc;
	}
	return 0;
}

/* Slot pages the mover must never put back. */
static void junk(struct tb_park *p, uint32_t s, uint64_t mask)
{
	struct tb_park_slot *sl = &p->slot[s];
	sl->junk |= mask;
	for (unsigned i = 0; i < p->win; i++)
		if (mask >> i & 1)
			p->ops->discard(p->ctx, slot_addr(p, s) + (uintptr_t)i * PAGE, PAGE);
}

/* Where a move is refused (the program mlocked or mprotected the window
 * meanwhile, or the page is shared) or the mover is gone (exec): copy the
 * slot's pages there instead. The slot is read through /proc/PID/mem, opened
 * at the start, since process_vm_readv waits for an exec to finish and the
 * exec may be waiting for this page. Returns the pages that could not be
 * copied, or -EAGAIN; none is lost where the memory itself is gone. */
static long copy_pages(const struct tb_park *p, uintptr_t dst, uintptr_t src, unsigned n, bool wake)
{
	uint64_t pm[TB_PARK_MAX_WINDOW];
	static __thread char buf[PAGE];
	if (p->pagemap_fd < 0 || p->mem_fd < 0 || n > TB_PARK_MAX_WINDOW)
		return n;
	if (tb_pagemap_read(p->pagemap_fd, src, n, pm))
		/* the process is exiting: its memory went (reading it gives nothing), and its pages with it */
		return pread(p->mem_fd, buf, 1, (off_t)src) == 0 ? 0 : n;
	long lost = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!(pm[i] & (TB_PM_PRESENT | TB_PM_SWAPPED)))
			continue; /* a hole: nothing was there */
		ssize_t got = pread(p->mem_fd, buf, PAGE, (off_t)(src + (uintptr_t)i * PAGE));
		if (got == 0)
			return lost; /* the memory is gone (the process exited): nothing to put back */
		if (got != (ssize_t)PAGE) {
			lost++;
			continue;
		}
		struct uffdio_copy c = {.dst = dst + (uintptr_t)i * PAGE,
					.src = (uintptr_t)buf,
					.len = PAGE,
					.mode = wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE};
		if (ioctl(p->fd, UFFDIO_COPY, &c)) {
			if (errno == EAGAIN && c.copy <= 0)
				return -EAGAIN;
			if (errno == ESRCH)
				return lost; /* the memory is gone */
			if (c.copy <= 0)
				lost++; /* EEXIST: something is there already, and it stays */
		}
	}
	return lost;
}

/* Pages [i0, i0 + n) of slot s back to dst. 0 or -EAGAIN. */
static int put_run(struct tb_park *p, uint32_t s, unsigned i0, unsigned n, uintptr_t dst, bool wake)
{
	struct tb_park_slot *sl = &p->slot[s];
	uintptr_t src = slot_addr(p, s) + (uintptr_t)i0 * PAGE;
	size_t done;
	int rc = move_range(p, dst, src, (size_t)n * PAGE, wake, &done);
	unsigned k = (unsigned)(done / PAGE);
	sl->parked &= ~pages_mask(i0, k);
	if (!rc || rc == -EAGAIN)
		return rc;
	if (rc == -ENOTCONN) { /* the mover is gone: it put every page back first, or its memory went with it */
		sl->parked &= ~pages_mask(i0, n);
		return 0;
	}
	if (rc == -ETIMEDOUT)
		return -EAGAIN; /* asked again later: a second move back of what is back moves nothing */
	long lost = copy_pages(p, dst + (uintptr_t)k * PAGE, src + (uintptr_t)k * PAGE, n - k, wake);
	if (lost == -EAGAIN)
		return -EAGAIN;
	uint64_t m = pages_mask(i0 + k, n - k);
	sl->parked &= ~m;
	junk(p, s, m); /* the copies' originals stay in the slot */
	p->st.copied += (n - k) - (uint64_t)lost;
	p->st.lost += (uint64_t)lost;
	return 0;
}

/* Every parked page of slot s to its address now: shifted by delta where it
 * lies in [from, from + len). */
static int put_back(struct tb_park *p, uint32_t s, uintptr_t from, size_t len, intptr_t delta, bool wake)
{
	struct tb_park_slot *sl = &p->slot[s];
	while (sl->parked) {
		unsigned i0 = (unsigned)__builtin_ctzll(sl->parked);
		uintptr_t a = sl->orig + (uintptr_t)i0 * PAGE;
		bool in = a >= from && a - from < len;
		unsigned n = 1;
		while (i0 + n < p->win && (sl->parked >> (i0 + n) & 1)) {
			uintptr_t b = a + (uintptr_t)n * PAGE;
			if ((b >= from && b - from < len) != in)
				break;
			n++;
		}
		int rc = put_run(p, s, i0, n, in ? a + (uintptr_t)delta : a, wake);
		if (rc)
			return rc;
	}
	settle(p, s);
	return 0;
}

long tb_park_plan(struct tb_park *p, uintptr_t addr, size_t len, uint64_t now_ns, struct tb_park_move *m, size_t *n)
{
	uintptr_t w = window_of(p, addr);
	unsigned i0 = (unsigned)((addr - w) / PAGE), cnt = (unsigned)(len / PAGE);
	if (!cnt || i0 + cnt > p->win)
		return -EINVAL;
	int s = tb_park_find(p, addr);
	if (s < 0) {
		if (!p->nfree) {
			p->st.fallbacks++;
			return -ENOSPC;
		}
		s = (int)p->free[--p->nfree];
		p->slot[s] = (struct tb_park_slot){.orig = w};
		hash_add(p, (uint32_t)s);
		p->nparked++;
		p->st.windows++; /* taken back in tb_park_settle if nothing moves */
	}
	struct tb_park_slot *sl = &p->slot[s];
	sl->t_ns = now_ns;
	unsigned i = i0, end = i0 + cnt;
	while (i < end) {
		if (sl->parked >> i & 1) { /* armed again while away: it still is */
			i++;
			continue;
		}
		if (sl->junk >> i & 1)
			break; /* that slot page is taken: the rest is protected instead */
		unsigned j = i + 1;
		while (j < end && !(sl->parked >> j & 1) && !(sl->junk >> j & 1))
			j++;
		/* recorded first: a fault on these pages from now on finds them */
		sl->parked |= pages_mask(i, j - i);
		m[(*n)++] = (struct tb_park_move){.dst = slot_addr(p, (uint32_t)s) + (uintptr_t)i * PAGE,
						  .src = w + (uintptr_t)i * PAGE,
						  .len = (size_t)(j - i) * PAGE,
						  .slot = (uint32_t)s,
						  .first = i};
		i = j;
	}
	if (!sl->parked) { /* nothing to move, nothing away */
		settle(p, (uint32_t)s);
		p->st.windows--;
		p->st.fallbacks++;
		return 0;
	}
	return (long)(i - i0) * PAGE;
}

size_t tb_park_settle(struct tb_park *p, const struct tb_park_move *m, size_t n, int batch_rc)
{
	/* the mover may still do them, or ended halfway (exec): away until a move back says otherwise */
	if (batch_rc == -ETIMEDOUT || batch_rc == -ESRCH)
		return 0;
	size_t failed = 0;
	for (size_t k = 0; k < n; k++) {
		struct tb_park_slot *sl = &p->slot[m[k].slot];
		int rc = batch_rc ? batch_rc : m[k].rc;
		unsigned moved = rc ? (unsigned)((m[k].moved > 0 ? (uint64_t)m[k].moved : 0) / PAGE)
				    : (unsigned)(m[k].len / PAGE);
		unsigned cnt = (unsigned)(m[k].len / PAGE);
		sl->parked &= ~pages_mask(m[k].first + moved, cnt - moved); /* what did not move is where it was */
		if (rc == -EEXIST) /* the slot page is not empty (it never should be): never used again */
			sl->junk |= 1ull << (m[k].first + moved);
		if (!sl->parked && sl->orig && tb_park_find(p, sl->orig) == (int)m[k].slot) {
			settle(p, m[k].slot);
			p->st.windows--;
			p->st.fallbacks++;
			failed++;
		}
	}
	return failed;
}

long tb_park_window(struct tb_park *p, uintptr_t addr, size_t len, uint64_t now_ns)
{
	struct tb_park_move m[TB_PARK_MAX_WINDOW];
	size_t n = 0;
	long planned = tb_park_plan(p, addr, len, now_ns, m, &n);
	if (planned <= 0 || !n)
		return planned;
	int rc = p->ops->move_many(p->ctx, m, n, UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES | UFFDIO_MOVE_MODE_DONTWAKE);
	tb_park_settle(p, m, n, rc);
	if (rc == -ETIMEDOUT || rc == -ESRCH)
		return planned;
	/* the prefix from addr that is away now */
	uintptr_t w = window_of(p, addr);
	int s = tb_park_find(p, addr);
	if (s < 0)
		return 0;
	unsigned i = (unsigned)((addr - w) / PAGE), end = i + (unsigned)(len / PAGE);
	while (i < end && (p->slot[s].parked >> i & 1))
		i++;
	return (long)((uintptr_t)i * PAGE - (addr - w));
}

int tb_park_restore(struct tb_park *p, uint32_t s, bool wake)
{
	if (s >= p->nslots || !p->slot[s].parked)
		return 0;
	int rc = put_back(p, s, 0, 0, 0, wake);
	if (!rc)
		p->st.restored++;
	return rc;
}

size_t tb_park_expire(struct tb_park *p, uint64_t cutoff_ns, void (*back)(void *ctx, uintptr_t addr, size_t len),
		      void *ctx)
{
	size_t left = 0;
	for (uint32_t s = 0; s < p->nslots && p->nparked; s++) {
		if (!p->slot[s].parked || p->slot[s].t_ns >= cutoff_ns)
			continue;
		uintptr_t w = p->slot[s].orig;
		uint64_t was = p->slot[s].parked;
		if (tb_park_restore(p, s, true)) {
			left++;
			continue;
		}
		p->st.expired++;
		for (unsigned i = 0; i < p->win; i++) { /* the runs that came back */
			if (!(was >> i & 1))
				continue;
			unsigned j = i;
			while (j < p->win && (was >> j & 1))
				j++;
			if (back)
				back(ctx, w + (uintptr_t)i * PAGE, (size_t)(j - i) * PAGE);
			i = j;
		}
	}
	return left;
}

int tb_park_restore_all(struct tb_park *p)
{
	int rc = 0;
	for (uint32_t s = 0; s < p->nslots && p->nparked; s++)
		if (p->slot[s].parked && tb_park_restore(p, s, true))
			rc = -EAGAIN;
	return rc;
}

/* Calls fn on every slot with pages parked in [start, end). */
static int each_in(struct tb_park *p, uintptr_t start, uintptr_t end, int (*fn)(struct tb_park *, uint32_t, void *),
		   void *arg)
{
	uintptr_t span = (uintptr_t)p->win * PAGE;
	int rc = 0;
	if ((end - start) / span > p->nslots) { /* a big range: walk the slots instead */
		for (uint32_t s = 0; s < p->nslots; s++)
			if (p->slot[s].parked && p->slot[s].orig + span > start && p->slot[s].orig < end)
				rc |= fn(p, s, arg);
		return rc;
	}
	for (uintptr_t w = window_of(p, start); w < end; w += span) {
		int s = tb_park_find(p, w);
		if (s >= 0)
			rc |= fn(p, (uint32_t)s, arg);
	}
	return rc;
}

struct range_arg {
	uintptr_t start, end, to;
};

static int discard_one(struct tb_park *p, uint32_t s, void *arg)
{
	const struct range_arg *r = arg;
	struct tb_park_slot *sl = &p->slot[s];
	for (unsigned i = 0; i < p->win; i++) {
		uintptr_t a = sl->orig + (uintptr_t)i * PAGE;
		if ((sl->parked >> i & 1) && a >= r->start && a < r->end) {
			sl->parked &= ~(1ull << i);
			junk(p, s, 1ull << i);
			p->st.junk++;
		}
	}
	settle(p, s);
	return 0;
}

void tb_park_discard(struct tb_park *p, uintptr_t start, uintptr_t end)
{
	struct range_arg r = {start, end, 0};
	if (p->nparked)
		each_in(p, start, end, discard_one, &r);
}

static int remap_one(struct tb_park *p, uint32_t s, void *arg)
{
	const struct range_arg *r = arg;
	int rc = put_back(p, s, r->start, r->end - r->start, (intptr_t)(r->to - r->start), true);
	if (!rc)
		p->st.restored++;
	return rc ? 1 : 0;
}

/* The program moved [from, from + len) to `to` (mremap): the pages parked
 * there go back, to where their addresses are now. 0 or -EAGAIN. */
static int tb_park_remap(struct tb_park *p, uintptr_t from, uintptr_t to, size_t len)
{
	struct range_arg r = {from, from + len, to};
	return p->nparked && each_in(p, from, from + len, remap_one, &r) ? -EAGAIN : 0;
}

void tb_park_mask(const struct tb_park *p, uintptr_t start, unsigned npages, uint64_t *bits)
{
	memset(bits, 0, (npages + 63) / 64 * sizeof(*bits));
	if (!p->nparked)
		return;
	uintptr_t span = (uintptr_t)p->win * PAGE, end = start + (uintptr_t)npages * PAGE;
	for (uintptr_t w = window_of(p, start); w < end; w += span) {
		int s = tb_park_find(p, w);
		if (s < 0)
			continue;
		for (unsigned i = 0; i < p->win; i++) {
			uintptr_t a = w + (uintptr_t)i * PAGE;
			if ((p->slot[s].parked >> i & 1) && a >= start && a < end) {
				size_t k = (a - start) / PAGE;
				bits[k / 64] |= 1ull << (k % 64);
			}
		}
	}
}

bool tb_park_holds(const struct tb_park *p, uintptr_t start, uintptr_t end)
{
	uintptr_t span = (uintptr_t)p->win * PAGE;
	for (uint32_t s = 0; p->nparked && s < p->nslots; s++)
		if (p->slot[s].parked && p->slot[s].orig < end && p->slot[s].orig + span > start)
			return true;
	return false;
}

bool tb_park_spoiled(const struct tb_park *p)
{
	return p->junk_slots > p->nslots / 4;
}

int tb_park_event(struct tb_park *p, const struct uffd_msg *m)
{
	switch (m->event) {
	case UFFD_EVENT_REMOVE:
	case UFFD_EVENT_UNMAP:
		tb_park_discard(p, (uintptr_t)m->arg.remove.start, (uintptr_t)m->arg.remove.end);
		return 0;
	case UFFD_EVENT_REMAP:
		return tb_park_remap(p, (uintptr_t)m->arg.remap.from, (uintptr_t)m->arg.remap.to,
				     (size_t)m->arg.remap.len);
	default: return 0;
	}
}
