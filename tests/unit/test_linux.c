/* The parts of linux/ that need no NUMA machine (the rest runs in the guest). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "maps.h"
#include "mover.h"
#include "softdirty.h"
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

static void test_maps_lines(void **state)
{
	(void)state;
	struct tb_vma v;
	assert_int_equal(tb_maps_parse_line("7f12a000-7f12c000 rw-p 00000000 00:00 0 \n", &v), 0);
	assert_true(v.start == 0x7f12a000 && v.end == 0x7f12c000 && v.writable && v.private && v.anon);
	assert_int_equal(tb_maps_parse_line("55d0e000-55d2f000 rw-p 00000000 00:00 0          [heap]\n", &v), 0);
	assert_true(v.anon);
	assert_int_equal(tb_maps_parse_line("7f00-8f00 r-xp 00001000 08:01 131 /usr/lib/libc.so.6\n", &v), 0);
	assert_true(!v.anon && !v.writable && v.readable);
	assert_int_equal(tb_maps_parse_line("7fff0000-7fff2000 r--p 00000000 00:00 0  [vvar]\n", &v), 0);
	assert_false(v.anon);
	assert_int_equal(tb_maps_parse_line("garbage\n", &v), -EINVAL);
	assert_int_equal(tb_maps_parse_line("2000-1000 rw-p 0 00:00 0\n", &v), -EINVAL);
}

static void test_maps_of_self(void **state)
{
	(void)state;
	long psz = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 8 * (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	struct tb_vma *v;
	size_t n;
	assert_int_equal(tb_maps_read(0, &v, &n), 0);
	int found = 0;
	for (size_t i = 0; i < n; i++)
		found |= v[i].start <= (uintptr_t)p && (uintptr_t)p + 8 * (uintptr_t)psz <= v[i].end && v[i].anon &&
			 v[i].writable;
	assert_true(found);
	free(v);
	munmap(p, 8 * (size_t)psz);
	assert_int_equal(tb_maps_read(999999, &v, &n), -ENOENT);
}

static void test_softdirty_probe_answers(void **state)
{
	(void)state;
	/* the host kernel may or may not track soft-dirty pages; the probe must
	 * say which (the guest test checks the tracking itself) */
	int rc = tb_sd_probe();
	assert_true(rc == 0 || rc == -ENOTSUP);
	uint8_t w[4], pr[4];
	long psz = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 4 * (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	p[0] = 1;
	p[2 * psz] = 1;
	assert_int_equal(tb_sd_scan(0, (uintptr_t)p, 4, w, pr), 0);
	assert_true(pr[0] && !pr[1] && pr[2] && !pr[3]); /* present bits: only the touched pages */
	munmap(p, 4 * (size_t)psz);
	assert_int_equal(tb_sd_clear(999999), -ENOENT);
}

/* On this one-node machine every present page is on node 0: counted across
 * more than one move_pages batch; pages never touched are on no node. */
static void test_mover_count(void **state)
{
	(void)state;
	size_t n = TB_MOVE_BATCH * 2 + 100;
	char *m = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	void **pages = calloc(n, sizeof(*pages));
	assert_non_null(pages);
	for (size_t i = 0; i < n; i++) {
		pages[i] = m + i * 4096;
		if (i % 3)
			m[i * 4096] = 1;
	}
	size_t c = 99;
	assert_int_equal(tb_mover_count(0, pages, n, 0, &c), 0);
	assert_int_equal(c, n - (n + 2) / 3);
	assert_int_equal(tb_mover_count(0, pages, n, 1, &c), 0);
	assert_int_equal(c, 0);
	assert_int_equal(tb_mover_count(4194304, pages, n, 0, &c), -ESRCH);
	free(pages);
	munmap(m, n * 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_nodelist), cmocka_unit_test(test_maps_lines),
					   cmocka_unit_test(test_maps_of_self),
					   cmocka_unit_test(test_softdirty_probe_answers),
					   cmocka_unit_test(test_mover_count)};
	return cmocka_run_group_tests_name("linux", tests, NULL, NULL);
}
