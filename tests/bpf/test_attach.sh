#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf attach against real processes: estimates against ground truth,
# stacks, what other pprof readers see, build IDs, and the target's safety.
. tests/lib.sh

# Run alloc_abc (SCALE) under attach with RATE and extra args; profile in $TMP/abc.pb.gz
profile_abc() {
	rate=$1
	scale=$2
	shift 2
	profile abc "$rate" "$*" "$TARGETS/alloc_abc" "$scale" || return 1
	grep -q "exited; writing" "$TMP/abc.err" || fail "target exit not reported"
}

# every function's estimate within PCT % of what it really allocated
check_abc_totals() {
	pct=$1
	by_leaf "$TMP/abc.pb.gz" 2 >"$TMP/est"
	for f in a b c; do
		truth=$(awk -v f="$f" '$1 == "total" && $2 == f {print $3}' "$TMP/abc.out")
		est=$(awk -v f="$f" '$1 == f {print $2}' "$TMP/est")
		[ -n "$truth" ] && [ -n "$est" ] || {
			fail "no estimate for $f (leaves: $(tr '\n' ' ' <"$TMP/est"))"
			return
		}
		within_pct "$est" "$truth" "$pct" ||
			fail "$f: estimated $est bytes, allocated $truth (more than $pct% off)"
	done
}

# Rate 4 KiB, scale 2.  a: 64 MiB in 16/64-byte blocks (size << rate): the
# estimate's standard error is sqrt(rate * total) = sqrt(4096 * 64 MiB), 0.78%
# of the total, so +-5% is 6.4 sigma.  b: 96 MiB in 1..16 KiB blocks: the
# variance per block s^2 (1-p)/p is below rate * s, so sigma < 0.64%.
# c: 256 KiB and 1 MiB blocks are sampled with p > 1 - e^-64: exact.
test_ground_truth() {
	need_root || return
	profile_abc 4KiB 2 || return
	check_abc_totals 5
}

# The leaf of every sample is the function that called malloc, and the
# frame-pointer walk reaches the callers above it, in every sample up to the
# first frame without a frame pointer (glibc's __libc_start_call_main and
# start_thread).
test_leaf_is_caller() {
	need_root || return
	[ -s "$TMP/abc.pb.gz" ] || profile_abc 4KiB 1 || return
	"$PROFDUMP" "$TMP/abc.pb.gz" | grep -v '^#' | awk -F'\t' '
		{ n = split($2, f, ";")
		  for (i = 2; i <= n; i++) if (f[i] == "a" || f[i] == "b" || f[i] == "c") bad++
		  if (f[1] == "a" && f[2] == "run_a") a++
		  if (f[1] == "b" && f[2] == "run_b") b++
		  if (f[1] == "c" && f[2] == "main") c++
		  if (f[1] ~ /^(a|b)$/ && f[3] != "start_thread" ||
		      f[1] == "c" && f[3] != "__libc_start_call_main") short++
		  if (f[1] ~ /^(malloc|calloc|realloc|__libc_malloc|_int_malloc)$/) alloc++ }
		END { printf "%d %d %d %d %d %d\n", bad, a, b, c, alloc, short }' >"$TMP/leaf"
	read -r bad a b c alloc short <"$TMP/leaf"
	[ "$bad" -eq 0 ] || fail "$bad samples have a, b or c below the leaf"
	[ "$short" -eq 0 ] || fail "$short samples of a, b or c stop short of start_thread or __libc_start_call_main"
	[ "$alloc" -eq 0 ] || fail "$alloc samples have an allocator frame as leaf"
	[ "$a" -gt 0 ] && [ "$b" -gt 0 ] && [ "$c" -gt 0 ] ||
		fail "missing caller chains a<-run_a, b<-run_b, c<-main: $a $b $c"
}

test_rate_one_exact() {
	need_root || return
	rate_one_exact ex
}

