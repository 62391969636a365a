#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The agent on the otel_memory contract (docs/agent.md "The collector",
# docs/otel.md): targets started under LD_PRELOAD=libculpert-sampler.so
# are profiled through its probes, the others through uprobes on their
# allocator, in one agent over one BPF object; fetched by google/pprof
# (`go tool pprof -raw URL`).  At CULPERT_SAMPLER_RATE=1 every allocation
# is a sample whose weight is its size: each function's bytes and calls
# are the target's own totals exactly.
. tests/lib.sh
. tests/agent/budget.inc
# no budget but in the duty-cycling test: the exact totals are of whole runs
AGENT_ARGS="--max-overhead 0"

TAG=aot$$
# the agent's --rate, for the targets on uprobes: not the sampler's (1), so each profile's
# period tells which rate it was taken at
RATE=65536
SAMPLED="env LD_PRELOAD=$LIB CULPERT_SAMPLER_RATE=1"

# exact_heap NAME PID: /debug/pprof/heap of PID, each function's alloc_space and
# inuse_space are the "total FN ALLOCATED LIVE" lines of $TMP/NAME.out exactly
exact_heap() {
	pprof_raw "/debug/pprof/heap?pid=$2" "$TMP/$1.heap" || return 1
	$RAW alloc_space <"$TMP/$1.heap" >"$TMP/$1.alloc"
	$RAW inuse_space <"$TMP/$1.heap" >"$TMP/$1.live"
	while read -r _ fn alloc live; do
		got_a=$(awk -v f="$fn" '$1 == f { print $2 }' "$TMP/$1.alloc")
		got_l=$(awk -v f="$fn" '$1 == f { print $2 }' "$TMP/$1.live")
		[ "${got_a:-0}/${got_l:-0}" = "$alloc/$live" ] ||
			echo "$fn: allocated/live $alloc/$live, profile ${got_a:-0}/${got_l:-0}"
	done >"$TMP/$1.bad" <<-EOF
	$(grep '^total ' "$TMP/$1.out")
	EOF
	[ -s "$TMP/$1.bad" ] && { fail "$1: heap inexact: $(tr '\n' ';' <"$TMP/$1.bad")"; return 1; }
	[ "$(grep -c '^total ' "$TMP/$1.out")" -eq 5 ] || { fail "$1: alloc_live did not report"; return 1; }
	return 0
}

# path NAME PID SAMPLER RATE: /targets and the profile $TMP/NAME.{raw,heap} say PID took
# SAMPLER (otel_memory or uprobes) at RATE
path() {
	[ "$(field "$2" sampler)" = "$3" ] || fail "$1: /targets sampler $(field "$2" sampler), want $3"
	f=$TMP/$1.raw
	[ -f "$f" ] || f=$TMP/$1.heap
	grep -qx "Comment: sampler=$3" "$f" && grep -qx "Comment: rate=$4" "$f" ||
		fail "$1: $(grep -E '^Comment: (sampler|rate)=' "$f" | tr '\n' ' '), want $3 at $4"
}

