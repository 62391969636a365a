#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The container image of culpert-bpf, from Debian packages only (`make image` runs
# this; docs/kubernetes.md).  No container registry is involved:
#
#   1. the runtime packages: every DT_NEEDED library of the staged binaries, mapped to
#      the Debian package that ships it on this machine (dpkg -S), so the list follows
#      the build instead of being kept by hand;
#   2. those packages and their dependencies extracted from the Debian archive by
#      mmdebstrap --variant=extract (no maintainer scripts, no dpkg, no shell: nothing
#      of Debian runs), then everything a runtime does not need removed: the dpkg and
#      apt state, programs, documentation except the copyright files, locales;
#   3. the staged `make install` (culpert-bpf, culpert, libculpert-sampler.so), a
#      passwd/group with the unprivileged user, and culpert-bpf's file capabilities;
#   4. `podman import` of the tree with the entrypoint, the user and labels.
#
# Environment (the Makefile sets it): STAGE (a DESTDIR of `make install PREFIX=/usr`),
# WORK (a directory for the trees), IMAGE (name:tag), DEB_ARCH, MULTIARCH, SUITE, MIRROR,
# SECURITY_MIRROR, VERSION, REVISION; IMAGE_FORCE=1 rebuilds what is cached.
#
# Cached by their inputs: the extracted base by its package list, archive and
# architecture; the image by that plus the staged files and this script (a podman
# label holds the key), so an unchanged build of the same version is not rebuilt.
set -eu

: "${STAGE:?}" "${WORK:?}" "${IMAGE:?}" "${DEB_ARCH:?}" "${MULTIARCH:?}" "${SUITE:?}" \
	"${MIRROR:?}" "${SECURITY_MIRROR:?}" "${VERSION:?}" "${REVISION:?}"
# the unprivileged user the image runs as (a numeric uid: runAsNonRoot can check it)
UID_GID=65532
# what culpert-bpf may use, granted by the container's bounding set (docs/kubernetes.md)
FILE_CAPS=cap_bpf,cap_perfmon,cap_sys_ptrace,cap_sys_resource,cap_dac_read_search,cap_checkpoint_restore+p

die() {
	echo "error: make image: $*" >&2
	exit 2
}

for t in mmdebstrap podman setcap readelf dpkg sha256sum tar; do
	command -v "$t" >/dev/null ||
		die "$t is missing: install the image tools with 'sudo make image-deps'"
done

# "SONAME FILE" for every DT_NEEDED entry of the staged ELF files
needed() {
	find "$STAGE" -type f | sort | while read -r f; do
		readelf -h "$f" >/dev/null 2>&1 || continue
		readelf -d "$f" | sed -n "s|.*(NEEDED).*\[\(.*\)\]|\1 ${f#"$STAGE"}|p"
	done
}

# the packages shipping those libraries for this architecture ("libbpf1"): one dpkg -S
# for all of them (each call reads the whole file database)
runtime_packages() {
	needed >"$WORK/needed"
	sonames=$(cut -d' ' -f1 "$WORK/needed" | sort -u)
	# shellcheck disable=SC2046
	dpkg -S $(for so in $sonames; do printf '*/%s/%s ' "$MULTIARCH" "$so"; done) \
		>"$WORK/owners" 2>/dev/null
	for so in $sonames; do
		grep -q "/$MULTIARCH/$so\$" "$WORK/owners" || die "no installed Debian package ships \
$so for $MULTIARCH (needed by $(grep -m1 "^$so " "$WORK/needed" | cut -d' ' -f2)): the image takes \
runtime libraries from Debian packages only; install its -dev package ('sudo make deps')"
	done
	grep -v '^diversion ' "$WORK/owners" | sed 's/: .*//; s/, /\n/g' | sed 's/:.*//' | sort -u
}

# key of a set of inputs: stdin hashed
key() { sha256sum | cut -c1-16; }

mkdir -p "$WORK"
pkgs=$(runtime_packages | tr '\n' ',' | sed 's/,$//')
[ -n "$pkgs" ] || die "found no libraries needed by the files in $STAGE"

sources() {
	printf 'deb %s %s main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE-updates"
	printf 'deb %s %s-security main\n' "$SECURITY_MIRROR" "$SUITE"
}

# --- 1, 2: the runtime libraries from the Debian archive ---------------------------
base_key=$( { echo "$pkgs"; echo "$DEB_ARCH"; sources; sed -n '/^prune_base/,/^}/p' "$0"; } | key)

