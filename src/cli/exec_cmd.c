/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal exec: start a program under tierbal, with hint faults from user space. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "exec/session.h"

static void exec_usage(FILE *f)
{
	fprintf(f, "usage: tierbal exec [--policy P] [--set KNOB=VALUE]... [--scan-period-ms MS] [--scan-size-mb MB]\n"
		   "                    [--scan-delay-ms MS] [--window-kb KB] [--read-faults on|off] [--park-mb MB]\n"
		   "                    [--sample-ms MS]\n"
		   "                    [--sampler auto|damon|softdirty|none] [--config FILE] [--socket PATH]\n"
		   "                    [--log FILE] [--verbose] [--stats[=FILE]] [--] PROGRAM [ARG]...\n"
		   "\n"
		   "Runs PROGRAM with tierbal's runtime preloaded (LD_PRELOAD) and manages its memory, and that\n"
		   "of the processes it forks and execs, as 'tierbal run' does, with one more signal: the\n"
		   "engine's scanner takes windows of pages away (userfaultfd), and the first access to each is a\n"
		   "hint fault with its scan-to-fault latency, as the kernel's NUMA hint faults. Where the kernel\n"
		   "can move pages (Linux 6.8 and later) a window's pages wait in a park area in the program and\n"
		   "reads fault too; elsewhere the window is write-protected and only writes fault.\n"
		   "\n"
		   "  --policy P            promotion policy (default hot-threshold)\n"
		   "  --set KNOB=VALUE      an engine knob, as in 'tierbal sim --set'\n"
		   "  --scan-period-ms MS   shortest time for one scan pass over the memory\n"
		   "                        (numa_balancing_scan_period_min_ms, default 1000)\n"
		   "  --scan-size-mb MB     pages armed per scan window (numa_balancing_scan_size_mb, 256)\n"
		   "  --scan-delay-ms MS    wait before the first scan (numa_balancing_scan_delay_ms, 1000)\n"
		   "  --window-kb KB        what one fault opens, and stands for: the aligned KB around it\n"
		   "                        (a power of two, 4 to 2048, default 64): fewer faults, coarser view;\n"
		   "                        above 256, writes only\n"
		   "  --read-faults on|off  park windows so that reads fault too, where the kernel can (default on)\n"
		   "  --park-mb MB          the park area in each process: how much can wait at once (default 256,\n"
		   "                        address space only; the pages in it are the program's own)\n"
		   "  --sample-ms MS        one round of the engine (discovery, sampler, scanner, demotion) every MS\n"
		   "                        (default 200, as tierbal run)\n"
		   "  --sampler S           what tells which pages are in use, besides the faults (default auto:\n"
		   "                        DAMON, else soft-dirty, else none)\n"
		   "  --config FILE         a tierbal run configuration ([daemon], [knobs], [node N])\n"
		   "  --socket PATH         a control socket for 'tierbal stat' (default: none)\n"
		   "  --log FILE            append tierbal's messages to FILE (default: they are dropped)\n"
		   "  --verbose             tierbal's messages on standard error\n"
		   "  --stats[=FILE]        the counters after the program has exited, on standard error or in FILE\n"
		   "\n"
		   "The program's standard input, output and error are its own. tierbal exits with the program's\n"
		   "exit status, or dies of the same signal; 126/127 when PROGRAM cannot be run.\n");
}

static int knob(struct tb_run_opts *o, char *buf, size_t len, const char *opt, const char *name, const char *val)
{
	unsigned long long v;
	if (tb_cli_whole("exec", opt, val, 1, 100000000, &v))
		return -EINVAL;
	if (o->nr_sets == TB_RUN_MAX_SETS) {
		fprintf(stderr, "tierbal exec: too many knobs\n");
		return -E2BIG;
	}
	snprintf(buf, len, "%s=%llu", name, v);
	o->sets[o->nr_sets++] = buf;
	return 0;
}

