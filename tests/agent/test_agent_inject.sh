#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The agent's --inject SEL (docs/agent.md, "Injected targets"): a selected
# process gets libculpert-sampler.so loaded by the injector and is profiled
# through its otel_memory probes at the agent's --rate; one that refuses it
# (a static program) is profiled on uprobes with one warning; the agent's
# SIGTERM releases the library (mapped, dormant: its page's counters stand
# still), its SIGKILL leaves it taken over with no reader (nothing fired),
# and each target checks its own work.  Fetched by google/pprof
# (`go tool pprof -raw URL`); at --rate 1 every call is a sample.
. tests/lib.sh
. tests/agent/budget.inc
# every call a sample at --rate 1, each with its stack (up to 16 KiB with DWARF): a ring
# that holds seconds of them, so that a loaded machine's slow reader loses none
AGENT_ARGS="--max-overhead 0 --ringbuf-size 64MiB"

TAG=ain$$
MEMFD="/memfd:libculpert-sampler.so (deleted)"

# page PID: "rate events alloc_fired" from the injected library's culpert_sampler_page
# (include/culpert/sampler.h: rate at 16, events at 40, alloc_fired at 64), read through
# /proc/PID/mem at the symbol's address in the memfd mapping; "-" when not mapped
page() {
	_sym=$(nm -D --defined-only "$LIB" | awk '$3 == "culpert_sampler_page" { print $1 }')
	$PY - "$1" "$_sym" "$MEMFD" <<-'EOF'
	import struct, sys
	pid, sym, name = int(sys.argv[1]), int(sys.argv[2], 16), sys.argv[3]
	base = None
	for l in open("/proc/%d/maps" % pid):
	    f = l.split(None, 5)
	    if len(f) == 6 and f[5].strip() == name and int(f[2], 16) == 0:
	        base = int(f[0].split("-")[0], 16)
	        break
	if base is None:
	    print("-")
	    sys.exit(0)
	with open("/proc/%d/mem" % pid, "rb") as m:
	    m.seek(base + sym)
	    b = m.read(72)
	print(struct.unpack_from("<Q", b, 16)[0], struct.unpack_from("<Q", b, 40)[0],
	      struct.unpack_from("<Q", b, 64)[0])
	EOF
}

# page_field PID N: field N (1 rate, 2 events, 3 alloc_fired) of page PID
page_field() {
	page "$1" | awk -v n="$2" '{ print $n }'
}

# grows PID N: page field N grows over 0.5 s (the busy threads allocate all the time): the
# window of the checks that it no longer does
grows() {
	_a=$(page_field "$1" "$2")
	sleep 0.5
	_b=$(page_field "$1" "$2")
	[ "$_a" != - ] && [ "$_b" -gt "$_a" ]
}

# fires PID N: page field N grows within 10 s, polled
fires() {
	_a=$(page_field "$1" "$2")
	[ "$_a" != - ] && wait_until 10 field_past "$1" "$2" "$_a"
}
field_past() { [ "$(page_field "$1" "$2")" -gt "$3" ] 2>/dev/null; }

# injected NAME: inject_blocked (2 busy threads) as $TMP/NAME.out, $pid, under an agent
# started as NAME1 with --inject pid= at --rate 1, and taken over: its probes fire
injected() {
	copy "$TAG$1" "$TARGETS/inject_blocked"
	start_target "$TMP/$1.out" "$TMP/$TAG$1" 3600 2 || return 1
	pid=$target_pid
	agent_start "${1}1" -v --inject "pid=$pid" --rate 1 || return 1
	wait_field "$pid" probes attached 20 ||
		{ fail "probes $(field "$pid" probes): $(field "$pid" probes_error)"; return 1; }
	[ "$(field "$pid" sampler)" = inject ] || { fail "sampler $(field "$pid" sampler)"; return 1; }
	fires "$pid" 3 || { fail "taken over, nothing fired: $(page "$pid")"; return 1; }
}

