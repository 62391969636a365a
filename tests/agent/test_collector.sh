#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The agent's profiles (docs/agent.md, "The collector"), fetched by real
# clients: google/pprof's own fetcher (`go tool pprof -raw URL`) against
# the ground truth the test targets print.  Several targets under one agent
# and one BPF object; targets started after the agent; an exited target
# kept for --keep-exited, then dropped.
. tests/lib.sh
. tests/agent_lib.sh
# no budget: these ground truths are of whole windows (duration_nanos = S, the bytes of S
# seconds), which the default --max-overhead 1 duty-cycles; test_budget.sh tests the budget
AGENT_ARGS="--max-overhead 0"

TAG=col$$
# sampling rate of these tests: small enough for tight tolerances, blocks (<= 8704 bytes) still small
RATE=65536

# Two known targets under one agent (one BPF object): each one's live and
# allocated bytes per function, from google/pprof's fetch of /heap.
test_heap_two_targets() {
	need_root || return
	copy "${TAG}a" "$TARGETS/alloc_live"
	copy "${TAG}b" "$TARGETS/alloc_live"
	start_target "$TMP/a.out" "$TMP/${TAG}a" || return
	a=$target_pid
	# half the sizes: the two profiles cannot be taken for one another
	start_target "$TMP/b.out" "$TMP/${TAG}b" 524288 || return
	b=$target_pid
	agent_start two --select "comm=${TAG}." --rate $RATE || return
	wait_field "$a" probes attached 20 || fail "$a: probes $(field "$a" probes)"
	wait_field "$b" probes attached 20 || fail "$b: probes $(field "$b" probes)"
	[ "$(field "$a" allocator)" = glibc ] || fail "allocator of $a: $(field "$a" allocator)"
	kill -USR1 "$a" "$b"
	wait_for "$TMP/a.out" "^done" 120 || fail "target a did not finish"
	wait_for "$TMP/b.out" "^done" 120 || fail "target b did not finish"
	check_live a "$a"
	check_live b "$b"
	# the run's comments: what was observed
	grep -q "^Comment: duty=1.000" "$TMP/a.heap" || fail "no duty comment: $(grep -c Comment "$TMP/a.heap")"
	grep -q "^Comment: observed_ns=[1-9]" "$TMP/a.heap" || fail "no observed_ns comment"
	# span labels only by default: no thread ids
	grep -q "thread_id" "$TMP/a.heap" && fail "thread_id label without --labels all"
	curl -s "$agent_url/metrics" >"$TMP/metrics"
	grep -q "^culpert_target_samples_total{pid=\"$a\".*} [1-9]" "$TMP/metrics" ||
		fail "no samples of $a in /metrics: $(grep samples_total "$TMP/metrics" | head -2)"
	grep -q "^culpert_target_alloc_probe_hits_total{pid=\"$a\".*} [1-9]" "$TMP/metrics" ||
		fail "no probe hits of $a in /metrics"
	grep -q "^culpert_agent_profiling_available 1" "$TMP/metrics" || fail "profiling not available"
	# glibc's arenas read from outside, as `stats` reads them: the target is idle
	# now (it holds its live blocks and waits), so both see the same heap
	"$BIN_BPF" stats --pid "$a" --format prometheus >"$TMP/a.prom" 2>"$TMP/a.prom.err" ||
		{ fail "stats: $(cat "$TMP/a.prom.err")"; return; }
	for m in system_bytes top_bytes; do
		want=$(sed -n "s/^culpert_allocator_${m}{.*arena=\"0\".*} \([0-9]*\)\$/\1/p" "$TMP/a.prom")
		got=$(grep "^culpert_allocator_${m}{pid=\"$a\"" "$TMP/metrics" | grep 'arena="0"' |
			sed -n 's/.* \([0-9]*\)$/\1/p')
		[ -n "$want" ] && [ "$got" = "$want" ] ||
			fail "culpert_allocator_$m of arena 0: /metrics '$got', stats '$want'"
	done
	return 0
}

# steady_total: the bytes alloc_steady in $TMP/s.out says it has allocated so far
steady_total() {
	awk '$1 == "at" { b = $3 } END { printf "%d", b }' "$TMP/s.out"
}