int tb_exec_parse_options(int argc, char **argv, struct tb_exec_opts *x)
{
	static const struct option longopts[] = {
		{"policy", required_argument, NULL, 'P'},
		{"set", required_argument, NULL, 'S'},
		{"scan-period-ms", required_argument, NULL, 'T'},
		{"scan-size-mb", required_argument, NULL, 'Z'},
		{"scan-delay-ms", required_argument, NULL, 'D'},
		{"sampler", required_argument, NULL, 's'},
		{"config", required_argument, NULL, 'c'},
		{"socket", required_argument, NULL, 'k'},
		{"log", required_argument, NULL, 'l'},
		{"verbose", no_argument, NULL, 'v'},
		{"stats", optional_argument, NULL, 'x'},
		{"sample-ms", required_argument, NULL, 'm'},
		{"window-kb", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{"read-faults", required_argument, NULL, 'R'},
		{"park-mb", required_argument, NULL, 'M'},
		{NULL, 0, NULL, 0},
	};
	static char knobs[3][96];
	*x = (struct tb_exec_opts){0};
	struct tb_run_opts *o = &x->run;
	int ch;
	opterr = 0;
	optind = 0; /* glibc: 0 also resets its state inside an option cluster, so parsing twice is safe */
	/* "+": options end at PROGRAM, whose own options are left alone */
	while ((ch = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'P': o->policy = optarg; break;
		case 'S':
			if (o->nr_sets == TB_RUN_MAX_SETS) {
				fprintf(stderr, "tierbal exec: more than %d --set\n", TB_RUN_MAX_SETS);
				return -EINVAL;
			}
			o->sets[o->nr_sets++] = optarg;
			break;
		case 'T':
			if (knob(o, knobs[0], sizeof(knobs[0]), "--scan-period-ms", "numa_balancing_scan_period_min_ms",
				 optarg))
				return -EINVAL;
			break;
		case 'Z':
			if (knob(o, knobs[1], sizeof(knobs[1]), "--scan-size-mb", "numa_balancing_scan_size_mb",
				 optarg))
				return -EINVAL;
			break;
		case 'D':
			if (knob(o, knobs[2], sizeof(knobs[2]), "--scan-delay-ms", "numa_balancing_scan_delay_ms",
				 optarg))
				return -EINVAL;
			break;
		case 's': o->sampler = optarg; break;
		case 'w': {
			unsigned long long v;
			if (tb_cli_whole("exec", "--window-kb", optarg, 4, 2048, &v))
				return -EINVAL;
			if (v & (v - 1)) {
				fprintf(stderr, "tierbal exec: --window-kb '%s' is not a power of two from 4 to 2048\n",
					optarg);
				return -EINVAL;
			}
			x->window_pages = (unsigned)(v / 4);
			break;
		}
		case 'R':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "tierbal exec: --read-faults '%s' is neither on nor off\n", optarg);
				return -EINVAL;
			}
			x->no_reads = !strcmp(optarg, "off");
			break;
		case 'M': {
			unsigned long long v;
			if (tb_cli_whole("exec", "--park-mb", optarg, 1, 65536, &v))
				return -EINVAL;
			x->park_mb = (unsigned)v;
			break;
		}
		case 'm': {
			unsigned long long v;
			if (tb_cli_whole("exec", "--sample-ms", optarg, 10, 60000, &v))
				return -EINVAL;
			o->sample_ms = (unsigned)v;
			break;
		}
		case 'c': o->config = optarg; break;
		case 'k':
			if (optarg[0] != '/') {
				fprintf(stderr, "tierbal exec: --socket '%s' is not an absolute path\n", optarg);
				return -EINVAL;
			}
			o->socket = optarg;
			break;
		case 'l': x->log = optarg; break;
		case 'v': x->verbose = true; break;
		case 'x':
			x->stats = true;
			x->stats_file = optarg;
			break;
		case 'h': exec_usage(stdout); return 1;
		default: tb_cli_bad_option("exec", ch, argv); return -EINVAL;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "tierbal exec: no program given\nTry 'tierbal exec --help'.\n");
		return -EINVAL;
	}
	x->argv = argv + optind;
	return 0;
}

int tb_cmd_exec(int argc, char **argv)
{
	struct tb_exec_opts o;
	int rc = tb_exec_parse_options(argc, argv, &o);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	return tb_exec_run(&o);
}
