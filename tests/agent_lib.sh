# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Helpers of the agent's shell tests (tests/bpf/test_agent_frame.sh,
# tests/agent/*.sh), after tests/lib.sh.  $PY is Debian's python3.

# agent_start NAME ARGS...: the agent on a free loopback port, with $AGENT_ARGS before ARGS;
# sets $agent_pid and $agent_url
agent_start() {
	_n=$1
	shift
	: >"$TMP/$_n.err"
	"$BIN_BPF" agent --listen 127.0.0.1:0 ${AGENT_ARGS:-} "$@" 2>"$TMP/$_n.err" &
	agent_pid=$!
	track "$agent_pid"
	wait_for "$TMP/$_n.err" "agent listening on" 20 ||
		{ fail "agent did not start: $(head -c 600 "$TMP/$_n.err")"; return 1; }
	agent_url=$(sed -n 's/.*agent listening on \(http:[^ ]*\) .*/\1/p' "$TMP/$_n.err")
}

# get PATH: the body of a GET (with $AUTH's header when set)
get() {
	if [ -n "${AUTH:-}" ]; then
		curl -s -H "Authorization: Bearer $AUTH" "$agent_url$1"
	else
		curl -s "$agent_url$1"
	fi
}

# field PID NAME: NAME of target PID in /targets (the live one first); "-" if not listed
field() {
	get /targets | $PY -c 'import json, sys
d = json.load(sys.stdin)
t = sorted((x for x in d["targets"] if x["pid"] == int(sys.argv[1])), key=lambda x: x["state"] != "live")
print("-" if not t else "null" if t[0][sys.argv[2]] is None else t[0][sys.argv[2]])' "$1" "$2"
}

# wait_field PID NAME VALUE SECONDS
wait_field() {
	_i=0
	while [ "$(field "$1" "$2")" != "$3" ]; do
		_i=$((_i + 1))
		[ "$_i" -gt $(($4 * 10)) ] && return 1
		sleep 0.1
	done
}