# steady_past BYTES: alloc_steady has allocated BYTES so far
steady_past() {
	[ "$(steady_total)" -ge "$1" ]
}

# allocs?seconds=S on a steady allocator: the bytes of the window, and
# duration_nanos = S; then cumulative allocs scrapes, monotonic per stack.
test_allocs_window() {
	need_root || return
	copy "${TAG}s" "$TARGETS/alloc_steady"
	# 4 MiB/s in 256-byte blocks, each tick's total and time logged
	start_target "$TMP/s.out" "$TMP/${TAG}s" 4194304 0 log || return
	s=$target_pid
	agent_start win --select "comm=${TAG}s" --rate 4096 || return
	wait_field "$s" probes attached 20 || fail "$s: probes $(field "$s" probes)"
	pprof_raw "/debug/pprof/allocs?pid=$s&seconds=5" "$TMP/win" || return
	$RAW --header <"$TMP/win" >"$TMP/win.hdr"
	grep -qx "duration 5" "$TMP/win.hdr" || fail "window: $(grep duration "$TMP/win.hdr"), want 5 s"
	grep -qx "default alloc_space" "$TMP/win.hdr" || fail "allocs: $(grep default "$TMP/win.hdr")"
	got=$($RAW alloc_space <"$TMP/win" | awk '$1 == "steady" { print $2 }')
	# the truth: what the target says it allocated between the window's start and end
	# (its ticks are 10 ms apart), not 5 s of its nominal rate, which a loaded
	# machine does not keep
	t0=$(sed -n 's/^time //p' "$TMP/win.hdr")
	want=$(awk -v t0="$t0" -v t1="$((t0 + 5000000000))" '$1 == "at" && $2 <= t0 { a = $3 }
		$1 == "at" && $2 <= t1 { b = $3 } END { print b - a }' "$TMP/s.out")
	[ "${want:-0}" -gt 0 ] || { fail "no ticks of the target in the window from $t0"; return; }
	# records reach the agent up to one ring-buffer wake-up (100 ms) after their
	# allocation: up to that much of the target's rate at each end, beside 4 sigma
	within_plus "${got:-0}" "$want" 4096 $((2 * 4194304 / 10)) ||
		fail "steady allocated ${got:-0} bytes in the 5 s window, the target says $want (rate 4096)"
	pprof_raw "/debug/pprof/allocs?pid=$s" "$TMP/c1" || return
	# the second once the target has allocated 1 MiB more (256 samples at this rate)
	wait_until 10 steady_past $(($(steady_total) + 1048576)) ||
		{ fail "the target allocated not 1 MiB in 10 s"; return; }
	pprof_raw "/debug/pprof/allocs?pid=$s" "$TMP/c2" || return
	$RAW --stacks alloc_space <"$TMP/c1" >"$TMP/c1.st"
	$RAW --stacks alloc_space <"$TMP/c2" >"$TMP/c2.st"
	[ -s "$TMP/c1.st" ] || fail "first cumulative profile is empty"
	[ "$(awk '{ s += $1 } END { print s + 0 }' "$TMP/c2.st")" -gt \
		"$(awk '{ s += $1 } END { print s + 0 }' "$TMP/c1.st")" ] ||
		fail "the cumulative profile did not grow while the target allocated 1 MiB"
	while read -r v stack; do
		w=$(awk -v k="$stack" '$2 == k { print $1 }' "$TMP/c2.st")
		[ "${w:-0}" -ge "$v" ] || fail "stack $stack went from $v to ${w:-0} bytes"
	done <"$TMP/c1.st"
	return 0
}

# A target started after the agent is profiled (its exec seen in the
# kernel); once it exits its profile is still served for --keep-exited,
# then it is dropped.
test_later_and_exit() {
	need_root || return
	copy "${TAG}l" "$TARGETS/alloc_live"
	agent_start later --select "comm=${TAG}l" --rate $RATE --keep-exited 8s --rescan 1h || return
	start_target "$TMP/l.out" "$TMP/${TAG}l" || return
	l=$target_pid
	wait_field "$l" probes attached 20 || fail "$l: probes $(field "$l" probes)"
	kill -USR1 "$l"
	wait_for "$TMP/l.out" "^done" 30 || fail "target did not finish"
	check_live l "$l"
	kill "$l"
	wait "$l" 2>/dev/null
	wait_field "$l" state exited 5 || fail "$l not seen exiting: $(field "$l" state)"
	code=$(curl -s -o "$TMP/l.ex" -w '%{http_code}' "$agent_url/debug/pprof/heap?pid=$l")
	[ "$code" = 200 ] || fail "heap of the exited target: $code $(head -c 300 "$TMP/l.ex" | tr -d '\n')"
	wait_field "$l" state - 20 || fail "$l still listed after --keep-exited 8s"
	code=$(curl -s -o "$TMP/l.gone" -w '%{http_code}' "$agent_url/debug/pprof/heap?pid=$l")
	[ "$code" = 404 ] || fail "heap of a dropped target: $code"
	return 0
}

# An allocator the target dlopen()s after pick-up (a je_-prefixed one) is
# planned and probed when its mapping appears: what it allocates then is in
# the heap profile, each call counted once (it forwards to libc's malloc).
test_dlopen_allocator() {
	need_root || return
	copy "${TAG}d" "$TARGETS/dlopen_alloc"
	start_target "$TMP/d.out" "$TMP/${TAG}d" "$PWD/$TARGETS/libjeprefix.so" je_ 33554432 || return
	d=$target_pid
	agent_start dl --select "comm=${TAG}d" --rate $RATE || return
	wait_field "$d" probes attached 20 || fail "$d: probes $(field "$d" probes)"
	[ "$(field "$d" allocator)" = glibc ] || fail "allocator before the dlopen: $(field "$d" allocator)"
	kill -USR1 "$d"
	wait_for "$TMP/d.out" "^loaded" 10 || { fail "no dlopen: $(cat "$TMP/d.out")"; return; }
	wait_field "$d" allocator glibc,jemalloc 10 ||
		fail "allocator after the dlopen: $(field "$d" allocator)"
	kill -USR1 "$d"
	wait_for "$TMP/d.out" "^done" 20 || fail "target did not finish"
	check_live d "$d"
	return 0
}

# The duty-cycling hook budget.c calls (collector__set_alloc_probes), driven
# by tests/tools/dutycheck on a steady allocator (16384 malloc/free pairs a
# second): allocation probes off for a second see (almost) no call, the free probes
# stay and see them all, and the observed time stands still meanwhile.
test_duty_hook() {
	need_root || return
	start_target "$TMP/h.out" "$TARGETS/alloc_steady" 4194304 || return
	duty_hook "$target_pid" uprobes
	return 0
}

# Labels: span_name and span_path by default, the bytes of each span path
# as span_abc's ground truth; span_id, span_parent_id and thread_id only
# with --labels all (each id would be a series of its own in Pyroscope).
test_labels() {
	need_root || return
	for labels in span all; do
		copy "${TAG}p" "$TARGETS/span_abc"
		start_target "$TMP/p.out" "$TMP/${TAG}p" || return
		p=$target_pid
		agent_start "lab$labels" --select "comm=${TAG}p" --rate $RATE --labels $labels || return
		wait_field "$p" probes attached 20 || fail "$p: probes $(field "$p" probes)"
		kill -USR1 "$p"
		wait "$p" 2>/dev/null
		pprof_raw "/debug/pprof/allocs?pid=$p" "$TMP/p.$labels" || return
		$RAW --keys <"$TMP/p.$labels" | tr '\n' ' ' >"$TMP/p.$labels.keys"
		case "$labels:$(cat "$TMP/p.$labels.keys")" in
		*span_id* | *thread_id* | *parent*) [ $labels = all ] || fail "ids without --labels all" ;;
		esac
		case "$labels:$(cat "$TMP/p.$labels.keys")" in
		"span:"*"span_name span_path "*) ;;
		"all:"*span_id*span_name*span_parent_id*span_path*thread_id*) ;;
		*) fail "--labels $labels: keys $(cat "$TMP/p.$labels.keys")" ;;
		esac
		$RAW --label span_path alloc_space <"$TMP/p.$labels" >"$TMP/p.$labels.paths"
		while read -r _ path bytes; do
			# outside any span: no span_path label
			[ "$path" = "(no-span)" ] && path=-
			got=$(awk -v k="$path" '$2 == k { print $1 }' "$TMP/p.$labels.paths")
			within "${got:-0}" "$bytes" $RATE ||
				fail "--labels $labels: span path $path ${got:-0} bytes, want $bytes"
		done <<-EOF
		$(grep '^total ' "$TMP/p.out")
		EOF
		kill "$agent_pid"
		wait "$agent_pid" 2>/dev/null
	done
	return 0
}

