#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Run every test: unit binaries, then the shell tests of tests/bpf and
# tests/cli.  Each test prints "PASS name", "FAIL name: why" or
# "SKIP name: why"; a test file that exits non-zero without saying FAIL
# counts as one failure.  The last line is the summary "N passed, N failed".
#   run.sh [PATTERN]    only test files whose path contains PATTERN
set -u

OUTPUT=${OUTPUT:-.output}
export OUTPUT
pattern=${1:-}
log=$(mktemp)
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT

run_one() {
	name=$1
	shift
	case "$name" in *"$pattern"*) ;; *) return 0 ;; esac
	echo "--- $name"
	"$@" >"$out" 2>&1
	rc=$?
	cat "$out"
	grep '^\(PASS\|FAIL\|SKIP\) ' "$out" >>"$log"
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$out"; then
		echo "FAIL $name: exited with status $rc" | tee -a "$log"
	fi
}

start=$(date +%s)
for t in "$OUTPUT"/tests/unit/test_*; do
	[ -x "$t" ] && run_one "$t" "$t"
done
for t in tests/bpf/*.sh tests/cli/*.sh; do
	[ -f "$t" ] && run_one "$t" sh "$t"
done

passed=$(grep -c '^PASS ' "$log")
failed=$(grep -c '^FAIL ' "$log")
skipped=$(grep -c '^SKIP ' "$log")
echo
echo "=== summary ($(( $(date +%s) - start ))s)"
grep '^FAIL ' "$log"
if [ "$skipped" -gt 0 ]; then
	echo "!!! $skipped tests SKIPPED -- they did not run:"
	grep '^SKIP ' "$log" | sed 's/^/!!!   /'
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
