/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Output of a set of simulations: summary table, CSV time series, JSON. */
#ifndef TB_REPORT_H
#define TB_REPORT_H

#include <stdio.h>

#include "sim/sim.h"

struct tb_report {
	const struct tb_machine *machine;
	const struct tb_workload *workload;
	uint64_t seed;
	double duration_s;
	const struct tb_sim_result *results;
	size_t nr_results;
	const struct tb_sim_result *oracle;   /* NULL when not run */
	const char *sweep_knob, *sweep_value; /* set in a sweep */
};

void tb_report_table(FILE *f, const struct tb_report *r);
void tb_report_csv(FILE *f, const struct tb_report *r);
void tb_report_json(FILE *f, const struct tb_report *r);
/* A sweep: one report per knob value, printed as one table, CSV or JSON array. */
void tb_report_sweep(FILE *f, const struct tb_report *reps, size_t n, const char *format);
/* % of the oracle's score, or a negative number without an oracle */
double tb_report_oracle_pct(const struct tb_report *r, const struct tb_sim_result *res);

#endif
