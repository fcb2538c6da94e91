/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One simulation: a machine, a workload, a policy (or the oracle), a seed. */
#ifndef TB_SIM_H
#define TB_SIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "sim/machine.h"
#include "sim/workload.h"

struct tb_sim_config {
	const struct tb_machine *machine;
	const struct tb_workload *workload;
	struct tb_knobs knobs;
	uint32_t policy;
	bool oracle; /* static best placement per phase instead of a policy */
	uint64_t seed;
	double duration_s;
	double interval_s;
	bool check;                          /* check the engine's invariants every interval */
	_Atomic unsigned *progress_permille; /* optional: updated every interval */
};

struct tb_sim_row {
	double t_s;
	uint64_t accesses;
	double score, mean_latency_ns, fast_share;
	uint64_t promoted, demoted, hint_faults, pingpong;
	uint32_t threshold_ms;
	double promote_mbps, fast_free_mib, boost_mib;
};

struct tb_sim_result {
	char policy[32];
	uint64_t accesses, fast_accesses, reads, slow_reads;
	double modeled_s;
	double overhead_ns;   /* hint faults, scanning and synchronous migrations, in the modeled time */
	double background_ns; /* kswapd's migrations, on its own CPU */
	double score, mean_latency_ns, fast_share;
	uint64_t anon_pages, anon_fast_pages; /* at the end of the run */
	uint64_t anon_huge_pages;             /* of them, in huge pages (AnonHugePages) */
	uint64_t counters[TB_NR_COUNTERS];
	struct tb_sim_row *rows;
	size_t nr_rows;
	double wall_s;
	uint64_t checks; /* invariant checks passed */
};

int tb_sim_run(const struct tb_sim_config *cfg, struct tb_sim_result *res, char *err, size_t errlen);
void tb_sim_result_free(struct tb_sim_result *r);

#endif
