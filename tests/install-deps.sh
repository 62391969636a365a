#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Install the Debian packages of $DEB_PACKAGES that are missing.
#   install-deps.sh           install what is missing (needs root and apt-get)
#   install-deps.sh --check   only report what is missing; exit 1 if anything is
set -eu

missing=""
for p in $DEB_PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && exit 0

if [ "${1:-}" = "--check" ]; then
	echo "error: missing Debian packages:$missing; run 'sudo make deps' to install them" >&2
	exit 1
fi

if [ "$(id -u)" != 0 ]; then
	echo "error: missing Debian packages:$missing; installing them needs root: run 'sudo make deps'" >&2
	exit 1
fi

echo "  DEPS      installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# a fresh machine may have empty package lists
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