# --inject at --rate 1: inject_before's calls after the injection exactly, allocated and
# live, by function; none of the 2000 blocks from before (f_before), freed after or not;
# /targets says inject, the profile its rate, the sampler page the agent's rate
t_exact() {
	need_root && need_sampler || return
	copy "${TAG}b" "$TARGETS/inject_before"
	start_target "$TMP/b.out" "$TMP/${TAG}b" || return
	b=$target_pid
	agent_start exact -v --inject "pid=$b" --rate 1 || return
	wait_field "$b" probes attached 20 || { fail "probes $(field "$b" probes): $(field "$b" probes_error)"; return; }
	[ "$(field "$b" sampler)" = inject ] || fail "sampler $(field "$b" sampler): $(field "$b" sampler_why)"
	[ "$(page_field "$b" 1)" = 1 ] || fail "the sampler page's rate $(page_field "$b" 1), want 1"
	kill -USR1 "$b"
	wait_for "$TMP/b.out" "^done" 30 || { fail "inject_before did not finish"; return; }
	exact_allocs b "$b" || return
	grep -qx "Comment: sampler=otel_memory" "$TMP/b.raw" && grep -qx "Comment: rate=1" "$TMP/b.raw" ||
		fail "$(grep -E '^Comment: (sampler|rate)=' "$TMP/b.raw" | tr '\n' ' ')"
	pprof_raw "/debug/pprof/heap?pid=$b" "$TMP/b.heap" || return
	$RAW inuse_space <"$TMP/b.heap" | awk '$2 > 0' | sed 's/^/live /' | sort >"$TMP/b.lest"
	awk '$1 == "live" { print $1, $2, $3 }' "$TMP/b.out" | sort >"$TMP/b.ltruth"
	diff "$TMP/b.ltruth" "$TMP/b.lest" >"$TMP/b.ldiff" ||
		fail "live, inexact: $(tr '\n' ';' <"$TMP/b.ldiff")"
	grep -q "warning" "$TMP/exact.err" && fail "a warning: $(grep warning "$TMP/exact.err" | head -2)"
	agent_stop
	grep -q 'injection: released' "$TMP/exact.err" || fail "not released: $(tail -2 "$TMP/exact.err")"
}

# A static program cannot take the sampler: one warning naming why, profiled on
# uprobes all the same (alloc_exact's every call, exactly), /targets says so
t_refused() {
	need_root && need_sampler || return
	copy "${TAG}s" "$TARGETS/alloc_exact_static"
	start_target "$TMP/s.out" "$TMP/${TAG}s" || return
	s=$target_pid
	agent_start ref --inject "pid=$s" --rate 1 || return
	wait_field "$s" probes attached 20 || { fail "probes $(field "$s" probes): $(field "$s" probes_error)"; return; }
	[ "$(field "$s" sampler)" = uprobes ] || fail "sampler $(field "$s" sampler)"
	case "$(field "$s" sampler_why)" in
	*"cannot inject libculpert-sampler.so into pid $s: "*"no glibc dynamic loader"*) ;;
	*) fail "sampler_why: $(field "$s" sampler_why)" ;;
	esac
	[ "$(grep -c "^warning: pid $s (${TAG}s) is profiled through uprobes, not --inject: .*no glibc dynamic loader" "$TMP/ref.err")" = 1 ] ||
		fail "not one warning: $(grep warning "$TMP/ref.err" | head -3)"
	kill -USR1 "$s"
	wait "$s" || fail "alloc_exact_static failed: $(tail -2 "$TMP/s.out")"
	grep -q '^checks [0-9]* failed 0$' "$TMP/s.out" || fail "$(grep '^check' "$TMP/s.out")"
	# on failure, what the profile says of its losses and what the agent logged last
	exact_allocs s "$s" || { grep -E '^Comment: (lost_samples|observed_ns|picked_up)' "$TMP/s.raw"
		grep -v '^libbpf' "$TMP/ref.err" | tail -4; } >&2
	grep -q "$MEMFD" "/proc/$s/maps" 2>/dev/null && fail "the library was loaded"
	agent_stop
}

# A program started after the agent, picked up from its exec event: usually still in its
# loader then (libc not mapped yet: pending, -v says so), injected at a later try
t_exec() {
	need_root && need_sampler || return
	copy "${TAG}e" "$TARGETS/alloc_steady"
	agent_start exec -v --inject "comm=${TAG}e" --rate 4096 || return
	"$TMP/${TAG}e" 1048576 >/dev/null 2>&1 &
	e=$!
	track $e
	wait_field "$e" probes attached 20 || { fail "probes $(field "$e" probes): $(field "$e" probes_error)"; return; }
	[ "$(field "$e" sampler)" = inject ] || fail "sampler $(field "$e" sampler): $(field "$e" sampler_why)"
	fires "$e" 3 || fail "taken over, nothing fired: $(page "$e")"
	agent_stop
	grows "$e" 2 && fail "still taken over after the stop: $(page "$e")"
	return 0
}

