#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Pick-up from the first allocation (docs/agent.md, "Pick-up at exec"): with
# --hold-start, a program started after the agent, and a target's forked
# child, are probed before they run; without it nothing is ever stopped; /targets says "pending" until the probes are live; the
# heap and /targets say what it covers.  Real programs, google/pprof's own
# fetcher (`go tool pprof -raw URL`) as the reader, --rate 1 (every byte).
. tests/lib.sh
. tests/agent_lib.sh
# no budget: every byte of the run is the ground truth
AGENT_ARGS="--max-overhead 0"

TAG=pk$$
# tests/targets/alloc_start: 512 blocks of 4096 bytes in at_start()
START_BYTES=2097152

# at_least NAME PID: at_start's bytes, allocated and live, in the heap of PID >= 99% of the truth
at_least() {
	pprof_raw "/debug/pprof/heap?pid=$2" "$TMP/$1.heap" || return 1
	for t in alloc_space inuse_space; do
		got=$($RAW $t <"$TMP/$1.heap" | awk '$1 == "at_start" { print $2 }')
		[ "${got:-0}" -ge $((START_BYTES * 99 / 100)) ] ||
			{ fail "$1: at_start $t ${got:-0} bytes of $START_BYTES"; return 1; }
	done
}

# covers NAME PID: the heap's comment and /targets say from when, with the anon RSS then
covers() {
	grep -q "^Comment: picked_up=20[0-9-]*T[0-9:.]*Z anon_rss_at_pickup=[1-9][0-9]*: blocks allocated before pick-up are not included$" "$TMP/$1.heap" ||
		fail "$1: no pick-up comment: $(grep -i pick "$TMP/$1.heap")"
	get /targets | $PY -c 'import json, sys
t = [x for x in json.load(sys.stdin)["targets"] if x["pid"] == int(sys.argv[1])][0]
assert t["heap_covers"] == "blocks allocated before pick-up are not included", t["heap_covers"]
assert t["picked_up"] and t["picked_up"] >= t["since"], (t["picked_up"], t["since"])
assert t["picked_up_anon_rss"] > 0, t["picked_up_anon_rss"]' "$2" 2>"$TMP/$1.cov" ||
		fail "$1: /targets: $(tail -1 "$TMP/$1.cov")"
}

# A program started after the agent that allocates at once and exits: all
# of it in the exited target's heap, three runs of three.
test_start_exit() {
	need_root || return
	copy "${TAG}s" "$TARGETS/alloc_start"
	agent_start st --hold-start --select "comm=${TAG}s" --rate 1 --rescan 1h || return
	for i in 1 2 3; do
		"$TMP/${TAG}s" >"$TMP/s$i.out" 2>&1 &
		s=$!
		wait "$s" || { fail "run $i: exit $?: $(cat "$TMP/s$i.out")"; return; }
		wait_field "$s" state exited 30 || { fail "run $i: $s: $(field "$s" state)"; return; }
		at_least "s$i" "$s" || return
	done
	covers s3 "$s"
}

# What a parent waiting with WUNTRACED sees of a program the agent selects:
# a stop with --hold-start (the price of its first allocation, documented),
# none without; either way the program runs to its end.
parent_sees() {
	$PY -c 'import os, signal, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], [sys.argv[1]])
stops = 0
while True:
    _, st = os.waitpid(pid, os.WUNTRACED)
    if os.WIFSTOPPED(st):
        stops += 1
        os.kill(pid, signal.SIGCONT)
        continue
    print("stops", stops, "exit", os.WEXITSTATUS(st) if os.WIFEXITED(st) else "signal")
    break' "$1"
}

test_no_hold_no_stop() {
	need_root || return
	copy "${TAG}n" "$TARGETS/alloc_start"
	agent_start nh --select "comm=${TAG}n" --rate 1 --rescan 1h || return
	out=$(parent_sees "$TMP/${TAG}n")
	[ "$out" = "stops 0 exit 0" ] || fail "without --hold-start: $out"
	kill -TERM "$agent_pid"
	wait "$agent_pid"
	agent_start hs --hold-start --select "comm=${TAG}n" --rate 1 --rescan 1h || return
	out=$(parent_sees "$TMP/${TAG}n")
	case "$out" in "stops "[1-9]*" exit 0") ;; *) fail "with --hold-start: $out" ;; esac
}

# proc_state PID: its state letter in /proc/PID/stat ("" once gone)
proc_state() {
	sed -n 's/^.*) \(.\) .*$/\1/p' "/proc/$1/stat" 2>/dev/null
}

# wait_state PID IS|NOT LETTER SECONDS: until its state is (or is not) LETTER; 1 if not within
wait_state() {
	_i=0
	while :; do
		_s=$(proc_state "$1")
		if [ "$2" = is ]; then [ "$_s" = "$3" ] && return 0; else [ "$_s" != "$3" ] && return 0; fi
		_i=$((_i + 1))
		[ "$_i" -gt $(($4 * 20)) ] && return 1
		sleep 0.05
	done
}

