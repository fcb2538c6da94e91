/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the commands say about options they refuse, and their numbers. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "util/number.h"

void tb_cli_bad_option(const char *cmd, int ch, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	if (ch == ':')
		fprintf(stderr, "tierbal %s: %s needs a value\n", cmd, arg);
	else if (optopt && arg[0] == '-' && arg[1] != '-')
		fprintf(stderr, "tierbal %s: unknown option '-%c'\n", cmd, optopt);
	else
		fprintf(stderr, "tierbal %s: unknown option '%s'\n", cmd, arg);
	fprintf(stderr, "Try 'tierbal %s --help'.\n", cmd);
}

int tb_cli_whole(const char *cmd, const char *opt, const char *s, unsigned long long min, unsigned long long max,
		 unsigned long long *out)
{
	if (tb_parse_whole(s, min, max, out) == 0)
		return 0;
	fprintf(stderr, "tierbal %s: %s '%s' is not a whole number from %llu to %llu\n", cmd, opt, s, min, max);
	return -EINVAL;
}

int tb_cli_real(const char *cmd, const char *opt, const char *s, double min, double max, double *out)
{
	if (tb_parse_real(s, min, max, out) == 0)
		return 0;
	fprintf(stderr, "tierbal %s: %s '%s' is not a number from %g to %g\n", cmd, opt, s, min, max);
	return -EINVAL;
}
