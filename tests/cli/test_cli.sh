#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Command-line behaviour of 'tierbal sim': exit codes, messages, formats,
# determinism. usage: test_cli.sh TIERBAL DATA_DIR
set -u
TB=$1
DATA=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0

check() { # check NAME EXPECTED_RC GREP_PATTERN -- CMD...
	local name=$1 want=$2 pat=$3
	shift 4
	"$@" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL $name: exit $rc, expected $want"; sed 's/^/  | /' "$TMP/err" | head -5; fail=$((fail + 1)); return
	fi
	if [ -n "$pat" ] && ! grep -qE -- "$pat" "$TMP/out" "$TMP/err"; then
		echo "FAIL $name: output lacks /$pat/"; sed 's/^/  | /' "$TMP/out" "$TMP/err" | head -8; fail=$((fail + 1)); return
	fi
	echo "ok   $name"; pass=$((pass + 1))
}

check "no command" 2 "usage: tierbal" -- "$TB"
check "unknown command" 2 "unknown command 'frob'" -- "$TB" frob
check "version" 0 "^tierbal [0-9]" -- "$TB" --version
check "sim help" 0 "--machine NAME\|FILE" -- "$TB" sim --help
check "unknown option" 2 "unknown option" -- "$TB" sim --bogus
check "missing value" 2 "tierbal sim: --policy needs a value" -- "$TB" sim --policy
check "missing value, short" 2 "tierbal sim: -m needs a value" -- "$TB" sim -m
check "missing machine" 2 "tierbal sim: --machine needs a value" -- "$TB" sim --machine
check "duration too long" 2 "'1e12' is not a number from 0.001 to 1e\+07" -- "$TB" sim --duration 1e12
check "empty policy entry" 2 "'always,,' has an empty entry" -- "$TB" sim --policy always,,
check "scan periods crossed" 2 "numa_balancing_scan_period_min_ms \(70000\) is above numa_balancing_scan_period_max_ms" -- \
	"$TB" sim --set numa_balancing_scan_period_min_ms=70000
printf '[machine]\nname = m\n[node 0]\ncapacity_mib = 1024\n[nodes]\n' >"$TMP/emptysec.ini"
check "empty unknown section" 2 "emptysec.ini:5: \[nodes\]: unknown section" -- "$TB" sim --machine "$TMP/emptysec.ini"
printf '[workload]\nname = w\n[process p]\nanon_mib = 64\n\n[phase later]\n' >"$TMP/emptyphase.ini"
check "empty section" 2 "emptyphase.ini:6: \[phase later\]: empty section" -- "$TB" sim --workload "$TMP/emptyphase.ini"
printf '[workload]\nname = w\n[process p]\nanon_mib = 64\ncpu_node = 5\n' >"$TMP/cpunode.ini"
"$TB" sim --workload "$TMP/cpunode.ini" --quiet >"$TMP/out" 2>"$TMP/err"
[ $? = 2 ] && [ "$(grep -c 'cpunode.ini:5: \[process p\] cpu_node: node 5 of machine small does not exist' "$TMP/err")" = 1 ] \
	&& [ "$(wc -l <"$TMP/err")" = 1 ] && { echo "ok   cpu_node outside the machine: file:line, said once"; pass=$((pass + 1)); } \
	|| { echo "FAIL cpu_node outside the machine"; sed 's/^/  | /' "$TMP/err"; fail=$((fail + 1)); }
mkfifo "$TMP/fifo"
check "a FIFO nobody writes" 2 "fifo: cannot read: not a regular file, and nothing came from it for 10 s" -- \
	timeout 60 "$TB" sim --machine "$TMP/fifo"
