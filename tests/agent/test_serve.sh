#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The agent's serving (docs/agent.md, "Serving"): keep-alive and pipelined
# requests; /healthz answered within 1 s under 300 slow connections from 20
# loopback addresses and under 10 concurrent heap scrapes of a target of
# 131072 stacks; a scrape loop loses no sample (the BPF side's count of
# records lost for a full ring buffer stays 0 while heaps are scraped flat
# out, on a ring buffer small enough to overflow if intake waited for them),
# and at --rate 1 the profile holds every call a program made while /metrics
# and its heap were scraped in loops.
. tests/lib.sh
. tests/agent_lib.sh
AGENT_ARGS="--max-overhead 0"

FAN=$OUTPUT/tests/bench/stack_fan

# probes SECONDS OUT: GET /healthz from 127.0.0.1 every 0.2 s for SECONDS, a fresh
# connection each; one line per probe in OUT: its status ("none" if unanswered) and time
probes() {
	$PY - "${agent_url#http://}" "$1" >"$2" <<'EOF'
import socket, sys, time
host, port = sys.argv[1].rsplit(':', 1)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    t0 = time.time()
    status = 'none'
    try:
        s = socket.create_connection((host, int(port)), timeout=1)
        s.settimeout(max(0.01, 1 - (time.time() - t0)))
        s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
        data = b''
        while b'\r\n' not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        status = data.split(b' ')[1].decode() if data.startswith(b'HTTP/') else 'closed'
        s.close()
    except (OSError, IndexError):
        pass
    print(status, '%.3f' % (time.time() - t0), flush=True)
    time.sleep(max(0, 0.2 - (time.time() - t0)))
EOF
}

# all_answered OUT WHAT: every probe of OUT a 200 within 1 s
all_answered() {
	n=$(wc -l <"$1")
	bad=$(awk '$1 != 200 || $2 >= 1' "$1" | wc -l)
	[ "$n" -gt 10 ] || { fail "$2: only $n probes ran"; return 1; }
	[ "$bad" = 0 ] || { fail "$2: $bad of $n health probes not answered 200 within 1 s: $(awk '$1 != 200 || $2 >= 1' "$1" | sort | uniq -c | head -5 | tr '\n' ' ')"; return 1; }
	echo "# $2: $n probes, slowest $(sort -k2 -g "$1" | tail -1 | cut -d' ' -f2) s"
}

# Three requests written at once on one connection: three answers, and the
# connection still open for a fourth (curl reuses it).
test_keep_alive() {
	need_root || return
	agent_start ka --select "comm=none$$" || return
	got=$($PY - "${agent_url#http://}" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' * 2 + b'GET /targets HTTP/1.1\r\nHost: x\r\n\r\n')
data = b''
try:
    while data.count(b'HTTP/1.1 200') < 3:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    pass
print(data.count(b'HTTP/1.1 200'), b'Connection: close' in data)
EOF
)
	[ "$got" = "3 False" ] || fail "three pipelined requests: $got (answers, and Connection: close said)"
	curl -sv -o /dev/null -o /dev/null "$agent_url/healthz" "$agent_url/metrics" 2>"$TMP/ka.v"
	grep -q "Re-using existing connection" "$TMP/ka.v" ||
		fail "curl did not reuse the connection: $(grep -i -e '^< connection' -e closing "$TMP/ka.v" | head -3)"
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null
}

