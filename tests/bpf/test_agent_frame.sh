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
. tests/agent_lib.sh

IDLE=$TARGETS/agent_idle
TAG=agt$$
# the hierarchies as mounted: cgroup v2 (at /sys/fs/cgroup/unified on this hybrid
# host), and the v1 one of the memory controller.  Without v1 (a pure v2 host) the
# cgroupfs layouts go under v2 too: the paths are the same, only the choice of
# /proc/PID/cgroup's v1 line is then not exercised.
mount_of() {
	awk -v t="$1" -v o="$2" '{ for (i = 1; i <= NF; i++) if ($i == "-") break
		if ($(i + 1) == t && (o == "" || index($(i + 3), o))) { print $5; exit } }' /proc/self/mountinfo
}
V2=$(mount_of cgroup2 "")
V1=$(mount_of cgroup memory)
CG2=${V2:-/nonexistent}/culpert-agent-test-$$
CG1=${V1:-${V2:-/nonexistent}}/culpert-agent-test-$$-v1
AUTH=""

# the cgroups this file made: their processes killed, then removed leaf first
cg_cleanup() {
	for root in "$CG2" "$CG1"; do
		[ -d "$root" ] || continue
		find "$root" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
			kill -9 "$p" 2>/dev/null
		done
		# a cgroup is removed once its last process is gone
		_i=0
		while [ -n "$(find "$root" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] &&
			[ $_i -lt 50 ]; do
			_i=$((_i + 1))
			sleep 0.1
		done
		find "$root" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$root" ] && echo "warning: cannot remove $root" >&2
	done
}
trap 'cleanup_pids; cg_cleanup; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT

# agent_stop NAME: SIGTERM; exit status 0 within 1 s of the agent's own CPU
# (its wall time follows the machine's load: printed, not judged)
agent_stop() {
	stop_agent TERM
	[ "$rc" -eq 0 ] || fail "agent exited $rc on SIGTERM: $(tail -3 "$TMP/$1.err")"
	[ "$took_cpu" -lt 1000 ] ||
		fail "agent took $took_cpu ms of CPU ($took ms of wall time) to stop on SIGTERM"
}

# status PATH [CURL ARGS]: the HTTP status of a GET
status() {
	_p=$1
	shift
	curl -s -o "$TMP/body" -w '%{http_code}' "$@" "$agent_url$_p"
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
	expect_error 2 "no --select or --inject given" "$BIN_BPF" agent
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
	expect_error 2 "invalid --max-overhead '-1': use a number >= 0" \
		"$BIN_BPF" agent --select comm=x --max-overhead -1
	expect_error 2 "invalid --max-overhead '1x'" "$BIN_BPF" agent --select comm=x --max-overhead 1x
	expect_error 2 "invalid --duty-period '500ms': use a duration of 1.0s or more, such as 2.0s" \
		"$BIN_BPF" agent --select comm=x --duty-period 500ms
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

# The collection options are attach's: the same ranges and error lines, and
# the same help line for each, one option a line
test_collect_options() {
	for opt in "--rate 0" "--max-depth 200" "--unwind x" "--stack-size 1" "--ringbuf-size 1" \
		"--max-live 0" "--max-span-fns 0" "--sampler x" "--inuse x"; do
		# shellcheck disable=SC2086
		a=$("$BIN_BPF" attach --pid 1 $opt 2>&1 | sed 's/attach --help/CMD --help/')
		# shellcheck disable=SC2086
		g=$("$BIN_BPF" agent --select comm=x $opt 2>&1 | sed 's/agent --help/CMD --help/')
		[ -n "$a" ] && [ "$a" = "$g" ] || fail "$opt: attach says '$a', the agent '$g'"
	done
	"$BIN_BPF" attach --help >"$TMP/attach.help" || fail "attach --help failed"
	"$BIN_BPF" agent --help >"$TMP/agent.help" || fail "agent --help failed"
	for opt in rate max-depth inuse max-live unwind stack-size allocator span-fn max-span-fns \
		symbolize no-symbolize ringbuf-size sampler no-multi no-session; do
		a=$(grep -e "^      --$opt " "$TMP/attach.help" | sed 's/  */ /g')
		g=$(grep -e "^      --$opt " "$TMP/agent.help" | sed 's/  */ /g')
		[ -n "$a" ] && [ "$a" = "$g" ] || fail "--$opt: attach's help '$a', the agent's '$g'"
	done
}

# keep_then_drop PID MS: the exited target PID is listed until MS (its
# --keep-exited) after the exit time /targets gives, then dropped.  Each
# look is timed on the clock /targets writes: "still there" at the start of
# a look bounds the drop from below, "gone" at the end of one from above, so
# the verdict holds however late the looks come on a loaded machine.
keep_then_drop() {
	_ex=$(field "$1" exited)
	_exms=$(date -d "$_ex" +%s%3N 2>/dev/null) || { fail "pid $1: exited '$_ex'"; return 1; }
	_i=0
	_seen=""
	while :; do
		_t0=$(date +%s%3N)
		_st=$(field "$1" state)
		_t1=$(date +%s%3N)
		[ "$_st" = exited ] || break
		_seen=$_t0
		_i=$((_i + 1))
		[ $_i -gt 300 ] && { fail "exited target still listed 30 s after its exit"; return 1; }
		sleep 0.1
	done
	[ "$_st" = - ] || { fail "exited target pid $1 in state $_st"; return 1; }
	[ -n "$_seen" ] || { fail "exited target pid $1 gone at the first look"; return 1; }
	# /targets gives milliseconds, truncated
	[ "$_t1" -ge $((_exms + $2)) ] ||
		fail "exited target dropped within $((_t1 - _exms)) ms of its exit, under --keep-exited"
	echo "  pid $1: listed $((_seen - _exms)) ms after its exit, gone by $((_t1 - _exms)) ms"
}

# Started after the agent, with the rescan an hour away: the kernel's exec and
# fork events are what picks them up; an exit is seen at once, the target kept
# for --keep-exited, then dropped.  -v logs each step.
test_pick_up_and_drop() {
	need_root || return
	idle "${TAG}b" || return
	before=$idle_pid
	agent_start pick -v --select "comm=${TAG}[abcef]" --rescan 1h --keep-exited 2s || return
	[ "$(field "$before" state)" = live ] || fail "a process older than the agent is not listed"
	idle "${TAG}a" || return
	execd=$idle_pid
	wait_field "$execd" state live 2 || fail "pid $execd (exec'd after the agent) not picked up"
	# children forked once the parent is a target: fork events; forked before
	# the agent got to the exec (it is stopped meanwhile, so they surely
	# are): the children list read at pick-up
	kids=""
	for how in --forks-later --forks; do
		[ "$how" = --forks ] && kill -STOP "$agent_pid"
		idle "${TAG}c" "$how" 2 || return
		wait_count "$TMP/${TAG}c.out" '^child' 2 3
		kill -CONT "$agent_pid"
		these=$(sed -n 's/^child //p' "$TMP/${TAG}c.out")
		[ "$(echo "$these" | wc -w)" -eq 2 ] || fail "$how: the target did not fork 2 children"
		for k in $these; do
			track "$k"
			wait_field "$k" state live 2 || fail "$how: child $k of target $idle_pid not picked up"
		done
		kids="$kids $these"
	done
	# a target that execs another program: the old one exited ("exec'd"), the new one live
	cp "$IDLE" "$TMP/${TAG}f"
	idle "${TAG}e" --exec "$TMP/${TAG}f" || return
	wait_field "$idle_pid" comm "${TAG}f" 3 || fail "the exec'd program is not a live target"
	get /targets | $PY -c 'import json, sys
t = [x for x in json.load(sys.stdin)["targets"] if x["pid"] == int(sys.argv[1])]
sys.exit(0 if sorted((x["comm"], x["state"], x["exit_reason"]) for x in t) ==
         sorted([(sys.argv[2] + "e", "exited", "exec\x27d"), (sys.argv[2] + "f", "live", None)]) else 1)' \
		"$idle_pid" "$TAG" || fail "exec: $(get /targets | tr -d ' \n' | head -c 600)"
	grep -q "picked up pid $execd (${TAG}a) $TMP/${TAG}a, no container: --select comm=" \
		"$TMP/pick.err" || fail "-v: no pick-up line for $execd: $(cat "$TMP/pick.err")"
	kill "$execd"
	wait "$execd" 2>/dev/null
	wait_field "$execd" state exited 1 || fail "exit of $execd not seen within 1 s"
	[ "$(field "$execd" exit_reason)" = exited ] || fail "exit_reason $(field "$execd" exit_reason)"
	keep_then_drop "$execd" 2000
	grep -q "pid $execd (${TAG}a) exited; its data is kept for --keep-exited 2" "$TMP/pick.err" ||
		fail "-v: no exit line"
	grep -q "dropped pid $execd (${TAG}a): exited 2" "$TMP/pick.err" || fail "-v: no drop line"
	# pids from the kernel carry the process's identity: another process is another target
	[ "$(get /metrics | sed -n 's/^culpert_agent_targets_picked_up_total //p')" -ge 10 ] ||
		fail "picked_up_total below the 10 targets"
	[ "$(get /metrics | sed -n 's/^culpert_agent_discovery_events_total{kind="fork"} //p')" -ge 2 ] ||
		fail "fewer than 2 fork events counted"
	# live and exited targets of one pid: still one series each
	get /metrics | $PY tests/tools/promcheck.py pid comm >"$TMP/pc" ||
		fail "promcheck with exited targets: $(head -3 "$TMP/pc")"
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
	# a process exec'd under the selected name after the rename: once it is
	# picked up, the agent has read the events that came before it
	idle "${TAG}new" || return
	wait_field "$idle_pid" state live 5 || fail "pid $idle_pid (exec'd as ${TAG}new) not picked up"
	[ "$(field "$slow" state)" = - ] || fail "a renamed process picked up without a rescan"
	kill "$idle_pid"
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
		grep -q "^culpert_target_info{pid=\"$p\",comm=\"$name\",container_id=\"$id\",container=\"$ctr\",namespace=\"$ns\",pod=\"$pod\",state=\"live\",.*runtime=\"$rt\"," "$TMP/attr.prom" ||
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
	[ -n "$V2" ] || { fail "no cgroup v2 hierarchy is mounted"; return; }
	[ -n "$V1" ] || echo "  no cgroup v1 memory hierarchy: the cgroupfs layouts go under v2"
	make_layouts
	# the agent first: every process is seen when it execs inside its cgroup
	agent_start attr -v --select "exe=$TMP/attr/*" --rescan 1h --pods-log-dir "$TMP/logs/pods" ||
		return
	start_layouts || return
	for lp in "bare=$pid_bare" $(layout_pids); do
		wait_field "${lp#*=}" state live 5 || fail "${lp%%=*}: pid ${lp#*=} not picked up"
	done
	# shellcheck disable=SC2046 # one word per layout
	check_targets $(layout_pids)
	check_metrics
	grep -q "picked up pid $pid_cd_v2 (cd-v2) $TMP/attr/cd-v2, containerd container $(echo "$I1" | cut -c1-12) (app) of pod shop/cart-a" \
		"$TMP/attr.err" || fail "-v: no pick-up line with the container and pod: $(grep cd-v2 "$TMP/attr.err")"
	agent_stop attr
	# the selectors on container and pod, with the processes already there
	sel_only "cgroup=/culpert-agent-test-$$/system.slice" docker-v2
	sel_only "cgroup=/culpert-agent-test-$$-v1/kubepods" cd-v1 crio-v1
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

# start_kube_standin TOKEN: the stand-in API server with a fresh certificate; sets $kube_url
start_kube_standin() {
	mkdir -p "$TMP/sa"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/kube.key" -out "$TMP/sa/ca.crt" \
		>/dev/null 2>&1 || { fail "openssl cannot make a certificate"; return 1; }
	printf '%s\n' "$1" >"$TMP/sa/token"
	rm -f "$TMP/kube.port"
	$PY tests/tools/kube_standin.py "$TMP/kube.port" "$TMP/sa/ca.crt" "$TMP/kube.key" "$1" \
		node-a "$TMP/podlist.json" "$TMP/kube.log" &
	track $!
	wait_for "$TMP/kube.port" . 10 || { fail "the API stand-in did not start"; return 1; }
	kube_url=https://127.0.0.1:$(cat "$TMP/kube.port")
}

write_podlist() {
	cat >"$TMP/podlist.json" <<EOL
{"kind": "PodList", "apiVersion": "v1", "items": [
 {"metadata": {"name": "cart-a-api", "namespace": "shop", "uid": "$U1",
   "annotations": {"pyroscope.io/service_name": "cart"}},
  "spec": {"nodeName": "node-a"},
  "status": {"containerStatuses": [{"name": "app", "containerID": "containerd://$I1"}]}},
 {"metadata": {"name": "cron-f-api", "namespace": "batch", "uid": "$U6"},
  "spec": {"nodeName": "node-a"},
  "status": {"containerStatuses": [{"name": "task", "containerID": "cri-o://$I6"}]}}]}
EOL
}

# --kube-api: names from the API (the log directories are empty here), the
# request as the API server wants it, pod= matching once the list is in;
# and a refused request: a warning, and no names.
test_kube_api() {
	need_root || return
	make_layouts
	start_layouts || return
	write_podlist
	token=tok-$$-$(hex64 | cut -c1-16)
	start_kube_standin "$token" || return
	mkdir -p "$TMP/nopods"
	NODE_NAME=node-a agent_start kube --select "pod=shop/cart-a-api" --kube-api="$kube_url" \
		--kube-sa-dir "$TMP/sa" --pods-log-dir "$TMP/nopods" || return
	p=$(pid_of cd-v2)
	wait_field "$p" pod_name cart-a-api 5 || fail "pod=shop/cart-a-api: not picked up from the API's list"
	[ "$(field "$p" service_name)" = cart ] || fail "service_name $(field "$p" service_name), want the annotation's"
	[ "$(field "$p" container_name)" = app ] || fail "container_name $(field "$p" container_name)"
	[ "$(field "$(pid_of crio-v1)" state)" = - ] || fail "a process of another pod selected"
	grep -qx "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a Bearer $token ok" "$TMP/kube.log" ||
		fail "the API got: $(head -3 "$TMP/kube.log")"
	grep -v ' ok$' "$TMP/kube.log" | grep -q . && fail "refused requests: $(grep -v ' ok$' "$TMP/kube.log")"
	get /metrics | grep -qx 'culpert_agent_kube_api_pods 2' || fail "kube_api_pods is not 2"
	agent_stop kube
	NODE_NAME=node-a agent_start kube2 --select "exe=$TMP/attr/*" --kube-api="$kube_url" \
		--kube-sa-dir "$TMP/sa" --pods-log-dir "$TMP/nopods" || return
	p=$(pid_of crio-v1)
	wait_field "$p" pod_name cron-f-api 5 || fail "crio-v1: pod_name $(field "$p" pod_name)"
	[ "$(field "$p" service_name)" = batch/task ] || fail "service_name $(field "$p" service_name)"
	[ "$(field "$p" runtime)" = cri-o ] || fail "runtime $(field "$p" runtime)"
	[ "$(field "$(pid_of docker-v2)" pod_name)" = null ] || fail "docker-v2 has a pod"
	agent_stop kube2
	# a token the API server refuses: a warning naming the answer, and no names
	printf 'wrong\n' >"$TMP/sa/token"
	NODE_NAME=node-a agent_start kube3 --select "exe=$TMP/attr/*" --kube-api="$kube_url" \
		--kube-sa-dir "$TMP/sa" --pods-log-dir "$TMP/nopods" || return
	wait_for "$TMP/kube3.err" "Kubernetes API: cannot list the pods of node node-a" 5 ||
		fail "no warning for a refused list: $(cat "$TMP/kube3.err")"
	grep -q "it answered HTTP 403" "$TMP/kube3.err" || fail "the warning does not say 403"
	[ "$(field "$(pid_of cd-v2)" pod_name)" = null ] || fail "names without an answer"
	agent_stop kube3
	expect_error 1 "--kube-api: cannot read $TMP/none/token" env NODE_NAME=node-a \
		"$BIN_BPF" agent --select comm=x --kube-api="$kube_url" --kube-sa-dir "$TMP/none"
}

# A real Prometheus (Debian's) scrapes two agents over loopback, one open and
# one behind a bearer token, and a third job with a wrong token; its query API
# answers with the culpert_* series of both, and the refused scrapes are
# counted by the agent.
test_prometheus() {
	need_root || return
	idle "${TAG}p" || return
	watched=$idle_pid
	agent_start open --select "comm=${TAG}p" || return
	open_url=$agent_url
	open_pid=$agent_pid
	hex64 >"$TMP/token"
	chmod 600 "$TMP/token"
	printf 'not-the-token\n' >"$TMP/wrong"
	agent_start closed --select "comm=${TAG}p" --token-file "$TMP/token" || return
	[ "$(status /metrics)" = 401 ] || fail "/metrics without the token: $(status /metrics)"
	cat >"$TMP/prom.yml" <<EOL
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: open
    static_configs: [{targets: ['${open_url#http://}']}]
  - job_name: closed
    authorization: {credentials_file: '$TMP/token'}
    static_configs: [{targets: ['${agent_url#http://}']}]
  - job_name: wrong
    authorization: {credentials_file: '$TMP/wrong'}
    static_configs: [{targets: ['${agent_url#http://}']}]
EOL
	prom_start "$TMP/prom.yml" || return
	i=0
	until [ "$(prom_query "culpert_process_rss_bytes{pid=\"$watched\"}")" = 2 ] &&
		[ "$(prom_query 'up{job="wrong"} == 0')" = 1 ]; do
		i=$((i + 1))
		[ $i -gt 60 ] && { fail "Prometheus has not scraped both agents in 30 s: $(tail -3 "$TMP/prom.log")"; break; }
		sleep 0.5
	done
	for job in open closed; do
		[ "$(prom_query "up{job=\"$job\"} == 1")" = 1 ] || fail "job $job is not up"
		[ "$(prom_query "culpert_agent_targets{job=\"$job\",state=\"live\"} == 1")" = 1 ] ||
			fail "job $job: no culpert_agent_targets series of one live target"
		[ "$(prom_query "culpert_target_info{job=\"$job\",pid=\"$watched\"}")" = 1 ] ||
			fail "job $job: no culpert_target_info of pid $watched"
	done
	[ "$(prom_query 'culpert_agent_auth_failures_total{job="closed"} > 0')" = 1 ] ||
		fail "the wrong token's scrapes are not counted as auth failures"
	AUTH=$(cat "$TMP/token")
	fails=$(get /metrics | sed -n 's/^culpert_agent_auth_failures_total //p')
	[ "$(status /targets -H 'Authorization: Bearer wrong')" = 401 ] || fail "a wrong token is let in"
	grep -q '"error": "missing or wrong bearer token' "$TMP/body" || fail "401 body: $(cat "$TMP/body")"
	[ "$(status /targets -H "Authorization: bearer $AUTH")" = 200 ] || fail "the scheme is case-insensitive"
	[ "$(status /healthz)" = 200 ] || fail "/healthz needs no token (the kubelet's probes)"
	now=$(get /metrics | sed -n 's/^culpert_agent_auth_failures_total //p')
	# between the two reads Prometheus's wrong job may have been refused too
	[ "$now" -gt "$fails" ] || fail "auth failures $fails, then $now after a wrong token"
	get /metrics | promtool check metrics >"$TMP/pt" 2>&1 || fail "promtool: $(head -3 "$TMP/pt")"
	AUTH=""
	agent_stop closed
	agent_pid=$open_pid
	agent_stop open
}

# raw REQUEST-FILE: what the agent answers a request written byte for byte; the status line
raw() {
	$PY - "${agent_url#http://}" "$1" <<'EOF'
import socket, sys
host, port = sys.argv[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(open(sys.argv[2], 'rb').read())
data = b''
try:
    while b'\r\n' not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except (socket.timeout, ConnectionResetError):
    pass
print(data.split(b'\r\n')[0].decode(errors='replace') or 'closed')
EOF
}

# Bad requests get a 4xx and the agent keeps serving; a client that sends
# half a request holds only its own connection: the profiling thread goes on
# (a process started meanwhile is picked up) and SIGTERM still ends it at once.
test_malformed() {
	need_root || return
	agent_start bad --select "comm=${TAG}m" || return
	# a request line libmicrohttpd cannot split into method and URI: it closes the
	# connection without an answer (docs/agent.md); all the others get a 4xx
	printf 'GARBAGE\r\n\r\n' >"$TMP/r0"
	[ "$(raw "$TMP/r0")" = closed ] || fail "a request line without a URI: '$(raw "$TMP/r0")'"
	printf 'GET / FOO/1.1\r\n\r\n' >"$TMP/r1"
	printf 'GET /targets HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n' "$(head -c 40000 /dev/zero | tr '\0' a)" >"$TMP/r2"
	printf 'GET /%s HTTP/1.1\r\nHost: x\r\n\r\n' "$(head -c 40000 /dev/zero | tr '\0' a)" >"$TMP/r3"
	printf 'GET /targets HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n' >"$TMP/r4"
	for r in r1 r2 r3 r4; do
		line=$(raw "$TMP/$r")
		case "$line" in
		"HTTP/1."[01]" 4"*) ;;
		*) fail "$r: '$line', want a 4xx" ;;
		esac
		[ "$(status /healthz)" = 200 ] || fail "not serving after $r"
	done
	[ "$(status /nowhere)" = 404 ] || fail "unknown path: $(status /nowhere)"
	[ "$(status /targets -X POST -d x=1)" = 405 ] || fail "POST: $(status /targets -X POST)"
	[ "$(status '/debug/pprof/heap?pid=abc')" = 400 ] || fail "pid=abc: $(cat "$TMP/body")"
	[ "$(status '/debug/pprof/heap?pid=1&seconds=-5')" = 400 ] || fail "seconds=-5"
	[ "$(status '/debug/pprof/heap')" = 400 ] || fail "no target named"
	[ "$(status '/debug/pprof/allocs?pid=999999999')" = 404 ] || fail "unknown pid"
	grep -q '"candidates"' "$TMP/body" || fail "404 without candidates: $(cat "$TMP/body")"
	idle "${TAG}m" || return
	m1=$idle_pid
	wait_field "$m1" state live 2 || fail "$m1 not picked up"
	# an idle target's profiles are served (tests/agent/test_collector.sh checks real ones);
	# picked up at its exec, before libc is mapped, it is planned again until it is
	wait_field "$m1" probes attached 10 || fail "probes of $m1: $(field "$m1" probes)"
	[ "$(status "/debug/pprof/heap?pid=$m1")" = 200 ] || fail "profile of $m1: $(cat "$TMP/body")"
	go tool pprof -raw "$TMP/body" >"$TMP/m1.raw" 2>&1 || fail "heap of $m1: $(head -2 "$TMP/m1.raw")"
	[ "$(status "/debug/pprof/allocs?comm=${TAG}m&seconds=1")" = 200 ] || fail "allocs by comm"
	# slow clients: connections that never finish their request
	$PY - "${agent_url#http://}" "$TMP/slow.ready" <<'EOF' &
import socket, sys, time
host, port = sys.argv[1].rsplit(':', 1)
socks = []
for i in range(8):
    s = socket.create_connection((host, int(port)))
    s.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\n')
    socks.append(s)
open(sys.argv[2], 'w').write('ready\n')
time.sleep(30)
EOF
	track $!
	wait_for "$TMP/slow.ready" ready 5 || fail "the slow clients did not connect"
	idle "${TAG}m" || return
	m2=$idle_pid
	t0=$(date +%s%N)
	wait_field "$m2" state live 2 || fail "a process started while clients stall is not picked up"
	[ "$(status /healthz)" = 200 ] || fail "/healthz with slow clients connected"
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -lt 2000 ] || fail "answers took ${ms} ms with slow clients connected"
	get /metrics | grep -q 'culpert_agent_http_requests_total{path="other",code="404"} 1' ||
		fail "the 404 is not counted under path=\"other\""
	agent_stop bad
}

# The limits: 16 connections per client address (the 17th is closed at once,
# another address still served), a connection that sends no complete request
# closed after the 10 s idle timeout.
test_limits() {
	need_root || return
	agent_start lim --select "comm=${TAG}l" || return
	$PY - "${agent_url#http://}" "$agent_pid" >"$TMP/lim.out" 2>&1 <<'EOF'
import os, socket, sys, time
host, port = sys.argv[1].rsplit(':', 1)
port = int(port)
def sockets():
    fd = '/proc/%s/fd' % sys.argv[2]
    n = 0
    for f in os.listdir(fd):
        try:
            n += os.readlink(os.path.join(fd, f)).startswith('socket:')
        except OSError:
            pass
    return n
base = sockets()
held = []
for i in range(16):
    s = socket.create_connection((host, port))
    s.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\n')
    held.append(s)
opened = time.time()
# the 16 accepted (the agent holds a socket for each), not just queued
for i in range(200):
    if sockets() >= base + 16:
        break
    time.sleep(0.05)
else:
    print('16 connections not accepted in 10 s')
extra = socket.create_connection((host, port), timeout=3)
extra.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
try:
    got = extra.recv(100)
except ConnectionResetError:
    got = b''
except socket.timeout:
    got = b'timeout'
print('17th:', got.split(b'\r\n')[0].decode() or 'closed')
other = socket.create_connection((host, port), timeout=3, source_address=('127.0.0.2', 0))
other.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
print('other address:', other.recv(100).split(b'\r\n')[0].decode())
for s in held:
    s.settimeout(20)
    try:
        s.recv(100)
    except (socket.timeout, ConnectionResetError):
        pass
print('idle closed after: %.1f' % (time.time() - opened))
EOF
	grep -qx '17th: closed' "$TMP/lim.out" || fail "the 17th connection of one address: $(cat "$TMP/lim.out")"
	grep -qx 'other address: HTTP/1.1 200 OK' "$TMP/lim.out" ||
		fail "another address not served: $(cat "$TMP/lim.out")"
	after=$(sed -n 's/^idle closed after: //p' "$TMP/lim.out")
	awk -v t="$after" 'BEGIN { exit !(t >= 9 && t <= 13) }' ||
		fail "idle connections closed after ${after:-?} s, want the 10 s timeout"
	st=$(status /healthz)
	[ "$st" = 200 ] || fail "not serving after the limits: $st $(cat "$TMP/body")"
	agent_stop lim
}

# SIGINT as SIGTERM: exit 0 within 5 s, "stopping" said; SIGKILL: the target runs on
# and the kernel removes the agent's BPF programs
test_signals() {
	need_root || return
	agent_start sig --select "comm=${TAG}s" || return
	t0=$(date +%s%N)
	kill -INT "$agent_pid"
	wait "$agent_pid"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$rc" -eq 0 ] && [ "$ms" -lt 5000 ] || fail "SIGINT: exit $rc after ${ms} ms"
	grep -q "Interrupt: agent stopping" "$TMP/sig.err" || fail "no stopping line: $(cat "$TMP/sig.err")"
	# SIGKILL: the kernel removes the agent's BPF programs with its last fd; its target runs on
	idle "${TAG}s" || return
	agent_start kill --select "comm=${TAG}s" || return
	[ "$(field "$idle_pid" state)" = live ] || fail "the target is not listed"
	ids=$(cat /proc/"$agent_pid"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | sort -u)
	names=$(for id in $ids; do bpftool prog show id "$id" | sed -n 's/.* name \([^ ]*\) .*/\1/p'; done |
		sort | tr '\n' ' ')
	# discovery's programs, and the collector's shared object (alloc_enter among them)
	case "$names" in
	*"alloc_enter "*"discover_entry discover_exec discover_exit discover_fork"*) ;;
	*) fail "the agent holds BPF programs '$names', want discover_entry/exec/exit/fork and the collector's" ;;
	esac
	kill -KILL "$agent_pid"
	wait "$agent_pid" 2>/dev/null
	kill -0 "$idle_pid" || fail "the target died with the agent"
	for id in $ids; do
		i=0
		while bpftool prog show id "$id" >/dev/null 2>&1 && [ $i -lt 20 ]; do i=$((i + 1)); sleep 0.1; done
		bpftool prog show id "$id" >/dev/null 2>&1 && fail "BPF program $id of the killed agent remains"
	done
	return 0
}

run_test agent/bad_usage test_bad_usage
run_test agent/collect_options test_collect_options
run_test agent/pick_up_and_drop test_pick_up_and_drop
run_test agent/rescan test_rescan
run_test agent/selectors_process test_selectors_process
run_test agent/attribution test_attribution
run_test agent/kube_api test_kube_api
run_test agent/prometheus test_prometheus
run_test agent/malformed test_malformed
run_test agent/limits test_limits
run_test agent/signals test_signals