check "a directory as input" 2 "cannot read: a directory" -- "$TB" sim --machine "$TMP"
check "bad policy" 2 "'fast' is not a policy" -- "$TB" sim --policy fast
check "bad format" 2 "'xml' is not table, csv or json" -- "$TB" sim --format xml
check "bad duration" 2 "--duration '-1' is not a number from 0.001" -- "$TB" sim --duration -1
check "bad seed" 2 "--seed 'x' is not a whole number" -- "$TB" sim --seed x
check "bad knob" 2 "unknown knob 'nope'" -- "$TB" sim --set nope=1
check "knob range" 2 "numa_balancing: 7 is outside 0..3" -- "$TB" sim --set numa_balancing=7
check "stray argument" 2 "unexpected argument 'extra'" -- "$TB" sim extra
check "unknown machine" 2 "no shipped machines named 'nosuch' \(shipped: small" -- "$TB" sim --machine nosuch
check "missing file" 2 "/nonexistent.ini: cannot open" -- "$TB" sim --workload /nonexistent.ini
check "bad machine file" 2 "bad-machine.ini:7: \[node 0\] read_ns: 'quick' is not a number" -- "$TB" sim --machine "$DATA/bad-machine.ini"
check "workload too big" 2 "workload huge needs 4096 MiB but machine small holds" -- "$TB" sim --workload "$DATA/huge.ini" --duration 0.01 --quiet --policy none
check "list" 0 "hot-threshold" -- "$TB" sim --list
grep -q "numa_balancing_promote_rate_limit_MBps *65536" "$TMP/out" && grep -q "optane-2s" "$TMP/out" && grep -q "tpp-mix" "$TMP/out" \
	&& { echo "ok   list names machines, workloads, knobs"; pass=$((pass + 1)); } \
	|| { echo "FAIL list content"; fail=$((fail + 1)); }
check "unwritable out" 2 "/nonexistent/dir/x: cannot create a file beside it" -- "$TB" sim --out /nonexistent/dir/x --duration 0.1 --quiet

# an output file appears whole or not at all, and never replaces an input or a link
keep_old() { # keep_old NAME FILE: FILE still says OLD, and no temporary file is left beside it
	if [ "$(cat "$2")" = OLD ] && [ -z "$(find "$(dirname "$2")" -name ".$(basename "$2").*")" ]; then
		echo "ok   $1"; pass=$((pass + 1))
	else
		echo "FAIL $1: $(head -c 80 "$2"; ls -a "$(dirname "$2")" | grep -F ".$(basename "$2")." | head -3)"; fail=$((fail + 1))
	fi
}
mkdir "$TMP/o"
echo OLD >"$TMP/o/res"
check "run fails after the inputs" 2 "workload huge needs" -- "$TB" sim --workload "$DATA/huge.ini" --quiet --out "$TMP/o/res"
keep_old "a failed run keeps the old output" "$TMP/o/res"
"$TB" sim --duration 30 --quiet --out "$TMP/o/res" & simpid=$!
for _ in $(seq 200); do [ -n "$(find "$TMP/o" -name '.res.*')" ] && break; sleep 0.05; done
kill -TERM "$simpid"; wait "$simpid"
keep_old "SIGTERM keeps the old output" "$TMP/o/res"
( trap '' XFSZ; exec prlimit --fsize=2048 "$TB" sim --duration 2 --quiet --format json --out "$TMP/o/res" ) >"$TMP/out" 2>"$TMP/err"
[ $? = 1 ] && grep -q "writing $TMP/o/res failed: File too large; the file is as it was" "$TMP/err" \
	&& { echo "ok   a full disk is an error"; pass=$((pass + 1)); } || { echo "FAIL full disk"; cat "$TMP/err"; fail=$((fail + 1)); }
keep_old "a full disk keeps the old output" "$TMP/o/res"
cp "$DATA/../../data/machines/small.ini" "$TMP/o/m.ini"
check "out naming the machine file" 2 "--out $TMP/o/m.ini: that is the machine file this run reads" -- \
	"$TB" sim --machine "$TMP/o/m.ini" --out "$TMP/o/m.ini"
cmp -s "$DATA/../../data/machines/small.ini" "$TMP/o/m.ini" && { echo "ok   the input stays"; pass=$((pass + 1)); } || { echo "FAIL input changed"; fail=$((fail + 1)); }
ln -s res "$TMP/o/link"
check "out through a link" 2 "a symbolic link; output is never written through links" -- "$TB" sim --duration 0.1 --quiet --out "$TMP/o/link"
keep_old "the link's target stays" "$TMP/o/res"
check "out a directory" 2 "not a regular file" -- "$TB" sim --duration 0.1 --quiet --out "$TMP/o"
chmod 640 "$TMP/o/res"
check "out replaced" 0 "" -- "$TB" sim --duration 0.1 --quiet --out "$TMP/o/res"
grep -q "^oracle" "$TMP/o/res" && [ "$(stat -c %a "$TMP/o/res")" = 640 ] \
	&& { echo "ok   a finished run replaces the file, keeping its mode"; pass=$((pass + 1)); } \
	|| { echo "FAIL replaced output"; fail=$((fail + 1)); }

