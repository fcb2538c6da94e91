#!/bin/sh
# a shim in front of the real program, as version managers have: it forks and execs ~70 processes first
dir=$(dirname "$0")
for i in $(seq 1 22); do
	x=$(echo "$i" | tr 0-9 a-j)
	y=$(basename "/a/$x")
	z=$(expr "$i" \* 3)
done
echo "shim: $x $y $z"
exec python3 "$dir/py_pool.py"
