#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The agent (docs/agent.md):
#  1. the budget table: a target's allocator calls/s, the duty the agent
#     chose, its estimate and the CPU the target lost (its ops per second
#     of its own CPU, profiled vs unprofiled, interleaved; medians of
#     BENCH_RUNS rounds), under the default --max-overhead 1;
#  2. the agent's own CPU and RSS with 1, 16 and 64 targets over
#     BENCH_AGENT_SECONDS (default 300, the issue's 5 minutes), RSS sampled
#     six times: it must stay flat;
#  3. the latency of a heap scrape of a target with 65536 stacks while it
#     goes on allocating (goal < 100 ms), median of BENCH_RUNS scrapes, and
#     of 10 concurrent ones, the agent's RSS per stack (its RSS with them
#     over its RSS before), and one encoding's peak per stack beside the
#     agent's estimate of it (-vv);
#  4. the latency of /metrics with 64, 256 and 1000 targets (goals < 100 ms,
#     < 250 ms and < 1 s), median of BENCH_RUNS scrapes after a first one, and
#     the agent's RSS per idle target;
#  5. BENCH_ATTACH_TARGETS (default 1000) idle targets started at once: the
#     time until all are attached (goal 10 s), the agent's RSS and fds per
#     target beyond its RSS before them (goal <= 256 KiB), the stop's time;
#     the attach thread's time, and the kernel's attaches in it (-vv); the
#     agent's CPU time over the attach (its wall time follows the load).
#   BENCH_AGENT_PARTS="budget scale scrape metrics attach" chooses the parts;
#   BENCH_BASE_BPF=PATH runs parts 3 and 5 with that culpert-bpf too, interleaved;
#   BENCH_ATTACH_PERF=FILE records the agent with perf during part 5's attach,
#   BENCH_ATTACH_LOG=FILE keeps its -vv log.
. tests/lib.sh
. tests/bench/common.sh
. tests/agent/budget.inc

RUNS=${BENCH_RUNS:-3}
SECONDS_EACH=${BENCH_AGENT_SECONDS:-300}
PARTS=${BENCH_AGENT_PARTS:-budget scale scrape metrics attach}
ATTACH_N=${BENCH_ATTACH_TARGETS:-1000}
WINDOW=${BENCH_BUDGET_WINDOW:-20}

[ "$(id -u)" = 0 ] || { echo "bench_agent: needs root"; exit 1; }

# 1. one row per pace of alloc_bound (0: flat out); --no-inuse on the flat-out
# loop only, where the free probes alone would exceed any budget
budget_table() {
	echo "budget table: --max-overhead 1, --duty-period 10s, $RUNS rounds of ${WINDOW}s windows"
	printf "  %-26s %14s %8s %10s %14s\n" target "calls/s" duty estimate "CPU lost"
	for pace in 1000 10000 30000 0; do
		start_target "$TMP/t.out" "$TARGETS/alloc_bound" "$pace" || return
		extra=""
		[ "$pace" = 0 ] && extra=--no-inuse
		ROUNDS=$RUNS rounds 1 "$WINDOW" --duty-period 10s $extra || return
		calls=$(awk '{ s += $1 / ($2 / 1e9) } END { printf "%.0f", s / NR }' "$TMP/p")
		duty=$(sort -g "$TMP/duty" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		est=$(sort -g "$TMP/est" | awk '{ v[NR] = $1 } END { printf "%.2f%%", 100 * v[int((NR + 1) / 2)] }')
		printf "  %-26s %14s %8.4g %10s %13s%%   (rounds: %s)\n" \
			"alloc_bound $pace/s ${extra:---inuse}" "$calls" "${duty:-0}" "$est" "$loss" \
			"$losses"
		kill "$target_pid"
		wait "$target_pid" 2>/dev/null
	done
}

# /proc/PID/stat utime + stime, in seconds
cpu_of() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' \
		"/proc/$1/stat"
}

