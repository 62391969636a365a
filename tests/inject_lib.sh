# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Inject -> profile -> release cycles on real programs at work (docs/inject.md), shared by
# tests/bpf/test_inject.sh (a few cycles each) and tests/bench/bench_inject_soak.sh (100);
# sourced after tests/lib.sh.  Each program has PROG_start, which starts it at its work
# (tracked; its pid in $cyc_pid, the pid to inject into) and PROG_check, the program's own
# check of its work after the cycles (fail and 1 when it is off).

# rss_kib PID: its resident set, KiB
rss_kib() {
	awk '/^VmRSS/ { print $2 }' "/proc/$1/status"
}

# inj_times FILE: what culpert-bpf -v said of the injection and of the release in FILE:
# "MS HELD_MS LONGEST_US TRIPS" each (the whole of it, the borrowed thread's time running our
# calls, the longest stop of a thread looked at, the times the borrowed thread was resumed
# and waited for: "-" from a build that does not print them), the eight on one line
inj_times() {
	sed -n -e 's/.*injection: \(loaded\|reused\) libculpert-sampler.so in \([0-9.]*\) ms (.* held \([0-9.]*\) ms (\([0-9]*\) round trips), .* the longest \([0-9.]*\) us.*/\2 \3 \5 \4/p' \
		-e 's/.*injection: released in \([0-9.]*\) ms, thread [0-9]* held \([0-9.]*\) ms (\([0-9]*\) round trips), the longest stop \([0-9.]*\) us.*/\1 \2 \4 \3/p' \
		-e 's/.*injection: \(loaded\|reused\) libculpert-sampler.so in \([0-9.]*\) ms (.* held \([0-9.]*\) ms, .* the longest \([0-9.]*\) us.*/\2 \3 \4 -/p' \
		-e 's/.*injection: released in \([0-9.]*\) ms, thread [0-9]* held \([0-9.]*\) ms, the longest stop \([0-9.]*\) us.*/\1 \2 \3 -/p' \
		"$1" | paste -sd ' ' -
}

# trips_few FILE: the takeover and the release that reused the library in FILE (culpert-bpf
# -v) each took fewer than 20 round trips with the borrowed thread: 13 by design (the stop,
# the signal mask, the scratch mapping, the call, the hand-back), 16 for a call of 4 or more
# syscalls (measured on every program here), a few more for signals that stop it before its
# mask is set.  Stopping at each syscall of the library's call made 84 in redis (the mprotects
# of its objects' RELRO pages).  A build that does not print them ("-") passes.
trips_few() {
	inj_times "$1" | awk '{ exit !(($4 == "-" || $4 < 20) && ($8 == "-" || $8 < 20)) }'
}

# inject_cycles NAME PID CYCLES WORK [ATTACH OPTION...]: CYCLES of `attach --pid PID
# --sampler inject -v OPTION...` (a hang is ended after 120 s), each one released, with
# samples, the library reused after the first, and `WORK PID` (a count of the program's
# work) higher after the cycle than before it.  Then PID's RSS within 1 MiB of before the
# first cycle (docs/inject.md, "What it costs": the library, its state, the pages of files
# the first load touches).  Each cycle's inj_times in $TMP/NAME.lat.  1 and fail at the
# first miss.  With CYC_BPF="BUILD..." (culpert-bpf binaries), the cycles take turns with
# them, the first loading the library, and the Kth's (from 0) times go to $TMP/NAME.latK
# (no K for the first).
inject_cycles() {
	_cn=$1
	_cp=$2
	_cc=$3
	_cw=$4
	shift 4
	# shellcheck disable=SC2086
	set -- ${CYC_BPF:-$BIN_BPF} -- "$@"
	_cb=0
	while [ "$1" != -- ]; do
		eval "_cbin$_cb=\$1"
		[ $_cb -eq 0 ] && : >"$TMP/$_cn.lat" || : >"$TMP/$_cn.lat$_cb"
		_cb=$((_cb + 1))
		shift
	done
	shift
	_rss0=$(rss_kib "$_cp")
	_ci=0
	while [ $_ci -lt "$_cc" ]; do
		_w0=$("$_cw" "$_cp")
		_ck=$((_ci % _cb))
		eval "_cbin=\$_cbin$_ck"
		[ $_ck -eq 0 ] && _ck=""
		timeout 120 "$_cbin" attach --pid "$_cp" --sampler inject -v "$@" \
			-o "$TMP/$_cn.pb.gz" 2>"$TMP/$_cn.err" ||
			{ fail "$_cn cycle $_ci: $(grep -v libbpf "$TMP/$_cn.err" | tail -2)"; return 1; }
		_w1=$("$_cw" "$_cp")
		grep -q 'injection: released' "$TMP/$_cn.err" ||
			{ fail "$_cn cycle $_ci not released: $(tail -2 "$TMP/$_cn.err")"; return 1; }
		[ $_ci -eq 0 ] || grep -q 'injection: reused' "$TMP/$_cn.err" ||
			{ fail "$_cn cycle $_ci loaded the library again"; return 1; }
		grep -q 'wrote .* ([1-9][0-9]* samples' "$TMP/$_cn.err" ||
			{ fail "$_cn cycle $_ci: no samples: $(grep wrote "$TMP/$_cn.err")"; return 1; }
		[ "$_w1" -gt "$_w0" ] ||
			{ fail "$_cn cycle $_ci: no work done during it ($_w0, then $_w1)"; return 1; }
		inj_times "$TMP/$_cn.err" >>"$TMP/$_cn.lat$_ck"
		[ $_ci -eq 0 ] || trips_few "$TMP/$_cn.err" ||
			{ fail "$_cn cycle $_ci: $(inj_times "$TMP/$_cn.err" | cut -d' ' -f4,8) round trips"; return 1; }
		[ $_ci -eq 0 ] && _rss1=$(rss_kib "$_cp")
		_ci=$((_ci + 1))
	done
	_rssn=$(rss_kib "$_cp")
	cyc_mem="RSS $_rss0 -> $_rss1 after the first -> $_rssn KiB"
	echo "# $_cn, $_cc cycles: $cyc_mem" >&2
	[ $((_rssn - _rss0)) -lt 1024 ] ||
		{ fail "$_cn: RSS grew from $_rss0 to $_rssn KiB over $_cc cycles"; return 1; }
}

