/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "linux/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PF_KTHREAD 0x00200000ul

int tb_proc_open(pid_t pid, const char *file, int flags)
{
	char path[96];
	int n = pid ? snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file)
		    : snprintf(path, sizeof(path), "/proc/self/%s", file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int tb_proc_stat_parse(const char *text, struct tb_proc_stat *st)
{
	/* comm may hold spaces and parentheses: it ends at the last ')' */
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	if (!open || !close || close < open)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	size_t len = (size_t)(close - open - 1);
	if (len >= sizeof(st->comm))
		len = sizeof(st->comm) - 1;
	memcpy(st->comm, open + 1, len);
	/* fields after comm: 3 state, 4 ppid, 9 flags, 22 starttime, 39 processor */
	const char *p = close + 1;
	char *end;
	for (int field = 3; field <= 39; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		if (field == 3) {
			st->state = *p;
			p++;
			continue;
		}
		long long v = strtoll(p, &end, 10);
		if (end == p)
			return -EINVAL;
		if (field == 4)
			st->ppid = (pid_t)v;
		else if (field == 9)
			st->flags = (unsigned long)v;
		else if (field == 22)
			st->starttime = (uint64_t)v;
		else if (field == 39)
			st->processor = (int)v;
		p = end;
	}
	st->kernel_thread = (st->flags & PF_KTHREAD) != 0;
	return 0;
}

int tb_proc_stat(pid_t pid, struct tb_proc_stat *st)
{
	int fd = tb_proc_open(pid, "stat", O_RDONLY);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	char buf[1024];
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	int rc = got < 0 ? -errno : 0;
	close(fd);
	if (rc)
		return rc == -ENOENT ? -ESRCH : rc; /* it exited between open and read */
	buf[got] = '\0';
	return tb_proc_stat_parse(buf, st);
}

int tb_cgroup_pids(const char *dir, pid_t **out, size_t *n)
{
	char path[4096];
	*out = NULL;
	*n = 0;
	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t cap = 0;
	long v;
	int rc = 0;
	while (fscanf(f, "%ld", &v) == 1) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			pid_t *np = realloc(*out, cap * sizeof(*np));
			if (!np) {
				rc = -ENOMEM;
				break;
			}
			*out = np;
		}
		(*out)[(*n)++] = (pid_t)v;
	}
	if (!rc && ferror(f))
		rc = -EIO;
	fclose(f);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
