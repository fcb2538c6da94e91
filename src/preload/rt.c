/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libtierbal-rt.so: the runtime `tierbal exec` injects with LD_PRELOAD.
 *
 * Its job is to hand a userfaultfd of this process's memory to the tierbal
 * exec process that started it, which then arms scan windows and reads the
 * faults (see src/exec/uffd.c). A userfaultfd works on the memory of the
 * process that created it, so it must be made here.
 *
 * To see reads, tierbal parks a window's pages in a park area (the next
 * access, read or write, then faults as a missing page). The kernel moves a
 * process's pages only when that process asks (UFFDIO_MOVE refuses moves
 * across address spaces), so the runtime then runs a mover thread: it
 * carries out tierbal's moves, between the program's pages and the park
 * area only, and keeps its own record of what waits where. If tierbal goes
 * away (its socket closes) the mover puts every parked page back itself,
 * and before each fork() the runtime makes sure none is away (the child
 * gets no userfaultfd of ours, and would read zeros there). The mover's
 * stack, record and slots live in one mapping tierbal leaves alone, and it
 * touches no other memory of the program while pages are away, not even
 * the C library's (raw system calls, its own lock): it never waits on a
 * page that only it could bring back.
 *
 * It runs once at start (after every exec), around every fork(), and gives
 * up silently when anything fails, so the program runs as it would without
 * tierbal. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "exec/rt_proto.h"
#include "exec/uffd_abi.h"

#define PAGE 4096u
#define STACK (256u << 10) /* the mover's commands and answers live on it: a few KiB */

/* The park mapping: [slots | probe | head | keep table | record | stack]. */
struct mover {
	int lock;       /* the record: the mover, and a fork with tierbal gone */
	int started;    /* the mover runs: the C library's thread start-up is behind it */
	int forking;    /* forks under way in this process: no page may leave meanwhile (under lock) */
	int uffd, sock; /* -1 once the mover is done */
	int tid;        /* the mover's thread id */
	uintptr_t slots;
	uintptr_t probe; /* TB_RT_MAX_PARK_BYTES never touched: holes to move, to learn what is registered */
	size_t npages;   /* slot pages */
	size_t rest;     /* bytes from here to the end of the mapping: the head, the record, the stack */
	uint64_t *orig;  /* per slot page: where it belongs in the program; 0: empty */
	char fork_name[108];
};

static struct mover *mv;        /* set before the mover starts; read by the fork handlers */
static struct tb_rt_keep *keep; /* in the mover's mapping, or one of its own without a mover */
static bool keep_alone;         /* keep is a mapping of its own */

#define KEEP_BYTES ((sizeof(struct tb_rt_keep) + PAGE - 1) / PAGE * PAGE)

static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* A spin lock that yields: pthread mutexes read C library globals. */
static void lock(struct mover *m)
{
	while (__atomic_exchange_n(&m->lock, 1, __ATOMIC_ACQUIRE))
		syscall(SYS_sched_yield);
}

static void unlock(struct mover *m)
{
	__atomic_store_n(&m->lock, 0, __ATOMIC_RELEASE);
}

/* Notes the calling thread's descriptor in the keep table: an entry that is
 * free, or whose thread is gone. */
