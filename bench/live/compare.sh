#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the guest (busybox sh), from bench/kernel-compare: the runs.
# usage: compare.sh SECONDS SHIFT_S [--huge] [MODE...]   (default: none kernel exec run)
# --huge: THP set to always, and the hot sets are MADV_HUGEPAGE (guest_compare ... huge)
echo "RESULT guest kernel=$(uname -r) tiers=$(ls -d /sys/devices/virtual/memory_tiering/memory_tier* 2>/dev/null | sed 's|.*/||' | tr '\n' ',') cpus=$(nproc)"
rc=0
secs=$1 shift_s=$2
shift 2
huge=
if [ "${1:-}" = --huge ]; then
	shift
	thp=/sys/kernel/mm/transparent_hugepage/enabled
	echo always >"$thp"
	if ! grep -q '\[always\]' "$thp"; then
		echo "compare.sh: could not set THP to always ($thp: $(cat "$thp"))" >&2
		exit 1
	fi
	huge=huge
fi
for mode in ${*:-none kernel exec run}; do
	guest_compare "$mode" "$secs" "$shift_s" $huge || rc=1
done
exit $rc
