#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Download one Debian package with apt-get (no install) and unpack it into
# DIR, once: for files the tests and `make vmlinux` need from a package that
# must not, or cannot, be installed on this machine (another architecture's
# kernel, busybox-static:arm64 which would replace the host's busybox).
#
#   debfetch.sh [--dep PREFIX] PACKAGE[:ARCH] DIR [PATH...]
#
# PATHs (./boot, ./bin/busybox): unpack only those members, not the whole
# package (a kernel's modules are most of it).
# --dep PREFIX: PACKAGE is a metapackage (linux-image-arm64:arm64); take the
# package it depends on whose name starts with PREFIX (linux-image-6.1.0-57-arm64).
# DIR/deb.info gets "Package Version Architecture SHA256" of what was unpacked.
# Exits 0, or 1 with one line on stderr saying what could not be had.
set -u

dep=""
if [ "${1:-}" = --dep ]; then
	dep=$2
	shift 2
fi
[ $# -ge 2 ] || { echo "usage: debfetch.sh [--dep PREFIX] PACKAGE[:ARCH] DIR [PATH...]" >&2; exit 2; }
want=$1
dir=$2
shift 2
[ -f "$dir/deb.info" ] && exit 0

case "$want" in *:*) arch=${want#*:} ;; *) arch=$(dpkg --print-architecture) ;; esac

resolve() {
	[ -z "$dep" ] && { echo "$want"; return; }
	apt-cache depends "$want" 2>/dev/null |
		awk -v p="$dep" -v a=":$arch" '$1 == "Depends:" && index($2, p) == 1 {
			sub(/:.*/, "", $2); print $2 a; exit }'
}
fetch() {
	pkg=$(resolve)
	rm -rf "$dir" && mkdir -p "$dir/dl" || return 1
	# apt's sandbox user may not write here: a warning, not a failure
	[ -n "$pkg" ] && (cd "$dir/dl" && apt-get download -q "$pkg" >/dev/null 2>&1)
}
# package lists may be empty, lack the architecture, or be stale and name a version
# the mirror dropped
if ! fetch; then
	if ! dpkg --print-foreign-architectures | grep -qx "$arch" &&
		[ "$arch" != "$(dpkg --print-architecture)" ]; then
		dpkg --add-architecture "$arch" 2>/dev/null
	fi
	apt-get update -qq >/dev/null 2>&1
	fetch || {
		echo "error: cannot download the Debian package ${pkg:-$want}, even after apt-get update" \
			"(dpkg architecture $arch added?)" >&2
		exit 1
	}
fi
deb=$(ls "$dir"/dl/*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" "$@" ||
	{ echo "error: cannot unpack ${*:-everything} of $deb" >&2; exit 1; }
info="$(dpkg-deb -f "$deb" Package Version Architecture | awk '{printf "%s ", $2}')"
echo "$info$(sha256sum "$deb" | cut -d' ' -f1)" >"$dir/deb.info.tmp"
rm -rf "$dir/dl"
mv "$dir/deb.info.tmp" "$dir/deb.info"