# a short real run in every format
check "table" 0 "" -- "$TB" sim --duration 2 --quiet --out "$TMP/t1"
grep -qE "^hot-threshold " "$TMP/t1" && grep -qE "^oracle .*100\.0%" "$TMP/t1" && { echo "ok   table has the oracle row"; pass=$((pass + 1)); } || { echo "FAIL oracle row"; cat "$TMP/t1"; fail=$((fail + 1)); }
"$TB" sim --duration 2 --quiet --out "$TMP/t2"
cmp -s "$TMP/t1" "$TMP/t2" && { echo "ok   table output byte-identical across runs"; pass=$((pass + 1)); } || { echo "FAIL table differs"; diff "$TMP/t1" "$TMP/t2" | head; fail=$((fail + 1)); }
"$TB" sim --duration 2 --quiet --format csv > "$TMP/c1"; "$TB" sim --duration 2 --quiet --format csv --jobs 1 > "$TMP/c2"
cmp -s "$TMP/c1" "$TMP/c2" && { echo "ok   csv identical with 1 or many threads"; pass=$((pass + 1)); } || { echo "FAIL csv differs"; fail=$((fail + 1)); }
head -1 "$TMP/c1" | grep -q "^policy,t_s,accesses,score" && { echo "ok   csv header"; pass=$((pass + 1)); } || { echo "FAIL csv header"; fail=$((fail + 1)); }
"$TB" sim --duration 2 --quiet --seed 2 --format csv > "$TMP/c3"
cmp -s "$TMP/c1" "$TMP/c3" && { echo "FAIL another seed gave the same series"; fail=$((fail + 1)); } || { echo "ok   another seed, another series"; pass=$((pass + 1)); }
check "json" 0 "" -- "$TB" sim --duration 2 --quiet --format json --policy always,combined --out "$TMP/j1"
python3 - "$TMP/j1" <<'PY' && { echo "ok   json schema"; pass=$((pass + 1)); } || { echo "FAIL json schema"; fail=$((fail + 1)); }
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["policy"] for r in runs] == ["always", "combined", "oracle"], runs
for r in runs:
    for k in ("policy", "score", "fast_share", "oracle_pct", "accesses", "wall_seconds", "counters", "series",
              "overhead_seconds", "kswapd_seconds"):
        assert k in r, k
    assert r["accesses"] > 0 and 0 <= r["fast_share"] <= 1
    for c in ("pgpromote_success", "pgpromote_candidate", "pgdemote_kswapd", "numa_hint_faults", "pgmigrate_success"):
        assert isinstance(r["counters"][c], int), c
    assert len(r["series"]) == 2
assert runs[-1]["oracle_pct"] == 100 and runs[0]["oracle_pct"] < 100
assert runs[-1]["overhead_seconds"] == 0 and runs[0]["overhead_seconds"] > 0  # always pays faults, the oracle none
assert 0 < runs[0]["overhead_seconds"] < runs[0]["modeled_seconds"]
PY
check "trace replay" 0 "^combined " -- "$TB" sim --workload "$DATA/trace.ini" --quiet --check
check "check flag" 0 "invariants held" -- "$TB" sim --duration 1 --check --policy combined

# sweeps
check "sweep" 0 "" -- "$TB" sim --sweep promo_wmark_mode=v13,v10,boost --policy always,adaptive --duration 1 --quiet --out "$TMP/s1"
[ "$(grep -cE '^(v13|v10|boost) +(always|adaptive|oracle) ' "$TMP/s1")" = 9 ] \
	&& { echo "ok   sweep table: 3 values x (2 policies + oracle)"; pass=$((pass + 1)); } \
	|| { echo "FAIL sweep table"; cat "$TMP/s1"; fail=$((fail + 1)); }
