#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Probes at the offsets probe_offset chose, in real processes: the
# breakpoint sits at the chosen instruction and the symbol's first byte is
# untouched; what the BPF programs read there (arguments, stack pointer,
# return address) is what they would read at +0, so --rate 1 counts stay
# exact; and free, probed past its test, still frees.
. tests/lib.sh

# alloc_exact's functions and the entry points they call
ENTRY_OF="f_malloc:malloc f_calloc:calloc f_realloc_null:realloc f_reallocarray:reallocarray
f_memalign16:memalign f_posix_memalign:posix_memalign f_aligned_alloc:aligned_alloc
f_valloc:valloc f_pvalloc:pvalloc"

# probes -v of PID: "$TMP/points" gets "name file_offset +N" per probe, $lib the object
probe_points() {
	"$BIN_BPF" probes -v --pid "$1" >"$TMP/pr" || { fail "probes: $(cat "$TMP/pr")"; return 1; }
	lib=$(awk '/^allocator:/ { print $4 }' "$TMP/pr")
	# "  free   offset 0x98ef3 emulated (~0.7 us a hit) (symbol +3: past ..."
	awk '$2 == "offset" { for (i = 4; i < NF; i++) if ($i == "(symbol") {
		p = $(i + 1); sub(/:$/, "", p); print $1, $3, p; break } }' "$TMP/pr" >"$TMP/points"
	[ -s "$TMP/points" ] || { fail "no probe points with reasons in: $(cat "$TMP/pr")"; return 1; }
}

# "+N" of entry point NAME's probe; aliases (memalign = aligned_alloc in glibc) share one
# probe under another name, so it is found by the symbol's address (libc: vaddr == file offset)
probe_of() {
	sym=$(nm -D "$lib" | awk -v n="$1" '$2 ~ /^[TtWi]$/ && ($3 == n || index($3, n "@") == 1) {
		print $1; exit }')
	[ -n "$sym" ] || return
	while read -r _ off plus; do
		[ $((off - plus)) -eq $((0x$sym)) ] && echo "$plus" && return
	done <"$TMP/points"
}

# check_placement PID NAME FILE_OFFSET +N: int3 at the probe, the symbol's first byte intact
check_placement() {
	at=$(runtime_addr "$1" "$lib" "$3") || { fail "$2: offset $3 not mapped"; return; }
	[ "$(code_byte "$1" "$at")" = cc ] || fail "$2: no int3 at symbol $4 (0x$(printf %x "$at"))"
	[ "$4" = +0 ] && return
	want=$(file_byte "$lib" $(($3 - $4)))
	got=$(code_byte "$1" $((at - $4)))
	[ "$got" = "$want" ] || fail "$2: symbol +0 holds $got, not the file's $want"
}

# alloc_exact under --rate 1: breakpoints where probes says, exact counts where probes moved
test_chosen_offsets_exact() {
	need_root || return
	start_target "$TMP/ex.out" "$TARGETS/alloc_exact" || return
	probe_points "$target_pid" || return
	grep -q ' +[1-9][0-9]*$' "$TMP/points" || {
		fail "no probe moved past +0, nothing tested: $(cat "$TMP/points")"
		return
	}
	# --inuse: free is probed too
	attach_bg "$TMP/a.err" --pid "$target_pid" --rate 1 --inuse -o "$TMP/ex.pb.gz" || return
	while read -r name off plus; do
		check_placement "$target_pid" "$name" "$off" "$plus"
	done <"$TMP/points"
	kill -USR1 "$target_pid"
	wait "$target_pid"
	wait "$attach_pid" || fail "attach failed: $(cat "$TMP/a.err")"
	# "leaf bytes calls"
	by_leaf "$TMP/ex.pb.gz" 2 1 >"$TMP/leaves"
	checked=0
	for pair in $ENTRY_OF; do
		f=${pair%%:*}
		plus=$(probe_of "${pair#*:}")
		[ -n "$plus" ] && [ "$plus" != +0 ] || continue
		bytes=$(awk -v f="$f" '$1 == "total" && $2 == f { print $3 }' "$TMP/ex.out")
		calls=$(awk -v f="$f" '$1 == "total" && $2 == f { print $4 }' "$TMP/ex.out")
		got_b=$(awk -v f="$f" '$1 == f { print $2 }' "$TMP/leaves")
		got_c=$(awk -v f="$f" '$1 == f { print $3 }' "$TMP/leaves")
		[ "$got_b" = "$bytes" ] && [ "$got_c" = "$calls" ] ||
			fail "$f (${pair#*:} at $plus): $bytes bytes/$calls calls, profile ${got_b:-0}/${got_c:-0}"
		checked=$((checked + 1))
	done
	[ "$checked" -gt 0 ] || fail "none of alloc_exact's functions calls a moved probe"
}

