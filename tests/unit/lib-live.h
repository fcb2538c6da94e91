/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The live path's tests' fake kernel: a real child process with a region of
 * PAGES pages, a made-up two-node machine whose placement the fake keeps
 * (move_pages and node sizes through tb_live_mem_ops), samplers that see the
 * region in use; and the fixture that starts one of each per test. */
#ifndef TB_LIB_LIVE_H
#define TB_LIB_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "access/access.h"
#include "daemon/dconfig.h"
#include "daemon/live.h"
#include "exec/rt_proto.h"
#include "exec/uffd.h"
#include "linux/topology.h"

#define PAGES 1024u       /* two huge pages' worth, 2 MiB-aligned */
#define NODE_PAGES 16384u /* 64 MiB per node */

enum inject { NONE, BUSY_ONCE, NOMEM, CALL_FAILS, EXIT_IN_MOVE };

struct fake {
	enum inject mode;
	pid_t child;
	uintptr_t base;
	int node[PAGES];        /* where each page of the region is */
	bool tried[PAGES];      /* BUSY_ONCE: attempted before */
	unsigned cap0;          /* NOMEM: node 0 holds at most this many of them */
	unsigned failing_calls; /* CALL_FAILS: this many whole calls fail first */
	unsigned others;        /* pages of node 0 that other programs and the kernel hold */
	uint64_t calls, busy, nomem, call_errors, moves_after_exit;
	size_t most_in_call; /* the largest move to node 0 in one call */
	bool exited;
	bool thp[PAGES / 512]; /* the kernel holds these 2 MiB of the region as one huge page */
	bool thp_shared;       /* ... mapped by another process too */
	uint64_t thp_moves;    /* moves of a huge page (whole, from any of its addresses) */
};

/* how many pages of the region are on NODE; the fake's move_pages and node sizes */
unsigned on_node(const struct fake *f, int node);
extern const struct tb_live_mem_ops fake_mem;

/* samplers: every page of the region in use; its second half only; every page, but the first
 * half's samples taken back */
extern const struct tb_access_ops all_hot;
extern const struct tb_access_ops hot_half;
extern const struct tb_access_ops half_unreliable;

/* a child with the region on node 1; under tierbal exec, with the real runtime loaded and its
 * userfaultfd in *uffd */
struct fake *fake_start(enum inject mode);
struct fake *fake_start_exec(int *uffd);

/* the made-up machine, and a live context on it managing the child */
void two_nodes(struct tb_topology *topo, struct tb_dconfig *dc);
struct tb_live *live_start_sampler(struct fake *f, struct tb_access sampler, struct tb_uffd *u);
struct tb_live *live_start_with(struct fake *f, const struct tb_access_ops *sampler);
struct tb_live *live_start(struct fake *f);

/* rounds until DONE (or MAX), the engine checked after each; checks that the engine's view is
 * true to the fake's; ends the context and the child */
unsigned rounds(struct tb_live *l, struct fake *f, unsigned max, bool (*done)(const struct fake *));
bool all_fast(const struct fake *f);
unsigned hot_fast(const struct fake *f);
bool hot_half_fast(const struct fake *f);
void assert_engine_true(struct tb_live *l, struct fake *f);
void stop(struct tb_live *l, struct fake *f);

/* The real runtime in a child, with a park area, and tierbal's end of its
 * sockets, for the test_exec_* tests. */
struct rt_session {
	int lfd, ffd; /* the hello and fork sockets */
	char name[108];
	int uffd;
	struct tb_rt_hello h;
	struct tb_uffd_rt rd;
};

const char *rt_lib(void);
void rt_listen(struct rt_session *r);
void rt_load(const struct rt_session *r, const char *lib);
void rt_accept(struct rt_session *r, pid_t child);
void rt_close(struct rt_session *r);

/* The fixture: a child with the fake's MODE, under a live context with the all_hot sampler. */
struct live_fixture {
	struct fake *f;
	struct tb_live *l;
};
int live_setup(void **state);
int live_teardown(void **state);
#define live_test(fn, mode)                                                                                            \
	cmocka_unit_test_prestate_setup_teardown(fn, live_setup, live_teardown, (void *)(uintptr_t)(mode))

#endif
