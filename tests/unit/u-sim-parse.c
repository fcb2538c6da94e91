/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The simulator's readers: machine and workload files and traces, with a
 * table of bad ones and the message each gets; the shipped files all parse. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sim/dist.h"
#include "sim/machine.h"
#include "sim/oracle.h"
#include "sim/report.h"
#include "sim/sim.h"
#include "sim/trace.h"
#include "sim/workload.h"
#include "lib-run.h"
#include "lib-sim.h"

static void expect_machine_error(const char *text, const char *needle)
{
	struct tb_machine m;
	char err[512];
	assert_int_equal(tb_machine_parse(&m, "m.ini", text, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not contain '%s'", err, needle);
}

static void test_machine_parse(void **state)
{
	(void)state;
	struct tb_machine m;
	char err[512];
	assert_int_equal(tb_machine_parse(&m, "tiny", tiny_machine, err, sizeof(err)), 0);
	assert_int_equal(m.nr_nodes, 2);
	assert_int_equal(m.node[1].tier, 1);      /* CPU-less means slow */
	assert_int_equal(m.node[0].demote_to, 1); /* automatic demotion target */
	assert_int_equal(m.node[0].capacity_pages, 64 * 256);
	/* copy = 4096 B at the slower of 50000 MB/s read and 8000 MB/s write */
	assert_true(fabs(tb_machine_migrate_ns(&m, 0, 1) - (3000 + 4096.0 / 8000 * 1000)) < 1e-9);
	static const struct {
		const char *text, *msg;
	} bad_machines[] = {
		{"[machine]\nname = x\n[node 0]\ncpus = maybe\n", "m.ini:4: [node 0] cpus: 'maybe'"},
		{"[machine]\nname = x\n\n[node 0]\nbogus = 1\n", "m.ini:5: [node 0] bogus: unknown key"},
		{"[machine]\nname = x\n[node 0]\nread_ns = fast\n", "m.ini:4: [node 0] read_ns: 'fast'"},
		{"[machine]\nname = x\n[node 0]\nread_ns = 1\nread_ns = 2\n", "m.ini:5: [node 0] read_ns: set twice"},
		{"[gpu]\nx = 1\n", "m.ini:1: [gpu]: unknown section"},
		{"[machine]\nname = m\n[gpu]\n", "m.ini:3: [gpu]: unknown section"},
		{"[machine]\nname = m\n[node 0]\n\n", "m.ini:3: [node 0]: empty section"},
		{"[machine]\nname = x\nthis is not ini\n", "m.ini:3: not an INI line"},
		{"[machine]\nname = x\n[node 0]\ncpus = yes\ncapacity_mib = 64\n", "at least two [node N]"},
		{"[machine]\nname = x\n[node 0]\ncpus = yes\ncapacity_mib = 64\n[node 1]\ncapacity_mib = 64\n",
		 "[node 0] read_ns: missing"},
	};
	for (size_t i = 0; i < sizeof(bad_machines) / sizeof(bad_machines[0]); i++)
		expect_machine_error(bad_machines[i].text, bad_machines[i].msg);
	char gap[1024];
	snprintf(gap, sizeof(gap), "%s[node 3]\ncapacity_mib = 64\n", tiny_machine);
	expect_machine_error(gap, "[node 2] is missing");
	char bad_demote[1024];
	snprintf(bad_demote, sizeof(bad_demote), "%s", tiny_machine);
	strcat(bad_demote,
	       "[node 2]\ncapacity_mib=64\nread_ns=1\nwrite_ns=1\nread_mbps=1\nwrite_mbps=1\ndemote_to=0\n");
	expect_machine_error(bad_demote, "[node 2] demote_to: node 0 is not in a lower tier");
}

static void test_shipped_configs_parse(void **state)
{
	(void)state;
	char err[512];
	const char *machines[] = {"small", "optane-2s", "cxl-1to4"};
	for (size_t i = 0; i < 3; i++) {
		struct tb_machine m;
		if (tb_machine_load(&m, machines[i], err, sizeof(err)))
			fail_msg("%s", err);
	}
	const char *workloads[] = {"gauss", "gauss-wide", "uniform", "zipf", "phase", "tpp-mix", "multi"};
	for (size_t i = 0; i < 7; i++) {
		struct tb_workload w;
		if (tb_workload_load(&w, workloads[i], err, sizeof(err)))
			fail_msg("%s", err);
		tb_workload_free(&w);
	}
	struct tb_machine m;
	assert_int_equal(tb_machine_load(&m, "nosuch", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "shipped: "));
	assert_int_equal(tb_machine_load(&m, "/nonexistent/m.ini", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/m.ini: cannot open"));
}

static void expect_workload_error(const char *text, const char *needle)
{
	struct tb_workload w;
	char err[512];
	assert_int_equal(tb_workload_parse(&w, "w.ini", text, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not contain '%s'", err, needle);
}

static void test_workload_parse(void **state)
{
	(void)state;
	struct tb_workload w;
	char err[512];
	const char *ok = "[workload]\nname = t\n[process a]\nanon_mib = 10\ndistribution = zipf\n"
			 "[phase late]\nat_s = 5\nprocess = a\ncenter = 0.9\n[phase early]\nat_s = 1\nprocess = a\n";
	assert_int_equal(tb_workload_parse(&w, "w.ini", ok, err, sizeof(err)), 0);
	assert_int_equal(w.nr_procs, 1);
	assert_int_equal(w.proc[0].anon.pages, 2560);
	assert_int_equal(w.proc[0].anon.kind, TB_DIST_ZIPF);
	assert_string_equal(w.phase[0].name, "early"); /* sorted by time */
	tb_workload_free(&w);
	static const struct {
		const char *text, *msg;
	} bad_workloads[] = {
		{"[workload]\nname = t\n[process a]\nanon_mib = -1\n", "w.ini:4: [process a] anon_mib"},
		{"[workload]\nname = t\n[process a]\nread_ratio = 1.5\n",
		 "w.ini:4: [process a] read_ratio: 1.5 is outside"},
		{"[workload]\nname = t\n[process a]\ndistribution = pareto\n", "w.ini:4: [process a] distribution"},
		{"[workload]\nname = t\n[phase p]\nprocess = b\n", "w.ini:4: [phase p] process: no [process b]"},
		{"[workload]\nname = t\n[process a]\nanon_mib = 8\nfile_share = 0.5\n", "file_share"},
		{"[workload]\nname = t\n", "no [process NAME] section"},
		{"[process a]\nanon_mib = 8\n", "[workload] name: missing"},
		{"[workload]\nname = t\n[process a]\nanon_mib = 8\ntrace = /nonexistent.trace\n",
		 "[process a] trace: /nonexistent.trace: cannot open"},
	};
	for (size_t i = 0; i < sizeof(bad_workloads) / sizeof(bad_workloads[0]); i++)
		expect_workload_error(bad_workloads[i].text, bad_workloads[i].msg);
}

static void test_trace(void **state)
{
	(void)state;
	struct tb_trace *t;
	char err[512];
	const char *text = "# a comment\ntierbal-trace 1\nR 0x3000\nw 0x1000\nR 12288 # again page 3\nW 0x1fff\n";
	assert_int_equal(tb_trace_parse(&t, "t", text, err, sizeof(err)), 0);
	assert_int_equal(t->nr_ops, 4);
	assert_int_equal(t->nr_pages, 2); /* pages 1 and 3, densely renumbered 0 and 1 */
	assert_int_equal(t->ops[0], 1);
	assert_int_equal(t->ops[1], 0 | TB_TRACE_WRITE);
	assert_int_equal(t->ops[2], 1);
	assert_int_equal(t->ops[3], 0 | TB_TRACE_WRITE);
	assert_int_equal(t->hits[0], 2);
	tb_trace_free(t);
	assert_int_equal(tb_trace_parse(&t, "t", "R 0x1000\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:1: expected the header"));
	assert_int_equal(tb_trace_parse(&t, "t", "tierbal-trace 1\nR 0x1000\nX 0x2000\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:3: op"));
	assert_int_equal(tb_trace_parse(&t, "t", "tierbal-trace 1\nR 0xzz\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t:2: address"));
	assert_int_equal(tb_trace_parse(&t, "t", "tierbal-trace 1\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no accesses"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_machine_parse),
		cmocka_unit_test(test_shipped_configs_parse),
		cmocka_unit_test(test_workload_parse),
		cmocka_unit_test(test_trace),
	};
	return tb_test_run("sim-parse", tests, sizeof(tests) / sizeof(tests[0]));
}
