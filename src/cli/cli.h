/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TB_CLI_H
#define TB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "engine/knobs.h"

#define TB_VERSION "0.1.0"

/* Exit codes shared by all subcommands. */
#define TB_EXIT_OK 0
#define TB_EXIT_FAIL 1
#define TB_EXIT_USAGE 2

int tb_cmd_sim(int argc, char **argv);
int tb_cmd_topology(int argc, char **argv);
int tb_cmd_run(int argc, char **argv);
int tb_cmd_stat(int argc, char **argv);
int tb_cmd_exec(int argc, char **argv);

/* Says what is wrong with the option getopt_long just refused (its result
 * ch, with an option string that starts with ':'), for tierbal CMD. */
void tb_cli_bad_option(const char *cmd, int ch, char **argv);

/* The value S of option OPT of tierbal CMD, as a whole number (decimal, no
 * sign) or a number, from MIN to MAX; -EINVAL after saying what is wrong. */
int tb_cli_whole(const char *cmd, const char *opt, const char *s, unsigned long long min, unsigned long long max,
		 unsigned long long *out);
int tb_cli_real(const char *cmd, const char *opt, const char *s, double min, double max, double *out);

/* The option parsers, apart from what the commands then do (the fuzz targets call them).
 * Each returns 0, 1 when --help was printed, or -EINVAL after printing what is wrong. */
#define TB_SIM_MAX_RUNS 16   /* policies in one comparison */
#define TB_SIM_MAX_VALUES 16 /* values of a swept knob */
struct tb_sim_options {
	const char *machine, *workload, *policies, *format, *out, *sweep;
	double duration, interval;
	uint64_t seed;
	struct tb_knobs knobs;
	bool oracle, check, quiet, list;
	long jobs;
};
int tb_sim_parse_options(int argc, char **argv, struct tb_sim_options *o);
int tb_sim_parse_policies(const char *list, uint32_t *flags, size_t *n);
/* "KNOB=V1,V2,...": one knob set per value, each checked against the knob's range */
int tb_sim_parse_sweep(const char *arg, const struct tb_knobs *base, char *knob, size_t knoblen, char values[][32],
		       struct tb_knobs *knobs, size_t *n);
int tb_run_parse_options(int argc, char **argv, struct tb_run_opts *o);
struct tb_exec_opts;
int tb_exec_parse_options(int argc, char **argv, struct tb_exec_opts *o);

#endif