# Another culpert-bpf on another glibc process, with return probes
# (--inuse): its probes share libc's probe points with ours, and the kernel
# parks return addresses of our target's calls for it (the trampoline in
# [uprobes] in their return slots).  Counts, leaves and DWARF stacks must
# not change.
test_beside_another_instance() {
	need_root || return
	"$OUTPUT/examples/demo_service" 60 >/dev/null &
	svc=$!
	track "$svc"
	attach_bg "$TMP/other.err" --pid "$svc" --inuse --rate 4KiB -o "$TMP/other.pb.gz" || return
	other=$attach_pid
	rate_one_exact ex_fp --unwind fp
	rate_one_exact ex_dwarf --unwind dwarf
	kill -INT "$other"
	wait "$other" || fail "the other instance failed: $(cat "$TMP/other.err")"
}

# The perf-event uprobe path (kernels without uprobe_multi) gives the same answer.
# Scale 1: a has 32 MiB, sigma 1.1%, so +-5% is 4.5 sigma.
test_perf_uprobe_path() {
	need_root || return
	profile_abc 4KiB 1 --no-multi -v || return
	grep -q "perf_uprobe" "$TMP/abc.err" || fail "did not use perf uprobes: $(cat "$TMP/abc.err")"
	check_abc_totals 5
}

# go tool pprof reads the file; its totals equal ours.
test_go_pprof_reads() {
	need_root || return
	[ -s "$TMP/abc.pb.gz" ] || profile_abc 4KiB 1 || return
	for mode in -top -tags; do
		go tool pprof "$mode" "$TMP/abc.pb.gz" >"$TMP/go$mode" 2>"$TMP/go.err" ||
			fail "go tool pprof $mode: $(head -3 "$TMP/go.err")"
	done
	grep -q 'thread_id' "$TMP/go-tags" || fail "go tool pprof -tags shows no thread_id"
	go tool pprof -top -sample_index=alloc_objects "$TMP/abc.pb.gz" >/dev/null 2>&1 ||
		fail "-sample_index=alloc_objects refused"
	go_totals_agree "$TMP/abc.pb.gz" || return
	grep -q '^PeriodType: space bytes' "$TMP/abc.pb.gz.goraw" || fail "period type not space/bytes"
	grep -q '^Period: 4096' "$TMP/abc.pb.gz.goraw" || fail "period is not the rate"
}

# Mapping build IDs are those readelf reports; every location lies in its mapping.
test_mappings_and_build_ids() {
	need_root || return
	[ -s "$TMP/abc.pb.gz" ] || profile_abc 4KiB 1 || return
	"$PROFDUMP" "$TMP/abc.pb.gz" >"$TMP/dump"
	# one line per mapping whose file is there to check: "ok PATH" or what differs
	grep '^# mapping ' "$TMP/dump" | while read -r _ _ id range off path bid; do
		[ -f "$path" ] || continue
		want=$(build_id "$path")
		if [ "$bid" = "$want" ]; then
			echo "ok $path"
		else
			echo "mapping $id $path: build id '$bid', eu-readelf '$want'"
		fi
	done >"$TMP/bid.checked"
	grep -v '^ok ' "$TMP/bid.checked" >"$TMP/bid.bad"
	[ -s "$TMP/bid.bad" ] && fail "$(head -3 "$TMP/bid.bad")"
	[ -s "$TMP/bid.checked" ] || fail "no mapping's file was there to check its build id"
	grep -q "^# mapping 1 .*alloc_abc [0-9a-f]\{40\}$" "$TMP/dump" ||
		fail "mapping 1 is not the executable with its build id"
	awk '$1 == "#" && $2 == "mapping" { split($4, r, "-"); lo[$3] = r[1]; hi[$3] = r[2] }
	     $1 == "#" && $2 == "location" && $6 != 0 {
		a = sprintf("%016s", $4); l = sprintf("%016s", lo[$6]); h = sprintf("%016s", hi[$6])
		gsub(/ /, "0", a); gsub(/ /, "0", l); gsub(/ /, "0", h)
		if (a < l || a >= h) print "location " $3 " at " $4 " outside mapping " $6 }' \
		"$TMP/dump" >"$TMP/loc.bad"
	[ -s "$TMP/loc.bad" ] && fail "$(head -3 "$TMP/loc.bad")"
	grep -q '^# location' "$TMP/dump" || fail "no locations"
	# every frame of alloc_abc is in the executable or libc: none without a mapping
	awk '$1 == "#" && $2 == "location" && $6 == 0' "$TMP/dump" >"$TMP/loc.unmapped"
	[ -s "$TMP/loc.unmapped" ] && fail "locations without a mapping: $(head -2 "$TMP/loc.unmapped" | tr '\n' ' ')"
	return 0
}

