#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# libculpert-sampler.so taken over late (docs/sampler.md, "Taken over
# late"), without ptrace: sampler_late dlopen's it at run time and calls
# culpert_sampler_takeover and _release through dlsym, as the injector does
# from outside.  Its own count is the truth: at rate 1 the sampler counts
# exactly the calls made while taken over, over glibc, jemalloc and
# mimalloc; at 4096 within the sampling error; the blocks from before the
# takeover survive realloc, malloc_usable_size and free; Debian's python3
# (no -fPIE) is unharmed and sampled; 200 takeovers and
# releases under four allocating threads harm nothing; memcheck finds no
# error; with static TLS used up the dlopen fails cleanly; and (root)
# culpert-bpf attach --sampler usdt --rate 1 sees exactly those calls,
# none from before the takeover or after the release.
# Needs: make sampler-test-deps.
. tests/lib.sh

LIB=$(realpath "$OUTPUT/libculpert-sampler.so")
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
JEMALLOC=/usr/lib/$MULTIARCH/libjemalloc.so.2
MIMALLOC=/usr/lib/$MULTIARCH/libmimalloc.so.2
LATE=$TARGETS/sampler_late

# over ALLOCATOR ARGS...: sampler_late ARGS over ALLOCATOR (plain, tests/lib.sh)
over() {
	_a=$1
	shift
	plain "$_a" "$LATE" "$LIB" "$@"
}

# late NAME ALLOCATOR RATE: the whole sequence over ALLOCATOR; $TMP/NAME.out
late() {
	over "$2" run "$3" >"$TMP/$1.out" 2>&1 ||
		fail "$1 over $2: $(grep -v '^total' "$TMP/$1.out" | tail -3 | tr '\n' ';')"
}

checks_pass() {
	grep -q '^checks [0-9]* failed 0$' "$TMP/$1.out" ||
		fail "$1: $(grep -v '^total' "$TMP/$1.out" | tr '\n' ';')"
}

# at rate 1 the target checks events == calls and weight == bytes itself
exact_over() {
	late "exact_$1" "$1" 1 || return
	checks_pass "exact_$1"
	grep -q '^counted calls [1-9][0-9]* bytes [0-9]* events' "$TMP/exact_$1.out" ||
		fail "exact_$1: nothing counted: $(cat "$TMP/exact_$1.out")"
}

test_exact_glibc() { exact_over glibc; }
test_exact_jemalloc() { exact_over jemalloc; }
test_exact_mimalloc() { exact_over mimalloc; }

# at 4096: each byte a sampling point with p = 1/4096, W = 4096 x points,
# sigma = sqrt(T (rate - 1)) (test_sampler_lib.sh); 4 sigma
test_sampled() {
	late sampled glibc 4096 || return
	checks_pass sampled
	awk '/^counted/ { t = $5; w = $9; s = sqrt(t * 4095); d = w - t
		printf "T=%d W=%d sigma=%.0f off by %.2f sigma\n", t, w, s, d / s
		exit !(t > 0 && (d < 0 ? -d : d) <= 4 * s) }' "$TMP/sampled.out" >"$TMP/sampled.res" ||
		fail "rate 4096: $(cat "$TMP/sampled.res")"
	echo "  rate 4096: $(cat "$TMP/sampled.res")"
}

# 200 takeovers and releases while four threads allocate, realloc, free and
# check their blocks (old ones and sampled ones alike) and a fifth opens,
# uses and closes a library: no crash, no block damaged, no open failed
test_cycles() {
	for a in glibc jemalloc mimalloc; do
		over "$a" cycles 200 >"$TMP/cyc.out" 2>&1 ||
			fail "cycles over $a: $(tr '\n' ';' <"$TMP/cyc.out")"
		checks_pass cyc
		awk '/^cycles/ { exit !($4 > 0) }' "$TMP/cyc.out" || fail "cycles over $a: nothing sampled"
	done
}

# Debian's python3, a program built without -fPIE that takes malloc's
# address (dlsym(RTLD_DEFAULT) gives its PLT stub), with the library loaded
# by ctypes: the same digests before, while taken over and after, sqlite3
# imported while taken over counts its rows right, samples while taken
# over and none after, over glibc and jemalloc
test_python() {
	for a in glibc jemalloc; do
		plain "$a" /usr/bin/python3 tests/sampler/late_python.py "$LIB" >"$TMP/py.out" 2>&1 ||
			{ fail "python3 over $a: $(tail -3 "$TMP/py.out" | tr '\n' ';')"; continue; }
		grep -q '^takeover 0 .* state 1$' "$TMP/py.out" && grep -q '^release 0 .* state 0$' "$TMP/py.out" &&
			grep -q '^same True rows 20000 888900$' "$TMP/py.out" &&
			awk '/^events/ { exit !($3 > 0 && $5 == 0) }' "$TMP/py.out" ||
			fail "python3 over $a: $(tr '\n' ';' <"$TMP/py.out")"
		echo "  python3 over $a: $(grep -h '^takeover\|^release' "$TMP/py.out" | tr '\n' ' ')"
	done
}

