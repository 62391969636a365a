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

# free_port: a loopback TCP port nobody listens on now
free_port() {
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# prom_start CONFIG: Debian's Prometheus with CONFIG (checked by promtool first) on a free
# loopback port, its data in $TMP; sets $prom_port
prom_start() {
	promtool check config "$1" >"$TMP/pcc" 2>&1 ||
		{ fail "promtool check config: $(cat "$TMP/pcc")"; return 1; }
	prom_port=$(free_port)
	rm -rf "$TMP/promdata"
	prometheus --config.file="$1" --storage.tsdb.path="$TMP/promdata" \
		--web.listen-address="127.0.0.1:$prom_port" >"$TMP/prom.log" 2>&1 &
	track $!
}

# prom_query EXPR: the number of series Prometheus's HTTP query API returns for EXPR
prom_query() {
	curl -s --get --data-urlencode "query=$1" "http://127.0.0.1:$prom_port/api/v1/query" |
		$PY -c 'import json, sys
d = json.load(sys.stdin)
print(len(d["data"]["result"]) if d.get("status") == "success" else -1)' 2>/dev/null || echo -1
}

# prom_value EXPR: the value of EXPR's one series, as Prometheus answers it; "-" if not one
prom_value() {
	curl -s --get --data-urlencode "query=$1" "http://127.0.0.1:$prom_port/api/v1/query" |
		$PY -c 'import json, sys
r = json.load(sys.stdin).get("data", {}).get("result", [])
print(r[0]["value"][1] if len(r) == 1 else "-")' 2>/dev/null || echo -
}
