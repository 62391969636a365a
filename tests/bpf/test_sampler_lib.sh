#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# libculpert-sampler.so on its own, with no profiler: its notes and probe
# sites, behaviour unchanged over glibc, jemalloc and mimalloc, fork, exec,
# signal handlers and start-up, the sampling statistics, and (as root,
# through counting perf uprobes that raise the semaphores as an attach
# does) that the probes fire for sampled calls only.
# Needs: make sampler-test-deps.
. tests/lib.sh

LIB=$(realpath "$OUTPUT/libculpert-sampler.so")
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
JEMALLOC=/usr/lib/$MULTIARCH/libjemalloc.so.2
MIMALLOC=/usr/lib/$MULTIARCH/libmimalloc.so.2
COUNT=$OUTPUT/tests/sampler/uprobe_count
SIGMASK=$(realpath "$TARGETS/libsigmask_alloc.so")

# under NAME ALLOCATOR CMD...: CMD with the sampler preloaded over ALLOCATOR
# (glibc, jemalloc, mimalloc), the sampler's exit line appended to $TMP/NAME.stats
under() {
	_n=$1
	case "$2" in
	glibc) _pre=$LIB ;;
	jemalloc) _pre="$LIB $JEMALLOC" ;;
	mimalloc) _pre="$LIB $MIMALLOC" ;;
	esac
	shift 2
	LD_PRELOAD=$_pre CULPERT_SAMPLER_STATS=$TMP/$_n.stats "$@"
}

# stat_of FILE KEY: KEY's value in the last sampler exit line of FILE
stat_of() {
	tail -1 "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# --- the library's notes and sites ---

# the note's addresses of probe NAME of FILE: "pc semaphore args"
note_of() {
	readelf -n "$1" | awk -v want="$2" '
		/Provider: otel_memory/ { prov = 1; next }
		prov && /Name:/ { name = $2; next }
		prov && /Location:/ { pc = $2; sub(/,$/, "", pc); sema = $6 }
		prov && /Arguments:/ { sub(/^ *Arguments: */, ""); if (name == want) print pc, sema, $0; prov = 0 }'
}

# sections of FILE, one a line: "NAME ADDR OFFSET SIZE" in decimal
sections() {
	readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' | while read -r name type addr off size _; do
		case "$addr" in *[!0-9a-f]*|'') continue ;; esac
		echo "$name $((0x$addr)) $((0x$off)) $((0x$size))"
	done
}

# file offset of link-time address ADDR in FILE, and the section holding it: "OFFSET NAME"
locate() {
	sections "$1" | awk -v a=$(($2)) '$2 && a >= $2 && a < $2 + $4 { print a - $2 + $3, $1; exit }'
}

file_off() {
	set -- $(locate "$1" "$2")
	echo "$1"
}

section_of() {
	set -- $(locate "$1" "$2")
	echo "$2"
}

test_notes() {
	set -- $(note_of "$LIB" alloc)
	[ "$*" = "$1 $2 8@%rdi 8@%rsi 8@%rdx" ] || fail "alloc note: '$*'"
	alloc_pc=$1 alloc_sema=$2
	set -- $(note_of "$LIB" free)
	[ "$*" = "$1 $2 8@%rdi" ] || fail "free note: '$*'"
	free_pc=$1 free_sema=$2
	[ "$(readelf -n "$LIB" | grep -c 'Provider: otel_memory')" -eq 2 ] ||
		fail "not exactly one site per probe"
	[ "$(readelf -n "$LIB" | grep -c 'Provider: culpert_sampler')" -eq 1 ] ||
		fail "not one culpert_sampler:allocator_stats site"
	for s in "$alloc_sema" "$free_sema"; do
		[ $(($s)) -ne 0 ] || fail "a probe without a semaphore"
		[ "$(section_of "$LIB" "$s")" = .probes ] ||
			fail "semaphore $s not in .probes (the kernel needs file-backed data)"
	done
	[ $(($alloc_sema)) -ne $(($free_sema)) ] || fail "alloc and free share a semaphore"
	readelf -SW "$LIB" | grep -q ' \.stapsdt\.base ' || fail "no .stapsdt.base section"
	for pc in "$alloc_pc" "$free_pc"; do
		off=$(file_off "$LIB" "$pc")
		site=$(od -An -tx1 -j "$off" -N5 "$LIB" | tr -d ' \n')
		[ "$site" = 0f1f440000 ] || fail "site $pc is '$site', not nopl 0x0(%rax,%rax,1)"
	done
	for s in otel_memory_alloc_semaphore otel_memory_free_semaphore; do
		nm "$LIB" | grep -q " $s\$" || fail "no symbol $s"
		nm -D "$LIB" | grep -q " $s\$" && fail "$s is exported (it must stay the library's own)"
	done
}

