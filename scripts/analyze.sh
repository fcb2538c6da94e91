#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Static analysis: cppcheck, and clang-tidy with the committed .clang-tidy, over
# the sources, tests and fuzz targets; clang-format with the committed
# .clang-format over every C file. Any finding fails. Needs build/ (and
# build-fuzz/ for the fuzz targets' compile commands): scripts/test.sh makes both.
# usage: scripts/analyze.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rc=0
echo "--- cppcheck $(cppcheck --version | cut -d' ' -f2)"
if cppcheck --enable=warning,performance,portability --std=c11 --inline-suppr --quiet --error-exitcode=1 \
	-D_GNU_SOURCE -I src -I tests/lib -I tests/unit \
	src fuzz tests/unit tests/exec tests/guest bench/live; then
	echo "ok   cppcheck: no findings"
else
	echo "FAIL cppcheck: findings above"
	rc=1
fi
echo "--- clang-tidy $(clang-tidy --version | grep -o 'version [0-9.]*')"
tidy() { # build-dir files...
	local dir=$1
	shift
	printf '%s\n' "$@" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$dir" --quiet 2>/dev/null | grep -E "(warning|error):" || true
}
# the fuzz targets only once scripts/fuzz.sh has built them (a missing build-fuzz is no finding)
found=$( {
	tidy build src/*/*.c
	if [ -f build-fuzz/compile_commands.json ]; then tidy build-fuzz fuzz/*.c; fi
} | sort -u)
if [ -z "$found" ]; then
	echo "ok   clang-tidy: no findings"
else
	echo "$found"
	echo "FAIL clang-tidy: $(echo "$found" | wc -l) findings"
	rc=1
fi
echo "--- clang-format $(clang-format --version | grep -o 'version [0-9.]*')"
# the tree as the committed .clang-format lays it out ('git ls-files' so that build trees are left out)
unformatted=$(git ls-files '*.c' '*.h' | while read -r f; do
	if clang-format --dry-run "$f" 2>&1 | grep -q .; then echo "$f"; fi
done)
if [ -z "$unformatted" ]; then
	echo "ok   clang-format: every C file as .clang-format lays it out"
else
	echo "$unformatted" | sed 's/^/  /'
	echo "FAIL clang-format: $(echo "$unformatted" | wc -l) files differ (clang-format -i FILE)"
	rc=1
fi
exit $rc