# A process that preloads the sampler is not injected: its probes serve as they are, at
# its own rate (alloc_exact at CULPERT_SAMPLER_RATE=1, exact), and no warning of a refusal
t_preloaded() {
	need_root && need_sampler || return
	copy "${TAG}p" "$TARGETS/alloc_exact"
	start_target "$TMP/p.out" env LD_PRELOAD="$LIB" CULPERT_SAMPLER_RATE=1 "$TMP/${TAG}p" || return
	p=$target_pid
	agent_start pre -v --inject "pid=$p" || return
	wait_field "$p" probes attached 20 || { fail "probes $(field "$p" probes): $(field "$p" probes_error)"; return; }
	[ "$(field "$p" sampler)" = otel_memory ] || fail "sampler $(field "$p" sampler): $(field "$p" sampler_why)"
	kill -USR1 "$p"
	wait "$p" || fail "alloc_exact failed: $(tail -2 "$TMP/p.out")"
	exact_allocs p "$p"
	grep -E "injection:|not --inject" "$TMP/pre.err" && fail "injected: $(grep injection "$TMP/pre.err")"
	agent_stop
}

# SIGTERM: the agent releases the library before it exits (in well under a second of its
# CPU), the library stays mapped and dormant (the page's counters stand still while the
# target allocates), and the target's threads, blocked and busy, saw nothing
t_sigterm() {
	need_root && need_sampler && injected t || return
	t=$pid
	kill "$agent_pid"
	wait "$agent_pid"
	rc=$?
	[ $rc = 0 ] || fail "agent exit $rc: $(tail -3 "$TMP/t1.err")"
	grep -q 'injection: released' "$TMP/t1.err" || fail "not released: $(tail -3 "$TMP/t1.err")"
	# bounded by its deadline (500 ms) whatever the target does
	ms=$(sed -n 's/.*released the samplers injected into 1 targets in \([0-9]*\) ms.*/\1/p' "$TMP/t1.err")
	[ -n "$ms" ] && [ "$ms" -lt 1000 ] || fail "release: $(grep 'released the' "$TMP/t1.err")"
	grep -q "$MEMFD" "/proc/$t/maps" || fail "the library is not mapped any more"
	grows "$t" 2 && fail "still taken over after the agent's stop: $(page "$t")"
	# a later agent that does not inject leaves the dormant library alone (its probes see
	# nothing): uprobes
	agent_start t2 --select "pid=$t" --rate 4096 || return
	wait_field "$t" probes attached 20 || { fail "again: probes $(field "$t" probes)"; return; }
	[ "$(field "$t" sampler)" = uprobes ] || fail "dormant: sampler $(field "$t" sampler): $(field "$t" sampler_why)"
	agent_stop
	blocked_verdict "$TMP/t.out" "$t"
	echo "# stop: $(grep -o 'released the samplers.*' "$TMP/t1.err") ($(uptime))" >&2
}

# A target dropped for memory (--max-memory below what the agent holds) leaves with its
# library released, off the profiling thread, while the agent serves on
t_dropped() {
	need_root && need_sampler || return
	copy "${TAG}d" "$TARGETS/alloc_steady"
	"$TMP/${TAG}d" 1048576 >/dev/null 2>&1 &
	d=$!
	track $d
	agent_start drop -v --inject "pid=$d" --rate 1 --max-memory 16MiB || return
	wait_for "$TMP/drop.err" "dropped pid $d .*not profiled any more" 30 ||
		{ fail "not dropped: $(grep -m2 memory "$TMP/drop.err")"; return; }
	# dropped after its injection: released; dropped first (a loaded machine), never injected
	wait_for "$TMP/drop.err" "injection: released" 10 ||
		! grep -q "injection: \(loaded\|reused\)" "$TMP/drop.err" ||
		{ fail "not released: $(grep -E 'injection|warning' "$TMP/drop.err" | head -3)"; return; }
	[ "$(field "$d" exit_reason)" = dropped ] || fail "exit_reason $(field "$d" exit_reason)"
	grows "$d" 2 && fail "still taken over: $(page "$d")"
	kill -0 "$d" || fail "the target died"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$agent_url/healthz")" = 200 ] || fail "/healthz"
	agent_stop
}

