/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Machines and workloads shipped inside the binary (from data/). */
#ifndef TB_BUILTIN_H
#define TB_BUILTIN_H

#include <stddef.h>

struct tb_builtin {
	const char *kind; /* "machines" or "workloads" */
	const char *name;
	const char *text;
};

extern const struct tb_builtin tb_builtins[];
extern const size_t tb_nr_builtins;

/* Loads NAME (a shipped one) or a file path; *label gets what to call it in messages. */
char *tb_builtin_or_file(const char *kind, const char *name, char *label, size_t labellen, char *err, size_t errlen);

#endif
