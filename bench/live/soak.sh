#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the guest (busybox sh), from bench/soak: the workload under
# tierbal run, then under tierbal exec, SECONDS each. Every 10 s the daemon's
# RSS, open fds and mappings, and its counters; soak_work prints its own checks.
# usage: soak.sh SECONDS
secs=${1:-600}
echo "RESULT guest kernel=$(uname -r) cpus=$(nproc)"
rc=0
sock=/tmp/soak.sock
args="$secs 40 64 3 40"
sample() { # label daemon-pid t
	# bounded: a daemon that stops answering is reported (with where it is), not waited for
	st=$(timeout 5 tierbal stat --socket $sock 2>&1)
	src=$?
	[ $src = 0 ] || echo "STATFAIL label=$1 t=$3 rc=$src wchan=$(cat /proc/$2/wchan 2>/dev/null) syscall=$(cut -d' ' -f1 /proc/$2/syscall 2>/dev/null) says=$(echo "$st" | head -1 | tr ' =' '__')"
	rss=$(awk '/^VmRSS/ {print $2}' /proc/$2/status 2>/dev/null)
	fds=$(ls /proc/$2/fd 2>/dev/null | wc -l)
	maps=$(timeout 5 cat /proc/$2/maps 2>/dev/null | wc -l)
	# a missing counter is 0 (an empty one would end this shell in the arithmetic below)
	get() { v=$(echo "$st" | awk -v k="$1" '$1 == k {print $2}'); echo "${v:-0}"; }
	if [ $src != 0 ]; then
		echo "DAEMON label=$1 t=$3 rss_kb=${rss:-0} fds=${fds:-0} maps=${maps:-0} stat=none"
		return 0
	fi
	echo "DAEMON label=$1 t=$3 rss_kb=${rss:-0} fds=${fds:-0} maps=${maps:-0} promoted=$(get pgpromote_success) demoted=$(get pgdemote_kswapd) targets=$(get targets) moves_failed=$(( $(get move_busy) + $(get move_nomem) + $(get move_other) ))"
}
oom_report() { # the kernel's own account of an OOM kill: which allocation, which zones were short
	dmesg | grep -q "invoked oom-killer" || return 0
	echo "soak: the kernel's OOM report:"
	dmesg -c | sed -n '/invoked oom-killer/,/Killed process/p'
	rc=1
}
watch() { # label daemon-pid
	t=0
	while kill -0 "$2" 2>/dev/null; do
		sleep 10
		t=$((t + 10))
		kill -0 "$2" 2>/dev/null && sample "$1" "$2" $t
	done
}

soak_work run $args &
w=$!
tierbal run --pid $w --socket $sock 2>/tmp/run.log &
d=$!
watch run $d &
wait $w || rc=1
wait $d || { echo "soak: tierbal run failed:"; cat /tmp/run.log; rc=1; }
wait
oom_report

tierbal exec --socket $sock --log /tmp/exec.log -- soak_work exec $args &
d=$!
watch exec $d &
wait $d || { echo "soak: tierbal exec failed:"; cat /tmp/exec.log; rc=1; }
wait
oom_report
exit $rc