# The agent SIGKILLed while it holds a program stopped at its exec (frozen
# first, so that it cannot let it go itself): its watchdog lets the program
# go, which runs to its end, and says so.
test_killed_agent_lets_go() {
	need_root || return
	copy "${TAG}k" "$TARGETS/alloc_start"
	agent_start kl --hold-start --select "comm=${TAG}k" --rate 1 --rescan 1h || return
	kill -STOP "$agent_pid"
	"$TMP/${TAG}k" >"$TMP/k.out" 2>&1 &
	k=$!
	track "$k"
	if ! wait_state "$k" is T 20; then
		fail "not stopped at its exec: state $(proc_state "$k")"
		kill -CONT "$agent_pid"
		return
	fi
	kill -KILL "$agent_pid"
	wait "$agent_pid" 2>/dev/null
	wait_state "$k" not T 20 || { fail "still stopped 20 s after the agent died"; kill -CONT "$k"; return; }
	wait "$k" || fail "exit $?: $(cat "$TMP/k.out")"
	wait_for "$TMP/kl.err" "the agent is gone: pid $k, stopped for it, let go" 20 ||
		fail "the watchdog did not say so: $(tail -2 "$TMP/kl.err")"
}

# A target's child, forked and allocating at once, then gone: all of it in its heap.
test_fork_child() {
	need_root || return
	copy "${TAG}f" "$TARGETS/alloc_start"
	agent_start fk --hold-start --select "comm=${TAG}f" --rate 1 --rescan 1h || return
	grep -q "cannot stop a new child" "$TMP/fk.err" && { skip "kernel before 6.13"; return; }
	# held at its exec too, until the agent has read it: no 5 s bound on its start
	"$TMP/${TAG}f" fork >"$TMP/f.out" 2>&1 &
	f=$!
	track "$f"
	wait_for "$TMP/f.out" "ready" 30 || { fail "parent did not start"; return; }
	wait_field "$f" probes attached 20 || { fail "parent: probes $(field "$f" probes)"; return; }
	kill -USR1 "$f"
	wait_for "$TMP/f.out" "^done" 20 || { fail "parent did not finish: $(cat "$TMP/f.out")"; return; }
	c=$(sed -n 's/^child //p' "$TMP/f.out")
	wait_field "$c" state exited 30 || { fail "child $c: $(field "$c" state)"; return; }
	at_least child "$c" || return
	covers child "$c"
}

# Stopped at its exec before its libraries are mapped, a program runs on to
# its entry point; in between (here: a preloaded library's constructor
# waits) /targets says pending, and nothing is served yet; at the entry
# point the probes go in, and main's allocations are all there.
test_pending_then_live() {
	need_root || return
	copy "${TAG}p" "$TARGETS/alloc_start"
	agent_start pd --hold-start --select "comm=${TAG}p" --rate 1 --rescan 1h || return
	# held at its exec until the agent has read it, behind the machine's other execs
	# (hundreds a second under the suite's load): no 5 s bound on its start
	env LD_PRELOAD="$PWD/$TARGETS/libwait_ctor.so" "$TMP/${TAG}p" >"$TMP/p.out" 2>&1 &
	track $!
	wait_for "$TMP/p.out" "ready" 30 || { fail "did not reach its constructor"; return; }
	p=$(sed -n 's/^pid \([0-9]*\) ready$/\1/p' "$TMP/p.out")
	wait_field "$p" probes pending 10 || { fail "before its entry: probes $(field "$p" probes)"; return; }
	[ "$(field "$p" picked_up)" = null ] || fail "picked_up before the probes: $(field "$p" picked_up)"
	code=$(curl -s -o "$TMP/p.503" -w '%{http_code}' "$agent_url/debug/pprof/heap?pid=$p")
	[ "$code" = 503 ] && grep -q pending "$TMP/p.503" ||
		fail "heap while pending: $code $(head -c 200 "$TMP/p.503")"
	kill -USR1 "$p"
	wait_for "$TMP/p.out" "^total" 20 || { fail "did not run: $(cat "$TMP/p.out")"; return; }
	wait_field "$p" state exited 30 || { fail "$p: $(field "$p" state)"; return; }
	at_least p "$p" || return
	covers p "$p"
}

# idle_at NAME: start $TMP/${TAG}r, wait until its probes are live; its heap's
# "unwind=" comment (as google/pprof reads it) in $unwind
idle_at() {
	"$TMP/${TAG}r" >"$TMP/$1.out" 2>&1 &
	track $!
	wait_for "$TMP/$1.out" "ready" 20 || { fail "$1: did not start"; return 1; }
	_p=$(sed -n 's/^pid \([0-9]*\) ready$/\1/p' "$TMP/$1.out")
	eval "$1=$_p"
	wait_field "$_p" probes attached 60 || { fail "$1: probes $(field "$_p" probes)"; return 1; }
	pprof_raw "/debug/pprof/heap?pid=$_p" "$TMP/$1.heap" || return 1
	unwind=$(sed -n 's/^Comment: unwind=//p' "$TMP/$1.heap")
}

