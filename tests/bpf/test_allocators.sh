#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Every allocator family culpert-bpf knows, each under the way it is
# deployed: glibc, jemalloc, mimalloc and tcmalloc preloaded (Debian's
# packages), a je_-prefixed jemalloc next to glibc (a stand-in library:
# Debian has no prefixed build), glibc and musl linked statically, and a
# Rust program on the System allocator.  For each: --rate 1 gives every
# function its calls and bytes exactly (every entry point probed, none
# counted twice when it calls another); a sampled run gives the known
# functions their bytes within +-10%; probes names the family and object;
# --allocator forces a family and refuses a wrong one.
. tests/lib.sh

LIBDIR=/usr/lib/$(cc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
JEMALLOC=$LIBDIR/libjemalloc.so.2
MIMALLOC=$LIBDIR/libmimalloc.so.2.0
TCMALLOC=$LIBDIR/libtcmalloc_minimal.so.4
JEPREFIX=$TARGETS/libjeprefix.so

# need_lib PATH: the allocator package is installed (make deps installs it)
need_lib() {
	[ -f "$1" ] && return 0
	fail "$1 missing: run 'make deps'"
	return 1
}

# attribute NAME MODE COLS: "function v1 v2 ..." summed over the samples of
# $TMP/NAME.pb.gz, each given to the first frame that is one of the functions
# the target reported.  MODE leaf: only the leaf location (with its inline
# frames) is looked at -- the function must have called the allocator itself;
# MODE stack: the whole stack (Rust's Vec reaches malloc through std's frames).
attribute() {
	grep '^total ' "$TMP/$1.out" | cut -d' ' -f2 >"$TMP/$1.fns"
	"$PROFDUMP" "$TMP/$1.pb.gz" | grep -v '^#' | awk -F'\t' -v mode="$2" -v cols="$3" \
		-v fns="$TMP/$1.fns" '
		BEGIN { while ((getline f < fns) > 0) want[f] = 1; nc = split(cols, c, " ") }
		function known(name, i, n, parts) {
			if (name in want) return name
			n = split(name, parts, "::")
			return (parts[n] in want) ? parts[n] : ""
		}
		{ split($1, v, " "); nloc = split($2, loc, ";"); hit = ""
		  for (l = 1; l <= nloc && hit == ""; l++) {
			nf = split(loc[l], fr, "|")
			for (i = 1; i <= nf && hit == ""; i++) hit = known(fr[i])
			if (mode == "leaf") break
		  }
		  if (hit == "") next
		  for (i = 1; i <= nc; i++) s[hit, i] += v[c[i]]; seen[hit] = 1 }
		END { for (k in seen) {
			printf "%s", k
			for (i = 1; i <= nc; i++) printf " %.0f", s[k, i]
			printf "\n" } }' | sort
}

# what the run says it could not see: "lost_samples=0 unwind_errors=0"
losses() {
	"$PROFDUMP" "$TMP/$1.pb.gz" | awk '/^# comment (lost_samples|unwind_errors|stack_errors)=/ {
		printf "%s ", $3 }'
}

# nested NAME: samples of $TMP/NAME.pb.gz whose leaf function (the outermost
# of the leaf location's inline frames: ld.so inlines a "malloc" wrapper) is an
# allocator entry point -- one allocator function calling another (jemalloc's je_malloc
# calling glibc's malloc, libstdc++'s operator new calling malloc) counted
# a second time, which the exact totals alone would not show: attribute
# skips leaves the target did not report
nested() {
	"$PROFDUMP" "$TMP/$1.pb.gz" | grep -v '^#' | awk -F'\t' '
		{ split($2, loc, ";"); nf = split(loc[1], fr, "|"); f = fr[nf]
		  if (f ~ /^(malloc|calloc|realloc|reallocarray|free|memalign|aligned_alloc|posix_memalign|valloc|pvalloc)$/ ||
		      f ~ /^(operator new|operator delete|je_|_rjem_|mi_|tc_)/) { n++; print f > "/dev/stderr" } }
		END { print n + 0 }' 2>"$TMP/$1.nested"
}

# check_exact NAME MODE: every function the target reported has exactly its
# bytes and calls in $TMP/NAME.pb.gz (a --rate 1 profile), and no allocator
# call is counted twice
check_exact() {
	n=$(nested "$1")
	[ "$n" -eq 0 ] || fail "$1: $n samples have an allocator entry point as leaf: $(sort -u "$TMP/$1.nested" | head -3 | tr '\n' ' ')"
	attribute "$1" "$2" "2 1" >"$TMP/$1.est"
	grep '^total ' "$TMP/$1.out" | while read -r _ fn bytes calls; do
		got=$(awk -v f="$fn" '$1 == f { print $2 "/" $3 }' "$TMP/$1.est")
		[ "$got" = "$bytes/$calls" ] || echo "$fn ${bytes}/${calls}, profile ${got:-none}"
	done >"$TMP/$1.bad"
	[ -s "$TMP/$1.bad" ] &&
		fail "$1 inexact (bytes/calls): $(tr '\n' ';' <"$TMP/$1.bad") ($(losses "$1"))"
	[ "$(grep -c '^total ' "$TMP/$1.out")" -gt 0 ] || fail "$1: the target reported nothing"
}

