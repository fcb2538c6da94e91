/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The set of userfaultfds tierbal exec watches: processes attached and
 * dropped, their mappings registered, the fault queue drained by the daemon. */
#include "exec/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tb_uffd_new(struct tb_uffd **out, unsigned window_pages, const struct tb_uffd_park *park, char *err, size_t len)
{
	*out = NULL;
	if (!window_pages || window_pages > 512 || (window_pages & (window_pages - 1))) {
		snprintf(err, len, "a fault window of %u pages: it must be a power of two from 1 to 512", window_pages);
		return -EINVAL;
	}
	struct tb_uffd *u = calloc(1, sizeof(*u));
	if (!u) {
		snprintf(err, len, "out of memory for the fault queue");
		return -ENOMEM;
	}
	u->window = window_pages;
	for (size_t i = 0; i < MAX_PROCS; i++)
		u->procs[i].chan = u->procs[i].mem_fd = -1;
	pthread_mutex_init(&u->lock, NULL);
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	u->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	u->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event se = {.events = EPOLLIN, .data.u64 = EV_STOP};
	if (u->epfd < 0 || u->stopfd < 0 || u->wakefd < 0 || epoll_ctl(u->epfd, EPOLL_CTL_ADD, u->stopfd, &se)) {
		snprintf(err, len, "fault thread set-up (epoll, eventfd): %s", strerror(errno));
		tb_uffd_free(u);
		return -errno;
	}
	if (park && window_pages <= TB_PARK_MAX_WINDOW && park->max_slots) {
		struct epoll_event fe = {.events = EPOLLIN, .data.u64 = EV_FORK};
		if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, park->fork_fd, &fe)) {
			snprintf(err, len, "read faults: fork socket: %s", strerror(errno));
			tb_uffd_free(u);
			return -errno;
		}
		u->popt = *park;
		u->park = true;
	}
	int rc = pthread_create(&u->thread, NULL, tb_uffd_fault_thread, u);
	if (rc) {
		snprintf(err, len, "cannot start the fault thread: %s", strerror(rc));
		tb_uffd_free(u);
		return -rc;
	}
	u->running = true;
	*out = u;
	return 0;
}

struct proc *tb_uffd_find(const struct tb_uffd *u, pid_t pid)
{
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (u->procs[i].pid == pid)
			return (struct proc *)&u->procs[i];
	return NULL;
}

static void add_park_stats(struct tb_park_stats *to, const struct tb_park_stats *from)
{
	to->windows += from->windows;
	to->fallbacks += from->fallbacks;
	to->restored += from->restored;
	to->expired += from->expired;
	to->copied += from->copied;
	to->junk += from->junk;
	to->lost += from->lost;
}

static void drop(struct tb_uffd *u, struct proc *p)
{
	pthread_mutex_lock(&u->lock);
	epoll_ctl(u->epfd, EPOLL_CTL_DEL, p->fd, NULL);
	if (p->park_init) {
		add_park_stats(&u->st.park, &p->park.st); /* its figures stay in the totals */
		tb_park_fini(&p->park);
	}
	/* a process that goes on without tierbal (tierbal stops first): its
	 * mover reads the end of the connection and puts back whatever is still
	 * away; one that exited or ran exec has nothing left to put back */
	if (p->chan >= 0)
		close(p->chan);
	close(p->fd);
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	free(p->keep);
	free(p->reg);
	free(p->smaps);
	tb_hugeset_free(&p->huge);
	free(p->q);
	uint32_t gen = p->gen + 1;
	*p = (struct proc){.gen = gen, .fd = -1, .chan = -1, .mem_fd = -1};
	pthread_mutex_unlock(&u->lock);
}

