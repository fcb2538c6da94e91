#define _GNU_SOURCE /* accept4, struct ucred */
#include "exec/uffd.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "exec/rt_proto.h"
#include "exec/uffd_abi.h"

#define MAX_PROCS 256
#define QUEUE 65536 /* events; a power of two */
#define PAGE 4096u
#define EV_STOP UINT64_MAX
#define EV_FORK (UINT64_MAX - 1)
#define RETRY_NS 2000000ull /* how long one pass keeps trying what the kernel refuses while mappings change */
#define HOLD_NS 10000000000ull /* a fork that never says it is done stops holding after this */
#define MOVER_TIMEOUT_MS 5000 /* a mover this slow is stopped (SIGSTOP), or its process is going */
#define MOVER_CHECK_MS 20     /* how often a wait for the mover checks that its thread still exists */

/* A mapping as the last registration left it: ours, or one tierbal may not
 * register (the program's own userfaultfd is there). */
struct range {
	uintptr_t start, end;
	bool ours;
};

/* A range the program discarded (MADV_DONTNEED and friends), and when
 * tierbal read that: the kernel clears the range only after the event is
 * read, so a page parked from it meanwhile would escape the clearing and
 * come back later with its old content. Such ranges are not parked for
 * REMOVE_HOLD_NS. */
struct removed {
	uintptr_t start, end;
	uint64_t t_ns;
};
#define REMOVED 16
#define REMOVE_HOLD_NS 1000000000ull

struct proc {
	pid_t pid; /* 0: free slot */
	int fd;
	uint32_t gen; /* tells a reused slot from the old one in epoll events */
	struct range *reg; /* by address; an unmap or move forgets what it touches until the next sync */
	size_t nr_reg;
	bool parking, spoiled;
	bool park_init;      /* p->park was set up (parking may have stopped since) */
	bool stuck;          /* the mover did not answer in time: no new parking until it does */
	bool mover_gone;     /* its thread ended, its process did not (exec): parked pages come back by copy */
	int chan;            /* to the runtime's mover; -1: none */
	pid_t mover_tid;     /* its thread; 0: unknown */
	uint32_t seq;
	uintptr_t area, area_len; /* the runtime's own mapping: slots, keep table, the mover's record and stack */
	int mem_fd;               /* /proc/PID/mem, for the keep table; -1: none */
	uintptr_t keep_addr;
	uint64_t keep_gen;
	uint64_t *keep; /* the pages of the keep table, sorted; TB_RT_KEEP_PAGES from each */
	size_t nkeep;
	uint64_t hold_until; /* a fork is under way: nothing is parked before this */
	struct removed removed[REMOVED]; /* the latest discards, a ring */
	unsigned nremoved;
	uint64_t removed_all_until; /* the ring overflowed: nothing is parked before this */
	struct tb_park park;
	struct uffd_msg *q; /* read, not handled yet: the kernel refused while mappings changed */
	size_t nq, capq;
};

struct tb_uffd {
	unsigned window; /* pages */
	pthread_t thread;
	bool running;
	int epfd, stopfd, wakefd;
	bool park; /* parking asked for and possible */
	struct tb_uffd_park popt;
	pthread_mutex_t lock; /* procs[], the queue and the stats */
	struct proc procs[MAX_PROCS];
	struct tb_uffd_event q[QUEUE];
	size_t head, tail;
	struct tb_uffd_stats st;
};

static void push(struct tb_uffd *u, const struct tb_uffd_event *ev)
{
	if (u->tail - u->head == QUEUE) {
		u->st.queue_dropped++;
		return;
	}
	u->q[u->tail++ % QUEUE] = *ev;
}

/* Waits a little for the mover's answer. -ESRCH: the mover's thread is gone
 * while its process goes on, which happens in exec: the kernel ends the
 * other threads first, then may still read the old memory (the robust futex
 * list) and wait on a parked page that only a copy can bring back now.
 * -ETIMEDOUT after MOVER_TIMEOUT_MS. */
static int mover_wait(struct proc *p, int *waited)
{
	struct pollfd pf = {.fd = p->chan, .events = POLLIN};
	if (poll(&pf, 1, MOVER_CHECK_MS) > 0)
		return 0;
	*waited += MOVER_CHECK_MS;
	if (p->mover_tid > 0 && syscall(SYS_tgkill, p->pid, p->mover_tid, 0) && errno == ESRCH) {
		p->mover_gone = true;
		p->parking = false;
		return -ESRCH;
	}
	if (*waited < MOVER_TIMEOUT_MS)
		return 0;
	p->stuck = true;
	return -ETIMEDOUT;
}

