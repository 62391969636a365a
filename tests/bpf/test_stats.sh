#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf stats and attach --stats: the memory picture against the
# kernel's own files read at the same moment, of targets whose memory is
# known; cgroups the test creates; the formats checked by parsers; and the
# ways a read can fail.
. tests/lib.sh

PROMCHECK=tests/tools/promcheck.py
DRIVE=tests/tools/cgroup_limit_drive.sh

# the mount points of cgroup v2 hierarchies, from our mountinfo; the first
cgroup2_mounts() {
	awk '{ for (i = 1; i <= NF; i++) if ($i == "-") break; if ($(i + 1) == "cgroup2") print $5 }' \
		/proc/self/mountinfo
}
cgroup2_mount() { cgroup2_mounts | head -1; }

# start mem_known; sets $target_pid, $heap_bytes, $anon_addr, $anon_bytes
start_mem_known() {
	start_target "$TMP/mk.out" "$TARGETS/mem_known" || return 1
	heap_bytes=$(awk '$1 == "heap" {print $3}' "$TMP/mk.out")
	anon_addr=$(awk '$1 == "anon" {print $2}' "$TMP/mk.out")
	anon_bytes=$(awk '$1 == "anon" {print $3}' "$TMP/mk.out")
}

# The target is idle, so the picture and the kernel's files read right after
# it must agree exactly: every line of smaps_rollup, the status lines the spec
# names, the kinds summed independently from smaps; and the known sizes.
test_known_sizes() {
	start_mem_known || return
	"$BIN_BPF" stats --pid "$target_pid" --format json >"$TMP/s.json" 2>"$TMP/s.err" ||
		{ fail "stats failed: $(cat "$TMP/s.err")"; return; }
	for f in smaps_rollup status smaps; do cat "/proc/$target_pid/$f" >"$TMP/k.$f"; done
	$PY - "$TMP" "$heap_bytes" "$anon_addr" "$anon_bytes" <<'EOF' >"$TMP/cmp" || fail "$(cat "$TMP/cmp")"
import json, re, sys
tmp, heap_bytes, anon_addr, anon_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 16), int(sys.argv[4])
d = json.load(open(tmp + '/s.json'))
bad = []
def check(what, got, want):
    if got != want:
        bad.append('%s: ours %s, kernel %s' % (what, got, want))
def snake(k):  # Pss_Anon -> pss_anon, AnonHugePages -> anon_huge_pages, KSM -> ksm
    return re.sub(r'(?<=[a-z])(?=[A-Z])', '_', k).lower().replace('__', '_')
# A clean file page mapped by the target alone is Private_Clean; once the reader
# (culpert-bpf, cat) maps the same library it is Shared_Clean and counts half in
# Pss.  The reader moves these, so they are checked as sums; the rest exactly.
by_reader = ('Pss', 'Pss_File', 'Shared_Clean', 'Private_Clean')
n = 0
k = {}
for line in open(tmp + '/k.smaps_rollup'):
    m = re.match(r'^(\w+):\s+(\d+) kB$', line)
    if m:
        n += 1
        k[m.group(1)] = int(m.group(2)) * 1024
        if m.group(1) not in by_reader:
            check('rollup ' + m.group(1), d['rollup'].get(snake(m.group(1)) + '_bytes'), k[m.group(1)])
if n < 10:
    bad.append('only %d rollup lines' % n)
r = d['rollup']
check('rollup Shared_Clean + Private_Clean', r['shared_clean_bytes'] + r['private_clean_bytes'],
      k['Shared_Clean'] + k['Private_Clean'])
check('rollup Pss - Pss_File', r['pss_bytes'] - r['pss_file_bytes'], k['Pss'] - k['Pss_File'])
if abs(r['pss_file_bytes'] - k['Pss_File']) > k['Rss']:
    bad.append('Pss_File ours %d, kernel %d' % (r['pss_file_bytes'], k['Pss_File']))
