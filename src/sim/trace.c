/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sim/trace.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cfg.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int fail(struct tb_trace *t, uint64_t *addr, int rc)
{
	free(addr);
	tb_trace_free(t);
	return rc;
}

/* One record line "R|W ADDRESS" (comment and blanks gone): its page and kind. */
static int parse_record(const char *s, const char *where, unsigned line, uint64_t *page, bool *write, char *err,
			size_t errlen)
{
	char op = (char)toupper((unsigned char)*s);
	if ((op != 'R' && op != 'W') || !isspace((unsigned char)s[1])) {
		snprintf(err, errlen, "%s:%u: op: expected R or W, got '%s'", where, line, s);
		return -EINVAL;
	}
	const char *a = s + 2;
	char *end;
	while (isspace((unsigned char)*a))
		a++;
	errno = 0;
	unsigned long long v = strtoull(a, &end, 0);
	while (isspace((unsigned char)*end))
		end++;
	if (errno || end == a || *end || *a == '-') {
		snprintf(err, errlen, "%s:%u: address: '%s' is not a hex (0x...) or decimal address", where, line, a);
		return -EINVAL;
	}
	*page = v >> 12;
	*write = op == 'W';
	return 0;
}

/* Replaces each access's page by its rank among the distinct pages (t->ops keeps
 * the write bit) and counts the accesses of each. */
static int densify(struct tb_trace *t, const uint64_t *page, size_t n, const char *label, char *err, size_t errlen)
{
	uint64_t *uniq = malloc(n * sizeof(*uniq));
	if (!uniq) {
		snprintf(err, errlen, "%s: out of memory", label);
		return -ENOMEM;
	}
	memcpy(uniq, page, n * sizeof(*uniq));
	qsort(uniq, n, sizeof(*uniq), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || uniq[i] != uniq[u - 1])
			uniq[u++] = uniq[i];
	if (u >= TB_TRACE_WRITE) {
		free(uniq);
		snprintf(err, errlen, "%s: %zu distinct pages; at most %u are supported", label, u, TB_TRACE_WRITE - 1);
		return -EINVAL;
	}
	t->hits = calloc(u, sizeof(*t->hits));
	if (!t->hits) {
		free(uniq);
		snprintf(err, errlen, "%s: out of memory", label);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t *hit = bsearch(&page[i], uniq, u, sizeof(*uniq), cmp_u64);
		uint32_t idx = (uint32_t)(hit - uniq);
		t->ops[i] |= idx;
		t->hits[idx]++;
	}
	free(uniq);
	t->nr_ops = n;
	t->nr_pages = u;
	return 0;
}

/* Room for one more access in addr and t->ops, which grow together. */
static int grow(struct tb_trace *t, uint64_t **addr, size_t n, size_t *cap)
{
	if (n < *cap)
		return 0;
	size_t c = *cap * 2;
	uint64_t *na = realloc(*addr, c * sizeof(*na));
	if (!na)
		return -ENOMEM;
	*addr = na;
	uint32_t *no = realloc(t->ops, c * sizeof(*no));
	if (!no)
		return -ENOMEM;
	t->ops = no;
	*cap = c;
	return 0;
}

int tb_trace_parse(struct tb_trace **out, const char *label, const char *text, char *err, size_t errlen)
{
	*out = NULL;
	struct tb_trace *t = calloc(1, sizeof(*t));
	size_t cap = 1024, n = 0;
	uint64_t *addr = malloc(cap * sizeof(*addr));
	if (t)
		t->ops = malloc(cap * sizeof(*t->ops));
	if (!t || !addr || !t->ops) {
		snprintf(err, errlen, "%s: out of memory", label);
		return fail(t, addr, -ENOMEM);
	}
	unsigned line = 0;
	bool header = false;
	const char *p = text;
	while (*p) {
		line++;
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char buf[256];
		if (len >= sizeof(buf)) {
			snprintf(err, errlen, "%s:%u: line longer than %zu characters", label, line, sizeof(buf) - 1);
			return fail(t, addr, -EINVAL);
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		p += len + (eol ? 1 : 0);
		char *hash = strchr(buf, '#');
		if (hash)
			*hash = '\0';
		char *s = buf;
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			continue;
		if (!header) {
			unsigned version;
			char extra;
			if (sscanf(s, "tierbal-trace %u %c", &version, &extra) != 1 || version != 1) {
				snprintf(err, errlen, "%s:%u: expected the header 'tierbal-trace 1', got '%s'", label,
					 line, s);
				return fail(t, addr, -EINVAL);
			}
			header = true;
			continue;
		}
		uint64_t page;
		bool write;
		int rc = parse_record(s, label, line, &page, &write, err, errlen);
		if (rc)
			return fail(t, addr, rc);
		if (grow(t, &addr, n, &cap)) {
			snprintf(err, errlen, "%s: out of memory", label);
			return fail(t, addr, -ENOMEM);
		}
		addr[n] = page;
		t->ops[n] = write ? TB_TRACE_WRITE : 0;
		n++;
	}
	if (!header || n == 0) {
		snprintf(err, errlen, "%s: no accesses (expected 'tierbal-trace 1' then lines 'R|W ADDRESS')", label);
		return fail(t, addr, -EINVAL);
	}
	int rc = densify(t, addr, n, label, err, errlen);
	if (rc)
		return fail(t, addr, rc);
	free(addr);
	*out = t;
	return 0;
}

int tb_trace_load(struct tb_trace **out, const char *path, char *err, size_t errlen)
{
	char *text = tb_cfg_read_file(path, NULL, err, errlen);
	if (!text)
		return -ENOENT;
	int rc = tb_trace_parse(out, path, text, err, errlen);
	free(text);
	return rc;
}

void tb_trace_free(struct tb_trace *t)
{
	if (!t)
		return;
	free(t->ops);
	free(t->hits);
	free(t);
}
