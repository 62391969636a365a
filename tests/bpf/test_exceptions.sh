#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Exceptions unwinding through probed frames.  A return probe replaces the
# return address with the [uprobes] trampoline, which has no unwind
# information: an exception passing through calls std::terminate.  The
# target throws through operator new (std::bad_alloc), through a plain C
# library's callback and through glibc's qsort; it must run to its end
# with its own count of caught exceptions, whatever culpert-bpf does.
. tests/lib.sh

LIBDIR=/usr/lib/x86_64-linux-gnu
ROUNDS=300

# allocator name, and the LD_PRELOAD that brings it ("" for glibc)
ALLOCATORS="glibc: jemalloc:$LIBDIR/libjemalloc.so.2 tcmalloc:$LIBDIR/libtcmalloc_minimal.so.4 mimalloc:$LIBDIR/libmimalloc.so.2"

# run_throw NAME SUBCMD "ARGS" PRELOAD: throw_new under SUBCMD to its end;
# fails unless both exit 0 and the target caught its 3 exceptions a round
run_throw() {
	_mode=""
	# mimalloc's C build aborts where others throw: the throw is the program's own there
	case "$4" in *mimalloc*) _mode=nothrow ;; esac
	start_profiled "$1" "$2" "--span-fn visit --span-fn qsort $3" \
		env LD_PRELOAD="$4" "$TARGETS/throw_new" "$ROUNDS" $_mode || return 1
	wait "$target_pid"
	_rc=$?
	wait "$attach_pid" || { fail "$1: $2 failed: $(tail -2 "$TMP/$1.err")"; return 1; }
	[ "$_rc" -eq 0 ] || { fail "$1: the target exited with $_rc: $(tail -2 "$TMP/$1.out")"; return 1; }
	grep -qx "caught $((3 * ROUNDS))" "$TMP/$1.out" ||
		{ fail "$1: $(grep caught "$TMP/$1.out"), want $((3 * ROUNDS))"; return 1; }
}

# Every allocator, every way of following returns: the target is unharmed
test_unharmed() {
	need_root || return
	for a in $ALLOCATORS; do
		name=${a%%:*}
		pre=${a#*:}
		[ -z "$pre" ] || [ -f "$pre" ] || { fail "$pre is not installed"; return; }
		run_throw "$name-attach" attach "--rate 4KiB" "$pre" || return
		run_throw "$name-inuse" attach "--rate 4KiB --inuse" "$pre" || return
		run_throw "$name-nosession" attach "--rate 4KiB --inuse --no-session" "$pre" || return
		run_throw "$name-capture" capture "--rate 4KiB" "$pre" || return
	done
}

# "leaf span alloc_space inuse_space" of PROFILE
by_leaf_span() {
	"$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' '
		{ split($2, f, ";"); split($1, v, " "); sp = "-"; n = split($3, l, ",")
		  for (i = 1; i <= n; i++) if (l[i] ~ /^span_path=/) sp = substr(l[i], 11)
		  k = f[1] " " sp; a[k] += v[2]; b[k] += v[4] }
		END { for (k in a) printf "%s %.0f %.0f\n", k, a[k], b[k] }' | sort
}

# At --rate 1 every call counts.  Through the uprobes on the return
# instructions of the operator new jemalloc and tcmalloc define, and the
# return of the malloc libstdc++'s calls (glibc), each function's allocated
# and live bytes are exact, with the caller of operator new as the leaf; the bytes
# the callbacks allocate are inside the span of the C function that called
# them, which ended (return instructions or the stack) when the exception
# left it: nothing of the program's own functions is attributed to it.
test_exact() {
	need_root || return
	for a in jemalloc:$LIBDIR/libjemalloc.so.2 tcmalloc:$LIBDIR/libtcmalloc_minimal.so.4 glibc:; do
		for path in "" --no-session; do
			name=exact-${a%%:*}${path:+-ns}
			run_throw "$name" attach "--rate 1 --inuse $path" "${a#*:}" || return
			by_leaf_span "$TMP/$name.pb.gz" >"$TMP/$name.est"
			out=$TMP/$name.out
			for fn in keep_new churn_new; do
				want=$(awk -v f=$fn '$1 == "total" && $2 == f { print $3 " " $4 }' "$out")
				got=$(awk -v f=$fn '$1 == f && $2 == "-" { print $3 " " $4 }' "$TMP/$name.est")
				[ "$got" = "$want" ] || fail "$name $fn: alloc/live '$got', want '$want'"
			done
			for span in visit:visited_cb qsort:compare_cb; do
				want=$(awk -v s=${span%%:*} '$1 == "span" && $2 == s { print $3 }' "$out")
				got=$(awk -v f=${span#*:} -v s=${span%%:*} '$1 == f && $2 == s { print $3 }' \
					"$TMP/$name.est")
				[ "$got" = "$want" ] || fail "$name: ${span#*:} in span ${span%%:*}: '$got', want '$want'"
			done
			awk '$2 != "-" && $1 != "visited_cb" && $1 != "compare_cb" && $1 !~ /^__cxa|^_Unwind|^\[/' \
				"$TMP/$name.est" >"$TMP/$name.leak"
			[ -s "$TMP/$name.leak" ] && fail "$name: allocations wrongly inside a span: $(head -3 "$TMP/$name.leak" | tr '\n' ';')"
		done
	done
	return 0
}

run_test bpf/exceptions/unharmed test_unharmed
run_test bpf/exceptions/exact test_exact
