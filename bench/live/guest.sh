#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the guest (busybox sh), from bench/live-bench: the live benches.
# usage: guest.sh SECONDS
secs=${1:-30}
CALIB="--policy hot-threshold --duration 10 --no-oracle --jobs 1 --quiet"
rc=0
echo "RESULT guest kernel=$(uname -r) nodes_with_memory=$(cat /sys/devices/system/node/has_memory) cpus=$(nproc)"
# the emulation's slowdown for plain user-space code: the same simulation the host times
t=$( { time tierbal sim $CALIB >/dev/null; } 2>&1 | awk '/^real/ {sub("m", "", $2); sub("s", "", $3); print $2 * 60 + $3}')
echo "RESULT calib guest_s=$t"
guest_mover_bench 256 5 || rc=1
for s in "128 0" "512 0" "128 32" "512 32"; do
	set -- $s
	guest_cpu_bench softdirty "$secs" "$1" "$2" || rc=1
done
guest_cpu_bench damon 3 16 0 || rc=1
exit $rc
