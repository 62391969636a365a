#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The allocator's own state in culpert-bpf stats (and attach --stats,
# culpert info): glibc's arenas read from the target's memory against
# glibc's own malloc_info() of the same heap; without libc's DWARF; a target
# that allocates and frees at full speed while it is read 1000 times; and
# jemalloc's and mimalloc's figures through libculpert-sampler.so's page.
. tests/lib.sh
. tests/symlib.sh

PROMCHECK=tests/tools/promcheck.py
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
SAMPLER=$OUTPUT/libculpert-sampler.so
JEMALLOC=/usr/lib/$MULTIARCH/libjemalloc.so.2
MIMALLOC=/usr/lib/$MULTIARCH/libmimalloc.so.2
# nothing may be fetched from the network: the lookup is the local one
unset DEBUGINFOD_URLS

# heap_frag MODE [CMD...]: start it (under CMD: env VAR=..., nice); sets $target_pid,
# $frag (its malloc_info file), $live (the usable bytes it keeps)
start_frag() {
	_mode=$1
	shift
	[ $# -gt 0 ] || set -- env
	frag=$TMP/frag.$_mode.xml
	start_target "$TMP/frag.$_mode.out" "$@" "$TARGETS/heap_frag" "$frag" "$_mode" 3 ||
		return 1
	live=$(awk '$1 == "live" {print $2}' "$TMP/frag.$_mode.out")
}

# stats_json NAME [ARGS...]: the target's picture as JSON in $TMP/NAME.json
stats_json() {
	_n=$1
	shift
	"$BIN_BPF" stats -p "$target_pid" -f json "$@" >"$TMP/$_n.json" 2>"$TMP/$_n.err" && return 0
	fail "stats failed: $(cat "$TMP/$_n.err")"
	return 1
}

# SIGUSR2: the target prints malloc_info() once more; wait for it
print_info() {
	_n=$(grep -c '^printed' "$TMP/frag.$1.out")
	kill -USR2 "$target_pid"
	wait_for "$TMP/frag.$1.out" "^printed $((_n + 1))\$" 5 || fail "no malloc_info from the target"
}

# compare.py XML JSON TOLERANCE: our figures against malloc_info's, arena by arena
compare_info() {
	$PY - "$1" "$2" "$3" <<'EOF'
import json, sys
import xml.etree.ElementTree as ET
xml_file, json_file, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
info = ET.parse(xml_file).getroot()
g = json.load(open(json_file))['allocator']['glibc']
bad = []
def near(what, ours, theirs, slack=0):
    # tol is relative; slack absolute bytes: malloc_info adds each free chunk's PREV_INUSE
    # bit to its size (chunksize_nomask), up to one byte per chunk
    if abs(ours - theirs) > tol * max(theirs, 1) + slack:
        bad.append('%s: ours %d, malloc_info %d' % (what, ours, theirs))
def val(el, tag, typ, attr='size'):
    return int(el.find("%s[@type='%s']" % (tag, typ)).get(attr))
heaps = info.findall('heap')
near('arenas', g['arena_count'], len(heaps))
for h in heaps:
    i = h.get('nr')
    a = g['arenas'].get(i)
    if a is None:
        bad.append('arena %s: not read' % i)
        continue
    if a['approximate']:
        bad.append('arena %s approximate: %s' % (i, a.get('approximate_reason')))
    near('arena %s system' % i, a['system_bytes'], val(h, 'system', 'current'))
    near('arena %s max system' % i, a['max_system_bytes'], val(h, 'system', 'max'))
    near('arena %s aspace' % i, a['aspace_bytes'], val(h, 'aspace', 'total'))
    near('arena %s fastbin chunks' % i, a['fastbin_free_chunks'], val(h, 'total', 'fast', 'count'))
    near('arena %s fastbin bytes' % i, a['fastbin_free_bytes'], val(h, 'total', 'fast'))
    # "rest" is the top chunk and the bins together
    rest_n = val(h, 'total', 'rest', 'count')
    near('arena %s bin chunks + top' % i, a['bin_free_chunks'] + 1, rest_n)
    near('arena %s bin bytes + top' % i, a['bin_free_bytes'] + a['top_bytes'],
         val(h, 'total', 'rest'), rest_n)
near('mmapped blocks', g['mmapped_chunks'], val(info, 'total', 'mmap', 'count'))
near('mmapped bytes', g['mmapped_bytes'], val(info, 'total', 'mmap'))
near('system', g['system_bytes'], val(info, 'system', 'current'))
near('fastbins', g['fastbin_free_bytes'], val(info, 'total', 'fast'))
rest = val(info, 'total', 'rest')
near('bins + top', g['bin_free_bytes'] + g['top_bytes'], rest, val(info, 'total', 'rest', 'count'))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# The idle target: the same heap twice, so the figures must be malloc_info's
# exactly (a chunk's flag bit aside); the 5% of the issue is not needed.  And
# what the program shaped: 4 arenas (main + 3 threads), 6 mmapped blocks
# (3 of 1 MiB, 2 of 512 KiB, the 160000-byte pointer array), fastbins in
# every arena.
test_idle_vs_malloc_info() {
	need_root || return
	start_frag idle || return
	print_info idle || return
	stats_json i || return
	compare_info "$frag" "$TMP/i.json" 0 >"$TMP/i.cmp" || { fail "$(cat "$TMP/i.cmp")"; return; }
	$PY - "$TMP/i.json" <<'EOF' >"$TMP/i.known" || fail "$(cat "$TMP/i.known")"
import json, sys
g = json.load(open(sys.argv[1]))['allocator']['glibc']
bad = []
if g['arena_count'] != 4 or g.get('narenas') != 4:
    bad.append('%s arenas, narenas %s: want 4' % (g['arena_count'], g.get('narenas')))
if g['mmapped_chunks'] != 6 or g['mmapped_bytes'] < 4 << 20:
    bad.append('mmapped %d blocks, %d bytes' % (g['mmapped_chunks'], g['mmapped_bytes']))
for i, a in g['arenas'].items():
    if a['fastbin_free_chunks'] < 2000:
        bad.append('arena %s: %d fastbin chunks, want 2000+' % (i, a['fastbin_free_chunks']))
    if a['main'] != (i == '0'):
        bad.append('arena %s main=%d' % (i, a['main']))
if g['approximate']:
    bad.append('approximate: ' + g['approximate_reason'])
# each thread's last 7 frees of each size it freed (two sizes) stay in its tcache: 56 chunks
# of these sizes at least, which no bin malloc_info counts holds
t = g.get('tcache')
if t is None:
    bad.append('no tcache: %s' % g.get('tcache_absent'))
elif t['threads'] != 4 or t['free_chunks'] < 56 or t['approximate'] or \
        t['free_bytes'] < 7 * (208 + 64) + 3 * 7 * (1008 + 112) or t['free_chunks'] > 4 * 64 * 7:
    bad.append('tcache: %s' % t)
if g['version'] != '2.36' or not g['debug_file'].endswith('.debug'):
    bad.append('version %s, debug file %s' % (g['version'], g['debug_file']))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# The target works (each thread allocates and frees through its tcache)
# while it prints and while it is read: within 5%.
test_busy_vs_malloc_info() {
	need_root || return
	start_frag busy || return
	print_info busy || return
	stats_json b || return
	compare_info "$frag" "$TMP/b.json" 0.05 >"$TMP/b.cmp" || fail "$(cat "$TMP/b.cmp")"
}

# Text, Prometheus (the client's parser; arena labels) and JSON say the same.
test_formats() {
	need_root || return
	start_frag idle || return
	"$BIN_BPF" stats -p "$target_pid" -f json >"$TMP/f.json" || { fail "json failed"; return; }
	"$BIN_BPF" stats -p "$target_pid" -f prometheus >"$TMP/f.prom" || fail "prometheus failed"
	"$BIN_BPF" stats -p "$target_pid" >"$TMP/f.txt" || fail "text failed"
	$PY "$PROMCHECK" pid comm container_id <"$TMP/f.prom" >"$TMP/pc" ||
		fail "prometheus output rejected: $(head -5 "$TMP/pc" | tr '\n' ' ')"
	$PY - "$TMP/f.json" "$TMP/f.prom" "$TMP/f.txt" <<'EOF' >"$TMP/f.cmp" || fail "$(cat "$TMP/f.cmp")"
import json, re, sys
g = json.load(open(sys.argv[1]))['allocator']['glibc']
prom = open(sys.argv[2]).read()
text = open(sys.argv[3]).read()
bad = []
for i, a in g['arenas'].items():
    for metric, key in (('system_bytes', 'system_bytes'), ('top_bytes', 'top_bytes'),
                        ('bin_free_bytes', 'bin_free_bytes'), ('fastbin_free_chunks', 'fastbin_free_chunks')):
        m = re.search(r'^culpert_allocator_%s\{[^}]*arena="%s"\} (\d+)$' % (metric, i), prom, re.M)
        if not m or int(m.group(1)) != a[key]:
            bad.append('arena %s %s: prometheus %s, json %d' % (i, metric, m and m.group(1), a[key]))
m = re.search(r'^culpert_allocator_mmapped_bytes\{[^}]*\} (\d+)$', prom, re.M)
if not m or int(m.group(1)) != g['mmapped_bytes']:
    bad.append('mmapped_bytes: prometheus %s' % (m and m.group(1)))
if not re.search(r'^allocator: glibc 2\.36 serves malloc \(.*libc\.so\.6\)$', text, re.M):
    bad.append('no allocator line in the text')
if len(re.findall(r'^  [0-3]( main)? +[0-9.]+ [KM]iB', text, re.M)) != 4 or '\n  total ' not in text:
    bad.append('text: not 4 arena rows and a total')
if not re.search(r'^  mmapped +6 blocks', text, re.M):
    bad.append('text: no mmapped line')
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# No libc DWARF (the debug directory hidden in a mount namespace of its own):
# the allocator part says so and what to install, the rest of the picture is
# there, and stats exits 0.
test_no_debug_info() {
	need_root || return
	start_frag idle || return
	bid=$(readelf -n /lib/"$MULTIARCH"/libc.so.6 | awk '/Build ID/ {print $3}')
	# shellcheck disable=SC2016 # $1.. are the inner shell's
	unshare -m sh -c 'mount -t tmpfs none /usr/lib/debug || exit 9
		"$1" stats -p "$2" -f json >"$3.json" && exec "$1" stats -p "$2" >"$3.txt"' \
		sh "$BIN_BPF" "$target_pid" "$TMP/nodbg" 2>"$TMP/nodbg.err" ||
		{ fail "stats without debug info: $(cat "$TMP/nodbg.err")"; return; }
	[ -s "$TMP/nodbg.err" ] && { fail "stderr: $(cat "$TMP/nodbg.err")"; return; }
	$PY - "$TMP/nodbg.json" "$bid" <<'EOF' >"$TMP/nodbg" || fail "$(cat "$TMP/nodbg")"
import json, sys
d = json.load(open(sys.argv[1]))
a, bad = d['allocator'], []
why = a.get('glibc_absent') or ''
if a.get('glibc') is not None:
    bad.append('glibc figures without debug info')
for want in ('apt install libc6-dbg', 'libc.so.6', sys.argv[2], 'main_arena'):
    if want not in why:
        bad.append('glibc_absent does not name %r: %r' % (want, why))
if a.get('family') != 'glibc':
    bad.append('family %s' % a.get('family'))
if d['rollup']['rss_bytes'] < 16 << 20 or d['mappings']['heap']['rss_bytes'] == 0:
    bad.append('the rest of the picture is missing: rss %s' % d['rollup'].get('rss_bytes'))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
	grep -q '^  glibc arenas: absent: no debug info for libc .*apt install libc6-dbg' "$TMP/nodbg.txt" ||
		fail "text: $(grep 'glibc arenas' "$TMP/nodbg.txt")"
	grep -q '^process (/proc/' "$TMP/nodbg.txt" || fail "text lost the process section"
}

# With /usr/lib/debug hidden: --debug-dir with a .build-id tree of libc's and
# ld.so's debug files finds them; so does a debuginfod server on loopback,
# which --no-debuginfod does not ask; --no-allocator leaves the part out.
test_debug_lookup() {
	need_root || return
	start_frag idle || return
	mkdir -p "$TMP/served"
	for obj in /lib/"$MULTIARCH"/libc.so.6 /lib64/ld-linux-x86-64.so.2; do
		b=$(readelf -n "$obj" | awk '/Build ID/ {print $3}')
		src=$(debug_path /usr/lib/debug "$b")
		mkdir -p "$(dirname "$(debug_path "$TMP/dbg" "$b")")"
		cp "$src" "$(debug_path "$TMP/dbg" "$b")" && cp "$src" "$TMP/served/" ||
			{ fail "no debug file $src"; return; }
		[ "$obj" = /lib/"$MULTIARCH"/libc.so.6 ] && libc_bid=$b
	done
	start_debuginfod "$TMP/served" "$libc_bid" || return
	# shellcheck disable=SC2016 # $1.. are the inner shell's
	unshare -m sh -c 'mount -t tmpfs none /usr/lib/debug || exit 9
		"$1" stats -p "$2" -f json --debug-dir "$3/dbg" >"$3/dd.json" || exit 1
		DEBUGINFOD_URLS=$4 DEBUGINFOD_CACHE_PATH=$3/dcache "$1" stats -p "$2" -f json \
			>"$3/dfd.json" || exit 2
		DEBUGINFOD_URLS=$4 DEBUGINFOD_CACHE_PATH=$3/dcache2 "$1" stats -p "$2" -f json \
			--no-debuginfod >"$3/nodfd.json" || exit 3
		exec "$1" stats -p "$2" -f json --no-allocator >"$3/noalloc.json"' \
		sh "$BIN_BPF" "$target_pid" "$TMP" "$dfd_url" 2>"$TMP/dl.err" ||
		{ fail "stats exited $?: $(cat "$TMP/dl.err")"; return; }
	$PY - "$TMP" <<'EOF' >"$TMP/dl" || fail "$(cat "$TMP/dl")"
import json, sys
tmp, bad = sys.argv[1], []
def alloc(name):
    return json.load(open('%s/%s.json' % (tmp, name))).get('allocator', 'missing')
for name, where in (('dd', tmp + '/dbg/.build-id/'), ('dfd', tmp + '/dcache/')):
    g = alloc(name).get('glibc') or {}
    if not g.get('debug_file', '').startswith(where) or g.get('arena_count') != 4 or \
            g.get('tcache') is None:
        bad.append('%s: debug file %s, %s arenas, tcache %s, absent %s' % (
            name, g.get('debug_file'), g.get('arena_count'), g.get('tcache_absent'),
            alloc(name).get('glibc_absent')))
a = alloc('nodfd')
if a.get('glibc') is not None or 'apt install libc6-dbg' not in (a.get('glibc_absent') or ''):
    bad.append('--no-debuginfod: %s' % a.get('glibc_absent'))
if alloc('noalloc') != 'missing':
    bad.append('--no-allocator still has an allocator section')
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# A target that frees and allocates at full speed in 3 threads, read 1000
# times: neither crashes; each read is consistent or says it is approximate
# and why; a consistent arena adds up (free parts within its system memory).
# The target runs at nice 19: on these 2 shared cores its 3 threads would
# otherwise take every timeslice from the reader (each of whose syscalls
# then waits ~12 ms); it still runs on the other core all the while.
test_storm_1000_reads() {
	need_root || return
	start_frag storm nice -n 19 || return
	"$BIN_BPF" stats -p "$target_pid" -f json --watch 10ms --count 1000 >"$TMP/s.json" \
		2>"$TMP/s.err" || { fail "stats exited $?: $(tail -3 "$TMP/s.err")"; return; }
	kill -0 "$target_pid" 2>/dev/null || { fail "the target died"; return; }
	$PY - "$TMP/s.json" <<'EOF' >"$TMP/s.cmp" || { fail "$(cat "$TMP/s.cmp")"; return; }
import json, sys
n = approx = arenas = approx_arenas = 0
bad = []
for line in open(sys.argv[1]):
    g = json.loads(line)['allocator']['glibc']
    n += 1
    if g['approximate'] != any(a['approximate'] for a in g['arenas'].values()) and \
            not g.get('approximate_reason', '').startswith(('mp_', 'more than')):
        bad.append('read %d: approximate %d but arenas say otherwise' % (n, g['approximate']))
    approx += g['approximate']
    if g['approximate'] and not g.get('approximate_reason'):
        bad.append('read %d: approximate without a reason' % n)
    for i, a in g['arenas'].items():
        arenas += 1
        if a['approximate']:
            approx_arenas += 1
            if not a.get('approximate_reason'):
                bad.append('read %d arena %s: approximate without a reason' % (n, i))
            continue
        free = a['top_bytes'] + a['fastbin_free_bytes'] + a['bin_free_bytes']
        if free > a['system_bytes'] or a['system_bytes'] > a['max_system_bytes']:
            bad.append('read %d arena %s consistent but free %d > system %d (max %d)'
                       % (n, i, free, a['system_bytes'], a['max_system_bytes']))
    t = g.get('tcache') or {}
    if t.get('approximate') and not t.get('approximate_reason'):
        bad.append('read %d: tcache approximate without a reason' % n)
    if g['arena_count'] != 4:
        bad.append('read %d: %d arenas' % (n, g['arena_count']))
if n != 1000:
    bad.append('%d reads, want 1000' % n)
print('; '.join(bad[:5]))
print('%d reads, %d approximate; %d arena reads, %d approximate' % (n, approx, arenas, approx_arenas),
      file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
}

# jemalloc's own figures through libculpert-sampler.so's page, listened to
# (the semaphore raised) so they are fresh: stats.allocated holds every block
# the program keeps ($live: their malloc_usable_size, jemalloc's size
# classes) plus what jemalloc counts as allocated in its thread caches (at
# most 200 slots per size class and thread: 200 * (224 + 48) + 3 * 200 *
# (1024 + 112) bytes, 0.73 MB) and libc's own few blocks: within 1 MiB above.
test_sampler_jemalloc() {
	need_root || return
	start_frag busy env LD_PRELOAD="$SAMPLER $JEMALLOC" CULPERT_SAMPLER_RATE=4096 || return
	stats_json je || return
	"$BIN_BPF" stats -p "$target_pid" -f prometheus >"$TMP/je.prom" || fail "prometheus failed"
	$PY "$PROMCHECK" pid comm container_id <"$TMP/je.prom" >"$TMP/pc" ||
		fail "prometheus: $(head -3 "$TMP/pc")"
	$PY - "$TMP/je.json" "$live" "$TMP/je.prom" <<'EOF' >"$TMP/je" || fail "$(cat "$TMP/je")"
import json, re, sys
a = json.load(open(sys.argv[1]))['allocator']
live, prom = int(sys.argv[2]), open(sys.argv[3]).read()
s, bad = a.get('sampler') or {}, []
if a['family'] != 'jemalloc' or s.get('allocator') != 'jemalloc' or 'glibc' in a:
    bad.append('family %s, sampler %s, glibc %s' % (a['family'], s.get('allocator'), 'glibc' in a))
if not s.get('fresh') or not s.get('listened') or s.get('age_us', 1e9) > 1500000:
    bad.append('not fresh: %s' % s)
al = s.get('allocated_bytes', 0)
if not 0 <= al - live <= 1 << 20:
    bad.append('allocated %d, the program keeps %d' % (al, live))
if not al <= s.get('active_bytes', 0) <= s.get('mapped_bytes', 0) or \
        not s.get('metadata_bytes') or not s.get('resident_bytes'):
    bad.append('allocated <= active <= mapped, metadata, resident: %s' % s)
m = re.search(r'^culpert_allocator_allocated_bytes\{.*allocator="jemalloc"\} (\d+)$', prom, re.M)
if not m or abs(int(m.group(1)) - al) > 1 << 20:
    bad.append('prometheus allocated: %s' % (m and m.group(1)))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# mimalloc's process info: its committed memory (which mimalloc 2.0 also
# gives as its rss) holds at least the blocks the program keeps.
test_sampler_mimalloc() {
	need_root || return
	start_frag busy env LD_PRELOAD="$SAMPLER $MIMALLOC" CULPERT_SAMPLER_RATE=4096 || return
	stats_json mi || return
	$PY - "$TMP/mi.json" "$live" <<'EOF' >"$TMP/mi" || fail "$(cat "$TMP/mi")"
import json, sys
a = json.load(open(sys.argv[1]))['allocator']
s, live, bad = a.get('sampler') or {}, int(sys.argv[2]), []
if a['family'] != 'mimalloc' or not s.get('fresh'):
    bad.append('family %s, sampler %s' % (a['family'], s))
if s.get('mapped_bytes', 0) < live or not s.get('resident_bytes'):
    bad.append('mapped %s resident %s, the program keeps %d'
               % (s.get('mapped_bytes'), s.get('resident_bytes'), live))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# Over glibc the page carries mallinfo2(), taken in the target under the
# arenas' locks: the same arenas culpert-bpf walks from outside, so they
# must agree exactly (the threads allocate through their tcaches only,
# which both count as in use).
test_sampler_glibc_agrees() {
	need_root || return
	start_frag busy env LD_PRELOAD="$SAMPLER" CULPERT_SAMPLER_RATE=4096 || return
	stats_json gs || return
	$PY - "$TMP/gs.json" <<'EOF' >"$TMP/gs" || fail "$(cat "$TMP/gs")"
import json, sys
a = json.load(open(sys.argv[1]))['allocator']
s, g, bad = a.get('sampler') or {}, a.get('glibc') or {}, []
if a['family'] != 'glibc' or not s.get('fresh') or not g:
    bad.append('family %s, sampler %s, glibc %s' % (a['family'], s, bool(g)))
else:
    for what, page, walk in (
            ('mapped (arena + hblkhd)', s.get('mapped_bytes'), g['system_bytes'] + g['mmapped_bytes']),
            ('allocated (uordblks + hblkhd)', s.get('allocated_bytes'),
             g['in_use_bytes'] + g['mmapped_bytes']),
            ('free (fordblks)', s.get('free_bytes'), g['free_bytes'])):
        if page != walk:
            bad.append('%s: mallinfo2 %s, culpert-bpf %d' % (what, page, walk))
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# A target under the sampler that allocates nothing once ready: the page has
# no figures and stats says why, after waiting --sampler-wait.  Plain
# jemalloc (no sampler): the figures are absent and stats says what to preload.
test_sampler_stale_and_absent() {
	need_root || return
	start_frag idle env LD_PRELOAD="$SAMPLER" CULPERT_SAMPLER_RATE=4096 || return
	t0=$(date +%s%N)
	"$BIN_BPF" stats -p "$target_pid" --sampler-wait 300ms >"$TMP/st.txt" 2>"$TMP/st.err" ||
		{ fail "stats failed: $(cat "$TMP/st.err")"; return; }
	t1=$(date +%s%N)
	grep -q '^  note: no allocator figures yet: .*no sampled allocation came while culpert-bpf listened$' \
		"$TMP/st.txt" || { fail "idle target: $(grep -A3 '^  from' "$TMP/st.txt")"; return; }
	[ $(((t1 - t0) / 1000000)) -ge 300 ] || fail "did not wait the 300 ms"
	start_frag busy env LD_PRELOAD="$JEMALLOC" || return
	"$BIN_BPF" stats -p "$target_pid" -f json >"$TMP/ab.json" || { fail "stats failed"; return; }
	$PY -c '
import json, sys
a = json.load(open(sys.argv[1]))["allocator"]
why = a.get("sampler_absent") or ""
sys.exit(not (a["family"] == "jemalloc" and "sampler" in a and a["sampler"] is None
              and "preload libculpert-sampler.so" in why))' "$TMP/ab.json" ||
		fail "plain jemalloc: $(head -c 600 "$TMP/ab.json")"
}

# attach --stats: the allocator's state in both pictures as mem.*.allocator.*
# comments, the same figures stats gives; culpert info sums them up.
test_attach_stats_and_info() {
	need_root || return
	start_frag idle || return
	"$BIN_BPF" stats -p "$target_pid" -f json >"$TMP/as.json" || { fail "stats failed"; return; }
	"$BIN_BPF" attach -p "$target_pid" --stats --duration 1s -o "$TMP/as.pb.gz" 2>"$TMP/as.err" ||
		{ fail "attach --stats failed: $(cat "$TMP/as.err")"; return; }
	"$PROFDUMP" "$TMP/as.pb.gz" | sed -n 's/^# comment //p' >"$TMP/as.comments"
	"$BIN_CLI" info "$TMP/as.pb.gz" >"$TMP/as.info" || { fail "culpert info failed"; return; }
	$PY - "$TMP/as.json" "$TMP/as.comments" "$TMP/as.info" <<'EOF' >"$TMP/as" || fail "$(cat "$TMP/as")"
import json, re, sys
g = json.load(open(sys.argv[1]))['allocator']['glibc']
c = dict(l.rstrip('\n').split('=', 1) for l in open(sys.argv[2]) if '=' in l)
info = open(sys.argv[3]).read()
bad = []
for phase in ('start', 'end'):
    p = 'mem.%s.allocator.' % phase
    if c.get(p + 'family') != 'glibc':
        bad.append('no %sfamily=glibc' % p)
    # the target is idle: every figure as stats read it
    for k in ('arena_count', 'system_bytes', 'bin_free_bytes', 'fastbin_free_bytes', 'top_bytes',
              'mmapped_bytes', 'arenas.2.bin_free_chunks', 'tcache.free_chunks'):
        v = g
        for part in k.split('.'):
            v = v[part]
        if c.get(p + 'glibc.' + k) != str(v):
            bad.append('%sglibc.%s=%s, stats %s' % (p, k, c.get(p + 'glibc.' + k), v))
m = re.search(r'^Allocator: +glibc 2\.36 \(mem\.end\)\n +(\d+) arenas, ([0-9.]+ [KMGTPE]iB) from the system',
              info, re.M)
if not m or m.group(1) != '4':
    bad.append('culpert info: %s' % re.findall(r'^Allocator:.*\n.*', info, re.M))
if not re.search(r'^ +6 mmapped blocks, [0-9.]+ MiB; [0-9.]+ KiB free in the threads. tcaches$', info, re.M):
    bad.append('culpert info: no mmapped/tcache line')
print('; '.join(bad))
sys.exit(1 if bad else 0)
EOF
}

# the allocator options' bad usage: one error line, exit 2
test_bad_usage() {
	expect_error 2 "invalid --sampler-wait 'x': use a duration" "$BIN_BPF" stats -p 1 --sampler-wait x
	set -- stats -p 1
	for _i in $(seq 17); do set -- "$@" --debug-dir /tmp; done
	expect_error 2 "--debug-dir given more than 16 times" "$BIN_BPF" "$@"
}

run_test allocator/idle_vs_malloc_info test_idle_vs_malloc_info
run_test allocator/busy_vs_malloc_info test_busy_vs_malloc_info
run_test allocator/formats test_formats
run_test allocator/no_debug_info test_no_debug_info
run_test allocator/debug_lookup test_debug_lookup
run_test allocator/storm_1000_reads test_storm_1000_reads
run_test allocator/sampler_jemalloc test_sampler_jemalloc
run_test allocator/sampler_mimalloc test_sampler_mimalloc
run_test allocator/sampler_glibc_agrees test_sampler_glibc_agrees
run_test allocator/sampler_stale_and_absent test_sampler_stale_and_absent
run_test allocator/attach_stats_and_info test_attach_stats_and_info
run_test allocator/bad_usage test_bad_usage