# The target's output is the same with and without the profiler, and what
# each allocation call returned passed alloc_exact's own checks (non-NULL,
# aligned as asked, calloc zeroed, realloc kept the contents): under plain
# attach (rate_one_exact's run when it made one) and under --inuse, whose
# return probes run on the way back to the caller, with and without sessions.
test_target_unaffected() {
	need_root || return
	start_target "$TMP/plain.out" "$TARGETS/alloc_exact" || return
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "unprofiled run failed"
	grep -v ready "$TMP/plain.out" >"$TMP/plain"
	grep -Eq '^checks [1-9][0-9]* failed 0$' "$TMP/plain" ||
		{ fail "unprofiled: $(grep '^check' "$TMP/plain" | tr '\n' ' ')"; return; }
	[ -s "$TMP/ex.pb.gz" ] || profile ex 1 "" "$TARGETS/alloc_exact" || return
	profile ex_inuse 1 "--inuse" "$TARGETS/alloc_exact" || return
	profile ex_every 1 "--inuse --no-session" "$TARGETS/alloc_exact" || return
	for run in ex ex_inuse ex_every; do
		grep -v ready "$TMP/$run.out" >"$TMP/prof"
		cmp -s "$TMP/plain" "$TMP/prof" ||
			fail "$run: output differs under the profiler: $(diff "$TMP/plain" "$TMP/prof" | head -3 | tr '\n' ' ')"
	done
}

# runtime address of malloc in PID, from probes' file offset and the maps
malloc_addr() {
	"$BIN_BPF" probes --pid "$1" >"$TMP/pr.$1" || return 1
	off=$(awk '$1 == "malloc" { print $3 }' "$TMP/pr.$1")
	lib=$(awk '/^allocator:/ { print $4 }' "$TMP/pr.$1")
	runtime_addr "$1" "$lib" "$off"
}

# Breakpoints go into the target only; SIGKILL of the profiler removes them
# and leaves the target running.
test_sigkill_leaves_target() {
	need_root || return
	start_program "$TMP/svc.out" "$OUTPUT/examples/demo_service" 60 || return
	svc=$prog_pid
	start_target "$TMP/other.out" "$TARGETS/alloc_abc" || return
	other=$target_pid
	addr=$(malloc_addr "$svc")
	other_addr=$(malloc_addr "$other")
	[ -n "$addr" ] && [ -n "$other_addr" ] || { fail "cannot locate malloc"; return; }
	before=$(code_byte "$svc" "$addr")
	attach_bg "$TMP/k.err" --pid "$svc" --rate 64KiB -o "$TMP/k.pb.gz" || return
	[ "$(code_byte "$svc" "$addr")" = cc ] || fail "no breakpoint (int3) at malloc while attached"
	[ "$(code_byte "$other" "$other_addr")" = "$before" ] ||
		fail "another process mapping the same libc got a breakpoint"
	kill -9 "$attach_pid"
	wait "$attach_pid" 2>/dev/null
	# the kernel removes them as it releases the links, after the exit: a moment, 5 s at most
	i=0
	while [ "$(code_byte "$svc" "$addr")" != "$before" ] && [ "$i" -lt 100 ]; do
		i=$((i + 1))
		sleep 0.05
	done
	[ "$(code_byte "$svc" "$addr")" = "$before" ] || fail "breakpoint left behind after SIGKILL"
	kill -0 "$svc" || { fail "target died"; return; }
	kill -TERM "$svc"
	wait "$svc" || fail "target exited with $?"
	grep -q 'handled [1-9]' "$TMP/svc.out" || fail "target did not finish its work"
}

