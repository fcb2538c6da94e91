/* INI parsing on top of inih, with file:line:field error messages. */
#ifndef TB_CFG_H
#define TB_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cfg;
typedef bool (*cfg_handler)(struct cfg *c, const char *section, const char *key, const char *value);
/* Called at each [section] line: false (after cfg_error) refuses the section. */
typedef bool (*cfg_section_check)(struct cfg *c, const char *section);

struct cfg {
	const char *file; /* label used in messages: a path or "builtin:NAME" */
	unsigned line;
	char *err;
	size_t errlen;
	bool failed;
	void *user;
	cfg_handler handler;
	cfg_section_check section_ok;
	char open_section[128]; /* the last [section] line, until its first key arrives */
	unsigned open_line;
};

/* Parses text; the handler returns false after calling cfg_error, and so
 * does check for a section it does not know. A section without any key is
 * refused too (an empty one is a typo or a leftover). 0 or -EINVAL. */
int cfg_parse(const char *label, const char *text, cfg_handler h, cfg_section_check check, void *user, char *err,
	      size_t errlen);

bool cfg_error(struct cfg *c, const char *section, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool cfg_u64(struct cfg *c, const char *sec, const char *key, const char *val, uint64_t min, uint64_t max,
	     uint64_t *out);
bool cfg_double(struct cfg *c, const char *sec, const char *key, const char *val, double min, double max,
		double *out);
bool cfg_bool(struct cfg *c, const char *sec, const char *key, const char *val, bool *out);
bool cfg_string(struct cfg *c, const char *sec, const char *key, const char *val, char *out, size_t len);

/* Reads a whole file into a NUL-terminated buffer (caller frees). */
char *cfg_read_file(const char *path, size_t *len, char *err, size_t errlen);

/* "[name SUFFIX]" sections: true if section is "name" followed by a space; *rest = SUFFIX. */
bool cfg_section_is(const char *section, const char *name, const char **rest);

#endif
