/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Output files that appear whole or not at all: written to a temporary file
 * beside the target and renamed over it at the end. A failure, a full disk,
 * SIGINT, SIGTERM or SIGHUP leaves the old file as it was and no partial
 * one. A symbolic link or a non-regular file at the target is refused,
 * never followed or replaced. */
#ifndef TB_OUTFILE_H
#define TB_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct tb_outfile {
	FILE *f;
	char path[4096];
	char tmp[4096];
};

/* Opens a temporary file for path. 0 or a negative errno, err saying why. */
int tb_outfile_open(struct tb_outfile *o, const char *path, char *err, size_t len);
/* Flushes, syncs and renames it over path: 0, or a negative errno (the
 * temporary file is gone either way and path untouched on failure). */
int tb_outfile_commit(struct tb_outfile *o, char *err, size_t len);
/* Removes the temporary file; path stays as it was. */
void tb_outfile_abort(struct tb_outfile *o);
/* Whether a and b name the same existing file. */
bool tb_same_file(const char *a, const char *b);

#endif
