/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Access-trace replay. Format (docs/trace-format.md):
 *   tierbal-trace 1
 *   R 0x7f0012345000
 *   W 140737488351232
 * one access per line, R or W then a byte address (hex with 0x, or decimal);
 * '#' starts a comment. Addresses are mapped to dense page numbers in the
 * order of their address. */
#ifndef TB_TRACE_H
#define TB_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TB_TRACE_WRITE 0x80000000u

struct tb_trace {
	uint32_t *ops; /* page index | TB_TRACE_WRITE */
	size_t nr_ops;
	uint64_t nr_pages;
	uint64_t *hits; /* accesses per page, for the oracle */
};

int tb_trace_load(struct tb_trace **out, const char *path, char *err, size_t errlen);
int tb_trace_parse(struct tb_trace **out, const char *label, const char *text, char *err, size_t errlen);
void tb_trace_free(struct tb_trace *t);

#endif
