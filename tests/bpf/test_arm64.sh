#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# arm64: `make arm64-guest` cross-builds into $OUTPUT/arm64 with the suite's
# build (from nothing on a fresh clone; the multi-arch image test builds its
# binaries there too and reuses them), then those binaries run in a VM
# booting Debian's arm64 kernel under qemu-system-aarch64 (TCG), where
# tests/tools/arm64_guest.sh checks them against the targets' ground truth.
# Skipped, naming the package, only where qemu or the arm64 kernel cannot
# be had.
. tests/lib.sh

XOUT=$OUTPUT/arm64

# the ELF machine of FILE, as readelf names it
elf_machine() {
	readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'
}

test_cross_build() {
	command -v aarch64-linux-gnu-gcc >/dev/null ||
		{ fail "aarch64-linux-gnu-gcc missing: package gcc-aarch64-linux-gnu ('sudo make deps')"; return; }
	# The committed vmlinux/arm64/vmlinux.h is all it starts from (no host object is
	# read: the cross build has its own OUTPUT).  `make arm64-guest` (tests/Makefile.inc,
	# part of test-targets: here it only checks) builds both binaries, the sampler, and
	# what the VM runs or this file checks: a target of each kind (C, C++, musl, Rust), a
	# tool and a unit test; the rest of test-targets is the same rules over more sources
	# (and cargo's workspace, minutes of cross-compiling tokio that run nowhere here)
	_t0=$(date +%s)
	make -j2 arm64-guest >"$TMP/xbuild.log" 2>&1 ||
		{ fail "make arm64-guest: $(grep -m3 -i 'error' "$TMP/xbuild.log")"; return; }
	echo "  cross build: $(($(date +%s) - _t0)) s, $(grep -c '^  [A-Z]' "$TMP/xbuild.log") steps"
	# every program and library it made (a cargo build's host-side scripts live deeper)
	files=$(find "$XOUT" "$XOUT/tests" -maxdepth 2 -type f \( -perm -u+x -o -name '*.so' \) \
		! -name '*.o' ! -path "$XOUT/tests/*/*/*" -print | sort -u)
	[ "$(echo "$files" | wc -w)" -ge 12 ] || fail "only these in $XOUT: $files"
	for f in $files; do
		m=$(elf_machine "$f")
		[ "$m" = AArch64 ] || fail "$f: machine '${m:-not an ELF file}', want AArch64"
	done
	# and the host's own build was not touched or mixed in
	[ "$(elf_machine "$BIN_BPF")" = "Advanced Micro Devices X86-64" ] ||
		fail "$BIN_BPF is no longer an x86-64 binary"
}

test_vm() {
	[ -x "$XOUT/culpert-bpf" ] || { fail "no arm64 build to boot (cross_build failed)"; return; }
	rel=${XOUT#/}
	VMRUN_ARCH=aarch64 VMRUN_TIMEOUT=450 sh tests/tools/vmrun.sh "$TMP/vm" \
		-f tests/lib.sh -f tests/wait_for.sh -f tests/times.sh -f "$XOUT/culpert-bpf" \
		-f "$XOUT/tests/tools/profdump" -f "$XOUT/tests/targets/alloc_exact" \
		-f "$XOUT/tests/targets/alloc_live" -f "$XOUT/tests/targets/alloc_nofp" \
		-f "$XOUT/tests/targets/span_abc_plain" -f "$XOUT/tests/targets/span_cxx" \
		tests/tools/arm64_guest.sh "$rel" 2>"$TMP/vm.err"
	rc=$?
	case $rc in
	126) skip "$(cat "$TMP/vm.err")"; return ;;
	125) fail "$(cat "$TMP/vm.err")"; return ;;
	esac
	log=$TMP/vm/out/job.log
	# the guest's own verdicts, one line each, as if this file had run them
	sed -n '/^\(PASS\|FAIL\|SKIP\) /!s/^/  /p' "$log"
	grep '^\(PASS\|FAIL\|SKIP\) ' "$log"
	[ "$(grep -c '^PASS ' "$log")" -eq 7 ] ||
		fail "the guest passed $(grep -c '^PASS ' "$log") of its 7 tests (exit $rc)"
	echo "  the VM ran Linux $(cat "$TMP/vm/out/kernel-release" 2>/dev/null) under qemu-system-aarch64"
}

start=$(date +%s)
run_test bpf/arm64/cross_build test_cross_build
run_test bpf/arm64/vm test_vm
echo "  arm64: $(($(date +%s) - start)) s"
