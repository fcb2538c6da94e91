#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the guest (busybox sh), from bench/kernel-compare: the runs.
# usage: compare.sh SECONDS SHIFT_S [MODE...]   (default: none kernel exec run)
echo "RESULT guest kernel=$(uname -r) tiers=$(ls -d /sys/devices/virtual/memory_tiering/memory_tier* 2>/dev/null | sed 's|.*/||' | tr '\n' ',') cpus=$(nproc)"
rc=0
secs=$1 shift_s=$2
shift 2
for mode in ${*:-none kernel exec run}; do
	guest_compare "$mode" "$secs" "$shift_s" || rc=1
done
exit $rc
