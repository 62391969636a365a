# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Shared helpers of the shell tests.  Each test is a function run by
# run_test NAME FUNC [ARG...]; it passes unless it calls fail (or skip).
#
# Output contract with tests/run.sh: "PASS name", "FAIL name: why",
# "SKIP name: why", one line per test.

OUTPUT=${OUTPUT:-.output}
# a sanitizer run (tests/run.sh) has no culpert-bpf of its own: the plain build's
BIN_BPF=${BIN_BPF:-$OUTPUT/culpert-bpf}
BIN_CLI=$OUTPUT/culpert
# a sanitizer run (tests/run.sh) uses the targets of the plain build
TARGETS=${TARGETS:-$OUTPUT/tests/targets}
PROFDUMP=$OUTPUT/tests/tools/profdump
# Debian's python3, the one its python3-* packages serve: not the first python3 on PATH (a
# pyenv shim took over a second to start one)
PY=/usr/bin/python3
TMP=$(mktemp -d /tmp/culpert-test.XXXXXX)
# go tool pprof wants a writable cache even just to read a file
export GOCACHE=${GOCACHE:-$TMP/gocache} HOME=${HOME:-$TMP}
trap 'cleanup_pids; rm -rf "$TMP"' EXIT

_pids=""
_failed=""
_skipped=""

cleanup_pids() {
	for p in $_pids; do kill -9 "$p" 2>/dev/null; done
	_pids=""
}

# remember a background process to kill when the test file ends
track() { _pids="$_pids $1"; }

fail() {
	[ -n "$_failed" ] || _failed="$*"
	return 1
}

skip() {
	_skipped="$*"
}

run_test() {
	_test_name=$1
	shift
	_failed=""
	_skipped=""
	_run_t0=$(date +%s)
	times >"$TMP/.times0"
	"$@"
	cleanup_pids
	times >"$TMP/.times1"
	# where a file's time goes, test by test (tests/run.sh prints the files'):
	# wall seconds, and the CPU seconds of the processes the test waited for
	echo "# ${TEST_PREFIX:-}$_test_name: $(($(date +%s) - _run_t0))s" \
		"($(($(cpu_secs "$TMP/.times1") - $(cpu_secs "$TMP/.times0")))s CPU)"
	if [ -n "$_skipped" ]; then
		echo "SKIP ${TEST_PREFIX:-}$_test_name: $_skipped"
	elif [ -n "$_failed" ]; then
		echo "FAIL ${TEST_PREFIX:-}$_test_name: $_failed"
	else
		echo "PASS ${TEST_PREFIX:-}$_test_name"
	fi
}

# run_test_once NAME FUNC: a test that runs no culpert code (npm, a linter, the
# action's expression evaluator): not repeated by the sanitizer pass
# (CULPERT_SANITIZED, tests/run.sh), where it would test nothing more
run_test_once() {
	[ -n "${CULPERT_SANITIZED:-}" ] && return 0
	run_test "$@"
}

# need_root [WHY]: BPF tests need root (README: what culpert-bpf needs, and
# what the suite needs besides: setpriv, chroot, mknod, mount namespaces);
# without, they say so loudly
# free_port: a loopback TCP port nobody listens on now
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# redis_serve: Debian's redis-server (jemalloc) of its own on a free loopback port, no
# persistence, ready; its pid in $target_pid, its port in $redis_port
redis_serve() {
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
		{ skip "redis-server or redis-benchmark not installed (apt-get install redis-server redis-tools)"; return 1; }
	redis_port=$(free_port)
	: >"$TMP/redis.log"
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --logfile "$TMP/redis.log" &
	target_pid=$!
	track "$target_pid"
	wait_for "$TMP/redis.log" "Ready to accept connections" 20 ||
		{ fail "redis did not start: $(tail -3 "$TMP/redis.log")"; return 1; }
}

