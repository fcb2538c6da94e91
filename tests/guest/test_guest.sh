#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The live tests: builds a static tierbal and runs tests/guest/suite.sh in a
# two-node QEMU guest, once per layout on Debian's 6.1, and once more on 6.12
# for the DAMON sampler. usage: tests/guest/test_guest.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -f build-static/build.ninja ]; then
	meson setup build-static -Dbuildtype=release -Dprefer_static=true -Dc_link_args=-static >/dev/null
fi
ninja -C build-static tierbal tests/guest_mover_test tests/guest_softdirty_test tests/guest_hotcold \
	tests/guest_daemon_test >/dev/null
for b in build-static/tierbal build-static/tests/guest_{mover_test,softdirty_test,hotcold,daemon_test}; do
	ldd "$b" >/dev/null 2>&1 && { echo "test_guest: $b is not static" >&2; exit 1; }
done
# tierbal exec needs a dynamic program and the runtime, from the normal build; run-guest --bin
# brings their shared libraries along
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build tests/guest_hotcold libtierbal-rt.so >/dev/null
dyn=$(mktemp -d)
trap 'rm -rf "$dyn"' EXIT
cp build/tests/guest_hotcold "$dyn/guest_hotcold_dyn"
rc=0
# Debian's 6.1 in both layouts, then 6.12 (bookworm ships it too) for what 6.1
# lacks: DAMON's sysfs interface
for boot in 6.1:numa 6.1:tier 6.12:tier:damon; do
	IFS=: read -r kernel layout only <<<"$boot"
	echo "=== guest, kernel $kernel, layout $layout${only:+, $only only} ==="
	start=$(date +%s)
	TB_GUEST_KERNEL=$kernel bash tests/guest/run-guest --layout "$layout" --file build-static/tierbal \
		--file tests/guest/suite.sh --file build-static/tests/guest_mover_test \
		--file build-static/tests/guest_softdirty_test --file build-static/tests/guest_hotcold \
		--file build-static/tests/guest_daemon_test --bin "$dyn/guest_hotcold_dyn" --bin build/libtierbal-rt.so \
		-- sh /test/suite.sh "$layout" $only || rc=1
	echo "=== guest, kernel $kernel, layout $layout: $(( $(date +%s) - start )) s ==="
done
exit $rc
