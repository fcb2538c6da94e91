/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal: a tiered-memory balancer. This file only dispatches subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: tierbal COMMAND [OPTIONS]\n"
		   "\n"
		   "commands:\n"
		   "  sim      simulate a tiered machine and compare placement policies\n"
		   "  run      move the pages of real processes between NUMA nodes (the daemon)\n"
		   "  exec     run a program under tierbal, with hint faults from user space\n"
		   "  stat     print a running daemon's counters\n"
		   "  topology show this machine's NUMA nodes and memory tiers\n"
		   "  help     show this text\n"
		   "  version  print the version\n"
		   "\n"
		   "'tierbal COMMAND --help' and 'man tierbal' tell more.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return TB_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "sim"))
		return tb_cmd_sim(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return tb_cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "exec"))
		return tb_cmd_exec(argc - 1, argv + 1);
	if (!strcmp(cmd, "stat"))
		return tb_cmd_stat(argc - 1, argv + 1);
	if (!strcmp(cmd, "topology"))
		return tb_cmd_topology(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return TB_EXIT_OK;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("tierbal %s\n", TB_VERSION);
		return TB_EXIT_OK;
	}
	fprintf(stderr, "tierbal: unknown command '%s'\n", cmd);
	usage(stderr);
	return TB_EXIT_USAGE;
}
