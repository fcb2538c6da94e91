/* Workloads: processes with anon and page-cache regions, an access
 * distribution each, read/write mix, and phases that move the hot set. */
#ifndef TB_WORKLOAD_H
#define TB_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WL_MAX_PROCS 16
#define WL_MAX_PHASES 64

enum dist_kind { DIST_UNIFORM, DIST_GAUSSIAN, DIST_ZIPF, DIST_TRACE };

struct trace;

struct region_spec {
	enum dist_kind kind;
	uint64_t pages;
	double center; /* gaussian mean, as a fraction of the region */
	double stddev; /* gaussian sigma, as a fraction of the region */
	double zipf_s; /* zipf exponent */
};

struct proc_spec {
	char name[32];
	unsigned cpu_node;
	unsigned cpu_node_line; /* where the file set it; 0: the default */
	double weight;     /* share of all accesses, relative to the other processes */
	double read_ratio; /* reads / (reads + writes) */
	double file_share; /* share of its accesses that go to the page cache */
	double think_ns;   /* compute time between two accesses */
	bool prefault;     /* touch every page before the run, in address order */
	bool file_first;   /* prefault the page cache before the anon region */
	struct region_spec anon, file;
	char trace_path[512]; /* after loading: the path the trace was read from */
	struct trace *trace;
	unsigned seen;
};

struct phase_spec {
	char name[32];
	double at_s;
	int proc;
	unsigned set; /* which fields below the phase changes */
	struct region_spec anon;
	double read_ratio;
};

#define PH_CENTER 1u
#define PH_STDDEV 2u
#define PH_DIST 4u
#define PH_ZIPF 8u
#define PH_READ 16u

struct workload {
	char name[64];
	char description[256];
	char source[512];
	double duration_s;
	double interval_s;
	unsigned nr_procs;
	struct proc_spec proc[WL_MAX_PROCS];
	unsigned nr_phases;
	struct phase_spec phase[WL_MAX_PHASES];
};

int workload_load(struct workload *w, const char *name, char *err, size_t errlen);
int workload_parse(struct workload *w, const char *label, const char *text, char *err, size_t errlen);
void workload_free(struct workload *w);
uint64_t workload_pages(const struct workload *w);

#endif