# free probed at its chosen offset (floor_attach --entry free: the plan has no free yet)
test_free_at_chosen_offset() {
	need_root || return
	start_target "$TMP/plain.out" "$TARGETS/alloc_exact" || return
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "unprobed run failed"
	start_target "$TMP/fr.out" "$TARGETS/alloc_exact" || return
	probe_points "$target_pid" || return
	"$OUTPUT/tests/bench/floor_attach" "$target_pid" --entry free 2>"$TMP/fl.err" &
	fl=$!
	track "$fl"
	wait_for "$TMP/fl.err" "floor: attached" 10 || {
		fail "floor_attach: $(cat "$TMP/fl.err")"
		return
	}
	plus=$(awk '$2 == "free" { sub(/:$/, "", $4); print $4 }' "$TMP/fl.err")
	# the chooser's answer is checked against objdump in the unit test; here it must move
	[ -n "$plus" ] && [ "$plus" != +0 ] || fail "free's probe at ${plus:-?}: $(cat "$TMP/fl.err")"
	# libc's text has vaddr == file offset
	off=0x$(nm -D "$lib" | awk '$3 ~ /^free(@|$)/ { print $1; exit }')
	check_placement "$target_pid" free $((off + plus)) "$plus"
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "probed run failed"
	kill -INT "$fl"
	wait "$fl"
	grep -v ready "$TMP/plain.out" >"$TMP/plain"
	grep -v ready "$TMP/fr.out" >"$TMP/fr"
	cmp -s "$TMP/plain" "$TMP/fr" || fail "output differs with free probed at $plus"
}

# probes explains every moved probe, and -v every probe
test_probes_reasons() {
	need_root || return
	start_target "$TMP/r.out" "$TARGETS/alloc_exact" || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/plain" || { fail "probes failed"; return; }
	probe_points "$target_pid" || return
	while read -r name off plus; do
		line=$(awk -v n="$name" '$1 == n' "$TMP/plain")
		case "$plus" in
		+0) case "$line" in *"(symbol"*) fail "$name at +0 explained without -v: $line" ;; esac ;;
		*) case "$line" in *"(symbol $plus: past "*" (emulated))") ;;
			*) fail "$name at $plus not explained: $line" ;; esac ;;
		esac
	done <"$TMP/points"
	[ "$(wc -l <"$TMP/points")" -eq "$(grep -c '^  [a-z_]* *offset 0x' "$TMP/plain")" ] ||
		fail "-v does not explain every probe"
}

LIBDIR=/usr/lib/x86_64-linux-gnu
# the entry points every call of a C or C++ program goes through, per allocator
HOT_GLIBC="malloc free calloc realloc"
HOT_JEMALLOC="malloc free calloc realloc sdallocx _Znwm _Znam _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm"
# (tcmalloc's and mimalloc's operator delete are aliases of free, sized or not: one probe)
HOT_TCMALLOC="malloc free calloc realloc tc_new tc_free_sized"
HOT_MIMALLOC="malloc free calloc realloc mi_new"

# hot_emulated NAME "ENTRIES" CMD...: probes --inuse on CMD says each entry is emulated
hot_emulated() {
	_n=$1
	_hot=$2
	shift 2
	start_target "$TMP/$_n.out" "$@" || return
	"$BIN_BPF" probes --inuse --pid "$target_pid" >"$TMP/$_n.pr" 2>&1 ||
		{ fail "$_n: probes failed: $(cat "$TMP/$_n.pr")"; return; }
	kill "$target_pid"
	for e in $_hot; do
		line=$(awk -v e="$e" '$1 == e && $2 == "offset"' "$TMP/$_n.pr")
		[ -n "$line" ] ||
			fail "$_n: no probe on $e: $(grep offset "$TMP/$_n.pr" | tr '\n' ';')"
		case "$line" in
		"" | *" offset 0x"*" emulated (~"*) ;;
		*) fail "$_n: $e not emulated: $line" ;;
		esac
	done
}

