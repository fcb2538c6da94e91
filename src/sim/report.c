/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sim/report.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

double tb_report_oracle_pct(const struct tb_report *r, const struct tb_sim_result *res)
{
	if (!r->oracle || r->oracle->score <= 0)
		return -1;
	return 100.0 * res->score / r->oracle->score;
}

static void describe(FILE *f, const struct tb_report *r)
{
	const struct tb_machine *m = r->machine;
	double fast = 0, slow = 0;
	for (unsigned i = 0; i < m->nr_nodes; i++) {
		double gib = (double)m->node[i].capacity_pages / 262144.0;
		if (m->node[i].tier == 0)
			fast += gib;
		else
			slow += gib;
	}
	const struct tb_workload *w = r->workload;
	fprintf(f, "machine  %s: %u nodes, %.1f GiB fast + %.1f GiB slow (%s)\n", m->name, m->nr_nodes, fast, slow,
		m->source);
	fprintf(f, "workload %s: %u process%s, %.2f GiB (%s)\n", w->name, w->nr_procs, w->nr_procs == 1 ? "" : "es",
		(double)tb_workload_pages(w) / 262144.0, w->source);
	fprintf(f, "run      %.1f s modeled, seed %llu\n\n", r->duration_s, (unsigned long long)r->seed);
}

static int sweep_width(const struct tb_report *r)
{
	return strlen(r->sweep_knob) > 14 ? (int)strlen(r->sweep_knob) : 14;
}

static void table_row(FILE *f, const struct tb_report *r, const struct tb_sim_result *res)
{
	if (r->sweep_knob)
		fprintf(f, "%-*s ", sweep_width(r), r->sweep_value);
	const uint64_t *c = res->counters;
	double pct = tb_report_oracle_pct(r, res);
	char pcts[16];
	if (pct < 0)
		snprintf(pcts, sizeof(pcts), "-");
	else
		snprintf(pcts, sizeof(pcts), "%.1f%%", pct);
	fprintf(f, "%-14s %9.3f %9.1f %7.1f%% %8s %10llu %10llu %11llu %9llu\n", res->policy, res->score / 1e6,
		res->mean_latency_ns, 100.0 * res->fast_share, pcts, (unsigned long long)c[TB_C_pgpromote_success],
		(unsigned long long)c[TB_C_pgdemote_kswapd] + (unsigned long long)c[TB_C_pgdemote_direct],
		(unsigned long long)c[TB_C_numa_hint_faults],
		(unsigned long long)c[TB_C_pingpong_promote_demote] +
			(unsigned long long)c[TB_C_pingpong_demote_promote]);
}

static void table_head(FILE *f, const struct tb_report *r)
{
	if (r->sweep_knob)
		fprintf(f, "%-*s ", sweep_width(r), r->sweep_knob);
	fprintf(f, "%-14s %9s %9s %8s %8s %10s %10s %11s %9s\n", "policy", "score", "mean lat", "fast", "% of",
		"promoted", "demoted", "hint", "ping-");
	if (r->sweep_knob)
		fprintf(f, "%-*s ", sweep_width(r), "");
	fprintf(f, "%-14s %9s %9s %8s %8s %10s %10s %11s %9s\n", "", "Macc/s", "ns", "share", "oracle", "pages",
		"pages", "faults", "pong");
}

static void table_rows(FILE *f, const struct tb_report *r)
{
	for (size_t i = 0; i < r->nr_results; i++)
		table_row(f, r, &r->results[i]);
	if (r->oracle)
		table_row(f, r, r->oracle);
}

static const char table_caption[] = "\nscore: modeled accesses per second (latency, hint faults and migrations "
				    "included); fast share: accesses served by the top tier.\n";

static void huge_row(FILE *f, const struct tb_report *r, const struct tb_sim_result *res, bool last)
{
	(void)r;
	(void)last;
	const uint64_t *c = res->counters;
	fprintf(f, "%-14s %9.1f%% %10llu %10llu %10llu %10llu\n", res->policy,
		res->anon_pages ? 100.0 * (double)res->anon_huge_pages / (double)res->anon_pages : 0.0,
		(unsigned long long)c[TB_C_thp_migration_success], (unsigned long long)c[TB_C_thp_migration_fail],
		(unsigned long long)c[TB_C_thp_migration_split] + (unsigned long long)c[TB_C_thp_split_page],
		(unsigned long long)c[TB_C_thp_fault_fallback]);
}