test_exports() {
	for f in malloc calloc realloc reallocarray free posix_memalign aligned_alloc memalign \
		valloc pvalloc malloc_usable_size _Znwm _Znam _ZnwmRKSt9nothrow_t \
		_ZnwmSt11align_val_t _ZnwmSt11align_val_tRKSt9nothrow_t _ZdlPv _ZdaPv _ZdlPvm \
		_ZdlPvSt11align_val_t _ZdlPvmSt11align_val_t _ZdaPvSt11align_val_tRKSt9nothrow_t; do
		nm -D --defined-only "$LIB" | grep -q " T $f\$" || fail "$f not exported"
	done
	nm -D --defined-only "$LIB" | grep -q " D culpert_sampler_page\$" ||
		fail "culpert_sampler_page not exported"
	for f in culpert_sampler_takeover culpert_sampler_release culpert_sampler_state; do
		nm -D --defined-only "$LIB" | grep -q " T $f\$" || fail "$f not exported"
	done
	# nothing else: the library must not interpose on anything by accident
	n=$(nm -D --defined-only "$LIB" | grep -vc -e ' T _Z[nd]' -e ' T \(malloc\|calloc\|realloc\|reallocarray\|free\|posix_memalign\|aligned_alloc\|memalign\|valloc\|pvalloc\|malloc_usable_size\)$' -e ' D culpert_sampler_page$' -e ' T culpert_sampler_\(takeover\|release\|state\)$')
	[ "$n" -eq 0 ] || fail "$n unexpected exported symbols"
}