# check_sampled NAME MODE: each function's estimated bytes within 10%
check_sampled() {
	attribute "$1" "$2" "2" >"$TMP/$1.est"
	grep '^total ' "$TMP/$1.out" | while read -r _ fn bytes _; do
		est=$(awk -v f="$fn" '$1 == f { print $2 }' "$TMP/$1.est")
		within_pct "${est:-0}" "$bytes" 10 || echo "$fn: estimated ${est:-0} of $bytes bytes"
	done >"$TMP/$1.bad"
	[ -s "$TMP/$1.bad" ] && fail "$1: $(tr '\n' ';' <"$TMP/$1.bad") ($(losses "$1"))"
	[ "$(grep -c '^total ' "$TMP/$1.out")" -gt 0 ] || fail "$1: the target reported nothing"
	return 0
}

# exact_api NAME [env VAR=...] OBJECT[:PREFIX]...: alloc_api's every entry point at --rate 1
exact_api() {
	_n=$1
	shift
	profile "$_n" 1 "" "$@" || return
	check_exact "$_n" leaf
}

# sampled_abc NAME "ATTACH ARGS" CMD...: alloc_abc at 4 KiB.  a: 32 MiB in
# 16/64-byte blocks, standard error sqrt(rate * total) = 1.1% of it, so +-10%
# is 9 sigma; b: 48 MiB of 1..16 KiB blocks, sigma < 0.9%; c: 256 KiB and
# 1 MiB blocks, sampled with p > 1 - e^-64: exact.
sampled_abc() {
	_n=$1
	_a=$2
	shift 2
	# 4 KiB makes ~12k samples of up to 16 KiB of stack each (DWARF): a ring with
	# room for seconds of them, so a reader held up by a busy machine loses none
	profile "$_n" 4KiB "--ringbuf-size 64MiB $_a" "$@" 1 || return
	check_sampled "$_n" leaf
}

test_glibc() {
	need_root || return
	exact_api glibc "$TARGETS/alloc_api" libc.so.6
	sampled_abc glibc_abc "" "$TARGETS/alloc_abc"
}

test_jemalloc() {
	need_root && need_lib "$JEMALLOC" || return
	exact_api jemalloc env LD_PRELOAD="$JEMALLOC" "$TARGETS/alloc_api" libjemalloc
	# xallocx grows in place or not at all and is not counted (docs/allocators.md)
	grep -q '^total f_xallocx ' "$TMP/jemalloc.out" || fail "xallocx not exercised"
	sampled_abc jemalloc_abc "" env LD_PRELOAD="$JEMALLOC" "$TARGETS/alloc_abc"
}

test_mimalloc() {
	need_root && need_lib "$MIMALLOC" || return
	exact_api mimalloc env LD_PRELOAD="$MIMALLOC" "$TARGETS/alloc_api" libmimalloc
	sampled_abc mimalloc_abc "" env LD_PRELOAD="$MIMALLOC" "$TARGETS/alloc_abc"
}

test_tcmalloc() {
	need_root && need_lib "$TCMALLOC" || return
	exact_api tcmalloc env LD_PRELOAD="$TCMALLOC" "$TARGETS/alloc_api" libtcmalloc
	sampled_abc tcmalloc_abc "" env LD_PRELOAD="$TCMALLOC" "$TARGETS/alloc_abc"
}

# je_malloc & co. (the stand-in forwards to glibc's malloc) and glibc's own
# entry points in one process: both are probed, each call counted once; the
# same for tikv-jemallocator's _rjem_ names
test_prefixed() {
	need_root || return
	for p in je_:libjeprefix.so _rjem_:librjemprefix.so; do
		prefixed "${p%%:*}" "${p#*:}"
	done
}

# prefixed PREFIX LIB: alloc_api with LIB preloaded, exact, both sections
prefixed() {
	_n=prefixed$1
	exact_api "$_n" env LD_PRELOAD="$TARGETS/$2" "$TARGETS/alloc_api" libc.so.6: "$2:$1"
	grep -q '^total p_mallocx ' "$TMP/$_n.out" &&
		grep -q '^total f_malloc ' "$TMP/$_n.out" ||
		fail "$1: not both sections ran: $(head -c 300 "$TMP/$_n.out")"
	"$PROFDUMP" "$TMP/$_n.pb.gz" |
		grep -q "^# comment allocator=glibc:[^,]*/libc.so.6,jemalloc($1):.*/$2\$" ||
		fail "allocator comment: $("$PROFDUMP" "$TMP/$_n.pb.gz" | grep allocator=)"
}