need_root() {
	if [ "$(id -u)" != 0 ]; then
		skip "needs root ${1:-to load BPF programs and attach uprobes} (run 'sudo make test')"
		return 1
	fi
	return 0
}

# start a test target that prints "pid N ready" and waits for SIGUSR1; sets $target_pid
start_target() {
	_out=$1
	shift
	# truncate here: the child truncates only once it runs, after wait_for may
	# have read the "ready" of an earlier target that used the same file
	: >"$_out"
	"$@" >"$_out" 2>&1 &
	target_pid=$!
	track "$target_pid"
	wait_for "$_out" "ready" 5 || fail "target $1 did not start"
}

# blocked_verdict OUT PID: tests/targets/inject_blocked's own verdict, once told to end:
# every blocked call ok, and exit 0
blocked_verdict() {
	kill -USR1 "$2"
	wait "$2"
	_rc=$?
	[ "$_rc" -eq 0 ] || fail "target exited $_rc: $(grep -v '^ok' "$1" | head -5)"
	[ "$(grep -c '^ok ' "$1")" -eq 6 ] || fail "not 6 blocked calls ok: $(cat "$1")"
}

# wait_for FILE PATTERN SECONDS
. tests/wait_for.sh
. tests/times.sh

# cross_locked CMD...: CMD holding the lock of the arm64 cross build in
# $OUTPUT/arm64, which the arm64 VM test and the multi-arch image share: the
# first to get there builds it, the other finds it made (make knows what is
# out of date)
cross_locked() {
	mkdir -p "$OUTPUT" && flock "$OUTPUT/arm64.lock" "$@"
}

