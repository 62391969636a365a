# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Helpers of the symbolization tests (sourced after tests/lib.sh).

OBJPROF=$OUTPUT/tests/tools/objprof

# symdump PROFILE: every mapping, location, frame and sample as text (profdump --raw)
symdump() {
	"$PROFDUMP" --raw "$1"
}

# symdump_same PROFILE: symdump without what one capture counts of its own reading and
# another need not (mapping records the perf ring dropped under load, mappings_lost_records):
# for comparing two captures of one run symbolized two ways
symdump_same() {
	symdump "$1" | grep -v '^comment mappings_lost_records='
}

# line_of FILE MARKER: the number of the line that ends in the comment /* MARKER */ or // MARKER
line_of() {
	grep -n -e "/\* $2 \*/\$" -e "// $2\$" "$1" | head -n 1 | cut -d: -f1
}

# frames_of PROFILE LEAF_SYSTEM_NAME_PATTERN: the frames (name<TAB>system<TAB>file<TAB>line)
# of the first location whose innermost frame's system name matches, innermost first
frames_of() {
	symdump "$1" | awk -F'\t' -v pat="$2" '
		/^frame / { split($1, h, " "); id = h[2]; d = h[3]; name = $1; sub(/^frame [0-9]+ [0-9]+ /, "", name)
			if (d == 0 && !found && $2 ~ pat) { found = id }
			if (found == id) print name "\t" $2 "\t" $3 "\t" $4 }'
}

# vaddrs_of PROFILE: "FILE<TAB>VADDR<TAB>LOC_ID" for every location of a file mapping, the
# link-time address computed from the file's own program headers (independently of culpert)
vaddrs_of() {
	symdump "$1" | awk '
		/^mapping / { split($3, r, "-"); start[$2] = r[1]; off[$2] = $4; file[$2] = $5 }
		/^location / && $4 != 0 && file[$4] !~ /^\[/ && file[$4] != "" {
			print file[$4], start[$4], off[$4], $3, $2 }' |
	while read -r f start off addr id; do
		foff=$((0x$addr - 0x$start + 0x$off))
		readelf -lW "$f" | awk '$1 == "LOAD" { print $2, $3, $5 }' |
		while read -r so sv sz; do
			if [ "$foff" -ge $((so)) ] && [ "$foff" -lt $((so + sz)) ]; then
				printf '%s\t0x%x\t%s\n' "$f" $((foff - so + sv)) "$id"
				break
			fi
		done
	done
}

# addr2line_diff PROFILE DIR [FILES_OF]: our (system name, line) of every frame of every
# location against `addr2line -f -i` on the same addresses, and the source file too for
# objects whose path matches the regexp FILES_OF (binutils 2.40 can name the wrong file of
# a DWARF 5 line table: glibc's are compared by name and line only; and a line 0 has no
# file worth comparing); prints the differences
addr2line_diff() {
	vaddrs_of "$1" >"$2/vaddrs"
	# ours: FILE VADDR DEPTH FUNCTION LINE SOURCE
	symdump "$1" | awk -F'\t' -v OFS='\t' -v fo="${3:-^$}" '
		NR == FNR { v[$3] = $1 OFS $2; o[$3] = $1; next }
		/^frame / { split($1, h, " "); if (h[2] in v)
			print v[h[2]], h[3], ($2 == "" ? "??" : $2), $4, (o[h[2]] ~ fo && $4 > 0 ? $3 : "-") }' \
		"$2/vaddrs" - | sort >"$2/ours"
	# theirs: per object, "0x..." opens an address, then pairs of function and file:line
	: >"$2/theirs.raw"
	for f in $(cut -f1 "$2/vaddrs" | sort -u); do
		# shellcheck disable=SC2046
		addr2line -f -i -a -e "$f" $(awk -F'\t' -v f="$f" '$1 == f { print $2 }' "$2/vaddrs") |
			awk -v f="$f" -v OFS='\t' -v fo="${3:-^$}" '
				/^0x/ { addr = $1; sub(/^0x0*/, "0x", addr); d = 0; next }
				{ fn = $0; getline fl; sub(/ \(discriminator [0-9]+\)$/, "", fl)
				  n = split(fl, parts, ":"); ln = parts[n]; if (ln == "?") ln = 0
				  src = substr(fl, 1, length(fl) - length(parts[n]) - 1); if (src == "??") src = ""
				  print f, addr, d++, fn, ln, (f ~ fo && ln > 0 ? src : "-") }' >>"$2/theirs.raw"
	done
	sort "$2/theirs.raw" >"$2/theirs"
	diff "$2/ours" "$2/theirs"
}

# debug_path DIR BUILD_ID: where a .build-id tree under DIR keeps that debug file
debug_path() {
	echo "$1/.build-id/$(echo "$2" | cut -c1-2)/$(echo "$2" | cut -c3-).debug"
}

# start_debuginfod DIR BUILD_ID: a local server indexing DIR, ready once it serves the
# debug info of BUILD_ID; sets $dfd_url and $dfd_pid
start_debuginfod() {
	port=$((20000 + $$ % 20000))
	debuginfod -F "$1" -p "$port" -d "$TMP/debuginfod.sqlite" >"$TMP/debuginfod.log" 2>&1 &
	dfd_pid=$!
	track "$dfd_pid"
	dfd_url=http://127.0.0.1:$port
	# ready once it serves the file (a fresh client cache each try: 404s are cached)
	for _i in $(seq 50); do
		rm -rf "$TMP/dfd-probe"
		DEBUGINFOD_CACHE_PATH=$TMP/dfd-probe DEBUGINFOD_URLS=$dfd_url \
			debuginfod-find debuginfo "$2" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	fail "debuginfod did not serve $2: $(tail -n 5 "$TMP/debuginfod.log")"
	return 1
}
