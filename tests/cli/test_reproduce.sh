#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/reproduce --quick end to end: every scenario section, table and plot is produced.
# usage: test_reproduce.sh TIERBAL SOURCE_DIR
set -u
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# bench/placement's section, which reproduce must keep as it is
printf '# old\n\n<!-- placement: begin -->\nPLACEMENT SECTION\n<!-- placement: end -->\n' >"$TMP/REPORT.md"
if TIERBAL=$1 python3 "$2/bench/reproduce" --quick --out "$TMP" 2>"$TMP/err"; then ok "reproduce --quick ran"; else bad "reproduce failed"; cat "$TMP/err"; fi
[ "$(grep -c '^## [1-6]\. ' "$TMP/REPORT.md" 2>/dev/null)" = 6 ] && ok "six scenario sections" || bad "scenario sections"
grep -q "^| 1. pmbench, sigma 5% | " "$TMP/REPORT.md" 2>/dev/null && ok "adaptive summary table" || bad "summary table"
n=$(ls "$TMP"/plots/*.png 2>/dev/null | wc -l)
[ "$n" = 6 ] && ok "six PNG plots" || bad "$n plots"
for f in "$TMP"/plots/*.png; do
	head -c 8 "$f" | od -An -tx1 | grep -q "89 50 4e 47" || { bad "$f is not a PNG"; continue; }
done
grep -q "up to +95.9%" "$TMP/REPORT.md" 2>/dev/null && ok "published figures in the report" || bad "published figures"
grep -q '^PLACEMENT SECTION$' "$TMP/REPORT.md" && ! grep -q '^# old$' "$TMP/REPORT.md" &&
	ok "bench/placement's section kept, the rest written anew" || bad "placement section"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
