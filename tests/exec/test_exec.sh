#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tierbal exec must be invisible: each program gives the same output and exit
# status with and without it, while tierbal really write-protects its pages
# and resolves the faults (the counters say how many).
# usage: test_exec.sh TIERBAL TEST_BUILD_DIR RUNTIME_LIB
set -u
TB=$1
BIN=$2
export TIERBAL_RT_LIB=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
ulimit -c 0 # the crash test must not leave core files
pass=0 fail=0 skipped=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
skip() { echo "skip $1"; skipped=$((skipped + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# aggressive scanning, page by page, so that even short programs are scanned many times; mode 3 also scans
# the fast tier, which is all this one-node machine has, and scans
# the whole of it; memory maps re-read every 100 ms, so that a short program's big buffer is seen in time
printf '[daemon]\nrefresh_ms = 100\n' >fast.ini
FAST=(--config "$TMP/fast.ini" --set numa_balancing=3 --scan-delay-ms 1 --scan-period-ms 50 --scan-size-mb 64
	--sample-ms 50 --window-kb 4)

stat_of() { # stat_of FILE NAME
	awk -v n="$2" '$1 == n {print $2}' "$1"
}

# same NAME MIN_FAULTS -- CMD...: output, error output and status identical; hint faults worth at
# least MIN_FAULTS pages taken by tierbal
same() {
	local name=$1 min=$2
	shift 3
	# in a subshell each, so that bash's own "Segmentation fault" notice stays out of the log
	("$@" >plain.out 2>plain.err </dev/null) 2>/dev/null
	local rc1=$?
	("$TB" exec "${FAST[@]}" --stats="$TMP/stats" --log "$TMP/log" -- "$@" >tb.out 2>tb.err </dev/null) 2>/dev/null
	local rc2=$?
	if [ "$rc1" != "$rc2" ]; then
		bad "$name: exit status $rc2 under tierbal exec, $rc1 without"
		sed 's/^/  | /' tb.err "$TMP/log" | tail -8
		return
	fi
	if ! cmp -s plain.out tb.out || ! cmp -s plain.err tb.err; then
		bad "$name: output differs under tierbal exec"
		diff plain.out tb.out | head -5 | sed 's/^/  | /'
		diff plain.err tb.err | head -5 | sed 's/^/  | /'
		return
	fi
	# a fault on a huge page lifted whole stands for its 512 pages (THP always: sort's buffers are huge)
	local faults huge watched
	faults=$(stat_of "$TMP/stats" uffd_faults)
	huge=$(stat_of "$TMP/stats" uffd_faults_huge)
	watched=$((${faults:-0} + 511 * ${huge:-0}))
	if [ "$watched" -lt "$min" ]; then
		bad "$name: only ${faults:-no} hint faults, ${huge:-0} of them on huge pages (wanted at least $min pages' worth): tierbal did not really watch it"
		sed 's/^/  | /' "$TMP/log" | tail -5
		return
	fi
	local drop errs lost unsafe reads
	drop=$(stat_of "$TMP/stats" uffd_queue_dropped)
	errs=$(stat_of "$TMP/stats" uffd_resolve_errors)
	lost=$(stat_of "$TMP/stats" park_lost_pages)
	unsafe=$(stat_of "$TMP/stats" park_forks_unsafe)
	reads=$(stat_of "$TMP/stats" uffd_faults_read)
	if [ "${lost:-0}" != 0 ] || [ "${unsafe:-0}" != 0 ]; then
		bad "$name: $lost parked pages could not be put back, $unsafe forks with pages away"
		return
	fi
	ok "$name: same output and exit status $rc1, $faults hint faults ($reads reads, $huge huge), $drop dropped, $errs unresolved"
}

same "own SIGSEGV handler" 100 -- "$BIN/exec_segv_handler"
grep -q "handler ran 12000 times (wanted 12000), right fault addresses" plain.out && ok "the program's handler saw only its own faults" ||
	bad "segv_handler: $(cat plain.out)"
same "a real crash (SIGSEGV)" 100 -- "$BIN/exec_crash"
grep -q "about to crash" plain.out && [ "$(wc -l <plain.out)" = 1 ] && ok "the crash happens at the same place" ||
	bad "the crash test did not crash where it should"
same "8 threads writing" 100 -- "$BIN/exec_threads"
same "fork and exec" 100 -- "$BIN/exec_forkexec"
procs=$(stat_of "$TMP/stats" uffd_processes)
[ "${procs:-0}" -ge 3 ] && ok "the forked child and the exec'd image handed over their memory too ($procs processes)" ||
	bad "fork/exec: only ${procs:-0} processes reached tierbal (want 3: the program, its child, the exec'd image)"
held=$(stat_of "$TMP/stats" park_forks_held)
parking=$(stat_of "$TMP/stats" park_processes)
if [ "${parking:-0}" = 0 ]; then
	skip "fork with pages parked: this kernel cannot move pages (UFFDIO_MOVE, Linux 6.8): writes only"
elif [ "${held:-0}" -ge 2 ]; then
	ok "both forks waited until every parked page was back ($held forks held)"
else
	bad "fork/exec: ${held:-0} forks held (want 2): the runtime did not warn tierbal before forking"
fi
same "mmap/mremap/madvise/munmap churn, mappings bounded" 100 -- "$BIN/exec_churn"
same "kernel writes into protected buffers, timer signals" 100 -- "$BIN/exec_io" "$TMP/io.dat"

# reads: a program that only reads takes read hint faults where pages can be parked, and none
# with --read-faults off
same "a program that only reads" 100 -- "$BIN/exec_reads" 32 40
reads=$(stat_of "$TMP/stats" uffd_faults_read)
if [ "${parking:-0}" = 0 ]; then
	skip "read hint faults: this kernel cannot move pages (UFFDIO_MOVE, Linux 6.8): writes only"
elif [ "${reads:-0}" -ge 100 ]; then
	ok "its reads are hint faults: ${reads} read faults, parked windows come back intact"
else
	bad "a program that only reads took ${reads:-0} read hint faults (want at least 100)"
fi
"$TB" exec "${FAST[@]}" --read-faults off --stats="$TMP/stats" -- "$BIN/exec_reads" 32 20 >off.out 2>/dev/null
if grep -q "checksum" off.out && [ "$(stat_of "$TMP/stats" uffd_faults_read)" = 0 ] &&
	[ "$(stat_of "$TMP/stats" park_processes)" = 0 ]; then
	ok "--read-faults off: write protection only, no read fault"
else
	bad "--read-faults off: $(stat_of "$TMP/stats" uffd_faults_read) read faults, $(stat_of "$TMP/stats" park_processes) processes parking"
fi

# killed_under WHAT MIN AWK -- PROGRAM...: tierbal exec is killed with SIGKILL once AWK, over what
# tierbal stat says, reaches MIN; the program must run on to the same output as without tierbal
killed_under() {
	local what=$1 min=$2 expr=$3 sock="$TMP/k$2.sock"
	shift 4
	"$@" >plain.out 2>/dev/null
	"$TB" exec "${FAST[@]}" --socket "$sock" -- "$@" >killed.out 2>killed.err &
	local tbpid=$! seen=0 child
	for _ in $(seq 600); do # until tierbal is well into its work
		seen=$("$TB" stat --socket "$sock" 2>/dev/null | awk "$expr")
		[ "${seen:-0}" -ge "$min" ] && break
		sleep 0.05
	done
	child=$(pgrep -P "$tbpid" | head -1)
	kill -KILL "$tbpid"
	wait "$tbpid" 2>/dev/null
	for _ in $(seq 1200); do
		[ -n "$child" ] && kill -0 "$child" 2>/dev/null || break
		sleep 0.05
	done
	if [ "${seen:-0}" -lt "$min" ] || [ -z "$child" ]; then
		bad "SIGKILL of tierbal exec $what: only ${seen:-0} (wanted $min), or no child"
	elif kill -0 "$child" 2>/dev/null; then
		bad "SIGKILL of tierbal exec $what: the program (pid $child) did not finish within a minute"
	elif cmp -s plain.out killed.out; then
		ok "tierbal exec killed with SIGKILL $what ($seen): the program finishes with the same output"
	else
		bad "SIGKILL of tierbal exec $what: the program's output differs"
		diff plain.out killed.out | head -5 | sed 's/^/  | /'
	fi
}

# with pages write-protected, the kernel drops the protection with the last userfaultfd reference
killed_under "after hint faults, pages write-protected" 20 '$1 == "uffd_faults" {print $2}' -- "$BIN/exec_threads"
# with windows parked, the runtime's mover sees tierbal's end and puts every page back
if [ "${parking:-0}" != 0 ]; then
	killed_under "with windows parked" 50 '$1 == "park_windows" {w = $2} $1 == "park_restored" {r = $2} END {print w - r}' \
		-- "$BIN/exec_reads" 32 200
else
	skip "SIGKILL with pages parked: this kernel cannot move pages"
fi

# real programs
python3 - >lines.txt <<'PY'
import random
r = random.Random(42)
words = ["tier", "page", "node", "hot", "cold", "numa", "fault", "scan", "demote", "promote"]
for i in range(600000):
    print(" ".join(r.choice(words) for _ in range(r.randint(2, 9))), r.randint(0, 10**9))
PY
# a fixed buffer: sort's default grows with the machine's memory, and meson's MALLOC_PERTURB_ fills
# all of it (1.5 GiB on 24 GiB) faster than tierbal scans it; temporary files in the test's directory
same "sort of two copies of a generated file, 16 MiB buffer" 100 -- sort -S 16M -T "$TMP" lines.txt lines.txt
# three copies: with a 64 MiB buffer, long enough (about 3 s) for tierbal to see and scan the buffer
same "sort -n -k2 -S 64M of 1.8 M lines" 100 -- sort -n -k2 -S 64M lines.txt lines.txt lines.txt
same "gzip round trip" 1 -- sh -c 'gzip -c lines.txt | gzip -dc | cksum'
same "xz round trip" 100 -- sh -c 'xz -c -T1 lines.txt | xz -dc | cksum'
if command -v sqlite3 >/dev/null; then
	cat >db.sql <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 800000)
INSERT INTO t SELECT x, (x * 7919) % 1000, hex(randomblob(16)) FROM c;
CREATE INDEX tk ON t(k);
SELECT k, count(*), sum(id) FROM t GROUP BY k ORDER BY k LIMIT 5;
SELECT count(DISTINCT k), max(id) FROM t WHERE k BETWEEN 10 AND 500;
SQL
	# randomblob differs between runs: only deterministic columns are printed
	same "sqlite3 on a generated database" 100 -- sqlite3 :memory: ".read db.sql"
else
	bad "sqlite3 is not installed (scripts/setup.sh installs it)"
fi

# errors and edge cases of the command itself
"$TB" exec -- /nonexistent/prog >out 2>err
rc=$?
[ $rc = 127 ] && grep -q "cannot run /nonexistent/prog: No such file" err && ok "a missing program: status 127, says so" ||
	bad "missing program: status $rc: $(cat err)"
printf '#!/bin/sh\n' >noexec.sh
"$TB" exec -- ./noexec.sh >out 2>err
rc=$?
[ $rc = 126 ] && grep -q "Permission denied" err && ok "a program that is not executable: status 126" ||
	bad "not executable: status $rc: $(cat err)"
"$TB" exec >out 2>err
[ $? = 2 ] && grep -q "no program given" err && ok "no program: usage error" || bad "no program: $(cat err)"
"$TB" exec --scan-period-ms 0 -- true >out 2>err
[ $? = 2 ] && grep -q -- "--scan-period-ms '0' is not a whole number from 1 to 100000000" err && ok "a bad knob value is refused" ||
	bad "bad knob: $(cat err)"
"$TB" exec -- sh -c 'exit 42'
[ $? = 42 ] && ok "the program's exit status is tierbal's" || bad "exit status not passed on"
("$TB" exec -- sh -c 'kill -TERM $$') 2>/dev/null
[ $? = 143 ] && ok "death by a signal is passed on (SIGTERM: 143)" || bad "signal death not passed on"
# SIGTERM and SIGHUP sent to tierbal exec go to the program, which ends as it chooses; tierbal stays
# until then (its fault thread must not take the signal's default action for the whole process)
# (a signal this test was started with ignored stays ignored, under tierbal as without it: not tested then)
ignored=$(awk '/^SigIgn:/ {print $2}' /proc/$$/status)
for sig in TERM HUP; do
	if [ "$sig" = TERM ]; then bit=15; else bit=1; fi
	if (( 0x$ignored >> (bit - 1) & 1 )); then
		echo "note SIG$sig is ignored here (started under nohup?): its hand-over is not tested"
		continue
	fi
	rm -f "$TMP/sig.log"
	"$TB" exec --log "$TMP/sig.log" -- sh -c "trap 'echo got-$sig; exit 7' $sig; while :; do sleep 0.05; done" >out 2>err &
	tb=$!
	for _ in $(seq 400); do grep -q "tierbal: running" "$TMP/sig.log" 2>/dev/null && break; sleep 0.05; done
	kill -"$sig" "$tb"
	for _ in $(seq 200); do kill -0 "$tb" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$tb" 2>/dev/null && pkill -KILL -f "got-$sig" # still there after 10 s: a failure, not a hang
	wait "$tb"
	rc=$?
	[ $rc = 7 ] && [ "$(cat out)" = "got-$sig" ] && ok "SIG$sig to tierbal exec is passed on to the program" ||
		bad "SIG$sig to tierbal exec: status $rc, output '$(cat out)'"
done
"$TB" exec --log "$TMP/static.log" -- /bin/busybox true 2>/dev/null
if [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; then
	grep -q "statically linked: LD_PRELOAD cannot reach it" "$TMP/static.log" &&
		ok "a static program is run, and the log says it gets no hint faults" || bad "static program not reported"
fi
out=$( (trap '' HUP; "$TB" exec -- sh -c 'kill -HUP $$; echo survived') 2>&1)
[ "$out" = survived ] && ok "an ignored signal stays ignored in the program (as under nohup)" ||
	bad "ignored SIGHUP not passed on: $out"
echo hello | "$TB" exec -- cat >out
[ "$(cat out)" = hello ] && ok "standard input and output are the program's" || bad "stdin/stdout not passed through"
TIERBAL_RT_LIB=/nonexistent.so "$TB" exec -- true 2>err
[ $? = 1 ] && grep -q "TIERBAL_RT_LIB=/nonexistent.so" err && ok "a missing runtime library is reported" ||
	bad "missing runtime: $(cat err)"

echo "$pass passed, $fail failed, $skipped skipped (not counted as passed)"
[ "$fail" = 0 ]
