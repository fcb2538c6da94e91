/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daemon/target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/idmap.h"
#include "linux/maps.h"

int tb_target_check(pid_t pid, struct tb_proc_stat *st, char *err, size_t len)
{
	if (pid <= 0) {
		snprintf(err, len, "pid %d: not a process id", (int)pid);
		return -EINVAL;
	}
	if (pid == getpid()) {
		snprintf(err, len, "pid %d is tierbal itself: it does not manage its own memory", (int)pid);
		return -EINVAL;
	}
	int rc = tb_proc_stat(pid, st);
	if (rc == -ESRCH) {
		snprintf(err, len, "pid %d: no such process", (int)pid);
		return rc;
	}
	if (rc) {
		snprintf(err, len, "pid %d: cannot read /proc/%d/stat: %s", (int)pid, (int)pid, strerror(-rc));
		return rc;
	}
	if (st->kernel_thread) {
		snprintf(err, len, "pid %d (%s) is a kernel thread: it has no user memory to manage", (int)pid,
			 st->comm);
		return -EINVAL;
	}
	if (st->state == 'Z') {
		snprintf(err, len, "pid %d (%s) is a zombie: it has no memory left", (int)pid, st->comm);
		return -ESRCH;
	}
	/* opening /proc/PID/mem is the kernel's ptrace-attach check (Yama included), done without
	 * attaching: tierbal moves only the memory of processes its user could debug */
	int fd = tb_proc_open(pid, "mem", O_RDONLY);
	if (fd == -EACCES || fd == -EPERM) {
		snprintf(err, len,
			 "pid %d (%s): no permission to ptrace it, so tierbal may not move its memory; run tierbal "
			 "as root, or as its owner with CAP_SYS_NICE (and check kernel.yama.ptrace_scope)",
			 (int)pid, st->comm);
		return fd;
	}
	if (fd >= 0)
		close(fd);
	fd = tb_proc_open(pid, "pagemap", O_RDONLY);
	if (fd < 0) {
		if (fd == -EACCES || fd == -EPERM)
			snprintf(err, len,
				 "pid %d (%s): no permission to read its pagemap; run tierbal as root, or as "
				 "its owner with CAP_SYS_NICE and ptrace access",
				 (int)pid, st->comm);
		else
			snprintf(err, len, "pid %d (%s): cannot open /proc/%d/pagemap: %s", (int)pid, st->comm,
				 (int)pid, strerror(-fd));
		return fd;
	}
	close(fd);
	return 0;
}

int tb_target_check_caps(const char *who, char *err, size_t len)
{
	cap_t caps = cap_get_proc();
	if (!caps) {
		int e = errno;
		snprintf(err, len, "%s: cannot read its own capabilities: %s", who, strerror(e));
		return -e;
	}
	cap_flag_value_t nice = CAP_CLEAR;
	int rc = cap_get_flag(caps, CAP_SYS_NICE, CAP_EFFECTIVE, &nice);
	cap_free(caps);
	if (rc || nice != CAP_SET) {
		snprintf(err, len,
			 "%s needs CAP_SYS_NICE to move the pages of other processes; run it as root (or give the "
			 "binary the capability: setcap cap_sys_nice+ep)",
			 who);
		return -EPERM;
	}
	return 0;
}

int tb_target_open(struct tb_target *t, pid_t pid, const struct tb_proc_stat *st, char *err, size_t len)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	/* a pidfd names this process, not its number: a pid reused within the same clock tick (same
	 * start time) is still told apart. Kernels before 5.3 have none: the start time alone then */
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	t->starttime = st->starttime;
	snprintf(t->comm, sizeof(t->comm), "%s", st->comm);
	t->pagemap_fd = tb_proc_open(pid, "pagemap", O_RDONLY);
	if (t->pagemap_fd < 0) {
		snprintf(err, len, "pid %d (%s): cannot open its pagemap: %s", (int)pid, st->comm,
			 strerror(-t->pagemap_fd));
		if (t->pidfd >= 0)
			close(t->pidfd); /* the caller frees a target that failed to open without closing it */
		t->pidfd = -1;
		return t->pagemap_fd;
	}
	return 0;
}

void tb_target_close(struct tb_target *t)
{
	if (t->pagemap_fd > 0)
		close(t->pagemap_fd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	free(t->chunks);
	t->chunks = NULL;
	t->nr_chunks = 0;
	t->pagemap_fd = -1;
}

bool tb_target_alive(const struct tb_target *t)
{
	struct tb_proc_stat st;
	struct pollfd pf = {t->pidfd, POLLIN, 0};
	if (t->pidfd >= 0 && poll(&pf, 1, 0) == 1)
		return false; /* readable: the process has exited */
	return !t->dead && tb_proc_stat(t->pid, &st) == 0 && st.starttime == t->starttime && st.state != 'Z';
}

/* A private anonymous writable mapping: the memory tierbal manages. */
static bool tb_target_managed_vma(const struct tb_vma *v)
{
	return v->anon && v->private && v->writable && v->readable;
}

int tb_target_stretches(struct tb_target *t, struct tb_tchunk **out, size_t *n, struct tb_vma **managed,
			size_t *nmanaged)
{
	struct tb_vma *v;
	size_t nv, nm = 0;
	*out = NULL;
	*n = 0;
	int rc = tb_maps_read(t->pid, &v, &nv);
	if (rc)
		return rc == -ENOENT ? -ESRCH : rc;
	size_t cap = 0;
	t->skipped_vmas = 0;
	for (size_t i = 0; i < nv && !rc; i++) {
		if (!tb_target_managed_vma(&v[i]))
			continue;
		if (v[i].start < t->hide_end && v[i].end > t->hide_start)
			continue; /* the park area, and anything the kernel merged with it */
		if (t->max_vma_bytes && v[i].end - v[i].start > t->max_vma_bytes) {
			t->skipped_vmas++;
			continue;
		}
		v[nm++] = v[i]; /* i >= nm: the maps are compacted in place to the managed ones */
		for (uintptr_t a = v[i].start & ~(TB_CHUNK_BYTES - 1); a < v[i].end; a += TB_CHUNK_BYTES) {
			/* maps are sorted, so a stretch shared by two mappings is the last one */
			if (!*n || (*out)[*n - 1].base != a) {
				if (*n == cap) {
					cap = cap ? 2 * cap : 64;
					struct tb_tchunk *nc = realloc(*out, cap * sizeof(*nc));
					if (!nc) {
						rc = -ENOMEM;
						break;
					}
					*out = nc;
				}
				(*out)[*n] = (struct tb_tchunk){.base = a, .chunk = UINT32_MAX};
				(*n)++;
			}
			struct tb_tchunk *c = &(*out)[*n - 1];
			uintptr_t lo = v[i].start > a ? v[i].start : a;
			uintptr_t hi = v[i].end < a + TB_CHUNK_BYTES ? v[i].end : a + TB_CHUNK_BYTES;
			for (uintptr_t p = (lo - a) >> 12; p < (hi - a) >> 12; p++)
				c->elig[p / 64] |= 1ull << (p % 64);
		}
	}
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	if (managed && !rc) {
		*managed = v;
		*nmanaged = nm;
	} else {
		free(v);
	}
	return rc;
}

struct tb_tchunk *tb_target_find(struct tb_target *t, uintptr_t base)
{
	size_t lo = 0, hi = t->nr_chunks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->chunks[mid].base < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nr_chunks && t->chunks[lo].base == base ? &t->chunks[lo] : NULL;
}