void tb_uffd_free(struct tb_uffd *u)
{
	if (!u)
		return;
	if (u->running) {
		uint64_t one = 1;
		if (write(u->stopfd, &one, sizeof(one)) == sizeof(one))
			pthread_join(u->thread, NULL);
	}
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (u->procs[i].pid)
			drop(u, &u->procs[i]);
	if (u->epfd >= 0)
		close(u->epfd);
	if (u->stopfd >= 0)
		close(u->stopfd);
	if (u->wakefd >= 0)
		close(u->wakefd);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

int tb_uffd_wake_fd(const struct tb_uffd *u)
{
	return u->wakefd;
}

int tb_uffd_attach(struct tb_uffd *u, pid_t pid, int fd, const struct tb_uffd_rt *rt)
{
	int chan = rt ? rt->chan : -1;
	uintptr_t park_addr = rt ? rt->park_addr : 0;
	size_t park_len = rt ? rt->park_len : 0;
	struct proc *p = tb_uffd_find(u, pid);
	if (p)
		drop(u, p); /* an exec: the old memory is gone with its userfaultfd */
	p = tb_uffd_find(u, 0);
	/* the backlog's first room, now: without it no fault could be read */
	struct uffd_msg *q = p ? malloc(128 * sizeof(*q)) : NULL;
	if (!q) {
		close(fd);
		if (chan >= 0)
			close(chan);
		return p ? -ENOMEM : -ENOSPC;
	}
	pthread_mutex_lock(&u->lock);
	p->q = q;
	p->capq = 128;
	p->pid = pid;
	p->fd = fd;
	p->chan = chan;
	p->mover_tid = rt ? rt->tid : 0;
	if (rt && rt->own_len) {
		p->area = rt->own_addr;
		p->area_len = rt->own_len; /* not the program's memory, parking or not */
	}
	if (rt && rt->keep_addr) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		p->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		p->keep_addr = rt->keep_addr;
	}
	uint32_t idx = (uint32_t)(p - u->procs);
	if (u->park && chan >= 0 && park_addr && park_len && p->area <= park_addr &&
	    park_addr + park_len <= p->area + p->area_len) {
		/* the slots are registered too: a move needs both ends registered */
		struct uffdio_register r = {.range = {park_addr, park_len}, .mode = UFFDIO_REGISTER_MODE_WP};
		if (!ioctl(fd, UFFDIO_REGISTER, &r) &&
		    !tb_park_init(&p->park, fd, pid, &tb_uffd_mover_ops, p, park_addr, park_len, u->window,
				  u->popt.max_slots)) {
			p->parking = p->park_init = true;
			u->st.parking++;
		}
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)p->gen << 32 | idx};
	int rc = epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
	if (!rc)
		u->st.processes++;
	pthread_mutex_unlock(&u->lock);
	if (rc)
		drop(u, p);
	return rc;
}

bool tb_uffd_park_area(const struct tb_uffd *u, pid_t pid, uintptr_t *addr, size_t *len)
{
	const struct proc *p = pid > 0 ? tb_uffd_find(u, pid) : NULL;
	if (!p || !p->area_len)
		return false;
	*addr = p->area;
	*len = p->area_len;
	return true;
}

void tb_uffd_detach(struct tb_uffd *u, pid_t pid)
{
	struct proc *p = tb_uffd_find(u, pid);
	if (p)
		drop(u, p);
}

bool tb_uffd_has(const struct tb_uffd *u, pid_t pid)
{
	return pid > 0 && tb_uffd_find(u, pid) != NULL;
}

/* The registration left for exactly this mapping, or NULL. Locked. */
static const struct range *known(const struct proc *p, const struct tb_vma *v)
{
	for (size_t i = 0; i < p->nr_reg; i++)
		if (p->reg[i].start == v->start && p->reg[i].end == v->end)
			return &p->reg[i];
	return NULL;
}

/* Whether part of [start, end) was registered before: a mapping split or
 * moved keeps the kernel's registration, and may hold parked pages. Locked. */
static bool seen_before(const struct proc *p, uintptr_t start, uintptr_t end)
{
	for (size_t i = 0; i < p->nr_reg; i++)
		if (p->reg[i].start < end && p->reg[i].end > start)
			return true;
	return false;
}

#define HPAGE (2ul << 20)

/* Whether a mapping is new to this userfaultfd and large enough to hold an
 * aligned huge page: only such a mapping may be registered without missing
 * pages (see tb_uffd_sync). Locked. */
static bool new_and_huge_sized(const struct proc *p, const struct tb_vma *v)
{
	uintptr_t lo = (v->start + HPAGE - 1) & ~(HPAGE - 1), hi = v->end & ~(HPAGE - 1);
	return hi > lo && !seen_before(p, v->start, v->end);
}