/* One command to the process's mover (n entries), and its answer. A late
 * answer to an earlier command is skipped: what that command did is
 * covered, as the table assumes the worst (pages away) until a move back
 * is answered. */
static int mover_rpc(struct proc *p, uint32_t op, const struct tb_rt_move *e, size_t n, struct tb_rt_result *res)
{
	if (p->chan < 0)
		return -ENOTCONN;
	if (p->mover_gone)
		return -ESRCH;
	struct {
		struct tb_rt_cmd h;
		struct tb_rt_move e[TB_RT_MAX_MOVES];
	} c;
	c.h = (struct tb_rt_cmd){.op = op, .seq = ++p->seq, .count = (uint32_t)n};
	memcpy(c.e, e, n * sizeof(*e));
	size_t len = sizeof(c.h) + n * sizeof(*e);
	if (send(p->chan, &c, len, MSG_NOSIGNAL) != (ssize_t)len) {
		int e = errno ? errno : EIO;
		if (e == EPIPE || e == ECONNRESET) { /* gone, as below */
			close(p->chan);
			p->chan = -1;
			p->parking = false;
			return -ENOTCONN;
		}
		return -e;
	}
	struct {
		struct tb_rt_reply h;
		struct tb_rt_result e[TB_RT_MAX_MOVES];
	} r;
	for (int waited = 0;;) {
		ssize_t got = recv(p->chan, &r, sizeof(r), MSG_DONTWAIT);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = mover_wait(p, &waited);
			if (rc)
				return rc;
			continue;
		}
		if (got < (ssize_t)sizeof(r.h)) {
			/* the process exited or ran exec: its mover put every page back
			 * before it went, or the pages went with the memory */
			close(p->chan);
			p->chan = -1;
			p->parking = false;
			return -ENOTCONN;
		}
		if (r.h.seq == c.h.seq && r.h.count == n && (size_t)got == sizeof(r.h) + n * sizeof(*res)) {
			memcpy(res, r.e, n * sizeof(*res));
			p->stuck = false;
			return 0;
		}
	}
}

static int mover_move_many(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode)
{
	struct tb_rt_move e[TB_RT_MAX_MOVES];
	struct tb_rt_result r[TB_RT_MAX_MOVES] = {{0}};
	for (size_t done = 0; done < n;) {
		size_t k = n - done < TB_RT_MAX_MOVES ? n - done : TB_RT_MAX_MOVES;
		for (size_t i = 0; i < k; i++)
			e[i] = (struct tb_rt_move){.dst = m[done + i].dst, .src = m[done + i].src, .len = m[done + i].len,
						   .mode = mode};
		int rc = mover_rpc(ctx, TB_RT_CMD_MOVE, e, k, r);
		if (rc)
			return rc;
		for (size_t i = 0; i < k; i++) {
			m[done + i].rc = -r[i].err;
			m[done + i].moved = r[i].moved;
		}
		done += k;
	}
	return 0;
}

static int mover_move(void *ctx, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved)
{
	struct tb_park_move m = {.dst = dst, .src = src, .len = len};
	*moved = 0;
	int rc = mover_move_many(ctx, &m, 1, mode);
	if (rc)
		return rc;
	*moved = m.moved;
	return m.rc;
}

static void mover_discard(void *ctx, uintptr_t addr, size_t len)
{
	struct tb_rt_move e = {.dst = addr, .len = len};
	struct tb_rt_result r;
	mover_rpc(ctx, TB_RT_CMD_DISCARD, &e, 1, &r);
}

static const struct tb_park_ops mover_ops = {.move = mover_move, .move_many = mover_move_many, .discard = mover_discard};

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
	uintptr_t w = a & ~((uintptr_t)u->window * PAGE - 1);
	uint64_t t = tb_mono_ns();
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
static void forget_reg(struct proc *p, uintptr_t start, uintptr_t end)
{
	size_t k = 0;
	for (size_t i = 0; i < p->nr_reg; i++)
		if (p->reg[i].end <= start || p->reg[i].start >= end)
			p->reg[k++] = p->reg[i];
	p->nr_reg = k;
}

