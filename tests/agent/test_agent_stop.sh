#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The agent's stop and its descriptors (docs/agent.md, "Running it"):
# SIGTERM or SIGINT at random moments while targets holding thousands of sampled live
# blocks are profiled ends it with status 0 within 1 s every time; started
# under a soft open-files limit of 1024 it takes its hard limit and
# attaches to 200 targets, and still stops within 1 s.  The 1 s is judged
# in the agent's own CPU time from the signal to its exit (the work the
# stop does, which the machine's load does not change); the wall time is
# printed beside it.
. tests/lib.sh
. tests/agent_lib.sh
TAG=stp$$

# 20 agents, each stopped 0-2.5 s after it serves (during its calibration,
# its attaches, its first duty window, or later), over two targets that
# keep 40000 blocks of 1 KiB live and replace 20000 a second: at --rate 8KiB
# about 5000 sampled blocks each in the shared live table.
test_stop_random() {
	need_root || return
	copy "${TAG}b" "$TARGETS/alloc_bound"
	for _ in 1 2; do
		"$TMP/${TAG}b" 20000 40000 1024 >/dev/null 2>&1 &
		track $!
	done
	worst=0
	worst_cpu=0
	for i in $(seq 20); do
		# SIGINT every other time, to an agent started with SIGINT ignored (as a
		# shell starts a background job, nohup too): kill -INT must stop it
		sig=TERM
		[ $((i % 2)) -eq 0 ] && sig=INT && trap '' INT
		agent_start "s$i" --select "comm=${TAG}b" --rate 8KiB || return
		trap - INT
		# the moment: 0 to 2.5 s, from a seeded source the log shows
		ms=$($PY -c 'import random, sys; random.seed(int(sys.argv[1])); print(random.randint(0, 2500))' "$$$i")
		$PY -c 'import sys, time; time.sleep(int(sys.argv[1]) / 1000)' "$ms"
		stop_agent "$sig"
		[ "$took" -gt "$worst" ] && worst=$took
		[ "$took_cpu" -gt "$worst_cpu" ] && worst_cpu=$took_cpu
		[ "$rc" -eq 0 ] ||
			{ fail "SIG$sig $i (${ms} ms after start): exit $rc: $(tail -2 "$TMP/s$i.err")"; return; }
		[ "$took_cpu" -lt 1000 ] ||
			{ fail "stop $i (${ms} ms after start) took $took_cpu ms of CPU ($took ms)"; return; }
		grep -q "agent stopping" "$TMP/s$i.err" || { fail "stop $i: no 'stopping' line"; return; }
	done
	echo "# 20 stops at random moments: the slowest took $worst_cpu ms of CPU; $worst ms of wall time"
	return 0
}

# SIGINT or SIGTERM while the agent still loads its BPF objects, to an agent started with
# SIGINT ignored (a shell's background job): a clean stop, exit 0, once it can stop
# has_bpf_fd PID: PID holds a BPF object (a map or a program)
has_bpf_fd() {
	ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'anon_inode:bpf'
}

test_stop_early() {
	need_root || return
	for sig in INT TERM; do
		trap '' INT
		"$BIN_BPF" agent --listen 127.0.0.1:0 --select "comm=${TAG}none" 2>"$TMP/early.err" &
		agent_pid=$!
		trap - INT
		track "$agent_pid"
		# once it loads BPF objects (a second or more) and before it serves
		wait_until 20 has_bpf_fd "$agent_pid" ||
			{ fail "the agent loaded no BPF object: $(tail -2 "$TMP/early.err")"; return; }
		grep -q "agent listening" "$TMP/early.err" && echo "# SIG$sig came after the start-up"
		stop_agent "$sig"
		[ "$rc" -eq 0 ] || { fail "SIG$sig during start-up: exit $rc: $(tail -2 "$TMP/early.err")"; return; }
		grep -q "agent stopping" "$TMP/early.err" || { fail "SIG$sig: no 'stopping' line"; return; }
	done
}

