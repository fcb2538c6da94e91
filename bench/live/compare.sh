#!/bin/sh
# Runs inside the guest (busybox sh), from bench/kernel-compare: the four runs.
# usage: compare.sh SECONDS SHIFT_S
echo "RESULT guest kernel=$(uname -r) tiers=$(ls -d /sys/devices/virtual/memory_tiering/memory_tier* 2>/dev/null | sed 's|.*/||' | tr '\n' ',') cpus=$(nproc)"
rc=0
for mode in none kernel exec run; do
	guest_compare "$mode" "$1" "$2" || rc=1
done
exit $rc