static void each_result(const struct tb_report *r,
			void (*fn)(FILE *, const struct tb_report *, const struct tb_sim_result *, bool), FILE *f);

/* Only a run with huge pages gets their table, so the others read as before. */
static void huge_table(FILE *f, const struct tb_report *r)
{
	bool any = r->oracle && r->oracle->anon_huge_pages;
	for (size_t i = 0; i < r->nr_results; i++)
		any |= r->results[i].counters[TB_C_thp_fault_alloc] != 0;
	if (!any)
		return;
	fprintf(f, "\n%-14s %10s %10s %10s %10s %10s\n", "huge pages", "anon huge", "migrated", "failed", "split",
		"fallback");
	fprintf(f, "%-14s %10s %10s %10s %10s %10s\n", "", "at end", "", "", "", "faults");
	each_result(r, huge_row, f);
	fputs("\nanon huge: share of anon memory in huge pages at the end (AnonHugePages); migrated, failed: "
	      "thp_migration_success, _fail; split: thp_split_page + thp_migration_split; fallback faults: "
	      "thp_fault_fallback.\n",
	      f);
}

void tb_report_table(FILE *f, const struct tb_report *r)
{
	describe(f, r);
	table_head(f, r);
	table_rows(f, r);
	fputs(table_caption, f);
	huge_table(f, r);
}

static void each_result(const struct tb_report *r,
			void (*fn)(FILE *, const struct tb_report *, const struct tb_sim_result *, bool), FILE *f)
{
	size_t n = r->nr_results + (r->oracle ? 1 : 0);
	for (size_t i = 0; i < n; i++)
		fn(f, r, i < r->nr_results ? &r->results[i] : r->oracle, i + 1 == n);
}

static void csv_rows(FILE *f, const struct tb_report *r, const struct tb_sim_result *res, bool last)
{
	(void)r;
	(void)last;
	for (size_t i = 0; i < res->nr_rows; i++) {
		const struct tb_sim_row *w = &res->rows[i];
		fprintf(f, "%s,%.3f,%llu,%.6g,%.6g,%.6g,%llu,%llu,%llu,%llu,%u,%.6g,%.6g,%.6g\n", res->policy, w->t_s,
			(unsigned long long)w->accesses, w->score, w->mean_latency_ns, w->fast_share,
			(unsigned long long)w->promoted, (unsigned long long)w->demoted,
			(unsigned long long)w->hint_faults, (unsigned long long)w->pingpong, w->threshold_ms,
			w->promote_mbps, w->fast_free_mib, w->boost_mib);
	}
}

