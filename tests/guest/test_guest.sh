#!/bin/bash
# The live tests: builds a static tierbal and runs tests/guest/suite.sh in a
# two-node QEMU guest, once per layout. usage: tests/guest/test_guest.sh
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
for layout in numa tier; do
	echo "=== guest, layout $layout ==="
	start=$(date +%s)
	bash tests/guest/run-guest --layout "$layout" --file build-static/tierbal --file tests/guest/suite.sh \
		--file build-static/tests/guest_mover_test --file build-static/tests/guest_softdirty_test \
		--file build-static/tests/guest_hotcold --file build-static/tests/guest_daemon_test \
		--bin "$dyn/guest_hotcold_dyn" --bin build/libtierbal-rt.so \
		-- sh /test/suite.sh "$layout" || rc=1
	echo "=== guest, layout $layout: $(( $(date +%s) - start )) s ==="
done
exit $rc