test_glibc_static() {
	need_root || return
	profile glibc_static 1 "" "$TARGETS/alloc_exact_static" || return
	check_exact glibc_static leaf
	sampled_abc glibc_static_abc "" "$TARGETS/alloc_abc_static"
}

# --unwind fp: Debian's musl libc.a has no CFI and no frame pointers, so
# auto picks DWARF for the static executable (most of its functions are
# libc's) and the DWARF walk from inside musl's malloc loses the caller.
# The allocator side is what is tested here; the unwinder's gap is its own.
test_musl_static() {
	need_root || return
	profile musl_static 1 "--unwind fp" "$TARGETS/alloc_exact_musl" || return
	check_exact musl_static leaf
	go_totals_agree "$TMP/musl_static.pb.gz"
	sampled_abc musl_static_abc "--unwind fp" "$TARGETS/alloc_abc_musl"
}

# alloc_rust: Vec through std's System allocator.  Exact with 512 KiB per
# function; then 32 MiB each at 4 KiB: small_vecs (16/64 bytes) has a
# standard error of 1.1%, +-10% is 9 sigma; zeroed_vecs (1..16 KiB) < 1.1%;
# grown_vecs' 128 and 256 KiB blocks are sampled with p > 1 - e^-32: exact.
test_rust() {
	need_root || return
	profile rust 1 "" "$TARGETS/alloc_rust" 512 || return
	check_exact rust stack
	go_totals_agree "$TMP/rust.pb.gz"
	profile rust_sampled 4KiB "" "$TARGETS/alloc_rust" || return
	check_sampled rust_sampled stack
}

# --inuse through every deallocator (mi_free, sdallocx, sized and aligned
# operator delete, ...): alloc_api frees all it allocates, so no function
# may keep a live byte, and the allocations stay exact on the session path
test_inuse_deallocators() {
	need_root && need_lib "$JEMALLOC" && need_lib "$MIMALLOC" && need_lib "$TCMALLOC" || return
	for lib in "$JEMALLOC" "$MIMALLOC" "$TCMALLOC"; do
		n=inuse_$(basename "$lib" | cut -d. -f1)
		profile "$n" 1 --inuse env LD_PRELOAD="$lib" "$TARGETS/alloc_api" \
			"$(basename "$lib" | cut -d. -f1)" || return
		check_exact "$n" leaf
		attribute "$n" leaf "4" | awk '$2 != 0 { print $1 ": " $2 " bytes live" }' \
			>"$TMP/$n.live"
		[ -s "$TMP/$n.live" ] &&
			fail "$n: freed blocks still live: $(tr '\n' ';' <"$TMP/$n.live")"
	done
	return 0
}

# probes_of NAME CMD...: start CMD (it waits for SIGUSR1), `probes -v` into $TMP/NAME.probes
probes_of() {
	_n=$1
	shift
	start_target "$TMP/$_n.out" "$@" || return 1
	"$BIN_BPF" probes -v --pid "$target_pid" >"$TMP/$_n.probes" 2>&1 ||
		{ fail "$_n: probes failed: $(cat "$TMP/$_n.probes")"; return 1; }
}

# expect_allocator NAME FAMILY OBJECT: probes named the family and the object
expect_allocator() {
	grep -q "^allocator:  $2 in [^ ]*$3[^ ]* (build id [0-9a-f]\{40\}" "$TMP/$1.probes" ||
		fail "$1: want $2 in $3, probes says: $(grep '^allocator:' "$TMP/$1.probes" | tr '\n' ';')"
}

