#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Run every test: unit binaries, then the shell tests of tests/bpf, tests/agent,
# tests/archive and tests/deploy, then those of tests/cli beside the arm64 VM.
# Each test prints "PASS name", "FAIL name: why" or "SKIP name: why"; a test
# file that exits non-zero without saying FAIL counts as one failure.  The
# last line is the summary "N passed, N failed".
# Under CI (CI set) a skipped test counts as failed too.
#   run.sh [--stress] [PATTERN]
#     PATTERN     only test files whose path contains PATTERN
#     --stress    with a CPU hog beside the suite (two busy loops, as many as
#                 this machine has cores up to two), to prove that no verdict
#                 depends on the machine's load
set -u
stress=""
if [ "${1:-}" = "--stress" ]; then
	stress=1
	shift
fi

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
jobdir=$(mktemp -d)
hogs=""
trap 'for h in $hogs; do kill "$h" 2>/dev/null; done; rm -rf "$log" "$jobdir"' EXIT
if [ -n "$stress" ]; then
	for _i in 1 2; do
		sh -c 'while :; do :; done' &
		hogs="$hogs $!"
	done
	echo "# --stress: CPU hogs$hogs beside the suite"
fi

# a test file that runs longer than this is stopped and fails (TEST_TIMEOUT=seconds)
limit=${TEST_TIMEOUT:-600}

# run_file OUT CMD...: one test file, its output in OUT, its exit status and
# seconds in OUT.rc
run_file() {
	_o=$1
	shift
	_t0=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$_o" 2>&1
	echo "$? $(( $(date +%s) - _t0 ))" >"$_o.rc"
}

# report_file NAME OUT: what run_file left, printed and logged
report_file() {
	read -r rc secs <"$2.rc"
	echo "--- $1"
	cat "$2"
	# where the suite's time goes, file by file
	echo "--- $1: ${secs}s"
	grep '^\(PASS\|FAIL\|SKIP\) ' "$2" >>"$log"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "FAIL $1: stopped after the ${limit}s limit of a test file" | tee -a "$log"
	elif [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$2"; then
		echo "FAIL $1: exited with status $rc" | tee -a "$log"
	fi
}

selected() {
	case "$1" in *"$pattern"*) return 0 ;; esac
	return 1
}

run_one() {
	selected "$1" || return 0
	_n=$1
	shift
	run_file "$jobdir/one" "$@"
	report_file "$_n" "$jobdir/one"
}

# The pool runs JOBS test files at once (SAN_JOBS, default 2): its files
# wait on node, python, qemu and loopback servers as much as they compute,
# and share nothing (each its own temporary directory and ports).  Reported
# in order; pool_run NAME CMD... starts one once a slot is free.
POOLED_VM=tests/bpf/test_arm64.sh
pool_pids=""
pool_names=""
pool_n=0
pool_done=""
pool_wait_oldest() {
	# shellcheck disable=SC2086 # pids are words
	set -- $pool_pids
	wait "$1"
	shift
	pool_pids="$*"
	_first=${pool_names%%|*}
	pool_names=${pool_names#*|}
	report_file "${_first#*=}" "$jobdir/${_first%%=*}"
}
pool_run() {
	selected "$1" || return 0
	_n=$1
	shift
	pool_n=$((pool_n + 1))
	# shellcheck disable=SC2086 # pids are words
	[ "$(echo $pool_pids | wc -w)" -ge "${SAN_JOBS:-2}" ] && pool_wait_oldest
	run_file "$jobdir/$pool_n" "$@" &
	pool_pids="${pool_pids:+$pool_pids }$!"
	pool_names="$pool_names$pool_n=$_n|"
}
pool_drain() {
	while [ -n "$pool_pids" ]; do
		pool_wait_oldest
	done
}

# Alone, one after another: the files that measure time or CPU (overhead
# budgets, attach latencies, ring buffers keeping up) or boot a VM of their own
start=$(date +%s)
for t in "$OUTPUT"/tests/unit/test_*; do
	[ -x "$t" ] && run_one "$t" "$t"
done
for t in tests/bpf/*.sh tests/agent/*.sh tests/archive/*.sh tests/deploy/*.sh; do
	case "$t" in "$POOLED_VM") continue ;; esac
	[ -f "$t" ] && run_one "$t" sh "$t"
done

# Then the pool: the arm64 VM (one core of TCG for minutes, checking exact
# counts, never time) beside the CLI test files, which time nothing either
pool_run "$POOLED_VM" sh "$POOLED_VM"
for t in tests/cli/*.sh; do
	[ -f "$t" ] && pool_run "$t" sh "$t"
done

# The sanitizer pass (make test under CI): the unit tests and the CLI test
# files again, against the ASan/UBSan build in SAN_OUTPUT (targets are the
# plain build's, culpert-bpf too), named "asan:..."; then each fuzz harness a
# short while.
if [ -n "${SAN_OUTPUT:-}" ]; then
	san="OUTPUT=$SAN_OUTPUT TARGETS=$OUTPUT/tests/targets BIN_BPF=$OUTPUT/culpert-bpf"
	san="$san TEST_PREFIX=asan: CULPERT_SANITIZED=1"
	san="$san ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1"
	# the longest first: the pool ends sooner
	for t in tests/cli/test_action.sh tests/cli/test_crafted.sh tests/cli/test_archive_client.sh \
		tests/cli/*.sh; do
		# the layout check reads sources, no binary
		case "$t" in */test_layout.sh) continue ;; esac
		case " $pool_done " in *" $t "*) continue ;; esac
		pool_done="$pool_done $t"
		# shellcheck disable=SC2086
		[ -f "$t" ] && pool_run "asan:$t" env $san sh "$t"
	done
	for t in "$SAN_OUTPUT"/tests/unit/test_*; do
		# shellcheck disable=SC2086
		[ -x "$t" ] && pool_run "asan:$t" env $san "$t"
	done
fi
# each fuzz harness, in the same pool (one core each)
if [ -n "${FUZZ_DIR:-}" ]; then
	for f in "$FUZZ_DIR"/fuzz_*; do
		[ -x "$f" ] && pool_run "fuzz:$f" sh tests/fuzz/short.sh "$f" "${FUZZ_SHORT:-15}"
	done
fi
pool_drain

# CI runs as root with every package installed: nothing may be skipped there
if [ -n "${CI:-}" ]; then
	sed -n 's/^SKIP \([^:]*\): \(.*\)/FAIL \1: skipped under CI (\2)/p' "$log" >"$jobdir/ci"
	cat "$jobdir/ci" >>"$log"
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
