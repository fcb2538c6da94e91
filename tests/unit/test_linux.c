/* The parts of linux/ that need no NUMA machine (the rest runs in the guest). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "topology.h"

static void test_nodelist(void **state)
{
	(void)state;
	uint64_t m;
	assert_int_equal(tb_parse_nodelist("0", &m), 0);
	assert_int_equal(m, 1);
	assert_int_equal(tb_parse_nodelist("0-2,5\n", &m), 0);
	assert_int_equal(m, 0x27);
	assert_int_equal(tb_parse_nodelist("", &m), 0);
	assert_int_equal(m, 0);
	assert_int_equal(tb_parse_nodelist("3-1", &m), -EINVAL);
	assert_int_equal(tb_parse_nodelist("1,x", &m), -EINVAL);
	assert_int_equal(tb_parse_nodelist("64", &m), -EINVAL);
	assert_int_equal(tb_parse_nodelist("1;2", &m), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_nodelist)};
	return cmocka_run_group_tests_name("linux", tests, NULL, NULL);
}
