/* What the commands say about options they refuse. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"

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
