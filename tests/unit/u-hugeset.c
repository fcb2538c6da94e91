/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The set of huge pages tierbal exec protected whole: adds, takes and range
 * forgets, checked against a plain array, through growth and wrapped probes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "exec/hugeset.h"
#include "lib-run.h"

#define H ((uintptr_t)2 << 20)
#define N 3000

static void test_hugeset_matches_array(void **state)
{
	(void)state;
	struct tb_hugeset s = {0};
	static bool in[N];
	memset(in, 0, sizeof(in));
	uint64_t x = 12345;
	for (unsigned step = 0; step < 40000; step++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		unsigned k = (unsigned)(x >> 33) % N, op = (unsigned)(x >> 20) % 16;
		uintptr_t a = (uintptr_t)(k + 1) * H;
		if (op < 9) {
			assert_int_equal(tb_hugeset_add(&s, a), 0);
			in[k] = true;
		} else if (op < 15) {
			assert_int_equal(tb_hugeset_take(&s, a), in[k]);
			in[k] = false;
		} else { /* a range of up to 8 huge pages, not aligned at its start */
			unsigned len = 1 + (unsigned)(x >> 40) % 8;
			tb_hugeset_forget(&s, a - H / 2, a + len * H);
			for (unsigned i = k; i < k + len && i < N; i++)
				in[i] = false;
		}
		if (step % 1000 == 0) {
			size_t n = 0;
			for (unsigned i = 0; i < N; i++) {
				n += in[i];
				bool had = tb_hugeset_take(&s, (uintptr_t)(i + 1) * H);
				assert_int_equal(had, in[i]);
				if (had)
					assert_int_equal(tb_hugeset_add(&s, (uintptr_t)(i + 1) * H), 0);
			}
			assert_int_equal(s.n, n);
		}
	}
	assert_false(tb_hugeset_take(&s, 0));
	tb_hugeset_free(&s);
	assert_int_equal(s.n, 0);
	assert_false(tb_hugeset_take(&s, H));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hugeset_matches_array),
	};
	return tb_test_run("hugeset", tests, sizeof(tests) / sizeof(tests[0]));
}