status = {l.split(':')[0]: l.split()[1] for l in open(tmp + '/k.status') if ':' in l and len(l.split()) > 1}
for k, ours in (('VmRSS', 'vm_rss_bytes'), ('VmHWM', 'vm_hwm_bytes'), ('RssAnon', 'rss_anon_bytes'),
                ('RssFile', 'rss_file_bytes'), ('RssShmem', 'rss_shmem_bytes'), ('VmSwap', 'vm_swap_bytes')):
    check('status ' + k, d['status'].get(ours), int(status[k]) * 1024)
check('status Threads', d['status'].get('threads'), int(status['Threads']))
# smaps summed by kind, independently of the C code: path and the "sh" flag
kinds = {}
entry = None
anon_rss = None
def close(e):
    if e is None:
        return
    sh = 'sh' in e['flags']
    p = e['path']
    k = ('shmem' if sh and (p == '' or p.startswith('/dev/zero')) else 'heap' if p == '[heap]' else
         'stack' if p == '[stack]' else 'anon' if p == '' or p.startswith('[anon:') else
         'other' if p.startswith('[') else 'file')
    t = kinds.setdefault(k, {'count': 0, 'rss_bytes': 0, 'size_bytes': 0})
    t['count'] += 1
    t['rss_bytes'] += e['Rss']
    t['size_bytes'] += e['Size']
for line in open(tmp + '/k.smaps'):
    m = re.match(r'^([0-9a-f]+)-[0-9a-f]+ \S+ \S+ \S+ \d+ *(.*)$', line)
    if m:
        close(entry)
        entry = {'path': m.group(2).strip(), 'flags': [], 'Rss': 0, 'Size': 0, 'start': int(m.group(1), 16)}
        continue
    m = re.match(r'^(Rss|Size):\s+(\d+) kB', line)
    if m:
        entry[m.group(1)] = int(m.group(2)) * 1024
        if m.group(1) == 'Rss' and entry['start'] == anon_addr:
            anon_rss = entry['Rss']
    elif line.startswith('VmFlags:'):
        entry['flags'] = line.split()[1:]
close(entry)
for k, t in kinds.items():
    for f, v in t.items():
        check('mappings.%s.%s' % (k, f), d['mappings'][k][f], v)
check('sum of the kinds = smaps_rollup Rss', sum(d['mappings'][k]['rss_bytes'] for k in d['mappings']),
      d['rollup']['rss_bytes'])
check('[heap] size = the sbrk() of the target', d['mappings']['heap']['size_bytes'], heap_bytes)
check('[heap] resident, every page touched', d['mappings']['heap']['rss_bytes'], heap_bytes)
if anon_rss != anon_bytes:
    bad.append('the anonymous mapping at %x: smaps Rss %s, the target mapped and touched %d' % (anon_addr, anon_rss, anon_bytes))
if d['mappings']['anon']['rss_bytes'] < anon_bytes:
    bad.append('anon rss %d below the %d-byte mapping' % (d['mappings']['anon']['rss_bytes'], anon_bytes))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# JSON parses and has the schema; Prometheus passes the client library's parser
