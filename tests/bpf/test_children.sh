#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# attach --children on process trees (tests/targets/prefork.c): a
# pre-forking master whose workers allocate, one of them forked while
# profiled, and a forking server with a child per connection.  Each
# process's bytes in `culpert report --by-process` against what it says it
# allocated; without --children, the hint that names the children; probes
# naming them.
. tests/lib.sh

# "PID BYTES" per process of profile $1, from report --by-process's JSON
by_process() {
	"$BIN_CLI" report "$1" --by-process --format json --top 100 |
		/usr/bin/python3 -c 'import json, sys
for p in json.load(sys.stdin)["processes"]:
    print(p["pid"], int(p["bytes"]), p["comm"])'
}

# At --rate 1 every allocation is a sample: each worker's bytes are exactly
# what it allocated, the late one (forked once the probes were in) too, and
# the master, which allocates nothing meanwhile, has none.
test_prefork() {
	need_root || return
	start_target "$TMP/pf.out" "$TARGETS/prefork" workers 3 || return
	master=$target_pid
	attach_bg "$TMP/pf.err" --pid "$master" --children -v --rate 1 --unwind fp \
		-o "$TMP/pf.pb.gz" || return
	grep -q "^culpert-bpf: profiling pid $master (prefork) and 3 descendants:" "$TMP/pf.err" ||
		fail "the start line does not count the 3 workers: $(grep profiling "$TMP/pf.err")"
	kill -USR1 "$master"
	wait_for "$TMP/pf.out" "^late pid" 5 || { fail "no late worker"; return; }
	late=$(sed -n 's/^late pid //p' "$TMP/pf.out")
	# its probes in before it is let go: what it allocates is all seen (the lag is said at -v)
	wait_for "$TMP/pf.err" "^following child pid $late " 10 ||
		{ fail "the late worker $late is not followed: $(tail -5 "$TMP/pf.err")"; return; }
	kill -USR2 "$master"
	wait_for "$TMP/pf.out" "^done" 20 || { fail "workers did not finish"; return; }
	kill -INT "$attach_pid"
	wait "$attach_pid" || { fail "attach failed: $(tail -5 "$TMP/pf.err")"; return; }
	grep -q "^culpert-bpf: wrote .* (5 processes, " "$TMP/pf.err" ||
		fail "not 5 processes: $(grep wrote "$TMP/pf.err")"
	by_process "$TMP/pf.pb.gz" >"$TMP/pf.procs" || { fail "report --by-process failed"; return; }
	n=0
	while read -r _ i _ pid _ bytes; do
		got=$(awk -v p="$pid" '$1 == p { print $2 }' "$TMP/pf.procs")
		[ "$got" = "$bytes" ] || fail "worker $i (pid $pid): $got bytes in the profile, allocated $bytes"
		n=$((n + 1))
	done <<EOF
$(grep '^worker [0-9]* pid' "$TMP/pf.out")
EOF
	[ "$n" -eq 4 ] || fail "$n workers reported, want 4"
	grep -q "^$late " "$TMP/pf.procs" || fail "the late worker $late is not in the report"
	mb=$(awk -v p="$master" '$1 == p { print $2 }' "$TMP/pf.procs")
	[ "${mb:-0}" -le 4096 ] || fail "the master allocated nothing meanwhile, the profile says $mb bytes"
	"$BIN_CLI" report "$TMP/pf.pb.gz" --by-process >"$TMP/pf.txt"
	grep -q "^ *$late  *prefork  *400  *400.00 KiB" "$TMP/pf.txt" ||
		fail "the text table lacks the late worker: $(cat "$TMP/pf.txt")"
	"$PROFDUMP" "$TMP/pf.pb.gz" | grep -q "^# comment processes=5$" || fail "no processes=5 comment"
	grep -q "^culpert-bpf: 1 children forked while profiled had their probes in " "$TMP/pf.err" ||
		fail "the lag of the late worker is not said"
	go_totals_agree "$TMP/pf.pb.gz"
	kill -USR1 "$master"
}

