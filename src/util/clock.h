/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one clock of tierbal's own code: CLOCK_MONOTONIC, which no change of
 * the wall clock moves. (The engine never reads a clock: its platform hands
 * it the time.) */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t tb_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
