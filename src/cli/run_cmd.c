/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal run: the live daemon's command line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "cli/cli.h"

static void run_usage(FILE *f)
{
	fprintf(f,
		"usage: tierbal run [--pid PID]... [--cgroup PATH] [--config FILE] [--sampler auto|damon|softdirty]\n"
		"                   [--policy POLICY] [--set KNOB=VALUE]... [--socket PATH] [--dry-run] [--once]\n"
		"                   [--duration SECONDS]\n"
		"\n"
		"Moves the pages of real processes between this machine's NUMA nodes: hot pages to the\n"
		"fast tier, the coldest out of it when it runs short. The same engine as 'tierbal sim'.\n"
		"\n"
		"  --pid PID          manage this process (repeatable)\n"
		"  --cgroup PATH      manage every process of this cgroup v2 directory, as they come and go\n"
		"  --config FILE      INI configuration ([daemon], [targets], [knobs], [node N]); SIGHUP reloads it\n"
		"  --sampler S        auto (default: DAMON where the kernel offers it, else soft-dirty), damon, softdirty\n"
		"  --policy P         promotion policy (default hot-threshold; 'tierbal sim --list' shows all)\n"
		"  --set KNOB=VALUE   an engine knob, as in 'tierbal sim --set'\n"
		"  --socket PATH      control socket for 'tierbal stat' (default %s)\n"
		"  --dry-run          decide, and print what would move, but move nothing\n"
		"  --once             run one scan pass over every page, act on it, and exit\n"
		"  --duration S       stop after S seconds\n"
		"\n"
		"Stops cleanly on SIGTERM or SIGINT. Exit status: 0 done, 1 failure, 2 bad usage or configuration.\n",
		TB_DEFAULT_SOCKET);
}

int tb_run_parse_options(int argc, char **argv, struct tb_run_opts *o)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},    {"cgroup", required_argument, NULL, 'g'},
		{"config", required_argument, NULL, 'c'}, {"sampler", required_argument, NULL, 's'},
		{"policy", required_argument, NULL, 'P'}, {"set", required_argument, NULL, 'S'},
		{"socket", required_argument, NULL, 'k'}, {"dry-run", no_argument, NULL, 'n'},
		{"once", no_argument, NULL, '1'},         {"duration", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	*o = (struct tb_run_opts){0};
	int ch;
	opterr = 0;
	optind = 0; /* glibc: 0 also resets its state inside an option cluster, so parsing twice is safe */
	while ((ch = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p': {
			unsigned long long v;
			if (tb_cli_whole("run", "--pid", optarg, 1, 4194304, &v))
				return -EINVAL;
			if (o->nr_pids == TB_DCFG_MAX_PIDS) {
				fprintf(stderr, "tierbal run: more than %d --pid; use --cgroup\n", TB_DCFG_MAX_PIDS);
				return -EINVAL;
			}
			o->pids[o->nr_pids++] = (pid_t)v;
			break;
		}
		case 'g': o->cgroup = optarg; break;
		case 'c': o->config = optarg; break;
		case 's': o->sampler = optarg; break;
		case 'P': o->policy = optarg; break;
		case 'S':
			if (o->nr_sets == TB_RUN_MAX_SETS) {
				fprintf(stderr, "tierbal run: more than %d --set\n", TB_RUN_MAX_SETS);
				return -EINVAL;
			}
			o->sets[o->nr_sets++] = optarg;
			break;
		case 'k':
			if (optarg[0] != '/') {
				fprintf(stderr, "tierbal run: --socket '%s' is not an absolute path\n", optarg);
				return -EINVAL;
			}
			o->socket = optarg;
			break;
		case 'n': o->dry_run = true; break;
		case '1': o->once = true; break;
		case 'd':
			if (tb_cli_real("run", "--duration", optarg, 0.001, 1e7, &o->duration_s))
				return -EINVAL;
			break;
		case 'h': run_usage(stdout); return 1;
		default: tb_cli_bad_option("run", ch, argv); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tierbal run: unexpected argument '%s'\nTry 'tierbal run --help'.\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int tb_cmd_run(int argc, char **argv)
{
	struct tb_run_opts o;
	int rc = tb_run_parse_options(argc, argv, &o);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	return tb_daemon_run(&o, &tb_run_mode, NULL);
}
