/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: the command lines of tierbal sim, run and exec, up to
 * what they would do (a simulation, a daemon): the option parsers, then the
 * policy list and sweep (sim) or the configuration built from the options
 * (run, exec; without a configuration file). First byte: which command; the
 * rest: arguments separated by NUL bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/dconfig.h"
#include "exec/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size || size > 4096)
		return 0;
	char *buf = malloc(size), *argv[MAX_ARGS + 2];
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	static const char *const cmds[] = {"sim", "run", "exec"};
	unsigned which = data[0] % 3;
	int argc = 0;
	argv[argc++] = (char *)cmds[which];
	for (size_t i = 0; i < size - 1 && argc < MAX_ARGS + 1; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	argv[argc] = NULL;
	char err[1024];
	if (which == 0) {
		struct tb_sim_options o;
		uint32_t flags[TB_SIM_MAX_RUNS];
		size_t n;
		if (!tb_sim_parse_options(argc, argv, &o) && !tb_sim_parse_policies(o.policies, flags, &n) && o.sweep) {
			char knob[96], values[TB_SIM_MAX_VALUES][32];
			struct tb_knobs knobs[TB_SIM_MAX_VALUES];
			tb_sim_parse_sweep(o.sweep, &o.knobs, knob, sizeof(knob), values, knobs, &n);
		}
	} else {
		struct tb_exec_opts x;
		struct tb_run_opts o;
		int rc = which == 1 ? tb_run_parse_options(argc, argv, &o) : tb_exec_parse_options(argc, argv, &x);
		if (which == 2)
			o = x.run;
		if (!rc) {
			struct tb_dconfig c;
			o.config = NULL; /* files are the configuration target's business */
			tb_run_config(&o, &c, err, sizeof(err));
		}
	}
	free(buf);
	return 0;
}