/* What the last smaps said of mapping v: 1 THPeligible, 0 not, -1 not there. */
static int eligible(const struct proc *p, const struct tb_vma *v)
{
	for (size_t i = 0; i < p->nr_smaps; i++)
		if (p->smaps[i].start == v->start && p->smaps[i].end == v->end)
			return p->smaps[i].thp_eligible;
	return -1;
}

size_t tb_uffd_sync(struct tb_uffd *u, pid_t pid, const struct tb_vma *v, size_t n)
{
	struct proc *p = tb_uffd_find(u, pid);
	if (!p || pid <= 0)
		return 0;
	struct range *now = calloc(n ? n : 1, sizeof(*now));
	if (!now)
		return n;
	/* A mapping registered for missing pages gets no transparent huge page at
	 * its first touches: the fault is answered with 4 KiB pages. So a new
	 * mapping the kernel would back with huge pages is registered for write
	 * protection only, and its windows are never parked. Whether it would is
	 * smaps' THPeligible; smaps costs a walk of the page tables and is read
	 * only when a new mapping needs it, after the registrations: a mapping it
	 * does not list yet waits for the next sync, so that the registrations
	 * still follow the maps read just before (a mapping replaced meanwhile
	 * would be split by registering the old one's range). */
	bool ask = false;
	/* under the lock: an unmap the fault thread applies meanwhile must not
	 * be overwritten by what the maps said before it */
	pthread_mutex_lock(&u->lock);
	size_t k = 0, failed = 0;
	for (size_t i = 0; i < n; i++) {
		const struct range *had = known(p, &v[i]);
		bool ours = had ? had->ours : true, missing = had ? had->missing : false;
		if (!had) {
			/* with parking, absent pages fault too: the parked ones, and first touches */
			missing = p->parking;
			if (p->parking && new_and_huge_sized(p, &v[i])) {
				int el = eligible(p, &v[i]);
				if (el < 0) {
					ask = true;
					continue;
				}
				missing = !el || tb_park_holds(&p->park, v[i].start, v[i].end);
			}
			uint64_t mode = UFFDIO_REGISTER_MODE_WP | (missing ? UFFDIO_REGISTER_MODE_MISSING : 0);
			struct uffdio_register r = {.range = {v[i].start, v[i].end - v[i].start}, .mode = mode};
			/* EBUSY: the program uses a userfaultfd of its own there; leave it
			 * alone, and do not ask again while the mapping stays as it is */
			if (ioctl(p->fd, UFFDIO_REGISTER, &r)) {
				failed++;
				u->st.register_errors++;
				ours = missing = false;
			} else {
				u->st.registered++;
				u->st.registered_huge += !missing && p->parking;
			}
		}
		now[k++] = (struct range){v[i].start, v[i].end, ours, missing};
	}
	free(p->reg);
	p->reg = now;
	p->nr_reg = k;
	pthread_mutex_unlock(&u->lock);
	struct tb_vma *sv;
	size_t sn;
	if (ask && !tb_smaps_read(pid, &sv, &sn)) { /* failing: gone, and the next sync asks again */
		free(p->smaps);
		p->smaps = sv;
		p->nr_smaps = sn;
	}
	return failed;
}

size_t tb_uffd_drain(struct tb_uffd *u, struct tb_uffd_event *ev, size_t max)
{
	uint64_t v;
	ssize_t r = read(u->wakefd, &v, sizeof(v));
	(void)r; /* empty is fine: the queue decides */
	pthread_mutex_lock(&u->lock);
	size_t n = 0;
	while (n < max && u->head != u->tail)
		ev[n++] = u->q[u->head++ % QUEUE];
	bool more = u->head != u->tail;
	pthread_mutex_unlock(&u->lock);
	if (more) { /* keep the main loop coming back */
		uint64_t one = 1;
		ssize_t w = write(u->wakefd, &one, sizeof(one));
		(void)w; /* failing means the counter is full: the loop wakes anyway */
	}
	return n;
}

void tb_uffd_stats(const struct tb_uffd *u, struct tb_uffd_stats *st)
{
	pthread_mutex_lock((pthread_mutex_t *)&u->lock);
	*st = u->st;
	for (size_t i = 0; i < MAX_PROCS; i++) {
		const struct proc *p = &u->procs[i];
		if (!p->pid || !p->park_init)
			continue;
		add_park_stats(&st->park, &p->park.st);
	}
	pthread_mutex_unlock((pthread_mutex_t *)&u->lock);
}