# 300 connections from 127.0.0.2..21 (15 each) that send a request head one
# byte a second: never idle, never done.  Health probes from 127.0.0.1 get
# in (a slow connection makes room) and are answered within 1 s.
test_slow_clients() {
	need_root || return
	agent_start slow --select "comm=none$$" || return
	$PY - "${agent_url#http://}" "$TMP/slow.ready" "$TMP/slow.out" <<'EOF' &
import socket, sys, time
host, port = sys.argv[1].rsplit(':', 1)
head = b'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'a' * 4096
socks, opened, cut = [], 0, 0
def connect(i):
    global opened
    try:
        s = socket.create_connection((host, int(port)), timeout=1,
                                     source_address=('127.0.0.%d' % (2 + i % 20), 0))
        s.setblocking(False)
        opened += 1
        return [s, 0, i]
    except OSError:
        return None
for i in range(300):
    c = connect(i)
    if c:
        socks.append(c)
open(sys.argv[2], 'w').write('ready %d\n' % opened)
end = time.time() + 25
while time.time() < end:
    for c in list(socks):
        try:
            c[0].send(head[c[1]:c[1] + 1])
            c[1] += 1
        except BlockingIOError:
            pass
        except OSError:
            # cut: come back, as an attacker would
            cut += 1
            socks.remove(c)
            n = connect(c[2])
            if n:
                socks.append(n)
    time.sleep(1)
open(sys.argv[3], 'w').write('opened %d cut %d\n' % (opened, cut))
EOF
	slow=$!
	track $slow
	wait_for "$TMP/slow.ready" ready 30 || { fail "the slow clients did not connect"; return; }
	probes 15 "$TMP/slow.probes"
	all_answered "$TMP/slow.probes" "300 slow connections"
	wait "$slow"
	echo "# slow clients: $(cat "$TMP/slow.ready") $(cat "$TMP/slow.out" 2>/dev/null)"
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null
}

# scrapers N URL SECONDS OUT: N loops of GETs of URL for SECONDS, from 127.0.0.2..,
# one line per scrape in OUT: "http_code time_total"
scrapers() {
	_k=0
	_sp=""
	while [ $_k -lt "$1" ]; do
		(
			_end=$(($(date +%s) + $3))
			while [ "$(date +%s)" -lt $_end ]; do
				curl -s -o /dev/null --interface "127.0.0.$((2 + _k))" \
					-w '%{http_code} %{time_total}\n' "$2" >>"$4"
			done
		) &
		track $!
		_sp="$_sp $!"
		_k=$((_k + 1))
	done
}

# heap_over BYTES: the heap profile of $target_pid, decompressed, is over BYTES
heap_over() {
	[ "$(curl -s "$agent_url/debug/pprof/heap?pid=$target_pid" | gzip -dc | wc -c)" -gt "$1" ]
}

# samples: the samples $target_pid has had; samples_past N: at least N of them
samples() { metric culpert_target_samples_total "$target_pid"; }
samples_past() { [ "$(samples)" -ge "$1" ] 2>/dev/null; }

# A target of 131072 stacks (64 KiB blocks at --rate 65536: 63% of the calls sampled,
# a sweep every 2 s, ~40k samples a second) on a 4 MiB ring buffer: lost samples
# without scraping (there must be none, else this says nothing), then with 10
# scrapers of its heap: still none, every probe answered within 1 s, and the scrapes
# themselves answered (by fewer encodings than scrapes: those that come during one
# share it).
test_scrape_storm() {
	need_root || return
	copy_fan="$TMP/fan$$"
	cp "$FAN" "$copy_fan"
	start_target "$TMP/fan.out" "$copy_fan" 65536 2 17 || return
	agent_start storm --select "pid=$target_pid" --rate 65536 --max-stacks 131072 \
		--ringbuf-size 4MiB -vv || return
	wait_field "$target_pid" probes attached 20 || { fail "probes $(field "$target_pid" probes)"; return; }
	wait_for "$TMP/fan.out" swept 60 || { fail "stack_fan did not sweep"; return; }
	# the stacks in: the aggregate's entries reach 100k within a few sweeps
	wait_until 60 heap_over 4000000 || { fail "the heap profile stays small"; return; }
	l0=$(metric culpert_target_lost_samples_total "$target_pid")
	s0=$(metric culpert_target_samples_total "$target_pid")
	# a window of 200000 samples, about 5 s of the target's
	wait_until 120 samples_past $((s0 + 200000)) ||
		{ fail "fewer than 200000 samples in 120 s: $s0 -> $(samples)"; return; }
	l1=$(metric culpert_target_lost_samples_total "$target_pid")
	s1=$(metric culpert_target_samples_total "$target_pid")
	[ "$l1" = "$l0" ] || { skip "samples lost without scraping ($l0 -> $l1): the machine is too busy for this test"; return; }
	: >"$TMP/scrapes"
	scrapers 10 "$agent_url/debug/pprof/heap?pid=$target_pid" 15 "$TMP/scrapes"
	probes 15 "$TMP/storm.probes"
	# shellcheck disable=SC2086 # a list of pids
	wait $_sp
	l2=$(metric culpert_target_lost_samples_total "$target_pid")
	s2=$(metric culpert_target_samples_total "$target_pid")
	all_answered "$TMP/storm.probes" "10 scrapers of a 131072-stack heap"
	ok=$(awk '$1 == 200' "$TMP/scrapes" | wc -l)
	[ "$ok" -gt 0 ] || fail "no scrape answered: $(sort "$TMP/scrapes" | uniq -c | head -3)"
	[ "$l2" = "$l1" ] || fail "samples lost while scraped: $l1 -> $l2 (samples $s1 -> $s2)"
	[ "$s2" -gt "$s1" ] || fail "no sample taken in while scraped: $s1 -> $s2"
	echo "# storm: $ok heaps served ($(awk '$1 != 200' "$TMP/scrapes" | wc -l) not), p50 $(awk '$1 == 200 { print $2 }' "$TMP/scrapes" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }') s; $(grep -c 'profile of pid' "$TMP/storm.err") encodings; samples $s0 -> $s1 -> $s2, lost $l2"
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null
	kill "$target_pid"
}