# The unwinding judged once per set of files (docs/agent.md, "Many targets"):
# a second process of the same file has it remembered; the file replaced at
# the same path by a build without frame pointers (a new inode), then
# rewritten in place with the first build (the same inode, another
# modification time), is judged again each time.
test_rebuilt_exe() {
	need_root || return
	cp "$TARGETS/agent_idle" "$TMP/${TAG}r"
	agent_start rb -vv --select "exe=$TMP/${TAG}r" || return
	idle_at a || return
	[ "$unwind" = fp ] || { fail "first build: unwind=$unwind, want fp"; return; }
	idle_at b || return
	[ "$unwind" = fp ] || { fail "second process: unwind=$unwind, want fp"; return; }
	cp "$TARGETS/agent_idle_nofp" "$TMP/${TAG}r.new"
	mv -f "$TMP/${TAG}r.new" "$TMP/${TAG}r"
	idle_at c || return
	[ "$unwind" = dwarf ] || { fail "replaced by a build without frame pointers: unwind=$unwind"; return; }
	# nothing runs it now: the file can be written over
	kill "$a" "$b" "$c"
	wait "$a" "$b" "$c" 2>/dev/null
	cat "$TARGETS/agent_idle" >"$TMP/${TAG}r"
	idle_at d || return
	[ "$unwind" = fp ] || { fail "rewritten in place: unwind=$unwind, want fp"; return; }
	kill "$d"
	# the second process was not judged again: the choice was remembered (-vv's batch
	# lines; a process picked up at its exec is also judged before its libraries are in)
	grep 'attach thread:' "$TMP/rb.err" | tail -1 | grep -q 'reused [1-9][0-9]*$' ||
		fail "judged/reused: $(grep 'attach thread:' "$TMP/rb.err" | tail -1)"
}

# Churn: waves of short-lived processes, each living until the test has seen
# it in /targets (bounded: 30 s a wave), then killed while the next wave
# starts; every one of them is picked up, and /healthz answers 200 within
# 1 s throughout.  Pick-up work (planning, attaching) runs on the attach
# thread, teardown on the reaper: the event thread only reads.  20 waves of
# 100: 2,000 processes, within 2 minutes.
CHURN_WAVES=${CHURN_WAVES:-20}
CHURN_N=${CHURN_N:-100}
test_churn() {
	need_root || return
	cp "$TARGETS/agent_idle" "$TMP/${TAG}c"
	agent_start churn --select "exe=$TMP/${TAG}c" --max-targets $((CHURN_N * 2 + 16)) \
		--keep-exited 1m || return
	: >"$TMP/churn.slow"
	t0=$(date +%s%N)
	w=0
	old=""
	while [ $w -lt "$CHURN_WAVES" ]; do
		pids=""
		i=0
		while [ $i -lt "$CHURN_N" ]; do
			"$TMP/${TAG}c" >/dev/null &
			pids="$pids $!"
			i=$((i + 1))
		done
		# the wave before goes while this one is picked up: exits beside pick-ups
		[ -n "$old" ] && kill $old 2>/dev/null
		_i=0
		while :; do
			_c=$(curl -s -m 1 -o /dev/null -w '%{http_code} %{time_total}' "$agent_url/healthz")
			case $_c in
			"200 "*) ;;
			*) echo "wave $w: /healthz $_c" >>"$TMP/churn.slow" ;;
			esac
			missing=$(get /targets | $PY -c 'import json, sys
seen = {x["pid"] for x in json.load(sys.stdin)["targets"]}
print(" ".join(p for p in sys.argv[1:] if int(p) not in seen))' $pids)
			[ -z "$missing" ] && break
			_i=$((_i + 1))
			[ $_i -gt 150 ] && break
			sleep 0.2
		done
		if [ -n "$missing" ]; then
			fail "wave $w: $(echo $missing | wc -w) of $CHURN_N processes not in /targets after 30 s"
			kill $pids $old 2>/dev/null
			wait $pids $old 2>/dev/null
			return 1
		fi
		[ -n "$old" ] && wait $old 2>/dev/null
		old=$pids
		w=$((w + 1))
	done
	kill $old 2>/dev/null
	wait $old 2>/dev/null
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "  $((CHURN_WAVES * CHURN_N)) processes in $CHURN_WAVES waves, all picked up, in $ms ms"
	[ "$ms" -le 120000 ] || fail "$((CHURN_WAVES * CHURN_N)) processes took $ms ms, want 2 minutes"
	[ -s "$TMP/churn.slow" ] && fail "/healthz not 200 within 1 s: $(head -3 "$TMP/churn.slow")"
	agent_stop_churn
	return 0
}

agent_stop_churn() {
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null
}

run_test agent/pickup/start_exit test_start_exit
run_test agent/pickup/no_hold_no_stop test_no_hold_no_stop
run_test agent/pickup/killed_agent_lets_go test_killed_agent_lets_go
run_test agent/pickup/fork_child test_fork_child
run_test agent/pickup/pending_then_live test_pending_then_live
run_test agent/pickup/rebuilt_exe test_rebuilt_exe
run_test agent/pickup/churn test_churn
