/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sim/workload.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/builtin.h"
#include "util/cfg.h"
#include "sim/trace.h"

static const char *const dist_names[] = {"uniform", "gaussian", "zipf", "trace"};

static bool parse_dist(struct tb_cfg *c, const char *sec, const char *key, const char *val, bool allow_trace,
		       enum tb_dist_kind *out)
{
	for (unsigned i = 0; i <= TB_DIST_ZIPF; i++)
		if (!strcmp(val, dist_names[i])) {
			*out = (enum tb_dist_kind)i;
			return true;
		}
	if (!strcmp(val, "trace") && allow_trace)
		return tb_cfg_error(c, sec, key, "set 'trace = FILE' instead; the distribution follows");
	return tb_cfg_error(c, sec, key, "'%s' is not one of uniform, gaussian, zipf", val);
}

const char *tb_thp_mode_name(enum tb_thp_mode m)
{
	return m == TB_THP_ALWAYS ? "always" : m == TB_THP_MADVISE ? "madvise" : "never";
}

static int find_proc(const struct tb_workload *w, const char *name)
{
	for (unsigned i = 0; i < w->nr_procs; i++)
		if (!strcmp(w->proc[i].name, name))
			return (int)i;
	return -1;
}

static const char *const proc_keys[] = {
	"cpu_node",    "weight",      "read_ratio",   "file_share", "think_ns", "prefault",         "file_first",
	"anon_mib",    "file_mib",    "distribution", "center",     "stddev",   "zipf_s",           "file_distribution",
	"file_center", "file_stddev", "file_zipf_s",  "trace",      "thp",      "madvise_hugepage",
};
#define NR_PROC_KEYS (sizeof(proc_keys) / sizeof(proc_keys[0]))

static bool region_key(struct tb_cfg *c, const char *sec, const char *key, const char *val, struct tb_region_spec *r,
		       const char *k)
{
	uint64_t v;
	if (!strcmp(k, "mib")) {
		if (!tb_cfg_u64(c, sec, key, val, 0, 1ull << 24, &v))
			return false;
		r->pages = v << 8;
		return true;
	}
	if (!strcmp(k, "distribution"))
		return parse_dist(c, sec, key, val, true, &r->kind);
	if (!strcmp(k, "center"))
		return tb_cfg_double(c, sec, key, val, 0, 1, &r->center);
	if (!strcmp(k, "stddev"))
		return tb_cfg_double(c, sec, key, val, 1e-6, 10, &r->stddev);
	return tb_cfg_double(c, sec, key, val, 0.01, 5, &r->zipf_s);
}

static bool proc_entry(struct tb_cfg *c, struct tb_workload *w, const char *sec, const char *name, const char *key,
		       const char *val)
{
	int i = find_proc(w, name);
	if (i < 0) {
		if (w->nr_procs == TB_WL_MAX_PROCS)
			return tb_cfg_error(c, sec, NULL, "more than %d processes", TB_WL_MAX_PROCS);
		if (strlen(name) >= sizeof(w->proc[0].name))
			return tb_cfg_error(c, sec, NULL, "process name longer than %zu characters",
					    sizeof(w->proc[0].name) - 1);
		i = (int)w->nr_procs++;
		struct tb_proc_spec *p = &w->proc[i];
		snprintf(p->name, sizeof(p->name), "%s", name);
		p->weight = 1;
		p->read_ratio = 1;
		p->prefault = true;
		p->madvise_share = -1; /* unset: finish() decides from thp */
		p->anon = (struct tb_region_spec){TB_DIST_UNIFORM, 0, 0.5, 0.125, 0.99};
		p->file = p->anon;
	}
	struct tb_proc_spec *p = &w->proc[i];
	unsigned k = 0;
	while (k < NR_PROC_KEYS && strcmp(key, proc_keys[k]))
		k++;
	if (k == NR_PROC_KEYS)
		return tb_cfg_error(c, sec, key, "unknown key (see tierbal(1), WORKLOAD FILES)");
	if (p->seen & (1u << k))
		return tb_cfg_error(c, sec, key, "set twice");
	p->seen |= 1u << k;
	uint64_t v;
	if (!strcmp(key, "cpu_node")) {
		if (!tb_cfg_u64(c, sec, key, val, 0, 6, &v))
			return false;
		p->cpu_node = (unsigned)v;
		p->cpu_node_line = c->line;
		return true;
	}
	if (!strcmp(key, "weight"))
		return tb_cfg_double(c, sec, key, val, 1e-6, 1e6, &p->weight);
	if (!strcmp(key, "read_ratio"))
		return tb_cfg_double(c, sec, key, val, 0, 1, &p->read_ratio);
	if (!strcmp(key, "file_share"))
		return tb_cfg_double(c, sec, key, val, 0, 1, &p->file_share);
	if (!strcmp(key, "think_ns"))
		return tb_cfg_double(c, sec, key, val, 0, 1e9, &p->think_ns);
	if (!strcmp(key, "prefault"))
		return tb_cfg_bool(c, sec, key, val, &p->prefault);
	if (!strcmp(key, "file_first"))
		return tb_cfg_bool(c, sec, key, val, &p->file_first);
	if (!strcmp(key, "thp")) {
		for (int m = TB_THP_NEVER; m <= TB_THP_ALWAYS; m++)
			if (!strcmp(val, tb_thp_mode_name((enum tb_thp_mode)m))) {
				p->thp = (enum tb_thp_mode)m;
				return true;
			}
		return tb_cfg_error(c, sec, key, "'%s' is not one of always, madvise, never", val);
	}
	if (!strcmp(key, "madvise_hugepage"))
		return tb_cfg_double(c, sec, key, val, 0, 1, &p->madvise_share);
	if (!strcmp(key, "trace")) {
		if (!tb_cfg_string(c, sec, key, val, p->trace_path, sizeof(p->trace_path)))
			return false;
		p->anon.kind = TB_DIST_TRACE;
		return true;
	}
	if (!strncmp(key, "file_", 5))
		return region_key(c, sec, key, val, &p->file, key + 5);
	return region_key(c, sec, key, val, &p->anon, !strncmp(key, "anon_", 5) ? key + 5 : key);
}