# A target that execs another program keeps its pid (and start time): the
# old program is an exited target ("exec'd"), the new one is profiled anew
# (the kernel's tables let go of the pid at the exec).
test_exec() {
	need_root || return
	# the first program: a shell (it has malloc, so it is attached) that execs on demand
	copy "${TAG}e1" /bin/sh
	copy "${TAG}e2" "$TARGETS/alloc_steady"
	mkfifo "$TMP/e.go"
	"$TMP/${TAG}e1" -c 'read x <"$1"; exec "$2"' sh "$TMP/e.go" "$TMP/${TAG}e2" >/dev/null 2>&1 &
	e=$!
	track "$e"
	agent_start ex --select "comm=${TAG}e." --rate 4096 || return
	wait_field "$e" probes attached 20 || { fail "the shell: probes $(field "$e" probes)"; return; }
	echo go >"$TMP/e.go"
	i=0
	until curl -s "$agent_url/targets" | $PY -c 'import json, sys
t = [x for x in json.load(sys.stdin)["targets"] if x["pid"] == int(sys.argv[1])]
sys.exit(0 if sorted((x["state"], x["probes"], x["comm"]) for x in t) ==
	[("exited", "detached", sys.argv[2] + "e1"), ("live", "attached", sys.argv[2] + "e2")] else 1)' "$e" "$TAG"; do
		i=$((i + 1))
		[ $i -gt 100 ] && { fail "after the exec: $(curl -s "$agent_url/targets" | tr -d ' \n' | head -c 600)"; return; }
		sleep 0.1
	done
	pprof_raw "/debug/pprof/allocs?pid=$e&seconds=2" "$TMP/ex" || return
	got=$($RAW alloc_space <"$TMP/ex" | awk '$1 == "steady" { print $2 }')
	within "${got:-0}" $((2 * 4194304)) 4096 || fail "the new program: steady ${got:-0} bytes in 2 s"
	return 0
}