# --duration, SIGINT and the default output name all end in a written profile.
test_stop_conditions() {
	need_root || return
	start_program /dev/null "$OUTPUT/examples/demo_service" 60 || return
	svc=$prog_pid
	# --duration counts from the readiness line: attaching (slower on a loaded machine) is not in it
	: >"$TMP/d.err"
	( cd "$TMP" && exec "$OLDPWD/$BIN_BPF" attach --pid "$svc" --duration 1s --rate 16KiB ) \
		2>"$TMP/d.err" &
	d=$!
	track "$d"
	wait_profiling "$TMP/d.err" || { fail "--duration run did not start: $(cat "$TMP/d.err")"; return; }
	start=$(date +%s%N)
	wait "$d" || fail "--duration run failed: $(cat "$TMP/d.err")"
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	# ended by the duration: on its own, with no signal, while the service runs on (its
	# 60 s would end it otherwise); how long after its readiness is the machine's pace
	kill -0 "$svc" 2>/dev/null || fail "--duration 1s: it ended only with the service"
	echo "  --duration 1s ended ${ms} ms after it was ready"
	set -- "$TMP"/culpert-demo_service-"$svc"-*.pb.gz
	[ -f "$1" ] || { fail "no default-named profile in $TMP"; return; }
	"$PROFDUMP" "$1" | grep -q 'handle_request' || fail "default-named profile has no samples"
	attach_bg "$TMP/i.err" --pid "$svc" --rate 16KiB -o "$TMP/int.pb.gz" || return
	# some requests handled while attached: 50 ms of the service's own CPU time
	wait_cpu "$svc" $(($(cpu_ticks "$svc") + 5)) 20 || fail "demo_service did no work in 20 s"
	kill -INT "$attach_pid"
	wait "$attach_pid" || fail "SIGINT: exit status $?"
	"$PROFDUMP" "$TMP/int.pb.gz" | grep -q 'handle_request' || fail "SIGINT: no profile"
	"$BIN_BPF" attach --pid "$svc" --duration 500ms --rate 16KiB -o - 2>/dev/null >"$TMP/out.pb.gz"
	"$PROFDUMP" "$TMP/out.pb.gz" | grep -q 'handle_request' || fail "-o - wrote no profile"
}

# A target that exits on its own mid-capture still gets its profile.  The
# target starts its work once attach is ready and then exits: no race between
# a target's lifetime and how long attaching takes.
test_target_exits() {
	need_root || return
	profile exit 16KiB "" "$TARGETS/alloc_abc" || return
	grep -q "exited; writing" "$TMP/exit.err" || fail "exit not reported: $(cat "$TMP/exit.err")"
	by_leaf "$TMP/exit.pb.gz" 2 | grep -q '^c ' || fail "no samples of c() in the profile"
}

# A target that forks a child and then execs: both run as they would, the
# capture ends at the exec, and what was seen before is written.
test_fork_exec() {
	need_root || return
	profile fe 4KiB "" "$TARGETS/fork_exec" || return
	grep -q 'child ok' "$TMP/fe.out" || fail "the child did not exit cleanly"
	grep -q 'exec ok' "$TMP/fe.out" || fail "the exec did not run"
	grep -q "exec'd another program; writing what was collected before" "$TMP/fe.err" ||
		fail "exec not reported: $(tail -2 "$TMP/fe.err")"
	! grep -q 'cannot watch for an exec' "$TMP/fe.err" ||
		fail "the exec watch did not attach: $(grep 'cannot watch' "$TMP/fe.err")"
	"$PROFDUMP" "$TMP/fe.pb.gz" | grep -q 'before_fork' || fail "the parent's allocations are missing"
}

test_bad_input() {
	need_root || return
	sh -c 'exit 0' &
	gone=$!
	wait "$gone"
	expect_error 1 "no process with pid $gone" "$BIN_BPF" attach --pid "$gone"
	expect_error 1 "kernel thread" "$BIN_BPF" attach --pid 2
	expect_error 2 "invalid --pid" "$BIN_BPF" attach --pid abc
	expect_error 2 "invalid --rate" "$BIN_BPF" attach --pid 1 --rate lots
	expect_error 2 "invalid --rate" "$BIN_BPF" attach --pid 1 --rate 0
	expect_error 2 "invalid --max-depth" "$BIN_BPF" attach --pid 1 --max-depth 200
	expect_error 2 "invalid --duration" "$BIN_BPF" attach --pid 1 --duration forever
	expect_error 2 "--pid is required" "$BIN_BPF" attach
	expect_error 2 "unknown command" "$BIN_BPF" frobnicate
	"$OUTPUT/examples/demo_service" 30 >/dev/null &
	svc=$!
	track "$svc"
	expect_error 1 "cannot write the profile to /nonexistent/dir/p.pb.gz" \
		"$BIN_BPF" attach --pid "$svc" -o /nonexistent/dir/p.pb.gz
	start_program /dev/null "$TARGETS/nomalloc" || return
	nm=$prog_pid
	expect_error 1 "allocator not found: no malloc in /.*/nomalloc" \
		"$BIN_BPF" attach --pid "$nm"
	expect_error 1 "allocator not found" "$BIN_BPF" probes --pid "$nm"
}

