/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fault thread: resolves the faults of armed pages (write protection
 * lifted, parked pages put back, first touches filled) and queues them as hint faults. */
#define _GNU_SOURCE /* accept4, struct ucred */
#include "exec/uffd_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exec/rt_proto.h"
#include "util/clock.h"

static void push(struct tb_uffd *u, const struct tb_uffd_event *ev)
{
	if (u->tail - u->head == QUEUE) {
		u->st.queue_dropped++;
		return;
	}
	u->q[u->tail++ % QUEUE] = *ev;
}

static bool wake_range(int fd, uintptr_t a, size_t len)
{
	struct uffdio_range r = {a, len};
	return ioctl(fd, UFFDIO_WAKE, &r) == 0;
}

static void queue_fault(struct tb_uffd *u, struct proc *p, uintptr_t w, unsigned pages, uint64_t t, bool write)
{
	u->st.faults++;
	u->st.faults_read += !write;
	struct tb_uffd_event ev = {.pid = p->pid, .addr = w, .pages = pages, .t_ns = t, .write = write};
	push(u, &ev);
}

/* A write to a write-protected window: unprotect it (or the page alone at
 * a mapping's edge). 0, or -EAGAIN while the program's mappings change. */
static int wp_fault(struct tb_uffd *u, struct proc *p, uintptr_t a, bool *queued)
{
	uint64_t t = tb_mono_ns();
	uintptr_t h = a & ~(TB_UFFD_HPAGE - 1);
	if (tb_hugeset_take(&p->huge, h)) { /* armed whole: lifted whole, so that it stays huge */
		struct uffdio_writeprotect hw = {.range = {h, TB_UFFD_HPAGE}, .mode = 0};
		if (!ioctl(p->fd, UFFDIO_WRITEPROTECT, &hw)) {
			queue_fault(u, p, h, (unsigned)(TB_UFFD_HPAGE / PAGE), t, true);
			u->st.faults_huge++;
			*queued = true;
			return 0;
		}
		if (errno == EAGAIN) { /* tried again later: whole, or by the window if the set has no room */
			tb_hugeset_add(&p->huge, h);
			return -EAGAIN;
		}
		/* no longer one registered mapping (a partial unmap): the window alone */
	}
	uintptr_t w = a & ~((uintptr_t)u->window * PAGE - 1);
	struct uffdio_writeprotect wp = {.range = {w, (uint64_t)u->window * PAGE}, .mode = 0};
	unsigned pages = u->window;
	/* a window must lie in one mapping; at an edge, the page alone */
	if (pages > 1 && ioctl(p->fd, UFFDIO_WRITEPROTECT, &wp)) {
		if (errno == EAGAIN)
			return -EAGAIN;
		wp.range = (struct uffdio_range){a, PAGE};
		w = a;
		pages = 1;
	}
	if (pages == 1 && ioctl(p->fd, UFFDIO_WRITEPROTECT, &wp)) {
		if (errno == EAGAIN)
			return -EAGAIN;
		u->st.resolve_errors++;
		return 0;
	}
	queue_fault(u, p, w, pages, t, true);
	*queued = true;
	return 0;
}

/* An access to an absent page: a parked window comes back (a hint fault);
 * anything else is a first touch, which gets the zero page the kernel would
 * have given (a write then copies it, in the program, as usual). */
static int missing_fault(struct tb_uffd *u, struct proc *p, uintptr_t a, bool write, bool *queued)
{
	uint64_t t = tb_mono_ns();
	int s = p->park_init ? tb_park_find(&p->park, a) : -1; /* parking may have stopped with pages away */
	if (s >= 0) {
		uintptr_t w = p->park.slot[s].orig;
		bool away = p->park.slot[s].parked >> ((a - w) / PAGE) & 1;
		/* the moves wake whoever waits on the pages they bring back: the
		 * program goes on before tierbal hears the mover's answer */
		int rc = tb_park_restore(&p->park, (uint32_t)s, true);
		if (rc)
			return rc;
		queue_fault(u, p, w, p->park.win, t, write);
		*queued = true;
		if (away)
			return 0;
		/* the faulting page was a hole of the window: a first touch after all */
	}
	uintptr_t w = a & ~((uintptr_t)u->window * PAGE - 1);
	struct uffdio_zeropage z = {.range = {w, (uint64_t)u->window * PAGE}, .mode = 0};
	if (u->window > 1 && ioctl(p->fd, UFFDIO_ZEROPAGE, &z) == 0) {
		u->st.fills++;
		return 0;
	}
	if (u->window > 1 && errno == EAGAIN && z.zeropage <= 0)
		return -EAGAIN;
	z = (struct uffdio_zeropage){.range = {a, PAGE}, .mode = 0};
	if (ioctl(p->fd, UFFDIO_ZEROPAGE, &z) == 0) {
		u->st.fills++;
		return 0;
	}
	if (errno == EAGAIN)
		return -EAGAIN;
	/* EEXIST: it is there now; anything else (unmapped meanwhile): let it
	 * fault again and meet what the kernel has to say */
	wake_range(p->fd, a, PAGE);
	return 0;
}