# snapshots SINCE: the snapshots of $n in $TMP/snap stamped after SINCE ("20240131T235959Z":
# names sort by time), one a line, oldest first
snapshots() {
	ls "$TMP/snap" | sed -n "s/^culpert-${TAG}n-$n-\(.*\)\.pb\.gz\$/\1/p" |
		awk -v t="$1" '$0 > t' | sort
}

# snapshot_taken SINCE: a snapshot of $n stamped after SINCE is there
snapshot_taken() {
	[ -n "$(snapshots "$1")" ]
}

# rotated SINCE FIRST: the two kept (--keep 2) are the newest, one of them after SINCE, and
# FIRST is gone
rotated() {
	snapshot_taken "$1" && ! snapshots 0 | grep -qx "$2" && [ "$(snapshots 0 | wc -l)" = 2 ]
}

# --snapshot-dir: every --interval each live target's heap profile, the
# newest --keep kept, read by culpert report as attach's files are.  Files
# are named by the second they were taken: the first one gone proves the
# rotation, one from a later second than the target's "done" holds its heap.
test_snapshots() {
	need_root || return
	copy "${TAG}n" "$TARGETS/alloc_live"
	mkdir -p "$TMP/snap"
	start_target "$TMP/n.out" "$TMP/${TAG}n" || return
	n=$target_pid
	agent_start snap --select "comm=${TAG}n" --rate $RATE --snapshot-dir "$TMP/snap" \
		--interval 1s --keep 2 || return
	wait_field "$n" probes attached 20 || fail "$n: probes $(field "$n" probes)"
	wait_until 10 snapshot_taken 0 ||
		{ fail "no snapshot of $n in 10 s: $(ls "$TMP/snap")"; return; }
	first=$(snapshots 0 | head -1)
	kill -USR1 "$n"
	wait_for "$TMP/n.out" "^done" 30 || fail "target did not finish"
	done_at=$(date -u +%Y%m%dT%H%M%SZ)
	wait_until 10 rotated "$done_at" "$first" || {
		fail "want 2 snapshots, one after $done_at, not $first: $(ls "$TMP/snap")"
		return
	}
	# a copy: two snapshots later the rotation takes it
	last=$TMP/last.pb.gz
	cp "$TMP/snap/culpert-${TAG}n-$n-$(snapshots 0 | tail -1).pb.gz" "$last" ||
		{ fail "the newest snapshot is gone: $(ls "$TMP/snap")"; return; }
	"$BIN_CLI" report "$last" >"$TMP/snap.report" 2>&1 || fail "culpert report: $(head -3 "$TMP/snap.report")"
	go tool pprof -raw "$last" 2>/dev/null | $RAW inuse_space >"$TMP/snap.live"
	got=$(awk '$1 == "keep_all" { print $2 }' "$TMP/snap.live")
	within "${got:-0}" 33554432 $RATE || fail "snapshot: keep_all live ${got:-0} bytes, want 33554432"
	return 0
}

