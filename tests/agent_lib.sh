# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Helpers of the agent's shell tests (tests/bpf/test_agent_frame.sh,
# tests/agent/*.sh), after tests/lib.sh.  $PY is Debian's python3.

# a profile's totals by function (tests/tools/pprof_raw.py reads go tool pprof -raw)
RAW="$PY tests/tools/pprof_raw.py"

# libculpert-sampler.so of this build, for targets to preload and the agent to inject
LIB=$(realpath "$OUTPUT/libculpert-sampler.so" 2>/dev/null)

need_sampler() {
	[ -f "$LIB" ] && return 0
	fail "$OUTPUT/libculpert-sampler.so missing: run 'make'"
	return 1
}

# agent_start NAME ARGS...: the agent on a free loopback port, with $AGENT_ARGS before ARGS;
# sets $agent_pid and $agent_url
agent_start() {
	_n=$1
	shift
	: >"$TMP/$_n.err"
	"$BIN_BPF" agent --listen 127.0.0.1:0 ${AGENT_ARGS:-} "$@" 2>"$TMP/$_n.err" &
	agent_pid=$!
	track "$agent_pid"
	wait_for "$TMP/$_n.err" "agent listening on" 20 ||
		{ fail "agent did not start: $(head -c 600 "$TMP/$_n.err")"; return 1; }
	agent_url=$(sed -n 's/.*agent listening on \(http:[^ ]*\) .*/\1/p' "$TMP/$_n.err")
}

# get PATH: the body of a GET (with $AUTH's header when set)
get() {
	if [ -n "${AUTH:-}" ]; then
		curl -s -H "Authorization: Bearer $AUTH" "$agent_url$1"
	else
		curl -s "$agent_url$1"
	fi
}

# field PID NAME: NAME of target PID in /targets (the live one first); "-" if not listed
field() {
	get /targets | $PY -c 'import json, sys
d = json.load(sys.stdin)
t = sorted((x for x in d["targets"] if x["pid"] == int(sys.argv[1])), key=lambda x: x["state"] != "live")
print("-" if not t else "null" if t[0][sys.argv[2]] is None else t[0][sys.argv[2]])' "$1" "$2"
}

# metric NAME PID: the value of a per-target series in /metrics ("" if none); from the
# scrape in $METRICS_FILE when set
metric() {
	if [ -n "${METRICS_FILE:-}" ]; then cat "$METRICS_FILE"; else curl -s "$agent_url/metrics"; fi |
		awk -v n="$1" -v p="pid=\"$2\"" \
		'index($0, n "{") == 1 && index($0, p) { print $NF; exit }'
}

# wait_field PID NAME VALUE SECONDS
wait_field() {
	_i=0
	while [ "$(field "$1" "$2")" != "$3" ]; do
		_i=$((_i + 1))
		[ "$_i" -gt $(($4 * 10)) ] && return 1
		sleep 0.1
	done
}

# prom_start CONFIG: Debian's Prometheus with CONFIG (checked by promtool first) on a free
# loopback port, its data in $TMP; sets $prom_port
prom_start() {
	promtool check config "$1" >"$TMP/pcc" 2>&1 ||
		{ fail "promtool check config: $(cat "$TMP/pcc")"; return 1; }
	prom_port=$(free_port)
	rm -rf "$TMP/promdata"
	prometheus --config.file="$1" --storage.tsdb.path="$TMP/promdata" \
		--web.listen-address="127.0.0.1:$prom_port" >"$TMP/prom.log" 2>&1 &
	track $!
}

# prom_query EXPR: the number of series Prometheus's HTTP query API returns for EXPR
prom_query() {
	curl -s --get --data-urlencode "query=$1" "http://127.0.0.1:$prom_port/api/v1/query" |
		$PY -c 'import json, sys
d = json.load(sys.stdin)
print(len(d["data"]["result"]) if d.get("status") == "success" else -1)' 2>/dev/null || echo -1
}

# prom_value EXPR: the value of EXPR's one series, as Prometheus answers it; "-" if not one
prom_value() {
	curl -s --get --data-urlencode "query=$1" "http://127.0.0.1:$prom_port/api/v1/query" |
		$PY -c 'import json, sys
r = json.load(sys.stdin).get("data", {}).get("result", [])
print(r[0]["value"][1] if len(r) == 1 else "-")' 2>/dev/null || echo -
}

