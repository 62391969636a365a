#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Attach latency (README, "Performance"): from culpert-bpf's start to
# its readiness line (every probe live, sampling), with --unwind fp and
# --unwind dwarf, on the example service (busy: allocates, enters spans) and
# on a C++ program (libc and libstdc++ probed, idle while attached).  Also
# the target's kernel CPU over that time (stime from /proc/PID/stat: what
# registering the probes charges the target) and where the time went (-v's
# "attach took" line).  Medians of BENCH_RUNS runs (default 10), the modes
# interleaved.
. tests/lib.sh
. tests/bench/common.sh
# BENCH_BPF=PATH measures another build's culpert-bpf (before/after a change)
BIN_BPF=${BENCH_BPF:-$BIN_BPF}

RUNS=${BENCH_RUNS:-10}
TICK_MS=$((1000 / $(getconf CLK_TCK)))

[ "$(id -u)" = 0 ] || { echo "bench_attach: needs root"; exit 1; }

# kernel CPU of PID so far, in clock ticks (field 15 of stat; comm may hold blanks)
stime() {
	sed 's/.*) //' /proc/"$1"/stat | awk '{ print $13 }'
}

# run_once TARGET MODE: appends the readiness latency (ms), the target's kernel
# CPU meanwhile (ms) and the phases of "attach took" to $TMP/TARGET.MODE.*
run_once() {
	case "$1" in
	service) start_program "$TMP/t.out" "$OUTPUT/examples/demo_service" 60 || return 1 ;;
	# waits for SIGUSR1 meanwhile: idle
	cxx) start_target "$TMP/t.out" "$TARGETS/cxx_index" || return 1 ;;
	esac
	t=${target_pid:-}
	[ "$1" = service ] && t=$prog_pid
	: >"$TMP/a.err"
	s0=$(stime "$t")
	start=$(date +%s%N)
	"$BIN_BPF" attach --pid "$t" --unwind "$2" -v -o "$TMP/p.pb.gz" 2>"$TMP/a.err" &
	p=$!
	# polled every 50 ms by wait_for: finer here, the latency is the number
	while ! grep -q "$BPF_READY" "$TMP/a.err" 2>/dev/null; do
		kill -0 "$p" 2>/dev/null || { echo "attach failed: $(cat "$TMP/a.err")"; return 1; }
		sleep 0.002
	done
	end=$(date +%s%N)
	s1=$(stime "$t")
	kill -INT "$p"
	wait "$p"
	kill "$t"
	wait "$t" 2>/dev/null
	echo $(((end - start) / 1000000)) >>"$TMP/$1.$2.ready"
	echo $(((s1 - s0) * TICK_MS)) >>"$TMP/$1.$2.ksys"
	sed -n 's/^attach took \([0-9]*\) ms: target and mappings \([0-9]*\), unwinding set-up \([0-9]*\), planning \([0-9]*\), BPF load and verification \([0-9]*\), probes \([0-9]*\)$/\1 \2 \3 \4 \5 \6/p' \
		"$TMP/a.err" >>"$TMP/$1.$2.phases"
}

# the median of column COL of FILE; "-" without lines (a build without the line)
col_median() {
	if [ -s "$1" ]; then awk -v c="$2" '{ print $c }' "$1" | median; else echo -; fi
}

echo "attach latency: culpert-bpf's start to its readiness line, median of $RUNS; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %-6s %9s %13s %8s %6s %7s %6s %7s %7s\n' target unwind ready_ms target_sys_ms inside maps unwind plan bpfload probes
for target in service cxx; do
	for m in fp dwarf; do
		: >"$TMP/$target.$m.ready"
		: >"$TMP/$target.$m.ksys"
		: >"$TMP/$target.$m.phases"
	done
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		for m in fp dwarf; do
			run_once "$target" "$m" || exit 1
		done
		i=$((i + 1))
	done
	for m in fp dwarf; do
		f=$TMP/$target.$m.phases
		printf '%-8s %-6s %9s %13s %8s %6s %7s %6s %7s %7s\n' "$target" "$m" \
			"$(median <"$TMP/$target.$m.ready")" "$(median <"$TMP/$target.$m.ksys")" \
			"$(col_median "$f" 1)" "$(col_median "$f" 2)" "$(col_median "$f" 3)" \
			"$(col_median "$f" 4)" "$(col_median "$f" 5)" "$(col_median "$f" 6)"
	done
done
echo "(inside: the 'attach took' of -v, from opening the target to the last probe; the rest"
echo " of ready_ms is the process's start, the kernel feature probes and the readiness line)"
