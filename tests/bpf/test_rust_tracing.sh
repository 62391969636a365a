#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Rust tracing spans through culpert-tracing (rust/culpert-tracing): the
# example service (examples/rust-service, tokio + hyper, 4 worker threads)
# profiled under a bounded HTTP load on loopback, checked against what its
# handlers counted; the layer's probe sites as span.h's; unprofiled, no
# probe is hit.
. tests/lib.sh
# sort, comm and join agree on one order
export LC_ALL=C

RUST_OUT=$OUTPUT/rust/release
SERVICE=$RUST_OUT/culpert-rust-service
LOAD=$RUST_OUT/culpert-rust-load
# the span paths the handlers allocate in
PATHS="http_request http_request;checkout http_request;checkout;price http_request;checkout;reserve
http_request;checkout;reserve;audit http_request;search http_request;search;parse_query
http_request;search;rank"

# "path bytes" per span_path label ("(no-span)" without one) from alloc_space;
# with a second argument, only samples whose stack has that function
by_span_path() {
	"$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' -v fn="${2:-}" '
		fn != "" && index($2, fn) == 0 { next }
		{ split($1, v, " "); p = "(no-span)"; n = split($3, l, ",")
		  for (i = 1; i <= n; i++) if (l[i] ~ /^span_path=/) p = substr(l[i], 11)
		  s[p] += v[2] }
		END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort
}

# serve_profiled NAME RATE REQUESTS [ATTACH ARGS...]: the service under
# attach --rate RATE while the load client sends REQUESTS requests over 16
# connections; $TMP/NAME.pb.gz the profile, $TMP/NAME.stats what the
# handlers counted (the service's /stats), $TMP/NAME.err attach's stderr;
# $TMP/NAME.ok once all went well
serve_profiled() {
	name=$1
	rate=$2
	requests=$3
	shift 3
	rm -f "$TMP/$name".*
	start_target "$TMP/$name.svc" "$SERVICE" --workers 4 || return 1
	svc=$target_pid
	addr=$(awk '/^listening/ { print $2 }' "$TMP/$name.svc")
	attach_bg "$TMP/$name.err" --pid "$svc" --rate "$rate" -v -o "$TMP/$name.pb.gz" "$@" || return 1
	"$LOAD" "$addr" "$requests" 16 --timeout 120 >"$TMP/$name.stats" 2>"$TMP/$name.load" ||
		{ fail "load: $(cat "$TMP/$name.load")"; return 1; }
	kill -INT "$attach_pid"
	wait "$attach_pid" || { fail "attach failed: $(cat "$TMP/$name.err")"; return 1; }
	kill "$svc"
	grep -q "^requests $requests\$" "$TMP/$name.stats" ||
		{ fail "the service saw $(grep requests "$TMP/$name.stats"), want $requests"; return 1; }
	grep -q "2 culpert span probe sites in .*culpert-rust-service" "$TMP/$name.err" ||
		{ fail "span probe sites not found: $(head -3 "$TMP/$name.err")"; return 1; }
	grep -q ' 0 lost)' "$TMP/$name.err" || { fail "samples lost: $(tail -2 "$TMP/$name.err")"; return 1; }
	: >"$TMP/$name.ok"
}

# the handlers' count for span path $1 in $2.stats
truth() {
	awk -v p="$1" '$1 == "total" && $2 == p { print $3 }' "$TMP/$2.stats"
}

# |est - truth| <= K sigma, sigma = sqrt(rate * truth): within_sigma EST TRUTH RATE K
within_sigma() {
	awk -v e="$1" -v t="$2" -v r="$3" -v k="$4" 'BEGIN { d = e - t; if (d < 0) d = -d
		exit !(t > 0 && d <= k * sqrt(r * t)) }'
}

profile_4k() {
	[ -e "$TMP/load4k.ok" ] || serve_profiled load4k 4KiB 8000
}

profile_exact() {
	[ -e "$TMP/exact.ok" ] || serve_profiled exact 1 600 --ringbuf-size 32MiB
}

