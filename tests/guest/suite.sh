#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the guest (busybox sh): the live tests. usage: suite.sh LAYOUT [damon]
# With "damon" (on a kernel that has DAMON's sysfs interface): the topology
# tests, tierbal run with the DAMON sampler, and tierbal exec.
layout=$1
only=${2:-}
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# 1. topology: node 0 is fast with the 2 CPUs, node 1 is slow
t=$(tierbal topology --json) || bad "tierbal topology failed"
echo "$t"
echo "$t" | grep -q '"node": 0, "cpus": 2, .*"tier": 0,' && ok "node 0: 2 CPUs, tier 0" || bad "node 0"
echo "$t" | grep -q '"node": 1, "cpus": 0, .*"tier": 1,' && ok "node 1: no CPU, tier 1" || bad "node 1"
if [ "$layout" = tier ]; then
	echo "$t" | grep -q '"tier_source": "memory_tiering"' && ok "tiers taken from the kernel's memory_tiering" || bad "tier source"
	echo "$t" | grep -q '"node": 1, .*"kernel_tier": 22,' && ok "node 1 in memory_tier22" || bad "kernel tier of node 1"
else
	echo "$t" | grep -q '"tier_source": "cpu-less nodes are slow"' && ok "one kernel tier: CPU-less node taken as slow" || bad "tier source"
fi
echo "$t" | grep -q '"node": 0, .*"distance": \[10, [0-9]*\]' && ok "distances read" || bad "distances"

# 2. the mover: real move_pages between the nodes, placement, integrity, errors
# 3. the soft-dirty sampler: exactly the written pages
# 4. the daemon: promotion with demotion, integrity, errors and signals, --dry-run, a hot set
#    of transparent huge pages (THP always, and never)
# 5. (damon) the DAMON sampler on a kernel that has it (also with a huge hot set), and tierbal
#    exec there too: a kernel that moves pages for a userfaultfd (6.8 and later), so reads fault too
progs="guest_mover_test guest_softdirty_test guest_daemon_test"
[ "$only" = damon ] && progs="guest_daemon_test:damon guest_daemon_test:exec"
for run in $progs; do
	prog=${run%%:*}
	arg=$only
	[ "$prog" != "$run" ] && arg=${run#*:}
	out=$($prog $arg)
	echo "$out"
	line=$(echo "$out" | grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | sed 's/^[a-z]*: \([0-9]*\) passed.*/\1/')
		f=$(echo "$line" | sed 's/.* passed, \([0-9]*\) failed$/\1/')
		pass=$((pass + p))
		fail=$((fail + f))
	else
		bad "$prog gave no result"
	fi
done

echo "guest: $pass passed, $fail failed"
[ "$fail" = 0 ]