# 64 targets under one agent (its default --max-targets): every one attached
# and served, the agent's RSS within the bound docs/agent.md states for
# targets of few stacks (64 MiB fixed + 2 MiB per target), and flat while
# they are scraped again; no perf rings and no mapping of a target's
# objects per target (docs/agent.md, "Running it").
test_many_targets() {
	need_root || return
	copy "${TAG}m" "$TARGETS/alloc_steady"
	pids=""
	for _ in $(seq 64); do
		"$TMP/${TAG}m" 65536 >/dev/null 2>&1 &
		track $!
		pids="$pids $!"
	done
	agent_start many --select "comm=${TAG}m" --rate $RATE || return
	i=0
	while [ "$(curl -s "$agent_url/targets" | grep -c '"probes": "attached"')" != 64 ]; do
		i=$((i + 1))
		[ $i -gt 600 ] && { fail "$(curl -s "$agent_url/targets" | grep -c '"attached"') of 64 attached after 60 s"; return; }
		sleep 0.1
	done
	# one set of perf rings (a dummy event per CPU) follows every target's new mappings
	perf=$(ls -l /proc/"$agent_pid"/fd | grep -c 'anon_inode:\[perf_event\]')
	[ "$perf" -le "$(getconf _NPROCESSORS_CONF)" ] ||
		fail "$perf perf events open with 64 targets: a ring set per target?"
	# the targets' objects are read, not mapped: the agent maps libc for itself only
	libc=$(grep -c '/libc\.so\.6$' /proc/"$agent_pid"/maps)
	[ "$libc" -lt 16 ] || fail "$libc mappings of libc in the agent with 64 targets"
	# the first round reads each target's symbols: rounds 2 and 3 must cost nothing more
	for round in 1 2 3; do
		for p in $pids; do
			code=$(curl -s -o "$TMP/many.pb.gz" -w '%{http_code}' "$agent_url/debug/pprof/heap?pid=$p")
			[ "$code" = 200 ] || { fail "heap of $p: $code $(head -c 200 "$TMP/many.pb.gz")"; return; }
		done
		rss=$(awk '/^VmRSS:/ { print $2 }' /proc/"$agent_pid"/status)
		[ "$round" = 2 ] && rss1=$rss
	done
	go tool pprof -raw "$TMP/many.pb.gz" >"$TMP/many.raw" 2>&1 || fail "go tool pprof: $(head -2 "$TMP/many.raw")"
	grep -q '^Comment: target.pid=' "$TMP/many.raw" || fail "no target.pid comment"
	[ "$rss" -le $(((64 + 64 * 2) * 1024)) ] || fail "agent RSS ${rss} KiB with 64 targets, want <= 192 MiB"
	# a third round of 64 scrapes: no growth beyond the allocator's slack (5%)
	[ "$rss" -le $((rss1 + rss1 / 20)) ] || fail "RSS grew from $rss1 to $rss KiB between two rounds"
	echo "# 64 targets: agent RSS $rss1 KiB after the second round of scrapes, $rss KiB after the third"
	return 0
}