# wait_running PID PROGRAM SECONDS: until PID runs PROGRAM's own code: it
# has exec'd PROGRAM (a child started with `PROGRAM &` is the shell until
# then) and, if dynamic, the loader has mapped the C library; 1 if not
# within SECONDS or if PID is gone
wait_running() {
	_want=$(readlink -f "$(command -v "$2")")
	_i=0
	while :; do
		if [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$_want" ] &&
			{ ! grep -q '/ld-linux' "/proc/$1/maps" 2>/dev/null ||
				grep -q '/libc[.-]' "/proc/$1/maps" 2>/dev/null; }; then
			return 0
		fi
		kill -0 "$1" 2>/dev/null || return 1
		_i=$((_i + 1))
		[ "$_i" -gt $(($3 * 20)) ] && return 1
		sleep 0.05
	done
}

# start_program OUT PROGRAM [ARG...]: PROGRAM in the background (stdout and
# stderr in OUT), tracked, returning once it runs (wait_running, 5 s); sets
# $prog_pid.  For programs without start_target's "ready" line (a service,
# a Go program), where a fixed sleep used to stand for this.
start_program() {
	_out=$1
	shift
	"$@" >"$_out" 2>&1 &
	prog_pid=$!
	track "$prog_pid"
	wait_running "$prog_pid" "$1" 5 || { fail "$1 did not start: $(tail -c 300 "$_out")"; return 1; }
}

# culpert-bpf's readiness line: printed once every probe is live and sampling has started
BPF_READY="culpert-bpf: profiling"

# wait_profiling ERRFILE [SECONDS]: until the culpert-bpf writing ERRFILE says
# it is profiling (default 10 s); 1 if it does not in time
wait_profiling() {
	wait_for "$1" "$BPF_READY" "${2:-10}"
}

# culpert-bpf SUBCMD (attach, capture) in the background until it says it
# is profiling: bpf_bg ERRFILE SUBCMD ARGS...; sets $attach_pid
bpf_bg() {
	_err=$1
	_cmd=$2
	shift 2
	# emptied first: the redirection below happens in the child, after wait_for may look
	: >"$_err"
	"$BIN_BPF" "$_cmd" "$@" 2>"$_err" &
	attach_pid=$!
	track "$attach_pid"
	wait_profiling "$_err" || {
		fail "$_cmd did not start: $(head -c 400 "$_err")"
		return 1
	}
}

# attach in the background: attach_bg ERRFILE ARGS...; sets $attach_pid
attach_bg() {
	_err=$1
	shift
	bpf_bg "$_err" attach "$@"
}

# start_profiled NAME SUBCMD "ARGS" CMD...: start CMD (a target that starts
# as start_target wants), culpert-bpf SUBCMD (attach, capture) on it in the
# background, and let the target go; $TMP/NAME.out is its output,
# $TMP/NAME.err SUBCMD's stderr, $TMP/NAME.pb.gz the profile.  ARGS are split
# at blanks and never globbed (--span-fn takes patterns).
start_profiled() {
	_name=$1
	_cmd=$2
	_args=$3
	shift 3
	start_target "$TMP/$_name.out" "$@" || return 1
	set -f
	# shellcheck disable=SC2086
	bpf_bg "$TMP/$_name.err" "$_cmd" --pid "$target_pid" -o "$TMP/$_name.pb.gz" $_args
	_rc=$?
	set +f
	[ "$_rc" -eq 0 ] || return 1
	kill -USR1 "$target_pid"
}

# profile NAME RATE "ATTACH ARGS" CMD...: CMD under attach to its end, the
# exit status of both checked; files and ARGS as for start_profiled.
profile() {
	_name=$1
	_rate=$2
	_args=$3
	shift 3
	start_profiled "$_name" attach "--rate $_rate $_args" "$@" || return 1
	wait "$target_pid" || {
		fail "$_name: target exited with $?: $(tail -3 "$TMP/$_name.out")"
		return 1
	}
	wait "$attach_pid" || { fail "$_name: attach failed: $(cat "$TMP/$_name.err")"; return 1; }
}

# profile_until_done NAME SECONDS SUBCMD "ARGS" CMD...: CMD (a target that says
# "done" when its work is over and then stays alive) under SUBCMD until it
# says so, then SUBCMD stopped with SIGINT and its exit status checked; files
# and ARGS as for start_profiled.
profile_until_done() {
	_name=$1
	_secs=$2
	_cmd=$3
	_args=$4
	shift 4
	start_profiled "$_name" "$_cmd" "$_args" "$@" || return 1
	wait_for "$TMP/$_name.out" '^done' "$_secs" || { fail "$* did not finish"; return 1; }
	stop_profiled "$_name" "$_cmd"
}

# stop_profiled NAME SUBCMD: stop what start_profiled started, SUBCMD with
# SIGINT (its exit status checked), then the target
stop_profiled() {
	kill -INT "$attach_pid"
	wait "$attach_pid" || { fail "$2 failed: $(cat "$TMP/$1.err")"; return 1; }
	kill "$target_pid"
}

# wait_new_lines FILE N COUNT SECONDS: until FILE has COUNT lines after its
# first N; 1 if not within SECONDS
wait_new_lines() {
	_i=0
	while [ "$(wc -l <"$1")" -lt $(($2 + $3)) ]; do
		_i=$((_i + 1))
		[ "$_i" -gt $(($4 * 20)) ] && return 1
		sleep 0.05
	done
}

# wait_count FILE PATTERN COUNT SECONDS: until COUNT lines of FILE match
# PATTERN (a program's pictures, children, ticks); 1 if not within SECONDS
wait_count() {
	_i=0
	while [ "$(grep -c -e "$2" "$1" 2>/dev/null)" -lt "$3" ]; do
		_i=$((_i + 1))
		[ "$_i" -gt $(($4 * 20)) ] && return 1
		sleep 0.05
	done
}

# cpu_ticks PID: the user and system CPU time PID has used, in clock ticks
# (1/100 s); 0 once it is gone
cpu_ticks() {
	# the comm (field 2) may hold blanks: count from the ")" after it
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }' | grep . || echo 0
}