/* The program unmapped [start, end) or moved it away: whatever is mapped
 * there next is not registered until a sync says so. Locked. */
void tb_uffd_forget_reg(struct proc *p, uintptr_t start, uintptr_t end)
{
	size_t k = 0;
	for (size_t i = 0; i < p->nr_reg; i++)
		if (p->reg[i].end <= start || p->reg[i].start >= end)
			p->reg[k++] = p->reg[i];
	p->nr_reg = k;
}

static int handle(struct tb_uffd *u, struct proc *p, const struct uffd_msg *m, bool *queued)
{
	if (m->event == UFFD_EVENT_UNMAP || m->event == UFFD_EVENT_REMOVE)
		tb_hugeset_forget(&p->huge, (uintptr_t)m->arg.remove.start & ~(TB_UFFD_HPAGE - 1),
				  (uintptr_t)m->arg.remove.end);
	if (m->event == UFFD_EVENT_UNMAP) {
		tb_uffd_forget_reg(p, (uintptr_t)m->arg.remove.start, (uintptr_t)m->arg.remove.end);
	} else if (m->event == UFFD_EVENT_REMAP) {
		tb_uffd_forget_reg(p, (uintptr_t)m->arg.remap.from, (uintptr_t)(m->arg.remap.from + m->arg.remap.len));
		tb_hugeset_forget(&p->huge, (uintptr_t)m->arg.remap.from & ~(TB_UFFD_HPAGE - 1),
				  (uintptr_t)(m->arg.remap.from + m->arg.remap.len));
	}
	if (m->event != UFFD_EVENT_PAGEFAULT)
		return p->park_init ? tb_park_event(&p->park, m) : 0;
	uintptr_t a = (uintptr_t)m->arg.pagefault.address & ~(uintptr_t)(PAGE - 1);
	bool write = (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0;
	if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)
		return wp_fault(u, p, a, queued);
	return missing_fault(u, p, a, write, queued);
}

/* Reads what a userfaultfd has into the process's backlog; true if anything came. */
static bool fill(struct proc *p)
{
	bool got = false;
	for (;;) {
		if (p->capq - p->nq < 64) {
			size_t cap = p->capq ? p->capq * 2 : 128;
			struct uffd_msg *q = realloc(p->q, cap * sizeof(*q));
			if (q) {
				p->q = q;
				p->capq = cap;
			}
		}
		/* out of memory: what room is left, so that faults still get served */
		size_t room = p->capq - p->nq < 64 ? p->capq - p->nq : 64;
		if (!room)
			return got;
		ssize_t r = read(p->fd, p->q + p->nq, room * sizeof(*p->q));
		if (r <= 0)
			return got;
		p->nq += (size_t)r / sizeof(*p->q);
		got = true;
	}
}

static void note_remove(struct proc *p, const struct uffd_msg *m)
{
	if (m->event != UFFD_EVENT_REMOVE)
		return;
	uint64_t t = tb_mono_ns();
	struct removed *r = &p->removed[p->nremoved++ % REMOVED];
	if (r->t_ns + REMOVE_HOLD_NS > t) /* an entry still in force is overwritten: hold everything instead */
		p->removed_all_until = r->t_ns + REMOVE_HOLD_NS;
	*r = (struct removed){(uintptr_t)m->arg.remove.start, (uintptr_t)m->arg.remove.end, t};
}

/* May [a, end) be parked now, as far as discards and unhandled mapping
 * changes go? */
bool tb_uffd_may_park(const struct proc *p, uintptr_t a, uintptr_t end, uint64_t now)
{
	if (now < p->removed_all_until)
		return false;
	for (unsigned i = 0; i < REMOVED; i++) {
		const struct removed *r = &p->removed[i];
		if (r->t_ns && r->t_ns + REMOVE_HOLD_NS > now && r->start < end && a < r->end)
			return false;
	}
	return true;
}

bool tb_uffd_events_waiting(const struct proc *p)
{
	for (size_t i = 0; i < p->nq; i++)
		if (p->q[i].event != UFFD_EVENT_PAGEFAULT)
			return true;
	return false;
}

/* Handles the messages of one kind in the backlog, in order, dropping those
 * handled; stops at the first the kernel refuses for now. -EAGAIN then. */
