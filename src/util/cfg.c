/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "util/cfg.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/number.h"

struct reader {
	const char *p;
	struct tb_cfg *c;
};

static void empty_section(struct tb_cfg *c)
{
	if (c->open_line && !c->failed) {
		snprintf(c->err, c->errlen, "%s:%u: [%s]: empty section (no key = value line follows it)", c->file,
			 c->open_line, c->open_section);
		c->failed = true;
	}
}

/* A [section] line, as inih will read it: checked, and open until a key. */
static void section_line(struct tb_cfg *c, const char *line)
{
	line += strspn(line, " \t");
	const char *end = line[0] == '[' ? strchr(line, ']') : NULL;
	if (!end || c->failed)
		return;
	empty_section(c);
	snprintf(c->open_section, sizeof(c->open_section), "%.*s", (int)(end - line - 1), line + 1);
	c->open_line = c->line;
	if (c->section_ok && !c->section_ok(c, c->open_section))
		c->failed = true;
}

/* inih asks for one line at a time; counting them here gives the handler
 * the line it is looking at. */
static char *read_line(char *buf, int size, void *stream)
{
	struct reader *r = stream;
	if (!*r->p)
		return NULL;
	int i = 0;
	while (*r->p && i < size - 1) {
		char ch = *r->p++;
		buf[i++] = ch;
		if (ch == '\n')
			break;
	}
	buf[i] = '\0';
	r->c->line++;
	section_line(r->c, buf);
	if (i == size - 1 && buf[i - 1] != '\n' && *r->p && !r->c->failed) {
		snprintf(r->c->err, r->c->errlen, "%s:%u: line longer than %d characters", r->c->file, r->c->line,
			 size - 2);
		r->c->failed = true;
	}
	return buf;
}

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
	struct tb_cfg *c = user;
	if (c->failed)
		return 1;
	c->open_line = 0;
	return c->handler(c, section, name, value) ? 1 : 0;
}

int tb_cfg_parse(const char *label, const char *text, tb_cfg_handler h, tb_cfg_section_check check, void *user,
		 char *err, size_t errlen)
{
	struct tb_cfg c = {
		.file = label, .err = err, .errlen = errlen, .user = user, .handler = h, .section_ok = check};
	struct reader r = {text, &c};
	err[0] = '\0';
	int rc = ini_parse_stream(read_line, &r, on_entry, &c);
	if (!rc)
		empty_section(&c);
	if (c.failed)
		return -EINVAL;
	if (rc != 0) {
		snprintf(err, errlen, "%s:%d: not an INI line (expected [section] or key = value)", label, rc);
		return -EINVAL;
	}
	return 0;
}

bool tb_cfg_error(struct tb_cfg *c, const char *section, const char *key, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized): va_start is right above
	va_end(ap);
	if (key)
		snprintf(c->err, c->errlen, "%s:%u: [%s] %s: %s", c->file, c->line, section, key, msg);
	else
		snprintf(c->err, c->errlen, "%s:%u: [%s]: %s", c->file, c->line, section, msg);
	c->failed = true;
	return false;
}

bool tb_cfg_u64(struct tb_cfg *c, const char *sec, const char *key, const char *val, uint64_t min, uint64_t max,
		uint64_t *out)
{
	unsigned long long v;
	int rc = tb_parse_whole(val, min, max, &v);
	if (rc == -EINVAL)
		return tb_cfg_error(c, sec, key, "'%s' is not a whole number", val);
	if (rc)
		return tb_cfg_error(c, sec, key, "%s is outside %llu..%llu", val, (unsigned long long)min,
				    (unsigned long long)max);
	*out = v;
	return true;
}

bool tb_cfg_double(struct tb_cfg *c, const char *sec, const char *key, const char *val, double min, double max,
		   double *out)
{
	double v;
	int rc = tb_parse_real(val, min, max, &v);
	if (rc == -EINVAL)
		return tb_cfg_error(c, sec, key, "'%s' is not a number", val);
	if (rc)
		return tb_cfg_error(c, sec, key, "%s is outside %g..%g", val, min, max);
	*out = v;
	return true;
}

bool tb_cfg_bool(struct tb_cfg *c, const char *sec, const char *key, const char *val, bool *out)
{
	if (!strcmp(val, "yes") || !strcmp(val, "true") || !strcmp(val, "1")) {
		*out = true;
		return true;
	}
	if (!strcmp(val, "no") || !strcmp(val, "false") || !strcmp(val, "0")) {
		*out = false;
		return true;
	}
	return tb_cfg_error(c, sec, key, "'%s' is not yes or no", val);
}

bool tb_cfg_string(struct tb_cfg *c, const char *sec, const char *key, const char *val, char *out, size_t len)
{
	if (strlen(val) >= len)
		return tb_cfg_error(c, sec, key, "longer than %zu characters", len - 1);
	memcpy(out, val, strlen(val) + 1);
	return true;
}

#define CFG_MAX_STREAM (64u << 20)
#define CFG_STREAM_WAIT_MS 10000 /* a pipe or device that says nothing for this long is given up on */

char *tb_cfg_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	/* non-blocking open: a FIFO without a writer must not hang here */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct stat sb;
	if (fstat(fd, &sb) || S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s: cannot read: %s", path,
			 S_ISDIR(sb.st_mode) ? "a directory" : strerror(errno));
		close(fd);
		return NULL;
	}
	/* a pipe or device (/dev/stdin, <(...)) is read up to a cap, each read waiting a bounded time:
	 * /dev/zero must not eat the machine, a silent FIFO must not hold it */
	bool capped = !S_ISREG(sb.st_mode);
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	const char *why = NULL;
	for (;;) {
		if (!buf) {
			why = "out of memory";
			break;
		}
		if (capped && n > CFG_MAX_STREAM) {
			why = "not a regular file, and larger than 64 MiB: not a configuration or trace";
			break;
		}
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				why = "out of memory";
				break;
			}
			buf = nb;
			cap *= 2;
		}
		if (capped) {
			struct pollfd pf = {.fd = fd, .events = POLLIN};
			int pr = poll(&pf, 1, CFG_STREAM_WAIT_MS);
			if (pr == 0) {
				why = "not a regular file, and nothing came from it for 10 s (a FIFO nobody writes?)";
				break;
			}
			if (pr < 0 && errno == EINTR)
				continue;
		}
		ssize_t got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			why = strerror(errno);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (why) {
		snprintf(err, errlen, "%s: cannot read: %s", path, why);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (memchr(buf, '\0', n)) {
		snprintf(err, errlen, "%s: contains a NUL byte; expected a text file", path);
		free(buf);
		return NULL;
	}
	if (len)
		*len = n;
	return buf;
}

bool tb_cfg_section_is(const char *section, const char *name, const char **rest)
{
	size_t n = strlen(name);
	if (strncmp(section, name, n) != 0 || section[n] != ' ' || !section[n + 1])
		return false;
	*rest = section + n + 1;
	return true;
}