# Debian's libc, jemalloc, tcmalloc and mimalloc: no single-stepped probe where every call passes
test_hot_entries_emulated() {
	need_root || return
	hot_emulated h_glibc "$HOT_GLIBC" "$TARGETS/alloc_api" libc.so.6
	for l in jemalloc:libjemalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4 \
		mimalloc:libmimalloc.so.2; do
		[ -r "$LIBDIR/${l#*:}" ] || { fail "$LIBDIR/${l#*:} missing (make deps)"; continue; }
		eval "hot=\$HOT_$(echo "${l%%:*}" | tr a-z A-Z)"
		hot_emulated "h_${l%%:*}" "$hot" env LD_PRELOAD="$LIBDIR/${l#*:}" \
			"$TARGETS/alloc_api" "${l#*:}"
	done
	# jemalloc's free moved past nine register-only instructions, to its jne at +0x30
	want='^  free .* emulated .*(symbol +48: past 9 instructions writing only flags and %rax'
	grep -q "$want %rcx %rdx to jne" "$TMP/h_jemalloc.pr" ||
		fail "jemalloc free: $(grep '^  free ' "$TMP/h_jemalloc.pr")"
}

# inuse_exact NAME LIB MOVED...: alloc_api under LIB with --inuse at --rate 1 (and
# $UNWIND_ARGS), the probes
# of MOVED ("free +48") where they must be: every function's bytes and calls exact and
# every block freed (alloc_api frees all it allocates)
inuse_exact() {
	_n=$1
	_lib=$LIBDIR/$2
	shift 2
	[ -r "$_lib" ] || { fail "$_lib missing (make deps)"; return; }
	start_target "$TMP/$_n.out" env LD_PRELOAD="$_lib" "$TARGETS/alloc_api" "${_lib##*/}" ||
		return
	probe_points "$target_pid" || return
	while [ $# -gt 1 ]; do
		grep -q "^$1 0x[0-9a-f]* $2\$" "$TMP/points" ||
			fail "$_n: $1 not at $2: $(tr '\n' ';' <"$TMP/points")"
		shift 2
	done
	# shellcheck disable=SC2086
	attach_bg "$TMP/$_n.err" --pid "$target_pid" --rate 1 --inuse ${UNWIND_ARGS:-} \
		-o "$TMP/$_n.pb.gz" || return
	while read -r name off plus; do
		check_placement "$target_pid" "$name" "$off" "$plus"
	done <"$TMP/points"
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "$_n: target failed: $(cat "$TMP/$_n.out")"
	wait "$attach_pid" || fail "$_n: attach failed: $(cat "$TMP/$_n.err")"
	by_leaf "$TMP/$_n.pb.gz" 2 1 4 >"$TMP/$_n.leaves"
	# xallocx grows in place or not at all and is not counted (docs/allocators.md)
	grep '^total ' "$TMP/$_n.out" | grep -v ' f_xallocx ' >"$TMP/$_n.totals"
	while read -r _ f bytes calls; do
		# the leaf "call_n|f_malloc": alloc_api's helper inlined into f_malloc
		got=$(awk -v f="$f" '{ k = $1; sub(/.*\|/, "", k) } k == f { print $2 "/" $3 "/" $4 }' \
			"$TMP/$_n.leaves")
		[ "$got" = "$bytes/$calls/0" ] ||
			fail "$_n: $f: $bytes bytes/$calls calls/0 live, profile ${got:-nothing}"
	done <"$TMP/$_n.totals"
	[ "$(wc -l <"$TMP/$_n.totals")" -gt 10 ] || fail "$_n: too few functions: $(cat "$TMP/$_n.out")"
}

# jemalloc's free and sdallocx past register writes; mimalloc's malloc, calloc and realloc
# past copies of their arguments, which the probes read from where they went
test_inuse_exact() {
	need_root || return
	inuse_exact je_inuse libjemalloc.so.2 free +48 sdallocx +10
	inuse_exact mi_inuse libmimalloc.so.2 malloc +21 calloc +18 realloc +20
	# the DWARF unwinder starts from the moved probe's registers and CFI row
	UNWIND_ARGS="--unwind dwarf" inuse_exact je_dwarf libjemalloc.so.2 free +48
	UNWIND_ARGS="--unwind dwarf" inuse_exact mi_dwarf libmimalloc.so.2 malloc +21
}

run_test bpf/probe_offsets/chosen_offsets_exact test_chosen_offsets_exact
run_test bpf/probe_offsets/free_at_chosen_offset test_free_at_chosen_offset
run_test bpf/probe_offsets/probes_reasons test_probes_reasons
run_test bpf/probe_offsets/hot_entries_emulated test_hot_entries_emulated
run_test bpf/probe_offsets/inuse_exact test_inuse_exact
