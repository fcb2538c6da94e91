#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The one closing line of scripts/test.sh: test cases passed, failed and
skipped, counted from each suite's own summary (meson's test logs of both
builds, the guest boots, fuzzing, static analysis, valgrind). A suite that
reported no result counts as failed.
usage: test-summary.py RELEASE_TESTLOG ASAN_TESTLOG GUEST_LOG FUZZ_LOG ANALYZE_LOG VALGRIND_LOG
"""
import json, re, sys
passed = failed = skipped = 0
for path, name in [(sys.argv[4], "fuzz"), (sys.argv[6], "valgrind")]:
    r = re.findall(rf"^{name}: (\d+) passed, (\d+) failed", open(path).read(), re.M)
    if not r:
        print(f"failed suite: {name} (no result)")
        failed += 1
    passed += sum(int(p) for p, _ in r)
    failed += sum(int(f) for _, f in r)
analysis = open(sys.argv[5]).read()
passed += len(re.findall(r"^ok ", analysis, re.M))
failed += len(re.findall(r"^FAIL ", analysis, re.M))
guest = open(sys.argv[3]).read()
runs = re.findall(r"^guest: (\d+) passed, (\d+) failed", guest, re.M)
passed += sum(int(p) for p, _ in runs)
failed += sum(int(f) for _, f in runs)
if len(runs) != 3:
    print(f"failed suite: guest ({3 - len(runs)} of its 3 boots reported no result)")
    failed += 1
for path in sys.argv[1:3]:
    for line in open(path):
        r = json.loads(line)
        out = r.get("stdout", "") + "\n" + (r.get("stderr") or "")
        p = re.findall(r"\[  PASSED  \] (\d+) test", out) + re.findall(r"^(\d+) passed, \d+ failed", out, re.M)
        f = re.findall(r"\[  FAILED  \] (\d+) test", out) + re.findall(r"^\d+ passed, (\d+) failed", out, re.M)
        passed += sum(map(int, p))
        failed += sum(map(int, f))
        # skipped is not passed: a kernel without a feature skips its checks, and says so
        skipped += sum(map(int, re.findall(r"\[  SKIPPED \] (\d+) test", out) +
                       re.findall(r"^\d+ passed, \d+ failed, (\d+) skipped", out, re.M)))
        if r.get("result") != "OK":
            print("failed suite:", path.split("/")[0], r.get("name"), r.get("result"))
            if not f:
                failed += 1
print(f"tests: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
