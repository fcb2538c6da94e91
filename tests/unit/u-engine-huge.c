/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Huge pages: counted in base pages, armed, faulted and migrated whole, not
 * promoted when shared, split when a demotion finds no room for them. */
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

#define HEAD 8192u /* a run of 512 ids, aligned */

static void test_alloc_counts_base_pages(void **state)
{
	struct fake *f = *state;
	unsigned node = 9;
	assert_int_equal(tb_engine_alloc_huge(f->e, HEAD, false, &node), 0);
	assert_int_equal(node, 0);
	struct tb_node_info ni = info(f, 0);
	assert_int_equal(ni.used, TB_HPAGE_PAGES);
	assert_int_equal(ni.lru[0], TB_HPAGE_PAGES);
	assert_int_equal(tb_engine_page_node(f->e, HEAD + 511), 0);
	assert_int_equal(tb_engine_huge_flags(f->e, HEAD + 7), TB_HUGE);
	assert_int_equal(ctr(f, TB_C_thp_fault_alloc), 1);
	/* not aligned, or overlapping a present page: refused */
	assert_int_equal(tb_engine_alloc_huge(f->e, HEAD + 1, false, &node), -EINVAL);
	assert_int_equal(tb_engine_alloc_huge(f->e, HEAD, false, &node), -EINVAL);
	place(f, HEAD + 519, 1, 1);
	assert_int_equal(tb_engine_alloc_huge(f->e, HEAD + 512, false, &node), -EINVAL);
}

/* a fast node without 512 free pages above low gives no huge page locally;
 * a madvised fault takes one from the slow node */
static void test_alloc_fallback(void **state)
{
	struct fake *f = *state;
	uint32_t next = 0;
	fill_fast(f, &next, info(f, 0).wmark_low + 100);
	unsigned node;
	assert_int_equal(tb_engine_alloc_huge(f->e, HEAD, false, &node), -ENOMEM);
	assert_int_equal(ctr(f, TB_C_thp_fault_fallback), 1);
	assert_int_equal(tb_engine_alloc_huge(f->e, HEAD, true, &node), 0);
	assert_int_equal(node, 1);
}

/* one PMD: armed once, a fault on any subpage promotes all 512 in one move */
static void test_promote_whole(void **state)
{
	struct fake *f = *state;
	assert_int_equal(tb_engine_place_huge(f->e, HEAD, 1), 0);
	advance(f, 1);
	assert_int_equal(ctr(f, TB_C_numa_huge_pte_updates), 1);
	assert_int_equal(ctr(f, TB_C_numa_pte_updates), TB_HPAGE_PAGES);
	assert_true(f->armed[HEAD]);
	assert_false(f->armed[HEAD + 1]);
	tb_engine_hint_fault(f->e, HEAD + 300, true);
	assert_int_equal(ctr(f, TB_C_numa_hint_faults), 1);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), TB_HPAGE_PAGES);
	assert_int_equal(ctr(f, TB_C_pgmigrate_success), TB_HPAGE_PAGES);
	assert_int_equal(ctr(f, TB_C_thp_migration_success), 1);
	assert_int_equal(f->migrate_calls, 1);
	for (uint32_t i = 0; i < TB_HPAGE_PAGES; i++)
		assert_int_equal(tb_engine_page_node(f->e, HEAD + i), 0);
	assert_int_equal(info(f, 0).used, TB_HPAGE_PAGES);
	assert_int_equal(info(f, 1).used, 0);
	/* a second fault on the same PMD before it is armed again does nothing */
	tb_engine_hint_fault(f->e, HEAD + 1, false);
	assert_int_equal(ctr(f, TB_C_numa_hint_faults), 1);
}

/* migrate_balanced_pgdat() with nr_pages = 512: room for a base page is not room for a huge one */
static void test_wmark_counts_512(void **state)
{
	struct fake *f = *state;
	uint32_t next = 0;
	fill_fast(f, &next, info(f, 0).wmark_high + 100);
	assert_int_equal(tb_engine_place_huge(f->e, HEAD, 1), 0);
	place(f, HEAD + 512, 1, 1);
	advance(f, 1);
	tb_engine_hint_fault(f->e, HEAD + 5, false);
	assert_int_equal(ctr(f, TB_C_promote_fail_wmark), 1);
	assert_int_equal(ctr(f, TB_C_thp_migration_success), 0);
	tb_engine_hint_fault(f->e, HEAD + 512, false);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 1);
}

/* numamigrate_isolate_page() wakes kswapd at the huge page's order: with the
 * promotion watermark less than 512 pages above high, an order-0 kswapd would
 * stop short of room for a huge page, and its promotion would fail forever */
static void test_kswapd_order_makes_room(void **state)
{
	struct fake *f = *state;
	uint32_t next = 0;
	struct tb_node_info ni = info(f, 0);
	assert_true(ni.wmark_promo < ni.wmark_high + TB_HPAGE_PAGES); /* the case at stake */
	fill_fast(f, &next, ni.wmark_promo);
	assert_int_equal(tb_engine_place_huge(f->e, HEAD, 1), 0);
	advance(f, 1);
	tb_engine_hint_fault(f->e, HEAD, false);
	assert_int_equal(ctr(f, TB_C_promote_fail_wmark), 1);
	for (unsigned ms = 0; ms < 60000 && !ctr(f, TB_C_thp_migration_success); ms += 100) {
		advance(f, 100); /* kswapd demotes; the scanner arms the huge page again */
		if (f->armed[HEAD])
			tb_engine_hint_fault(f->e, HEAD, false);
	}
	assert_true(ctr(f, TB_C_pgdemote_kswapd) >= TB_HPAGE_PAGES - (ni.wmark_promo - ni.wmark_high));
	assert_int_equal(ctr(f, TB_C_thp_migration_success), 1);
	assert_int_equal(tb_engine_page_node(f->e, HEAD), 0);
}