# memcheck: no invalid free or read, no block of one heap given to another.
# Memcheck replaces every object's malloc, ours too, unless told to leave
# user objects' alone; the sampler's operator delete is free(), over
# libstdc++'s new that is malloc: not a mismatch here (docs/sampler.md)
test_memcheck() {
	command -v valgrind >/dev/null || { fail "valgrind missing: run 'make deps'"; return; }
	valgrind -q --error-exitcode=9 --leak-check=no --soname-synonyms=somalloc=nouserintercepts \
		--show-mismatched-frees=no "$LATE" "$LIB" run 1 \
		>"$TMP/vg.out" 2>"$TMP/vg.err" || fail "memcheck: $(head -c 600 "$TMP/vg.err")"
	checks_pass vg
}

# glibc's static TLS surplus used up by libraries of initial-exec TLS: the
# library's dlopen fails with the loader's reason, and the process goes on
test_tls_exhausted() {
	"$LATE" "$LIB" tls >"$TMP/tls.out" 2>&1 || fail "sampler_late tls: $(cat "$TMP/tls.out")"
	awk '/^hogs/ { exit !($2 > 0) }' "$TMP/tls.out" || fail "no TLS hog loaded: $(cat "$TMP/tls.out")"
	grep -q '^sampler refused: .*cannot allocate memory in static TLS block' "$TMP/tls.out" ||
		fail "not refused for static TLS: $(cat "$TMP/tls.out")"
	grep -q '^alive$' "$TMP/tls.out" || fail "the process did not go on: $(cat "$TMP/tls.out")"
}

# preloaded, the library interposes from the start: takeover sets the rate, release refuses
test_preloaded() {
	LD_PRELOAD=$LIB "$LATE" "$LIB" preloaded >"$TMP/pre.out" 2>&1 ||
		fail "preloaded: $(tr '\n' ';' <"$TMP/pre.out")"
	checks_pass pre
}

# preloaded, and a copy loaded from another path (as an injector's memfd
# is): the copy's takeover refuses rather than sample every call twice
test_second_copy() {
	cp "$LIB" "$TMP/libculpert-sampler-copy.so"
	LD_PRELOAD=$LIB "$LATE" "$TMP/libculpert-sampler-copy.so" second >"$TMP/second.out" 2>&1 ||
		fail "second copy: $(tr '\n' ';' <"$TMP/second.out")"
	checks_pass second
}

# culpert-bpf on the library's probes, attached while it is loaded and
# dormant: every leaf of the profile is one of the target's counted
# functions with exactly its bytes and calls, and nothing else (the calls
# of late_before, late_dormant and late_released are not seen)
test_attach_usdt() {
	need_root || return
	# culpert-bpf takes the rate from the library's page when it attaches:
	# the dormant library shows CULPERT_SAMPLER_RATE's, the takeover's
	profile attach 1 "--sampler usdt" env CULPERT_SAMPLER_RATE=1 "$LATE" "$LIB" wait 1 || return
	checks_pass attach
	by_leaf "$TMP/attach.pb.gz" 2 1 | sed 's/^/total /' | sort >"$TMP/attach.est"
	grep '^total' "$TMP/attach.out" | awk '{ b[$2] += $3; c[$2] += $4 }
		END { for (f in b) print "total", f, b[f], c[f] }' | sort >"$TMP/attach.truth"
	diff "$TMP/attach.truth" "$TMP/attach.est" | sed -n 's/^</target:/p; s/^>/profile:/p' \
		>"$TMP/attach.diff"
	[ -s "$TMP/attach.diff" ] && fail "inexact (bytes, calls): $(tr '\n' ';' <"$TMP/attach.diff")"
	"$PROFDUMP" "$TMP/attach.pb.gz" | grep -q '^# comment sampler=otel_memory$' ||
		fail "not through the otel_memory probes"
}

run_test sampler_late_exact_glibc test_exact_glibc
run_test sampler_late_exact_jemalloc test_exact_jemalloc
run_test sampler_late_exact_mimalloc test_exact_mimalloc
run_test sampler_late_sampled test_sampled
run_test sampler_late_cycles test_cycles
run_test sampler_late_python test_python
run_test sampler_late_memcheck test_memcheck
run_test sampler_late_tls_exhausted test_tls_exhausted
run_test sampler_late_preloaded test_preloaded
run_test sampler_late_second_copy test_second_copy
run_test sampler_late_attach_usdt test_attach_usdt
