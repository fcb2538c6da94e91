/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "exec/hugeset.h"

#include <errno.h>
#include <stdlib.h>

static size_t home(const struct tb_hugeset *s, uintptr_t a)
{
	return (size_t)((a >> 21) * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
}

static void put(struct tb_hugeset *s, uintptr_t a)
{
	size_t i = home(s, a);
	while (s->slot[i] && s->slot[i] != a)
		i = (i + 1) & (s->cap - 1);
	s->n += !s->slot[i];
	s->slot[i] = a;
}

int tb_hugeset_add(struct tb_hugeset *s, uintptr_t a)
{
	if (2 * (s->n + 1) > s->cap) { /* at most half full: probes stay short */
		size_t cap = s->cap ? 2 * s->cap : 64;
		uintptr_t *old = s->slot, *nw = calloc(cap, sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		size_t oldcap = s->cap;
		s->slot = nw;
		s->cap = cap;
		s->n = 0;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i])
				put(s, old[i]);
		free(old);
	}
	put(s, a);
	return 0;
}

/* Empties slot i and moves back the entries after it that probed past it. */
static void remove_at(struct tb_hugeset *s, size_t i)
{
	size_t mask = s->cap - 1;
	s->slot[i] = 0;
	s->n--;
	for (size_t j = (i + 1) & mask; s->slot[j]; j = (j + 1) & mask) {
		size_t h = home(s, s->slot[j]);
		/* j's entry may fill the hole unless its home lies cyclically in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			s->slot[i] = s->slot[j];
			s->slot[j] = 0;
			i = j;
		}
	}
}

bool tb_hugeset_take(struct tb_hugeset *s, uintptr_t a)
{
	if (!s->n || !a)
		return false;
	for (size_t i = home(s, a); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == a) {
			remove_at(s, i);
			return true;
		}
	return false;
}

void tb_hugeset_forget(struct tb_hugeset *s, uintptr_t start, uintptr_t end)
{
	for (size_t i = 0; s->n && i < s->cap;) {
		uintptr_t a = s->slot[i];
		if (a && a >= start && a < end)
			remove_at(s, i); /* an entry may have moved into i: look at it again */
		else
			i++;
	}
}

void tb_hugeset_free(struct tb_hugeset *s)
{
	free(s->slot);
	*s = (struct tb_hugeset){0};
}