# One agent, three targets: alloc_exact and alloc_live (small run, exact
# units) under the sampler at rate 1, through its probes, exact in allocs
# and in heap; alloc_live without the sampler, on uprobes at --rate 64KiB,
# within 4 sigma (sigma = sqrt(rate x bytes), Poisson byte sampling).
test_mixed() {
	need_root && need_sampler || return
	copy "${TAG}x" "$TARGETS/alloc_exact"
	copy "${TAG}l" "$TARGETS/alloc_live"
	copy "${TAG}u" "$TARGETS/alloc_live"
	# shellcheck disable=SC2086 # $SAMPLED: words put before the target
	start_target "$TMP/x.out" $SAMPLED "$TMP/${TAG}x" || return
	x=$target_pid
	# shellcheck disable=SC2086
	start_target "$TMP/l.out" $SAMPLED "$TMP/${TAG}l" 17408 || return
	l=$target_pid
	start_target "$TMP/u.out" "$TMP/${TAG}u" || return
	u=$target_pid
	agent_start mixed --select "comm=${TAG}." --rate $RATE || return
	for p in $x $l $u; do
		wait_field "$p" probes attached 20 || { fail "$p: probes $(field "$p" probes)"; return; }
	done
	kill -USR1 "$x" "$l" "$u"
	wait "$x"
	wait_for "$TMP/l.out" "^done" 30 || fail "sampled alloc_live did not finish"
	wait_for "$TMP/u.out" "^done" 30 || fail "alloc_live did not finish"
	grep -q '^checks [0-9]* failed 0$' "$TMP/x.out" || fail "alloc_exact: $(grep '^check' "$TMP/x.out")"
	exact_allocs x "$x" && path x "$x" otel_memory 1
	exact_heap l "$l" && path l "$l" otel_memory 1
	check_live u "$u" && path u "$u" uprobes $RATE
	grep -qx 'Comment: inuse=otel_memory probes: .*' "$TMP/l.heap" ||
		fail "in-use of the sampled target: $(grep '^Comment: inuse=' "$TMP/l.heap")"
	return 0
}

# --sampler uprobes: the sampled target gets uprobes (on the sampler's own
# malloc, the first in lookup order), exact at --rate 1 all the same;
# --sampler usdt: a target without the probes fails, saying why, and one
# with them is profiled through them.
test_modes() {
	need_root && need_sampler || return
	copy "${TAG}x" "$TARGETS/alloc_exact"
	copy "${TAG}p" "$TARGETS/alloc_steady"
	# shellcheck disable=SC2086
	start_target "$TMP/ux.out" $SAMPLED "$TMP/${TAG}x" || return
	x=$target_pid
	agent_start up --select "comm=${TAG}x" --rate 1 --sampler uprobes || return
	wait_field "$x" probes attached 20 || { fail "$x: probes $(field "$x" probes)"; return; }
	kill -USR1 "$x"
	wait "$x"
	exact_allocs ux "$x" && path ux "$x" uprobes 1
	agent_stop
	# shellcheck disable=SC2086
	start_target "$TMP/s.out" $SAMPLED "$TMP/${TAG}x" || return
	s=$target_pid
	start_target "$TMP/p.out" "$TMP/${TAG}p" || return
	p=$target_pid
	agent_start usdt --select "comm=${TAG}[xp]" --sampler usdt || return
	wait_field "$s" probes attached 20 || fail "sampled target under usdt: $(field "$s" probes)"
	[ "$(field "$s" sampler)" = otel_memory ] || fail "usdt: sampler $(field "$s" sampler)"
	wait_field "$p" probes failed 20 || fail "plain target under usdt: $(field "$p" probes)"
	case "$(field "$p" probes_error)" in
	*"--sampler usdt cannot be had: no mapped object has otel_memory:alloc probes"*) ;;
	*) fail "plain target under usdt: probes_error '$(field "$p" probes_error)'" ;;
	esac
	[ "$(field "$p" sampler)" = null ] || fail "a failed target's sampler: $(field "$p" sampler)"
	agent_stop
	return 0
}

# A bad --sampler: one error line, exit 2, before anything is loaded; --help says it
test_bad_sampler() {
	"$BIN_BPF" agent --select comm=x --sampler otel >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	[ $rc = 2 ] || fail "--sampler otel: exit $rc, want 2"
	[ "$(wc -l <"$TMP/bad.err")" = 1 ] &&
		grep -q "^error: invalid --sampler 'otel': use auto, usdt, uprobes or inject" "$TMP/bad.err" ||
		fail "--sampler otel: $(head -3 "$TMP/bad.err")"
	"$BIN_BPF" agent --help | grep -q -- "--sampler MODE" || fail "--help lacks --sampler"
	return 0
}

