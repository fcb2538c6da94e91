#include "uffd.h"

#include <errno.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 256
#define QUEUE 65536 /* events; a power of two */
#define PAGE 4096u

struct range {
	uintptr_t start, end;
};

struct proc {
	pid_t pid; /* 0: free slot */
	int fd;
	uint32_t gen; /* tells a reused slot from the old one in epoll events */
	struct range *reg;
	size_t nr_reg;
};

struct tb_uffd {
	unsigned window; /* pages */
	pthread_t thread;
	bool running;
	int epfd, stopfd, wakefd;
	pthread_mutex_t lock; /* procs[].fd/gen/pid, the queue and the stats */
	struct proc procs[MAX_PROCS];
	struct tb_uffd_event q[QUEUE];
	size_t head, tail;
	struct tb_uffd_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void push(struct tb_uffd *u, const struct tb_uffd_event *ev)
{
	if (u->tail - u->head == QUEUE) {
		u->st.queue_dropped++;
		return;
	}
	u->q[u->tail++ % QUEUE] = *ev;
}

/* Reads what one userfaultfd has; lifts each faulting page's protection
 * first, so the program waits no longer than it must. Called locked. */
static void serve(struct tb_uffd *u, struct proc *p)
{
	struct uffd_msg m[64];
	bool queued = false;
	for (;;) {
		ssize_t r = read(p->fd, m, sizeof(m));
		if (r <= 0)
			break;
		for (size_t i = 0; i < (size_t)r / sizeof(m[0]); i++) {
			if (m[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			uintptr_t a = (uintptr_t)m[i].arg.pagefault.address & ~(uintptr_t)(PAGE - 1);
			uintptr_t w = a & ~((uintptr_t)u->window * PAGE - 1);
			uint64_t t = now_ns();
			struct uffdio_writeprotect wp = {.range = {w, (uint64_t)u->window * PAGE}, .mode = 0};
			unsigned pages = u->window;
			/* a window must lie in one mapping; at an edge, the page alone */
			if (pages > 1 && ioctl(p->fd, UFFDIO_WRITEPROTECT, &wp)) {
				wp.range = (struct uffdio_range){a, PAGE};
				w = a;
				pages = 1;
			}
			if (pages == 1 && ioctl(p->fd, UFFDIO_WRITEPROTECT, &wp)) {
				u->st.resolve_errors++;
				continue;
			}
			u->st.faults++;
			struct tb_uffd_event ev = {.pid = p->pid, .addr = w, .pages = pages, .t_ns = t,
						   .write = (m[i].arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0};
			push(u, &ev);
			queued = true;
		}
		if ((size_t)r < sizeof(m))
			break;
	}
	if (queued) {
		uint64_t one = 1;
		ssize_t w = write(u->wakefd, &one, sizeof(one));
		(void)w; /* a full counter is still readable: the wake-up is not lost */
	}
}

static void *fault_thread(void *arg)
{
	struct tb_uffd *u = arg;
	struct epoll_event ev[32];
	for (;;) {
		int n = epoll_wait(u->epfd, ev, 32, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		pthread_mutex_lock(&u->lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == UINT64_MAX) {
				pthread_mutex_unlock(&u->lock);
				return NULL;
			}
			uint32_t slot = (uint32_t)ev[i].data.u64, gen = (uint32_t)(ev[i].data.u64 >> 32);
			struct proc *p = &u->procs[slot];
			if (p->pid && p->gen == gen)
				serve(u, p);
		}
		pthread_mutex_unlock(&u->lock);
	}
}

int tb_uffd_new(struct tb_uffd **out, unsigned window_pages, char *err, size_t len)
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
	pthread_mutex_init(&u->lock, NULL);
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	u->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	u->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event se = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
	if (u->epfd < 0 || u->stopfd < 0 || u->wakefd < 0 || epoll_ctl(u->epfd, EPOLL_CTL_ADD, u->stopfd, &se)) {
		snprintf(err, len, "fault thread set-up (epoll, eventfd): %s", strerror(errno));
		tb_uffd_free(u);
		return -errno;
	}
	int rc = pthread_create(&u->thread, NULL, fault_thread, u);
	if (rc) {
		snprintf(err, len, "cannot start the fault thread: %s", strerror(rc));
		tb_uffd_free(u);
		return -rc;
	}
	u->running = true;
	*out = u;
	return 0;
}

static struct proc *find(const struct tb_uffd *u, pid_t pid)
{
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (u->procs[i].pid == pid)
			return (struct proc *)&u->procs[i];
	return NULL;
}

static void drop(struct tb_uffd *u, struct proc *p)
{
	pthread_mutex_lock(&u->lock);
	epoll_ctl(u->epfd, EPOLL_CTL_DEL, p->fd, NULL);
	close(p->fd);
	free(p->reg);
	uint32_t gen = p->gen + 1;
	*p = (struct proc){.gen = gen, .fd = -1};
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

int tb_uffd_attach(struct tb_uffd *u, pid_t pid, int fd)
{
	struct proc *p = find(u, pid);
	if (p)
		drop(u, p); /* an exec: the old memory is gone with its userfaultfd */
	p = find(u, 0);
	if (!p) {
		close(fd);
		return -ENOSPC;
	}
	pthread_mutex_lock(&u->lock);
	p->pid = pid;
	p->fd = fd;
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)p->gen << 32 | (uint64_t)(p - u->procs)};
	int rc = epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
	if (!rc)
		u->st.processes++;
	pthread_mutex_unlock(&u->lock);
	if (rc)
		drop(u, p);
	return rc;
}

void tb_uffd_detach(struct tb_uffd *u, pid_t pid)
{
	struct proc *p = find(u, pid);
	if (p)
		drop(u, p);
}

bool tb_uffd_has(const struct tb_uffd *u, pid_t pid)
{
	return pid > 0 && find(u, pid) != NULL;
}

static bool known(const struct proc *p, const struct tb_vma *v)
{
	for (size_t i = 0; i < p->nr_reg; i++)
		if (p->reg[i].start == v->start && p->reg[i].end == v->end)
			return true;
	return false;
}

size_t tb_uffd_sync(struct tb_uffd *u, pid_t pid, const struct tb_vma *v, size_t n)
{
	struct proc *p = find(u, pid);
	if (!p || pid <= 0)
		return 0;
	struct range *now = calloc(n ? n : 1, sizeof(*now));
	if (!now)
		return n;
	size_t k = 0, failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (!known(p, &v[i])) {
			struct uffdio_register r = {.range = {v[i].start, v[i].end - v[i].start},
						    .mode = UFFDIO_REGISTER_MODE_WP};
			/* EBUSY: the program uses a userfaultfd of its own there; leave it
			 * alone, and do not ask again while the mapping stays as it is */
			if (ioctl(p->fd, UFFDIO_REGISTER, &r)) {
				failed++;
				pthread_mutex_lock(&u->lock);
				u->st.register_errors++;
				pthread_mutex_unlock(&u->lock);
				now[k++] = (struct range){v[i].start, v[i].end};
				continue;
			}
			pthread_mutex_lock(&u->lock);
			u->st.registered++;
			pthread_mutex_unlock(&u->lock);
		}
		now[k++] = (struct range){v[i].start, v[i].end};
	}
	free(p->reg);
	p->reg = now;
	p->nr_reg = k;
	return failed;
}

int tb_uffd_protect(struct tb_uffd *u, pid_t pid, uintptr_t addr, size_t len)
{
	struct proc *p = find(u, pid);
	if (!p || pid <= 0)
		return -ENOENT;
	struct uffdio_writeprotect wp = {.range = {addr, len}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
	int rc = ioctl(p->fd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
	pthread_mutex_lock(&u->lock);
	u->st.protect_calls++;
	if (!rc)
		u->st.protected_pages += len / PAGE;
	pthread_mutex_unlock(&u->lock);
	return rc;
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
	pthread_mutex_unlock((pthread_mutex_t *)&u->lock);
}
