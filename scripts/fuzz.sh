#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs
# each: first over its committed inputs (fuzz/corpus/NAME: seeds, fuzz/regress/NAME:
# inputs that once crashed), then for SECONDS of fresh fuzzing, as many at once
# as there are CPUs. A crash fails the run and is kept as build-fuzz/crash-NAME-*:
# copy it into fuzz/regress/NAME once fixed.
# usage: scripts/fuzz.sh [SECONDS]   (default 60, or $FUZZ_SECONDS)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-${FUZZ_SECONDS:-60}}
targets=(fuzz_machine fuzz_workload fuzz_trace fuzz_config fuzz_ctl fuzz_cli)
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true -Dbuildtype=debugoptimized -Db_sanitize=address,undefined \
		-Db_lundef=false "-Dc_args=['-fsanitize=fuzzer-no-link','-fno-sanitize-recover=all']" >/dev/null
fi
ninja -C build-fuzz "${targets[@]/#/fuzz/}" >/dev/null
mkdir -p build-fuzz/logs
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

one() {
	local t=$1 log=build-fuzz/logs/$1.log work=build-fuzz/corpus/$1
	mkdir -p "$work"
	cp -n fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
	local known=(fuzz/corpus/"$t"/*)
	[ -d fuzz/regress/"$t" ] && known+=(fuzz/regress/"$t"/*)
	if ! build-fuzz/fuzz/"$t" -runs=0 "${known[@]}" >"$log" 2>&1; then
		echo "FAIL $t: a committed input crashes it (build-fuzz/logs/$t.log)"
		return 1
	fi
	if ! build-fuzz/fuzz/"$t" -max_total_time="$secs" -close_fd_mask=3 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix=build-fuzz/crash-"$t"- "$work" >>"$log" 2>&1; then
		echo "FAIL $t: crashed while fuzzing; input and report: $(ls build-fuzz/crash-"$t"-* 2>/dev/null | head -1)," \
			"build-fuzz/logs/$t.log"
		tail -40 "$log" | grep -v '^#' >&2
		return 1
	fi
	local runs cov
	runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	echo "ok   $t: ${#known[@]} committed inputs, then $runs runs in $secs s, coverage $cov, corpus $(ls "$work" | wc -l)"
}

jobs=$(nproc)
pass=0 fail=0 running=0
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for t in "${targets[@]}"; do
	one "$t" >>"$results" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
done
wait || true
sort "$results"
pass=$(grep -c '^ok ' "$results" || true)
fail=$(( ${#targets[@]} - pass ))
echo "fuzz: $pass passed, $fail failed"
[ "$fail" = 0 ]
