#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The layers of the tree (README "Layout"): lib/ depends on nothing of
# ours; proto/ only on lib/; cli/ only on proto/ and lib/; user/ on all
# three and bpf/culpert.h.  The build enforces it with per-layer include
# paths; this names the offending file and header, which a compiler's "No
# such file" does not explain.  Exit 1 on a violation.
#   check_layout.sh [ROOT]
set -u
root=${1:-.}
cd "$root" || exit 2

# the layer of a file: its top directory; lib/sampler/ (the in-process
# sampler, its own .so) is a layer of its own
layer_of_file() {
	case "$1" in lib/sampler/*) echo sampler ;; *) echo "${1%%/*}" ;; esac
}

# the layer a header included by file $2 belongs to: the includer's own
# directory first, as the compiler looks, then where it lives
layer_of() {
	[ -f "$(dirname "$2")/$1" ] && { layer_of_file "$2"; return; }
	for d in lib lib/sym proto cli bpf include/culpert; do
		[ -f "$d/$1" ] && { echo "${d%%/*}"; return; }
	done
	for f in user/"$1" user/*/"$1"; do
		[ -f "$f" ] && { echo user; return; }
	done
	case "$1" in *.pb-c.h) echo proto; return ;; *.skel.h) echo user; return ;; esac
	echo unknown
}

allowed() {
	case "$1:$2" in
	sampler:sampler | sampler:include) return 0 ;;
	lib:lib) return 0 ;;
	proto:lib | proto:proto) return 0 ;;
	cli:lib | cli:proto | cli:cli) return 0 ;;
	user:*) return 0 ;;
	esac
	return 1
}

bad=0
for f in $(find lib proto cli user -name '*.[ch]' | sort); do
	from=$(layer_of_file "$f")
	for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		to=$(layer_of "$h" "$f")
		if ! allowed "$from" "$to"; then
			echo "error: $f includes \"$h\" from $to/: $from/ may not depend on $to/ (see README, Layout)" >&2
			bad=1
		fi
	done
done
exit $bad
