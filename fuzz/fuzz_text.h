/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What every fuzz target does first: the input as a NUL-terminated string
 * (parsers take text; a NUL inside simply ends it early). */
#ifndef TB_FUZZ_TEXT_H
#define TB_FUZZ_TEXT_H
#include <stdlib.h>
#include <string.h>

static inline char *fuzz_text(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}
#endif
