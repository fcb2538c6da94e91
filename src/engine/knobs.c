/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine/knobs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/number.h"

void tb_knobs_default(struct tb_knobs *k)
{
	memset(k, 0, sizeof(*k));
	k->numa_balancing = TB_NUMA_BALANCING_MEMORY_TIERING;
	k->scan_delay_ms = 1000;
	k->scan_period_min_ms = 1000;
	k->scan_period_max_ms = 60000;
	k->scan_size_mb = 256;
	k->hot_threshold_ms = 1000;
	k->promote_rate_limit_MBps = 65536;
	k->threshold_adjust = 1;
	k->free_space_bypass = 1;
	k->watermark_scale_factor = 10;
	k->min_free_kbytes = 0;
	k->watermark_boost_factor = 15000;
	k->demote_scale_factor = 0;
	k->wmark_mode = TB_WMARK_V13;
	k->boost_step_kb = 2048;
	k->boost_decay_ms = 1000;
	k->pingpong_window_ms = 10000;
	k->adapt_period_ms = 1000;
	k->promote_retry_ms = 0;
}

#define KNOB(field, lo, hi, origin, help)                                                                              \
	{                                                                                                              \
#field, offsetof(struct tb_knobs, field), lo, hi, origin, help                                         \
	}
#define KNOB_AS(name, field, lo, hi, origin, help)                                                                     \
	{                                                                                                              \
		name, offsetof(struct tb_knobs, field), lo, hi, origin, help                                           \
	}

static const struct tb_knob_desc knob_table[] = {
	KNOB(numa_balancing, 0, 3, "sysctl", "mode bits: 1 NORMAL (also scan fast-tier pages), 2 MEMORY_TIERING"),
	KNOB_AS("numa_balancing_scan_delay_ms", scan_delay_ms, 0, 3600000, "sysctl",
		"delay before a process's first scan"),
	KNOB_AS("numa_balancing_scan_period_min_ms", scan_period_min_ms, 1, 3600000, "sysctl",
		"shortest time for one full scan pass"),
	KNOB_AS("numa_balancing_scan_period_max_ms", scan_period_max_ms, 1, 3600000, "sysctl",
		"longest time for one full scan pass; also the threshold adjustment period"),
	KNOB_AS("numa_balancing_scan_size_mb", scan_size_mb, 1, 1048576, "sysctl",
		"pages made inaccessible per scan window, in MiB"),
	KNOB_AS("numa_balancing_hot_threshold_ms", hot_threshold_ms, 1, 3600000, "sysctl",
		"scan-to-fault latency below which a page is hot"),
	KNOB_AS("numa_balancing_promote_rate_limit_MBps", promote_rate_limit_MBps, 1, 1u << 30, "sysctl",
		"promotion candidate rate limit"),
	KNOB(watermark_scale_factor, 1, 3000, "sysctl", "distance between watermarks, in 1/10000 of a node"),
	KNOB(min_free_kbytes, 0, 1u << 31, "sysctl",
	     "min watermark over all nodes; 0 = the kernel's sqrt(16 x memory) rule"),
	KNOB(watermark_boost_factor, 0, 100000, "sysctl",
	     "boost mode: largest boost, in 1/10000 of the high watermark"),
	KNOB(demote_scale_factor, 0, 3000, "TPP",
	     "fast-node demotion watermark above high, in 1/10000 of a node; 0 = off"),
	KNOB_AS("promo_wmark_mode", wmark_mode, 0, 2, "tierbal", "kswapd target in tiering mode: v13, v10 or boost"),
	KNOB_AS("promo_boost_step_kb", boost_step_kb, 4, 1u << 30, "tierbal",
		"boost mode: raise per refused promotion"),
	KNOB_AS("promo_boost_decay_ms", boost_decay_ms, 1, 3600000, "tierbal",
		"boost mode: time constant of the boost's decay"),
	KNOB_AS("hot_threshold_adjust", threshold_adjust, 0, 1, "tierbal",
		"1: adjust the hot threshold to the rate limit (kernel behaviour)"),
	KNOB_AS("free_space_bypass", free_space_bypass, 0, 1, "tierbal",
		"1: skip threshold and rate limit while the fast node is mostly free (kernel)"),
	KNOB_AS("pingpong_window_ms", pingpong_window_ms, 1, 3600000, "tierbal",
		"a move back within this window counts as ping-pong"),
	KNOB_AS("adapt_period_ms", adapt_period_ms, 10, 3600000, "tierbal",
		"adaptive policy: how often the threshold follows the ping-pong rate"),
	KNOB(promote_retry_ms, 0, 60000, "tierbal",
	     "a hot page refused for room moves once kswapd makes room, within this time of its fault; "
	     "0 = it waits for its next scan (kernel)"),
};