# 2. N steady allocators (1 MiB/s each in 256-byte blocks) under one agent
scale_one() {
	n=$1
	pids=""
	i=0
	# a copy of its own: no one else's alloc_steady is selected
	cp "$TARGETS/alloc_steady" "$TMP/steady$$"
	while [ $i -lt "$n" ]; do
		"$TMP/steady$$" 1048576 >/dev/null &
		track $!
		pids="$pids $!"
		i=$((i + 1))
	done
	agent_start scale$n --select "exe=$TMP/steady$$" --max-targets 64 || return
	sleep 5
	c0=$(cpu_of "$agent_pid")
	t=0
	step=$((SECONDS_EACH / 6))
	[ $step -gt 0 ] || step=1
	line=""
	while [ $t -lt "$SECONDS_EACH" ]; do
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
		line="$line ${t}s:$((rss / 1024))MiB"
		sleep $step
		t=$((t + step))
	done
	c1=$(cpu_of "$agent_pid")
	live=$(curl -s "$agent_url/metrics" | awk '$1 == "culpert_agent_targets{state=\"live\"}" { print $2 }')
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$agent_pid/status")
	agent_stop
	kill $pids
	wait $pids 2>/dev/null
	awk -v n="$n" -v l="$live" -v c0="$c0" -v c1="$c1" -v s="$t" -v h="$hwm" 'BEGIN {
		printf "  %2d targets (%s live): agent CPU %.2f%% of one CPU, peak RSS %d MiB\n",
			n, l, 100 * (c1 - c0) / s, h / 1024 }'
	echo "     RSS at:$line"
}

scale() {
	echo "agent's own CPU and RSS over ${SECONDS_EACH}s (BENCH_AGENT_SECONDS), targets at 1 MiB/s each:"
	for n in 1 16 64; do
		scale_one $n
	done
}

# 3. heap scrapes of stack_fan's 65536 stacks
scrape() {
	# 64 KiB blocks at --rate 4096: every call sampled (1 - e^-16)
	start_target "$TMP/f.out" "$BENCH/stack_fan" 65536 2 || return
	agent_start fan -vv --select "pid=$target_pid" --rate 4096 --max-stacks 65536 \
		--ringbuf-size 16MiB || return
	rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
	wait_for "$TMP/f.out" swept 60 || { echo "  stack_fan did not sweep"; return 1; }
	# the BPF side's throttle spreads a sweep's samples over seconds: until the stacks are in
	i=0
	while [ $i -lt 120 ]; do
		curl -s -o "$TMP/heap.pb.gz" "$agent_url/debug/pprof/heap?pid=$target_pid"
		stacks=$(go tool pprof -raw "$TMP/heap.pb.gz" 2>/dev/null |
			$PY tests/tools/pprof_raw.py --stacks alloc_objects | wc -l)
		[ "$stacks" -ge 50000 ] && break
		sleep 5
		i=$((i + 5))
	done
	echo "  after ${i}s: $stacks stacks; samples $(metric culpert_target_samples_total \
		"$target_pid"), lost $(metric culpert_target_lost_samples_total "$target_pid")"
	rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
	echo "agent RSS with $stacks stacks: $((rss1 / 1024)) MiB, $((rss0 / 1024)) MiB before them:" \
		"$(((rss1 - rss0) * 1024 / (stacks > 0 ? stacks : 1))) bytes per stack (one scrape done)"
	: >"$TMP/lat"
	i=0
	while [ $i -lt "$RUNS" ]; do
		curl -s -o "$TMP/heap.pb.gz" -w '%{time_total}\n' \
			"$agent_url/debug/pprof/heap?pid=$target_pid" >>"$TMP/lat"
		i=$((i + 1))
	done
	# an encoding's own peak: VmHWM reset (clear_refs 5) before one more scrape
	echo 5 >"/proc/$agent_pid/clear_refs"
	rss2=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
	curl -s -o /dev/null "$agent_url/debug/pprof/heap?pid=$target_pid"
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$agent_pid/status")
	echo "one encoding's peak: +$(((hwm - rss2) / 1024)) MiB of RSS," \
		"$(((hwm - rss2) * 1024 / (stacks > 0 ? stacks : 1))) bytes per stack" \
		"(the agent's estimate: $(sed -n 's/.*profile of pid.*CPU, \([0-9.]*\) MiB estimated.*/\1/p' "$TMP/fan.err" | tail -1) MiB)"
	med=$(sort -g "$TMP/lat" | awk '{ v[NR] = $1 } END { printf "%.1f", 1000 * v[int((NR + 1) / 2)] }')
	# the encodings' own CPU (-vv), whatever else the machine runs: the RUNS scrapes, not
	# the one of the peak after them
	grep 'profile of pid' "$TMP/fan.err" | sed -n 's/.*(\([0-9.]*\) ms of CPU.*/\1/p' >"$TMP/cpu"
	cpu=$(head -n $(($(wc -l <"$TMP/cpu") - 1)) "$TMP/cpu" | tail -n "$RUNS" | sort -g |
		awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }')
	echo "heap scrape of a target with $stacks stacks: median $med ms over $RUNS (goal < 100 ms)," \
		"$cpu ms of CPU; each: $(awk '{ printf "%.1f ", 1000 * $1 }' "$TMP/lat")ms," \
		"$(wc -c <"$TMP/heap.pb.gz") bytes; load $(cut -d' ' -f1 /proc/loadavg)"
	# ten at once: those that come during an encoding share it
	: >"$TMP/lat10"
	i=0
	curls=""
	while [ $i -lt 10 ]; do
		curl -s -o /dev/null -w '%{time_total}\n' \
			"$agent_url/debug/pprof/heap?pid=$target_pid" >>"$TMP/lat10" &
		curls="$curls $!"
		i=$((i + 1))
	done
	# shellcheck disable=SC2086 # a list of pids
	wait $curls
	echo "10 concurrent heap scrapes: p50 $(sort -g "$TMP/lat10" | awk '{ v[NR] = $1 } END { printf "%.1f", 1000 * v[5] }') ms," \
		"max $(sort -g "$TMP/lat10" | tail -1 | awk '{ printf "%.1f", 1000 * $1 }') ms (before: queued, p50 5.7 s)"
	agent_stop
	kill "$target_pid"
}