# program_cycles PROG CYCLES WORK [ATTACH OPTION...]: PROG_start, CYCLES inject_cycles on it,
# PROG_check
program_cycles() {
	_prog=$1
	shift
	"${_prog}_start" && inject_cycles "$_prog" "$cyc_pid" "$@" && "${_prog}_check"
}

# --- Debian's redis (jemalloc) under redis-benchmark: SET and GET over 10,000 keys in db 1
# (once they all exist, redis' heap stays put), 2,000 keys written before in db 0

rcli() { redis-cli -h 127.0.0.1 -p "$redis_port" "$@"; }

# redis_work PID: the commands redis has processed so far
redis_work() {
	rcli info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'
}

redis_start() {
	redis_serve || return 1
	cyc_pid=$target_pid
	seq 1 2000 | awk '{ print "SET k" $1 " v" $1 * 7 }' | rcli -n 0 >/dev/null
	redis-benchmark -h 127.0.0.1 -p "$redis_port" --dbnum 1 -l -q -c 4 -r 10000 \
		-t set,get >/dev/null 2>&1 &
	redis_bench=$!
	track "$redis_bench"
	redis_loaded() { [ "$(rcli -n 1 dbsize)" -ge 10000 ]; }
	wait_until 20 redis_loaded || { fail "redis-benchmark did not get going"; return 1; }
}

# the benchmark ran throughout, and the data set written before reads back identical
redis_check() {
	kill -0 "$redis_bench" || { fail "redis-benchmark stopped"; return 1; }
	_want=$(seq 1 2000 | awk '{ print "v" $1 * 7 }' | md5sum)
	# shellcheck disable=SC2046
	_got=$(rcli -n 0 mget $(seq 1 2000 | sed 's/^/k/') | md5sum)
	[ "$_got" = "$_want" ] || { fail "redis: the data set written before differs after"; return 1; }
}

# --- Debian's nginx: one master, one worker (the worker serves and allocates, the master
# only forks and watches it: the worker is injected), a 16 KiB file served on loopback to
# one curl fetching it over and over on one keep-alive connection, a line per response

