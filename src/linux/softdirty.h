/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The soft-dirty sampler: clear_refs "4" clears the soft-dirty bit of every
 * page of a process; pagemap bit 55 then tells which pages were written
 * since. It sees writes only, but works on any kernel built with
 * CONFIG_MEM_SOFT_DIRTY and needs no privilege beyond ptrace access. */
#ifndef TB_SOFTDIRTY_H
#define TB_SOFTDIRTY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "linux/pagemap.h"

/* Clears the soft-dirty bits of pid's pages (0 = this process). */
int tb_sd_clear(pid_t pid);
/* For npages pages from start (page-aligned): written[i] = 1 if written since
 * the last clear, present[i] = 1 if the page is in memory. Either may be NULL. */
int tb_sd_scan(pid_t pid, uintptr_t start, size_t npages, uint8_t *written, uint8_t *present);
/* 0 if this kernel tracks soft-dirty pages, -ENOTSUP if it accepts
 * clear_refs but never sets the bit, another negative errno on failure. */
int tb_sd_probe(void);

#endif
