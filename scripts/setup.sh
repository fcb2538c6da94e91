#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs what building tierbal needs (Debian bookworm, apt only) and builds
# it into build/. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(gcc libc6-dev meson ninja-build pkg-config libinih-dev libcmocka-dev libnuma-dev libcap-dev python3 gnuplot-nox
	  xz-utils sqlite3 make git perl gzip clang libclang-rt-14-dev clang-tidy clang-format cppcheck valgrind)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
		exit 1
	fi
	echo "setup: installing ${missing[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
echo "setup: built build/tierbal" >&2