# a program carrying its own <sys/sdt.h> otel_memory pair, for profiling "another sampler"
test_sdt_target() {
	t=$TARGETS/sdt_otel
	for p in alloc free; do
		set -- $(note_of "$t" $p)
		[ $# -ge 3 ] || { fail "sdt_otel has no otel_memory:$p note"; continue; }
		[ $(($2)) -ne 0 ] || fail "sdt_otel's $p has no semaphore"
	done
	# what <sys/sdt.h> emits on x86: a one-byte nop, which is why the library writes its own
	set -- $(note_of "$t" alloc)
	site=$(od -An -tx1 -j "$(file_off "$t" "$1")" -N1 "$t" | tr -d ' \n')
	[ "$site" = 90 ] || fail "sdt_otel's alloc site is '$site', expected sys/sdt.h's nop (90)"
	start_target "$TMP/sdt.out" "$t" || return
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "sdt_otel exited with $?"
	grep -q '^total f_small 1000000 10000$' "$TMP/sdt.out" || fail "sdt_otel: $(cat "$TMP/sdt.out")"
}

# --- behaviour ---

# the "fn" lines of OUTFILE: at rate 1, events == calls and weight == bytes on each
exact_lines() {
	awk '/^fn / { n++; if ($4 != $8 || $6 != $10) { print $0; bad = 1 } }
		END { if (!n) print "no fn lines"; exit bad || !n }' "$1"
}

# same_as_plain NAME SAMPLED PLAIN: the sampled run's checks are the plain run's when the
# allocator alone gets through the program; when it does not (jemalloc has no pvalloc:
# glibc's hands out a block jemalloc's free crashes on, which the sampler avoids by
# building pvalloc on jemalloc's posix_memalign), every check must pass
same_as_plain() {
	if grep -q '^checks ' "$3"; then
		[ "$(grep -v '^fn \|^sampler \|^allocator \|ready$' "$2")" = "$(grep -v '^fn \|^sampler \|^allocator \|ready$' "$3")" ] ||
			fail "$1: $(grep -v '^fn' "$2" | tr '\n' ' ') vs alone: $(grep -v '^fn' "$3" | tr '\n' ' ')"
	else
		grep -q '^checks [0-9]* failed 0$' "$2" ||
			fail "$1: $(grep -v '^fn' "$2" | tr '\n' ' ') (crashes without the sampler)"
	fi
}

behaviour() {
	a=$1
	t=$TARGETS/sampler_stat
	# in a subshell: the shell would say so when the allocator alone crashes
	(plain "$a" "$t" exact >"$TMP/plain.out" 2>&1) 2>/dev/null
	for rate in 1 4096 524288; do
		CULPERT_SAMPLER_RATE=$rate under beh "$a" "$t" exact >"$TMP/beh.out" 2>&1
		# mimalloc 2.0.9 misaligns some aligned_alloc(256) blocks by itself: the same checks fail
		same_as_plain "$a rate $rate" "$TMP/beh.out" "$TMP/plain.out"
	done
	CULPERT_SAMPLER_RATE=1 under beh "$a" "$t" exact >"$TMP/beh.out" 2>&1
	exact_lines "$TMP/beh.out" >"$TMP/beh.bad" || fail "$a rate 1 not exact: $(head -2 "$TMP/beh.bad")"
	grep -q "allocator=$a" "$TMP/beh.stats" || fail "sampler says $(stat_of "$TMP/beh.stats" allocator), not $a"
	# alloc_exact, as the BPF tests run it
	for run in plain sampled; do
		if [ $run = plain ]; then
			start_target "$TMP/ae.$run" env LD_PRELOAD="$(plain "$a" printenv LD_PRELOAD)" \
				"$TARGETS/alloc_exact" || return
		else
			start_target "$TMP/ae.$run" env LD_PRELOAD="$(under x "$a" printenv LD_PRELOAD)" \
				CULPERT_SAMPLER_RATE=4096 "$TARGETS/alloc_exact" || return
		fi
		kill -USR1 "$target_pid"
		# plain jemalloc crashes in alloc_exact's pvalloc: no word from the shell about it
		wait "$target_pid" 2>/dev/null
	done
	same_as_plain "alloc_exact over $a" "$TMP/ae.sampled" "$TMP/ae.plain"
}

test_behaviour_glibc() { behaviour glibc; }
test_behaviour_jemalloc() { behaviour jemalloc; }
test_behaviour_mimalloc() { behaviour mimalloc; }

cxx() {
	a=$1
	t=$TARGETS/sampler_cxx
	# mimalloc's own operator new aborts on failure (no std::bad_alloc), with the sampler or not
	[ "$a" = mimalloc ] && set -- nofail || set --
	plain "$a" "$t" "$@" >"$TMP/cxx.plain" 2>&1 ||
		fail "sampler_cxx over $a alone: $(tail -2 "$TMP/cxx.plain")"
	CULPERT_SAMPLER_RATE=1 under cxx "$a" "$t" "$@" >"$TMP/cxx.out" 2>&1 ||
		fail "sampler_cxx over $a: $(grep -v '^fn' "$TMP/cxx.out" | tail -3)"
	grep -q '^checks [0-9]* failed 0$' "$TMP/cxx.out" || fail "sampler_cxx over $a: $(tail -1 "$TMP/cxx.out")"
	exact_lines "$TMP/cxx.out" >"$TMP/cxx.bad" ||
		fail "operator new over $a not exact at rate 1: $(head -2 "$TMP/cxx.bad")"
}

test_cxx_glibc() { cxx glibc; }
test_cxx_jemalloc() { cxx jemalloc; }
test_cxx_mimalloc() { cxx mimalloc; }

test_fork_exec() {
	CULPERT_SAMPLER_RATE=4096 under fork glibc "$TARGETS/sampler_fork" 40 >"$TMP/fork.out" 2>&1 ||
		fail "sampler_fork: $(cat "$TMP/fork.out")"
	grep -q '^children 40 ok 40$' "$TMP/fork.out" || fail "sampler_fork: $(head -1 "$TMP/fork.out")"
	# the parent and the 30 children that exit() wrote their own lines, each from 0 again
	n=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$TMP/fork.stats" | sort -u | wc -l)
	[ "$n" -eq 31 ] || fail "$n sampler exit lines of distinct pids, want 31 (parent, 30 children)"
	start_target "$TMP/fe.out" env LD_PRELOAD="$LIB" CULPERT_SAMPLER_RATE=4096 \
		"$TARGETS/fork_exec" || return
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "fork_exec exited with $?"
	grep -q '^child ok$' "$TMP/fe.out" && grep -q '^exec ok$' "$TMP/fe.out" ||
		fail "fork_exec: $(cat "$TMP/fe.out")"
}

test_signal_handler() {
	CULPERT_SAMPLER_RATE=64 LD_PRELOAD="$LIB $SIGMASK" "$TARGETS/sampler_signal" \
		>"$TMP/sig.out" 2>&1 || fail "sampler_signal: $(cat "$TMP/sig.out")"
	grep -q '^checks [0-9]* failed 0$' "$TMP/sig.out" || fail "sampler_signal: $(cat "$TMP/sig.out")"
	awk '/^signals/ { exit !($2 > 1000 && $4 > 1000) }' "$TMP/sig.out" ||
		fail "too few signals handled: $(head -1 "$TMP/sig.out")"
}

test_early_startup() {
	for t in sampler_early sampler_early_linked; do
		if [ $t = sampler_early ]; then
			CULPERT_SAMPLER_RATE=1 LD_PRELOAD=$LIB "$TARGETS/$t" >"$TMP/early.out" 2>&1
		else
			ldd "$TARGETS/$t" | grep -q libculpert-sampler.so || fail "$t does not link the sampler"
			CULPERT_SAMPLER_RATE=1 "$TARGETS/$t" >"$TMP/early.out" 2>&1
		fi || fail "$t: $(cat "$TMP/early.out")"
		grep -q '^sampler present$' "$TMP/early.out" || fail "$t: no sampler in the process"
		grep -q '^checks [0-9]* failed 0$' "$TMP/early.out" || fail "$t: $(cat "$TMP/early.out")"
		# the 8 calls of the constructors, all sampled at rate 1, before main
		awk '/^early events/ { exit !($3 >= 8) }' "$TMP/early.out" ||
			fail "$t: constructors' calls not sampled: $(grep early "$TMP/early.out")"
	done
}

test_rate_env() {
	CULPERT_SAMPLER_RATE=64KiB under env glibc /bin/true
	[ "$(stat_of "$TMP/env.stats" rate)" = 65536 ] || fail "64KiB: rate $(stat_of "$TMP/env.stats" rate)"
	CULPERT_SAMPLER_RATE=4m under env glibc /bin/true
	[ "$(stat_of "$TMP/env.stats" rate)" = 4194304 ] || fail "4m: rate $(stat_of "$TMP/env.stats" rate)"
	CULPERT_SAMPLER_RATE=lots under env glibc /bin/true 2>"$TMP/env.err"
	[ "$(stat_of "$TMP/env.stats" rate)" = 524288 ] || fail "malformed: rate $(stat_of "$TMP/env.stats" rate)"
	grep -q 'ignoring malformed CULPERT_SAMPLER_RATE=lots' "$TMP/env.err" || fail "no word on a malformed rate"
	under env glibc /bin/true
	[ "$(stat_of "$TMP/env.stats" rate)" = 524288 ] || fail "default: rate $(stat_of "$TMP/env.stats" rate)"
}

# --- statistics ---

# stat_check NAME ALLOCATOR RATE MODE ARGS...: at RATE 1 the sampler's weight is the
# truth exactly (and every call an event), so nothing but the workload is counted;
# at RATE the weight W is within 4 sigma of the truth T.  Each byte is a sampling
# point with probability p = 1/RATE independently (geometric gaps), W = RATE x
# points, so Var W = RATE^2 T p (1 - p) = T (RATE - 1): sigma = sqrt(T (RATE - 1)).
# The rest of a block past 64 points is counted by its expectation, which only
# lowers the variance.  4 sigma: a false failure once in 16000 runs.
stat_check() {
	_name=$1 _a=$2 _rate=$3
	shift 3
	CULPERT_SAMPLER_RATE=1 under st "$_a" "$TARGETS/sampler_stat" "$@" >"$TMP/st1.out" 2>&1 ||
		{ fail "$*: $(tail -2 "$TMP/st1.out")"; return; }
	awk '/^truth/ { c = $3; b = $5 } /^sampler/ { e = $3; w = $7 }
		END { exit !(c > 0 && e == c && w == b) }' "$TMP/st1.out" ||
		fail "$_name at rate 1 not exact: $(tr '\n' ' ' <"$TMP/st1.out")"
	CULPERT_SAMPLER_RATE=$_rate under st "$_a" "$TARGETS/sampler_stat" "$@" >"$TMP/st.out" 2>&1 ||
		{ fail "$*: $(tail -2 "$TMP/st.out")"; return; }
	awk -v r="$_rate" '/^truth/ { t = $5 } /^sampler/ { w = $7 }
		END { s = sqrt(t * (r - 1)); d = w - t
		      printf "T=%.0f W=%.0f rate=%d sigma=%.0f (%.3f%% of T) off by %.2f sigma\n", t, w, r, s, 100 * s / t, d / s
		      exit !(t > 0 && (d < 0 ? -d : d) <= 4 * s) }' "$TMP/st.out" >"$TMP/st.res" ||
		fail "$_name: $(cat "$TMP/st.res")"
	echo "  $_name over $_a: $(cat "$TMP/st.res")"
}

test_stats_small() {
	for a in glibc jemalloc mimalloc; do
		stat_check small "$a" 4096 small 1
	done
}

# blocks of many points, up to 256 at 64 KiB (the expectation path)
test_stats_large() {
	stat_check large glibc 65536 large 4
	stat_check large_default_rate glibc 524288 large 8
}

# 10000 threads of 16 KiB each at 64 KiB: only a random first draw samples them fairly
# (a first countdown of `rate` would sample none, of 0 every one)
test_stats_short_threads() {
	stat_check short_threads glibc 65536 threads 10000 16
}

# --- the probes, through counting perf uprobes on them (root) ---

# counted NAME RATE CMD...: CMD under uprobe_count with the sampler preloaded; $TMP/NAME.hits
counted() {
	_n=$1 _r=$2
	shift 2
	"$COUNT" "$LIB" otel_memory -- env LD_PRELOAD="$LIB" CULPERT_SAMPLER_RATE="$_r" \
		CULPERT_SAMPLER_STATS="$TMP/$_n.stats" "$@" >"$TMP/$_n.out" 2>&1
}

hits_of() {
	awk -v p="$2" '$1 == "probe" && $2 == p { print $4 }' "$1"
}

test_probes_fire_for_sampled_only() {
	need_root || return
	CULPERT_SAMPLER_RATE=4096 under quiet glibc "$TARGETS/sampler_stat" small 1 >/dev/null
	for k in alloc_fired free_fired tracked; do
		[ "$(stat_of "$TMP/quiet.stats" $k)" = 0 ] ||
			fail "no listener, yet $k=$(stat_of "$TMP/quiet.stats" $k)"
	done
	counted loud 4096 "$TARGETS/sampler_stat" small 1 || fail "under uprobe_count: $(tail -3 "$TMP/loud.out")"
	ev=$(stat_of "$TMP/loud.stats" events)
	ah=$(hits_of "$TMP/loud.out" alloc)
	fh=$(hits_of "$TMP/loud.out" free)
	[ -n "$ev" ] && [ "$ev" -gt 1000 ] || fail "too few sampled calls: '$ev'"
	[ "$ah" = "$ev" ] || fail "alloc probe hit $ah times for $ev sampled calls"
	[ "$(stat_of "$TMP/loud.stats" alloc_fired)" = "$ah" ] || fail "alloc_fired disagrees with the kernel"
	# every block is freed by the end, and only sampled ones fire free
	[ "$fh" = "$ah" ] || fail "free probe hit $fh times for $ah sampled blocks"
	[ "$(stat_of "$TMP/loud.stats" live)" = 0 ] || fail "sampled blocks left in the set"
	[ "$(stat_of "$TMP/loud.stats" set_full)" = 0 ] || fail "the set overflowed"
	grep -q '^checks [0-9]* failed 0$' "$TMP/loud.out" || fail "sampler_stat: $(grep checks "$TMP/loud.out")"
}

# the set and the probes with listeners, in signal handlers and forked children
test_probes_signal_fork() {
	need_root || return
	"$COUNT" "$LIB" otel_memory -- env LD_PRELOAD="$LIB $SIGMASK" CULPERT_SAMPLER_RATE=64 \
		CULPERT_SAMPLER_STATS="$TMP/psig.stats" "$TARGETS/sampler_signal" >"$TMP/psig.out" 2>&1 ||
		fail "sampler_signal counted: $(cat "$TMP/psig.out")"
	grep -q '^checks [0-9]* failed 0$' "$TMP/psig.out" || fail "sampler_signal: $(cat "$TMP/psig.out")"
	ah=$(hits_of "$TMP/psig.out" alloc)
	fh=$(hits_of "$TMP/psig.out" free)
	[ "$ah" = "$(stat_of "$TMP/psig.stats" alloc_fired)" ] && [ "$ah" -gt 0 ] ||
		fail "signal: alloc hits $ah, fired $(stat_of "$TMP/psig.stats" alloc_fired)"
	[ "$fh" = "$ah" ] && [ "$(stat_of "$TMP/psig.stats" live)" = 0 ] ||
		fail "signal: $ah allocs, $fh frees, live $(stat_of "$TMP/psig.stats" live)"
	counted pfork 4096 "$TARGETS/sampler_fork" 40 || fail "sampler_fork counted: $(cat "$TMP/pfork.out")"
	grep -q '^children 40 ok 40$' "$TMP/pfork.out" || fail "sampler_fork: $(cat "$TMP/pfork.out")"
}

# the allocator's own statistics, refreshed while culpert_sampler:allocator_stats has a listener
test_allocator_stats() {
	need_root || return
	CULPERT_SAMPLER_RATE=4096 under quiet glibc "$TARGETS/sampler_stat" small 1 >"$TMP/as.out" 2>&1
	grep -q '^allocator refreshed 0 ' "$TMP/as.out" || fail "refreshed with no listener: $(grep allocator "$TMP/as.out")"
	for a in glibc jemalloc mimalloc; do
		case $a in
		glibc) pre=$LIB field=4 ;;
		jemalloc) pre="$LIB $JEMALLOC" field=4 ;;
		mimalloc) pre="$LIB $MIMALLOC" field=6 ;;
		esac
		"$COUNT" "$LIB" culpert_sampler -- env LD_PRELOAD="$pre" CULPERT_SAMPLER_RATE=4096 \
			"$TARGETS/sampler_stat" small 1 >"$TMP/as.out" 2>&1 || fail "$a: $(tail -2 "$TMP/as.out")"
		# one refresh at the first sampled call; the run is shorter than the 1 s interval
		[ "$(hits_of "$TMP/as.out" allocator_stats)" = 1 ] ||
			fail "$a: allocator_stats hit $(hits_of "$TMP/as.out" allocator_stats) times"
		awk -v f=$field '/^allocator/ { exit !($3 > 0 && $f > 0) }' "$TMP/as.out" ||
			fail "$a: $(grep '^allocator' "$TMP/as.out")"
	done
}

run_test sampler_lib_notes test_notes
run_test sampler_lib_exports test_exports
run_test sampler_lib_sdt_target test_sdt_target
run_test sampler_lib_behaviour_glibc test_behaviour_glibc
run_test sampler_lib_behaviour_jemalloc test_behaviour_jemalloc
run_test sampler_lib_behaviour_mimalloc test_behaviour_mimalloc
run_test sampler_lib_cxx_glibc test_cxx_glibc
run_test sampler_lib_cxx_jemalloc test_cxx_jemalloc
run_test sampler_lib_cxx_mimalloc test_cxx_mimalloc
run_test sampler_lib_fork_exec test_fork_exec
run_test sampler_lib_signal_handler test_signal_handler
run_test sampler_lib_early_startup test_early_startup
run_test sampler_lib_rate_env test_rate_env
run_test sampler_lib_stats_small test_stats_small
run_test sampler_lib_stats_large test_stats_large
run_test sampler_lib_stats_short_threads test_stats_short_threads
run_test sampler_lib_probes_sampled_only test_probes_fire_for_sampled_only
run_test sampler_lib_probes_signal_fork test_probes_signal_fork
run_test sampler_lib_allocator_stats test_allocator_stats