# A child per connection, forked while profiled, that exits when done: child
# i allocates (i + 1) * 4 MiB in 4 KiB blocks, sampled at --rate 16KiB.  The
# estimate of B bytes at rate R has sigma <= sqrt(R * B) (each block of s
# bytes adds s^2 (1 - p) / p <= s R to the variance): each child within 4 sigma.
test_forking_server() {
	need_root || return
	start_target "$TMP/fs.out" "$TARGETS/prefork" server 4 || return
	master=$target_pid
	port=$(sed -n 's/^port //p' "$TMP/fs.out")
	attach_bg "$TMP/fs.err" --pid "$master" --children -v --rate 16KiB --unwind fp \
		-o "$TMP/fs.pb.gz" || return
	kill -USR1 "$master"
	/usr/bin/python3 - "$port" "$TMP/fs.err" >"$TMP/fs.client" 2>&1 <<'EOF' ||
import socket, sys, time
port, errfile = int(sys.argv[1]), sys.argv[2]
for i in range(4):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    f = s.makefile("rw")
    pid = int(f.readline().split()[1])
    # the request goes once the child's probes are in: what it allocates is all seen
    deadline = time.monotonic() + 20
    while "following child pid %d " % pid not in open(errfile).read():
        if time.monotonic() > deadline:
            sys.exit("child %d not followed" % pid)
        time.sleep(0.05)
    f.write("%d 4096\n" % ((i + 1) * 1024))
    f.flush()
    print("child", pid, "bytes", f.readline().split()[1])
    s.close()
EOF
	{ fail "client: $(cat "$TMP/fs.client")"; return; }
	wait_for "$TMP/fs.out" "^done" 20 || { fail "the server did not finish"; return; }
	kill -INT "$attach_pid"
	wait "$attach_pid" || { fail "attach failed: $(tail -5 "$TMP/fs.err")"; return; }
	by_process "$TMP/fs.pb.gz" >"$TMP/fs.procs" || { fail "report --by-process failed"; return; }
	n=0
	while read -r _ pid _ bytes; do
		got=$(awk -v p="$pid" '$1 == p { print $2 }' "$TMP/fs.procs")
		awk -v g="${got:-0}" -v b="$bytes" 'BEGIN { d = g - b; if (d < 0) d = -d
			exit !(d <= 4 * sqrt(16384 * b)) }' ||
			fail "child $pid: ${got:-no} bytes in the profile, allocated $bytes (4 sigma: $(awk -v b="$bytes" 'BEGIN { printf "%d", 4 * sqrt(16384 * b) }'))"
		n=$((n + 1))
	done <"$TMP/fs.client"
	[ "$n" -eq 4 ] || fail "$n children answered, want 4"
	[ -z "${CHILDREN_SHOW:-}" ] || paste "$TMP/fs.client" "$TMP/fs.procs" >&2
	kill -USR1 "$master"
}

# Without --children: the start line names the children, and the empty
# profile of a master that did not allocate says they were not profiled and
# how to follow them (not a --rate to try), at the end of attach and in report.
test_hint_without_children() {
	need_root || return
	start_target "$TMP/h.out" "$TARGETS/prefork" workers 2 || return
	master=$target_pid
	w0=$(sed -n 's/^worker 0 started pid //p' "$TMP/h.out")
	w1=$(sed -n 's/^worker 1 started pid //p' "$TMP/h.out")
	"$BIN_BPF" attach --pid "$master" -d 1s -o "$TMP/h.pb.gz" 2>"$TMP/h.err" ||
		{ fail "attach failed: $(cat "$TMP/h.err")"; return; }
	grep -q "^culpert-bpf: pid $master (prefork) has child processes, not profiled: $w0 (prefork), $w1 (prefork); --children follows them too" "$TMP/h.err" ||
		fail "the start does not name the children: $(head -3 "$TMP/h.err")"
	grep "^culpert-bpf: the profile is empty: " "$TMP/h.err" >"$TMP/h.empty"
	grep -q "child processes $w0 (prefork), $w1 (prefork) were not profiled" "$TMP/h.empty" &&
		grep -q "'culpert-bpf attach --pid $master --children'" "$TMP/h.empty" &&
		! grep -q -- "--rate" "$TMP/h.empty" ||
		fail "the empty profile's reason: $(cat "$TMP/h.empty" "$TMP/h.err")"
	"$BIN_CLI" report "$TMP/h.pb.gz" >"$TMP/h.report"
	grep -q "^The profile is empty: .*child processes $w0 (prefork), $w1 (prefork) were not profiled.*--children" \
		"$TMP/h.report" || fail "report does not say it: $(tail -2 "$TMP/h.report")"
	"$BIN_CLI" report "$TMP/h.pb.gz" --by-process >"$TMP/h.procs"
	grep -q "^The profile has no pid labels" "$TMP/h.procs" ||
		fail "--by-process of one process: $(cat "$TMP/h.procs")"
}

# probes on the master names its children and the option that follows them
test_probes_names_children() {
	need_root || return
	start_target "$TMP/p.out" "$TARGETS/prefork" workers 2 || return
	w0=$(sed -n 's/^worker 0 started pid //p' "$TMP/p.out")
	w1=$(sed -n 's/^worker 1 started pid //p' "$TMP/p.out")
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/probes" 2>&1 ||
		{ fail "probes failed: $(cat "$TMP/probes")"; return; }
	grep -q "^children:   2 descendant processes: $w0 (prefork), $w1 (prefork)$" "$TMP/probes" &&
		grep -q "'culpert-bpf attach --pid $target_pid --children'" "$TMP/probes" &&
		grep -q "^status:     ok, attach would work (on this process alone: see children)" \
			"$TMP/probes" || fail "probes: $(cat "$TMP/probes")"
	# a process without children says so
	start_target "$TMP/q.out" "$TARGETS/quiet" || return
	"$BIN_BPF" probes --pid "$target_pid" | grep -q "^children:   none$" ||
		fail "no 'children: none' for a process without children"
}

# --span-fn is one process's: refused with --children, one error line
test_children_span_fn() {
	need_root || return
	start_target "$TMP/sf.out" "$TARGETS/prefork" workers 1 || return
	expect_error 2 "span-fn and --children do not go together" \
		"$BIN_BPF" attach --pid "$target_pid" --children --span-fn churn -d 1s -o "$TMP/sf.pb.gz"
}

run_test bpf/children/prefork test_prefork
run_test bpf/children/forking_server test_forking_server
run_test bpf/children/hint_without_children test_hint_without_children
run_test bpf/children/probes_names_children test_probes_names_children
run_test bpf/children/span_fn test_children_span_fn
