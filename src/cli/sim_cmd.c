/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal sim: parse the command line, run each policy (and the oracle) on
 * its own thread, print the comparison. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "sim/builtin.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "sim/sim.h"
#include "sim/workload.h"
#include "util/clock.h"
#include "util/outfile.h"
#include "cli/cli.h"

#define MAX_THREADS 64

static const char default_policies[] = "none,always,hot-threshold,active-lru,combined";

static void sim_usage(FILE *f)
{
	fprintf(f,
		"usage: tierbal sim [--machine NAME|FILE] [--workload NAME|FILE] [--policy P[,P...]]\n"
		"                   [--duration S] [--seed N] [--format table|csv|json] [--out FILE]\n"
		"                   [--set KNOB=VALUE]... [--interval S] [--no-oracle] [--check]\n"
		"                   [--sweep KNOB=V1,V2,...] [--jobs N] [--quiet]\n"
		"       tierbal sim --list\n"
		"\n"
		"Simulates a tiered-memory machine running a workload under each policy and\n"
		"compares them with the oracle (best static placement per phase).\n"
		"\n"
		"  --machine NAME|FILE   shipped machine or machine file (default: small)\n"
		"  --workload NAME|FILE  shipped workload or workload file (default: gauss)\n"
		"  --policy P[,P...]     none, always, hot-threshold, active-lru, combined, adaptive, or\n"
		"                        flags joined with '+' (default: %s)\n"
		"  --duration S          modeled seconds (default: the workload's duration_s)\n"
		"  --seed N              random seed; the same seed gives the same output (default: 1)\n"
		"  --format F            table (summary), csv (time series) or json (both) (default: table)\n"
		"  --out FILE            write there instead of standard output\n"
		"  --set KNOB=VALUE      set an engine knob, e.g. numa_balancing_hot_threshold_ms=500\n"
		"  --interval S          time-series interval in modeled seconds (default: the workload's)\n"
		"  --no-oracle           skip the oracle run (oracle_pct is then null)\n"
		"  --check               check the engine's invariants at every interval\n"
		"  --sweep KNOB=V1,V2... run every policy for each value of KNOB (independent\n"
		"                        simulations on all CPUs) and print one table\n"
		"  --jobs N              simulations run in parallel (default: number of CPUs)\n"
		"  --quiet               no progress on standard error\n"
		"  --list                name the shipped machines, workloads, policies and knobs\n"
		"\n"
		"Exit status: 0 success, 1 a simulation failed, 2 bad usage or input.\n",
		default_policies);
}

static void list_all(void)
{
	const char *kinds[] = {"machines", "workloads"};
	for (int k = 0; k < 2; k++) {
		printf("%s:\n", kinds[k]);
		for (size_t i = 0; i < tb_nr_builtins; i++) {
			if (strcmp(tb_builtins[i].kind, kinds[k]))
				continue;
			char err[256] = "";
			char desc[256] = "";
			if (k == 0) {
				struct tb_machine m;
				if (!tb_machine_parse(&m, tb_builtins[i].name, tb_builtins[i].text, err, sizeof(err)))
					snprintf(desc, sizeof(desc), "%s", m.description);
			} else {
				struct tb_workload w;
				if (!tb_workload_parse(&w, tb_builtins[i].name, tb_builtins[i].text, err,
						       sizeof(err))) {
					snprintf(desc, sizeof(desc), "%s", w.description);
					tb_workload_free(&w);
				}
			}
			printf("  %-14s %s\n", tb_builtins[i].name, desc[0] ? desc : err);
		}
	}
	printf("policies:\n"
	       "  none           no NUMA balancing: pages stay where they were allocated\n"
	       "  always         promote on every slow-tier hint fault (the kernel's tiering mode, v13 patch)\n"
	       "  hot-threshold  promote if scan-to-fault latency < threshold, rate limited (the kernel, 6.1)\n"
	       "  active-lru     promote only pages on the active LRU (TPP)\n"
	       "  combined       hot-threshold + active-lru\n"
	       "  adaptive       tierbal's: hot threshold steered by ping-pong, scanner slowed by useless faults\n"
	       "  oracle         best static placement per phase (always run as the upper bound)\n"
	       "transparent huge pages (workload file, [process NAME] thp = MODE):\n"
	       "  never          anon memory in 4 KiB pages only (the default)\n"
	       "  madvise        huge pages for the share madvise_hugepage (default 1) of anon memory, on any node\n"
	       "  always         huge pages for all anon memory, on the CPU's node only, except the madvised share\n"
	       "knobs (--set NAME=VALUE):\n");
	size_t n;
	const struct tb_knob_desc *d = tb_knob_table(&n);
	struct tb_knobs k;
	tb_knobs_default(&k);
	for (size_t i = 0; i < n; i++) {
		char v[32];
		tb_knob_format(&k, &d[i], v, sizeof(v));
		printf("  %-40s %-7s %-8s %s\n", d[i].name, v, d[i].origin, d[i].help);
	}
}

