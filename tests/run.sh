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
	CULPERT_TEST_MNTNS=1 exec unshare --mount --propagation private sh "$0" ${stress:+--stress} "$@"
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

. tests/times.sh

# run_file OUT CMD...: one test file, its output in OUT, its exit status,
# seconds and CPU seconds (those of the processes it waited for) in OUT.rc;
# in a subshell of its own, so that the CPU time is this file's alone
run_file() (
	_o=$1
	shift
	_t0=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$_o" 2>&1
	_rc=$?
	times >"$_o.times"
	# whole or not at all: the pool looks for it while this runs
	echo "$_rc $(( $(date +%s) - _t0 )) $(cpu_secs "$_o.times")" >"$_o.rc.tmp"
	mv "$_o.rc.tmp" "$_o.rc"
)

# report_file NAME OUT: what run_file left, printed and logged
report_file() {
	read -r rc secs cpu <"$2.rc"
	echo "--- $1"
	cat "$2"
	# where the suite's time goes, file by file: waiting, or computing
	echo "--- $1: ${secs}s (${cpu}s CPU)"
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

# The pool runs JOBS test files at once (SAN_JOBS, default 3: most files wait
# on servers, qemu and their targets' pace as much as they compute, and
# --stress shows the verdicts hold beside more load); they share nothing
# (each its own temporary directory and ports).  Reported in order;
# pool_run NAME CMD... starts one once a slot is free.
POOLED_VM=tests/bpf/test_arm64.sh
pool_names=""
pool_n=0
# how many started files have not finished
pool_running() {
	_r=0
	_q=$pool_names
	while [ -n "$_q" ]; do
		_e=${_q%%|*}
		_q=${_q#*|}
		[ -f "$jobdir/${_e%%=*}.rc" ] || _r=$((_r + 1))
	done
	echo "$_r"
}
# report the finished files at the head of the queue, in the order they started
pool_report() {
	while [ -n "$pool_names" ]; do
		_e=${pool_names%%|*}
		[ -f "$jobdir/${_e%%=*}.rc" ] || return 0
		pool_names=${pool_names#*|}
		report_file "${_e#*=}" "$jobdir/${_e%%=*}"
	done
}
# a new file starts as soon as any running one has finished
pool_run() {
	selected "$1" || return 0
	_n=$1
	shift
	while [ "$(pool_running)" -ge "${SAN_JOBS:-3}" ]; do
		pool_report
		sleep 0.2
	done
	pool_report
	pool_n=$((pool_n + 1))
	run_file "$jobdir/$pool_n" "$@" &
	pool_names="$pool_names$pool_n=$_n|"
}
pool_drain() {
	while [ -n "$pool_names" ]; do
		pool_report
		[ -n "$pool_names" ] && sleep 0.2
	done
	# every file is in: the hogs (--stress) end here, or the wait below never would
	for h in $hogs; do kill "$h" 2>/dev/null; done
	hogs=""
	wait
}

# Alone: a storm that must not overflow the ring buffer.  Every other file
# judges counters, states and exact ground truth, or its target's own CPU
# time, and runs in the pool (tests/run.sh --stress runs them all beside two
# busy loops, more load than a neighbour makes).
SOLO="tests/bpf/test_throttle.sh"
start=$(date +%s)
for t in "$OUTPUT"/tests/unit/test_*; do
	[ -x "$t" ] && run_one "$t" "$t"
done
for t in $SOLO; do
	[ -f "$t" ] && run_one "$t" sh "$t"
done

# The sanitizer pass (make test under CI): the unit tests and the CLI test
# files again, against the ASan/UBSan build in SAN_OUTPUT (targets are the
# plain build's, culpert-bpf too), named "asan:..."; then each fuzz harness a
# short while.
san="OUTPUT=${SAN_OUTPUT:-} TARGETS=$OUTPUT/tests/targets BIN_BPF=$OUTPUT/culpert-bpf"
san="$san TEST_PREFIX=asan: CULPERT_SANITIZED=1"
san="$san ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1"
plain_done=""
san_done=""
# pool_plain FILE, pool_san FILE: a test file of the plain pass, of the
# sanitizer pass (CLI files only), into the pool; each once
pool_plain() {
	case " $SOLO $plain_done " in *" $1 "*) return 0 ;; esac
	plain_done="$plain_done $1"
	[ -f "$1" ] && pool_run "$1" sh "$1"
}
pool_san() {
	[ -n "${SAN_OUTPUT:-}" ] || return 0
	# the layout check reads sources, no binary
	case "$1" in */test_layout.sh) return 0 ;; esac
	case " $san_done " in *" $1 "*) return 0 ;; esac
	san_done="$san_done $1"
	# shellcheck disable=SC2086
	[ -f "$1" ] && pool_run "asan:$1" env $san sh "$1"
}

# Then the pool: every other file checks counts, totals and
# exact ground truth, which no load changes (tests/run.sh --stress shows it),
# and waits on qemu, loopback servers and the targets' own pace as much as it
# computes.  The longest first, of either pass (40 s and more in the last
# runs), so that no long file starts last and the pool ends sooner.
for t in tests/bpf/test_inject.sh "$POOLED_VM" tests/bpf/test_spans.sh \
	tests/agent/test_collector.sh tests/agent/test_serve.sh tests/agent/test_agent_stop.sh \
	tests/bpf/test_agent_frame.sh tests/agent/test_budget.sh tests/agent/test_agent_inject.sh \
	asan:tests/cli/test_crafted.sh tests/bpf/test_otel.sh tests/agent/test_agent_otel.sh \
	tests/deploy/test_image.sh tests/agent/test_agent_memory.sh tests/bpf/test_allocator_state.sh \
	tests/bpf/test_exceptions.sh tests/bpf/test_attach_diff.sh tests/bpf/test_rust_tracing.sh; do
	case "$t" in
	asan:*) pool_san "${t#asan:}" ;;
	*) pool_plain "$t" ;;
	esac
done
for t in tests/bpf/*.sh tests/agent/*.sh tests/archive/*.sh tests/deploy/*.sh tests/cli/*.sh; do
	pool_plain "$t"
done
for t in tests/cli/test_action.sh tests/cli/test_archive_client.sh tests/cli/*.sh; do
	pool_san "$t"
done
if [ -n "${SAN_OUTPUT:-}" ]; then
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