static void keep_self(void)
{
	struct tb_rt_keep *k = keep;
	if (!k)
		return;
	uint64_t page = (uint64_t)(uintptr_t)pthread_self() & ~(uint64_t)(PAGE - 1);
	int tid = (int)syscall(SYS_gettid), pid = (int)syscall(SYS_getpid);
	while (__atomic_exchange_n(&k->lock, 1, __ATOMIC_ACQUIRE))
		syscall(SYS_sched_yield);
	int at = -1;
	for (int i = 0; i < TB_RT_KEEP_MAX && at < 0; i++)
		if (!k->page[i])
			at = i;
	for (int i = 0; i < TB_RT_KEEP_MAX && at < 0; i++)
		if (syscall(SYS_tgkill, pid, k->tid[i], 0) && errno == ESRCH)
			at = i;
	if (at >= 0) {
		k->tid[at] = tid;
		__atomic_store_n(&k->page[at], page, __ATOMIC_RELEASE);
		__atomic_add_fetch(&k->gen, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&k->lock, 0, __ATOMIC_RELEASE);
}

static bool kept(const struct tb_rt_keep *k, uintptr_t a, size_t len)
{
	for (int i = 0; k && i < TB_RT_KEEP_MAX; i++) {
		uint64_t p = __atomic_load_n(&k->page[i], __ATOMIC_ACQUIRE);
		if (p && p < a + len && a < p + (uint64_t)TB_RT_KEEP_PAGES * PAGE)
			return true;
	}
	return false;
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *start_noted(void *arg)
{
	struct start s = *(struct start *)arg;
	free(arg);
	keep_self();
	return s.fn(s.arg);
}

/* The program's threads start through here, to be noted in the keep table
 * before they run any of its code. */
int pthread_create(pthread_t *restrict t, const pthread_attr_t *restrict attr, void *(*fn)(void *), void *restrict arg)
{
	if (!real_pthread_create)
		real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
			RTLD_NEXT, "pthread_create");
	if (!real_pthread_create)
		return EAGAIN;
	struct start *s = keep ? malloc(sizeof(*s)) : NULL;
	if (!s)
		return real_pthread_create(t, attr, fn, arg);
	*s = (struct start){fn, arg};
	int rc = real_pthread_create(t, attr, start_noted, s);
	if (rc)
		free(s);
	return rc;
}

static void pause_us(long us)
{
	struct timespec ts = {0, us * 1000};
	syscall(SYS_nanosleep, &ts, NULL);
}

static void send_fd(int sock, int fd, struct tb_rt_hello h)
{
	struct iovec iov = {&h, sizeof(h)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(sock, &m, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static int connect_to(const char *name)
{
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	memcpy(sa.sun_path, name, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* an abstract name: nothing in the file system */
	int rc;
	while ((rc = connect(sock, (struct sockaddr *)&sa,
			     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len))) &&
	       errno == EINTR)
		;
	if (rc) {
		close(sock);
		return -1;
	}
	return sock;
}

/* A userfaultfd with the given features, or -1 and errno. */
static int make_uffd(uint64_t features)
{
	/* no UFFD_USER_MODE_ONLY: the kernel's own accesses on the program's
	 * behalf (read(2) into an armed buffer) must wait for tierbal too, not
	 * fail with EFAULT */
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		return -1;
	struct uffdio_api api = {.api = UFFD_API, .features = features};
	if (ioctl(uffd, UFFDIO_API, &api) || (api.features & features) != features) {
		int e = errno ? errno : EOPNOTSUPP;
		close(uffd);
		errno = e;
		return -1;
	}
	return uffd;
}

static size_t park_bytes(void)
{
	const char *v = getenv(TB_RT_ENV_PARK);
	if (!v || !*v)
		return 0;
	unsigned long mb = strtoul(v, NULL, 10);
	return mb && mb <= 65536 ? (size_t)mb << 20 : 0;
}

static bool in_slots(const struct mover *m, uintptr_t a, size_t len)
{
	return a >= m->slots && len <= m->npages * PAGE && a - m->slots <= m->npages * PAGE - len;
}

static int move(int uffd, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved)
{
	struct uffdio_move u = {.dst = dst, .src = src, .len = len, .mode = mode};
	int rc = syscall(SYS_ioctl, uffd, UFFDIO_MOVE, &u) ? errno : 0; /* errno: thread-local, on the mover's stack */
	*moved = u.move > 0 ? u.move : 0;
	return rc;
}

/* Whether [a, a + len) lies in one mapping registered with this
 * userfaultfd. The kernel checks that of a move's destination only: a page
 * moved out of a mapping nobody registered (one mapped where a registration
 * found a hole) leaves a hole the program reads as zeros, with no fault to
 * bring the page back. Moving the probe's holes there makes the kernel check
 * it, and changes nothing. What is registered now stays so until the move
 * that follows: tierbal reads no event during a command, so an unmap keeps
 * the kernel refusing moves (EAGAIN) until then. 0, EPERM (not registered
 * here), or the kernel's errno. */
static int registered(const struct mover *m, uintptr_t a, size_t len)
{
	if (len > TB_RT_MAX_PARK_BYTES)
		return EINVAL;
	int64_t moved;
	int e = move(m->uffd, a, m->probe, len, UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES | UFFDIO_MOVE_MODE_DONTWAKE, &moved);
	if (!e || e == EEXIST) /* holes into holes, or a page there already: checked either way */
		return 0;
	return e == EINVAL ? EPERM : e;
}

/* One entry of tierbal's commands. Only moves into or out of the slots:
 * whatever tierbal asks, nothing else of the program's memory moves. The
 * record is written before a page leaves, and cleared after it is back. */
static void command(struct mover *m, uint32_t op, const struct tb_rt_move *c, struct tb_rt_result *r)
{
	r->err = 0;
	r->reserved = 0;
	r->moved = 0;
	if (c->len % PAGE || c->dst % PAGE || c->src % PAGE || !c->len) {
		r->err = EINVAL;
		return;
	}
	size_t n = c->len / PAGE;
	if (op == TB_RT_CMD_DISCARD && in_slots(m, c->dst, c->len)) {
		for (size_t i = 0; i < n; i++)
			m->orig[(c->dst - m->slots) / PAGE + i] = 0;
		return;
	}
	if (op != TB_RT_CMD_MOVE) {
		r->err = EINVAL;
		return;
	}
	bool park = in_slots(m, c->dst, c->len) && !in_slots(m, c->src, c->len);
	bool back = in_slots(m, c->src, c->len) && !in_slots(m, c->dst, c->len);
	if (!park && !back) {
		r->err = EINVAL;
		return;
	}
	if (park && (m->forking || kept(keep, c->src, c->len))) {
		/* a child is being made: it would read zeros where a page is away.
		 * The mover says no itself, whatever tierbal knows of the fork; and
		 * never a thread's descriptor (see struct tb_rt_keep) */
		r->err = EBUSY;
		return;
	}
	if (park && (r->err = registered(m, c->src, c->len)))
		return;
	if (park)
		for (size_t i = 0; i < n; i++)
			m->orig[(c->dst - m->slots) / PAGE + i] = c->src + i * PAGE;
	r->err = move(m->uffd, c->dst, c->src, c->len, c->mode, &r->moved);
	size_t done = (size_t)r->moved / PAGE;
	if (park)
		for (size_t i = done; i < n; i++)
			m->orig[(c->dst - m->slots) / PAGE + i] = 0; /* not moved: it is where it was */
	else
		for (size_t i = 0; i < done; i++)
			m->orig[(c->src - m->slots) / PAGE + i] = 0;
}

/* The program changed its mappings while pages were away: a discarded or
 * unmapped range holds nothing to put back, a moved one moved. A fault read
 * here is woken, not dropped: the access runs again and faults anew, for
 * tierbal to read if it is there, so taking a message from it loses nothing.
 * One read: a woken fault comes back at once, and the caller's retries
 * bound the loop. */
static void apply_events(struct mover *m)
{
	struct uffd_msg e[16];
	ssize_t r = syscall(SYS_read, m->uffd, e, sizeof(e));
	if (r > 0) {
		for (size_t k = 0; k < (size_t)r / sizeof(e[0]); k++) {
			uint64_t from = 0, to = 0, len = 0;
			if (e[k].event == UFFD_EVENT_PAGEFAULT) {
				struct uffdio_range w = {e[k].arg.pagefault.address & ~(uint64_t)(PAGE - 1), PAGE};
				syscall(SYS_ioctl, m->uffd, UFFDIO_WAKE, &w);
				continue;
			}
			if (e[k].event == UFFD_EVENT_REMOVE || e[k].event == UFFD_EVENT_UNMAP) {
				from = e[k].arg.remove.start;
				len = e[k].arg.remove.end - from;
			} else if (e[k].event == UFFD_EVENT_REMAP) {
				from = e[k].arg.remap.from;
				to = e[k].arg.remap.to;
				len = e[k].arg.remap.len;
			} else {
				continue;
			}
			for (size_t i = 0; i < m->npages; i++)
				if (m->orig[i] >= from && m->orig[i] - from < len)
					m->orig[i] = to ? m->orig[i] - from + to : 0;
		}
	}
}

/* Every parked page back where the program expects it. While the program
 * changes a mapping the kernel refuses moves until the event saying so is
 * read: with tierbal gone (events) read it, apply it, try again; with
 * tierbal there, wait for it to read it, since an unmap it never hears of
 * would leave it thinking a new mapping at that address registered.
 * Returns the pages left away (none unless the kernel kept refusing for
 * about a second). Locked. */
static size_t put_back(struct mover *m, bool events)
{
	size_t left = 0;
	if (m->uffd < 0)
		return 0;
	for (size_t i = 0; i < m->npages; i++) {
		for (int tries = 0; m->orig[i] && tries < 100000; tries++) {
			int64_t moved;
			int e = move(m->uffd, (uintptr_t)m->orig[i], m->slots + i * PAGE, PAGE,
				     UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES, &moved);
			if (e != EAGAIN || moved) {
				m->orig[i] = 0; /* back, or its place is gone (unmapped): nothing to do */
				break;
			}
			if (events)
				apply_events(m);
			pause_us(10);
		}
		left += m->orig[i] != 0;
	}
	return left;
}

/* With tierbal gone: every page back, then the mover's copy of the
 * userfaultfd closed (the last one: the kernel lets waiting faults through).
 * Locked. */
static void put_all_back(struct mover *m)
{
	if (m->uffd < 0)
		return;
	put_back(m, true);
	syscall(SYS_close, m->uffd);
	m->uffd = -1;
}

static void *mover_main(void *arg)
{
	struct mover *m = arg;
	m->tid = (int)syscall(SYS_gettid);
	__atomic_store_n(&m->started, 1, __ATOMIC_RELEASE);
	struct {
		struct tb_rt_cmd h;
		struct tb_rt_move e[TB_RT_MAX_MOVES];
	} c;
	struct {
		struct tb_rt_reply h;
		struct tb_rt_result e[TB_RT_MAX_MOVES];
	} r;
	for (;;) {
		long n = syscall(SYS_recvfrom, m->sock, &c, sizeof(c), 0, NULL, NULL);
		/* tierbal is gone (or confused): every page home. No signal reaches here: no EINTR */
		if (n < (long)sizeof(c.h) || c.h.count > TB_RT_MAX_MOVES ||
		    (size_t)n != sizeof(c.h) + c.h.count * sizeof(c.e[0]))
			break;
		r.h.seq = c.h.seq;
		r.h.count = c.h.count;
		lock(m);
		for (uint32_t i = 0; i < c.h.count; i++)
			command(m, c.h.op, &c.e[i], &r.e[i]);
		unlock(m);
		size_t len = sizeof(r.h) + r.h.count * sizeof(r.e[0]);
		if (syscall(SYS_sendto, m->sock, &r, len, MSG_NOSIGNAL, NULL, 0) != (long)len)
			break;
	}
	lock(m);
	put_all_back(m);
	syscall(SYS_close, m->sock);
	m->sock = -1;
	unlock(m);
	return NULL; /* nothing is away now: the C library may have its globals back */
}

/* Maps the park mapping and starts the mover on it; 0 or an errno. */
static int start_mover(int uffd, int sock, size_t slot_bytes, const char *name, struct tb_rt_hello *h)
{
	size_t npages = slot_bytes / PAGE;
	size_t rec = (npages * sizeof(uint64_t) + PAGE - 1) / PAGE * PAGE;
	size_t head = (sizeof(struct mover) + PAGE - 1) / PAGE * PAGE;
	size_t total = slot_bytes + TB_RT_MAX_PARK_BYTES + head + KEEP_BYTES + rec + STACK;
	/* the slots and the probe are not copied into a child (they are empty at a
	 * fork, and the child maps its own); the rest is: the C library's fork code reads
	 * the thread descriptor at the top of the mover's stack. No huge pages:
	 * windows move page by page */
	char *a = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a == MAP_FAILED)
		return errno;
	if (madvise(a, slot_bytes + TB_RT_MAX_PARK_BYTES, MADV_DONTFORK) || madvise(a, total, MADV_NOHUGEPAGE)) {
		int e = errno;
		munmap(a, total);
		return e;
	}
	char *h0 = a + slot_bytes + TB_RT_MAX_PARK_BYTES; /* the head */
	struct mover *m = (struct mover *)h0;
	m->uffd = uffd;
	m->sock = sock;
	m->slots = (uintptr_t)a;
	m->probe = (uintptr_t)(a + slot_bytes);
	m->npages = npages;
	m->rest = total - slot_bytes - TB_RT_MAX_PARK_BYTES;
	m->orig = (uint64_t *)(h0 + head + KEEP_BYTES);
	size_t nl = strlen(name);
	memcpy(m->fork_name, name, nl);
	memcpy(m->fork_name + nl, TB_RT_FORK_SUFFIX, sizeof(TB_RT_FORK_SUFFIX));
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstack(&at, h0 + head + KEEP_BYTES + rec, STACK);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* no signal for the mover: the program's go to its own threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int rc = real_pthread_create ? real_pthread_create(&t, &at, mover_main, m) : EAGAIN;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (rc) {
		munmap(a, total);
		return rc;
	}
	/* nothing is parked before the C library has started the thread */
	while (!__atomic_load_n(&m->started, __ATOMIC_ACQUIRE))
		pause_us(50);
	mv = m;
	keep = (struct tb_rt_keep *)(h0 + head);
	h->mover_tid = m->tid;
	h->park_addr = (uintptr_t)a;
	h->park_len = slot_bytes;
	h->own_addr = (uintptr_t)a;
	h->own_len = total;
	return 0;
}

/* Async-signal-safe where it can be (it runs in the child of fork). */
static void hand_over(void)
{
	if (!real_pthread_create)
		real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
			RTLD_NEXT, "pthread_create");
	if (mv) {
		/* a fork child: the parent's mover did not come along, only a copy of
		 * its mapping (minus the slots) and of its descriptors */
		close(mv->uffd);
		close(mv->sock);
		munmap(mv, mv->rest);
		mv = NULL;
	}
	if (keep_alone)
		munmap(keep, KEEP_BYTES);
	keep = NULL;
	keep_alone = false;
	const char *name = getenv(TB_RT_ENV_SOCKET);
	if (!name || !*name || strlen(name) + sizeof(TB_RT_FORK_SUFFIX) > sizeof(((struct sockaddr_un *)0)->sun_path))
		return;
	int saved = errno; /* the program must not see ours */
	int sock = connect_to(name);
	if (sock < 0) {
		errno = saved;
		return;
	}
	int high = fcntl(sock, F_DUPFD_CLOEXEC, 100);
	if (high >= 0) {
		close(sock);
		sock = high;
	}
	struct tb_rt_hello h = {.magic = TB_RT_MAGIC, .version = TB_RT_VERSION, .type = TB_RT_HELLO};
	size_t want = park_bytes();
	int uffd = -1, mover_fd = -1;
	if (want) {
		/* parking needs UFFDIO_MOVE (Linux 6.8) and the events that say when
		 * the program unmaps, moves or discards memory */
		uffd = make_uffd(TB_UFFD_PARK_FEATURES);
		if (uffd < 0)
			h.park_err = errno;
		/* the mover's descriptors far from the low numbers programs dup2 onto */
		else if ((mover_fd = fcntl(uffd, F_DUPFD_CLOEXEC, 100)) < 0 ||
			 (h.park_err = start_mover(mover_fd, sock, want, name, &h)))
			h.park_err = h.park_err ? h.park_err : errno;
		if (h.park_err && mover_fd >= 0)
			close(mover_fd);
		if (h.park_err && uffd >= 0) { /* no mover: a plain one, whose events nobody has to read */
			close(uffd);
			uffd = -1;
		}
	}
	if (uffd < 0)
		uffd = make_uffd(UFFD_FEATURE_PAGEFAULT_FLAG_WP);
	if (uffd < 0)
		h.err = errno ? errno : EOPNOTSUPP;
	if (uffd >= 0 && !keep) { /* no mover: the keep table alone */
		void *k = mmap(NULL, KEEP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (k != MAP_FAILED) {
			keep = k;
			keep_alone = true;
			h.own_addr = (uintptr_t)k;
			h.own_len = KEEP_BYTES;
		}
	}
	h.keep_addr = (uintptr_t)keep;
	keep_self(); /* this thread: the main one, or the one that forked */
	send_fd(sock, uffd, h);
	/* without a mover, tierbal keeps the only copy: if it dies, the kernel
	 * drops the registrations and nothing here waits for a handler; with
	 * one, the mover's copy goes once the parked pages are back */
	if (uffd >= 0)
		close(uffd);
	if (!h.park_addr)
		close(sock);
	errno = saved;
}

/* Before a fork, no page may be away: the mover parks nothing while a fork
 * is under way, tierbal puts back what is away (its answer, or a closed
 * connection, says so), and whatever is still recorded comes back here. After
 * the fork, tierbal may park again. */
static void fork_note(uint32_t type)
{
	struct mover *m = mv;
	if (!m)
		return;
	int saved = errno;
	if (type == TB_RT_FORK) {
		lock(m);
		m->forking++;
		unlock(m);
	}
	int sock = connect_to(m->fork_name);
	if (sock >= 0) {
		struct tb_rt_hello h = {.magic = TB_RT_MAGIC, .version = TB_RT_VERSION, .type = type};
		ssize_t w;
		while ((w = send(sock, &h, sizeof(h), MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		char ack;
		while (w == (ssize_t)sizeof(h) && type == TB_RT_FORK && recv(sock, &ack, 1, 0) < 0 && errno == EINTR)
			;
		close(sock);
	}
	lock(m);
	if (type == TB_RT_FORK) /* tierbal missed some, or is gone and the mover has not seen it yet */
		put_back(m, sock < 0);
	else if (m->forking > 0)
		m->forking--;
	unlock(m);
	errno = saved;
}

static void before_fork(void)
{
	fork_note(TB_RT_FORK);
}

static void after_fork_parent(void)
{
	fork_note(TB_RT_FORK_DONE);
}

__attribute__((constructor)) static void tb_rt_init(void)
{
	hand_over();
	pthread_atfork(before_fork, after_fork_parent, hand_over);
}
