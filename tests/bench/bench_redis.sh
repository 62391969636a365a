#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What attach costs Debian's redis-server (jemalloc, libjemalloc2) per
# request.  redis-benchmark (SET, GET, LPUSH) against one redis on
# loopback, round after round: unprofiled, under `attach`, under `attach
# --inuse` (free and sdallocx probed too), and both again with the
# sampler injected (`--sampler inject`: no trap on the allocator, the
# library's own sampling; docs/inject.md), interleaved so that a loaded
# machine weighs on every mode alike.  The cost is redis' own CPU time
# (utime + stime of /proc/PID/stat: the probes' traps run in its
# context), per request; each figure is the median of BENCH_RUNS rounds.
# BENCH_BASE_BPF=PATH adds a sixth mode: `attach --inuse` of another
# build (an earlier commit's culpert-bpf) in the same rounds.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-5}
REQS=${BENCH_REQS:-100000}
PORT=${BENCH_REDIS_PORT:-16399}

[ "$(id -u)" = 0 ] || { echo "bench_redis: needs root"; exit 1; }
for b in redis-server redis-benchmark redis-cli; do
	command -v "$b" >/dev/null ||
		{ echo "bench_redis: no $b (apt-get install redis-server redis-tools)"; exit 1; }
done

redis-server --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no --daemonize no \
	>"$TMP/redis.log" 2>&1 &
redis=$!
track "$redis"
i=0
until redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { echo "bench_redis: redis did not start: $(cat "$TMP/redis.log")"; exit 1; }
	kill -0 "$redis" 2>/dev/null ||
		{ echo "bench_redis: redis exited: $(cat "$TMP/redis.log")"; exit 1; }
	sleep 0.1
done

# redis' CPU time so far, in clock ticks (fields 14 and 15, after the parenthesised name)
cpu_ticks() {
	sed 's/.*) //' "/proc/$redis/stat" | awk '{ print $12 + $13 }'
}

# one round in MODE (none | attach | inuse): prints redis' CPU microseconds per request
run_once() {
	a=""
	case "$1" in
	attach) attach_bg "$TMP/a.err" --pid "$redis" -o "$TMP/r.pb.gz" || return 1 ;;
	inuse) attach_bg "$TMP/a.err" --pid "$redis" --inuse -o "$TMP/r.pb.gz" || return 1 ;;
	inject) attach_bg "$TMP/a.err" --pid "$redis" --sampler inject \
		-o "$TMP/r.pb.gz" || return 1 ;;
	inject_inuse) attach_bg "$TMP/a.err" --pid "$redis" --sampler inject --inuse \
		-o "$TMP/r.pb.gz" || return 1 ;;
	base) BIN_BPF=$BENCH_BASE_BPF attach_bg "$TMP/a.err" --pid "$redis" --inuse \
		-o "$TMP/r.pb.gz" || return 1 ;;
	esac
	[ "$1" = none ] || a=$attach_pid
	before=$(cpu_ticks)
	redis-benchmark -h 127.0.0.1 -p "$PORT" -t set,get,lpush -n "$REQS" -c 10 -q \
		>"$TMP/rb.out" 2>&1 ||
		{ echo "bench_redis: redis-benchmark: $(cat "$TMP/rb.out")" >&2; return 1; }
	after=$(cpu_ticks)
	if [ -n "$a" ]; then
		kill -INT "$a"
		wait "$a"
	fi
	awk -v b="$before" -v a="$after" -v hz="$(getconf CLK_TCK)" -v n="$((3 * REQS))" \
		'BEGIN { printf "%.3f\n", (a - b) / hz * 1e6 / n }'
}

echo "redis-benchmark -t set,get,lpush -n $REQS -c 10 against" \
	"$(redis-server --version | cut -d' ' -f1-3), $RUNS rounds each, interleaved"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN_BPF" probes --pid "$redis" --inuse | grep -E '^  (malloc|free|sdallocx|calloc|realloc) ' |
	sed 's/ (symbol.*//'
modes="none attach inuse inject inject_inuse"
[ -n "${BENCH_BASE_BPF:-}" ] && modes="$modes base"
# shellcheck disable=SC2086
interleave "$RUNS" $modes
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
none=$(median <"$TMP/none")
for m in $modes; do
	case "$m" in
	none) what="unprofiled" ;;
	attach) what="attach" ;;
	inuse) what="attach --inuse" ;;
	inject) what="attach, injected" ;;
	inject_inuse) what="attach --inuse, injected" ;;
	base) what="attach --inuse (base)" ;;
	esac
	awk -v n="$none" -v v="$(median <"$TMP/$m")" -v w="$what" \
		'BEGIN { printf "  %-24s %8.2f us CPU per request  (%.2fx)\n", w, v, v / n }'
done
for m in $modes; do
	echo "  rounds of $m (us/request): $(tr '\n' ' ' <"$TMP/$m")"
done
