#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Drive a target against a cgroup v2 memory limit and record, side by side,
# what `culpert-bpf stats` said and what the kernel's files said:
#
#   cgroup_limit_drive.sh CGROUP2_MOUNT CULPERT_BPF MEM_KNOWN OUTDIR
#
# Creates CGROUP2_MOUNT/culpert-limit-PID with memory.max = 96 MiB, starts an
# idle mem_known (64 MiB resident) and a growing one in it, runs `stats` of the idle one
# (l1.json, with memory.current read right after it into current), lets the
# grower map until the kernel OOM-kills it, and runs `stats` again (l2.json,
# with memory.events and memory.peak copied right after it).  The checks are
# the caller's (test_stats.sh cgroup_limit).  POSIX sh and busybox only, run
# from the top of the tree: on the host when its cgroup v2 has the memory
# controller, and otherwise as the job of a VM (tests/tools/vmrun.sh).  Exits
# non-zero with one line on stderr if a step fails.
set -u

mnt=$1 bpf=$2 mk=$3 out=$4
LIMIT=$((96 * 1024 * 1024))

die() {
	echo "cgroup_limit_drive: $*" >&2
	exit 1
}

# an emulated guest takes seconds to touch 64 MiB: 30 s for "ready"
. tests/wait_for.sh

added=""
cg="$mnt/culpert-limit-$$"
idle="" grower="" home=""
cleanup() {
	[ -n "$home" ] && echo $$ >"$mnt$home/cgroup.procs"
	for p in $idle $grower; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -d "$cg" ] && rmdir "$cg"
	[ -n "$added" ] && echo -memory >"$mnt/cgroup.subtree_control"
}
trap cleanup EXIT

grep -qw memory "$mnt/cgroup.controllers" ||
	die "no memory controller in $mnt/cgroup.controllers: '$(cat "$mnt/cgroup.controllers")'"
if ! grep -qw memory "$mnt/cgroup.subtree_control"; then
	echo +memory >"$mnt/cgroup.subtree_control" || die "cannot enable +memory in $mnt"
	added=yes
fi
mkdir "$cg" && echo "$LIMIT" >"$cg/memory.max" || die "cannot create $cg with memory.max"
[ -f "$cg/memory.swap.max" ] && echo 0 >"$cg/memory.swap.max"

# The idle one is started from inside the cgroup, so that the 64 MiB it
# touches are charged to it, and is never the OOM killer's pick; the grower
# is moved in once it has touched its own, so that only what it maps on
# SIGUSR1 is charged
home=$(sed -n 's/^0:://p' /proc/self/cgroup)
echo $$ >"$cg/cgroup.procs" || die "cannot move the driver into $cg"
"$mk" >"$out/idle.out" 2>&1 &
idle=$!
echo -1000 >"/proc/$idle/oom_score_adj" || die "cannot set the oom_score_adj of $idle"
echo $$ >"$mnt$home/cgroup.procs" || die "cannot move the driver back to $mnt$home"
home=""
"$mk" grow >"$out/grow.out" 2>&1 &
grower=$!
wait_for "$out/idle.out" ready 30 || die "mem_known did not start: $(cat "$out/idle.out")"
wait_for "$out/grow.out" ready 30 || die "mem_known grow did not start: $(cat "$out/grow.out")"
echo "$grower" >"$cg/cgroup.procs" || die "cannot move $grower into $cg"

"$bpf" stats -p "$idle" -f json >"$out/l1.json" || die "stats before the pressure failed"
cat "$cg/memory.current" >"$out/current"

kill -USR1 "$grower"
wait "$grower" 2>/dev/null
grower=""

"$bpf" stats -p "$idle" -f json >"$out/l2.json" || die "stats after the OOM kill failed"
cat "$cg/memory.events" >"$out/memory.events"
cat "$cg/memory.peak" >"$out/memory.peak"
echo "$LIMIT" >"$out/limit"
