/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The DAMON sampler's sysfs protocol, against a fake sysfs tree. */
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

/* ---- DAMON against a fake sysfs tree ---- */

static char root[64];

static void mkfile(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/sys/kernel/mm/damon/admin/kdamonds/%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *readrel(const char *rel)
{
	static char buf[128];
	char p[512];
	snprintf(p, sizeof(p), "%s/sys/kernel/mm/damon/admin/kdamonds/%s", root, rel);
	FILE *f = fopen(p, "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return buf;
}

static void fake_tree(bool tried, const char *state)
{
	snprintf(root, sizeof(root), "/tmp/tb-damon-XXXXXX");
	assert_non_null(mkdtemp(root));
	mkfile("nr_kdamonds", "1\n");
	mkfile("0/state", state);
	mkfile("0/contexts/nr_contexts", "1\n");
	mkfile("0/contexts/0/avail_operations", "vaddr\nfvaddr\npaddr\n");
	mkfile("0/contexts/0/schemes/nr_schemes", "1\n");
	/* the files a kdamond directory has, which the sampler writes */
	static const char *const files[] = {
		"0/contexts/0/operations",
		"0/contexts/0/monitoring_attrs/intervals/sample_us",
		"0/contexts/0/monitoring_attrs/intervals/aggr_us",
		"0/contexts/0/monitoring_attrs/intervals/update_us",
		"0/contexts/0/monitoring_attrs/nr_regions/min",
		"0/contexts/0/monitoring_attrs/nr_regions/max",
		"0/contexts/0/targets/nr_targets",
		"0/contexts/0/targets/0/pid_target",
		"0/contexts/0/schemes/0/action",
		"0/contexts/0/schemes/0/access_pattern/sz/min",
		"0/contexts/0/schemes/0/access_pattern/sz/max",
		"0/contexts/0/schemes/0/access_pattern/nr_accesses/min",
		"0/contexts/0/schemes/0/access_pattern/nr_accesses/max",
		"0/contexts/0/schemes/0/access_pattern/age/min",
		"0/contexts/0/schemes/0/access_pattern/age/max",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		mkfile(files[i], "");
	if (tried) {
		mkfile("0/contexts/0/schemes/0/tried_regions/total_bytes", "0\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/0/start", "4096\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/0/end", "16384\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/0/nr_accesses", "5\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/1/start", "16384\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/1/end", "32768\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/1/nr_accesses", "0\n");
	}
}

static void rm_tree(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

/* The fixture: a fake sysfs tree in a temporary directory, with or without
 * tried_regions, its kdamond in the given state; removed afterwards. */
struct tree {
	bool tried;
	const char *state;
};

static int tree_setup(void **state)
{
	const struct tree *t = *state;
	fake_tree(t->tried, t->state);
	return 0;
}

static int tree_teardown(void **state)
{
	(void)state;
	rm_tree();
	return 0;
}

static void test_damon_no_tried_regions(void **state)
{
	(void)state;
	struct tb_access a;
	char why[512];
	assert_int_equal(tb_access_damon_open(&a, root, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "tried_regions"));
}

static void test_damon_busy(void **state)
{
	(void)state;
	struct tb_access a;
	char why[512];
	assert_int_equal(tb_access_damon_open(&a, root, why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "already running"));
}

static void test_damon_sysfs(void **state)
{
	(void)state;
	struct tb_access a;
	char why[512];
	assert_int_equal(tb_access_damon_open(&a, root, why, sizeof(why)), 0);
	assert_string_equal(a.ops->name, "damon");
	assert_int_equal(a.ops->attach(a.ctx, 4321), 0);
	assert_string_equal(readrel("0/contexts/0/operations"), "vaddr");
	assert_string_equal(readrel("0/contexts/0/targets/0/pid_target"), "4321");
	assert_string_equal(readrel("0/contexts/0/schemes/0/action"), "stat");
	assert_string_equal(readrel("0/state"), "on");
	assert_int_equal(a.ops->round_begin(a.ctx), 0);
	assert_string_equal(readrel("0/state"), "update_schemes_tried_regions");
	uint8_t acc[8];
	a.ops->mark(a.ctx, 4321, 0, 8, NULL, acc);
	/* page 0: no region; 1-3: accessed region; 4-7: idle region */
	static const uint8_t want[8] = {0, TB_ACC_READ, TB_ACC_READ, TB_ACC_READ, 0, 0, 0, 0};
	assert_memory_equal(acc, want, 8);
	a.ops->mark(a.ctx, 999, 0, 8, NULL, acc); /* a pid it does not watch: nothing */
	assert_memory_equal(acc, (uint8_t[8]){0}, 8);
	a.ops->detach(a.ctx, 4321);
	assert_string_equal(readrel("nr_kdamonds"), "0");
	a.ops->destroy(a.ctx);
}

#define tree_test(fn, tried, kdamond)                                                                                  \
	cmocka_unit_test_prestate_setup_teardown(fn, tree_setup, tree_teardown, &((struct tree){(tried), (kdamond)}))

int main(void)
{
	const struct CMUnitTest tests[] = {
		tree_test(test_damon_no_tried_regions, false, "off\n"),
		tree_test(test_damon_busy, true, "on\n"),
		tree_test(test_damon_sysfs, true, "off\n"),
	};
	return tb_test_run("damon", tests, sizeof(tests) / sizeof(tests[0]));
}
