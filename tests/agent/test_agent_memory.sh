#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The agent's memory limit (docs/agent.md, "Memory"): in a 96 MiB memory
# cgroup (v1, this host's memory controller), a target of 100k stacks and
# ten scrapers: it keeps serving, is never OOM-killed, every scrape is
# answered or refused for memory saying so, and it says what it folds or
# refuses; under --max-memory below what it holds it drops targets,
# says which, keeps them in /targets as "dropped" and does not take them
# back at the rescan.
. tests/lib.sh
. tests/agent_lib.sh
FAN=$OUTPUT/tests/bench/stack_fan

# two stack_fan targets, every call sampled (64 KiB blocks at --rate 4096); sets $f1 $f2
start_fans() {
	start_target "$TMP/f1.out" "$FAN" 65536 2 || return 1
	f1=$target_pid
	start_target "$TMP/f2.out" "$FAN" 65536 2 || return 1
	f2=$target_pid
}

# SCRAPER N URL END: heap scrapes of URL until END (date +%s), each one's outcome a line
# of $TMP/scr.N: 200, "503 memory" (refused, saying it was for memory), or what else came
scraper() {
	while [ "$(date +%s)" -lt "$3" ]; do
		code=$(curl -s -m 20 -o "$TMP/body.$1" -w '%{http_code}' "$2")
		if [ "$code" = 503 ] && grep -q "not encoded: .* memory limit" "$TMP/body.$1"; then
			echo "503 memory"
		else
			echo "$code"
		fi
	done >"$TMP/scr.$1"
}

