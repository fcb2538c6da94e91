#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The non-guest test suites under valgrind's memcheck (any error or definite
# leak fails): the cmocka unit tests (part of scripts/test.sh); with --full
# also the command-line and reproduction tests with tierbal itself run under
# valgrind (about 11 minutes on two cores, so not part of CI).
# Left out, because valgrind 3.19 does not implement userfaultfd (syscall 323):
# u-uffd, u-live-exec, test_uffd_park, u-live-oom's test_exec_* and the tierbal exec tests; ASan
# covers them (scripts/test.sh).
# usage: scripts/valgrind.sh [--full]   (needs build/: scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build >/dev/null
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --track-fds=no)
wrap=$(mktemp)
trap 'rm -f "$wrap"' EXIT
printf '#!/bin/sh\nexec %s %s "$@"\n' "${vg[*]}" "$PWD/build/tierbal" >"$wrap"
chmod 755 "$wrap" # the privilege tests run it as nobody
pass=0 fail=0
suite() { # name command...
	local name=$1 start=$SECONDS
	shift
	if "$@" >"build/valgrind-$name.log" 2>&1; then
		echo "ok   $name under valgrind ($((SECONDS - start)) s)"
		pass=$((pass + 1))
	else
		echo "FAIL $name under valgrind: build/valgrind-$name.log"
		grep -E "==[0-9]+==|FAIL|ERROR" "build/valgrind-$name.log" | head -20
		fail=$((fail + 1))
	fi
}
for exe in build/tests/u-*; do
	[ -f "$exe" ] && [ -x "$exe" ] || continue
	t=${exe#build/tests/u-}
	case $t in
	uffd | live-exec) continue ;;
	engine-scan) skip=test_table_lazy ;; # under valgrind the RSS is valgrind's too
	park) skip=test_uffd_park ;;
	live-oom) skip="test_exec_*" ;;
	*) skip= ;;
	esac
	suite "$t" env TB_TEST_SKIP="$skip" "${vg[@]}" "$exe"
done
if [ "${1:-}" = --full ]; then
	suite cli bash tests/cli/test_cli.sh "$wrap" tests/data
	suite reproduce bash tests/cli/test_reproduce.sh "$wrap" "$PWD"
fi
echo "valgrind: $pass passed, $fail failed"
[ "$fail" = 0 ]