static bool phase_entry(struct tb_cfg *c, struct tb_workload *w, const char *sec, const char *name, const char *key,
			const char *val)
{
	struct tb_phase_spec *ph = NULL;
	for (unsigned i = 0; i < w->nr_phases; i++)
		if (!strcmp(w->phase[i].name, name))
			ph = &w->phase[i];
	if (!ph) {
		if (w->nr_phases == TB_WL_MAX_PHASES)
			return tb_cfg_error(c, sec, NULL, "more than %d phases", TB_WL_MAX_PHASES);
		ph = &w->phase[w->nr_phases++];
		memset(ph, 0, sizeof(*ph));
		snprintf(ph->name, sizeof(ph->name), "%s", name);
		ph->at_s = -1;
		ph->proc = -1;
	}
	if (!strcmp(key, "at_s"))
		return tb_cfg_double(c, sec, key, val, 0, 1e7, &ph->at_s);
	if (!strcmp(key, "process")) {
		ph->proc = find_proc(w, val);
		if (ph->proc < 0)
			return tb_cfg_error(c, sec, key, "no [process %s] above this line", val);
		return true;
	}
	static const struct {
		const char *key;
		unsigned bit;
	} fields[] = {{"center", TB_PH_CENTER},
		      {"stddev", TB_PH_STDDEV},
		      {"distribution", TB_PH_DIST},
		      {"zipf_s", TB_PH_ZIPF}};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(key, fields[i].key)) {
			ph->set |= fields[i].bit;
			return region_key(c, sec, key, val, &ph->anon, key);
		}
	if (!strcmp(key, "read_ratio")) {
		ph->set |= TB_PH_READ;
		return tb_cfg_double(c, sec, key, val, 0, 1, &ph->read_ratio);
	}
	return tb_cfg_error(c, sec, key,
			    "unknown key (known: at_s, process, center, stddev, distribution, zipf_s, "
			    "read_ratio)");
}

static bool workload_section(struct tb_cfg *c, const char *sec)
{
	const char *name;
	if (tb_cfg_section_is(sec, "process", &name) || tb_cfg_section_is(sec, "phase", &name) ||
	    !strcmp(sec, "workload"))
		return true;
	return tb_cfg_error(c, sec, NULL, "unknown section (expected [workload], [process NAME], [phase NAME])");
}

static bool workload_entry(struct tb_cfg *c, const char *sec, const char *key, const char *val)
{
	struct tb_workload *w = c->user;
	const char *name;
	if (tb_cfg_section_is(sec, "process", &name))
		return proc_entry(c, w, sec, name, key, val);
	if (tb_cfg_section_is(sec, "phase", &name))
		return phase_entry(c, w, sec, name, key, val);
	if (strcmp(sec, "workload") != 0)
		return tb_cfg_error(c, sec, NULL,
				    "unknown section (expected [workload], [process NAME], [phase NAME])");
	if (!strcmp(key, "name"))
		return tb_cfg_string(c, sec, key, val, w->name, sizeof(w->name));
	if (!strcmp(key, "description"))
		return tb_cfg_string(c, sec, key, val, w->description, sizeof(w->description));
	if (!strcmp(key, "duration_s"))
		return tb_cfg_double(c, sec, key, val, 0.001, 1e6, &w->duration_s);
	if (!strcmp(key, "interval_ms")) {
		double ms;
		if (!tb_cfg_double(c, sec, key, val, 1, 1e7, &ms))
			return false;
		w->interval_s = ms / 1000;
		return true;
	}
	return tb_cfg_error(c, sec, key, "unknown key (known: name, description, duration_s, interval_ms)");
}

