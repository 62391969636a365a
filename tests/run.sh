#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Run every test: unit binaries, then the shell tests of tests/bpf, tests/agent,
# tests/cli, tests/archive and tests/deploy.  Each test prints "PASS name", "FAIL name: why" or
# "SKIP name: why"; a test file that exits non-zero without saying FAIL
# counts as one failure.  The last line is the summary "N passed, N failed".
# Under CI (CI set) a skipped test counts as failed too.
#   run.sh [PATTERN]    only test files whose path contains PATTERN
set -u

# A fresh machine (and most containers) mounts neither tracefs nor debugfs;
# this one may have them from an earlier tool.  As root, run the suite in a
# private mount namespace without them, so nothing can come to rely on them.
if [ "$(id -u)" = 0 ] && [ -z "${CULPERT_TEST_MNTNS:-}" ] && command -v unshare >/dev/null; then
	CULPERT_TEST_MNTNS=1 exec unshare --mount --propagation private sh "$0" "$@"
fi
if [ -n "${CULPERT_TEST_MNTNS:-}" ]; then
	for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do
		while grep -q " $m " /proc/self/mounts; do umount -l "$m" || break; done
	done
	if grep -qE ' (tracefs|debugfs) ' /proc/self/mounts; then
		echo "FAIL harness: tracefs or debugfs still mounted in the test namespace"
		exit 1
	fi
fi

OUTPUT=${OUTPUT:-.output}
export OUTPUT
pattern=${1:-}
log=$(mktemp)
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT

# a test file that runs longer than this is stopped and fails (TEST_TIMEOUT=seconds)
limit=${TEST_TIMEOUT:-600}

run_one() {
	name=$1
	shift
	case "$name" in *"$pattern"*) ;; *) return 0 ;; esac
	echo "--- $name"
	timeout -k 10 "$limit" "$@" >"$out" 2>&1
	rc=$?
	cat "$out"
	grep '^\(PASS\|FAIL\|SKIP\) ' "$out" >>"$log"
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "FAIL $name: stopped after the ${limit}s limit of a test file" | tee -a "$log"
	elif [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$out"; then
		echo "FAIL $name: exited with status $rc" | tee -a "$log"
	fi
}

start=$(date +%s)
for t in "$OUTPUT"/tests/unit/test_*; do
	[ -x "$t" ] && run_one "$t" "$t"
done
for t in tests/bpf/*.sh tests/agent/*.sh tests/cli/*.sh tests/archive/*.sh tests/deploy/*.sh; do
	[ -f "$t" ] && run_one "$t" sh "$t"
done

# The sanitizer pass (make test under CI): the unit tests and the CLI test
# files again, against the ASan/UBSan build in SAN_OUTPUT (targets are the
# plain build's), named "asan:..."; then each fuzz harness a short while.
if [ -n "${SAN_OUTPUT:-}" ]; then
	san="OUTPUT=$SAN_OUTPUT TARGETS=$OUTPUT/tests/targets TEST_PREFIX=asan: CULPERT_SANITIZED=1"
	san="$san ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1"
	for t in "$SAN_OUTPUT"/tests/unit/test_*; do
		# shellcheck disable=SC2086
		[ -x "$t" ] && run_one "asan:$t" env $san "$t"
	done
	for t in tests/cli/*.sh; do
		# the layout check reads sources, no binary
		case "$t" in */test_layout.sh) continue ;; esac
		# shellcheck disable=SC2086
		[ -f "$t" ] && run_one "asan:$t" env $san sh "$t"
	done
fi
if [ -n "${FUZZ_DIR:-}" ]; then
	for f in "$FUZZ_DIR"/fuzz_*; do
		[ -x "$f" ] && run_one "fuzz:$f" sh tests/fuzz/short.sh "$f" "${FUZZ_SHORT:-15}"
	done
fi

# CI runs as root with every package installed: nothing may be skipped there
if [ -n "${CI:-}" ]; then
	sed -n 's/^SKIP \([^:]*\): \(.*\)/FAIL \1: skipped under CI (\2)/p' "$log" >"$out"
	cat "$out" >>"$log"
fi
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