static int handle(struct tb_uffd *u, struct proc *p, const struct uffd_msg *m, bool *queued)
{
	if (m->event == UFFD_EVENT_UNMAP)
		forget_reg(p, (uintptr_t)m->arg.remove.start, (uintptr_t)m->arg.remove.end);
	else if (m->event == UFFD_EVENT_REMAP)
		forget_reg(p, (uintptr_t)m->arg.remap.from, (uintptr_t)(m->arg.remap.from + m->arg.remap.len));
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
static bool may_park(const struct proc *p, uintptr_t a, uintptr_t end, uint64_t now)
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

static bool events_waiting(const struct proc *p)
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

static struct proc *find(const struct tb_uffd *u, pid_t pid);

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
		struct proc *p = find(u, cr.pid);
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

static void *fault_thread(void *arg)
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
	struct proc *p = find(u, pid);
	if (p)
		drop(u, p); /* an exec: the old memory is gone with its userfaultfd */
	p = find(u, 0);
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
		    !tb_park_init(&p->park, fd, pid, &mover_ops, p, park_addr, park_len, u->window, u->popt.max_slots)) {
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
	const struct proc *p = pid > 0 ? find(u, pid) : NULL;
	if (!p || !p->area_len)
		return false;
	*addr = p->area;
	*len = p->area_len;
	return true;
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

/* The registration left for exactly this mapping, or NULL. */
static const struct range *known(const struct proc *p, const struct tb_vma *v)
{
	for (size_t i = 0; i < p->nr_reg; i++)
		if (p->reg[i].start == v->start && p->reg[i].end == v->end)
			return &p->reg[i];
	return NULL;
}

size_t tb_uffd_sync(struct tb_uffd *u, pid_t pid, const struct tb_vma *v, size_t n)
{
	struct proc *p = find(u, pid);
	if (!p || pid <= 0)
		return 0;
	struct range *now = calloc(n ? n : 1, sizeof(*now));
	if (!now)
		return n;
	/* under the lock: an unmap the fault thread applies meanwhile must not
	 * be overwritten by what the maps said before it */
	pthread_mutex_lock(&u->lock);
	size_t k = 0, failed = 0;
	/* with parking, absent pages fault too: the parked ones, and first touches */
	uint64_t mode = UFFDIO_REGISTER_MODE_WP | (p->parking ? UFFDIO_REGISTER_MODE_MISSING : 0);
	for (size_t i = 0; i < n; i++) {
		const struct range *had = known(p, &v[i]);
		bool ours = had ? had->ours : true;
		if (!had) {
			struct uffdio_register r = {.range = {v[i].start, v[i].end - v[i].start}, .mode = mode};
			/* EBUSY: the program uses a userfaultfd of its own there; leave it
			 * alone, and do not ask again while the mapping stays as it is */
			if (ioctl(p->fd, UFFDIO_REGISTER, &r)) {
				failed++;
				u->st.register_errors++;
				ours = false;
			} else {
				u->st.registered++;
			}
		}
		now[k++] = (struct range){v[i].start, v[i].end, ours};
	}
	free(p->reg);
	p->reg = now;
	p->nr_reg = k;
	pthread_mutex_unlock(&u->lock);
	return failed;
}

/* How much of [a, end) from a lies in one registered mapping of ours: the
 * kernel moves a page out of a mapping that is not registered, and the
 * program would then read a fresh zero page there. Locked. */
static uintptr_t ours_from(const struct proc *p, uintptr_t a, uintptr_t end)
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
	int rc = mover_move_many(p, m, n, UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES | UFFDIO_MOVE_MODE_DONTWAKE);
	tb_park_settle(&p->park, m, n, rc);
	if (rc == -ETIMEDOUT || rc == -ESRCH)
		return 0;
	int prc = 0;
	for (size_t k = 0; k < n; k++) {
		if (!rc && m[k].rc == -EPERM) {
			/* not registered after all (a mapping came where the registration
			 * found a hole): left alone until a sync registers it */
			forget_reg(p, m[k].src, m[k].src + m[k].len);
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
		if (!may_park(p, a, stop, now)) {
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
	struct proc *p = find(u, pid);
	if (!p || pid <= 0)
		return -ENOENT;
	pthread_mutex_lock(&u->lock);
	/* a mapping change read but not yet applied: its pages wait where they are */
	bool park = p->parking && !p->spoiled && !p->stuck && now >= p->hold_until && !events_waiting(p);
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
		uintptr_t in = ours_from(p, a, end);
		if (in)
			in = keep_free_from(p, a, a + in);
		if (!in) {
			u->st.arm_skipped++;
			a += PAGE;
			continue;
		}
		int r = arm_range(u, p, a, a + in, park, now);
		rc = rc ? rc : r;
		a += in;
	}
	pthread_mutex_unlock(&u->lock);
	return rc;
}

bool tb_uffd_parked(struct tb_uffd *u, pid_t pid, uintptr_t start, unsigned npages, uint64_t *bits)
{
	struct proc *p = pid > 0 ? find(u, pid) : NULL;
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