# Poisson sampling over bytes at rate R: an estimate of B bytes allocated in
# blocks of s bytes has variance sum s^2 (1-p)/p, p = 1 - exp(-s/R), which is
# at most R * B for any s: sigma <= sqrt(R * B).  At 4 KiB, 8000 requests
# give each span path 35..70 MB in 64..1024-byte blocks: sigma <= 1.1% of
# it, and 4.5 sigma is at most 4.8%.  The estimate also holds what tracing's
# registry allocates inside a span while creating a child span (slab pages,
# a few KB in all): far below sigma.
test_rust_ground_truth() {
	need_root || return
	profile_4k || return
	by_span_path "$TMP/load4k.pb.gz" >"$TMP/load4k.est"
	for p in $PATHS; do
		t=$(truth "$p" load4k)
		e=$(awk -v p="$p" '$1 == p { print $2 }' "$TMP/load4k.est")
		[ -n "$t" ] && [ "$t" -gt 30000000 ] || { fail "$p: the handlers counted '$t' bytes"; return; }
		within_sigma "${e:-0}" "$t" 4096 4.5 ||
			fail "$p: estimated ${e:-nothing}, the handlers allocated $t (4.5 sigma = $(awk \
				-v t="$t" 'BEGIN { printf "%.0f", 4.5 * sqrt(4096 * t) }'))"
	done
	# nothing else: every span path in the profile is one of the handlers'
	awk '{ print $1 }' "$TMP/load4k.est" | grep -v '^(no-span)$' >"$TMP/load4k.paths"
	for p in $PATHS; do echo "$p"; done | sort | diff - "$TMP/load4k.paths" >"$TMP/load4k.diff" ||
		fail "span paths differ from the handlers': $(tr '\n' ' ' <"$TMP/load4k.diff")"
}

# culpert report nests the spans as the handlers do: each row's path from
# its indentation, the report's tree equals the handlers' paths
test_rust_nesting() {
	need_root || return
	profile_4k || return
	"$BIN_CLI" report "$TMP/load4k.pb.gz" >"$TMP/report" || { fail "culpert report failed"; return; }
	# the span tree only: the exact totals' table after it has the same rows
	awk '/^SPAN / { on = 1; next } on && !NF { exit } on {
		match($0, /^ */); d = RLENGTH / 2; name = $1
		if (name == "(no") next
		stack[d] = name; p = stack[0]
		for (i = 1; i <= d; i++) p = p ";" stack[i]
		print p }' "$TMP/report" | sort >"$TMP/report.paths"
	for p in $PATHS; do echo "$p"; done | sort | diff - "$TMP/report.paths" >"$TMP/report.diff" ||
		fail "report's tree: $(tr '\n' ' ' <"$TMP/report.diff")"
	grep -q '^(no span) ' "$TMP/report" || fail "report has no (no span) root"
}

# Every allocation (--rate 1, none lost): the handlers' own allocations --
# samples whose stack has alloc_block -- are exactly what they counted, in
# their span, whichever worker thread each poll ran on
test_rust_exact() {
	need_root || return
	profile_exact || return
	by_span_path "$TMP/exact.pb.gz" culpert_rust_service::alloc_block >"$TMP/exact.est"
	for p in $PATHS; do
		t=$(truth "$p" exact)
		e=$(awk -v p="$p" '$1 == p { print $2 }' "$TMP/exact.est")
		[ "$e" = "$t" ] || fail "$p: profile has ${e:-nothing}, the handlers allocated $t"
	done
	[ "$(wc -l <"$TMP/exact.est")" -eq 8 ] ||
		fail "handler allocations outside their spans: $(tr '\n' ' ' <"$TMP/exact.est")"
}

# Async spans move between worker threads and are attributed on each thread
# that polls them.  The service counts, per span, the awaits after which it
# resumed on another thread.  reserve and parse_query allocate before and
# after their one await: at --rate 1 the span instances (span ids) whose
# samples carry two thread ids are exactly the ones that moved.  checkout
# and search also move inside their children's awaits, which they do not
# count: some of them must be seen on two threads.  (Their bytes, on every
# thread: test_rust_exact.)
test_rust_threads() {
	need_root || return
	profile_exact || return
	"$PROFDUMP" "$TMP/exact.pb.gz" | grep -v '^#' | cut -f3 >"$TMP/exact.labels"
	for s in checkout reserve search parse_query; do
		moved=$(awk -v s="$s" '$1 == "moved" && $2 == s { print $3 }' "$TMP/exact.stats")
		# span instances seen on two threads or more
		multi=$(grep "span_name=$s," "$TMP/exact.labels" |
			sed 's/.*thread_id=\([0-9]*\).*span_id=\([0-9]*\).*/\2 \1/' | sort -u |
			awk '{ n[$1]++ } END { for (k in n) if (n[k] > 1) m++; print m + 0 }')
		case "$s" in
		reserve | parse_query) [ "${moved:-0}" -gt 0 ] && [ "$multi" = "$moved" ] ||
			fail "$s: resumed elsewhere ${moved:-?} times, $multi spans seen on two threads" ;;
		*) [ "${moved:-0}" -gt 0 ] && [ "$multi" -gt 0 ] ||
			fail "$s: resumed elsewhere ${moved:-?} times, $multi spans seen on two threads" ;;
		esac
	done
}