check "sweep bad knob" 2 "unknown knob 'nope'" -- "$TB" sim --sweep nope=1,2 --out "$TMP/never"
[ ! -e "$TMP/never" ] && { echo "ok   a rejected sweep writes no output file"; pass=$((pass + 1)); } || { echo "FAIL output file created for a rejected sweep"; fail=$((fail + 1)); }
check "sweep bad value" 2 "watermark_scale_factor: 0 is outside" -- "$TB" sim --sweep watermark_scale_factor=10,0
check "sweep no values" 2 "expected KNOB=V1,V2" -- "$TB" sim --sweep watermark_scale_factor=
check "sweep json" 0 "" -- "$TB" sim --sweep numa_balancing_hot_threshold_ms=100,1000 --policy hot-threshold --duration 1 --quiet --format json --out "$TMP/s2"
python3 - "$TMP/s2" <<'PY' && { echo "ok   sweep json carries the knob and value"; pass=$((pass + 1)); } || { echo "FAIL sweep json"; fail=$((fail + 1)); }
import json, sys
runs = json.load(open(sys.argv[1]))
assert [(r["sweep"]["value"], r["policy"]) for r in runs] == [("100", "hot-threshold"), ("100", "oracle"), ("1000", "hot-threshold"), ("1000", "oracle")], runs
assert all(r["sweep"]["knob"] == "numa_balancing_hot_threshold_ms" for r in runs)
PY
check "sweep csv" 0 "^knob,value,policy,score" -- "$TB" sim --sweep watermark_scale_factor=10,100 --policy none --duration 1 --quiet --format csv
check "adaptive policy" 0 "^adaptive " -- "$TB" sim --policy adaptive --duration 2 --quiet --check

# tierbal run / stat on this one-node host: what can be checked without a second node
# (the daemon itself is tested in the guest, tests/guest/daemon_test.c)
check "run help" 0 "--dry-run" -- "$TB" run --help
check "run without targets" 2 "nothing to manage: give --pid PID or --cgroup PATH" -- "$TB" run
check "run bad pid" 2 "--pid 'x' is not a whole number from 1 to 4194304" -- "$TB" run --pid x
check "run bad duration" 2 "--duration '0' is not a number from 0.001 to 1e\+07" -- "$TB" run --pid 1 --duration 0
check "run relative socket" 2 "--socket 'rel' is not an absolute path" -- "$TB" run --pid 1 --socket rel
check "run bad policy" 2 "--policy: unknown policy 'fast'" -- "$TB" run --pid 1 --policy fast
check "run bad sampler" 2 "--sampler: 'magic' is not auto, damon, softdirty or none" -- "$TB" run --pid 1 --sampler magic
check "run refuses the empty sampler" 2 "--sampler none sees nothing without the hint faults of tierbal exec" -- "$TB" run --pid 1 --sampler none
check "run bad knob" 2 "--set nope=1: unknown knob 'nope'" -- "$TB" run --pid 1 --set nope=1
printf '[daemon]\nsample_ms = fast\n' >"$TMP/bad.ini"
check "run garbage config" 2 "bad.ini:2: \[daemon\] sample_ms: 'fast' is not a whole number" -- "$TB" run --pid 1 --config "$TMP/bad.ini"
check "run missing config" 2 "/nonexistent.ini: cannot open" -- "$TB" run --pid 1 --config /nonexistent.ini
check "run no such pid" 1 "pid 4194304: no such process" -- "$TB" run --pid 4194304 --once --socket "$TMP/s.sock"
check "run unreadable cgroup" 2 "cgroup $TMP/nocg: cannot read its cgroup.procs" -- "$TB" run --cgroup "$TMP/nocg" --socket "$TMP/s.sock"
check "exec help" 0 "--window-kb KB" -- "$TB" exec --help
check "exec listed in help" 0 "exec     run a program under tierbal" -- "$TB" help
check "exec bad window" 2 "--window-kb '48' is not a power of two from 4 to 2048" -- "$TB" exec --window-kb 48 -- true
check "exec unknown option" 2 "unknown" -- "$TB" exec --bogus -- true
# a socket path never removes what is not a stale socket
echo IMPORTANT >"$TMP/f"
check "exec socket on a file" 2 "control socket $TMP/f: a file that is not a socket is there" -- "$TB" exec --socket "$TMP/f" -- true
printf '[daemon]\nsocket = %s\n' "$TMP/f" >"$TMP/sockcfg.ini"
check "run socket on a file" 2 "a file that is not a socket is there" -- "$TB" run --pid $$ --once --config "$TMP/sockcfg.ini"
check "exec socket on a file, from the configuration" 2 "a file that is not a socket is there" -- \
	"$TB" exec --config "$TMP/sockcfg.ini" -- true