static int serve_kind(struct tb_uffd *u, struct proc *p, bool faults, bool *queued)
{
	size_t keep = 0, i = 0;
	int rc = 0;
	for (; i < p->nq; i++) {
		const struct uffd_msg *m = &p->q[i];
		if ((m->event == UFFD_EVENT_PAGEFAULT) != faults || rc) {
			p->q[keep++] = *m;
			continue;
		}
		if (!faults)
			note_remove(p, m);
		if (handle(u, p, m, queued) == -EAGAIN) {
			p->q[keep++] = *m;
			rc = -EAGAIN;
		}
	}
	p->nq = keep;
	return rc;
}

/* Handles a process's messages, each fault resolved at once so that the
 * program waits no longer than it must. The kernel hands out waiting faults
 * before events, whatever came first, so the events in the backlog (unmap,
 * move, discard) are applied first: a fault read before the unmap that came
 * before it must not bring back a page from the old mapping into a new one
 * at that address. While the program changes its mappings the kernel
 * refuses (EAGAIN) until tierbal has read the event that says so: read on,
 * and try again, for a short while; what is left waits for the next pass
 * (the fault thread comes back soon). Locked. */
static void serve(struct tb_uffd *u, struct proc *p)
{
	bool queued = false;
	uint64_t until = 0;
	for (;;) {
		bool got = fill(p);
		int rc = serve_kind(u, p, false, &queued);
		if (!rc) /* no fault before every event ahead of it is applied */
			rc = serve_kind(u, p, true, &queued);
		if (!p->nq || rc != -EAGAIN)
			break;
		uint64_t t = tb_mono_ns();
		if (!until)
			until = t + RETRY_NS;
		if (t > until)
			break;
		if (!got) {
			struct timespec ts = {0, 20000};
			nanosleep(&ts, NULL);
		}
	}
	if (queued) {
		uint64_t one = 1;
		ssize_t w = write(u->wakefd, &one, sizeof(one));
		(void)w; /* a full counter is still readable: the wake-up is not lost */
	}
}

/* Puts back everything parked in p, reading its events meanwhile. 0 or -EAGAIN. */
static int restore_all(struct tb_uffd *u, struct proc *p)
{
	uint64_t until = tb_mono_ns() + 100 * RETRY_NS;
	int rc;
	while ((rc = tb_park_restore_all(&p->park)) == -EAGAIN && tb_mono_ns() < until) {
		serve(u, p);
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
	return rc;
}

/* A note from the runtime around a fork: before it, every parked page of
 * the process goes back and parking stops; after it, parking goes on. */
static void fork_note(struct tb_uffd *u)
{
	int c = accept4(u->popt.fork_fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return;
	struct timeval tv = {0, 200000}; /* the runtime sends right after connecting */
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct tb_rt_hello h;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (recv(c, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == TB_RT_MAGIC && h.version == TB_RT_VERSION &&
	    !getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl)) {
		struct proc *p = tb_uffd_find(u, cr.pid);
		if (p && p->park_init && h.type == TB_RT_FORK) {
			p->hold_until = tb_mono_ns() + HOLD_NS;
			if (restore_all(u, p))
				u->st.forks_unsafe++; /* the fork goes on: the child may read zeros where a page is away */
			u->st.forks_held++;
			char ack = 1;
			ssize_t w = send(c, &ack, 1, MSG_NOSIGNAL);
			(void)w; /* a runtime that went away does not need the answer */
		} else if (p && h.type == TB_RT_FORK_DONE) {
			p->hold_until = 0;
		} else if (h.type == TB_RT_FORK) {
			char ack = 1;
			ssize_t w = send(c, &ack, 1, MSG_NOSIGNAL);
			(void)w;
		}
	}
	close(c);
}

void *tb_uffd_fault_thread(void *arg)
{
	struct tb_uffd *u = arg;
	struct epoll_event ev[32];
	bool backlog = false;
	for (;;) {
		/* with a backlog, come back soon even if nothing new comes */
		int n = epoll_wait(u->epfd, ev, 32, backlog ? 1 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		pthread_mutex_lock(&u->lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == EV_STOP) {
				pthread_mutex_unlock(&u->lock);
				return NULL;
			}
			if (ev[i].data.u64 == EV_FORK) {
				fork_note(u);
				continue;
			}
			uint32_t slot = (uint32_t)ev[i].data.u64, gen = (uint32_t)(ev[i].data.u64 >> 32);
			struct proc *p = &u->procs[slot];
			if (p->pid && p->gen == gen)
				serve(u, p);
		}
		backlog = false;
		for (size_t i = 0; i < MAX_PROCS; i++) {
			struct proc *p = &u->procs[i];
			if (p->pid && p->nq)
				serve(u, p);
			backlog |= p->pid && p->nq;
		}
		pthread_mutex_unlock(&u->lock);
	}
}