nginx_start() {
	command -v nginx >/dev/null || { skip "nginx not installed (apt-get install nginx)"; return 1; }
	_ng=$TMP/nginx
	mkdir -p "$_ng/www"
	# the worker runs as nobody: the served file within its reach
	chmod 755 "$_ng" "$_ng/www"
	chmod o+x "$TMP"
	head -c 16384 /dev/urandom >"$_ng/www/blob"
	chmod 644 "$_ng/www/blob"
	nginx_port=$(free_port)
	cat >"$_ng/nginx.conf" <<-EOF
	daemon off;
	worker_processes 1;
	pid $_ng/nginx.pid;
	error_log $_ng/error.log info;
	events { worker_connections 64; }
	http {
		log_format st '\$status \$body_bytes_sent';
		access_log $_ng/access.log st;
		client_body_temp_path $_ng/body;
		proxy_temp_path $_ng/proxy;
		fastcgi_temp_path $_ng/fastcgi;
		uwsgi_temp_path $_ng/uwsgi;
		scgi_temp_path $_ng/scgi;
		server { listen 127.0.0.1:$nginx_port; root $_ng/www; }
	}
	EOF
	: >"$_ng/access.log"
	# a process group of its own, killed whole: a worker outlives its master's SIGKILL, and
	# one the master started in place of a dead one is not known here
	setsid nginx -p "$_ng" -c "$_ng/nginx.conf" -e "$_ng/error.log" 2>"$_ng/start.err" &
	nginx_master=$!
	track "-$nginx_master"
	nginx_worker() { cyc_pid=$(pgrep -P "$nginx_master" -f 'nginx: worker'); }
	wait_until 10 nginx_worker || { fail "nginx did not start: $(cat "$_ng/start.err")"; return 1; }
	[ "$(ps -o pgid= -p "$nginx_master" | tr -d ' ')" = "$nginx_master" ] ||
		{ fail "nginx is not in a process group of its own"; return 1; }
	# line-buffered: a response counted is a response curl got whole
	stdbuf -oL curl -s -o /dev/null -w '%{http_code} %{size_download}\n' \
		"http://127.0.0.1:$nginx_port/blob?[1-1000000000]" >"$_ng/client.out" &
	nginx_client=$!
	track "$nginx_client"
	wait_for "$_ng/client.out" . 10 || { fail "nginx serves nothing"; return 1; }
}

# nginx_work PID: the responses nginx has logged
nginx_work() {
	wc -l <"$TMP/nginx/access.log"
}

# the master untouched, the same worker (a crashed one is replaced by the master), every
# response curl got whole
# and right, and each one nginx logged sent whole (at most one more: curl is stopped here,
# perhaps between nginx's last write and its own line)
nginx_check() {
	_ng=$TMP/nginx
	grep -q libculpert-sampler "/proc/$nginx_master/maps" && { fail "nginx's master was injected"; return 1; }
	_was=$cyc_pid
	nginx_worker
	[ "$cyc_pid" = "$_was" ] ||
		{ fail "nginx's worker $_was was replaced by $cyc_pid: $(grep -v notice "$_ng/error.log" | tail -2)"; return 1; }
	kill "$nginx_client"
	wait "$nginx_client" 2>/dev/null
	_got=$(grep -c '^200 16384$' "$_ng/client.out")
	_bad=$(grep -v '^200 16384$' "$_ng/client.out" | grep -c .)
	[ "$_bad" -eq 0 ] || { fail "nginx: $_bad responses of $_got are not whole: $(grep -v '^200 16384$' "$_ng/client.out" | head -2 | tr '\n' ';')"; return 1; }
	nginx_logged() { [ "$(grep -c '^200 16384$' "$_ng/access.log")" -ge "$_got" ]; }
	wait_until 5 nginx_logged
	_sent=$(grep -c '^200 16384$' "$_ng/access.log")
	[ "$_sent" -ge "$_got" ] && [ "$_sent" -le $((_got + 1)) ] ||
		{ fail "nginx: curl got $_got responses, nginx logged $_sent"; return 1; }
	grep -q 'signal\|alert\|crit\|emerg' "$_ng/error.log" &&
		{ fail "nginx: $(grep 'signal\|alert\|crit\|emerg' "$_ng/error.log" | head -2)"; return 1; }
	return 0
}

# --- Debian's python3 building dicts of strings until told to stop, its checksum after

python_start() {
	cat >"$TMP/churn.py" <<-'PYEOF'
	import os, sys
	n = acc = 0
	while not os.path.exists(sys.argv[1]):
	    d = {i: str(i) * (i % 7 + 1) for i in range(2000)}
	    acc = (acc + sum(len(v) for v in d.values())) % 1000000007
	    n += 1
	    if n == 10:
	        print("running", flush=True)
	print(n, acc, flush=True)
	PYEOF
	rm -f "$TMP/churn.stop"
	: >"$TMP/py.out"
	start_program "$TMP/py.out" /usr/bin/python3 "$TMP/churn.py" "$TMP/churn.stop" || return 1
	cyc_pid=$prog_pid
	# its heap at the size its loop keeps, before the memory before the cycles is read
	wait_for "$TMP/py.out" running 20 || { fail "python3 does not run: $(cat "$TMP/py.out")"; return 1; }
}