test_cgroup_96m() {
	need_root || return
	cg=/sys/fs/cgroup/memory/culpert-mem$$
	[ -d /sys/fs/cgroup/memory ] || { skip "no v1 memory controller at /sys/fs/cgroup/memory"; return; }
	mkdir "$cg" || { fail "cannot make $cg"; return; }
	echo $((96 << 20)) >"$cg/memory.limit_in_bytes"
	# 2^17 call paths, every call sampled (64 KiB blocks at --rate 4096): 100k stacks kept
	start_target "$TMP/f.out" "$FAN" 65536 2 17 || { rmdir "$cg"; return; }
	f1=$target_pid
	: >"$TMP/cg.err"
	sh -c "echo \$\$ >$cg/cgroup.procs && exec $BIN_BPF agent --listen 127.0.0.1:0 \
		--select pid=$f1 --rate 4096 --max-stacks 100000 --ringbuf-size 16MiB -v" \
		2>"$TMP/cg.err" &
	agent_pid=$!
	track "$agent_pid"
	if ! wait_for "$TMP/cg.err" "agent listening on" 30; then
		fail "agent did not start: $(tail -3 "$TMP/cg.err")"
	else
		agent_url=$(sed -n 's/.*agent listening on \(http:[^ ]*\) .*/\1/p' "$TMP/cg.err")
		grep -q "memory limit 100663296 bytes (.*culpert-mem$$/memory.limit_in_bytes)" \
			"$TMP/cg.err" || fail "the cgroup's limit not found: $(grep -m1 'memory' "$TMP/cg.err")"
		# 30 s of 10 heap scrape loops, /healthz every second
		end=$(($(date +%s) + 30))
		scrapers=""
		for i in 1 2 3 4 5 6 7 8 9 10; do
			scraper $i "$agent_url/debug/pprof/heap?pid=$f1" "$end" &
			scrapers="$scrapers $!"
		done
		bad=0
		probes=0
		while [ "$(date +%s)" -lt "$end" ]; do
			code=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$agent_url/healthz")
			probes=$((probes + 1))
			[ "$code" = 200 ] || bad=$((bad + 1))
			sleep 1
		done
		# shellcheck disable=SC2086 # a list of pids
		wait $scrapers
		cat "$TMP"/scr.* >"$TMP/scr"
		kill -0 "$agent_pid" 2>/dev/null || fail "the agent died: $(grep oom_kill "$cg/memory.oom_control")"
		grep -q "^oom_kill 0" "$cg/memory.oom_control" || fail "OOM kills in the cgroup: $(grep oom_kill "$cg/memory.oom_control")"
		[ "$bad" = 0 ] || fail "/healthz failed $bad of $probes probes"
		ok=$(grep -c '^200$' "$TMP/scr")
		refused=$(grep -c '^503 memory$' "$TMP/scr")
		other=$(grep -vc '^200$\|^503 memory$' "$TMP/scr")
		[ "$ok" -gt 0 ] || fail "no heap scrape answered ($refused refused for memory, $other else)"
		[ "$other" = 0 ] || fail "scrapes neither answered nor refused for memory: $(grep -v '^200$\|^503 memory$' "$TMP/scr" | sort | uniq -c | tr '\n' ' ')"
		# what it held back said: new stacks folded, or encodings refused
		[ "$refused" = 0 ] || grep -q "warning: memory: not encoded: the profile of pid $f1" "$TMP/cg.err" ||
			fail "scrapes refused but nothing said in the log"
		grep -q "warning: memory: .* new stacks of every target are folded\|warning: memory: not encoded" "$TMP/cg.err" ||
			fail "nothing said of the memory limit (peak $(cat "$cg/memory.max_usage_in_bytes") bytes)"
		echo "# 96 MiB cgroup, 10 scrapers: peak $(($(cat "$cg/memory.max_usage_in_bytes") >> 20)) MiB," \
			"$ok scrapes answered, $refused refused for memory, $probes health probes answered"
		kill "$agent_pid"
		wait "$agent_pid" 2>/dev/null
	fi
	cleanup_pids
	# the cgroup empties once its processes are reaped
	i=0
	while ! rmdir "$cg" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# rescans: the agent's walks of /proc so far (culpert_agent_rescans_total)
rescans() {
	curl -s "$agent_url/metrics" | awk '$1 == "culpert_agent_rescans_total" { n = $2 }
		END { printf "%d", n }'
}

# rescans_past N: the agent has walked /proc N times
rescans_past() {
	[ "$(rescans)" -ge "$1" ]
}

test_max_memory_drops() {
	need_root || return
	start_fans || return
	# below what the agent holds with them: both go, the hottest last
	agent_start drop --select "pid=$f1" --select "pid=$f2" --rate 4096 --max-stacks 65536 \
		--rescan 1s --max-memory 16MiB || return
	wait_for "$TMP/drop.err" "dropped pid $f1 .*not profiled any more" 30 ||
		{ fail "$f1 not dropped: $(grep -m2 memory "$TMP/drop.err")"; return; }
	wait_for "$TMP/drop.err" "dropped pid $f2 .*not profiled any more" 30 ||
		{ fail "$f2 not dropped: $(grep -m2 memory "$TMP/drop.err")"; return; }
	# two rescans later (--rescan 1s): still dropped, not picked up again
	r0=$(rescans)
	wait_until 10 rescans_past $((r0 + 2)) ||
		{ fail "not two rescans in 10 s: $r0, then $(rescans)"; return; }
	for p in $f1 $f2; do
		[ "$(field "$p" exit_reason)" = dropped ] || fail "$p: exit_reason $(field "$p" exit_reason)"
		[ "$(field "$p" state)" = exited ] || fail "$p: state $(field "$p" state), picked up again?"
	done
	code=$(curl -s -o /dev/null -w '%{http_code}' "$agent_url/healthz")
	[ "$code" = 200 ] || fail "/healthz $code"
	return 0
}

# a profile whose encoding would not fit under the limit is refused, saying
# why, while a small target of the same agent is still served.  With 65k
# of the 2^17 stacks of stack_fan the agent holds 57 MiB of RSS and their
# encoding is estimated at 56 MiB: beside each other they pass 7/8 of
# 112 MiB (98 MiB); the stacks keep coming up to the 3/4 where they fold
test_encoding_refused() {
	need_root || return
	start_target "$TMP/f.out" "$FAN" 65536 2 17 || return
	f1=$target_pid
	start_target "$TMP/i.out" "$TARGETS/agent_idle" || return
	idle=$target_pid
	agent_start refuse --select "pid=$f1" --select "pid=$idle" --rate 4096 \
		--max-stacks 131072 --max-memory 112MiB || return
	wait_for "$TMP/f.out" swept 120 || { fail "stack_fan did not sweep"; return; }
	# the stacks come in over seconds (the BPF side's throttle): until one is refused
	i=0
	code=
	while [ $i -lt 120 ]; do
		code=$(curl -s -m 30 -o "$TMP/body" -w '%{http_code}' "$agent_url/debug/pprof/heap?pid=$f1")
		[ "$code" = 503 ] && break
		[ "$code" = 200 ] || { fail "heap of $f1: $code $(cat "$TMP/body")"; return; }
		sleep 1
		i=$((i + 1))
	done
	[ "$code" = 503 ] || { fail "2^17 stacks encoded under 112 MiB: $(grep -m2 memory "$TMP/refuse.err")"; return; }
	grep -q "not encoded: the profile of pid $f1 (stack_fan) would take about .* MiB to encode, and .* of the 112.00 MiB memory limit (--max-memory) is in use" "$TMP/body" ||
		fail "the refusal does not say why: $(cat "$TMP/body")"
	grep -q "warning: memory: not encoded: the profile of pid $f1" "$TMP/refuse.err" ||
		fail "the log does not say it: $(grep -m2 memory "$TMP/refuse.err")"
	code=$(curl -s -m 30 -o "$TMP/idle.pb.gz" -w '%{http_code}' "$agent_url/debug/pprof/heap?pid=$idle")
	[ "$code" = 200 ] || fail "the small target's heap: $code $(cat "$TMP/idle.pb.gz")"
	code=$(curl -s -o /dev/null -w '%{http_code}' "$agent_url/healthz")
	[ "$code" = 200 ] || fail "/healthz $code"
	[ "$(field "$f1" state)" = live ] || fail "$f1: $(field "$f1" state) $(field "$f1" exit_reason)"
	return 0
}

run_test agent/memory/cgroup_96m test_cgroup_96m
run_test agent/memory/encoding_refused test_encoding_refused
run_test agent/memory/max_memory_drops test_max_memory_drops
