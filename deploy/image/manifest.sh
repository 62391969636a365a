#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The last step of `make image`: NAME:TAG for the architectures built, each already
# NAME:TAG-DEBARCH.  One architecture: its image tagged; more: a manifest list of them.
# What held the name before goes first (podman 4.3: `manifest rm` takes a plain image
# for a list and removes it, and `untag IMAGE` without a name removes every name).
#   manifest.sh NAME TAG DEBARCH...
set -eu
image=$1:$2
tag=$2
# as podman stores it, which `manifest add` needs: a name without a registry host
# goes under localhost/
case ${1%%/*} in
*.* | *:* | localhost) local=$1 ;;
*) local=localhost/$1 ;;
esac
shift 2

if podman manifest inspect "$image" >/dev/null 2>&1; then
	podman manifest rm "$image" >/dev/null
elif podman image exists "$image"; then
	podman untag "$image" "$image"
fi
if [ $# = 1 ]; then
	podman tag "$image-$1" "$image"
	exit 0
fi
podman manifest create "$image" >/dev/null
for a in "$@"; do
	podman manifest add "$image" "containers-storage:$local:$tag-$a" >/dev/null
done