# A scrape loop loses no sample, counted exactly: at --rate 1 (no stack rate then)
# every call is a sample, so the allocs profile of tests/targets/alloc_phases
# (20000 back-to-back malloc(1 MiB)/free pairs in fast(), then 10000 paced ones in
# slow()) holds each function's calls and bytes as the program counted them, while
# 4 loops of /metrics and 4 of its heap ran all along; the BPF side lost none.
test_scrape_loop_exact() {
	need_root || return
	copy "phases$$" "$TARGETS/alloc_phases"
	start_target "$TMP/ph.out" "$TMP/phases$$" 20000 10000 100000 || return
	agent_start exact --select "pid=$target_pid" --rate 1 \
		--ringbuf-size 64MiB || return
	wait_field "$target_pid" probes attached 20 || { fail "probes $(field "$target_pid" probes)"; return; }
	: >"$TMP/loop.scrapes"
	scrapers 4 "$agent_url/metrics" 600 "$TMP/loop.scrapes"
	sp=$_sp
	scrapers 4 "$agent_url/debug/pprof/heap?pid=$target_pid" 600 "$TMP/loop.scrapes"
	sp="$sp $_sp"
	kill -USR1 "$target_pid"
	wait_for "$TMP/ph.out" "^total slow" 300 || fail "alloc_phases did not finish"
	# shellcheck disable=SC2086 # a list of pids
	kill $sp
	# shellcheck disable=SC2086
	wait $sp 2>/dev/null
	answered=$(awk '$1 == 200' "$TMP/loop.scrapes" | wc -l)
	[ "$answered" -ge 8 ] || fail "only $answered scrapes answered during the run"
	wait_field "$target_pid" state exited 20 || fail "state $(field "$target_pid" state)"
	pprof_raw "/debug/pprof/allocs?pid=$target_pid" "$TMP/loop.raw" || return
	for fn in fast slow; do
		want=$(awk -v f=$fn '$1 == "total" && $2 == f { print $3, $4 }' "$TMP/ph.out")
		got="$($RAW alloc_space <"$TMP/loop.raw" | awk -v f=$fn '$1 == f { print $2 }')"
		got="$got $($RAW alloc_objects <"$TMP/loop.raw" | awk -v f=$fn '$1 == f { print $2 }')"
		[ "$got" = "$want" ] || fail "$fn: the profile has $got (bytes calls), the program made $want"
	done
	grep -q '^Comment: .*lost_samples=[1-9]' "$TMP/loop.raw" &&
		fail "the profile says samples were lost: $(grep -o 'lost_samples=[0-9]*' "$TMP/loop.raw")"
	echo "# scrape loop: $answered scrapes answered ($(grep -c . "$TMP/loop.scrapes") in all) while $(awk '$1 == "total" { n += $4 } END { print n }' "$TMP/ph.out") calls were sampled"
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null
}

