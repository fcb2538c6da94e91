/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tunables of the policy engine. Names and defaults follow the kernel's
 * sysctls where one exists, so kernel people can read a run's settings. */
#ifndef TB_KNOBS_H
#define TB_KNOBS_H

#include <stddef.h>
#include <stdint.h>

/* numa_balancing mode bits, as in kernel/sched/core.c */
#define TB_NUMA_BALANCING_NORMAL 0x1u
#define TB_NUMA_BALANCING_MEMORY_TIERING 0x2u

/* Promotion policy flags; a policy is any combination of them. */
#define TB_POLICY_PROMOTE 0x1u    /* promote slow-tier pages on hint faults ("always") */
#define TB_POLICY_HOT 0x2u        /* only if scan-to-fault latency < threshold */
#define TB_POLICY_ACTIVE_LRU 0x4u /* only if the page is on the active LRU (TPP) */
#define TB_POLICY_ADAPTIVE 0x8u   /* tierbal: hot threshold steered by the ping-pong it causes */

enum tb_wmark_mode {
	TB_WMARK_V13 = 0,   /* promo = high + watermark_scale_factor distance (NUMA balancing tiering patch, v13) */
	TB_WMARK_V10 = 1,   /* promo = high + min(10 MiB, present >> 6) (the same patch, v10) */
	TB_WMARK_BOOST = 2, /* kswapd target raised by failed promotions, decays */
};

struct tb_knobs {
	uint32_t numa_balancing;
	uint32_t scan_delay_ms;
	uint32_t scan_period_min_ms;
	uint32_t scan_period_max_ms;
	uint32_t scan_size_mb;
	uint32_t hot_threshold_ms;
	uint32_t promote_rate_limit_MBps;
	uint32_t threshold_adjust;
	uint32_t free_space_bypass;
	uint32_t watermark_scale_factor;
	uint32_t min_free_kbytes;
	uint32_t watermark_boost_factor;
	uint32_t demote_scale_factor;
	uint32_t wmark_mode;
	uint32_t boost_step_kb;
	uint32_t boost_decay_ms;
	uint32_t pingpong_window_ms;
	uint32_t adapt_period_ms;
	uint32_t promote_retry_ms;
};

struct tb_knob_desc {
	const char *name;
	size_t offset;
	uint32_t min, max;
	const char *origin; /* "sysctl", "TPP" or "tierbal" */
	const char *help;
};

void tb_knobs_default(struct tb_knobs *k);
const struct tb_knob_desc *tb_knob_table(size_t *count);

/* Parses "name=value"; on error returns -EINVAL and writes a message. */
int tb_knob_set(struct tb_knobs *k, const char *assignment, char *err, size_t errlen);
/* Checks what no single knob's range can: scan_period_min <= scan_period_max.
 * 0, or -EINVAL with a message. */
int tb_knobs_check(const struct tb_knobs *k, char *err, size_t errlen);
/* Formats a knob's value ("v13" for the watermark mode, a number otherwise). */
void tb_knob_format(const struct tb_knobs *k, const struct tb_knob_desc *d, char *buf, size_t len);

/* Policy names: none, always, hot-threshold, active-lru, combined, adaptive,
 * or flags joined with '+' (e.g. "hot-threshold+active-lru"). */
int tb_policy_parse(const char *name, uint32_t *flags);
const char *tb_policy_name(uint32_t flags);

#endif
