/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal run's configuration file: what a good one sets, and a table of bad
 * ones with the message each gets (a rejected file changes nothing). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include "access/access.h"
#include "exec/exec.h"
#include "exec/rt_proto.h"
#include "linux/pagemap.h"
#include "exec/uffd.h"
#include "exec/park.h"
#include "exec/uffd_abi.h"
#include "daemon/ctl.h"
#include "daemon/dconfig.h"
#include "daemon/idmap.h"
#include "linux/procfs.h"
#include "daemon/target.h"
#include "lib-run.h"

static void test_config(void **state)
{
	(void)state;
	struct tb_dconfig c;
	char err[512];
	tb_dconfig_default(&c);
	assert_int_equal(c.knobs.demote_scale_factor, 200);
	assert_int_equal(c.sample_ms, 200);
	const char *good = "[daemon]\npolicy = adaptive\nsampler = softdirty\nsample_ms = 50\n"
			   "socket = /tmp/s.sock\n[targets]\npid = 42\ncgroup = /sys/fs/cgroup/app\n"
			   "[knobs]\nnuma_balancing_hot_threshold_ms = 300\n[node 1]\ntier = 2\n";
	assert_int_equal(tb_dconfig_parse(&c, "good.ini", good, err, sizeof(err)), 0);
	assert_int_equal(c.policy, TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ADAPTIVE);
	assert_int_equal(c.sampler, TB_SAMPLER_SOFTDIRTY);
	assert_int_equal(c.sample_ms, 50);
	assert_string_equal(c.socket, "/tmp/s.sock");
	assert_int_equal(c.nr_pids, 1);
	assert_int_equal(c.pids[0], 42);
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/app");
	assert_int_equal(c.knobs.hot_threshold_ms, 300);
	assert_int_equal(c.tier_override[1], 2);
	assert_int_equal(c.tier_override[0], -1);
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"[daemon]\nsample_ms = fast\n", "bad.ini:2: [daemon] sample_ms: 'fast' is not a whole number"},
		{"[daemon]\npolicy = nonsense\n", "bad.ini:2: [daemon] policy: unknown policy 'nonsense'"},
		{"[daemon]\nsocket = relative\n", "bad.ini:2: [daemon] socket: 'relative' is not an absolute path"},
		{"[knobs]\nno_such_knob = 1\n", "bad.ini:2: [knobs] no_such_knob: "},
		{"[node x]\ntier = 1\n", "bad.ini:1: [node x]: 'x' is not a node number"},
		{"[elsewhere]\na = 1\n", "bad.ini:1: [elsewhere]: unknown section"},
		{"[daemon]\nsample_ms = 50\n[targets]\n", "bad.ini:3: [targets]: empty section"},
		{"just text\n", "bad.ini:1: not an INI line"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tb_dconfig before = c;
		assert_int_equal(tb_dconfig_parse(&c, "bad.ini", bad[i].text, err, sizeof(err)), -EINVAL);
		if (strncmp(err, bad[i].msg, strlen(bad[i].msg)))
			fail_msg("'%s' gave '%s', expected '%s...'", bad[i].text, err, bad[i].msg);
		assert_memory_equal(&before, &c, sizeof(c)); /* a rejected file changes nothing */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
	};
	return tb_test_run("config", tests, sizeof(tests) / sizeof(tests[0]));
}
