/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process's memory areas, from /proc/PID/maps. */
#ifndef TB_MAPS_H
#define TB_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tb_vma {
	uintptr_t start, end;
	bool readable, writable, private;
	bool anon;         /* no backing file: heap, stack, anonymous mappings */
	bool softdirty;    /* VM_SOFTDIRTY: pagemap calls all its pages soft-dirty (smaps only) */
	bool thp_eligible; /* the kernel may back it with transparent huge pages (smaps only) */
};

/* Reads pid's areas (0 = this process) into a malloc'd array. */
int tb_maps_read(pid_t pid, struct tb_vma **out, size_t *n);
/* The same from /proc/PID/smaps, with each area's soft-dirty flag ("sd" in
 * VmFlags) and THPeligible; it costs a walk of the page tables, as reading
 * the pagemap does. */
int tb_smaps_read(pid_t pid, struct tb_vma **out, size_t *n);
/* Parses one line of a maps file. 0, or -EINVAL for a line that is not one. */
int tb_maps_parse_line(const char *line, struct tb_vma *v);

#endif