static void test_shared_not_promoted(void **state)
{
	struct fake *f = *state;
	assert_int_equal(tb_engine_place_huge(f->e, HEAD, 1), 0);
	assert_int_equal(tb_engine_set_huge(f->e, HEAD, TB_HUGE | TB_HUGE_SHARED), 0);
	advance(f, 1);
	tb_engine_hint_fault(f->e, HEAD, false);
	assert_int_equal(ctr(f, TB_C_promote_fail_shared), 1);
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 0);
	assert_int_equal(tb_engine_page_node(f->e, HEAD), 1);
}

/* promotion that the platform refuses keeps the huge page and fails it whole */
static void test_promote_fail_no_split(void **state)
{
	struct fake *f = *state;
	assert_int_equal(tb_engine_place_huge(f->e, HEAD, 1), 0);
	advance(f, 1);
	f->migrate_rc = -ENOMEM;
	tb_engine_hint_fault(f->e, HEAD, false);
	assert_int_equal(ctr(f, TB_C_thp_migration_fail), 1);
	assert_int_equal(ctr(f, TB_C_pgmigrate_fail), TB_HPAGE_PAGES);
	assert_int_equal(ctr(f, TB_C_thp_migration_split), 0);
	assert_int_equal(f->splits, 0);
	assert_int_equal(tb_engine_huge_flags(f->e, HEAD), TB_HUGE);
}

/* a demotion that finds no room for a huge page splits it (migrate_pages()
 * on -ENOMEM) and demotes its base pages */
static void test_demote_splits_on_enomem(void **state)
{
	struct fake *f = *state;
	unsigned node;
	assert_int_equal(tb_engine_alloc_huge(f->e, 0, false, &node), 0);
	f->migrate_rc = -ENOMEM; /* the lower node has no huge page to give */
	uint64_t got = tb_reclaim_node(f->e, 0, 1, TB_MIGRATE_DEMOTE_KSWAPD);
	assert_int_equal(got, 0);
	assert_int_equal(ctr(f, TB_C_thp_migration_fail), 1);
	assert_int_equal(ctr(f, TB_C_thp_migration_split), 1);
	assert_int_equal(f->splits, 1);
	assert_int_equal(tb_engine_huge_flags(f->e, 0), 0);
	f->migrate_rc = 0;
	got = tb_reclaim_node(f->e, 0, 32, TB_MIGRATE_DEMOTE_KSWAPD);
	assert_int_equal(got, 32);
	assert_int_equal(ctr(f, TB_C_pgdemote_kswapd), 32);
}

/* the platform's news: the kernel split a huge page, then khugepaged collapsed it again */
static void test_split_and_collapse_books(void **state)
{
	struct fake *f = *state;
	assert_int_equal(tb_engine_place_huge(f->e, HEAD, 1), 0);
	assert_int_equal(tb_engine_set_huge(f->e, HEAD, 0), 0);
	assert_int_equal(tb_engine_huge_flags(f->e, HEAD), 0);
	assert_int_equal(info(f, 1).lru[0], TB_HPAGE_PAGES);
	char err[256];
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), 0);
	advance(f, 1);
	tb_engine_hint_fault(f->e, HEAD + 3, false); /* a base page now: it moves alone */
	assert_int_equal(ctr(f, TB_C_pgpromote_success), 1);
	assert_int_equal(tb_engine_set_huge(f->e, HEAD, TB_HUGE), -EINVAL); /* on two nodes */
	tb_engine_unplace(f->e, HEAD + 3);
	place(f, HEAD + 3, 1, 1);
	assert_int_equal(tb_engine_set_huge(f->e, HEAD, TB_HUGE), 0);
	assert_int_equal(info(f, 1).lru[0] + info(f, 1).lru[1], TB_HPAGE_PAGES);
	assert_int_equal(tb_engine_check(f->e, err, sizeof(err)), 0);
	tb_engine_unplace(f->e, HEAD + 100); /* takes the whole huge page */
	assert_int_equal(info(f, 1).used, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		engine_test(test_alloc_counts_base_pages, TB_POLICY_PROMOTE, NULL),
		engine_test(test_alloc_fallback, TB_POLICY_PROMOTE, NULL),
		engine_test(test_promote_whole, TB_POLICY_PROMOTE, NULL),
		engine_test(test_wmark_counts_512, TB_POLICY_PROMOTE, NULL),
		engine_test(test_kswapd_order_makes_room, TB_POLICY_PROMOTE, NULL),
		engine_test(test_shared_not_promoted, TB_POLICY_PROMOTE, NULL),
		engine_test(test_promote_fail_no_split, TB_POLICY_PROMOTE, NULL),
		engine_test(test_demote_splits_on_enomem, TB_POLICY_PROMOTE, NULL),
		engine_test(test_split_and_collapse_books, TB_POLICY_PROMOTE, NULL),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
