/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The huge pages tierbal exec has write-protected whole, by their 2 MiB-aligned
 * address: a fault in one must lift the protection of all of it, as lifting
 * part of it would split it. An open-addressing hash set; not thread-safe. */
#ifndef TB_HUGESET_H
#define TB_HUGESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tb_hugeset {
	uintptr_t *slot; /* 0: empty */
	size_t cap, n;   /* cap: a power of two, or 0 */
};

/* Adds a (not 0): 0, or -ENOMEM. */
int tb_hugeset_add(struct tb_hugeset *s, uintptr_t a);
/* Removes a; true if it was there. */
bool tb_hugeset_take(struct tb_hugeset *s, uintptr_t a);
/* Removes every address in [start, end). */
void tb_hugeset_forget(struct tb_hugeset *s, uintptr_t start, uintptr_t end);
void tb_hugeset_free(struct tb_hugeset *s);

#endif