ln -s f "$TMP/flink"
check "run socket on a link" 2 "a symbolic link is there" -- "$TB" run --pid $$ --once --socket "$TMP/flink"
[ "$(cat "$TMP/f")" = IMPORTANT ] && [ -L "$TMP/flink" ] && { echo "ok   the file and the link stay"; pass=$((pass + 1)); } \
	|| { echo "FAIL the socket path removed a file"; fail=$((fail + 1)); }
check "exec stats through a link" 2 "a symbolic link" -- "$TB" exec --stats="$TMP/flink" -- true
check "exec log through a link" 2 "a symbolic link" -- "$TB" exec --log "$TMP/flink" -- true
[ "$(cat "$TMP/f")" = IMPORTANT ] && { echo "ok   exec wrote nothing through links"; pass=$((pass + 1)); } \
	|| { echo "FAIL exec wrote through a link"; fail=$((fail + 1)); }
# tierbal exec's messages go to its log, never to the program's streams
"$TB" exec --log "$TMP/exec.log" -- sh -c 'echo out; echo err >&2; exit 3' >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 3 ] && [ "$(cat "$TMP/out")" = out ] && [ "$(cat "$TMP/err")" = err ] && grep -q "tierbal exec: started" "$TMP/exec.log" \
	&& { echo "ok   exec leaves the program's streams alone"; pass=$((pass + 1)); } \
	|| { echo "FAIL exec streams: rc $rc, stderr '$(head -c 200 "$TMP/err")'"; fail=$((fail + 1)); }
# a control request that ends with the end of its input, without a newline, is answered
"$TB" exec --socket "$TMP/ctl.sock" -- sh -c 'read x' </dev/zero 2>/dev/null &
execpid=$!
for _ in $(seq 400); do [ -S "$TMP/ctl.sock" ] && break; sleep 0.05; done
python3 - "$TMP/ctl.sock" >"$TMP/out" 2>&1 <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"stat")
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
PY
grep -q "^pgpromote_success " "$TMP/out" && { echo "ok   a request without a newline is answered"; pass=$((pass + 1)); } \
	|| { echo "FAIL request without a newline: $(head -c 200 "$TMP/out")"; fail=$((fail + 1)); }
kill "$execpid" 2>/dev/null; wait "$execpid" 2>/dev/null
[ ! -e "$TMP/ctl.sock" ] && { echo "ok   the socket is gone when the daemon ends"; pass=$((pass + 1)); } \
	|| { echo "FAIL the control socket stayed"; fail=$((fail + 1)); }
check "stat without daemon" 1 "no tierbal daemon at $TMP/s.sock" -- "$TB" stat --socket "$TMP/s.sock"
check "stat bad argument" 2 "unknown argument '--xml'" -- "$TB" stat --xml
# privilege: without CAP_SYS_NICE tierbal moves nothing, whatever it is asked to manage
if [ "$(id -u)" = 0 ]; then
	sleep 30 &
	own=$!
	check "run as an unprivileged user" 1 "tierbal run needs CAP_SYS_NICE" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$TB" run --pid "$own" --once
	check "exec as an unprivileged user" 1 "tierbal exec needs CAP_SYS_NICE" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$TB" exec -- true
	kill "$own"
else
	echo "FAIL privilege checks: these tests need root (to become an unprivileged user)"; fail=$((fail + 1))
fi
# a device where a file was expected: refused after a bounded read, not read forever
check "machine from /dev/zero" 2 "/dev/zero: cannot read: not a regular file" -- "$TB" sim --machine /dev/zero

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