# (no span) holds the runtime's own allocations (hyper's connections and
# buffers, tokio's tasks) and none of the handlers'
test_rust_no_span() {
	need_root || return
	profile_exact || return
	"$PROFDUMP" "$TMP/exact.pb.gz" | grep -v '^#' | grep -v 'span_path=' >"$TMP/nospan"
	[ -s "$TMP/nospan" ] || { fail "no sample outside any span"; return; }
	grep -q 'culpert_rust_service::alloc_block' "$TMP/nospan" &&
		fail "a handler's allocation outside any span"
	grep -q 'hyper::proto::' "$TMP/nospan" || fail "no hyper allocation outside any span"
	grep -q 'tokio::runtime::' "$TMP/nospan" || fail "no tokio allocation outside any span"
}

# Labels: a span's parent id is the id of its tracing parent -- audit's is
# checkout, which made it, not reserve, in which it is entered (span.h's
# implied parent) -- go tool pprof reads them, and -tagfocus selects a
# span's samples exactly
test_rust_labels() {
	need_root || return
	profile_4k || return
	# the labels alone: the stacks are long
	"$PROFDUMP" "$TMP/load4k.pb.gz" | grep -v '^#' | cut -f3 >"$TMP/labels"
	for pair in checkout:price checkout:reserve checkout:audit search:parse_query search:rank \
		http_request:checkout; do
		parent=${pair%%:*}
		child=${pair#*:}
		grep "span_name=$parent," "$TMP/labels" | sed -n 's/.*span_id=\([0-9]*\).*/\1/p' |
			sort -u >"$TMP/ids.$parent"
		grep "span_name=$child," "$TMP/labels" | sed -n 's/.*span_parent_id=\([0-9]*\).*/\1/p' \
			>"$TMP/parents.$child"
		# ids are unique among open spans: a parent id that is some other
		# span's id means a wrong parent; a parent that allocated nothing
		# sampled (~10% of them at 4 KiB) is absent from ids
		grep "span_name=" "$TMP/labels" | grep -v "span_name=$parent," |
			sed -n 's/.*span_id=\([0-9]*\).*/\1/p' | sort -u >"$TMP/ids.not.$parent"
		wrong=$(sort -u "$TMP/parents.$child" | comm -12 - "$TMP/ids.not.$parent" | wc -l)
		found=$(sort "$TMP/parents.$child" | join - "$TMP/ids.$parent" | wc -l)
		all=$(wc -l <"$TMP/parents.$child")
		[ "$all" -gt 0 ] && [ "$wrong" -eq 0 ] && [ $((found * 2)) -gt "$all" ] ||
			fail "$child's span_parent_id: $all samples, $found with a $parent id, $wrong another span's"
	done
	grep 'span_name=http_request,' "$TMP/labels" | grep -q span_parent_id &&
		fail "http_request, a root span, has a parent id"
	go tool pprof -tags "$TMP/load4k.pb.gz" >"$TMP/tags" 2>&1 || { fail "go tool pprof -tags failed"; return; }
	for k in span_name span_path span_id span_parent_id thread_id \
		'http_request;checkout;price' 'http_request;search;rank'; do
		grep -q "$k" "$TMP/tags" || fail "go tool pprof -tags shows no $k"
	done
	want=$(by_span_path "$TMP/load4k.pb.gz" | awk '$1 == "http_request;checkout;reserve" { print $2 }')
	go tool pprof -raw -tagfocus=span_name:reserve "$TMP/load4k.pb.gz" >"$TMP/focus" 2>/dev/null
	got=$(awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
		on && $2 ~ /^[0-9]+:$/ { s += $2 + 0 } END { printf "%d", s }' "$TMP/focus")
	[ "$got" = "$want" ] || fail "-tagfocus=span_name:reserve gives $got bytes, want $want"
}

# Unprofiled, the semaphores read 0 and the layer never looks a span up (it
# does only to fire span_enter); attached they count, detached 0 again --
# tests/targets/span_sem.c's test, through the layer
test_rust_semaphores() {
	need_root || return
	check_semaphores rsem lookups "$RUST_OUT/examples/span_sem"
}

# the culpert notes of an object, one line per probe, from readelf -n:
# "NAME LOCATION BASE SEMAPHORE ARGS..."
notes() {
	readelf -n "$1" | awk '/Provider: culpert/ { on = 1; next } on && /Name:/ { n = $2 }
		on && /Location:/ { gsub(",", ""); loc = $2; base = $4; sem = $6 }
		on && /Arguments:/ { $1 = ""; print n, loc, base, sem $0; on = 0 }'
}

# the value of symbol $2 in $1
sym() {
	readelf -Ws "$1" | awk -v s="$2" '$8 == s { print "0x" $2; exit }'
}

# section $2's address in $1
section_addr() {
	readelf -WS "$1" | sed 's/^ *\[ *[0-9]*\]//' | awk -v s="$2" '$1 == s { print "0x" $3; exit }'
}

# check_sites OBJ ARG_RE DISASM: OBJ's two culpert sites are what span.h
# makes: names, argument count, 8-byte arguments in the form ARG_RE, the
# semaphores span.h names in .probes, the base .stapsdt.base, a nop at each
# location (disassembled by DISASM)
check_sites() {
	notes "$1" >"$TMP/sites"
	[ "$(wc -l <"$TMP/sites")" -eq 2 ] || { fail "${1##*/}: sites: $(cat "$TMP/sites")"; return 1; }
	probes_lo=$(section_addr "$1" .probes)
	base=$(section_addr "$1" .stapsdt.base)
	while read -r name loc nbase sem args; do
		want_args=4
		[ "$name" = span_exit ] && want_args=1
		[ "$(echo "$args" | wc -w)" -eq "$want_args" ] || fail "${1##*/} $name: arguments '$args'"
		for a in $args; do
			echo "$a" | grep -Eq "^$2\$" || fail "${1##*/} $name: argument '$a'"
		done
		[ $((sem)) -eq $(($(sym "$1" "culpert_${name}_semaphore"))) ] &&
			[ $((sem)) -ge $((probes_lo)) ] && [ $((sem)) -lt $((probes_lo + 4)) ] ||
			fail "${1##*/} $name: semaphore $sem is not culpert_${name}_semaphore in .probes"
		[ $((nbase)) -eq $((base)) ] || fail "${1##*/} $name: base $nbase, .stapsdt.base at $base"
		$3 --start-address="$loc" --stop-address=$((loc + 1)) "$1" | grep -q 'nop' ||
			fail "${1##*/} $name: no nop at $loc"
	done <"$TMP/sites"
	return 0
}

# The layer's sites against span.h's (tests/targets/span_sem.c): the same
# provider, names, argument count and sizes, a semaphore each; so the BPF
# side needs no change
test_rust_notes() {
	c=$OUTPUT/tests/targets/span_sem
	check_sites "$SERVICE" '8@%r[a-z0-9]+' "objdump -d" || return
	for f in "$c" "$SERVICE"; do
		notes "$f" | awk '{ n = split($0, a, " "); s = ""
			for (i = 5; i <= n; i++) { split(a[i], b, "@"); s = s " " b[1] }
			print a[1] s }' | sort
	done >"$TMP/both"
	[ "$(sort -u "$TMP/both" | wc -l)" -eq 2 ] && [ "$(wc -l <"$TMP/both")" -eq 4 ] ||
		fail "span.h's and the layer's probes differ: $(tr '\n' ';' <"$TMP/both")"
	grep -q '^span_enter 8 8 8 8$' "$TMP/both" || fail "span_enter: $(cat "$TMP/both")"
}

# The aarch64 sites (rust-check-aarch64: probes.rs built for aarch64, linked
# by ld.lld): registers as libbpf's aarch64 parser reads them (8@x0)
test_rust_notes_aarch64() {
	so=$OUTPUT/rust/aarch64/probes.so
	[ -f "$so" ] || { fail "$so not built (make rust-check-aarch64)"; return; }
	readelf -h "$so" | grep -q 'AArch64' || { fail "$so is not an aarch64 object"; return; }
	check_sites "$so" '8@x([0-9]|[12][0-9]|30)' "llvm-objdump -d"
}

run_test bpf/rust_tracing/notes test_rust_notes
run_test bpf/rust_tracing/notes_aarch64 test_rust_notes_aarch64
run_test bpf/rust_tracing/ground_truth test_rust_ground_truth
run_test bpf/rust_tracing/nesting test_rust_nesting
run_test bpf/rust_tracing/labels test_rust_labels
run_test bpf/rust_tracing/exact test_rust_exact
run_test bpf/rust_tracing/threads test_rust_threads
run_test bpf/rust_tracing/no_span test_rust_no_span
run_test bpf/rust_tracing/semaphores test_rust_semaphores
