#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf as an unprivileged user (nobody) with exactly the
# capabilities README's Privileges table documents, on a root-owned
# target with span probes: the usual set, and --no-multi's.
. tests/lib.sh

REAL_BPF=$PWD/$BIN_BPF

# as_nobody CAPS CMD...: CMD as uid/gid 65534 with exactly CAPS (setpriv syntax, "+bpf,+perfmon")
as_nobody() {
	_caps=$1
	shift
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="-all,$_caps" \
		--ambient-caps="-all,$_caps" "$@"
}

# BIN_BPF for lib.sh's helpers: culpert-bpf run as nobody with $CAPS.  The
# files it writes go to $TMP, opened to everyone for that.
use_caps() {
	CAPS=$1
	chmod 1777 "$TMP"
	BIN_BPF=$TMP/bpf-as-nobody
	cat >"$BIN_BPF" <<EOF
#!/bin/sh
exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,$CAPS \\
	--ambient-caps=-all,$CAPS "$REAL_BPF" "\$@"
EOF
	chmod 755 "$BIN_BPF"
}

# the effective set a CAPS list gives, as the kernel reports it, against what it should be
check_exact() {
	got=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="-all,$1" \
		--ambient-caps="-all,$1" grep '^CapEff:' /proc/self/status | awk '{ print $2 }')
	want=$(capsh --decode="$got" | sed 's/.*=//')
	[ "$want" = "$2" ] || fail "setpriv $1 gave $want, want exactly $2"
}

# does this kernel refuse perf-event uprobes to CAP_PERFMON without CAP_SYS_ADMIN?  Asked
# of the kernel itself: perf_event_open of the uprobe PMU with no path (nothing is made):
# EACCES is the capability, EINVAL the missing path.
# Debian's python3: nobody may not run one installed under root's home.
perf_uprobe_needs_admin() {
	as_nobody +perfmon /usr/bin/python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint8 * 128)()
t = int(open("/sys/bus/event_source/devices/uprobe/type").read())
ctypes.c_uint32.from_buffer(attr, 0).value = t
ctypes.c_uint32.from_buffer(attr, 4).value = 128
ctypes.c_uint64.from_buffer(attr, 40).value = 1 << 5	# exclude_kernel
fd = libc.syscall(298, attr, 0, -1, -1, 8)		# __NR_perf_event_open, CLOEXEC
print({13: "EACCES", 22: "EINVAL"}.get(ctypes.get_errno() if fd < 0 else 0, "other"))'
}

# span_abc under attach as nobody, ground truth as in test_spans.sh: each
# path >= 32 MiB at rate 4 KiB, sigma <= 1.1%, +-5% is 4.5 sigma
spans_as_nobody() {
	_n=$1
	shift
	profile "$_n" 4KiB "-v $*" "$TARGETS/span_abc" || return 1
	grep -q "6 culpert span probe sites" "$TMP/$_n.err" ||
		{ fail "$_n: span probe sites not found: $(head -3 "$TMP/$_n.err")"; return 1; }
	check_paths "$_n" 5
}

# CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE (the target is root's): spans and all
test_documented_set() {
	need_root "to drop to nobody with chosen capabilities" || return
	check_exact +bpf,+perfmon,+sys_ptrace cap_sys_ptrace,cap_perfmon,cap_bpf
	use_caps +bpf,+perfmon,+sys_ptrace
	spans_as_nobody priv_multi || return
	grep -q 'attached .* uprobe_multi links' "$TMP/priv_multi.err" || fail "not uprobe_multi links"
	start_target "$TMP/pr.out" "$TARGETS/span_abc" || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/probes" 2>&1 ||
		fail "probes: $(grep '^error' "$TMP/probes")"
	grep -q '^privileges: CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE' "$TMP/probes" ||
		fail "probes: $(grep -E '^privileges' "$TMP/probes")"
}

# Each capability missing from that set is named before anything is tried
test_missing_named() {
	need_root "to drop to nobody with chosen capabilities" || return
	"$OUTPUT/examples/demo_service" 30 >/dev/null &
	svc=$!
	track "$svc"
	expect_error 1 "needs root, or CAP_BPF and CAP_PERFMON (missing: CAP_PERFMON;" \
		as_nobody +bpf,+sys_ptrace "$REAL_BPF" attach --pid "$svc"
	expect_error 1 "needs root, or CAP_BPF and CAP_PERFMON (missing: CAP_BPF;" \
		as_nobody +perfmon,+sys_ptrace "$REAL_BPF" attach --pid "$svc"
	expect_error 1 "cannot inspect pid $svc (demo_service): Permission denied (run as root, or with CAP_SYS_PTRACE)" \
		as_nobody +bpf,+perfmon "$REAL_BPF" attach --pid "$svc"
}

# --no-multi: perf-event uprobes.  Where the kernel gives them to
# CAP_SYS_ADMIN only (6.15+), the usual set is refused up front with the
# capability named, and CAP_SYS_ADMIN + CAP_SYS_PTRACE profile; elsewhere
# the usual set does.
test_no_multi() {
	need_root "to drop to nobody with chosen capabilities" || return
	answer=$(perf_uprobe_needs_admin)
	case "$answer" in
	EACCES|EINVAL) ;;
	*) fail "cannot ask the kernel about perf-event uprobes: '$answer'"; return ;;
	esac
	if [ "$answer" = EACCES ]; then
		start_target "$TMP/nm.out" "$TARGETS/span_abc" || return
		expect_error 1 "\-\-no-multi attaches perf-event uprobes, which this kernel allows only with CAP_SYS_ADMIN" \
			as_nobody +bpf,+perfmon,+sys_ptrace "$REAL_BPF" attach --pid "$target_pid" \
			--no-multi -o "$TMP/nm.pb.gz"
		kill "$target_pid"
		check_exact +sys_admin,+sys_ptrace cap_sys_ptrace,cap_sys_admin
		use_caps +sys_admin,+sys_ptrace
	else
		use_caps +bpf,+perfmon,+sys_ptrace
	fi
	spans_as_nobody priv_perf --no-multi || return
	grep -q 'attached .* perf_uprobe links' "$TMP/priv_perf.err" || fail "not perf-event uprobes"
}

run_test bpf/privileges/documented_set test_documented_set
run_test bpf/privileges/missing_named test_missing_named
run_test bpf/privileges/no_multi test_no_multi