# duty_hook PID SAMPLER [CYCLES]: tests/tools/dutycheck's phases on PID, a steady
# allocator (16384 malloc/free pairs a second, each one a probe hit: on uprobes, or
# through otel_memory probes at CULPERT_SAMPLER_RATE=1), held to what the hook
# promises; with CYCLES, every hit seen still after that many more off/on switches
duty_hook() {
	# shellcheck disable=SC2086 # CYCLES: an optional argument
	"$OUTPUT/tests/tools/dutycheck" "$1" ${3:-} >"$TMP/duty" 2>&1 ||
		{ fail "$(tr '\n' ' ' <"$TMP/duty")"; return 1; }
	$PY - "$TMP/duty" "$2" <<-'EOF' >"$TMP/duty.out" 2>&1 || { fail "$(tail -1 "$TMP/duty.out"): $(tr '\n' ' ' <"$TMP/duty")"; return 1; }
	import sys
	lines = open(sys.argv[1]).read().splitlines()
	on1, off, on2 = ([int(x) for x in l.split()[1:]] for l in lines[:3])
	probes, sampler = lines[-2:]
	if len(lines) == 6:
	    cycled = [int(x) for x in lines[3].split()[1:]]
	    assert cycled[0] > 8192 and abs(cycled[0] - cycled[1]) < 200, "after the switches: %d allocation, %d free hits" % (cycled[0], cycled[1])
	else:
	    assert len(lines) == 5, lines
	# on: every malloc seen, and its free (a pair per block: equal up to the pairs
	# cut by the phase's edges; the second phase's frees also count while the
	# allocation probes go back in); about 16384 a second, less on a busy machine
	assert on1[0] > 8192 and abs(on1[0] - on1[1]) < 200, "first on: %d allocation, %d free hits" % (on1[0], on1[1])
	assert on2[0] > 8192 and on2[0] <= on2[1] + 200, "second on: %d allocation, %d free hits" % (on2[0], on2[1])
	# the kernel lets go of a closed link's uprobes a few milliseconds later (RCU): a
	# handful of hits may still come, never more than 1% of a second's
	assert off[0] < on1[0] / 100, "off: %d allocation hits" % off[0]
	assert off[1] > 8192, "off: %d free hits, want the free probes to stay" % off[1]
	# observed: the time on, not the one off; by dutycheck's clock at least the time on
	# between its switches, at most that and the switches (a loaded machine stretches both)
	assert abs(off[2] - on1[2]) < 50e6, "observed time grew while off: %d -> %d" % (on1[2], off[2])
	assert on2[3] - 50e6 <= on2[2] <= on2[3] + on2[4] + 50e6, \
	    "observed %d ns, want %d ns on (+ %d ns of switches)" % (on2[2], on2[3], on2[4])
	assert on2[3] >= 2e9, "on for %d ns, want 2 s" % on2[3]
	assert probes == "probes attached", probes
	assert sampler == "sampler " + sys.argv[2], sampler
	EOF
}

# --- profiles fetched from the agent ($RAW: tests/tools/pprof_raw.py, $RATE: the
# sampling rate check_live holds the estimates to)

# copy NAME PROGRAM: the program under another name (its comm), in $TMP
copy() {
	[ -x "$TMP/$1" ] || cp "$2" "$TMP/$1"
}

# pprof_raw PATH?QUERY OUT: google/pprof fetches the URL itself, -raw to OUT
pprof_raw() {
	go tool pprof -raw "$agent_url$1" >"$2" 2>"$2.err" ||
		{ fail "go tool pprof $1: $(tail -2 "$2.err"); the agent says:" \
			"$(curl -s "$agent_url$1" | head -c 600 | tr '\n' ' ')"; return 1; }
}

# within_plus GOT WANT RATE SLACK: within, with SLACK bytes more either way
within_plus() {
	$PY -c 'import math, sys
got, want, rate, slack = map(float, sys.argv[1:5])
sys.exit(0 if abs(got - want) <= 4 * math.sqrt(rate * want) + 0.01 * want + slack else 1)' \
		"$1" "$2" "$3" "$4"
}

