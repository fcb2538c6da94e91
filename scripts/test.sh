#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite: unit tests (cmocka) and command-line tests, once in
# the release build and once under AddressSanitizer + UndefinedBehaviorSanitizer;
# a short fuzzing run of every parser; cppcheck, clang-tidy and clang-format; the unit tests
# under valgrind; the live tests in the two-node QEMU guest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "=== release build (build/) ==="
rc=0
meson test -C build --print-errorlogs --verbose || rc=1

echo "=== ASan + UBSan build (build-asan/) ==="
if [ ! -f build-asan/build.ninja ]; then
	meson setup build-asan -Dbuildtype=debugoptimized -Db_sanitize=address,undefined \
		-Dc_args=-fno-sanitize-recover=all >/dev/null
fi
ninja -C build-asan >/dev/null
# tierbal exec's stress harness runs 300 programs in the release build and 30 here, where tierbal is slower
TB_STRESS_RUNS=30 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	meson test -C build-asan --print-errorlogs --verbose --timeout-multiplier 4 || rc=1

echo "=== fuzzing: every parser, libFuzzer + ASan + UBSan (scripts/fuzz.sh) ==="
# 30 s a target here keeps CI short; scripts/fuzz.sh 600 is a real campaign
FUZZ_SECONDS=${FUZZ_SECONDS:-30} bash scripts/fuzz.sh 2>&1 | tee build/fuzz.log || rc=1

echo "=== static analysis: cppcheck, clang-tidy, clang-format (scripts/analyze.sh) ==="
bash scripts/analyze.sh 2>&1 | tee build/analyze.log || rc=1

echo "=== unit tests under valgrind (scripts/valgrind.sh) ==="
bash scripts/valgrind.sh 2>&1 | tee build/valgrind.log || rc=1

echo "=== live tests in a two-node QEMU guest ==="
bash tests/guest/test_guest.sh 2>&1 | tee build/guest.log || rc=1

# one closing line over both builds and the guest: test cases, from each suite's own summary
python3 scripts/test-summary.py build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build/guest.log \
	build/fuzz.log build/analyze.log build/valgrind.log
exit $rc
