#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Run a job in a throwaway VM: Debian's own kernel under qemu's emulation
# (TCG; no KVM, which nested in this workplace's VMs is refused or hangs, and
# a guest that boots in ~6 s needs no more), an initramfs holding busybox, the job, the
# files it names and the shared libraries they need.  For tests that need a
# kernel set up differently from the host's, as BPF selftests' vmtest.sh does;
# here a pure cgroup v2 hierarchy with the memory controller, which a host
# with systemd's hybrid layout cannot offer.
#
#   vmrun.sh WORKDIR [-f FILE]... SCRIPT [ARG...]
#
# SCRIPT and the FILEs (paths relative to the current directory) sit at the
# same relative paths in the guest, whose current directory stands for this
# one; the guest runs `sh SCRIPT ARG...` there with proc, sys, devtmpfs, tmpfs
# /tmp and cgroup2 on /sys/fs/cgroup mounted.  What the job leaves in /out
# arrives in WORKDIR/out, its stdout and stderr in WORKDIR/out/job.log; the
# kernel's console is in WORKDIR/console.log.  Exits with the job's status,
# or 125 with one line on stderr if the VM itself could not run.  The kernel
# package is fetched once with apt-get into $OUTPUT/vm.
set -u

OUTPUT=${OUTPUT:-.output}
cache=$OUTPUT/vm
TIMEOUT=${VMRUN_TIMEOUT:-300}

die() {
	echo "vmrun: $*" >&2
	exit 125
}

[ $# -ge 2 ] || die "usage: vmrun.sh WORKDIR [-f FILE]... SCRIPT [ARG...]"
work=$1
shift
files=""
while [ "$1" = -f ] && [ $# -ge 3 ]; do
	files="$files $2"
	shift 2
done
files="$files $1"
# the guest's command line, each word quoted for its shell
cmd="sh"
for a in "$@"; do
	case "$a" in *"'"*) die "a quote in argument '$a'" ;; esac
	cmd="$cmd '$a'"
done

for t in qemu-system-x86_64 busybox cpio; do
	command -v "$t" >/dev/null || die "$t is not installed: run 'sudo make deps'"
done
[ "$(uname -m)" = x86_64 ] || die "only x86_64 hosts are supported"

# Debian's current kernel package, unpacked once
if ! ls "$cache"/boot/vmlinuz-* >/dev/null 2>&1; then
	# the package linux-image-amd64 points at, downloaded into $cache/dl
	fetch_kernel() {
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
		rm -rf "$cache/dl" "$cache/pkg"
		mkdir -p "$cache/dl" || die "cannot create $cache"
		[ -n "$pkg" ] && (cd "$cache/dl" && apt-get download -q "$pkg" >/dev/null 2>&1)
	}
	# package lists may be empty, or stale and name a version the mirror dropped
	fetch_kernel || { apt-get update -qq >/dev/null 2>&1; fetch_kernel; } ||
		die "cannot download Debian's kernel package ${pkg:-linux-image-amd64}, even after apt-get update"
	dpkg-deb -x "$cache"/dl/"$pkg"_*.deb "$cache/pkg" || die "cannot unpack $pkg"
	mkdir -p "$cache/boot" && cp "$cache"/pkg/boot/vmlinuz-* "$cache/boot/" || die "$pkg has no vmlinuz"
	rm -rf "$cache/dl" "$cache/pkg"
fi
kernel=$(ls "$cache"/boot/vmlinuz-* | head -1)

root=$work/root
rm -rf "$root" "$work/out"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/work" "$work/out" ||
	die "cannot create $root"
busybox=$(command -v busybox)
cp "$busybox" "$root/bin/busybox" || die "cannot copy busybox"
# each file at its relative path; each shared library at its absolute one
for f in $files; do
	[ -f "$f" ] || die "no file $f"
	mkdir -p "$root/work/$(dirname "$f")" && cp "$f" "$root/work/$f" || die "cannot copy $f"
done
for f in "$busybox" $files; do
	ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
done | sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"
done

{
	cat <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mkdir /out
EOF
	echo "cd /work && $cmd >/out/job.log 2>&1"
	cat <<'EOF'
echo $? >/out/rc
uname -r >/out/kernel-release
{
	echo CULPERT-VM-BEGIN
	tar -C /out -cf - . | gzip | base64
	echo CULPERT-VM-END
} >/dev/ttyS1
poweroff -f
EOF
} >"$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz" ||
	die "cannot build the initramfs"

timeout "$TIMEOUT" qemu-system-x86_64 -machine accel=tcg -cpu max -smp 1 -m 512 \
	-nodefaults -display none -no-reboot \
	-kernel "$kernel" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 rdinit=/init quiet loglevel=3 psi=1 panic=-1" \
	-serial "file:$work/console.log" -serial "file:$work/ttyS1.log" 2>"$work/qemu.err" ||
	die "qemu failed or timed out after ${TIMEOUT}s: $(head -1 "$work/qemu.err") (console: $work/console.log)"

tr -d '\r' <"$work/ttyS1.log" | sed -n '/^CULPERT-VM-BEGIN$/,/^CULPERT-VM-END$/p' | sed '1d;$d' |
	base64 -d | gzip -dc | tar -C "$work/out" -xf - 2>/dev/null ||
	die "the guest sent back no results (console: $work/console.log)"
[ -f "$work/out/rc" ] || die "the guest sent back no exit status (console: $work/console.log)"
exit "$(cat "$work/out/rc")"
