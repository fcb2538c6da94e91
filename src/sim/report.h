/* Output of a set of simulations: summary table, CSV time series, JSON. */
#ifndef TB_REPORT_H
#define TB_REPORT_H

#include <stdio.h>

#include "sim/sim.h"

struct report {
	const struct machine *machine;
	const struct workload *workload;
	uint64_t seed;
	double duration_s;
	const struct sim_result *results;
	size_t nr_results;
	const struct sim_result *oracle; /* NULL when not run */
	const char *sweep_knob, *sweep_value; /* set in a sweep */
};

void report_table(FILE *f, const struct report *r);
void report_csv(FILE *f, const struct report *r);
void report_json(FILE *f, const struct report *r);
/* A sweep: one report per knob value, printed as one table, CSV or JSON array. */
void report_sweep(FILE *f, const struct report *reps, size_t n, const char *format);
/* % of the oracle's score, or a negative number without an oracle */
double report_oracle_pct(const struct report *r, const struct sim_result *res);

#endif