struct job {
	struct tb_sim_config cfg;
	struct tb_sim_result res;
	int rc;
	char err[512];
	_Atomic unsigned permille;
};

struct pool {
	struct job *jobs;
	size_t nr_jobs;
	_Atomic size_t next, done;
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		if (i >= p->nr_jobs)
			return NULL;
		struct job *j = &p->jobs[i];
		j->rc = tb_sim_run(&j->cfg, &j->res, j->err, sizeof(j->err));
		atomic_store(&j->permille, 1000);
		atomic_fetch_add(&p->done, 1);
	}
}

static double mono(void)
{
	return (double)tb_mono_ns() / 1e9;
}

/* Progress for people: a line every few seconds while simulations run. */
static void watch(struct pool *p, bool quiet)
{
	double start = mono(), last = start;
	bool tty = isatty(STDERR_FILENO);
	while (atomic_load(&p->done) < p->nr_jobs) {
		struct timespec pause = {0, 100L * 1000 * 1000};
		nanosleep(&pause, NULL);
		double now = mono();
		if (quiet || now - start < 2 || now - last < (tty ? 0.5 : 5))
			continue;
		unsigned sum = 0;
		for (size_t i = 0; i < p->nr_jobs; i++)
			sum += atomic_load(&p->jobs[i].permille);
		fprintf(stderr, "%stierbal sim: %5.1f%% of %zu simulations, %.0f s%s", tty ? "\r" : "",
			sum / 10.0 / (double)p->nr_jobs, p->nr_jobs, now - start, tty ? "" : "\n");
		last = now;
	}
	if (tty && !quiet && mono() - start >= 2)
		fputc('\n', stderr);
}