# and the naming rules; the text has every section; all say the same rss.
test_formats() {
	start_mem_known || return
	"$BIN_BPF" stats -p "$target_pid" -f json >"$TMP/f.json" || fail "json failed"
	"$BIN_BPF" stats -p "$target_pid" -f prometheus >"$TMP/f.prom" || fail "prometheus failed"
	"$BIN_BPF" stats -p "$target_pid" >"$TMP/f.txt" || fail "text failed"
	$PY "$PROMCHECK" pid comm container_id <"$TMP/f.prom" >"$TMP/pc" ||
		fail "prometheus output rejected: $(head -5 "$TMP/pc" | tr '\n' ' ')"
	rss_json=$($PY -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["schema_version"] == 1; print(d["rollup"]["rss_bytes"])' "$TMP/f.json") ||
		fail "JSON does not parse or has no schema_version 1"
	rss_prom=$(awk -v p="$target_pid" '$1 ~ "^culpert_process_rss_bytes[{].*pid=\"" p "\"" {print $2}' "$TMP/f.prom")
	[ "$rss_json" = "$rss_prom" ] || fail "rss: JSON $rss_json, Prometheus $rss_prom"
	grep -q "^culpert_process_mapping_rss_bytes{pid=\"$target_pid\",comm=\"mem_known\",container_id=\"\",kind=\"heap\"} $heap_bytes\$" "$TMP/f.prom" ||
		fail "no heap series of $heap_bytes bytes with pid/comm/kind labels"
	for s in "process (/proc/$target_pid/smaps_rollup)" "process (/proc/$target_pid/status)" \
		"mappings by kind (/proc/$target_pid/smaps)" "cgroup "; do
		grep -qF "$s" "$TMP/f.txt" || fail "text has no section '$s'"
	done
	grep -Eq '^  heap +1 +16\.00 MiB +16\.00 MiB' "$TMP/f.txt" || fail "text heap row: $(grep '^  heap' "$TMP/f.txt")"
}

# --watch: one JSON object per line, as many as --count
test_watch_count() {
	start_mem_known || return
	"$BIN_BPF" stats -p "$target_pid" -f json --watch 50ms --count 3 >"$TMP/w.json" ||
		fail "watch failed"
	[ "$(wc -l <"$TMP/w.json")" -eq 3 ] || fail "$(wc -l <"$TMP/w.json") lines, want 3"
	$PY -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$TMP/w.json" ||
		fail "a line is not JSON"
}

# A child cgroup the test creates, in the v2 hierarchy wherever it is
# mounted: the picture names it, reads its pressure, and reports its memory
# present exactly when the kernel gives the memory controller to it -- with
# the reason otherwise, and no Prometheus series rather than zeros.
test_cgroup_child() {
	need_root || return
	mnt=$(cgroup2_mount)
	[ -n "$mnt" ] || { skip "no cgroup v2 hierarchy is mounted"; return; }
	cg="$mnt/culpert-test-$$"
	mkdir "$cg" || { fail "cannot create $cg"; return; }
	start_mem_known || { rmdir "$cg"; return; }
	echo "$target_pid" >"$cg/cgroup.procs" || fail "cannot move the target into $cg"
	"$BIN_BPF" stats -p "$target_pid" -f json >"$TMP/c.json" 2>"$TMP/c.err" || fail "stats: $(cat "$TMP/c.err")"
	"$BIN_BPF" stats -p "$target_pid" -f prometheus >"$TMP/c.prom"
	total=$(awk '$1 == "some" {sub("total=", "", $5); print $5}' "$cg/memory.pressure")
	has_mem=no
	grep -qw memory "$cg/cgroup.controllers" && has_mem=yes
	$PY - "$TMP/c.json" "/culpert-test-$$" "$has_mem" "$total" <<'EOF' >"$TMP/cc" || fail "$(cat "$TMP/cc")"
import json, sys
d = json.load(open(sys.argv[1]))['cgroup']
bad = []
if d['path'] != sys.argv[2]:
    bad.append('path %s, want %s' % (d['path'], sys.argv[2]))
if sys.argv[3] == 'yes' and d['memory'] is None:
    bad.append('memory controller enabled, reported absent: %s' % d.get('memory_absent'))
if sys.argv[3] == 'no' and (d['memory'] is not None or not d.get('memory_absent')):
    bad.append('no memory controller, but memory=%s absent=%s' % (d['memory'], d.get('memory_absent')))
if d['pressure'] is None or d['pressure']['some']['total_us'] != int(sys.argv[4]):
    bad.append('pressure %s, kernel total %s' % (d['pressure'], sys.argv[4]))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
	if [ "$has_mem" = no ] && grep -q '^culpert_cgroup_memory_current' "$TMP/c.prom"; then
		fail "absent memory controller exported as a series"
	fi
	$PY "$PROMCHECK" pid comm container_id <"$TMP/c.prom" >/dev/null || fail "prometheus rejected"
	kill -9 "$target_pid"
	wait "$target_pid" 2>/dev/null
	rmdir "$cg" || fail "cannot remove $cg"
}

# A memory-limited v2 cgroup: memory.current/max/peak as the kernel's files
# say, then a target driven past memory.max moves memory.events max, oom and
# oom_kill, read through a second process that stays in the cgroup.  Where
# the host's cgroup v2 has no memory controller, this runs in a VM.
test_cgroup_limit() {
	need_root || return
	mnt=$(cgroup2_mount)
	if [ -n "$mnt" ] && grep -qw memory "$mnt/cgroup.controllers"; then
		out=$TMP/limit
		mkdir -p "$out"
		sh "$DRIVE" "$mnt" "$BIN_BPF" "$TARGETS/mem_known" "$out" 2>"$TMP/drive.err" ||
			{ fail "$(cat "$TMP/drive.err")"; return; }
	else
		# systemd's hybrid layout: a cgroup v1 hierarchy holds the memory
		# controller, so it is driven in a VM whose cgroup v2 has it
		echo "  no memory controller in this host's cgroup v2 ('$(cat "$mnt/cgroup.controllers" 2>/dev/null)'): in a VM"
		sh tests/tools/vmrun.sh "$TMP/vm" -f tests/wait_for.sh -f "$BIN_BPF" -f "$TARGETS/mem_known" \
			"$DRIVE" /sys/fs/cgroup "$BIN_BPF" "$TARGETS/mem_known" /out 2>"$TMP/vm.err"
		rc=$?
		[ $rc -eq 125 ] || [ $rc -eq 126 ] && { fail "$(cat "$TMP/vm.err")"; return; }
		out=$TMP/vm/out
		[ $rc -eq 0 ] || { fail "in the VM: $(tail -1 "$out/job.log")"; return; }
		echo "  the VM ran Linux $(cat "$out/kernel-release" 2>/dev/null) under qemu"
	fi
	$PY - "$out" <<'EOF' >"$TMP/l" || fail "$(cat "$TMP/l")"
import json, sys
out = sys.argv[1]
def read(name):
    return open(out + '/' + name).read()
lim = int(read('limit'))
bad = []
# before the pressure: the idle target's 64 MiB are charged to the cgroup; the
# kernel charges a few pages of its own between the two reads: 256 KiB
m = json.load(open(out + '/l1.json'))['cgroup']['memory']
cur = int(read('current'))
if m is None or abs(m['current_bytes'] - cur) > 262144 or cur < 64 << 20:
    bad.append('before: current %s, kernel %d (64 MiB touched)' % (m and m['current_bytes'], cur))
if m and m['max_bytes'] != lim:
    bad.append('before: max %s, want %d' % (m['max_bytes'], lim))
if m and m['events'].get('oom_kill') != 0:
    bad.append('before: oom_kill %s before any pressure' % m['events'].get('oom_kill'))
# after the grower was OOM-killed
m = json.load(open(out + '/l2.json'))['cgroup']['memory']
ev = dict(l.split() for l in read('memory.events').splitlines())
peak = int(read('memory.peak'))
for k in ('max', 'oom', 'oom_kill'):
    if m is None or m['events'][k] != int(ev[k]) or int(ev[k]) < 1:
        bad.append('after: events %s: ours %s, kernel %s' % (k, m and m['events'][k], ev[k]))
# the grower was driven up to the limit: the peak is within 4 MiB of it
if m is None or m['peak_bytes'] != peak or peak < lim - (4 << 20):
    bad.append('after: peak ours %s, kernel %d, limit %d' % (m and m['peak_bytes'], peak, lim))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# With no cgroup v2 mounted (unmounted in a mount namespace of its own), the
# cgroup memory and pressure are absent with the reason, the rest is read.
test_no_cgroup2() {
	need_root || return
	start_mem_known || return
	# shellcheck disable=SC2016,SC2046 # $1.. are the inner shell's; one word per mount point
	unshare -m sh -c 'bpf=$1 pid=$2; shift 2; for m; do umount "$m" || exit 9; done
		"$bpf" stats -p "$pid" -f json >"$0.json" && exec "$bpf" stats -p "$pid" >"$0.txt"' \
		"$TMP/nocg" "$BIN_BPF" "$target_pid" $(cgroup2_mounts) 2>"$TMP/nocg.err" ||
		{ fail "stats without cgroup v2: $(cat "$TMP/nocg.err")"; return; }
	why="no cgroup v2 hierarchy is mounted here (cgroup v1 is not read)"
	$PY - "$TMP/nocg.json" "$why" "$heap_bytes" <<'EOF' >"$TMP/nocg" || fail "$(cat "$TMP/nocg")"
import json, sys
d = json.load(open(sys.argv[1]))
cg, bad = d['cgroup'], []
if cg['memory'] is not None or cg['memory_absent'] != sys.argv[2]:
    bad.append('memory %s, absent %r' % (cg['memory'], cg.get('memory_absent')))
if cg['pressure'] is not None:
    bad.append('pressure %s without a hierarchy' % cg['pressure'])
if d['mappings']['heap']['rss_bytes'] != int(sys.argv[3]):
    bad.append('heap rss %s, want %s' % (d['mappings']['heap']['rss_bytes'], sys.argv[3]))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
	grep -qxF "cgroup memory: absent: $why" "$TMP/nocg.txt" ||
		fail "text: $(grep '^cgroup memory' "$TMP/nocg.txt")"
}

# bad usage exits 2, a process that cannot be read exits 1; one "error:" line each
test_bad_usage() {
	expect_error 2 "invalid --pid 'abc'" "$BIN_BPF" stats --pid abc
	expect_error 2 "--pid is required" "$BIN_BPF" stats
	expect_error 2 "invalid --format 'xml': use text, json or prometheus" "$BIN_BPF" stats -p 1 -f xml
	expect_error 2 "invalid --watch '0'" "$BIN_BPF" stats -p 1 --watch 0
	expect_error 2 "--count needs --watch" "$BIN_BPF" stats -p 1 --count 3
}

# a pid that is not there; a zombie, whose memory is gone; another user's process
test_unreadable() {
	true &
	gone=$!
	wait "$gone"
	expect_error 1 "no process with pid $gone" "$BIN_BPF" stats -p "$gone"
	expect_error 1 "pid 2 (kthreadd) is a kernel thread: it has no user-space memory" \
		"$BIN_BPF" stats -p 2
	# the child exits after the shell became sleep, which never reaps it
	sh -c 'sleep 0.2 & echo $! >"$1"; exec sleep 5' sh "$TMP/zombie" &
	track $!
	wait_for "$TMP/zombie" . 5
	zombie=$(cat "$TMP/zombie")
	wait_for "/proc/$zombie/status" "^State:.Z" 3 || { fail "no zombie"; return; }
	expect_error 1 "pid $zombie .* has exited: its memory can no longer be read" "$BIN_BPF" stats -p "$zombie"
	need_root || return
	start_mem_known || return
	expect_error 1 "cannot read /proc/$target_pid/smaps_rollup: Permission denied; reading another user's process needs root or CAP_SYS_PTRACE" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN_BPF" stats -p "$target_pid"
}

# Processes that exit while they are being read: every read ends in a
# picture or one clear error, never a crash; a --watch ends when its process does.
test_gone_mid_read() {
	i=0
	while [ $i -lt 40 ]; do
		"$TARGETS/heap_shape" compact 1 >/dev/null &
		p=$!
		# SIGTERM at a different moment each time: before, during or after the read
		(sleep "0.00$((i % 10))"; kill "$p") 2>/dev/null &
		"$BIN_BPF" stats -p "$p" -f json >/dev/null 2>"$TMP/g.err"
		rc=$?
		wait "$p" 2>/dev/null
		if [ $rc -gt 1 ] || [ "$(wc -l <"$TMP/g.err")" -gt 1 ] ||
			{ [ $rc -eq 1 ] && ! grep -q '^error: ' "$TMP/g.err"; }; then
			fail "read $i: exit $rc, stderr '$(cat "$TMP/g.err")'"
			return
		fi
		i=$((i + 1))
	done
	start_mem_known || return
	"$BIN_BPF" stats -p "$target_pid" --watch 100ms >"$TMP/w.txt" 2>"$TMP/w.err" &
	w=$!
	# the first picture also finds libc's debug info for the allocator state: ~0.2 s more
	wait_for "$TMP/w.txt" "^pid " 5 || fail "watch printed nothing"
	wait_count "$TMP/w.txt" "^pid " 2 5 || fail "watch printed one picture in 5 s"
	kill "$target_pid"
	wait "$w"
	rc=$?
	[ $rc -eq 0 ] || fail "watch exited $rc when its process did: $(cat "$TMP/w.err")"
	grep -q "culpert-bpf: pid $target_pid exited" "$TMP/w.err" || fail "watch: no 'exited' line"
	[ "$(grep -c '^pid ' "$TMP/w.txt")" -ge 2 ] || fail "watch printed fewer than 2 pictures"
}

# attach --stats: the picture at start and end in the profile, as sorted mem.* comments
test_attach_stats() {
	need_root || return
	start_mem_known || return
	"$BIN_BPF" attach -p "$target_pid" --stats --duration 1s -o "$TMP/a.pb.gz" 2>"$TMP/a.err" ||
		{ fail "attach --stats failed: $(cat "$TMP/a.err")"; return; }
	"$PROFDUMP" "$TMP/a.pb.gz" | sed -n 's/^# comment //p' >"$TMP/a.comments"
	for phase in start end; do
		grep -qx "mem.$phase.mappings.heap.size_bytes=$heap_bytes" "$TMP/a.comments" ||
			fail "no mem.$phase.mappings.heap.size_bytes=$heap_bytes"
		grep -q "^mem.$phase.rollup.rss_bytes=[0-9]" "$TMP/a.comments" || fail "no mem.$phase.rollup.rss_bytes"
		grep -q "^mem.$phase.cgroup.path=" "$TMP/a.comments" || fail "no mem.$phase.cgroup.path"
	done
	# sorted as proto/writer.c sorts them: strcmp, byte order
	LC_ALL=C sort -c "$TMP/a.comments" || fail "comments not sorted"
	t0=$(sed -n 's/^mem.start.time_unix_ns=//p' "$TMP/a.comments")
	t1=$(sed -n 's/^mem.end.time_unix_ns=//p' "$TMP/a.comments")
	[ -n "$t0" ] && [ -n "$t1" ] && [ "$(( (t1 - t0) / 1000000 ))" -ge 900 ] ||
		fail "start and end pictures not ~1s apart: $t0 $t1"
	# a target that exits before the end: the start picture and a warning
	start_target "$TMP/x.out" "$TARGETS/heap_shape" compact 1000 || return
	attach_bg "$TMP/x.err" -p "$target_pid" --stats -o "$TMP/x.pb.gz" || return
	kill -USR1 "$target_pid"
	wait_for "$TMP/x.out" '^done' 10 || fail "heap_shape did not finish"
	kill "$target_pid"
	wait "$attach_pid" || fail "attach failed when the target exited: $(cat "$TMP/x.err")"
	grep -q "^warning: no mem.end memory picture in the profile: .*pid $target_pid.*\(has exited\|has it exited\)" "$TMP/x.err" ||
		fail "no warning for the missing end picture: $(cat "$TMP/x.err")"
	"$PROFDUMP" "$TMP/x.pb.gz" | grep '^#' >"$TMP/x.head"
	grep -q '^# comment mem.start.rollup.rss_bytes=' "$TMP/x.head" ||
		fail "start picture missing"
	grep -q '^# comment mem.end.' "$TMP/x.head" && fail "end picture of an exited process"
	return 0
}

run_test stats/known_sizes test_known_sizes
run_test stats/formats test_formats
run_test stats/watch_count test_watch_count
run_test stats/cgroup_child test_cgroup_child
run_test stats/cgroup_limit test_cgroup_limit
run_test stats/no_cgroup2 test_no_cgroup2
run_test stats/bad_usage test_bad_usage
run_test stats/unreadable test_unreadable
run_test stats/gone_mid_read test_gone_mid_read
run_test stats/attach_stats test_attach_stats
