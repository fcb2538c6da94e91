/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs a group of cmocka tests, leaving out those TB_TEST_SKIP names (a
 * pattern: scripts/valgrind.sh leaves out what valgrind cannot run). */
#ifndef TB_LIB_RUN_H
#define TB_LIB_RUN_H

#include <stdlib.h>

static inline int tb_test_run(const char *group, const struct CMUnitTest *tests, size_t n)
{
	const char *skip = getenv("TB_TEST_SKIP");
	if (skip && *skip)
		cmocka_set_skip_filter(skip);
	return _cmocka_run_group_tests(group, tests, n, NULL, NULL);
}

#endif
