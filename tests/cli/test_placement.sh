#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/placement: the section it writes from saved results (figures computed from them, markers
# replaced in place, the rest of the report kept), one real simulation of a tiny matrix, and
# bench/reproduce keeping the section when it rewrites the report.
# usage: test_placement.sh TIERBAL SOURCE_DIR
set -u
TB=$1 SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# two workloads with known scores: adaptive is worst on the second (40%), hot-threshold under none on both
python3 - "$TMP/raw.json" <<'PY'
import json, sys
pols = ["none", "always", "hot-threshold", "active-lru", "combined", "adaptive"]
def entry(machine, pct):
    return {"cell": {"machine": machine, "size": 2, "dist": "uniform", "procs": 1, "read": 0.8}, "variant": None,
            "runs": [{"policy": p, "score": 1e6, "oracle_pct": pct[p], "fast_share": 0.5, "pingpong": 7,
                      "migrated": 1234} for p in pols]}
a = dict(zip(pols, [95.0, 50.0, 60.0, 70.0, 80.0, 92.0]))
b = dict(zip(pols, [99.0, 30.0, 35.0, 36.0, 37.0, 40.0]))
raw = {"date": "2026-01-01", "shown": "bench/placement --test", "duration": 5, "jobs": 1, "wall_s": 60,
       "skipped": ["small at 4x: 4096 MiB in 4096 MiB of memory"], "errors": [],
       "results": {"a": entry("small", a), "b": entry("cxl-1to4", b)}}
json.dump(raw, open(sys.argv[1], "w"))
PY
printf '# Report\n\nbefore\n\n<!-- placement: begin -->\nSTALE\n<!-- placement: end -->\n\nafter\n' >"$TMP/REPORT.md"
if python3 "$SRC/bench/placement" --from "$TMP/raw.json" --out "$TMP" 2>"$TMP/err"; then
	ok "placement --from ran"
else
	bad "placement --from failed: $(cat "$TMP/err")"
fi
R=$TMP/REPORT.md
grep -q STALE "$R" && bad "the old section is still there" || ok "old section replaced"
grep -q '^before$' "$R" && grep -q '^after$' "$R" && ok "the rest of the report kept" || bad "text around the section lost"
[ "$(grep -c 'placement: begin' "$R")" = 1 ] && ok "one section" || bad "$(grep -c 'placement: begin' "$R") sections"
grep -q '^| adaptive | 40.0% | 66.0% | 1 of 2 | 2 | 0 |$' "$R" && ok "adaptive: worst, median, at 90%, below none, below hot-threshold" ||
	bad "adaptive's row: $(grep '^| adaptive |' "$R")"
grep -q '^| hot-threshold | 35.0% | 47.5% | 0 of 2 | 2 | - |$' "$R" && ok "hot-threshold's row" || bad "hot-threshold's row"
grep -q '^| cxl-1to4 uniform 2x 1p r0.8 | 99.0% | 35.0% | combined 37.0% | 40.0% |' "$R" && ok "worst workload first, best kernel policy named" ||
	bad "worst-workload table: $(grep -A3 'does worst' "$R" | tail -1)"
grep -q 'Not run: small at 4x' "$R" && ok "cells that do not fit are said" || bad "skipped cells not said"
head -c 8 "$TMP/plots/placement-heat.png" 2>/dev/null | od -An -tx1 | grep -q "89 50 4e 47" && ok "heat map is a PNG" || bad "no heat map"

# a real run: the quick matrix is too long for the suite, so one machine file's worth through run_one
if TIERBAL=$TB python3 - "$SRC/bench/placement" "$TMP" <<'PY' 2>"$TMP/err2"; then
import sys
from importlib.machinery import SourceFileLoader
m = SourceFileLoader("placement", sys.argv[1]).load_module()
cp, fast, total, nodes = m.read_machine("small")
c = {"machine": "small", "size": 0.5, "dist": "zipf1.0", "procs": 2, "read": 0.8}
text = m.machine_variant(cp, "hint_fault_ns", 2)
assert "hint_fault_ns = 2000" in text and "read_mbps = 50000" not in text, text
assert "read_mbps = 50000" in m.machine_variant(cp, "mbps", 2)
runs, err = m.run_one({"cell": c, "machine_text": text, "key": "t",
                       "fast": fast, "cpu_nodes": nodes}, sys.argv[2], 2)
assert err is None, err
pols = sorted(r["policy"] for r in runs)
assert pols == sorted(m.POLICIES + ["oracle"]), pols
assert all(r["oracle_pct"] > 0 for r in runs), runs
assert fast == 1024 and total == 4096, (fast, total)
PY
	ok "one simulation of every policy, with a cost doubled"
else
	bad "simulation: $(cat "$TMP/err2")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
