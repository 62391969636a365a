#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf on an older kernel's paths, as the job of a VM that boots one
# (tests/tools/vmrun.sh): Debian 12's own 6.1 has neither uprobe_multi links
# nor uprobe sessions, nor hash maps allocated at run time by bpf_mem_alloc.
#
#   oldkernel_drive.sh CULPERT_BPF ALLOC_EXACT ALLOC_LIVE OUTDIR
#
# Writes to OUTDIR: probes.txt (what attach would do), exact.{out,err,pb.gz}
# (alloc_exact at --rate 1), live.{out,err,pb.gz} (alloc_live 17408 at
# --rate 1 --inuse).  The checks are the caller's (test_oldkernel.sh).
# POSIX sh and busybox only.  Exits non-zero with one line on stderr if a
# step fails.
set -u

bpf=$1 exact=$2 live=$3 out=$4

die() {
	echo "oldkernel_drive: $*" >&2
	exit 1
}

# an emulated guest verifies the BPF programs in tens of seconds: 240 s for "profiling"
. tests/wait_for.sh

pid="" apid=""
cleanup() {
	for p in $pid $apid; do kill -9 "$p" 2>/dev/null; done
}
trap cleanup EXIT

# start_profiled NAME CMD ATTACH_ARGS...: CMD waiting for SIGUSR1, attach on it until it profiles
start_profiled() {
	name=$1 cmd=$2
	shift 2
	$cmd >"$out/$name.out" 2>&1 &
	pid=$!
	wait_for "$out/$name.out" ready 60 || die "$name did not start: $(cat "$out/$name.out")"
	"$bpf" attach --pid "$pid" -o "$out/$name.pb.gz" "$@" 2>"$out/$name.err" &
	apid=$!
	wait_for "$out/$name.err" "culpert-bpf: profiling" 240 ||
		die "$name: attach did not start: $(head -c 600 "$out/$name.err")"
}

"$exact" >"$out/probes.target" 2>&1 &
pid=$!
wait_for "$out/probes.target" ready 60 || die "alloc_exact did not start"
"$bpf" probes --pid "$pid" >"$out/probes.txt" 2>&1 || die "probes failed: $(tail -3 "$out/probes.txt")"
kill -9 "$pid"
wait "$pid" 2>/dev/null

start_profiled exact "$exact" --rate 1 -v
kill -USR1 "$pid"
wait "$pid" || die "alloc_exact exited with $?"
wait "$apid" || die "attach on alloc_exact failed: $(tail -3 "$out/exact.err")"

start_profiled live "$live 17408" --rate 1 --inuse -v
kill -USR1 "$pid"
wait_for "$out/live.out" '^done' 240 || die "alloc_live did not finish"
kill -INT "$apid"
wait "$apid" || die "attach on alloc_live failed: $(tail -3 "$out/live.err")"
pid="" apid=""
