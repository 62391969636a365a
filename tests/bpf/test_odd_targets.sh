#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Targets off the usual path: a chroot, a zombie, culpert-bpf itself and a
# process whose allocations its own work causes, a target that exits while
# culpert-bpf attaches, libraries loaded and unloaded during a capture.
. tests/lib.sh

# mkroot DIR PROGRAM: a chroot with PROGRAM at /NAME and the libraries it links, at their paths
mkroot() {
	mkdir -p "$1" || return 1
	cp "$2" "$1/" || return 1
	for lib in $(ldd "$2" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		mkdir -p "$1${lib%/*}" && cp "$lib" "$1$lib" || return 1
	done
}

# A plain chroot in our mount namespace: /proc/PID/maps already names the
# files from our root (ROOT/alloc_abc), and /proc/PID/root/ROOT/... does not
# exist.  Rate 4 KiB, scale 1: a's 32 MiB have sigma 1.1% (test_attach.sh),
# +-5% is 4.5 sigma; b and c are tighter.
test_chroot() {
	need_root || return
	root=$TMP/root
	mkroot "$root" "$TARGETS/alloc_abc" || { fail "cannot build the chroot in $root"; return; }
	start_target "$TMP/ch.probe.out" chroot "$root" /alloc_abc 1 || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/ch.probes" 2>&1 ||
		fail "probes in a chroot: $(cat "$TMP/ch.probes")"
	grep -q "^allocator:  glibc in $root/lib/.*libc.so.6 (build id [0-9a-f]\{40\})" \
		"$TMP/ch.probes" || fail "probes: $(grep -E '^(allocator|error)' "$TMP/ch.probes")"
	kill "$target_pid"
	profile ch 4KiB "" chroot "$root" /alloc_abc 1 || return
	by_leaf "$TMP/ch.pb.gz" 2 >"$TMP/ch.est"
	for f in a b c; do
		truth=$(awk -v f="$f" '$1 == "total" && $2 == f { print $3 }' "$TMP/ch.out")
		est=$(awk -v f="$f" '$1 == f { print $2 }' "$TMP/ch.est")
		[ -n "$truth" ] && [ -n "$est" ] && within_pct "$est" "$truth" 5 ||
			fail "$f: estimated '${est:-none}' bytes, allocated '${truth:-?}'"
	done
	"$PROFDUMP" "$TMP/ch.pb.gz" | grep -q "^# mapping 1 .* $root/alloc_abc $(build_id "$root/alloc_abc")$" ||
		fail "mapping 1 is not $root/alloc_abc with its build id"
}

# A zombie has exited; only its exit status waits for its parent.  Here
# the parent is `sleep`, which never reaps: sh forks the child, then execs.
test_zombie() {
	need_root || return
	sh -c 'sleep 0 & echo "$!" >"$1"; exec sleep 30' sh "$TMP/zpid" &
	track $!
	parent=$!
	wait_for "$TMP/zpid" . 5 || { fail "no zombie made"; return; }
	z=$(cat "$TMP/zpid")
	wait_for "/proc/$z/status" "^State:.Z" 5 || { fail "pid $z did not become a zombie"; return; }
	expect_error 1 "pid $z (sleep) has exited: it is a zombie.*parent (pid $parent)" \
		"$BIN_BPF" attach --pid "$z"
	expect_error 1 "has exited: it is a zombie" "$BIN_BPF" probes --pid "$z"
	! grep -q "kernel thread" "$TMP/err.txt" || fail "a zombie called a kernel thread"
	expect_error 1 "pid 2 (kthreadd) is a kernel thread" "$BIN_BPF" attach --pid 2
}

# culpert-bpf on itself is refused (each sample it handles would allocate
# and make the next one); on its parent shell it profiles and stops at
# --duration.
test_self_attach() {
	need_root || return
	expect_error 1 "is this culpert-bpf itself" \
		timeout -s KILL 20 sh -c 'exec "$0" attach --pid $$' "$BIN_BPF"
	start=$(date +%s%N)
	timeout -s KILL 20 sh -c '"$0" attach --pid $$ --duration 1s -o "$1"; echo "rc $?"' \
		"$BIN_BPF" "$TMP/parent.pb.gz" >"$TMP/parent.out" 2>"$TMP/parent.err"
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	grep -q '^rc 0$' "$TMP/parent.out" || fail "attach to the parent shell: $(cat "$TMP/parent.err")"
	[ "$ms" -lt 5000 ] || fail "attach to the parent shell for 1s took ${ms}ms"
	[ -s "$TMP/parent.pb.gz" ] || fail "attach to the parent shell wrote no profile"
}

# The sampling loop returns from every poll, however fast records come: a
# sampler on its own process that allocates once per record it handles
# (--rate 1, every allocation sampled) keeps the ring buffer from ever
# being empty; libbpf's poll consumed until empty and never returned.  One
# poll waits at most 100 ms, using no CPU, and delivers for at most 50 ms.
# Counted in the tool's own CPU time (1 s of it), which the machine's load
# does not take away: the feedback made 8,000-8,500 records in it at a load
# average of 86, and a chain that broke makes a handful, so 1,000 tells them
# apart.  400 ms of CPU in one poll is slack for the 50 ms, not for a poll
# that does not end; one that never returns runs into the time limit.
test_poll_bounded() {
	need_root || return
	timeout -s KILL 120 "$OUTPUT/tests/tools/selffeed" 1 >"$TMP/feed.out" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || { fail "selffeed exited $rc (137: a poll never returned): $(cat "$TMP/feed.out")"; return; }
	read -r _ polls _ records _ longest _ wall <"$TMP/feed.out"
	echo "  $polls polls, $records records in 1 s of CPU; longest poll ${longest} ms of CPU, ${wall} ms of wall time"
	[ "$records" -gt 1000 ] || fail "no feedback: only $records records in 1 s of CPU"
	[ "$longest" -lt 400 ] || fail "the longest poll took ${longest} ms of CPU"
	[ "$polls" -ge 5 ] || fail "$polls polls in 1 s of CPU"
}

# exit_on_open exits the moment culpert-bpf opens its executable to read
# its symbols: whichever step meets the exit, one line says what happened.
test_exit_during_attach() {
	need_root || return
	for i in 1 2 3; do
		start_target "$TMP/eo.out" "$TARGETS/exit_on_open" || return
		expect_error 1 "pid $target_pid (exit_on_open) exited while culpert-bpf was attaching to it" \
			"$BIN_BPF" attach --pid "$target_pid" -o "$TMP/eo.pb.gz"
		wait "$target_pid" || fail "exit_on_open exited $? (2: it saw no open)"
		[ -e "$TMP/eo.pb.gz" ] && fail "a profile was written for nothing"
	done
}

# 300 cycles of dlopen, allocate, dlclose, alternating two libraries of
# one size that the dynamic linker loads at the same address: each
# sample's frames are taken with the mapping they were in when sampled
# (the kernel reports each mapping as it is made), so both libraries keep
# their bytes, under their own mapping and build ID.  150 MiB each in 4 KiB
# blocks at rate 16 KiB: sigma sqrt(16 KiB * 150 MiB) = 1.0%, +-5% is 4.9
# sigma.  Frames outside any mapping would have no function name.
dlopen_run() {
	_n=$1
	shift
	start_profiled "$_n" attach "--rate 16KiB $*" "$TARGETS/dlopen_cycles" 300 1048576 \
		"$PWD/$TARGETS/libdlalloc_a.so" "$PWD/$TARGETS/libdlalloc_b.so" || return 1
	wait_for "$TMP/$_n.out" '^done' 60 || { fail "dlopen_cycles did not finish"; return 1; }
	stop_profiled "$_n" attach
}

check_dlopen() {
	_n=$1
	"$PROFDUMP" "$TMP/$_n.pb.gz" >"$TMP/$_n.dump"
	for v in a b; do
		lib=$PWD/$TARGETS/libdlalloc_$v.so
		truth=$(awk -v l="$lib" '$1 == "total" && $2 == l { print $3 }' "$TMP/$_n.out")
		est=$(by_leaf "$TMP/$_n.pb.gz" 2 | awk -v f="blocks_$v" '$1 == f { print $2 }')
		within_pct "${est:-0}" "${truth:-1}" 5 ||
			fail "$_n: blocks_$v estimated '${est:-none}' bytes, allocated '${truth:-?}'"
		grep -q "^# mapping [0-9]* .* $lib $(build_id "$lib")$" "$TMP/$_n.dump" ||
			fail "$_n: no mapping of libdlalloc_$v.so with its build id"
	done
	# the share of bytes whose leaf has a name: its frame had a mapping
	share=$(grep -v '^#' "$TMP/$_n.dump" | awk -F'\t' '{ split($1, v, " "); split($2, f, ";")
		t += v[2]; if (f[1] ~ /^blocks_[ab]$/) m += v[2] } END { printf "%.3f", t ? m / t : 0 }')
	awk -v s="$share" 'BEGIN { exit !(s > 0.95) }' || fail "$_n: only $share of the bytes mapped"
	grep -q '^# comment mappings_followed=perf_mmap$' "$TMP/$_n.dump" ||
		fail "$_n: $(grep mappings_ "$TMP/$_n.dump" | tr '\n' ' ')"
}

test_dlopen_cycles() {
	need_root || return
	dlopen_run dl || return
	check_dlopen dl
	dlopen_run dl_dwarf --unwind dwarf || return
	check_dlopen dl_dwarf
}

run_test bpf/odd/chroot test_chroot
run_test bpf/odd/zombie test_zombie
run_test bpf/odd/self_attach test_self_attach
run_test bpf/odd/poll_bounded test_poll_bounded
run_test bpf/odd/exit_during_attach test_exit_during_attach
run_test bpf/odd/dlopen_cycles test_dlopen_cycles