# Missing privileges or kernel features: each named, with what to do.
test_environment_errors() {
	need_root || return
	"$OUTPUT/examples/demo_service" 30 >/dev/null &
	svc=$!
	track "$svc"
	expect_error 1 "needs root" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$BIN_BPF" attach --pid "$svc"
	mkdir -p "$TMP/empty"
	# hide the kernel's BTF / uprobe PMU from culpert-bpf only, in a private mount namespace
	expect_error 1 "no BTF" unshare -m sh -c \
		"mount --bind $TMP/empty /sys/kernel/btf && exec $BIN_BPF attach --pid $svc"
	expect_error 1 "no uprobes" unshare -m sh -c \
		"mount --bind $TMP/empty /sys/bus/event_source/devices/uprobe && exec $BIN_BPF attach --pid $svc"
}

# probes: the plan, the offsets (checked against the symbol table), the verdict
test_probes() {
	need_root || return
	start_program /dev/null "$OUTPUT/examples/demo_service" 30 || return
	svc=$prog_pid
	"$BIN_BPF" probes --pid "$svc" >"$TMP/probes" 2>&1 || fail "probes failed: $(cat "$TMP/probes")"
	libc=$(awk '/^allocator:/ { print $4 }' "$TMP/probes")
	grep -q "^allocator:  glibc in .*libc.so.6 (build id [0-9a-f]\{40\})" "$TMP/probes" ||
		fail "allocator line: $(grep allocator "$TMP/probes")"
	want=$(printf '0x%x' "0x$(nm -D "$libc" | awk '$3 ~ /^malloc(@|$)/ { print $1 }')")
	got=$(awk '$1 == "malloc" { print $3 }' "$TMP/probes")
	# libc's text has vaddr == file offset
	[ "$got" = "$want" ] || fail "malloc offset $got, symbol table says $want"
	grep -q "^unwind:     fp (auto: .*demo_service and 0 libraries keep frame pointers where they call the allocator ([0-9]* of [0-9]* such functions" "$TMP/probes" ||
		fail "no unwind evidence: $(grep unwind "$TMP/probes")"
	grep -q "^status:     ok" "$TMP/probes" || fail "status not ok"
	# --no-multi: attach would use perf-event uprobes, and probes must say so
	"$BIN_BPF" probes --pid "$svc" --no-multi >"$TMP/probes.nomulti" 2>&1 ||
		fail "probes --no-multi failed: $(cat "$TMP/probes.nomulti")"
	grep -q "^attach:     one perf-event uprobe per site" "$TMP/probes.nomulti" ||
		fail "probes --no-multi: $(grep '^attach:' "$TMP/probes.nomulti")"
}

run_test bpf/attach/ground_truth test_ground_truth
run_test bpf/attach/leaf_is_caller test_leaf_is_caller
run_test bpf/attach/go_pprof_reads test_go_pprof_reads
run_test bpf/attach/mappings_and_build_ids test_mappings_and_build_ids
run_test bpf/attach/rate_one_exact test_rate_one_exact
run_test bpf/attach/beside_another_instance test_beside_another_instance
run_test bpf/attach/perf_uprobe_path test_perf_uprobe_path
run_test bpf/attach/target_unaffected test_target_unaffected
run_test bpf/attach/sigkill_leaves_target test_sigkill_leaves_target
run_test bpf/attach/stop_conditions test_stop_conditions
run_test bpf/attach/target_exits test_target_exits
run_test bpf/attach/fork_exec test_fork_exec
run_test bpf/attach/bad_input test_bad_input
run_test bpf/attach/environment_errors test_environment_errors
run_test bpf/attach/probes test_probes