void tb_report_csv(FILE *f, const struct tb_report *r)
{
	fprintf(f, "policy,t_s,accesses,score,mean_latency_ns,fast_share,promoted,demoted,hint_faults,pingpong,"
		   "threshold_ms,promote_mbps,fast_free_mib,boost_mib\n");
	each_result(r, csv_rows, f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
	else
		fputs("null", f);
}

/* ', "key": value' */
static void jnum(FILE *f, const char *key, double v)
{
	fprintf(f, ", \"%s\": ", key);
	json_num(f, v);
}

static void jint(FILE *f, const char *key, unsigned long long v)
{
	fprintf(f, ", \"%s\": %llu", key, v);
}

static void json_result(FILE *f, const struct tb_report *r, const struct tb_sim_result *res, bool last);

static void json_result_more(FILE *f, const struct tb_report *r, const struct tb_sim_result *res, bool last)
{
	(void)last;
	json_result(f, r, res, false);
}

static void csv_summary(FILE *f, const struct tb_report *r, const struct tb_sim_result *res, bool last)
{
	(void)last;
	const uint64_t *c = res->counters;
	double pct = tb_report_oracle_pct(r, res);
	fprintf(f, "%s,%s,%s,%.6g,%.6g,%.6g,", r->sweep_knob, r->sweep_value, res->policy, res->score,
		res->mean_latency_ns, res->fast_share);
	if (pct >= 0)
		fprintf(f, "%.6g", pct);
	fprintf(f, ",%llu,%llu,%llu,%llu\n", (unsigned long long)c[TB_C_pgpromote_success],
		(unsigned long long)c[TB_C_pgdemote_kswapd] + (unsigned long long)c[TB_C_pgdemote_direct],
		(unsigned long long)c[TB_C_numa_hint_faults],
		(unsigned long long)c[TB_C_pingpong_promote_demote] +
			(unsigned long long)c[TB_C_pingpong_demote_promote]);
}

void tb_report_sweep(FILE *f, const struct tb_report *reps, size_t n, const char *format)
{
	if (!strcmp(format, "json")) {
		fputs("[\n", f);
		for (size_t i = 0; i < n; i++)
			each_result(&reps[i], i + 1 < n ? json_result_more : json_result, f);
		fputs("]\n", f);
	} else if (!strcmp(format, "csv")) {
		fputs("knob,value,policy,score,mean_latency_ns,fast_share,oracle_pct,promoted,demoted,hint_faults,"
		      "pingpong\n",
		      f);
		for (size_t i = 0; i < n; i++)
			each_result(&reps[i], csv_summary, f);
	} else {
		describe(f, &reps[0]);
		table_head(f, &reps[0]);
		for (size_t i = 0; i < n; i++)
			table_rows(f, &reps[i]);
		fputs(table_caption, f);
		for (size_t i = 0; i < n; i++)
			huge_table(f, &reps[i]);
	}
}

static void json_result(FILE *f, const struct tb_report *r, const struct tb_sim_result *res, bool last)
{
	fputs("  {\"policy\": ", f);
	json_str(f, res->policy);
	fputs(", \"machine\": ", f);
	json_str(f, r->machine->name);
	fputs(", \"workload\": ", f);
	json_str(f, r->workload->name);
	if (r->sweep_knob) {
		fputs(", \"sweep\": {\"knob\": ", f);
		json_str(f, r->sweep_knob);
		fputs(", \"value\": ", f);
		json_str(f, r->sweep_value);
		fputc('}', f);
	}
	jint(f, "seed", (unsigned long long)r->seed);
	jnum(f, "duration_s", r->duration_s);
	fputs("\n  ", f);
	jnum(f, "score", res->score);
	jnum(f, "mean_latency_ns", res->mean_latency_ns);
	jnum(f, "fast_share", res->fast_share);
	double pct = tb_report_oracle_pct(r, res);
	jnum(f, "oracle_pct", pct < 0 ? NAN : pct);
	jint(f, "accesses", (unsigned long long)res->accesses);
	jnum(f, "modeled_seconds", res->modeled_s);
	jnum(f, "anon_fast_share", res->anon_pages ? (double)res->anon_fast_pages / (double)res->anon_pages : 0);
	jnum(f, "slow_read_share", res->reads ? (double)res->slow_reads / (double)res->reads : 0);
	jnum(f, "overhead_seconds", res->overhead_ns / 1e9);
	jnum(f, "kswapd_seconds", res->background_ns / 1e9);
	jnum(f, "wall_seconds", res->wall_s);
	fputs(",\n   \"counters\": {", f);
	for (unsigned c = 0; c < TB_NR_COUNTERS; c++)
		fprintf(f, "%s\"%s\": %llu", c ? ", " : "", tb_counter_name((enum tb_counter)c),
			(unsigned long long)res->counters[c]);
	fputs("},\n   \"series\": [", f);
	for (size_t i = 0; i < res->nr_rows; i++) {
		const struct tb_sim_row *w = &res->rows[i];
		fprintf(f, "%s\n    {\"t_s\": %.3f", i ? "," : "", w->t_s);
		jint(f, "accesses", (unsigned long long)w->accesses);
		jnum(f, "score", w->score);
		jnum(f, "mean_latency_ns", w->mean_latency_ns);
		jnum(f, "fast_share", w->fast_share);
		jint(f, "promoted", (unsigned long long)w->promoted);
		jint(f, "demoted", (unsigned long long)w->demoted);
		jint(f, "hint_faults", (unsigned long long)w->hint_faults);
		jint(f, "pingpong", (unsigned long long)w->pingpong);
		jint(f, "threshold_ms", w->threshold_ms);
		jnum(f, "promote_mbps", w->promote_mbps);
		jnum(f, "fast_free_mib", w->fast_free_mib);
		jnum(f, "boost_mib", w->boost_mib);
		fputc('}', f);
	}
	fprintf(f, "]}%s\n", last ? "" : ",");
}

void tb_report_json(FILE *f, const struct tb_report *r)
{
	fputs("[\n", f);
	each_result(r, json_result, f);
	fputs("]\n", f);
}
