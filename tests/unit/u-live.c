/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The live path against a fake kernel, one kind of failure each: pages busy
 * at their first move, a fast node fuller than it says, failing calls, a target
 * that exits or whose pid is reused, samples the sampler takes back, hot pages
 * that must stay, huge pages (whole, shared, split behind tierbal's back). Each checks the counters, that the engine's view stays true
 * to the fake kernel's, and the engine's invariants. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "exec/exec.h"
#include "daemon/live.h"
#include "linux/maps.h"
#include "exec/rt_proto.h"
#include "exec/uffd.h"

#include "lib-live.h"
#include "lib-run.h"

static void test_no_failure(void **state)
{
	struct live_fixture *x = *state;
	struct fake *f = x->f;
	struct tb_live *l = x->l;
	unsigned r = rounds(l, f, 2000, all_fast);
	assert_true(all_fast(f));
	assert_int_equal(tb_live_counter(l, TB_L_move_busy), 0);
	assert_true(r < 2000);
	assert_engine_true(l, f);
}

/* every page is busy at its first attempt (locked, under writeback): counted, forgotten, found again
 * where it really is, promoted at a later try */
static void test_busy_pages(void **state)
{
	struct live_fixture *x = *state;
	struct fake *f = x->f;
	struct tb_live *l = x->l;
	rounds(l, f, 3000, all_fast);
	assert_true(all_fast(f));
	assert_int_equal(f->busy, PAGES);
	assert_int_equal(tb_live_counter(l, TB_L_move_busy), PAGES);
	assert_engine_true(l, f);
}

/* the fast node fills up before the engine expects: -ENOMEM per page, nothing lost, the engine
 * never believes a page is fast that is not */
static void test_full_fast_node(void **state)
{
	struct live_fixture *x = *state;
	struct fake *f = x->f;
	f->cap0 = 300;
	struct tb_live *l = x->l;
	rounds(l, f, 400, NULL);
	assert_true(on_node(f, 0) <= f->cap0);
	assert_true(on_node(f, 0) > 0);
	assert_int_equal(on_node(f, 0) + on_node(f, 1), PAGES);
	assert_int_equal(tb_live_counter(l, TB_L_move_nomem), f->nomem);
	struct tb_node_info ni;
	assert_engine_true(l, f);
	tb_engine_node_info(tb_live_engine(l), 0, &ni);
	assert_true(ni.used <= on_node(f, 0));
}

/* move_pages fails as a whole call a few times: counted, and the pages get there later */
static void test_failing_calls(void **state)
{
	struct live_fixture *x = *state;
	struct fake *f = x->f;
	f->failing_calls = 5;
	struct tb_live *l = x->l;
	rounds(l, f, 3000, all_fast);
	assert_true(all_fast(f));
	assert_int_equal(f->call_errors, 5);
	assert_int_equal(tb_live_counter(l, TB_L_move_failed_calls), 5);
	assert_engine_true(l, f);
}

static bool has_exited(const struct fake *f)
{
	return f->exited;
}

/* the target dies between the sampling round and its moves: dropped at the next refresh, never
 * moved again, and nothing else breaks */
static void test_exit_before_move(void **state)
{
	struct live_fixture *x = *state;
	struct fake *f = x->f;
	struct tb_live *l = x->l;
	rounds(l, f, 2000, has_exited);
	assert_true(f->exited);
	tb_live_refresh(l, "");
	assert_int_equal(tb_live_nr_targets(l), 0);
	assert_int_equal(tb_live_counter(l, TB_L_targets_dropped), 1);
	uint64_t calls = f->calls;
	rounds(l, f, 50, NULL);
	assert_int_equal(f->calls, calls);
	assert_int_equal(f->moves_after_exit, 0);
}

/* the target exits and its pid is handed to a new process: the start time tells them apart, the
 * newcomer is not managed, nothing of it is moved */
static void test_pid_reuse(void **state)
{
	(void)state;
	FILE *ns = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!ns)
		skip(); /* needs root and CONFIG_CHECKPOINT_RESTORE; reported as skipped, not passed */
	fclose(ns);
	struct fake *f = fake_start(NONE);
	struct tb_live *l = live_start(f);
	rounds(l, f, 20, NULL);
	pid_t old = f->child;
	kill(old, SIGKILL);
	waitpid(old, NULL, 0);
	f->exited = true;
	pid_t reuse = -1;
	for (int tries = 0; tries < 100 && reuse != old; tries++) {
		ns = fopen("/proc/sys/kernel/ns_last_pid", "w");
		assert_non_null(ns);
		fprintf(ns, "%d", (int)old - 1);
		fclose(ns);
		reuse = fork();
		assert_true(reuse >= 0);
		if (reuse == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
		if (reuse != old) { /* another process took that pid first: again */
			kill(reuse, SIGKILL);
			waitpid(reuse, NULL, 0);
		}
	}
	assert_int_equal(reuse, old);
	uint64_t calls = f->calls;
	tb_live_refresh(l, "");
	assert_int_equal(tb_live_nr_targets(l), 0);
	assert_int_equal(tb_live_counter(l, TB_L_targets_dropped), 1);
	rounds(l, f, 20, NULL);
	assert_int_equal(f->calls, calls);
	kill(reuse, SIGKILL);
	waitpid(reuse, NULL, 0);
	stop(l, f);
}

/* What the sampler takes back after its round is no access: those pages take no hint faults and
 * stay where they are, the others are promoted */
static void test_unreliable_samples(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	struct tb_live *l = live_start_with(f, &half_unreliable);
	rounds(l, f, 2000, hot_half_fast);
	assert_true(hot_half_fast(f));
	assert_int_equal(on_node(f, 1), PAGES / 2);
	assert_true(tb_live_counter(l, TB_L_samples_disregarded) >= PAGES / 2);
	assert_int_equal(tb_engine_counters(tb_live_engine(l))[TB_C_pgpromote_success], PAGES / 2);
	stop(l, f);
}

/* The fast node runs short and kswapd must demote more than the cold half: it demotes the cold
 * pages and keeps every page the sampler saw in its last round, however often it ages the
 * active list meanwhile (taking the sampler's word as a one-shot accessed bit demoted hot pages
 * right after aging them, and promoted them back at their next fault) */
static void test_hot_pages_stay(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	for (unsigned i = 0; i < PAGES; i++)
		f->node[i] = 0;
	struct tb_live *l = live_start_with(f, &hot_half);
	struct tb_node_info ni;
	tb_engine_node_info(tb_live_engine(l), 0, &ni);
	f->others = NODE_PAGES - PAGES - (unsigned)ni.wmark_demote - 16;
	rounds(l, f, 5, NULL);        /* found, the hot half seen */
	f->others += PAGES / 2 + 200; /* room only if hot pages go too */
	rounds(l, f, 50, NULL);
	assert_int_equal(hot_fast(f), PAGES / 2);
	assert_int_equal(on_node(f, 1), PAGES / 2); /* the cold half went */
	assert_int_equal(tb_engine_counters(tb_live_engine(l))[TB_C_pgpromote_success], 0);
	stop(l, f);
}

static uint64_t ec(struct tb_live *l, enum tb_counter c)
{
	return tb_engine_counters(tb_live_engine(l))[c];
}

static void assert_no_failed_move(struct tb_live *l)
{
	assert_int_equal(tb_live_counter(l, TB_L_move_busy) + tb_live_counter(l, TB_L_move_nomem) +
				 tb_live_counter(l, TB_L_move_gone) + tb_live_counter(l, TB_L_move_other),
			 0);
	assert_int_equal(ec(l, TB_C_pgmigrate_fail) + ec(l, TB_C_thp_migration_fail), 0);
}

/* With the region's second half (and its first too if nhuge is 2) one transparent huge page each:
 * all promoted, each huge page found as one, moved once from its head and counted as the kernel
 * would (one THP migration, 512 base pages promoted), with no failed move */
static void promoted_with_huge_pages(unsigned nhuge)
{
	struct fake *f = fake_start(NONE);
	f->thp[0] = nhuge == 2;
	f->thp[1] = true;
	struct tb_live *l = live_start(f);
	unsigned r = rounds(l, f, 2000, all_fast);
	assert_true(r < 2000);
	assert_true(all_fast(f));
	assert_int_equal(tb_live_counter(l, TB_L_thp_found), nhuge);
	assert_int_equal(f->thp_moves, nhuge);
	assert_int_equal(ec(l, TB_C_thp_migration_success), nhuge);
	assert_int_equal(ec(l, TB_C_pgpromote_success), PAGES);
	assert_no_failed_move(l);
	assert_engine_true(l, f);
	stop(l, f);
}

static void test_huge_pages_whole(void **state)
{
	(void)state;
	promoted_with_huge_pages(2);
}

/* One huge page, the other half base pages */
static void test_huge_and_base_pages(void **state)
{
	(void)state;
	promoted_with_huge_pages(1);
}

/* A huge page another process maps too is not migrated, as the kernel's NUMA balancing does not */
static void test_shared_huge_page_stays(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	f->thp[0] = f->thp[1] = true;
	f->thp_shared = true;
	struct tb_live *l = live_start(f);
	rounds(l, f, 300, NULL);
	assert_int_equal(on_node(f, 1), PAGES);
	assert_int_equal(f->thp_moves, 0);
	assert_true(ec(l, TB_C_promote_fail_shared) > 0);
	assert_int_equal(ec(l, TB_C_pgpromote_success), 0);
	assert_engine_true(l, f);
	stop(l, f);
}

/* The kernel splits a huge page behind tierbal's back and half of it goes back to the slow node
 * (reclaim, another mover): the split is found, its pages are found where they are and promoted
 * again as base pages */
static void test_split_found(void **state)
{
	(void)state;
	struct fake *f = fake_start(NONE);
	f->thp[0] = f->thp[1] = true;
	struct tb_live *l = live_start(f);
	rounds(l, f, 2000, all_fast);
	assert_true(all_fast(f));
	f->thp[1] = false;
	for (unsigned i = 512; i < 768; i++)
		f->node[i] = 1;
	uint64_t before = ec(l, TB_C_pgpromote_success);
	rounds(l, f, 2000, all_fast);
	assert_true(all_fast(f));
	assert_int_equal(tb_live_counter(l, TB_L_thp_split_found), 1);
	assert_int_equal(ec(l, TB_C_pgpromote_success) - before, 256);
	assert_int_equal(f->thp_moves, 2);
	assert_no_failed_move(l);
	assert_engine_true(l, f);
	stop(l, f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		live_test(test_no_failure, NONE),
		live_test(test_busy_pages, BUSY_ONCE),
		live_test(test_full_fast_node, NOMEM),
		live_test(test_failing_calls, CALL_FAILS),
		live_test(test_exit_before_move, EXIT_IN_MOVE),
		cmocka_unit_test(test_pid_reuse),
		cmocka_unit_test(test_unreliable_samples),
		cmocka_unit_test(test_hot_pages_stay),
		cmocka_unit_test(test_huge_pages_whole),
		cmocka_unit_test(test_huge_and_base_pages),
		cmocka_unit_test(test_shared_huge_page_stays),
		cmocka_unit_test(test_split_found),
	};
	return tb_test_run("live", tests, sizeof(tests) / sizeof(tests[0]));
}