# A heap of 65536 stacks served whole and exact: stack_fan's one sweep (after
# SIGUSR1, its probes attached) calls leaf() through 65536 paths, fan_a() and fan_b()
# choosing the bits of i, and leaf() allocates 512 bytes each time.  At --rate 1
# every call is a sample: the heap's samples through leaf() are those 65536 paths,
# each i once, each 1 allocation of 512 bytes (alloc_objects and alloc_space), as
# go tool pprof reads them.  The encoding's time is the bench's (make bench,
# BENCH=agent), not asserted here.
test_heap_fan_exact() {
	need_root || return
	copy "fanx$$" "$FAN"
	start_target "$TMP/fx.out" "$TMP/fanx$$" 512 100000 16 usr1 || return
	agent_start fanx -vv --select "pid=$target_pid" --rate 1 --max-stacks 65536 \
		--ringbuf-size 64MiB || return
	wait_field "$target_pid" probes attached 20 || { fail "probes $(field "$target_pid" probes)"; return; }
	kill -USR1 "$target_pid"
	wait_for "$TMP/fx.out" swept 120 || { fail "stack_fan did not sweep"; return; }
	# the sweep's 65536 samples taken in
	fan_samples() {
		[ "$(get /metrics | awk -v p="pid=\"$target_pid\"" \
			'index($0, "culpert_target_samples_total{") == 1 && index($0, p) { print $NF }')" \
			-ge 65536 ] 2>/dev/null
	}
	wait_until 120 fan_samples || { fail "the samples of the sweep did not all come"; return; }
	pprof_raw "/debug/pprof/heap?pid=$target_pid" "$TMP/fx.raw" || return
	for t in alloc_objects alloc_space; do
		$RAW --stacks $t <"$TMP/fx.raw" >"$TMP/fx.$t" || { fail "pprof_raw.py --stacks $t"; return; }
	done
	verdict=$($PY - "$TMP/fx.alloc_objects" "$TMP/fx.alloc_space" <<'EOF'
import sys
def paths(name):
    got = {}
    for line in open(name):
        value, stack = line.split(' ', 1)
        frames = stack.strip().split(';')
        if 'leaf' not in frames:
            continue
        fans = frames[frames.index('leaf') + 1:][:17]
        # leaf's caller is the deepest level (bit 15 of i); the root is fan_a(i, 16)
        if len(fans) != 17 or fans[16] != 'fan_a' or set(fans) - {'fan_a', 'fan_b'}:
            return 'a stack through leaf without its 17 fan frames: %s' % stack.strip()[:300]
        i = sum((f == 'fan_b') << (15 - k) for k, f in enumerate(fans[:16]))
        got[i] = got.get(i, 0) + int(value)
    return got
objs, space = paths(sys.argv[1]), paths(sys.argv[2])
for got in (objs, space):
    if isinstance(got, str):
        print(got)
        sys.exit(0)
missing = [i for i in range(65536) if i not in objs]
wrong = [i for i in objs if objs[i] != 1 or space.get(i) != 512]
print('ok' if not missing and not wrong and len(objs) == 65536 else
      '%d paths, %d missing (e.g. %s), %d not 1 x 512 bytes (e.g. %s)' %
      (len(objs), len(missing), missing[:3], len(wrong),
       [(i, objs[i], space.get(i)) for i in wrong[:3]]))
EOF
)
	[ "$verdict" = ok ] || fail "the heap of 65536 stacks: $verdict"
	echo "# $(grep 'profile of pid' "$TMP/fanx.err" | tail -1 | sed 's/.*: //')"
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null
	kill "$target_pid"
}

run_test agent/serve/keep_alive test_keep_alive
run_test agent/serve/slow_clients test_slow_clients
run_test agent/serve/scrape_storm test_scrape_storm
run_test agent/serve/scrape_loop_exact test_scrape_loop_exact
run_test agent/serve/heap_fan_exact test_heap_fan_exact
