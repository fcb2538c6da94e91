/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one reader of numbers that people type (command line, configuration,
 * knobs): all of the text, decimal, bounded. Callers word the message. Header
 * only, so that the engine, which links nothing, shares it. */
#ifndef TB_NUMBER_H
#define TB_NUMBER_H

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* S as a decimal whole number from MIN to MAX: 0, -EINVAL if S is not a whole
 * number (a sign, a space or anything after the digits), -ERANGE if it is
 * outside MIN..MAX (*OUT then holds the value, saturated, for the message). */
static inline int tb_parse_whole(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	if (!s || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	*out = v;
	return errno || v < min || v > max ? -ERANGE : 0;
}

/* S as a finite decimal number from MIN to MAX, with the results of tb_parse_whole. */
static inline int tb_parse_real(const char *s, double min, double max, double *out)
{
	if (!s || !*s || *s == ' ' || *s == '\t')
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || isnan(v))
		return -EINVAL;
	*out = v;
	return errno || !isfinite(v) || v < min || v > max ? -ERANGE : 0;
}

#endif