# Several injected targets: the stop releases them side by side, all within its 500 ms
# bound (the line says how long), every one dormant after (4 alloc_steady at 1 MiB/s)
t_stop_several() {
	need_root && need_sampler || return
	copy "${TAG}m" "$TARGETS/alloc_steady"
	pids=""
	for i in 1 2 3 4; do
		"$TMP/${TAG}m" 1048576 >/dev/null 2>&1 &
		track $!
		pids="$pids $!"
	done
	agent_start many -v --inject "comm=${TAG}m" --rate 1 || return
	for p in $pids; do
		wait_field "$p" probes attached 30 || { fail "$p: probes $(field "$p" probes)"; return; }
		[ "$(field "$p" sampler)" = inject ] || fail "$p: sampler $(field "$p" sampler)"
	done
	kill "$agent_pid"
	wait "$agent_pid" || fail "agent exit $?: $(tail -3 "$TMP/many.err")"
	ms=$(sed -n 's/.*released the samplers injected into 4 targets in \([0-9]*\) ms.*/\1/p' "$TMP/many.err")
	[ -n "$ms" ] && [ "$ms" -lt 1000 ] || fail "release: $(grep 'released the' "$TMP/many.err")"
	[ "$(grep -c 'injection: released' "$TMP/many.err")" = 4 ] ||
		fail "$(grep -c 'injection: released' "$TMP/many.err") of 4 released: $(grep warning "$TMP/many.err" | head -2)"
	for p in $pids; do
		grows "$p" 2 && fail "$p still taken over: $(page "$p")"
	done
	echo "# 4 targets: $(grep -o 'released the samplers.*' "$TMP/many.err") ($(uptime))" >&2
}

# SIGKILL: the library stays taken over with nobody listening: it samples (events grow)
# and fires nothing (the kernel removed the probes, the semaphores are 0); the target
# works on; the next agent reuses the library and its SIGTERM releases it
t_sigkill() {
	need_root && need_sampler && injected k || return
	k=$pid
	kill -9 "$agent_pid"
	wait "$agent_pid" 2>/dev/null
	# the kernel drops the dead agent's links as it closes their descriptors
	_i=0
	while grows "$k" 3 && [ $_i -lt 20 ]; do _i=$((_i + 1)); done
	grows "$k" 3 && fail "still fired 10 s after the agent's SIGKILL: $(page "$k")"
	fires "$k" 2 || fail "not sampling after the agent's SIGKILL: $(page "$k")"
	agent_start k2 -v --inject "pid=$k" --rate 1 || return
	wait_field "$k" probes attached 20 || { fail "again: probes $(field "$k" probes)"; return; }
	grep -q 'injection: reused' "$TMP/k2.err" || fail "not reused: $(grep injection "$TMP/k2.err")"
	fires "$k" 3 || fail "the second agent sees nothing: $(page "$k")"
	agent_stop
	grows "$k" 2 && fail "still taken over after the second agent's stop: $(page "$k")"
	blocked_verdict "$TMP/k.out" "$k"
}

