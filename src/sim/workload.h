/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Workloads: processes with anon and page-cache regions, an access
 * distribution each, read/write mix, and phases that move the hot set. */
#ifndef TB_WORKLOAD_H
#define TB_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_WL_MAX_PROCS 16
#define TB_WL_MAX_PHASES 64

enum tb_dist_kind { TB_DIST_UNIFORM, TB_DIST_GAUSSIAN, TB_DIST_ZIPF, TB_DIST_TRACE };

struct tb_trace;

/* /sys/kernel/mm/transparent_hugepage/enabled, per process */
enum tb_thp_mode { TB_THP_NEVER, TB_THP_MADVISE, TB_THP_ALWAYS };
const char *tb_thp_mode_name(enum tb_thp_mode m);

struct tb_region_spec {
	enum tb_dist_kind kind;
	uint64_t pages;
	double center; /* gaussian mean, as a fraction of the region */
	double stddev; /* gaussian sigma, as a fraction of the region */
	double zipf_s; /* zipf exponent */
};

struct tb_proc_spec {
	char name[32];
	unsigned cpu_node;
	unsigned cpu_node_line; /* where the file set it; 0: the default */
	double weight;          /* share of all accesses, relative to the other processes */
	double read_ratio;      /* reads / (reads + writes) */
	double file_share;      /* share of its accesses that go to the page cache */
	double think_ns;        /* compute time between two accesses */
	bool prefault;          /* touch every page before the run, in address order */
	bool file_first;        /* prefault the page cache before the anon region */
	enum tb_thp_mode thp;   /* which anon memory may be backed by huge pages */
	double madvise_share;   /* share of the anon region under MADV_HUGEPAGE, from its start */
	struct tb_region_spec anon, file;
	char trace_path[512]; /* after loading: the path the trace was read from */
	struct tb_trace *trace;
	unsigned seen;
};

struct tb_phase_spec {
	char name[32];
	double at_s;
	int proc;
	unsigned set; /* which fields below the phase changes */
	struct tb_region_spec anon;
	double read_ratio;
};

#define TB_PH_CENTER 1u
#define TB_PH_STDDEV 2u
#define TB_PH_DIST 4u
#define TB_PH_ZIPF 8u
#define TB_PH_READ 16u

struct tb_workload {
	char name[64];
	char description[256];
	char source[512];
	double duration_s;
	double interval_s;
	unsigned nr_procs;
	struct tb_proc_spec proc[TB_WL_MAX_PROCS];
	unsigned nr_phases;
	struct tb_phase_spec phase[TB_WL_MAX_PHASES];
};

int tb_workload_load(struct tb_workload *w, const char *name, char *err, size_t errlen);
int tb_workload_parse(struct tb_workload *w, const char *label, const char *text, char *err, size_t errlen);
void tb_workload_free(struct tb_workload *w);
uint64_t tb_workload_pages(const struct tb_workload *w);

#endif
