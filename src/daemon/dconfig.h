/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's configuration: an INI file, command-line overrides on top. */
#ifndef TB_DCONFIG_H
#define TB_DCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/knobs.h"

#define TB_DCFG_MAX_PIDS 64
#define TB_DCFG_MAX_NODES 64
#define TB_DEFAULT_SOCKET "/run/tierbal.sock"

enum tb_sampler_choice { TB_SAMPLER_AUTO, TB_SAMPLER_DAMON, TB_SAMPLER_SOFTDIRTY, TB_SAMPLER_NONE };

struct tb_dconfig {
	uint32_t policy;
	enum tb_sampler_choice sampler;
	uint32_t sample_ms;      /* how often accesses are read and decisions made */
	uint32_t refresh_ms;     /* how often targets and their memory maps are re-read */
	uint64_t max_managed_mb; /* 0 = all memory of the machine */
	uint64_t demote_rate_mb; /* MiB/s kswapd-like demotion may move */
	bool dry_run;
	char socket[108];
	pid_t pids[TB_DCFG_MAX_PIDS];
	size_t nr_pids;
	char cgroup[4096];
	int tier_override[TB_DCFG_MAX_NODES]; /* -1 = take the tier from the kernel */
	struct tb_knobs knobs;
};

/* Defaults of the live daemon (the kernel's sysctls, plus TPP's demotion headroom). */
void tb_dconfig_default(struct tb_dconfig *c);
/* Parses INI text over c; label names the file in messages. 0 or -EINVAL. */
int tb_dconfig_parse(struct tb_dconfig *c, const char *label, const char *text, char *err, size_t errlen);
/* Reads and parses a file over c. */
int tb_dconfig_load(struct tb_dconfig *c, const char *path, char *err, size_t errlen);
const char *tb_sampler_choice_name(enum tb_sampler_choice s);
int tb_sampler_choice_parse(const char *s, enum tb_sampler_choice *out);

#endif
