#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf agent, everything but profiles (docs/agent.md): processes
# picked up as the kernel execs and forks them (tracefs is not mounted in
# the suite's namespace) or by the /proc rescan, dropped after the grace
# period; every selector; container and pod attribution of processes in
# cgroups laid out as containerd, cri-o, docker and podman do, under the
# real cgroup v2 and v1 hierarchies; the Kubernetes API through a stand-in
# that checks the request; a real Prometheus scraping with and without a
# bearer token; promtool; authentication, malformed requests, slow
# clients; SIGTERM.
. tests/lib.sh

# Debian's python3: python3-prometheus-client is installed for it
PY=/usr/bin/python3
IDLE=$TARGETS/agent_idle
TAG=agt$$
CG2=/sys/fs/cgroup/unified/culpert-agent-test-$$
CG1=/sys/fs/cgroup/memory/culpert-agent-test-$$
AUTH=""

# the cgroups this file made: their processes killed, then removed leaf first
cg_cleanup() {
	for root in "$CG2" "$CG1"; do
		[ -d "$root" ] || continue
		find "$root" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
			kill -9 "$p" 2>/dev/null
		done
		sleep 0.2
		find "$root" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$root" ] && echo "warning: cannot remove $root" >&2
	done
}
trap 'cleanup_pids; cg_cleanup; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT

# agent_start NAME ARGS...: the agent on a free loopback port; sets $agent_pid and $agent_url
agent_start() {
	_n=$1
	shift
	: >"$TMP/$_n.err"
	"$BIN_BPF" agent --listen 127.0.0.1:0 "$@" 2>"$TMP/$_n.err" &
	agent_pid=$!
	track "$agent_pid"
	wait_for "$TMP/$_n.err" "agent listening on" 10 ||
		{ fail "agent did not start: $(head -c 600 "$TMP/$_n.err")"; return 1; }
	agent_url=$(sed -n 's/.*agent listening on \(http:[^ ]*\) .*/\1/p' "$TMP/$_n.err")
}

# agent_stop NAME: SIGTERM; exit status 0 within 5 s
agent_stop() {
	_t0=$(date +%s%N)
	kill -TERM "$agent_pid"
	wait "$agent_pid"
	_rc=$?
	_ms=$((($(date +%s%N) - _t0) / 1000000))
	[ "$_rc" -eq 0 ] || fail "agent exited $_rc on SIGTERM: $(tail -3 "$TMP/$1.err")"
	[ "$_ms" -lt 5000 ] || fail "agent took ${_ms} ms to stop on SIGTERM"
}

# get PATH: the body of a GET (with $AUTH's header when set)
get() {
	if [ -n "$AUTH" ]; then
		curl -s -H "Authorization: Bearer $AUTH" "$agent_url$1"
	else
		curl -s "$agent_url$1"
	fi
}

# status PATH [CURL ARGS]: the HTTP status of a GET
status() {
	_p=$1
	shift
	curl -s -o "$TMP/body" -w '%{http_code}' "$@" "$agent_url$_p"
}