# within GOT WANT RATE: |GOT - WANT| <= 4 sigma, sigma = sqrt(RATE * WANT) (Poisson byte
# sampling of blocks much smaller than RATE), plus 1% for what a block's rounding costs
within() {
	$PY -c 'import math, sys
got, want, rate = map(float, sys.argv[1:4])
sys.exit(0 if abs(got - want) <= 4 * math.sqrt(rate * want) + 0.01 * want else 1)' "$1" "$2" "$3"
}

# check_live NAME PID: each function's inuse_space in the agent's heap profile
# against the "total FN ALLOCATED LIVE" lines of $TMP/NAME.out
check_live() {
	pprof_raw "/debug/pprof/heap?pid=$2" "$TMP/$1.heap" || return 1
	$RAW --header <"$TMP/$1.heap" >"$TMP/$1.hdr"
	grep -qx "default inuse_space" "$TMP/$1.hdr" || fail "$1: default $(grep default "$TMP/$1.hdr")"
	grep -qx "types alloc_objects alloc_space inuse_objects inuse_space" "$TMP/$1.hdr" ||
		fail "$1: $(grep types "$TMP/$1.hdr")"
	$RAW inuse_space <"$TMP/$1.heap" >"$TMP/$1.live"
	$RAW alloc_space <"$TMP/$1.heap" >"$TMP/$1.alloc"
	while read -r _ fn alloc live; do
		got=$(awk -v f="$fn" '$1 == f { print $2 }' "$TMP/$1.live")
		within "${got:-0}" "$live" $RATE ||
			fail "$1: $fn live ${got:-0} bytes, want $live (rate $RATE)"
		got=$(awk -v f="$fn" '$1 == f { print $2 }' "$TMP/$1.alloc")
		within "${got:-0}" "$alloc" $RATE ||
			fail "$1: $fn allocated ${got:-0} bytes, want $alloc (rate $RATE)"
	done <<-EOF
	$(grep '^total ' "$TMP/$1.out")
	EOF
	return 0
}

# exact_allocs NAME PID: /debug/pprof/allocs of PID, each function's alloc_space and
# alloc_objects are the "total FN BYTES CALLS" lines of $TMP/NAME.out exactly, and no
# other function has any (alloc_exact allocates nowhere else once it runs)
exact_allocs() {
	pprof_raw "/debug/pprof/allocs?pid=$2" "$TMP/$1.raw" || return 1
	$RAW alloc_space <"$TMP/$1.raw" | sort >"$TMP/$1.bytes"
	$RAW alloc_objects <"$TMP/$1.raw" | sort >"$TMP/$1.calls"
	join "$TMP/$1.bytes" "$TMP/$1.calls" | sed 's/^/total /' | sort >"$TMP/$1.est"
	grep '^total ' "$TMP/$1.out" | sort >"$TMP/$1.truth"
	diff "$TMP/$1.truth" "$TMP/$1.est" | sed -n 's/^</target:/p; s/^>/profile:/p' >"$TMP/$1.diff"
	[ -s "$TMP/$1.diff" ] && { fail "$1: inexact (bytes, calls): $(tr '\n' ';' <"$TMP/$1.diff")"; return 1; }
	[ -s "$TMP/$1.truth" ] || { fail "$1: the target reported nothing"; return 1; }
	return 0
}