static const char *const wmark_mode_names[] = {"v13", "v10", "boost"};

const struct tb_knob_desc *tb_knob_table(size_t *count)
{
	*count = sizeof(knob_table) / sizeof(knob_table[0]);
	return knob_table;
}

static const struct tb_knob_desc *tb_knob_find(const char *name)
{
	for (size_t i = 0; i < sizeof(knob_table) / sizeof(knob_table[0]); i++)
		if (strcmp(knob_table[i].name, name) == 0)
			return &knob_table[i];
	return NULL;
}

static uint32_t *knob_ptr(struct tb_knobs *k, const struct tb_knob_desc *d)
{
	return (uint32_t *)((char *)k + d->offset);
}

static uint32_t tb_knob_get(const struct tb_knobs *k, const struct tb_knob_desc *d)
{
	return *(const uint32_t *)((const char *)k + d->offset);
}

void tb_knob_format(const struct tb_knobs *k, const struct tb_knob_desc *d, char *buf, size_t len)
{
	uint32_t v = tb_knob_get(k, d);
	if (d->offset == offsetof(struct tb_knobs, wmark_mode) && v <= TB_WMARK_BOOST)
		snprintf(buf, len, "%s", wmark_mode_names[v]);
	else
		snprintf(buf, len, "%u", v);
}

int tb_knobs_check(const struct tb_knobs *k, char *err, size_t errlen)
{
	if (k->scan_period_min_ms > k->scan_period_max_ms) {
		snprintf(err, errlen,
			 "numa_balancing_scan_period_min_ms (%u) is above numa_balancing_scan_period_max_ms (%u); "
			 "the shortest scan pass cannot be longer than the longest",
			 k->scan_period_min_ms, k->scan_period_max_ms);
		return -EINVAL;
	}
	return 0;
}

int tb_knob_set(struct tb_knobs *k, const char *assignment, char *err, size_t errlen)
{
	const char *eq = strchr(assignment, '=');
	char name[96];
	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(name)) {
		snprintf(err, errlen, "'%s': expected KNOB=VALUE (see 'tierbal sim --list')", assignment);
		return -EINVAL;
	}
	memcpy(name, assignment, (size_t)(eq - assignment));
	name[eq - assignment] = '\0';
	const struct tb_knob_desc *d = tb_knob_find(name);
	if (!d) {
		snprintf(err, errlen, "unknown knob '%s' (see 'tierbal sim --list')", name);
		return -EINVAL;
	}
	const char *val = eq + 1;
	if (d->offset == offsetof(struct tb_knobs, wmark_mode)) {
		for (uint32_t i = 0; i <= TB_WMARK_BOOST; i++)
			if (strcmp(val, wmark_mode_names[i]) == 0) {
				k->wmark_mode = i;
				return 0;
			}
		snprintf(err, errlen, "knob %s: '%s' is not one of v13, v10, boost", name, val);
		return -EINVAL;
	}
	unsigned long long v;
	int rc = tb_parse_whole(val, d->min, d->max, &v);
	if (rc == -EINVAL) {
		snprintf(err, errlen, "knob %s: '%s' is not a whole number", name, val);
		return -EINVAL;
	}
	if (rc) {
		snprintf(err, errlen, "knob %s: %s is outside %u..%u", name, val, d->min, d->max);
		return -EINVAL;
	}
	*knob_ptr(k, d) = (uint32_t)v;
	return 0;
}

static const struct {
	const char *name;
	uint32_t flags;
} policy_names[] = {
	{"none", 0},
	{"always", TB_POLICY_PROMOTE},
	{"hot-threshold", TB_POLICY_PROMOTE | TB_POLICY_HOT},
	{"active-lru", TB_POLICY_PROMOTE | TB_POLICY_ACTIVE_LRU},
	{"combined", TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ACTIVE_LRU},
	{"adaptive", TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ADAPTIVE},
};

int tb_policy_parse(const char *name, uint32_t *flags)
{
	uint32_t f = 0;
	const char *p = name;
	if (!*p)
		return -EINVAL;
	while (*p) {
		size_t len = strcspn(p, "+");
		bool found = false;
		for (size_t i = 0; i < sizeof(policy_names) / sizeof(policy_names[0]); i++)
			if (strlen(policy_names[i].name) == len && strncmp(p, policy_names[i].name, len) == 0) {
				f |= policy_names[i].flags;
				found = true;
			}
		if (!found)
			return -EINVAL;
		p += len;
		if (*p == '+' && *++p == '\0')
			return -EINVAL;
	}
	*flags = f;
	return 0;
}

const char *tb_policy_name(uint32_t flags)
{
	for (size_t i = 0; i < sizeof(policy_names) / sizeof(policy_names[0]); i++)
		if (policy_names[i].flags == flags)
			return policy_names[i].name;
	return "custom";
}