# field PID NAME: NAME of target PID in /targets (the live one first); "-" if not listed
field() {
	get /targets | $PY -c 'import json, sys
d = json.load(sys.stdin)
t = sorted((x for x in d["targets"] if x["pid"] == int(sys.argv[1])), key=lambda x: x["state"] != "live")
print("-" if not t else "null" if t[0][sys.argv[2]] is None else t[0][sys.argv[2]])' "$1" "$2"
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

# idle NAME [ARGS...]: a copy of agent_idle named NAME (so its comm is NAME); sets $idle_pid
idle() {
	_n=$1
	shift
	[ -x "$TMP/$_n" ] || cp "$IDLE" "$TMP/$_n"
	start_target "$TMP/$_n.out" "$TMP/$_n" "$@" || return 1
	idle_pid=$target_pid
}

test_bad_usage() {
	expect_error 2 "no --select given" "$BIN_BPF" agent
	expect_error 2 "--listen 0.0.0.0:7790 is not a loopback address: .*needs --token-file" \
		"$BIN_BPF" agent --select comm=x --listen 0.0.0.0:7790
	expect_error 2 "--listen \[::\]:7790 is not a loopback address" \
		"$BIN_BPF" agent --select comm=x --listen '[::]:7790'
	expect_error 2 "invalid --listen 'localhost:1': use ADDR:PORT with a numeric address" \
		"$BIN_BPF" agent --select comm=x --listen localhost:1
	expect_error 2 "invalid --select 'colour=red'" "$BIN_BPF" agent --select colour=red
	expect_error 2 "invalid --select 'pod=shop': use pod=NAMESPACE/NAME" \
		"$BIN_BPF" agent --select pod=shop
	expect_error 2 "invalid --max-overhead '200'" "$BIN_BPF" agent --select comm=x --max-overhead 200
	expect_error 2 "invalid --labels 'some': use span or all" \
		"$BIN_BPF" agent --select comm=x --labels some
	expect_error 2 "invalid --rate 'lots'" "$BIN_BPF" agent --select comm=x --rate lots
	expect_error 2 "--interval and --keep set how snapshots are written: they need --snapshot-dir" \
		"$BIN_BPF" agent --select comm=x --interval 5s
	expect_error 2 "cannot write snapshots to --snapshot-dir $TMP/none: No such file" \
		"$BIN_BPF" agent --select comm=x --snapshot-dir "$TMP/none"
	need_root || return
	printf '' >"$TMP/empty.tok"
	expect_error 1 "--token-file $TMP/empty.tok must hold one token" \
		"$BIN_BPF" agent --select comm=x --token-file "$TMP/empty.tok"
	expect_error 1 "--kube-api lists the pods of this node only, and NODE_NAME is not set" \
		env -u NODE_NAME "$BIN_BPF" agent --select comm=x --kube-api=https://127.0.0.1:1
	# the port taken by another server
	agent_start busy --select "comm=$TAG-none" || return
	expect_error 1 "--listen ${agent_url#http://}: cannot listen there: Address already in use" \
		"$BIN_BPF" agent --select comm=x --listen "${agent_url#http://}"
	agent_stop busy
}

# Started after the agent, with the rescan an hour away: the kernel's exec and
# fork events are what picks them up; an exit is seen at once, the target kept
# for --keep-exited, then dropped.  -v logs each step.
test_pick_up_and_drop() {
	need_root || return
	idle "${TAG}b" || return
	before=$idle_pid
	agent_start pick -v --select "comm=${TAG}[abc]" --rescan 1h --keep-exited 2s || return
	[ "$(field "$before" state)" = live ] || fail "a process older than the agent is not listed"
	idle "${TAG}a" || return
	execd=$idle_pid
	wait_field "$execd" state live 2 || fail "pid $execd (exec'd after the agent) not picked up"
	idle "${TAG}c" --forks 2 || return
	parent=$idle_pid
	wait_for "$TMP/${TAG}c.out" '^child' 2
	kids=$(sed -n 's/^child //p' "$TMP/${TAG}c.out")
	for k in $kids; do
		track "$k"
		wait_field "$k" state live 2 || fail "forked child $k of target $parent not picked up"
	done
	[ "$(echo "$kids" | wc -w)" -eq 2 ] || fail "the target did not fork 2 children: $kids"
	grep -q "picked up pid $execd (${TAG}a) $TMP/${TAG}a, no container: --select comm=" \
		"$TMP/pick.err" || fail "-v: no pick-up line for $execd: $(cat "$TMP/pick.err")"
	kill "$execd"
	wait "$execd" 2>/dev/null
	wait_field "$execd" state exited 1 || fail "exit of $execd not seen within 1 s"
	[ "$(field "$execd" exit_reason)" = exited ] || fail "exit_reason $(field "$execd" exit_reason)"
	sleep 1
	[ "$(field "$execd" state)" = exited ] || fail "exited target dropped before --keep-exited 2s"
	wait_field "$execd" state - 3 || fail "exited target still listed 4 s after its exit"
	grep -q "pid $execd (${TAG}a) exited; its data is kept for --keep-exited 2" "$TMP/pick.err" ||
		fail "-v: no exit line"
	grep -q "dropped pid $execd (${TAG}a): exited 2" "$TMP/pick.err" || fail "-v: no drop line"
	# pids from the kernel carry the process's identity: another process is another target
	[ "$(get /metrics | sed -n 's/^culpert_agent_targets_picked_up_total //p')" -ge 5 ] ||
		fail "picked_up_total below the 5 targets"
	for k in $kids; do kill "$k"; done
	agent_stop pick
}

# A process the events cannot show matching (its comm is changed after the
# exec) is found by the /proc rescan, and only by it.
test_rescan() {
	need_root || return
	agent_start lazy --select "comm=${TAG}new" --rescan 1h || return
	idle "${TAG}old" --rename "${TAG}new" || return
	slow=$idle_pid
	wait_for "$TMP/${TAG}old.out" renamed 2 || fail "the target did not rename itself"
	sleep 1
	[ "$(field "$slow" state)" = - ] || fail "a renamed process picked up without a rescan"
	agent_stop lazy
	agent_start rescan --select "comm=${TAG}new" --rescan 1s || return
	kill "$slow"
	idle "${TAG}old" --rename "${TAG}new" || return
	wait_field "$idle_pid" state live 3 || fail "the rescan did not pick up the renamed pid"
	[ "$(get /metrics | sed -n 's/^culpert_agent_rescans_total //p')" -ge 2 ] ||
		fail "rescans_total below 2"
	agent_stop rescan
}

# exe=, pid= and usdt (span probes or otel_memory probes in a mapped object)
test_selectors_process() {
	need_root || return
	mkdir -p "$TMP/in" "$TMP/out"
	cp "$IDLE" "$TMP/in/${TAG}x"
	cp "$IDLE" "$TMP/out/${TAG}x"
	start_target "$TMP/in.out" "$TMP/in/${TAG}x" || return
	inside=$target_pid
	start_target "$TMP/out.out" "$TMP/out/${TAG}x" || return
	outside=$target_pid
	agent_start exe --select "exe=$TMP/in/*" || return
	[ "$(field "$inside" exe)" = "$TMP/in/${TAG}x" ] || fail "exe=: $inside not listed"
	[ "$(field "$outside" state)" = - ] || fail "exe=: $outside listed"
	agent_stop exe
	agent_start pid --select "pid=$outside" || return
	[ "$(field "$outside" state)" = live ] && [ "$(field "$inside" state)" = - ] ||
		fail "pid=$outside: $(get /targets | tr -d ' \n' | head -c 300)"
	agent_stop pid
	start_target "$TMP/sdt.out" "$TARGETS/sdt_otel" || return
	otel=$target_pid
	start_target "$TMP/span.out" "$TARGETS/span_abc" || return
	span=$target_pid
	agent_start usdt --select usdt || return
	[ "$(field "$otel" state)" = live ] || fail "usdt: otel_memory probes of $otel not seen"
	[ "$(field "$span" state)" = live ] || fail "usdt: culpert span probes of $span not seen"
	[ "$(field "$inside" state)" = - ] || fail "usdt: a process without probes listed"
	agent_stop usdt
}

hex64() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
uuid() { $PY -c 'import uuid; print(uuid.uuid4())'; }

# The layouts (name, cgroup directory, runtime, pod uid, namespace, pod, container):
# cgroup v2 with systemd's driver, cgroup v1 (the memory hierarchy) with cgroupfs'.
# Each process joins its cgroup and then execs, as a runtime's init does, so
# the agent sees it at exec time already inside.
make_layouts() {
	U1=$(uuid) U2=$(uuid) U5=$(uuid) U6=$(uuid)
	I1=$(hex64) I2=$(hex64) I3=$(hex64) I4=$(hex64) I5=$(hex64) I6=$(hex64) I7=$(hex64)
	I8=$(hex64)
	u_() { echo "$1" | tr - _; }
	cat >"$TMP/layouts" <<EOL
cd-v2 $CG2/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$(u_ "$U1").slice/cri-containerd-$I1.scope containerd $I1 $U1 shop cart-a app
crio-v2 $CG2/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod$(u_ "$U2").slice/crio-$I2.scope cri-o $I2 $U2 shop web-b nginx
docker-v2 $CG2/system.slice/docker-$I3.scope docker $I3 - - - -
podman-v2 $CG2/machine.slice/libpod-$I4.scope/container podman $I4 - - - -
cd-v1 $CG1/kubepods/burstable/pod$U5/$I5 containerd $I5 $U5 batch job-e worker
crio-v1 $CG1/kubepods/besteffort/pod$U6/crio-$I6 cri-o $I6 $U6 batch cron-f task
docker-v1 $CG1/docker/$I7 docker $I7 - - - -
podman-v1 $CG1/libpod_parent/libpod-$I8 podman $I8 - - - -
EOL
	# the kubelet's directories: the names of pod and container, as --pods-log-dir reads them
	L=$TMP/logs
	mkdir -p "$L/containers"
	while read -r _ _ _ id uid ns pod ctr; do
		[ "$uid" = - ] && continue
		mkdir -p "$L/pods/${ns}_${pod}_$uid/$ctr"
		: >"$L/pods/${ns}_${pod}_$uid/$ctr/0.log"
		# cart-a's pod has a second container: only the symlink says which one is ours
		[ "$pod" = web-b ] && mkdir -p "$L/pods/${ns}_${pod}_$uid/sidecar"
		# job-e has no symlink: its pod's only container directory names it
		[ "$pod" = job-e ] && continue
		ln -s "$L/pods/${ns}_${pod}_$uid/$ctr/0.log" "$L/containers/${pod}_${ns}_$ctr-$id.log"
	done <"$TMP/layouts"
}

# start_in NAME CGROUP-DIR: a copy of agent_idle that joins the cgroup, then execs; sets $idle_pid
start_in() {
	cp "$IDLE" "$TMP/attr/$1"
	mkdir -p "$2" || { fail "cannot create cgroup $2"; return 1; }
	# shellcheck disable=SC2016 # $$ and $1.. are the inner shell's
	start_target "$TMP/$1.out" sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2"' sh "$2" \
		"$TMP/attr/$1" || return 1
	idle_pid=$target_pid
}

start_layouts() {
	mkdir -p "$TMP/attr"
	while read -r name dir _; do
		start_in "$name" "$dir" || return 1
		eval "pid_$(echo "$name" | tr - _)=$idle_pid"
	done <"$TMP/layouts"
	cp "$IDLE" "$TMP/attr/bare"
	start_target "$TMP/bare.out" "$TMP/attr/bare" || return 1
	pid_bare=$target_pid
}

pid_of() { eval "echo \$pid_$(echo "$1" | tr - _)"; }

# every layout's fields in /targets, as the layout says; the bare process has none
check_targets() {
	get /targets >"$TMP/targets.json"
	$PY - "$TMP/targets.json" "$TMP/layouts" "$pid_bare" "$@" <<'EOF' >"$TMP/attr.bad" ||
import json, sys
d = {t['pid']: t for t in json.load(open(sys.argv[1]))['targets'] if t['state'] == 'live'}
bare = int(sys.argv[3])
pids = dict(a.split('=') for a in sys.argv[4:])
bad = []
for line in open(sys.argv[2]):
    name, cg, rt, cid, uid, ns, pod, ctr = line.split()
    t = d.get(int(pids[name]))
    if t is None:
        bad.append('%s: pid %s not listed' % (name, pids[name]))
        continue
    want = {'runtime': rt, 'container_id': cid, 'pod_uid': None if uid == '-' else uid,
            'pod_namespace': None if ns == '-' else ns, 'pod_name': None if pod == '-' else pod,
            'container_name': None if ctr == '-' else ctr,
            'service_name': None if ns == '-' else ns + '/' + ctr}
    for k, v in want.items():
        if t[k] != v:
            bad.append('%s: %s %r, want %r' % (name, k, t[k], v))
    if not cg.endswith(t['cgroup']):
        bad.append('%s: cgroup %s, not the end of %s' % (name, t['cgroup'], cg))
b = d.get(bare)
if b is None:
    bad.append('the process outside containers is not listed')
elif any(b[k] is not None for k in ('runtime', 'container_id', 'pod_uid', 'pod_name',
                                      'pod_namespace', 'container_name', 'service_name')):
    bad.append('the process outside containers has container fields: %s' % b)
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
		fail "/targets: $(cat "$TMP/attr.bad")"
}

# the same in /metrics: culpert_target_info and the memory picture's labels
check_metrics() {
	get /metrics >"$TMP/attr.prom"
	while read -r name _ rt id _ ns pod ctr; do
		p=$(pid_of "$name")
		[ "$ns" = - ] && ns="" pod="" ctr=""
		grep -q "^culpert_target_info{pid=\"$p\",comm=\"$name\",container_id=\"$id\",container=\"$ctr\",namespace=\"$ns\",pod=\"$pod\",.*runtime=\"$rt\"," "$TMP/attr.prom" ||
			fail "/metrics: no culpert_target_info for $name with its container and pod"
		grep -q "^culpert_process_rss_bytes{pid=\"$p\",comm=\"$name\",container_id=\"$id\",container=\"$ctr\",namespace=\"$ns\",pod=\"$pod\"} [1-9]" "$TMP/attr.prom" ||
			fail "/metrics: no culpert_process_rss_bytes for $name with its container and pod"
	done <"$TMP/layouts"
	grep -q "^culpert_process_rss_bytes{pid=\"$pid_bare\",comm=\"bare\",container_id=\"\",container=\"\",namespace=\"\",pod=\"\"} [1-9]" "$TMP/attr.prom" ||
		fail "/metrics: the process outside containers has no memory picture"
	$PY tests/tools/promcheck.py pid comm container_id container namespace pod \
		<"$TMP/attr.prom" >"$TMP/pc" || fail "promcheck: $(head -3 "$TMP/pc")"
	promtool check metrics <"$TMP/attr.prom" >"$TMP/pt" 2>&1 || fail "promtool: $(head -3 "$TMP/pt")"
}

layout_pids() {
	while read -r name _; do echo "$name=$(pid_of "$name")"; done <"$TMP/layouts"
}

test_attribution() {
	need_root || return
	[ -d /sys/fs/cgroup/unified ] && [ -d /sys/fs/cgroup/memory ] ||
		{ fail "this test wants the hybrid layout: cgroup v2 at /sys/fs/cgroup/unified and v1 memory"; return; }
	make_layouts
	# the agent first: every process is seen when it execs inside its cgroup
	agent_start attr -v --select "exe=$TMP/attr/*" --rescan 1h --pods-log-dir "$TMP/logs/pods" ||
		return
	start_layouts || return
	sleep 0.5
	# shellcheck disable=SC2046 # one word per layout
	check_targets $(layout_pids)
	check_metrics
	grep -q "picked up pid $pid_cd_v2 (cd-v2) $TMP/attr/cd-v2, containerd container $(echo "$I1" | cut -c1-12) (app) of pod shop/cart-a" \
		"$TMP/attr.err" || fail "-v: no pick-up line with the container and pod: $(grep cd-v2 "$TMP/attr.err")"
	agent_stop attr
	# the selectors on container and pod, with the processes already there
	sel_only "cgroup=/culpert-agent-test-$$/system.slice" docker-v2
	sel_only "cgroup=/culpert-agent-test-$$/kubepods" cd-v1 crio-v1
	sel_only "container=$(echo "$I4" | cut -c1-12)" podman-v2
	sel_only "pod=shop/cart-a" cd-v2
	sel_only "namespace=batch" cd-v1 crio-v1
	sel_only "container-name=nginx" crio-v2
}

# sel_only SELECTOR NAME...: an agent with that selector lists exactly these layouts' processes
sel_only() {
	_sel=$1
	shift
	agent_start sel --select "$_sel" --pods-log-dir "$TMP/logs/pods" || return
	get /targets >"$TMP/sel.json"
	while read -r name _; do
		p=$(pid_of "$name")
		want=no
		for w in "$@"; do [ "$w" = "$name" ] && want=yes; done
		got=$($PY -c 'import json, sys
print("yes" if any(t["pid"] == int(sys.argv[2]) for t in json.load(open(sys.argv[1]))["targets"]) else "no")' \
			"$TMP/sel.json" "$p")
		[ "$got" = "$want" ] || fail "--select $_sel: $name (pid $p) listed: $got, want $want"
	done <"$TMP/layouts"
	agent_stop sel
}

run_test agent/bad_usage test_bad_usage
run_test agent/pick_up_and_drop test_pick_up_and_drop
run_test agent/rescan test_rescan
run_test agent/selectors_process test_selectors_process
run_test agent/attribution test_attribution