# Debian's redis-server under redis-benchmark, picked up by --inject: a profile with
# redis' own frames; redis answers and works on once the agent has stopped
t_redis() {
	need_root && need_sampler || return
	command -v redis-server >/dev/null || { skip "redis-server not installed"; return; }
	port=$(free_port)
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		>"$TMP/redis.log" 2>&1 &
	r=$!
	track $r
	wait_running "$r" redis-server 10 || { fail "redis did not start"; return; }
	_i=0
	until redis-cli -p "$port" ping >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && { fail "redis does not answer"; return; }
		sleep 0.1
	done
	agent_start redis -v --inject "pid=$r" --rate 64KiB || return
	wait_field "$r" probes attached 20 || { fail "probes $(field "$r" probes): $(field "$r" probes_error)"; return; }
	[ "$(field "$r" sampler)" = inject ] || fail "sampler $(field "$r" sampler): $(field "$r" sampler_why)"
	redis-benchmark -p "$port" -q -n 100000 -c 8 -t set,get,lpush -d 256 >"$TMP/bench1" 2>&1 ||
		fail "redis-benchmark: $(tail -2 "$TMP/bench1")"
	get "/debug/pprof/allocs?pid=$r" >"$TMP/r.pb.gz"
	# redis' own functions, anywhere on the stacks (cumulative)
	go tool pprof -top -cum -sample_index=alloc_space "$TMP/r.pb.gz" >"$TMP/r.top" 2>&1 ||
		{ fail "go tool pprof: $(tail -2 "$TMP/r.top")"; return; }
	for f in processCommand readQueryFromClient; do
		grep -q " $f\$" "$TMP/r.top" || fail "no $f on the stacks: $(head -14 "$TMP/r.top")"
	done
	grep -q '\[unknown' "$TMP/r.top" && fail "unknown frames: $(grep unknown "$TMP/r.top" | head -3)"
	agent_stop
	grep -q 'injection: released' "$TMP/redis.err" || fail "not released: $(tail -3 "$TMP/redis.err")"
	[ "$(redis-cli -p "$port" set ${TAG} v)" = OK ] && [ "$(redis-cli -p "$port" get ${TAG})" = v ] ||
		fail "redis does not work after the agent's stop"
	redis-benchmark -p "$port" -q -n 20000 -c 4 -t set,get >"$TMP/bench2" 2>&1 ||
		fail "redis-benchmark after: $(tail -2 "$TMP/bench2")"
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
	wait "$r" 2>/dev/null
}

# The budget on the injected path: a hit is a sample (an otel_memory:alloc hit and its
# stack), rationed by the duty cycle as on a preloaded sampler's target (20k ops/s at
# rate 1, test_agent_otel.sh's budget_heap): duty cycled, no free missed in the off
# windows (ring_block live at most the 4 MiB that are, exactly)
t_budget() {
	need_root && need_sampler || return
	copy "${TAG}u" "$TARGETS/alloc_bound"
	start_target "$TMP/u.out" "$TMP/${TAG}u" 20000 4096 1024 || return
	# after $AGENT_ARGS' --max-overhead 0: the last one given holds
	agent_start bud -v --inject "pid=$target_pid" --rate 1 --max-overhead 1.8 \
		--duty-period 1s --ringbuf-size 16MiB || return
	duty_cycled_heap bud inject || return
	agent_stop
	grep -q 'injection: released' "$TMP/bud.err" || fail "not released: $(tail -3 "$TMP/bud.err")"
}

# The options: --inject alone selects; --sampler inject, for every selected process, is
# refused in one line naming --inject
t_options() {
	"$BIN_BPF" agent --select comm=x --sampler inject >"$TMP/o.out" 2>"$TMP/o.err"
	rc=$?
	[ $rc = 2 ] && [ "$(wc -l <"$TMP/o.err")" = 1 ] && grep -q "^error: .*--inject SEL" "$TMP/o.err" ||
		fail "--sampler inject: exit $rc, $(head -2 "$TMP/o.err")"
	"$BIN_BPF" agent --help | grep -q -- "--inject SEL" || fail "--help lacks --inject"
	"$BIN_BPF" agent --inject 'bogus' >"$TMP/o.out" 2>"$TMP/o.err"
	rc=$?
	[ $rc = 2 ] && grep -q "^error: invalid --inject 'bogus'" "$TMP/o.err" ||
		fail "--inject bogus: exit $rc, $(head -2 "$TMP/o.err")"
	"$BIN_BPF" agent --inject 'pid=x' >"$TMP/o.out" 2>"$TMP/o.err"
	rc=$?
	[ $rc = 2 ] && grep -q "^error: invalid --inject pid 'x'" "$TMP/o.err" ||
		fail "--inject pid=x: exit $rc, $(head -2 "$TMP/o.err")"
}

run_test agent/inject/options t_options
run_test agent/inject/exact t_exact
run_test agent/inject/refused t_refused
run_test agent/inject/exec t_exec
run_test agent/inject/preloaded t_preloaded
run_test agent/inject/sigterm t_sigterm
run_test agent/inject/dropped t_dropped
run_test agent/inject/stop_several t_stop_several
run_test agent/inject/sigkill t_sigkill
run_test agent/inject/budget t_budget
run_test agent/inject/redis t_redis
