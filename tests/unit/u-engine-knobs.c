/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The knobs' and policies' names and ranges, and the invariant check
 * itself (it must catch a corrupted engine). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib-engine.h"
#include "lib-run.h"

static void test_check_catches_corruption(void **state)
{
	struct fake *f = *state;
	place(f, 0, 10, 0);
	char err[256];
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), 0);
	f->e->node[0].used++;
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), -EFAULT);
	assert_non_null(strstr(err, "accounted used"));
	f->e->node[0].used--;
	f->e->meta[3].prev = 7; /* a broken link */
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), -EFAULT);
	f->e->meta[3].prev = 4;
}

static void test_knobs_and_policies(void **state)
{
	(void)state;
	struct tb_knobs k;
	char err[256];
	tb_knobs_default(&k);
	assert_int_equal(k.hot_threshold_ms, 1000);
	assert_int_equal(k.promote_rate_limit_MBps, 65536);
	assert_int_equal(tb_knob_set(&k, "numa_balancing_hot_threshold_ms=500", err, sizeof(err)), 0);
	assert_int_equal(k.hot_threshold_ms, 500);
	assert_int_equal(tb_knob_set(&k, "promo_wmark_mode=boost", err, sizeof(err)), 0);
	assert_int_equal(k.wmark_mode, TB_WMARK_BOOST);
	assert_int_equal(tb_knob_set(&k, "no_such_knob=1", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown knob"));
	assert_int_equal(tb_knob_set(&k, "numa_balancing=9", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "outside"));
	assert_int_equal(tb_knob_set(&k, "watermark_scale_factor=ten", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knob_set(&k, "watermark_scale_factor", err, sizeof(err)), -EINVAL);
	uint32_t p;
	assert_int_equal(tb_policy_parse("combined", &p), 0);
	assert_int_equal(p, TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ACTIVE_LRU);
	assert_int_equal(tb_policy_parse("hot-threshold+active-lru", &p), 0);
	assert_string_equal(tb_policy_name(p), "combined");
	assert_int_equal(tb_policy_parse("always+", &p), -EINVAL);
	assert_int_equal(tb_policy_parse("fast", &p), -EINVAL);
	assert_int_equal(tb_policy_parse("adaptive", &p), 0);
	assert_int_equal(p, TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ADAPTIVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		engine_test(test_check_catches_corruption, 0, NULL),
		cmocka_unit_test(test_knobs_and_policies),
	};
	return tb_test_run("engine-knobs", tests, sizeof(tests) / sizeof(tests[0]));
}
