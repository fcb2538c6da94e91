/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The test programs' page pattern (tests/lib/pages.h): it must see any
 * changed word, a page of another generation and a page swapped with another. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "pages.h"
#include "lib-run.h"

static void test_pattern_sees_damage(void **state)
{
	(void)state;
	enum { N = 8 };
	char *p = aligned_alloc(TB_PAGE, N * TB_PAGE);
	assert_non_null(p);
	uint64_t gen[N] = {0};
	tb_pages_fill(p, N, 7, 100);
	assert_int_equal(tb_pages_bad(p, N, 7, 100, NULL), 0);
	assert_int_equal(tb_pages_bad(p, N, 8, 100, NULL), N); /* another area */
	assert_int_equal(tb_pages_bad(p, N, 7, 101, NULL), N); /* shifted by a page */
	tb_page_touch(p + 3 * TB_PAGE, 7, 103, 5);
	assert_int_equal(tb_pages_bad(p, N, 7, 100, gen), 1); /* a write not counted */
	gen[3] = 5;
	assert_int_equal(tb_pages_bad(p, N, 7, 100, gen), 0);
	p[5 * TB_PAGE + 4095] ^= 1; /* one bit of the last word */
	assert_int_equal(tb_pages_bad(p, N, 7, 100, gen), 1);
	memset(p + 6 * TB_PAGE, 0, TB_PAGE); /* a page read back as zeros */
	assert_int_equal(tb_pages_bad(p, N, 7, 100, gen), 2);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern_sees_damage),
	};
	return tb_test_run("pages", tests, sizeof(tests) / sizeof(tests[0]));
}
