/* SPDX-License-Identifier: GPL-2.0-or-later */
/* INI parsing on top of inih, with file:line:field error messages. */
#ifndef TB_CFG_H
#define TB_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tb_cfg;
typedef bool (*tb_cfg_handler)(struct tb_cfg *c, const char *section, const char *key, const char *value);
/* Called at each [section] line: false (after tb_cfg_error) refuses the section. */
typedef bool (*tb_cfg_section_check)(struct tb_cfg *c, const char *section);

struct tb_cfg {
	const char *file; /* label used in messages: a path or "builtin:NAME" */
	unsigned line;
	char *err;
	size_t errlen;
	bool failed;
	void *user;
	tb_cfg_handler handler;
	tb_cfg_section_check section_ok;
	char open_section[128]; /* the last [section] line, until its first key arrives */
	unsigned open_line;
};

/* Parses text; the handler returns false after calling tb_cfg_error, and so
 * does check for a section it does not know. A section without any key is
 * refused too (an empty one is a typo or a leftover). 0 or -EINVAL. */
int tb_cfg_parse(const char *label, const char *text, tb_cfg_handler h, tb_cfg_section_check check, void *user,
		 char *err, size_t errlen);

bool tb_cfg_error(struct tb_cfg *c, const char *section, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool tb_cfg_u64(struct tb_cfg *c, const char *sec, const char *key, const char *val, uint64_t min, uint64_t max,
		uint64_t *out);
bool tb_cfg_double(struct tb_cfg *c, const char *sec, const char *key, const char *val, double min, double max,
		   double *out);
bool tb_cfg_bool(struct tb_cfg *c, const char *sec, const char *key, const char *val, bool *out);
bool tb_cfg_string(struct tb_cfg *c, const char *sec, const char *key, const char *val, char *out, size_t len);

/* Reads a whole file into a NUL-terminated buffer (caller frees). */
char *tb_cfg_read_file(const char *path, size_t *len, char *err, size_t errlen);

/* "[name SUFFIX]" sections: true if section is "name" followed by a space; *rest = SUFFIX. */
bool tb_cfg_section_is(const char *section, const char *name, const char **rest);

#endif
