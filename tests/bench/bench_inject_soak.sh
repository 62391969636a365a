#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# --sampler inject (docs/inject.md), as root: BENCH_SOAK_CYCLES (100) inject -> profile ->
# release cycles on each program the never-harm goal names, at work throughout: Debian's
# redis under redis-benchmark, Debian's nginx serving curl (its worker), Debian's python3
# building dicts, 64 threads throwing through operator new, a program whose signal handler
# allocates, and one that is pid 1 of its own PID and mount namespaces.  The cycles and the
# programs' own checks after are tests/inject_lib.sh's, as in tests/bpf/test_inject.sh:
# each cycle released, with samples, the program working; after, its own check of its
# work, its RSS within 1 MiB of before.  Printed per program: seconds per cycle, the
# memory, and p50/p99/max of the injection's time, of how long the borrowed thread ran our
# calls, and of the longest stop of a thread looked at, for the takeover and the release.
#   BENCH_SOAK_CYCLES=N  BENCH_SOAK_PROGRAMS="redis nginx python throw signal ns"
#   BENCH_BASE_BPF=PATH: the cycles take turns with that culpert-bpf (another build's, e.g.
#   main's, its library beside it), each build's times printed on lines of their own
. tests/lib.sh
. tests/inject_lib.sh
. tests/bench/common.sh

CYCLES=${BENCH_SOAK_CYCLES:-100}
[ -z "${BENCH_BASE_BPF:-}" ] || CYC_BPF="$BIN_BPF $BENCH_BASE_BPF"
PROGRAMS=${BENCH_SOAK_PROGRAMS:-redis nginx python throw signal ns}

[ "$(id -u)" = 0 ] || { echo "bench_inject_soak: needs root"; exit 0; }

# what each program's cycles count as its work, and their attach options
work_of() { case "$1" in redis | nginx) echo "${1}_work" ;; *) echo cpu_ticks ;; esac; }
rate_of() { case "$1" in throw) echo 256KiB ;; *) echo 4096 ;; esac; }

# soak PROG: PROG_start, the cycles, PROG_check; one line of results
soak() {
	_failed=""
	_t0=$(date +%s)
	program_cycles "$1" "$CYCLES" "$(work_of "$1")" --rate "$(rate_of "$1")" -d 0.2
	_dt=$(($(date +%s) - _t0))
	_n=$(cat "$TMP/$1".lat* 2>/dev/null | grep -c .)
	cleanup_pids
	printf '  %-7s %3d cycles, %5.2f s each: %s\n' "$1" "${_n:-0}" \
		"$(awk -v t="$_dt" -v n="${_n:-0}" 'BEGIN { print n ? t / n : 0 }')" \
		"${_failed:-ok, ${cyc_mem:-}}"
	[ "${_n:-0}" -gt 0 ] || return 0
	for _l in lat ${BENCH_BASE_BPF:+lat1}; do
		if [ -n "${BENCH_BASE_BPF:-}" ]; then
			[ $_l = lat ] && echo "        this build:" || echo "        $BENCH_BASE_BPF:"
		fi
		for _f in 1 5; do
			[ $_f = 1 ] && _what=takeover || _what=release
			printf '          %-8s ms %s; held ms %s; longest stop us %s; round trips %s\n' \
				"$_what" "$(spread "$TMP/$1.$_l" $_f)" "$(spread "$TMP/$1.$_l" $((_f + 1)))" \
				"$(spread "$TMP/$1.$_l" $((_f + 2)))" "$(spread "$TMP/$1.$_l" $((_f + 3)))"
		done
	done
	echo "          the first cycle (the library loaded): $(head -1 "$TMP/$1.lat")"
}

# spread FILE FIELD: "p50 X p99 Y max Z" of FIELD of the cycles in FILE
spread() {
	echo "p50 $(pct "$1" "$2" 50) p99 $(pct "$1" "$2" 99) max $(pct "$1" "$2" 100)"
}

echo "$CYCLES cycles of attach --sampler inject -d 0.2 on each program ($(uptime))"
for p in $PROGRAMS; do
	soak "$p"
done
echo "  done ($(uptime))"