# side_by_side PART: with BENCH_BASE_BPF (another build's culpert-bpf, e.g. main's)
# beside this one's: base, this, base, this
side_by_side() {
	[ -n "${BENCH_BASE_BPF:-}" ] || { "$1"; return; }
	this=$BIN_BPF
	for round in 1 2; do
		for BIN_BPF in "$BENCH_BASE_BPF" "$this"; do
			echo "  round $round, $BIN_BPF:"
			"$1"
		done
	done
	BIN_BPF=$this
}

# 4. /metrics of N idle targets (a copy of agent_idle each: a few stacks, spans none),
# started after the agent's calibration: its RSS per idle target; the first scrape
# (it reads every target's memory picture itself), then the median of BENCH_RUNS
# (pictures kept by the agent's picture thread), in wall time and in the scrape's own
# CPU (-vv), whatever else the machine runs
metrics_one() {
	n=$1
	cp "$TARGETS/agent_idle" "$TMP/idle$$" || return
	agent_start metrics$n -vv --select "exe=$TMP/idle$$" --max-targets "$n" || return
	sleep 3
	rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
	pids=""
	i=0
	while [ $i -lt "$n" ]; do
		"$TMP/idle$$" >/dev/null 2>&1 &
		track $!
		pids="$pids $!"
		i=$((i + 1))
	done
	i=0
	while [ "$(curl -s "$agent_url/targets" | grep -c '"probes": "attached"')" -lt "$n" ]; do
		i=$((i + 1))
		[ $i -gt 1500 ] && { echo "  $n targets: not all attached in 300 s"; break; }
		sleep 0.2
	done
	rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
	first=$(curl -s -o /dev/null -w '%{time_total}' "$agent_url/metrics")
	: >"$TMP/mlat"
	i=0
	while [ $i -lt "$RUNS" ]; do
		curl -s -o "$TMP/m.txt" -w '%{time_total}\n' "$agent_url/metrics" >>"$TMP/mlat"
		i=$((i + 1))
	done
	med=$(sort -g "$TMP/mlat" | awk '{ v[NR] = $1 } END { printf "%.1f", 1000 * v[int((NR + 1) / 2)] }')
	cpu=$(sed -n 's/.*\/metrics: .* (\([0-9.]*\) ms of CPU).*/\1/p' "$TMP/metrics$n.err" |
		tail -n "$RUNS" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	echo "  /metrics with $n targets: median $med ms over $RUNS (goal < $2 ms), $cpu ms of CPU," \
		"$(wc -c <"$TMP/m.txt") bytes; each: $(awk '{ printf "%.1f ", 1000 * $1 }' "$TMP/mlat")ms;" \
		"the first $(awk -v t="$first" 'BEGIN { printf "%.0f", 1000 * t }') ms," \
		"$(sed -n 's/.*\/metrics: .* (\([0-9.]*\) ms of CPU).*/\1/p' "$TMP/metrics$n.err" | head -1) ms of CPU"
	echo "    agent RSS $((rss0 / 1024)) MiB before them, $((rss1 / 1024)) MiB after:" \
		"$(((rss1 - rss0) / n)) KiB per idle target; load $(cut -d' ' -f1 /proc/loadavg)"
	agent_stop
	# shellcheck disable=SC2086 # a list of pids
	kill $pids
	# shellcheck disable=SC2086
	wait $pids 2>/dev/null
}

metrics() {
	echo "/metrics latency:"
	metrics_one 64 100
	metrics_one 256 250
	metrics_one 1000 1000
}

# 5. idle targets started at once after the agent serves
attach_scale() {
	n=$ATTACH_N
	cp "$TARGETS/agent_idle" "$TMP/idle$$" || return
	# -vv: the attach thread's batches, for where the time went
	agent_start many -vv --select "exe=$TMP/idle$$" --max-targets $((n + 16)) || return
	# its calibration (1.5 s) done, before the targets come
	sleep 3
	rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
	fd0=$(ls "/proc/$agent_pid/fd" | wc -l)
	cpu0=$(cpu_of "$agent_pid")
	perf_pid=""
	if [ -n "${BENCH_ATTACH_PERF:-}" ]; then
		perf record -q -g -p "$agent_pid" -o "$BENCH_ATTACH_PERF" 2>/dev/null &
		perf_pid=$!
		sleep 1
	fi
	t0=$(date +%s%N)
	pids=""
	i=0
	while [ $i -lt "$n" ]; do
		"$TMP/idle$$" >/dev/null &
		track $!
		pids="$pids $!"
		i=$((i + 1))
	done
	started=$((($(date +%s%N) - t0) / 1000000))
	while :; do
		got=$(curl -s "$agent_url/targets" | grep -o '"probes": "attached"' | wc -l)
		ms=$((($(date +%s%N) - t0) / 1000000))
		[ "$got" -ge "$n" ] || [ "$ms" -gt 600000 ] && break
		sleep 0.2
	done
	[ -z "$perf_pid" ] || { kill -INT "$perf_pid"; wait "$perf_pid"; }
	rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
	fd1=$(ls "/proc/$agent_pid/fd" | wc -l)
	cpu1=$(cpu_of "$agent_pid")
	echo "$n idle targets started at once (in $started ms): $got attached after $ms ms (goal 10 s)," \
		"load $(cut -d' ' -f1 /proc/loadavg)"
	# the wall time follows the machine's load; the CPU the agent spent does not
	awk -v c0="$cpu0" -v c1="$cpu1" -v n="$n" 'BEGIN {
		printf "  the agent'"'"'s CPU meanwhile: %.1f s, %.1f ms per target\n", c1 - c0, 1000 * (c1 - c0) / n }'
	echo "  its RSS now: $(awk '/^Rss(Anon|File):/ { printf "%s %d MiB ", $1, $2 / 1024 }' \
		"/proc/$agent_pid/status")"
	awk '/attach thread: [0-9]+ targets in/ { n += $3; all += $6; k += $13 }
		END { printf "  the attach thread: %d targets in %d ms, of which %d ms the probes'"'"' " \
		      "attach (the kernel'"'"'s uprobe registrations), %d ms planning\n", n, all, k, all - k }' \
		"$TMP/many.err"
	echo "  agent RSS $((rss0 / 1024)) MiB before them, $((rss1 / 1024)) MiB after:" \
		"$(((rss1 - rss0) / n)) KiB per idle target (goal <= 256); $(((fd1 - fd0) / n)) fds each"
	[ -z "${BENCH_ATTACH_LOG:-}" ] || cp "$TMP/many.err" "$BENCH_ATTACH_LOG"
	t0=$(date +%s%N)
	agent_stop
	echo "  SIGTERM with $got targets: stopped in $((($(date +%s%N) - t0) / 1000000)) ms (goal < 1 s)"
	kill $pids
	wait $pids 2>/dev/null
}

for part in $PARTS; do
	case $part in
	budget) budget_table ;;
	scale) scale ;;
	scrape) side_by_side scrape ;;
	metrics) metrics ;;
	attach) side_by_side attach_scale ;;
	esac
	echo
done
