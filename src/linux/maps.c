/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "linux/maps.h"

#include <fcntl.h>
#include <unistd.h>

#include "linux/procfs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tb_maps_parse_line(const char *line, struct tb_vma *v)
{
	uintmax_t start, end;
	char perms[5];
	unsigned long long ino;
	int name = 0;
	if (sscanf(line, "%jx-%jx %4s %*x %*x:%*x %llu %n", &start, &end, perms, &ino, &name) < 4 || end <= start ||
	    strlen(perms) != 4)
		return -EINVAL;
	const char *path = line + name;
	*v = (struct tb_vma){.start = (uintptr_t)start,
			     .end = (uintptr_t)end,
			     .readable = perms[0] == 'r',
			     .writable = perms[1] == 'w',
			     .private = perms[3] == 'p'};
	/* anonymous: no inode, and no name or a bracketed one ([heap], [stack], [anon:...]) */
	v->anon = ino == 0 && (!name || *path == '\0' || *path == '\n' || *path == '[');
	if (name && (!strncmp(path, "[vsyscall]", 10) || !strncmp(path, "[vvar]", 6) || !strncmp(path, "[vdso]", 6)))
		v->anon = false;
	return 0;
}

/* the areas of /proc/PID/maps, or of smaps (whose other lines do not parse as areas) */
static int read_areas(pid_t pid, const char *file, struct tb_vma **out, size_t *n)
{
	char line[4096];
	int fd = tb_proc_open(pid, file, O_RDONLY);
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	size_t cap = 64;
	*n = 0;
	*out = malloc(cap * sizeof(**out));
	int rc = *out ? 0 : -ENOMEM;
	while (!rc && fgets(line, sizeof(line), f)) {
		if (*n == cap) {
			struct tb_vma *nv = realloc(*out, 2 * cap * sizeof(**out));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			*out = nv;
			cap *= 2;
		}
		if (*n && !strncmp(line, "VmFlags:", 8))
			(*out)[*n - 1].softdirty = strstr(line + 8, " sd") != NULL;
		else if (*n && !strncmp(line, "THPeligible:", 12))
			(*out)[*n - 1].thp_eligible = strtol(line + 12, NULL, 10) == 1;
		else if (tb_maps_parse_line(line, &(*out)[*n]) == 0)
			(*n)++;
	}
	fclose(f);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int tb_maps_read(pid_t pid, struct tb_vma **out, size_t *n)
{
	return read_areas(pid, "maps", out, n);
}

int tb_smaps_read(pid_t pid, struct tb_vma **out, size_t *n)
{
	return read_areas(pid, "smaps", out, n);
}
