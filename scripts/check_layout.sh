#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The layers of the tree (README "Layout"): lib/ depends on nothing of
# ours; proto/ only on lib/; proto/query/ on proto/; cli/ on those;
# preload/ (libculpert-sampler.so) only on include/; each folder of user/
# on the layers below user/, bpf/, and the user/ folders its USER_SEES_
# line of the Makefile names, never a sibling.  The build enforces it with
# per-folder include paths; this names the offending file and header,
# which a compiler's "No such file" does not explain.  Exit 1 on a
# violation.
#   check_layout.sh [ROOT]
set -u
root=${1:-.}
cd "$root" || exit 2

# user/'s order, from the Makefile, the one place it is written:
# "probe:target probe" ...
user_sees=$(sed -n 's/^USER_SEES_\([a-z]*\) := \([a-z ]*\)$/\1:\2/p' Makefile | tr ' ' ',')
[ -n "$user_sees" ] || { echo "error: no USER_SEES_ lines in $root/Makefile" >&2; exit 2; }

# the layer of a file: proto/query, user/FOLDER, or its top directory
layer_of_file() {
	case "$1" in
	proto/query/*) echo proto/query ;;
	user/*/*) f=${1#user/}; echo "user/${f%%/*}" ;;
	user/*) echo user/main ;;
	lib/sym/*) echo lib ;;
	*) echo "${1%%/*}" ;;
	esac
}

# the folders a file of layer $1 sees, as its include path has them
sees() {
	case "$1" in
	preload) echo preload include/culpert ;;
	lib) echo lib lib/sym ;;
	proto) echo lib lib/sym proto ;;
	proto/query) echo lib lib/sym proto proto/query ;;
	cli) echo lib lib/sym proto proto/query cli ;;
	user/*)
		echo lib lib/sym proto proto/query bpf include/culpert user
		u=${1#user/}
		for line in $user_sees; do
			[ "${line%%:*}" = "$u" ] && echo "${line#*:}" | tr ',' '\n' | sed 's|^|user/|'
		done
		[ "$u" = main ] && for line in $user_sees; do echo "user/${line%%:*}"; done
		;;
	esac
}

# where header $1, included by file $2 of layer $3, comes from: the
# includer's own directory first, as the compiler looks, then the folders
# the layer sees; "-" when it is found there, else the layer that has it
header_layer() {
	[ -f "$(dirname "$2")/$1" ] && { echo -; return; }
	case "$3:$1" in
	user/*:*.skel.h) echo -; return ;;
	*:*.skel.h) echo bpf; return ;;
	esac
	for d in $(sees "$3"); do
		[ -f "$d/$1" ] && { echo -; return; }
	done
	for d in lib lib/sym proto proto/query cli bpf include/culpert preload user/*; do
		[ -f "$d/$1" ] && { layer_of_file "$d/$1"; return; }
	done
	echo -
}

bad=0
for f in $(find lib proto cli preload user -name '*.[ch]' | sort); do
	from=$(layer_of_file "$f")
	for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		to=$(header_layer "$h" "$f" "$from")
		if [ "$to" != - ]; then
			echo "error: $f includes \"$h\" from $to/: $from/ may not depend on $to/ (see README, Layout)" >&2
			bad=1
		fi
	done
done
exit $bad