prune_base() {
	root=$1
	# apt's and dpkg's state (nothing is "installed"), the archive's keyrings, programs
	# (debconf and ucf came in as dependencies: perl scripts without a perl to run them)
	rm -rf "$root"/var/lib/apt "$root"/var/lib/dpkg "$root"/var/cache "$root"/var/log \
		"$root"/var/lib/ucf "$root"/etc/apt "$root"/etc/dpkg "$root"/etc/debconf.conf \
		"$root"/etc/ucf.conf "$root"/etc/hostname "$root"/etc/resolv.conf "$root"/etc/fstab \
		"$root"/usr/bin "$root"/usr/sbin "$root"/bin "$root"/sbin "$root"/usr/libexec \
		"$root"/usr/lib/mime "$root"/dev/*
	# of /usr/share only the copyright files: the licences go with the binaries
	find "$root"/usr/share -mindepth 1 -maxdepth 1 ! -name doc -exec rm -rf {} +
	find "$root"/usr/share/doc -type f ! -name copyright -delete
	find "$root"/usr/share/doc -type l -delete
	find "$root"/usr/share/doc -depth -type d -empty -delete
}

base=$WORK/base-$DEB_ARCH
if [ "${IMAGE_FORCE:-}" = 1 ] || [ "$(cat "$base.key" 2>/dev/null)" != "$base_key" ]; then
	echo "  DEBOOT    $SUITE/$DEB_ARCH: $(echo "$pkgs" | tr ',' ' ')"
	rm -rf "$base" "$base.new" "$base.key"
	# shellcheck disable=SC2046
	if ! sources | mmdebstrap --quiet --variant=extract --arch="$DEB_ARCH" \
		--include="$pkgs" "$SUITE" "$base.new" - >"$WORK/mmdebstrap.log" 2>&1; then
		die "mmdebstrap could not build the $SUITE/$DEB_ARCH tree from $MIRROR: \
$(grep -m2 -E '^E:|rror' "$WORK/mmdebstrap.log" | tr '\n' ' ')(log: $WORK/mmdebstrap.log)"
	fi
	prune_base "$base.new"
	mv "$base.new" "$base"
	echo "$base_key" >"$base.key"
fi

# --- 3, 4: our files, the user, the capabilities; the image ---------------------------
image_key=$( { echo "$base_key"; echo "$IMAGE"; echo "$VERSION $REVISION"; cat "$0";
	(cd "$STAGE" && find . -type f | sort | xargs sha256sum); } | key)
if [ "${IMAGE_FORCE:-}" != 1 ] && [ "$(podman image inspect --format \
	'{{index .Labels "org.culpert.inputs"}} {{.Architecture}}' "$IMAGE" 2>/dev/null)" = \
	"$image_key $DEB_ARCH" ]; then
	echo "  IMAGE     $IMAGE (up to date)"
	exit 0
fi

root=$WORK/root-$DEB_ARCH
rm -rf "$root"
cp -a "$base" "$root"
cp -a "$STAGE"/. "$root"/
# headers are for building against culpert, not for running it
rm -rf "$root"/usr/include
printf 'root:x:0:0:root:/root:/nonexistent\nculpert:x:%s:%s:culpert-bpf:/nonexistent:/nonexistent\n' \
	"$UID_GID" "$UID_GID" >"$root"/etc/passwd
printf 'root:x:0:\nculpert:x:%s:\n' "$UID_GID" >"$root"/etc/group
setcap "$FILE_CAPS" "$root"/usr/bin/culpert-bpf ||
	die "setcap on the image's culpert-bpf failed: setting file capabilities needs root \
('sudo make image') and a file system with xattrs under $WORK"
for sh in bin/sh usr/bin/sh bin/bash usr/bin/bash bin/dash usr/bin/dash; do
	[ -e "$root/$sh" ] && die "the image would carry a shell ($sh): it must not"
done

tarball=$WORK/rootfs-$DEB_ARCH.tar
# the file capabilities travel as a PAX xattr header; names sorted for a stable layer
tar --create --file "$tarball" --directory "$root" --numeric-owner --sort=name \
	--xattrs --xattrs-include=security.capability .
rm -rf "$root"

created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
podman import --quiet --os linux --arch "$DEB_ARCH" \
	--change 'ENTRYPOINT ["/usr/bin/culpert-bpf"]' \
	--change 'CMD ["agent"]' \
	--change "USER $UID_GID:$UID_GID" \
	--change 'WORKDIR /' \
	--change 'ENV PATH=/usr/bin' \
	--change 'EXPOSE 7790/tcp' \
	--change "LABEL org.opencontainers.image.title=culpert-bpf" \
	--change "LABEL org.opencontainers.image.description=\"eBPF heap-allocation profiler (Debian $SUITE packages)\"" \
	--change "LABEL org.opencontainers.image.version=$VERSION" \
	--change "LABEL org.opencontainers.image.revision=$REVISION" \
	--change "LABEL org.opencontainers.image.created=$created" \
	--change "LABEL org.opencontainers.image.licenses=\"LGPL-2.1 OR BSD-2-Clause\"" \
	--change "LABEL org.culpert.debian-packages=$pkgs" \
	--change "LABEL org.culpert.inputs=$image_key" \
	--message "culpert-bpf $VERSION from Debian $SUITE/$DEB_ARCH" \
	"$tarball" "$IMAGE" >/dev/null ||
	die "podman import of $tarball failed"
rm -f "$tarball"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "  IMAGE     $IMAGE ($((size / 1000000)) MB, $DEB_ARCH)"