# cycled_heap NAME OUT: once the agent started as NAME (-v) has decided a duty for
# $target_pid (tests/targets/alloc_bound), two off windows and 20 MiB of ring_block
# sampled: the heap in OUT (go tool pprof -raw); $duty since pick-up (0 < duty < 0.9, else
# fail), ring_block's $alloc and $live bytes.  Needs tests/agent/budget.inc (metric,
# wait_cycled, heap_sampled).
cycled_heap() {
	wait_for "$TMP/$1.err" "pid $target_pid: .* duty" 20 ||
		{ fail "no duty decision: $(tail -3 "$TMP/$1.err")"; return 1; }
	# two off windows, then the samples to judge them by: the checks below say what fell short
	wait_cycled "$target_pid" 2 30
	heap_sampled "$target_pid" "$2" $((20 << 20)) 30 || [ -s "$2" ] ||
		{ fail "go tool pprof: $(tail -2 "$2.err")"; return 1; }
	duty=$(metric culpert_target_duty "$target_pid")
	$PY -c 'import sys; sys.exit(0 if 0 < float(sys.argv[1]) < 0.9 else 1)' "${duty:-1}" ||
		{ fail "not duty cycled: duty ${duty:-none} since pick-up
$(grep "pid $target_pid:" "$TMP/$1.err" | tail -2)"; return 1; }
	live=$($RAW inuse_space <"$2" | awk '$1 == "ring_block" { print $2 }')
	alloc=$($RAW alloc_space <"$2" | awk '$1 == "ring_block" { print $2 }')
	echo "  duty ${duty} since pick-up: ring_block allocated ${alloc:-0} B, live ${live:-0} B"
	[ "${alloc:-0}" -ge $((20 << 20)) ] ||
		fail "only ${alloc:-0} bytes sampled: too few to tell frees in off windows"
}

# duty_cycled_heap NAME SAMPLER: tests/targets/alloc_bound 20000 4096 1024 ($target_pid: 20k
# ops/s at rate 1, each freeing the block 4096 ops older, so 4 MiB of 1 KiB blocks are live)
# under an agent started as NAME with -v and a budget below its cost: cycled_heap, /targets'
# sampler SAMPLER, and ring_block's inuse_space at most the 4 MiB that are live, exactly
# (no sampling error at rate 1), its probes still cycled; the heap in $TMP/b.heap
duty_cycled_heap() {
	cycled_heap "$1" "$TMP/b.heap" || return 1
	[ "$(field "$target_pid" sampler)" = "$2" ] ||
		fail "sampler $(field "$target_pid" sampler)"
	[ "${live:-0}" -le $((4096 * 1024)) ] ||
		fail "ring_block live ${live} bytes, at most 4 MiB are: frees in off windows missed"
	grep -qx "Comment: sampler=otel_memory" "$TMP/b.heap" || fail "heap not through otel_memory"
	grep -qx "Comment: lost_samples=0" "$TMP/b.heap" || fail "$(grep lost_samples "$TMP/b.heap")"
	# the sampler's free probes stay on: the cycle goes on with the allocation probes alone
	case "$(field "$target_pid" probes)" in
	attached | off) ;;
	*) fail "probes $(field "$target_pid" probes): $(grep 'duty cycle stops' "$TMP/$1.err")" ;;
	esac
}

# agent_map_keys MAP TGID: keys of TGID (their first 4 bytes) in the agent's BPF map MAP
agent_map_keys() {
	for _id in $(grep -h '^map_id:' /proc/"$agent_pid"/fdinfo/* 2>/dev/null | awk '{ print $2 }'); do
		bpftool map show id "$_id" -j 2>/dev/null | grep -q "\"name\":\"$1\"" || continue
		bpftool map dump id "$_id" -j | $PY -c 'import json, struct, sys
tgid = int(sys.argv[1])
print(sum(1 for e in json.load(sys.stdin)
          if struct.unpack("<I", bytes(int(b, 16) for b in e["key"][:4]))[0] == tgid))' "$2"
		return
	done
	echo "no map $1"
}

# stop_agent [SIG]: SIGTERM (or SIG) to $agent_pid and wait for it; $rc its
# status (137 if it was still there 30 s later), $took the wall time in ms,
# $took_cpu the CPU time in ms it used from the signal on (all its threads:
# what it had used before, from /proc, taken from its whole-life CPU, which
# the shell's children's times gain when it is reaped)
stop_agent() {
	_before=$(cpu_ticks "$agent_pid")
	_t0=$(date +%s%N)
	# no other child of this shell is reaped between the two
	times >"$TMP/times0"
	kill "-${1:-TERM}" "$agent_pid"
	(sleep 30 && kill -KILL "$agent_pid") 2>/dev/null &
	_watch=$!
	wait "$agent_pid"
	rc=$?
	kill "$_watch" 2>/dev/null
	times >"$TMP/times1"
	took=$((($(date +%s%N) - _t0) / 1000000))
	# _before is in clock ticks of 10 ms
	took_cpu=$(($(cpu_ms "$TMP/times1") - $(cpu_ms "$TMP/times0") - _before * 10))
}
