/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The simulator's tests' smallest machine: a fast node of 64 MiB with CPUs,
 * a slow one of 192 MiB without. */
#ifndef TB_LIB_SIM_H
#define TB_LIB_SIM_H

static const char tiny_machine[] = "[machine]\n"
				   "name = tiny\n"
				   "[node 0]\n"
				   "cpus = yes\n"
				   "capacity_mib = 64\n"
				   "read_ns = 80\n"
				   "write_ns = 80\n"
				   "read_mbps = 50000\n"
				   "write_mbps = 50000\n"
				   "[node 1]\n"
				   "capacity_mib = 192\n"
				   "read_ns = 300\n"
				   "write_ns = 100\n"
				   "read_mbps = 20000\n"
				   "write_mbps = 8000\n";

#endif