test_probes_names_family() {
	need_root || return
	probes_of p_glibc "$TARGETS/alloc_api" && expect_allocator p_glibc glibc /libc.so.6
	probes_of p_jemalloc env LD_PRELOAD="$JEMALLOC" "$TARGETS/alloc_api" &&
		expect_allocator p_jemalloc jemalloc /libjemalloc.so.2
	grep -q "not defined: .*pvalloc" "$TMP/p_jemalloc.probes" ||
		fail "-v does not list jemalloc's absent pvalloc: $(grep defined "$TMP/p_jemalloc.probes")"
	probes_of p_mimalloc env LD_PRELOAD="$MIMALLOC" "$TARGETS/alloc_api" &&
		expect_allocator p_mimalloc mimalloc /libmimalloc.so.2.0
	grep -q '^  _Znwm  *offset' "$TMP/p_mimalloc.probes" ||
		grep -q '^  mi_new  *offset' "$TMP/p_mimalloc.probes" ||
		fail "mimalloc's operator new not probed"
	probes_of p_tcmalloc env LD_PRELOAD="$TCMALLOC" "$TARGETS/alloc_api" &&
		expect_allocator p_tcmalloc tcmalloc /libtcmalloc_minimal.so.4
	probes_of p_static "$TARGETS/alloc_exact_static" &&
		expect_allocator p_static glibc /alloc_exact_static
	probes_of p_musl "$TARGETS/alloc_exact_musl" &&
		expect_allocator p_musl musl /alloc_exact_musl
	probes_of p_rust "$TARGETS/alloc_rust" && expect_allocator p_rust glibc /libc.so.6
	for p in je_:libjeprefix.so _rjem_:librjemprefix.so; do
		probes_of p_prefix env LD_PRELOAD="$TARGETS/${p#*:}" "$TARGETS/alloc_api" || return
		expect_allocator p_prefix glibc /libc.so.6
		grep -q "^allocator:  jemalloc in .*/${p#*:} (build id [0-9a-f]*, names ${p%%:*}\*)" \
			"$TMP/p_prefix.probes" || fail "${p%%:*} jemalloc not found: $(cat "$TMP/p_prefix.probes")"
	done
}

# --allocator: a family present is used, even behind another; a prefix adds
# the process's malloc; a wrong family or an absent prefix is one clear error
test_allocator_forced() {
	need_root && need_lib "$JEMALLOC" || return
	start_target "$TMP/f.out" env LD_PRELOAD="$JEMALLOC" "$TARGETS/alloc_api" || return
	pid=$target_pid
	"$BIN_BPF" probes --pid "$pid" --allocator jemalloc >"$TMP/f.probes" 2>&1 ||
		fail "--allocator jemalloc: $(cat "$TMP/f.probes")"
	[ "$(grep -c '^allocator:' "$TMP/f.probes")" -eq 1 ] &&
		grep -q '^allocator:  jemalloc in ' "$TMP/f.probes" ||
		fail "--allocator jemalloc: $(grep '^allocator:' "$TMP/f.probes")"
	# glibc is mapped too, behind jemalloc: forcing it probes libc
	"$BIN_BPF" probes --pid "$pid" --allocator glibc >"$TMP/f.probes" 2>&1 ||
		fail "--allocator glibc: $(cat "$TMP/f.probes")"
	grep -q '^allocator:  glibc in .*/libc.so.6 ' "$TMP/f.probes" ||
		fail "--allocator glibc: $(grep '^allocator:' "$TMP/f.probes")"
	expect_error 1 "allocator not found: --allocator tcmalloc, but pid $pid gets malloc from jemalloc in .*libjemalloc.so.2" \
		"$BIN_BPF" probes --pid "$pid" --allocator tcmalloc
	expect_error 1 "allocator not found: --allocator mimalloc, but pid $pid gets malloc from jemalloc" \
		"$BIN_BPF" attach --pid "$pid" --allocator mimalloc -o "$TMP/never.pb.gz"
	expect_error 1 "no _rjem_malloc in .*(--allocator _rjem_ is taken as a symbol prefix" \
		"$BIN_BPF" probes --pid "$pid" --allocator _rjem_
	kill "$pid"
	start_target "$TMP/g.out" env LD_PRELOAD="$JEPREFIX" "$TARGETS/alloc_api" || return
	"$BIN_BPF" probes --pid "$target_pid" --allocator je_ >"$TMP/g.probes" 2>&1 ||
		fail "--allocator je_: $(cat "$TMP/g.probes")"
	grep -q '^allocator:  jemalloc in .*libjeprefix.so .*names je_\*' "$TMP/g.probes" &&
		grep -q '^allocator:  glibc in .*/libc.so.6 ' "$TMP/g.probes" ||
		fail "--allocator je_ is not both: $(grep '^allocator:' "$TMP/g.probes" | tr '\n' ';')"
	grep -q '^  je_mallocx  *offset' "$TMP/g.probes" || fail "je_mallocx not probed"
	start_target "$TMP/m.out" "$TARGETS/alloc_exact_static" || return
	expect_error 1 "allocator not found: --allocator musl, but pid $target_pid gets malloc from glibc" \
		"$BIN_BPF" probes --pid "$target_pid" --allocator musl
}

run_test bpf/allocators/glibc test_glibc
run_test bpf/allocators/jemalloc test_jemalloc
run_test bpf/allocators/mimalloc test_mimalloc
run_test bpf/allocators/tcmalloc test_tcmalloc
run_test bpf/allocators/prefixed test_prefixed
run_test bpf/allocators/glibc_static test_glibc_static
run_test bpf/allocators/musl_static test_musl_static
run_test bpf/allocators/rust test_rust
run_test bpf/allocators/inuse_deallocators test_inuse_deallocators
run_test bpf/allocators/probes_names_family test_probes_names_family
run_test bpf/allocators/allocator_forced test_allocator_forced