# each round adds the same: the lengths of str(i) * (i % 7 + 1) for i < 2000
python_check() {
	touch "$TMP/churn.stop"
	wait "$cyc_pid" || { fail "python3 exited $?: $(tail -2 "$TMP/py.out")"; return 1; }
	/usr/bin/python3 -c 'import sys
n, acc = map(int, open(sys.argv[1]).read().split()[-2:])
one = sum(len(str(i) * (i % 7 + 1)) for i in range(2000))
sys.exit(0 if n > 0 and acc == n * one % 1000000007 else 1)' "$TMP/py.out" ||
		{ fail "python3's checksum is off: $(cat "$TMP/py.out")"; return 1; }
}

# --- 63 threads throwing through operator new (tests/targets/throw_threads.cc), 64 with
# the main one, which waits in sigwait; 1 ms between rounds: about half of what they do
# flat out, and the profiler not starved on a machine of two cores

throw_start() {
	start_target "$TMP/throw.out" "$TARGETS/throw_threads" 63 1000 || return 1
	cyc_pid=$target_pid
	[ "$(ls "/proc/$cyc_pid/task" | wc -l)" -eq 64 ] || { fail "throw_threads: not 64 threads"; return 1; }
}

# told_to_end NAME OUT PATTERN: SIGUSR1 to $cyc_pid, which ends its work and says on its way
# out how it went: exit status 0, and a line of OUT matching PATTERN
told_to_end() {
	kill -USR1 "$cyc_pid"
	wait "$cyc_pid" || { fail "$1 exited $?: $(tail -2 "$2")"; return 1; }
	grep -q "$3" "$2" || { fail "$1: $(tail -2 "$2" | tr '\n' ';')"; return 1; }
}

throw_check() {
	told_to_end throw_threads "$TMP/throw.out" '^workers 63 rounds [1-9][0-9]* caught [0-9]* failed 0$'
}

# --- a SIGALRM handler that allocates every 50 us (tests/targets/sampler_signal.c), over an
# allocator that blocks signals while it runs

signal_start() {
	LD_PRELOAD=$(realpath "$TARGETS/libsigmask_alloc.so") "$TARGETS/sampler_signal" 100000000 \
		>"$TMP/sig.out" 2>&1 &
	cyc_pid=$!
	track "$cyc_pid"
	wait_running "$cyc_pid" "$TARGETS/sampler_signal" 5 || { fail "sampler_signal did not start"; return 1; }
}

signal_check() {
	told_to_end sampler_signal "$TMP/sig.out" '^checks [1-9][0-9]* failed 0$'
}

# --- pid 1 of its own PID and mount namespaces (tests/targets/alloc_bound.c), the library's
# directory out of its reach under a tmpfs: the library goes in by memfd

ns_start() {
	command -v unshare >/dev/null || { skip "no unshare (util-linux)"; return 1; }
	_libdir=$(dirname "$(realpath "$BIN_BPF")")
	cp "$TARGETS/alloc_bound" "$TMP/ns_bound"
	# shellcheck disable=SC2016
	unshare -pmf --mount-proc sh -c 'mount -t tmpfs none "$1" && exec "$2" 200000 64 256' \
		sh "$_libdir" "$TMP/ns_bound" >"$TMP/ns.out" 2>&1 &
	track $!
	ns_pid1() {
		cyc_pid=$(pgrep -f "^$TMP/ns_bound") &&
			grep -q "^NSpid:.*[[:space:]]1$" "/proc/$cyc_pid/status"
	}
	wait_until 5 ns_pid1 || { fail "the namespaced target did not start: $(cat "$TMP/ns.out")"; return 1; }
	track "$cyc_pid"
	[ -e "/proc/$cyc_pid/root$_libdir/libculpert-sampler.so" ] &&
		{ fail "the library is in the namespaced target's reach"; return 1; }
	return 0
}

# samples from its ring_block (the last cycle's), and its own count of its work, asked for
# with SIGUSR1
ns_check() {
	by_leaf "$TMP/ns.pb.gz" 1 | grep -q '^ring_block [1-9]' ||
		{ fail "no sample in ring_block: $(by_leaf "$TMP/ns.pb.gz" 1 | tr '\n' ';')"; return 1; }
	_lines=$(wc -l <"$TMP/ns.out")
	kill -USR1 "$cyc_pid"
	wait_new_lines "$TMP/ns.out" "$_lines" 1 10 ||
		{ fail "the namespaced target does not answer: $(tail -2 "$TMP/ns.out")"; return 1; }
	tail -1 "$TMP/ns.out" | grep -q '^ops [1-9]' ||
		{ fail "the namespaced target did no work: $(tail -1 "$TMP/ns.out")"; return 1; }
}