# Exact span totals on /metrics, as a real Prometheus scrapes and queries
# them: the target counts every allocator call it makes after SIGUSR1
# (tests/targets/span_totals.c), so each counter must equal its truth
# exactly, whatever the sampling rate; the histogram's quantiles fall in
# the power of two of the true ones (histogram_quantile() interpolates
# inside a bucket: that is its resolution).  A span still open is not in
# the series until it closes; a thread exiting inside one counts it open.
test_span_metrics() {
	need_root || return
	copy "${TAG}t" "$TARGETS/span_totals"
	start_target "$TMP/t.out" "$TMP/${TAG}t" || return
	pid=$target_pid
	agent_start spans --select "comm=${TAG}t" || return
	wait_field "$pid" probes attached 20 || { fail "probes $(field "$pid" probes)"; return; }
	kill -USR1 "$pid"
	wait_for "$TMP/t.out" "^done" 30 || { fail "the target did not finish"; return; }
	cat >"$TMP/prom.yml" <<EOL
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: agent
    static_configs: [{targets: ['${agent_url#http://}']}]
EOL
	prom_start "$TMP/prom.yml" || return
	sel="pid=\"$pid\""
	i=0
	until [ "$(prom_query "culpert_span_alloc_bytes_count{$sel,span=\"fill\"}")" = 1 ]; do
		i=$((i + 1))
		[ $i -gt 60 ] && { fail "no span series in Prometheus in 30 s: $(tail -2 "$TMP/prom.log")"; return; }
		sleep 0.5
	done
	while read -r _ path self_b self_c incl_b incl_c inst open; do
		q="{$sel,span=\"$path\"}"
		if [ "$path" = still_open ]; then
			[ "$(prom_query "culpert_span_alloc_calls_total$q")" = 0 ] ||
				fail "a span still open has series"
			continue
		fi
		for m in self_allocated_bytes_total:$self_b self_alloc_calls_total:$self_c \
			allocated_bytes_total:$incl_b alloc_calls_total:$incl_c \
			alloc_bytes_count:$inst open_instances:$open; do
			got=$(prom_value "culpert_span_${m%%:*}$q")
			[ "$got" = "${m#*:}" ] || fail "$path: culpert_span_${m%%:*} $got, truth ${m#*:}"
		done
	done <<-EOF
	$(grep '^exact ' "$TMP/t.out")
	EOF
	want=$(awk '$1 == "exact" && $2 == "request" { print $5 }' "$TMP/t.out")
	got=$(prom_value "culpert_span_alloc_bytes_sum{$sel,span=\"request\"}")
	[ "$got" = "$want" ] || fail "request: _sum $got, truth $want (inclusive bytes of the closed)"
	read -r _ _ p50 p99 _ <<-EOF
	$(grep '^spread request ' "$TMP/t.out")
	EOF
	for q in 0.5:$p50 0.99:$p99; do
		got=$(prom_value "histogram_quantile(${q%%:*}, culpert_span_alloc_bytes_bucket{$sel,span=\"request\"})")
		$PY -c 'import math, sys
got, want = float(sys.argv[1]), int(sys.argv[2])
k = want.bit_length()
sys.exit(0 if 2 ** (k - 1) - 1 < got <= 2 ** k - 1 else 1)' "$got" "${q#*:}" ||
			fail "request: histogram_quantile(${q%%:*}) $got, truth ${q#*:} (in its power of two?)"
	done
	get /metrics | $PY tests/tools/promcheck.py pid comm >"$TMP/pc" ||
		fail "promcheck: $(head -3 "$TMP/pc")"
	# gone with the target: its series, and its paths from the kernel's table
	# (a pid used again starts from nothing; the table does not fill up)
	kill "$pid"
	wait_field "$pid" state exited 10 || fail "the target is not seen to exit"
	get /metrics | grep -q "^culpert_span_.*pid=\"$pid\"" && fail "an exited target's span series stay"
	n=$(agent_map_keys span_totals "$pid")
	[ "$n" = 0 ] || fail "$n span paths of the exited target left in the agent's span_totals"
}

run_test agent/collector/heap_two_targets test_heap_two_targets
run_test agent/collector/allocs_window test_allocs_window
run_test agent/collector/later_and_exit test_later_and_exit
run_test agent/collector/dlopen_allocator test_dlopen_allocator
run_test agent/collector/labels test_labels
run_test agent/collector/exec test_exec
run_test agent/collector/snapshots test_snapshots
run_test agent/collector/duty_hook test_duty_hook
run_test agent/collector/many_targets test_many_targets
run_test agent/collector/span_metrics test_span_metrics