# The duty-cycling hook on a target on its otel_memory probes (16384
# malloc/free pairs a second, every one a sample at rate 1):
# otel_memory:alloc's links go while off, otel_memory:free's stay; and
# still after 600 more switches (each attach takes an argument spec of the
# shared object's 256, each detach gives it back).
test_duty_hook() {
	need_root && need_sampler || return
	# shellcheck disable=SC2086
	start_target "$TMP/h.out" $SAMPLED "$TARGETS/alloc_steady" 4194304 || return
	duty_hook "$target_pid" otel_memory 600
	return 0
}

# The budget duty-cycles a sampled target (20k ops/s at rate 1: 20k alloc
# and 20k free probe hits a second, each op freeing the block 4096 ops
# older, so 4 MiB of 1 KiB blocks are live at any time) under a budget
# between the free hits' cost and the whole, as test_budget.sh does on
# uprobes: blocks sampled in an on window and freed in the off window after
# it are tens of MiB, and none may stay live.  At rate 1 there is no
# sampling error: ring_block's inuse_space is at most 4 MiB, exactly.
test_budget_heap() {
	need_root && need_sampler || return
	copy "${TAG}b" "$TARGETS/alloc_bound"
	# shellcheck disable=SC2086
	start_target "$TMP/t.out" $SAMPLED "$TMP/${TAG}b" 20000 4096 1024 || return
	# after $AGENT_ARGS' --max-overhead 0: the last one given holds
	agent_start bud -v --select "pid=$target_pid" --max-overhead 1.8 --duty-period 1s \
		--ringbuf-size 16MiB || return
	duty_cycled_heap bud otel_memory || return 1
	agent_stop
	return 0
}

# count_attached COMM: "N" live targets of COMM attached through otel_memory, "failed: WHY"
# for one that failed, from one /targets
count_attached() {
	get /targets | $PY -c 'import json, sys
t = [x for x in json.load(sys.stdin)["targets"] if x["comm"] == sys.argv[1] and x["state"] == "live"]
bad = [x for x in t if x["probes"] == "failed"]
print("failed: %s" % bad[0]["probes_error"] if bad else
      sum(x["probes"] == "attached" and x["sampler"] == "otel_memory" for x in t))' "$1"
}

# Targets come and go for as long as the agent runs: each one's otel_memory
# sites (an alloc and a free) take argument specs of the shared object's
# 256 (BPF_USDT_MAX_SPEC_CNT), given back when it leaves.  160 sampled
# targets, 20 at a time, 320 specs over the run: every one attached through
# its probes.
test_many_pickups() {
	need_root && need_sampler || return
	copy "${TAG}m" "$TARGETS/alloc_steady"
	agent_start pick --select "comm=${TAG}m" --keep-exited 0 || return
	for round in 1 2 3 4 5 6 7 8; do
		pids=""
		for _ in $(seq 20); do
			env LD_PRELOAD="$LIB" "$TMP/${TAG}m" 65536 >/dev/null 2>&1 &
			track $!
			pids="$pids $!"
		done
		i=0
		while [ "$(count_attached "${TAG}m")" != 20 ]; do
			i=$((i + 1))
			[ $i -gt 300 ] && { fail "round $round: $(count_attached "${TAG}m") of 20 attached"; return; }
			sleep 0.1
		done
		# shellcheck disable=SC2086
		kill $pids
		# shellcheck disable=SC2086
		wait $pids 2>/dev/null
		i=0
		while [ "$(get /targets | grep -c "\"${TAG}m\"")" != 0 ]; do
			i=$((i + 1))
			[ $i -gt 300 ] && { fail "round $round: targets not dropped after exiting"; return; }
			sleep 0.1
		done
	done
	return 0
}

run_test agent/otel/mixed test_mixed
run_test agent/otel/modes test_modes
run_test agent/otel/bad_sampler test_bad_sampler
run_test agent/otel/duty_hook test_duty_hook
run_test agent/otel/budget_heap test_budget_heap
run_test agent/otel/many_pickups test_many_pickups
