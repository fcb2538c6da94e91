/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs in the guest: moves this process's pages between node 0 and node 1
 * with tb_mover and checks placement (move_pages with nodes = NULL), the
 * counters, and that every byte survives the moves. */
#include <errno.h>
#include <numa.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "linux/mover.h"
#include "pages.h"

static int pass, fail;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	ok ? pass++ : fail++;
}

static size_t on_node(void **pages, size_t n, int node)
{
	size_t c;
	return tb_mover_count(0, pages, n, node, &c) ? 0 : c;
}

int main(void)
{
	if (numa_available() < 0 || numa_max_node() < 1) {
		printf("FAIL this test needs two NUMA nodes\n");
		return 1;
	}
	size_t psz = TB_PAGE, n = (64u << 20) / psz; /* the pattern is per 4 KiB page, as x86 has */
	char *buf = numa_alloc_onnode(n * psz, 1);
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	if (!buf || !pages || !status) {
		printf("FAIL out of memory\n");
		return 1;
	}
	madvise(buf, n * psz, MADV_NOHUGEPAGE); /* count 4 KiB pages, as the daemon will */
	for (size_t p = 0; p < n; p++) {
		tb_page_fill(buf + p * psz, 0, p, 0);
		pages[p] = buf + p * psz;
	}
	check(on_node(pages, n, 1) == n, "64 MiB allocated on node 1");

	struct tb_mover_stats st = {0};
	int rc = tb_mover_move(0, pages, n, 0, status, &st);
	check(rc == 0, "move to node 0 went through");
	check(st.moved == n && st.busy + st.nomem + st.gone + st.other == 0, "every page counted as moved");
	check(st.calls == (n + TB_MOVE_BATCH - 1) / TB_MOVE_BATCH, "in batches of TB_MOVE_BATCH pages");
	check(on_node(pages, n, 0) == n, "placement query: all on node 0");
	check(tb_pages_bad(buf, n, 0, 0, NULL) == 0, "no byte changed by the move");

	/* half back to node 1, then write while they sit there, then check */
	memset(&st, 0, sizeof(st));
	rc = tb_mover_move(0, pages, n / 2, 1, status, &st);
	check(rc == 0 && st.moved == n / 2, "half moved back to node 1");
	check(on_node(pages, n, 1) == n / 2 && on_node(pages, n, 0) == n - n / 2, "placement split as asked");
	check(tb_pages_bad(buf, n, 0, 0, NULL) == 0, "still intact after the second move");

	/* a page that is no longer mapped is counted as gone, not as a failure of the call */
	munmap(buf + (n - 1) * psz, psz);
	memset(&st, 0, sizeof(st));
	rc = tb_mover_move(0, pages + n - 2, 2, 1, status, &st);
	check(rc == 0 && st.moved == 1 && st.gone == 1, "an unmapped page is counted as gone");

	/* a process that does not exist fails the whole call */
	memset(&st, 0, sizeof(st));
	rc = tb_mover_move(999999, pages, 1, 1, status, &st);
	check(rc == -ESRCH, "a pid that does not exist: -ESRCH");
	check(tb_mover_move(0, pages, 1, 42, status, &st) == -EINVAL, "a node that does not exist: -EINVAL");

	printf("mover: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