# wait_cpu PID TICKS SECONDS: until PID has used TICKS clock ticks of CPU
# in all: "it has done some work", in its own time, however busy the
# machine is; 1 if not within SECONDS or if PID is gone
wait_cpu() {
	_i=0
	while [ "$(cpu_ticks "$1")" -lt "$2" ]; do
		kill -0 "$1" 2>/dev/null || return 1
		_i=$((_i + 1))
		[ "$_i" -gt $(($3 * 20)) ] && return 1
		sleep 0.05
	done
}

# check_semaphores NAME WORD CMD...: CMD prints "sem ENTER EXIT WORD N" a few
# times a second (tests/targets/span_sem.c, its Rust twin): the span
# semaphores as it sees them and how often it did the work a site does only
# when a span is wanted.  Unprofiled every line reads 0 0 ... 0; attached
# they count; once detached, every line printed after it reads 0 0 again.
# Waits on the lines the program prints, bounded; files $TMP/NAME.*.
check_semaphores() {
	_n=$1
	_w=$2
	shift 2
	"$@" >"$TMP/$_n.out" &
	_p=$!
	track "$_p"
	wait_new_lines "$TMP/$_n.out" 0 2 10 || { fail "$1 printed nothing"; return; }
	grep -v "^sem 0 0 $_w 0\$" "$TMP/$_n.out" >"$TMP/$_n.bad" &&
		fail "unprofiled: $(head -1 "$TMP/$_n.bad")"
	attach_bg "$TMP/$_n.err" --pid "$_p" -o "$TMP/$_n.pb.gz" || return
	wait_for "$TMP/$_n.out" "^sem [1-9][0-9]* [1-9][0-9]* $_w [1-9]" 10 ||
		fail "attached: $(tail -1 "$TMP/$_n.out")"
	kill -INT "$attach_pid"
	wait "$attach_pid"
	_lines=$(wc -l <"$TMP/$_n.out")
	# the first line after may have been printed as the probes went
	wait_new_lines "$TMP/$_n.out" "$_lines" 3 10 || { fail "no line after detach"; return; }
	tail -n +$((_lines + 2)) "$TMP/$_n.out" | grep -v '^sem 0 0 ' >"$TMP/$_n.bad" &&
		fail "after detach: $(head -1 "$TMP/$_n.bad")"
	return 0
}

