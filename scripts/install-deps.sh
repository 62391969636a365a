#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Install the Debian packages of the named sets that are missing.  A set is
# a list in scripts/packages/SET.txt: one package a line, '#' starts a
# comment saying why.  A name with an architecture (libelf-dev:arm64, for
# the cross build) needs that architecture added to dpkg first, which is
# done here too.
#   install-deps.sh SET...           install what is missing (needs root and apt-get)
#   install-deps.sh --check SET...   only report what is missing; exit 1 if anything is
#   install-deps.sh --list SET...    print the sets' packages, one a line, sorted
set -eu

mode=install
case "${1:-}" in
--check | --list) mode=${1#--}; shift ;;
esac
dir=$(dirname "$0")/packages
sets() { echo $(cd "$dir" && ls -- *.txt | sed 's/\.txt$//'); }
[ $# -gt 0 ] || { echo "error: no package set named: name one or more of: $(sets)" >&2; exit 2; }
packages=""
for set in "$@"; do
	if [ ! -r "$dir/$set.txt" ]; then
		echo "error: no package set '$set' in $dir/: name one of: $(sets)" >&2
		exit 2
	fi
	packages="$packages $(sed 's/#.*//' "$dir/$set.txt")"
done
# shellcheck disable=SC2086
packages=$(printf '%s\n' $packages | sort -u)
if [ "$mode" = list ]; then
	echo "$packages"
	exit 0
fi

deps_cmd=${DEPS_CMD:-make deps}
missing=""
for p in $packages; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && exit 0

if [ "$mode" = check ]; then
	echo "error: missing Debian packages:$missing; run 'sudo $deps_cmd' to install them" >&2
	exit 1
fi

if [ "$(id -u)" != 0 ]; then
	echo "error: missing Debian packages:$missing; installing them needs root: run 'sudo $deps_cmd'" >&2
	exit 1
fi

echo "  DEPS      installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# foreign architectures named (pkg:arch) that dpkg does not know yet
native=$(dpkg --print-architecture)
for a in $(printf '%s\n' $missing | sed -n 's/^[^:]*:\(.*\)$/\1/p' | sort -u); do
	[ "$a" = "$native" ] && continue
	dpkg --print-foreign-architectures | grep -qx "$a" || dpkg --add-architecture "$a"
done
# a fresh machine may have empty package lists (or none yet for an added architecture)
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
# services the tests start instances of their own of (redis-server): not left running
for svc in redis-server; do
	case " $missing " in
	*" $svc "*)
		if command -v service >/dev/null 2>&1; then
			service "$svc" stop >/dev/null 2>&1 || true
		fi
		if command -v update-rc.d >/dev/null 2>&1; then
			update-rc.d "$svc" disable >/dev/null 2>&1 || true
		fi
		if command -v systemctl >/dev/null 2>&1; then
			systemctl disable --now "$svc" >/dev/null 2>&1 || true
		fi
		;;
	esac
done