# A soft open-files limit of 1024 (the hard one higher): the agent raises
# it, and 200 targets are all attached.
test_nofile_200() {
	need_root || return
	hard=$(ulimit -Hn)
	[ "$hard" = unlimited ] || [ "$hard" -gt 4096 ] ||
		{ skip "the hard open-files limit is $hard: no room above 1024 to test"; return; }
	copy "${TAG}n" "$TARGETS/alloc_steady"
	for _ in $(seq 200); do
		"$TMP/${TAG}n" 16384 >/dev/null 2>&1 &
		track $!
	done
	: >"$TMP/n.err"
	(ulimit -Sn 1024 && exec "$BIN_BPF" agent --listen 127.0.0.1:0 --max-targets 256 \
		--select "comm=${TAG}n" --rate 64KiB 2>"$TMP/n.err") &
	agent_pid=$!
	track "$agent_pid"
	wait_for "$TMP/n.err" "agent listening on" 60 ||
		{ fail "agent did not start: $(head -c 600 "$TMP/n.err")"; return; }
	agent_url=$(sed -n 's/.*agent listening on \(http:[^ ]*\) .*/\1/p' "$TMP/n.err")
	soft=$(awk '/^Max open files/ { print $4 }' /proc/"$agent_pid"/limits)
	[ "$soft" = "$(awk '/^Max open files/ { print $5 }' /proc/"$agent_pid"/limits)" ] ||
		fail "soft open-files limit $soft, not raised to the hard one"
	i=0
	while :; do
		n=$(curl -s "$agent_url/targets" | grep -o '"probes": "attached"' | wc -l)
		[ "$n" -ge 200 ] && break
		i=$((i + 1))
		if [ $i -gt 1200 ]; then
			fail "$n of 200 attached after 120 s: $(curl -s "$agent_url/targets" |
				grep -o '"probes_error": "[^"]*"' | sort | uniq -c | head -3)"
			return
		fi
		sleep 0.1
	done
	grep -q "calibrat.*not enforced\|Too many open files" "$TMP/n.err" &&
		fail "$(grep -m1 "calibrat\|Too many" "$TMP/n.err")"
	echo "# 200 targets attached under soft nofile 1024 ($(ls /proc/"$agent_pid"/fd | wc -l) fds)"
	# and a stop with 200 targets: their links' release is the kernel's, after the exit
	stop_agent
	[ "$rc" -eq 0 ] || fail "exit $rc on SIGTERM with 200 targets"
	[ "$took_cpu" -lt 1000 ] || fail "the stop with 200 targets took $took_cpu ms of CPU ($took ms)"
	echo "# SIGTERM with 200 targets: exit 0 in $took_cpu ms of CPU, $took ms of wall time"
	return 0
}

# A target's exit: its thousands of live entries leave the shared live
# table (swept off the profiling thread), the other target's stay.
test_exit_sweep() {
	need_root || return
	copy "${TAG}w" "$TARGETS/alloc_bound"
	"$TMP/${TAG}w" 20000 40000 1024 >/dev/null 2>&1 &
	w1=$!
	track $w1
	"$TMP/${TAG}w" 20000 40000 1024 >/dev/null 2>&1 &
	w2=$!
	track $w2
	agent_start sweep --select "comm=${TAG}w" --rate 8KiB --max-overhead 0 || return
	wait_field "$w1" probes attached 20 || { fail "$w1: probes $(field "$w1" probes)"; return; }
	wait_field "$w2" probes attached 20 || { fail "$w2: probes $(field "$w2" probes)"; return; }
	# its live blocks in the table (~5000 once its 40000 are all replaced, 2 s of an
	# idle machine's time): waited for there, however slowly a loaded machine runs it
	i=0
	while n1=$(agent_map_keys live_allocs "$w1"); [ "$n1" -le 1000 ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && { fail "only $n1 live entries of $w1 after 20 s"; return; }
		sleep 0.2
	done
	kill "$w1"
	wait "$w1" 2>/dev/null
	wait_field "$w1" state exited 10 || { fail "$w1 not seen exiting"; return; }
	i=0
	while [ "$(agent_map_keys live_allocs "$w1")" != 0 ]; do
		i=$((i + 1))
		[ $i -gt 50 ] && { fail "$(agent_map_keys live_allocs "$w1") of $n1 live entries" \
			"of the exited $w1 left after 5 s"; return; }
		sleep 0.1
	done
	n2=$(agent_map_keys live_allocs "$w2")
	[ "$n2" -gt 1000 ] || fail "the live target's entries went too: $n2 left"
	echo "# $n1 live entries of the exited target swept, $n2 of the other kept"
	return 0
}

run_test agent/stop/random_moments test_stop_random
run_test agent/stop/exit_sweep test_exit_sweep
run_test agent/stop/early test_stop_early
run_test agent/stop/nofile_200 test_nofile_200