# go_totals_agree PROFILE: go tool pprof, an independent reader, reads
# PROFILE and sums every sample type to what profdump sums
go_totals_agree() {
	go tool pprof -raw "$1" >"$1.goraw" 2>"$1.goerr" ||
		{ fail "go tool pprof -raw ${1##*/}: $(head -2 "$1.goerr")"; return 1; }
	_ours=$("$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' '
		{ n = split($1, v, " "); for (i = 1; i <= n; i++) s[i] += v[i]; if (n > m) m = n }
		END { for (i = 1; i <= m; i++) printf "%.0f ", s[i] }')
	# after "Samples:" and its header, "v1 v2 ... vN: locations", then labels
	_theirs=$(awk '/^Samples:/ { on = 1; getline; next } /^Locations/ { on = 0 }
		on && $1 ~ /^-?[0-9]+:?$/ { for (i = 1; i <= NF; i++) {
			v = $i; last = sub(/:$/, "", v); s[i] += v; if (i > m) m = i; if (last) break } }
		END { for (i = 1; i <= m; i++) printf "%.0f ", s[i] }' "$1.goraw")
	[ -n "$_ours" ] && [ "$_ours" = "$_theirs" ] ||
		{ fail "${1##*/}: totals ours '$_ours', go tool pprof '$_theirs'"; return 1; }
}

# by_leaf PROFILE COL...: sample values of each column COL (1-based) summed by
# leaf function: "func total1 total2 ..."
by_leaf() {
	_prof=$1
	shift
	"$PROFDUMP" "$_prof" | grep -v '^#' |
		awk -F'\t' -v cols="$*" 'BEGIN { nc = split(cols, c, " ") }
			{ split($2, f, ";"); split($1, v, " "); seen[f[1]] = 1
			  for (i = 1; i <= nc; i++) s[f[1], i] += v[c[i]] }
			END { for (k in seen) {
				printf "%s", k
				for (i = 1; i <= nc; i++) printf " %.0f", s[k, i]
				printf "\n" } }' | sort
}

# rate_one_exact NAME [ATTACH OPTION...]: --rate 1 records every call with
# weight 1: each function's calls and bytes exactly, including the entry
# points glibc forwards to its own malloc.  Profile in $TMP/NAME.pb.gz.
rate_one_exact() {
	_n=$1
	shift
	# shellcheck disable=SC2086 # RUN_UNDER: words put before the target (env VAR=...)
	profile "$_n" 1 "$*" ${RUN_UNDER:-} "$TARGETS/alloc_exact" || return
	by_leaf "$TMP/$_n.pb.gz" 2 1 | sed 's/^/total /' | sort >"$TMP/$_n.est"
	grep '^total' "$TMP/$_n.out" | sort >"$TMP/$_n.truth"
	# every function of the target, exactly, and nothing else: the target
	# allocates nowhere else once running (its stdout buffer is older), so
	# any other leaf is a call counted twice or a leaf gone wrong
	diff "$TMP/$_n.truth" "$TMP/$_n.est" | sed -n 's/^</target:/p; s/^>/profile:/p' >"$TMP/$_n.diff"
	[ -s "$TMP/$_n.diff" ] && fail "$*: inexact (bytes, calls): $(tr '\n' ';' <"$TMP/$_n.diff")"
	return 0
}

# share_pct PROFILE WANT: the fraction (in %) of alloc_space whose stack is what WANT names:
# chain_leaf (of chain_c's samples: the chain up to main), sqlite (sqlite3_step, then the entry)
share_pct() {
	"$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' -v want="$2" '
		{ n = split($2, f, ";"); split($1, v, " "); ok = 0
		  s = ";" $2 ";"
		  if (want == "chain_leaf") { if (f[1] != "chain_c") next; ok = (s ~ /;chain_c;chain_b;chain_a;main;/) }
		  if (want == "sqlite") ok = (s ~ /;sqlite3_step;/ && s ~ /;__libc_start_main/)
		  all += v[2]; good += ok * v[2] }
		END { if (all) printf "%.2f\n", 100 * good / all; else print 0 }'
}

# live_exact [ATTACH OPTION...]: alloc_live at --rate 1 --inuse on a small run
# (units of 17408 bytes, whole cycles of the block sizes: the target's totals
# are exact): each function's allocated and live bytes exactly.
live_exact() {
	# shellcheck disable=SC2086 # as in rate_one_exact
	profile_until_done live1 60 attach "--rate 1 --inuse $*" ${RUN_UNDER:-} "$TARGETS/alloc_live" \
		17408 || return 1
	by_leaf "$TMP/live1.pb.gz" 2 4 >"$TMP/est1"
	grep '^total ' "$TMP/live1.out" | while read -r _ fn alloc live; do
		got=$(awk -v f="$fn" '$1 == f { print $2 "/" $3 }' "$TMP/est1")
		[ "$got" = "$alloc/$live" ] || echo "$fn ${*:-sessions}: $alloc/$live, profile ${got:-none}"
	done >"$TMP/bad1"
	[ -s "$TMP/bad1" ] && fail "alloc/live inexact: $(tr '\n' ';' <"$TMP/bad1")"
	[ "$(grep -c '^total ' "$TMP/live1.out")" -eq 5 ] || fail "alloc_live did not report its 5 functions"
	return 0
}

# "path bytes" per span_path label ("(no-span)" without one), from column COL
by_span_path() {
	"$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' -v col="${2:-2}" '
		{ split($1, v, " "); p = "(no-span)"; n = split($3, l, ",")
		  for (i = 1; i <= n; i++) if (l[i] ~ /^span_path=/) p = substr(l[i], 11)
		  s[p] += v[col] }
		END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort
}

# compare each "total PATH BYTES" line of the target with the profile, within PCT %
check_paths() {
	name=$1
	pct=$2
	by_span_path "$TMP/$name.pb.gz" >"$TMP/$name.est"
	grep '^total ' "$TMP/$name.out" | while read -r _ path truth; do
		case "$path" in
		deep\*32) path=$(printf 'deep;%.0s' $(seq 32)); path=${path%;} ;;
		esac
		est=$(awk -v p="$path" '$1 == p { print $2 }' "$TMP/$name.est")
		if [ -z "$est" ]; then
			echo "no samples for span path '$path'"
		elif ! within_pct "$est" "$truth" "$pct"; then
			echo "$path: estimated $est, allocated $truth"
		fi
	done >"$TMP/$name.bad"
	[ -s "$TMP/$name.bad" ] && fail "$(tr '\n' ';' <"$TMP/$name.bad")"
	[ "$(grep -c '^total ' "$TMP/$name.out")" -gt 0 ] || fail "$name: the target reported nothing"
	return 0
}

# build_id FILE: its GNU build ID, as eu-readelf reads it
build_id() {
	eu-readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'
}

# runtime_addr PID PATH OFFSET: where file offset OFFSET of PATH's code is in PID
runtime_addr() {
	while read -r range perms moff _ _ path; do
		[ "$path" = "$2" ] || continue
		case "$perms" in *x*) ;; *) continue ;; esac
		start=$((0x${range%-*}))
		end=$((0x${range#*-}))
		o=$((0x$moff))
		if [ $(($3)) -ge "$o" ] && [ $(($3)) -lt $((o + end - start)) ]; then
			echo $((start + $3 - o))
			return 0
		fi
	done <"/proc/$1/maps"
	return 1
}

# first byte of code at ADDR in PID's memory, as two hex digits; dd seeks
# /proc/PID/mem to ADDR (a Python reader cost a second a byte on a loaded
# machine, and probe_offsets reads two a probe)
code_byte() {
	dd if="/proc/$1/mem" bs=1 skip="$(($2))" count=1 status=none | od -An -tx1 | tr -d ' \n'
}

# the byte at file offset OFFSET of FILE, as two hex digits
file_byte() {
	od -An -tx1 -j "$(($2))" -N1 "$1" | tr -d ' '
}

# the median of the numbers on stdin, one a line
median() {
	sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# |est - truth| <= tol_pct % of truth
within_pct() {
	awk -v e="$1" -v t="$2" -v p="$3" 'BEGIN {d = e - t; if (d < 0) d = -d; exit !(d <= t * p / 100)}'
}

# expect_error RC PATTERN CMD...: exit status RC and one stderr line "error: ..." matching PATTERN
expect_error() {
	want_rc=$1
	pattern=$2
	shift 2
	"$@" >"$TMP/err.out" 2>"$TMP/err.txt"
	rc=$?
	[ "$rc" -eq "$want_rc" ] || fail "'$*' exited $rc, want $want_rc"
	[ "$(grep -c '^error: ' "$TMP/err.txt")" -eq 1 ] ||
		fail "'$*': not one error line: $(cat "$TMP/err.txt")"
	grep -q -e "$pattern" "$TMP/err.txt" || fail "'$*': no '$pattern' in: $(cat "$TMP/err.txt")"
}

# plain ALLOCATOR CMD...: CMD over ALLOCATOR alone (glibc, jemalloc, mimalloc:
# the caller's $JEMALLOC and $MIMALLOC), nothing else preloaded
plain() {
	case "$1" in
	glibc) _pre= ;;
	jemalloc) _pre=$JEMALLOC ;;
	mimalloc) _pre=$MIMALLOC ;;
	esac
	shift
	LD_PRELOAD=$_pre "$@"
}