static int cmp_phase(const void *a, const void *b)
{
	const struct tb_phase_spec *x = a, *y = b;
	return x->at_s < y->at_s ? -1 : x->at_s > y->at_s;
}

static int finish(struct tb_workload *w, const char *label, char *err, size_t len)
{
	if (!w->name[0]) {
		snprintf(err, len, "%s: [workload] name: missing (required)", label);
		return -EINVAL;
	}
	if (!w->nr_procs) {
		snprintf(err, len, "%s: no [process NAME] section", label);
		return -EINVAL;
	}
	for (unsigned i = 0; i < w->nr_procs; i++) {
		struct tb_proc_spec *p = &w->proc[i];
		if (p->trace_path[0]) {
			char path[1024];
			if (p->trace_path[0] == '/' || !strchr(label, '/')) {
				snprintf(path, sizeof(path), "%s", p->trace_path);
			} else {
				char dir[512];
				snprintf(dir, sizeof(dir), "%s", label);
				snprintf(path, sizeof(path), "%s/%s", dirname(dir), p->trace_path);
			}
			char terr[512];
			if (strlen(path) >= sizeof(p->trace_path)) {
				snprintf(err, len, "%s: [process %s] trace: path too long (at most %zu bytes)", label,
					 p->name, sizeof(p->trace_path) - 1);
				return -EINVAL;
			}
			memcpy(p->trace_path, path, strlen(path) + 1); /* as opened, for the caller's checks */
			if (tb_trace_load(&p->trace, path, terr, sizeof(terr))) {
				snprintf(err, len, "%s: [process %s] trace: %s", label, p->name, terr);
				return -EINVAL;
			}
			if (p->anon.pages && p->anon.pages != p->trace->nr_pages) {
				snprintf(err, len, "%s: [process %s] anon_mib: the trace sets the size; remove it",
					 label, p->name);
				return -EINVAL;
			}
			p->anon.pages = p->trace->nr_pages;
		}
		/* a program run under thp = madvise is one that madvises: all of its
		 * anon memory unless madvise_hugepage says how much */
		if (p->madvise_share < 0)
			p->madvise_share = p->thp == TB_THP_MADVISE ? 1 : 0;
		if (!p->anon.pages && !p->file.pages) {
			snprintf(err, len, "%s: [process %s] anon_mib: missing (the process needs memory)", label,
				 p->name);
			return -EINVAL;
		}
		if (p->file_share > 0 && !p->file.pages) {
			snprintf(
				err, len,
				"%s: [process %s] file_share: %g of accesses go to a page cache of 0 MiB; set file_mib",
				label, p->name, p->file_share);
			return -EINVAL;
		}
		if (!p->anon.pages && p->file_share < 1) {
			snprintf(err, len, "%s: [process %s] file_share: must be 1 without an anon region", label,
				 p->name);
			return -EINVAL;
		}
	}
	for (unsigned i = 0; i < w->nr_phases; i++) {
		struct tb_phase_spec *ph = &w->phase[i];
		if (ph->at_s < 0 || ph->proc < 0) {
			snprintf(err, len, "%s: [phase %s] needs at_s and process", label, ph->name);
			return -EINVAL;
		}
		if (w->proc[ph->proc].anon.kind == TB_DIST_TRACE) {
			snprintf(err, len, "%s: [phase %s] process: a trace replay has no distribution to change",
				 label, ph->name);
			return -EINVAL;
		}
	}
	qsort(w->phase, w->nr_phases, sizeof(w->phase[0]), cmp_phase);
	return 0;
}

int tb_workload_parse(struct tb_workload *w, const char *label, const char *text, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->duration_s = 30;
	w->interval_s = 1;
	snprintf(w->source, sizeof(w->source), "%s", label);
	int rc = tb_cfg_parse(label, text, workload_entry, workload_section, w, err, errlen);
	if (!rc)
		rc = finish(w, label, err, errlen);
	if (rc)
		tb_workload_free(w);
	return rc;
}

int tb_workload_load(struct tb_workload *w, const char *name, char *err, size_t errlen)
{
	char label[512];
	char *text = tb_builtin_or_file("workloads", name, label, sizeof(label), err, errlen);
	if (!text) {
		memset(w, 0, sizeof(*w));
		return -ENOENT;
	}
	int rc = tb_workload_parse(w, label, text, err, errlen);
	free(text);
	return rc;
}

void tb_workload_free(struct tb_workload *w)
{
	for (unsigned i = 0; i < w->nr_procs; i++) {
		tb_trace_free(w->proc[i].trace);
		w->proc[i].trace = NULL;
	}
}

uint64_t tb_workload_pages(const struct tb_workload *w)
{
	uint64_t t = 0;
	for (unsigned i = 0; i < w->nr_procs; i++)
		t += w->proc[i].anon.pages + w->proc[i].file.pages;
	return t;
}