int tb_sim_parse_options(int argc, char **argv, struct tb_sim_options *o)
{
	static const struct option longopts[] = {
		{"machine", required_argument, NULL, 'm'},
		{"workload", required_argument, NULL, 'w'},
		{"policy", required_argument, NULL, 'p'},
		{"duration", required_argument, NULL, 'd'},
		{"seed", required_argument, NULL, 's'},
		{"format", required_argument, NULL, 'f'},
		{"out", required_argument, NULL, 'o'},
		{"set", required_argument, NULL, 'k'},
		{"interval", required_argument, NULL, 'i'},
		{"no-oracle", no_argument, NULL, 'N'},
		{"check", no_argument, NULL, 'c'},
		{"jobs", required_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"list", no_argument, NULL, 'l'},
		{"sweep", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	*o = (struct tb_sim_options){.machine = "small",
				     .workload = "gauss",
				     .policies = default_policies,
				     .format = "table",
				     .seed = 1,
				     .oracle = true,
				     .duration = -1,
				     .interval = -1};
	tb_knobs_default(&o->knobs);
	opterr = 0;
	optind = 0; /* glibc: 0 also resets its state inside an option cluster, so parsing twice is safe */
	int c;
	char err[256];
	while ((c = getopt_long(argc, argv, ":m:w:p:d:s:f:o:k:i:j:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': o->machine = optarg; break;
		case 'w': o->workload = optarg; break;
		case 'p': o->policies = optarg; break;
		case 'f': o->format = optarg; break;
		case 'o': o->out = optarg; break;
		case 'S': o->sweep = optarg; break;
		case 'N': o->oracle = false; break;
		case 'c': o->check = true; break;
		case 'q': o->quiet = true; break;
		case 'l': o->list = true; break;
		case 'h': sim_usage(stdout); return 1;
		case 'd':
			if (tb_cli_real("sim", "--duration", optarg, 0.001, 1e7, &o->duration))
				return -EINVAL;
			break;
		case 'i':
			if (tb_cli_real("sim", "--interval", optarg, 0.001, 1e7, &o->interval))
				return -EINVAL;
			break;
		case 's': {
			unsigned long long v;
			if (tb_cli_whole("sim", "--seed", optarg, 0, ULLONG_MAX, &v))
				return -EINVAL;
			o->seed = v;
			break;
		}
		case 'j': {
			unsigned long long v;
			if (tb_cli_whole("sim", "--jobs", optarg, 1, 256, &v))
				return -EINVAL;
			o->jobs = (long)v;
			break;
		}
		case 'k':
			if (tb_knob_set(&o->knobs, optarg, err, sizeof(err))) {
				fprintf(stderr, "tierbal sim: --set: %s\n", err);
				return -EINVAL;
			}
			break;
		default: tb_cli_bad_option("sim", c, argv); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tierbal sim: unexpected argument '%s'\nTry 'tierbal sim --help'.\n", argv[optind]);
		return -EINVAL;
	}
	if (strcmp(o->format, "table") && strcmp(o->format, "csv") && strcmp(o->format, "json")) {
		fprintf(stderr, "tierbal sim: --format: '%s' is not table, csv or json\n", o->format);
		return -EINVAL;
	}
	return 0;
}

/* "KNOB=V1,V2,...": each value checked against the knob's range now, so a
 * typo fails before any simulation runs. */
int tb_sim_parse_sweep(const char *arg, const struct tb_knobs *base, char *knob, size_t knoblen, char values[][32],
		       struct tb_knobs *knobs, size_t *n)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || (size_t)(eq - arg) >= knoblen || !eq[1]) {
		fprintf(stderr, "tierbal sim: --sweep: '%s': expected KNOB=V1,V2,...\n", arg);
		return -EINVAL;
	}
	memcpy(knob, arg, (size_t)(eq - arg));
	knob[eq - arg] = '\0';
	*n = 0;
	for (const char *v = eq + 1; *v;) {
		size_t len = strcspn(v, ",");
		if (!len || len >= 32 || *n == TB_SIM_MAX_VALUES) {
			fprintf(stderr, "tierbal sim: --sweep: at most %d non-empty values of up to 31 characters\n",
				TB_SIM_MAX_VALUES);
			return -EINVAL;
		}
		char assign[160], err[256];
		snprintf(assign, sizeof(assign), "%s=%.*s", knob, (int)len, v);
		knobs[*n] = *base;
		if (tb_knob_set(&knobs[*n], assign, err, sizeof(err))) {
			fprintf(stderr, "tierbal sim: --sweep: %s\n", err);
			return -EINVAL;
		}
		snprintf(values[*n], 32, "%.*s", (int)len, v);
		(*n)++;
		v += len;
		if (*v == ',')
			v++;
	}
	return 0;
}

int tb_sim_parse_policies(const char *list, uint32_t *flags, size_t *n)
{
	char buf[512];
	size_t len = strlen(list);
	if (len >= sizeof(buf)) {
		fprintf(stderr, "tierbal sim: --policy: list too long\n");
		return -EINVAL;
	}
	memcpy(buf, list, len + 1);
	*n = 0;
	for (char *rest = buf, *tok; (tok = strsep(&rest, ","));) {
		if (!*tok) {
			fprintf(stderr,
				"tierbal sim: --policy: '%s' has an empty entry; name policies separated by single commas\n",
				list);
			return -EINVAL;
		}
		if (*n == TB_SIM_MAX_RUNS - 1) {
			fprintf(stderr, "tierbal sim: --policy: at most %d policies\n", TB_SIM_MAX_RUNS - 1);
			return -EINVAL;
		}
		if (tb_policy_parse(tok, &flags[*n])) {
			fprintf(stderr,
				"tierbal sim: --policy: '%s' is not a policy (none, always, hot-threshold, "
				"active-lru, combined, or flags joined with '+')\n",
				tok);
			return -EINVAL;
		}
		(*n)++;
	}
	if (!*n) {
		fprintf(stderr, "tierbal sim: --policy: empty list\n");
		return -EINVAL;
	}
	return 0;
}

/* Which input of the run the output file is, or NULL: writing it would
 * destroy what the run reads. */
static const char *refuses_out(const char *out, const struct tb_machine *m, const struct tb_workload *w)
{
	if (strncmp(m->source, "builtin:", 8) && tb_same_file(out, m->source))
		return "machine file";
	if (strncmp(w->source, "builtin:", 8) && tb_same_file(out, w->source))
		return "workload file";
	for (unsigned i = 0; i < w->nr_procs; i++)
		if (w->proc[i].trace_path[0] && tb_same_file(out, w->proc[i].trace_path))
			return "trace file";
	return NULL;
}

/* What one `tierbal sim` runs: policies (and the oracle) times the values of a
 * swept knob; job i is value i / per_val, policy i % per_val. */
struct plan {
	const struct tb_sim_options *o;
	const struct tb_machine *m;
	const struct tb_workload *w;
	double duration;
	const uint32_t *flags;
	size_t nr_pol, per_val, nr_val;
	const char *knob;
	char (*values)[32];
};

/* Runs the jobs on up to o->jobs threads (one per CPU by default), the calling
 * thread watching their progress. */
static void run_jobs(struct job *jobs, size_t nr_jobs, long jobs_opt, bool quiet)
{
	struct pool pool = {.jobs = jobs, .nr_jobs = nr_jobs};
	long cpus = jobs_opt ? jobs_opt : sysconf(_SC_NPROCESSORS_ONLN);
	size_t nr_threads = cpus < 1 ? 1 : (size_t)cpus;
	if (nr_threads > nr_jobs)
		nr_threads = nr_jobs;
	if (nr_threads > MAX_THREADS)
		nr_threads = MAX_THREADS;
	pthread_t tid[MAX_THREADS];
	size_t started = 0;
	for (; started < nr_threads; started++)
		if (pthread_create(&tid[started], NULL, worker, &pool))
			break;
	if (!started)
		worker(&pool);
	watch(&pool, quiet);
	for (size_t i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}

/* One line per run on stderr: its speed, or why it failed (a fault of the inputs
 * fails every run alike and is said once, for all). Returns the exit status. */
static int say_outcomes(const struct job *jobs, size_t nr_jobs, const struct plan *p)
{
	int rc = TB_EXIT_OK;
	for (size_t i = 0; i < nr_jobs; i++) {
		const char *what = i % p->per_val < p->nr_pol ? tb_policy_name(p->flags[i % p->per_val]) : "oracle";
		char at[160] = "";
		if (p->o->sweep)
			snprintf(at, sizeof(at), " (%s=%s)", p->knob, p->values[i / p->per_val]);
		size_t before = 0, alike = 0;
		for (size_t j = 0; j < nr_jobs && jobs[i].rc; j++)
			if (jobs[j].rc && !strcmp(jobs[j].err, jobs[i].err)) {
				before += j < i;
				alike++;
			}
		if (jobs[i].rc) {
			rc = jobs[i].rc == -EINVAL ? TB_EXIT_USAGE : TB_EXIT_FAIL;
			if (alike > 1 && !before)
				fprintf(stderr, "tierbal sim: %s\n", jobs[i].err);
			else if (alike == 1)
				fprintf(stderr, "tierbal sim: %s%s: %s\n", what, at, jobs[i].err);
		} else if (!p->o->quiet) {
			const struct tb_sim_result *r = &jobs[i].res;
			fprintf(stderr, "tierbal sim: %-14s%s %llu accesses in %.2f s (%.1f M/s)%s\n", r->policy, at,
				(unsigned long long)r->accesses, r->wall_s, (double)r->accesses / r->wall_s / 1e6,
				p->o->check ? ", invariants held" : "");
		}
	}
	return rc;
}

/* The comparison in the chosen format, to --out (committed only when whole) or
 * standard output. Returns the exit status. */
static int write_report(FILE *out, struct tb_outfile *of, const struct job *jobs, const struct plan *p)
{
	static struct tb_sim_result results[TB_SIM_MAX_VALUES][TB_SIM_MAX_RUNS];
	struct tb_report reps[TB_SIM_MAX_VALUES];
	const struct tb_sim_options *o = p->o;
	for (size_t v = 0; v < p->nr_val; v++) {
		for (size_t k = 0; k < p->nr_pol; k++)
			results[v][k] = jobs[v * p->per_val + k].res;
		reps[v] = (struct tb_report){.machine = p->m,
					     .workload = p->w,
					     .seed = o->seed,
					     .duration_s = p->duration,
					     .results = results[v],
					     .nr_results = p->nr_pol,
					     .oracle = o->oracle ? &jobs[v * p->per_val + p->nr_pol].res : NULL,
					     .sweep_knob = o->sweep ? p->knob : NULL,
					     .sweep_value = p->values[v]};
	}
	if (o->sweep)
		tb_report_sweep(out, reps, p->nr_val, o->format);
	else if (!strcmp(o->format, "table"))
		tb_report_table(out, &reps[0]);
	else if (!strcmp(o->format, "csv"))
		tb_report_csv(out, &reps[0]);
	else
		tb_report_json(out, &reps[0]);
	char err[1024];
	if (o->out && tb_outfile_commit(of, err, sizeof(err))) {
		fprintf(stderr, "tierbal sim: %s\n", err);
		return TB_EXIT_FAIL;
	}
	if (!o->out && (fflush(out) || ferror(out))) {
		fprintf(stderr, "tierbal sim: writing standard output failed: %s\n", strerror(errno));
		return TB_EXIT_FAIL;
	}
	return TB_EXIT_OK;
}

/* Checks the knobs of every run before any starts. */
static int check_knobs(const struct tb_knobs *knobs, size_t nr_val, const struct plan *p)
{
	char err[1024];
	for (size_t v = 0; v < nr_val; v++) {
		if (tb_knobs_check(&knobs[v], err, sizeof(err))) {
			if (p->o->sweep)
				fprintf(stderr, "tierbal sim: --sweep %s=%s: %s\n", p->knob, p->values[v], err);
			else
				fprintf(stderr, "tierbal sim: knobs: %s\n", err);
			return -EINVAL;
		}
	}
	return 0;
}

/* Opens where the report goes: --out (never one of the run's inputs) or stdout. */
static int open_output(const struct tb_sim_options *o, const struct tb_machine *m, const struct tb_workload *w,
		       struct tb_outfile *of, FILE **out)
{
	*out = stdout;
	if (!o->out)
		return 0;
	const char *input = refuses_out(o->out, m, w);
	if (input) {
		fprintf(stderr, "tierbal sim: --out %s: that is the %s this run reads; choose another output file\n",
			o->out, input);
		return -EINVAL;
	}
	char err[1024];
	if (tb_outfile_open(of, o->out, err, sizeof(err))) {
		fprintf(stderr, "tierbal sim: --out: %s\n", err);
		return -EINVAL;
	}
	*out = of->f;
	return 0;
}

int tb_cmd_sim(int argc, char **argv)
{
	struct tb_sim_options o;
	int prc = tb_sim_parse_options(argc, argv, &o);
	if (prc)
		return prc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	if (o.list) {
		list_all();
		return TB_EXIT_OK;
	}
	uint32_t flags[TB_SIM_MAX_RUNS];
	size_t nr_pol;
	if (tb_sim_parse_policies(o.policies, flags, &nr_pol))
		return TB_EXIT_USAGE;
	char err[1024];
	struct tb_machine m;
	if (tb_machine_load(&m, o.machine, err, sizeof(err))) {
		fprintf(stderr, "tierbal sim: machine: %s\n", err);
		return TB_EXIT_USAGE;
	}
	struct tb_workload w;
	if (tb_workload_load(&w, o.workload, err, sizeof(err))) {
		fprintf(stderr, "tierbal sim: workload: %s\n", err);
		return TB_EXIT_USAGE;
	}
	double duration = o.duration > 0 ? o.duration : w.duration_s;
	double interval = o.interval > 0 ? o.interval : w.interval_s;
	if (interval > duration)
		interval = duration;
	char knob[96] = "", values[TB_SIM_MAX_VALUES][32];
	struct tb_knobs knobs[TB_SIM_MAX_VALUES];
	size_t nr_val = 1;
	knobs[0] = o.knobs;
	struct plan p = {.o = &o,
			 .m = &m,
			 .w = &w,
			 .duration = duration,
			 .flags = flags,
			 .nr_pol = nr_pol,
			 .per_val = nr_pol + (o.oracle ? 1 : 0),
			 .knob = knob,
			 .values = values};
	FILE *out;
	struct tb_outfile of = {0};
	if ((o.sweep && tb_sim_parse_sweep(o.sweep, &o.knobs, knob, sizeof(knob), values, knobs, &nr_val)) ||
	    check_knobs(knobs, nr_val, &p) || open_output(&o, &m, &w, &of, &out)) {
		tb_workload_free(&w);
		return TB_EXIT_USAGE;
	}
	p.nr_val = nr_val;

	size_t nr_jobs = nr_val * p.per_val;
	struct job *jobs = nr_jobs ? calloc(nr_jobs, sizeof(*jobs)) : NULL; /* at least one policy: never 0 */
	if (!jobs) {
		fprintf(stderr, "tierbal sim: out of memory\n");
		tb_outfile_abort(&of);
		tb_workload_free(&w);
		return TB_EXIT_FAIL;
	}
	for (size_t i = 0; i < nr_jobs; i++) {
		size_t v = i / p.per_val, k = i % p.per_val;
		jobs[i].cfg = (struct tb_sim_config){.machine = &m,
						     .workload = &w,
						     .knobs = knobs[v],
						     .policy = k < nr_pol ? flags[k] : 0,
						     .oracle = k == nr_pol,
						     .seed = o.seed,
						     .duration_s = duration,
						     .interval_s = interval,
						     .check = o.check,
						     .progress_permille = &jobs[i].permille};
	}
	run_jobs(jobs, nr_jobs, o.jobs, o.quiet);
	int rc = say_outcomes(jobs, nr_jobs, &p);
	if (rc == TB_EXIT_OK)
		rc = write_report(out, &of, jobs, &p);
	tb_outfile_abort(&of); /* a failed run leaves the old file as it was */
	for (size_t i = 0; i < nr_jobs; i++)
		tb_sim_result_free(&jobs[i].res);
	free(jobs);
	tb_workload_free(&w);
	return rc;
}
