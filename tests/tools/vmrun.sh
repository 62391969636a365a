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
# or 125 with one line on stderr if the VM itself could not run (126 when
# qemu, the kernel or busybox cannot be had: the line names the package).
# The kernel package is fetched once with apt-get into $OUTPUT/vm.
#
# VMRUN_ARCH=aarch64 boots Debian's arm64 kernel under qemu-system-aarch64
# (virt machine, TCG) instead, with busybox-static:arm64 (downloaded, not
# installed) and the arm64 shared libraries of the FILEs, found by their
# ELF dependencies in the arm64 multiarch directories (no ldd for arm64
# binaries here).  Cached in $OUTPUT/vm-arm64.
set -u

OUTPUT=${OUTPUT:-.output}
TIMEOUT=${VMRUN_TIMEOUT:-300}
ARCH=${VMRUN_ARCH:-x86_64}

die() {
	echo "vmrun: $*" >&2
	exit 125
}

# something this machine cannot install or download: the caller may skip
missing() {
	echo "vmrun: $*" >&2
	exit 126
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

[ "$(uname -m)" = x86_64 ] || die "only x86_64 hosts are supported"
case "$ARCH" in
x86_64)
	cache=$OUTPUT/vm
	qemu=qemu-system-x86_64
	qemu_pkg=qemu-system-x86
	kpkg=linux-image-amd64
	;;
aarch64)
	cache=$OUTPUT/vm-arm64
	qemu=qemu-system-aarch64
	qemu_pkg=qemu-system-arm
	kpkg=linux-image-arm64:arm64
	;;
*) die "VMRUN_ARCH=$ARCH: x86_64 or aarch64" ;;
esac
command -v "$qemu" >/dev/null || missing "$qemu is not installed: package $qemu_pkg ('sudo make deps')"
command -v cpio >/dev/null || die "cpio is not installed: run 'sudo make deps'"
mkdir -p "$work" || die "cannot create $work"

# the arm64 shared libraries FILE needs, transitively, and its interpreter: absolute paths
arm64_libs() {
	_todo=$1
	_seen=""
	_n=0
	while [ -n "$_todo" ] && [ "$_n" -lt 1000 ]; do
		_f=${_todo%% *}
		_todo=${_todo#"$_f"}
		_todo=${_todo# }
		_n=$((_n + 1))
		readelf -lW "$_f" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p'
		for _lib in $(readelf -dW "$_f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case " $_seen " in *" $_lib "*) continue ;; esac
			_seen="$_seen $_lib"
			# the cross compiler's own libstdc++ and libgcc_s as a last resort
			for _d in /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu \
				/usr/aarch64-linux-gnu/lib; do
				[ -e "$_d/$_lib" ] || continue
				echo "$_d/$_lib"
				_todo="$_todo $_d/$_lib"
				break
			done
		done
	done
}

# Debian's current kernel package (the one the metapackage points at), unpacked once
sh tests/tools/debfetch.sh --dep linux-image-6 "$kpkg" "$cache/kernel" ./boot 2>"$work/fetch.err" ||
	missing "Debian's kernel ($kpkg): $(cat "$work/fetch.err")"
kernel=$(ls "$cache"/kernel/boot/vmlinuz-* 2>/dev/null | head -1)
[ -n "$kernel" ] || die "$(cat "$cache/kernel/deb.info") has no /boot/vmlinuz"

root=$work/root
rm -rf "$root" "$work/out"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/work" "$work/out" ||
	die "cannot create $root"
if [ "$ARCH" = aarch64 ]; then
	sh tests/tools/debfetch.sh busybox-static:arm64 "$cache/busybox" ./bin/busybox \
		2>"$work/fetch.err" ||
		missing "busybox-static:arm64: $(cat "$work/fetch.err")"
	busybox=$cache/busybox/bin/busybox
else
	command -v busybox >/dev/null || die "busybox is not installed: run 'sudo make deps'"
	busybox=$(command -v busybox)
fi
cp "$busybox" "$root/bin/busybox" || die "cannot copy busybox"
# each file at its relative path; each shared library at its absolute one
for f in $files; do
	[ -f "$f" ] || die "no file $f"
	mkdir -p "$root/work/$(dirname "$f")" && cp "$f" "$root/work/$f" || die "cannot copy $f"
done
for f in "$busybox" $files; do
	if [ "$ARCH" = aarch64 ]; then
		arm64_libs "$f"
	else
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
	fi
done | sort -u | while read -r lib; do
	# where the guest's loader looks: the cross toolchain's directory is not among them
	to=$lib
	case "$lib" in /usr/aarch64-linux-gnu/lib/*) to=/lib/aarch64-linux-gnu/${lib##*/} ;; esac
	mkdir -p "$root$(dirname "$to")" && cp -L "$lib" "$root$to"
done

# x86: results on a second serial port; arm64's virt machine has one UART, shared
# with the kernel's console, which quiet loglevel=0 keeps to emergencies
if [ "$ARCH" = aarch64 ]; then
	result_tty=/dev/ttyAMA0
	result_log=$work/console.log
else
	result_tty=/dev/ttyS1
	result_log=$work/ttyS1.log
fi
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
	echo 'echo $? >/out/rc'
	echo 'uname -r >/out/kernel-release'
	echo '{'
	echo '	echo CULPERT-VM-BEGIN'
	echo '	tar -C /out -cf - . | gzip | base64'
	echo '	echo CULPERT-VM-END'
	echo "} >$result_tty"
	echo 'poweroff -f'
} >"$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz" ||
	die "cannot build the initramfs"

if [ "$ARCH" = aarch64 ]; then
	# max: PAC and BTI, as Graviton 3 and Ampere cores have them; pauth-impdef keeps
	# PAC cheap to emulate
	set -- -machine virt,accel=tcg -cpu max,pauth-impdef=on -smp 1 -m 1024 \
		-append "console=ttyAMA0 rdinit=/init quiet loglevel=0 panic=-1" \
		-serial "file:$work/console.log"
else
	set -- -machine accel=tcg -cpu max -smp 1 -m 512 \
		-append "console=ttyS0 rdinit=/init quiet loglevel=3 psi=1 panic=-1" \
		-serial "file:$work/console.log" -serial "file:$work/ttyS1.log"
fi
timeout "$TIMEOUT" "$qemu" -nodefaults -display none -no-reboot \
	-kernel "$kernel" -initrd "$work/initrd.gz" "$@" 2>"$work/qemu.err" ||
	die "qemu failed or timed out after ${TIMEOUT}s: $(head -1 "$work/qemu.err") (console: $work/console.log)"

tr -d '\r' <"$result_log" | sed -n '/^CULPERT-VM-BEGIN$/,/^CULPERT-VM-END$/p' | sed '1d;$d' |
	base64 -d | gzip -dc | tar -C "$work/out" -xf - 2>/dev/null ||
	die "the guest sent back no results (console: $work/console.log)"
[ -f "$work/out/rc" ] || die "the guest sent back no exit status (console: $work/console.log)"
exit "$(cat "$work/out/rc")"
