#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The container image and the DaemonSet, on this machine: `make image` builds it from
# the Debian archive (no registry); it runs under podman with exactly the flags
# deploy/kubernetes/daemonset.yaml implies (tests/tools/manifest_podman.py reads them
# off the manifest), as the image's non-root user with only the manifest's capabilities,
# and profiles a process of the host that `go tool pprof` then reads on the host; with
# the capability set minus BPF, PERFMON or SYS_PTRACE it fails naming the one missing.
#
# Every podman command here uses local images only (--pull=never).  What is this
# machine's and not the manifest's: `--runtime runc` (crun refuses this
# host's hybrid cgroup layout), explicit --ulimit values (root here lacks
# CAP_SYS_RESOURCE, so podman's defaults cannot be set), secret/configMap contents and
# the kubelet's /var/log/pods given as directories, and for `attach` an output directory.
# RuntimeDefault seccomp stands for containerd's (podman's own default plus bpf and
# perf_event_open for CAP_BPF/CAP_PERFMON, deploy/kubernetes/seccomp-profile.py);
# podman's own default, which is CRI-O's, is tested to fail with the seccomp message.
. tests/lib.sh

DS=deploy/kubernetes/daemonset.yaml
# the image the suite builds: its own name, so that a user's culpert-bpf images stay
NAME=culpert-bpf-test
MAXMB=80

# podman run as this machine needs it (see above)
podman_run() {
	podman run --rm --pull=never --runtime runc --ulimit nofile=20000:20000 \
		--ulimit nproc=4096:4096 "$@"
}

need_podman() {
	need_root || return 1
	command -v podman >/dev/null && command -v mmdebstrap >/dev/null ||
		{ fail "podman or mmdebstrap missing: run 'sudo make image-deps'"; return 1; }
}

# the manifest's flags, one per line in $TMP/flags; extra manifest_podman options in "$@"
derive_flags() {
	mkdir -p "$TMP/token" "$TMP/config" "$TMP/pods"
	[ -f "$TMP/token/token" ] || head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' \
		>"$TMP/token/token"
	cp deploy/kubernetes/agent.args "$TMP/config/"
	chmod -R go+rX "$TMP/token" "$TMP/config" "$TMP/pods"
	[ -f "$TMP/seccomp.json" ] || $PY deploy/kubernetes/seccomp-profile.py \
		/usr/share/containers/seccomp.json >"$TMP/seccomp.json"
	$PY tests/tools/manifest_podman.py flags $DS --runtime-default-seccomp "$TMP/seccomp.json" \
		--map /var/log/pods="$TMP/pods" --secret culpert-bpf-token="$TMP/token" \
		--configmap culpert-bpf-agent="$TMP/config" "$@" >"$TMP/flags" 2>"$TMP/flags.err" ||
		{ fail "manifest_podman: $(cat "$TMP/flags.err")"; return 1; }
}

# the lines of $TMP/flags as arguments (they hold no blanks: paths under $TMP)
flags() { tr '\n' ' ' <"$TMP/flags"; }

test_image_build() {
	need_podman || return
	start=$(date +%s)
	make -s image IMAGE_NAME=$NAME >"$TMP/build.log" 2>&1 ||
		{ fail "make image: $(tail -3 "$TMP/build.log")"; return; }
	echo "# make image: $(($(date +%s) - start)) s ($(tr '\n' ';' <"$TMP/build.log"))"
	IMG=$(make -s image-name IMAGE_NAME=$NAME)
	podman image inspect "$IMG" >"$TMP/inspect.json" 2>&1 || { fail "no image $IMG"; return; }
	$PY - "$TMP/inspect.json" "$MAXMB" "$(git describe --always --dirty)" <<-'EOF' >"$TMP/i.out" 2>&1 ||
	import json, sys
	i = json.load(open(sys.argv[1]))[0]
	c = i["Config"]
	size = i["Size"] / 1e6
	print(f"# image size {size:.1f} MB, {len(i['RootFS']['Layers'])} layer(s)")
	assert size < int(sys.argv[2]), f"{size:.1f} MB, over {sys.argv[2]} MB"
	# one layer, imported: nothing came from a base image of a registry
	assert len(i["RootFS"]["Layers"]) == 1, i["RootFS"]["Layers"]
	assert c["User"] == "65532:65532", c["User"]
	assert c["Entrypoint"] == ["/usr/bin/culpert-bpf"], c["Entrypoint"]
	assert c["Labels"]["org.opencontainers.image.version"] == sys.argv[3], c["Labels"]
	for p in ("libbpf1", "libc6", "libelf1", "libdw1", "zlib1g"):
	    assert p in c["Labels"]["org.culpert.debian-packages"].split(","), p
	EOF
		{ fail "$(tr '\n' ';' <"$TMP/i.out")"; return; }
	grep '^#' "$TMP/i.out"
	# what is inside: no shell, no package manager state, culpert-bpf's file capabilities
	cid=$(podman create --pull=never "$IMG") || { fail "podman create $IMG"; return; }
	podman export "$cid" >"$TMP/rootfs.tar"
	podman rm "$cid" >/dev/null
	$PY - "$TMP/rootfs.tar" <<-'EOF' >"$TMP/t.out" 2>&1 || fail "$(tr '\n' ';' <"$TMP/t.out")"
	import struct, sys, tarfile
	t = tarfile.open(sys.argv[1], encoding="utf-8", errors="surrogateescape")
	names = {m.name.lstrip("./"): m for m in t.getmembers()}
	shells = [n for n in names if n.rsplit("/", 1)[-1] in
	          ("sh", "bash", "dash", "ash", "zsh", "busybox", "perl", "python3")]
	assert not shells, f"shells or interpreters: {shells}"
	assert not [n for n in names if n.startswith(("var/lib/dpkg/", "var/lib/apt/", "etc/apt/"))]
	docs = [n for n in names if n.startswith("usr/share/") and names[n].isfile()]
	assert docs and all(n.endswith("/copyright") for n in docs), [n for n in docs
	    if not n.endswith("/copyright")][:5]
	for f in ("usr/bin/culpert-bpf", "usr/bin/culpert", "usr/lib/libculpert-sampler.so"):
	    assert f in names, f
	xattr = names["usr/bin/culpert-bpf"].pax_headers.get("SCHILY.xattr.security.capability")
	assert xattr, "culpert-bpf has no file capabilities"
	raw = xattr.encode("utf-8", "surrogateescape") if isinstance(xattr, str) else xattr
	magic, p0, i0, p1, i1 = struct.unpack("<IIIII", raw[:20])
	permitted = p0 | p1 << 32
	# CAP_DAC_READ_SEARCH 2, SYS_PTRACE 19, SYS_RESOURCE 24, PERFMON 38, BPF 39, CHECKPOINT_RESTORE 40
	want = sum(1 << c for c in (2, 19, 24, 38, 39, 40))
	assert permitted == want, f"permitted {permitted:#x}, want {want:#x}"
	assert not magic & 1, "effective bit set: a missing capability would fail execve()"
	EOF
	# every binary finds its libraries in the image (the dynamic linker says otherwise)
	podman_run "$IMG" --version >"$TMP/v.out" 2>&1 || fail "culpert-bpf --version: $(cat "$TMP/v.out")"
	podman_run --entrypoint /usr/bin/culpert "$IMG" --version >"$TMP/v.out" 2>&1 ||
		fail "culpert --version: $(cat "$TMP/v.out")"
	# built again, unchanged: cached
	start=$(date +%s)
	make -s image IMAGE_NAME=$NAME >"$TMP/build2.log" 2>&1 || fail "make image again failed"
	grep -q 'up to date' "$TMP/build2.log" || fail "rebuilt although nothing changed"
	echo "# make image, unchanged: $(($(date +%s) - start)) s"
}

# the image as the DaemonSet runs it profiles a host process (root's: CAP_SYS_PTRACE)
test_image_daemonset_attach() {
	need_podman || return
	IMG=$(make -s image-name IMAGE_NAME=$NAME)
	podman image exists "$IMG" || { fail "no image (image_build failed)"; return; }
	derive_flags || return
	grep -qx -- '--pid=host' "$TMP/flags" && grep -qx -- '--read-only' "$TMP/flags" &&
		grep -qx -- '--user=65532:65532' "$TMP/flags" && grep -qx -- '--cap-drop=ALL' "$TMP/flags" ||
		{ fail "the manifest's flags lost something: $(flags)"; return; }
	mkdir -p "$TMP/out" && chmod 1777 "$TMP/out"
	# lib.sh's helpers run $BIN_BPF: here culpert-bpf in the container; the manifest's
	# port is not published (attach serves nothing)
	cat >"$TMP/in-image" <<-EOF
	#!/bin/sh
	exec podman run --rm --pull=never --runtime runc --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
		--name culpert-test-$$ $(grep -v -- '--publish' "$TMP/flags" | tr '\n' ' ') \
		--volume=$TMP/out:$TMP/out:rw "$IMG" "\$@"
	EOF
	chmod +x "$TMP/in-image"
	BIN_BPF=$TMP/in-image
	start_target "$TMP/live.out" "$TARGETS/alloc_live" || return
	bpf_bg "$TMP/live.err" attach --pid "$target_pid" -o "$TMP/out/live.pb.gz" --rate 4KiB \
		--inuse || return
	kill -USR1 "$target_pid"
	# the agent's process as the kernel sees it: the image's user, the manifest's caps
	pid=$(podman inspect --format '{{.State.Pid}}' culpert-test-$$ 2>/dev/null)
	grep -E '^(Uid|CapEff):' "/proc/$pid/status" >"$TMP/status" 2>/dev/null
	wait_for "$TMP/live.out" '^done' 60 || { fail "alloc_live did not finish"; return; }
	stop_profiled live attach || return
	grep -q '^Uid:[[:space:]]*65532[[:space:]]' "$TMP/status" ||
		fail "culpert-bpf ran as $(grep Uid "$TMP/status")"
	# the manifest's capabilities, effective: BPF 39 PERFMON 38 SYS_PTRACE 19
	# DAC_READ_SEARCH 2 CHECKPOINT_RESTORE 40 SYS_RESOURCE 24, less what this machine's
	# root does not have to give (its bounding set: here no CAP_SYS_RESOURCE)
	want=$($PY - "$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)" <<-'EOF'
	import sys
	bits = {"BPF": 39, "PERFMON": 38, "SYS_PTRACE": 19, "DAC_READ_SEARCH": 2,
	        "CHECKPOINT_RESTORE": 40, "SYS_RESOURCE": 24}
	import yaml
	c = yaml.safe_load(open("deploy/kubernetes/daemonset.yaml"))
	add = c["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["add"]
	want = sum(1 << bits[a] for a in add) & int(sys.argv[1], 16)
	missing = [a for a in add if not (int(sys.argv[1], 16) >> bits[a]) & 1]
	if missing:
	    print(f"# not in this machine's bounding set, so not granted here: {missing}",
	          file=sys.stderr)
	print(f"{want:016x}")
	EOF
	)
	grep -q "^CapEff:[[:space:]]*$want\$" "$TMP/status" ||
		fail "effective capabilities $(grep CapEff "$TMP/status"), want $want"
	mv "$TMP/out/live.pb.gz" "$TMP/live.pb.gz" 2>/dev/null || true
	[ -s "$TMP/live.pb.gz" ] || { fail "no profile: $(tail -3 "$TMP/live.err")"; return; }
	# ground truth (tests/targets/alloc_live.c): keep_all leaves 32 MiB live, churn none.
	# At rate 4 KiB the std error of 32 MiB is sqrt(4096 * 32 MiB) = 0.37 MiB, 1.1%:
	# +-5% is 4.5 sigma.
	by_leaf "$TMP/live.pb.gz" 4 >"$TMP/est"
	keep=$(awk '$1 == "keep_all" { print $2 }' "$TMP/est")
	churn=$(awk '$1 == "churn" { print $2 }' "$TMP/est")
	truth=$(awk '$2 == "keep_all" { print $4 }' "$TMP/live.out")
	[ -n "$keep" ] && [ -n "$truth" ] && within_pct "$keep" "$truth" 5 ||
		fail "keep_all inuse_space ${keep:-none}, live $truth"
	[ "${churn:-0}" -eq 0 ] || fail "churn freed everything, inuse_space $churn"
	# google/pprof's reader on the host agrees
	go_totals_agree "$TMP/live.pb.gz"
}

# the capability set minus BPF, PERFMON or SYS_PTRACE: a clear error naming it
test_image_missing_capability() {
	need_podman || return
	IMG=$(make -s image-name IMAGE_NAME=$NAME)
	podman image exists "$IMG" || { fail "no image (image_build failed)"; return; }
	start_target "$TMP/t.out" "$TARGETS/alloc_live" || return
	# the preflight names what is missing; a root target's /proc/PID says CAP_SYS_PTRACE
	for cap in BPF PERFMON SYS_PTRACE; do
		derive_flags --drop-cap $cap || return
		grep -qx -- "--cap-add=$cap" "$TMP/flags" && { fail "$cap still added"; continue; }
		want="missing: CAP_$cap"
		[ $cap = SYS_PTRACE ] && want="Permission denied (run as root, or with CAP_SYS_PTRACE)"
		# shellcheck disable=SC2046
		expect_error 1 "$want" podman_run $(grep -v -- '--publish' "$TMP/flags") \
			--network=none "$IMG" attach --pid "$target_pid" --duration 1s -o -
	done
	# and with all of them, the same command works: what failed was the capability
	derive_flags || return
	# shellcheck disable=SC2046
	podman_run $(grep -v -- '--publish' "$TMP/flags") --network=none "$IMG" \
		probes --pid "$target_pid" >"$TMP/p.out" 2>&1 || fail "probes: $(tail -3 "$TMP/p.out")"
}

# podman's own default seccomp profile (containers/common, CRI-O's too) refuses bpf()
# without CAP_SYS_ADMIN: the error says it is seccomp, not the kernel
test_image_default_seccomp() {
	need_podman || return
	IMG=$(make -s image-name IMAGE_NAME=$NAME)
	podman image exists "$IMG" || { fail "no image (image_build failed)"; return; }
	start_target "$TMP/t.out" "$TARGETS/alloc_live" || return
	derive_flags || return
	# shellcheck disable=SC2046
	expect_error 1 'seccomp filter blocks it' podman_run \
		$(grep -v -- '--publish\|seccomp=' "$TMP/flags") --network=none "$IMG" \
		probes --pid "$target_pid"
}

# bearer-authenticated GET of the agent: body to FILE, prints the HTTP status
agent_get() {
	$PY - "http://127.0.0.1:$port$1" "$TMP/token/token" "$2" <<-'EOF'
	import sys, urllib.error, urllib.request
	url, tok, out = sys.argv[1:]
	req = urllib.request.Request(url, headers={"Authorization": "Bearer " + open(tok).read()})
	try:
	    r = urllib.request.urlopen(req, timeout=10)
	    code, body = r.status, r.read()
	except urllib.error.HTTPError as e:
	    code, body = e.code, e.read()
	except OSError as e:
	    code, body = 0, str(e).encode()
	open(out, "wb").write(body)
	print(code)
	EOF
}

# The agent as the DaemonSet starts it: its args and the ConfigMap's options.  It runs
# only once `culpert-bpf agent` exists; until then this says so and passes
# nothing.
test_image_agent() {
	need_podman || return
	IMG=$(make -s image-name IMAGE_NAME=$NAME)
	podman image exists "$IMG" || { fail "no image (image_build failed)"; return; }
	port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	derive_flags --publish-port "$port" || return
	$PY tests/tools/manifest_podman.py args $DS >"$TMP/args" || { fail "no args"; return; }
	# a target the ConfigMap's --select=usdt picks: it carries culpert span probes
	start_target "$TMP/t.out" "$TARGETS/span_abc" || return
	# shellcheck disable=SC2046
	podman run -d --pull=never --runtime runc --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
		--name culpert-agent-$$ $(flags) "$IMG" $(tr '\n' ' ' <"$TMP/args") >/dev/null \
		2>"$TMP/run.err" || { fail "podman run: $(cat "$TMP/run.err")"; return; }
	read -r probe_path _ <<-EOF
	$($PY tests/tools/manifest_podman.py probe $DS)
	EOF
	code=000
	for _ in $(seq 100); do
		code=$(agent_get "$probe_path" "$TMP/health") && [ "$code" = 200 ] && break
		podman container exists culpert-agent-$$ || break
		sleep 0.1
	done
	[ "$code" = 200 ] || fail "$probe_path answered $code: $(podman logs culpert-agent-$$ 2>&1 | tail -3)"
	[ "$(agent_get /targets "$TMP/targets.json")" = 200 ] || fail "/targets: $(cat "$TMP/targets.json")"
	grep -q "\"pid\": *$target_pid[,}]" "$TMP/targets.json" ||
		fail "/targets lacks the usdt target $target_pid: $(head -c 300 "$TMP/targets.json")"
	kill -USR1 "$target_pid"
	code=$(agent_get "/debug/pprof/heap?pid=$target_pid" "$TMP/heap.pb.gz")
	if [ "$code" = 503 ]; then
		fail "/debug/pprof/heap answered 503: $(head -c 200 "$TMP/heap.pb.gz")"
	elif [ "$code" != 200 ]; then
		fail "/debug/pprof/heap answered $code: $(head -c 200 "$TMP/heap.pb.gz")"
	else
		# go tool pprof cannot send a bearer token: it reads what was fetched with one
		go tool pprof -raw "$TMP/heap.pb.gz" >"$TMP/heap.raw" 2>&1 ||
			fail "go tool pprof: $(head -2 "$TMP/heap.raw")"
		grep -q 'inuse_space' "$TMP/heap.raw" || fail "the heap profile has no inuse_space"
	fi
	podman stop -t 10 culpert-agent-$$ >/dev/null 2>&1
	podman rm -f culpert-agent-$$ >/dev/null 2>&1
}

# the arm64 image and the manifest list of both (built from `make ARCH=arm64`, never run)
test_image_multiarch() {
	need_podman || return
	command -v aarch64-linux-gnu-gcc >/dev/null ||
		{ fail "aarch64-linux-gnu-gcc missing: package gcc-aarch64-linux-gnu ('sudo make deps')"; return; }
	# the arm64 binaries from $OUTPUT/arm64, where the arm64 VM test may have made them
	cross_locked make -s image IMAGE_NAME=$NAME IMAGE_ARCHES="x86 arm64" >"$TMP/mbuild.log" 2>&1 ||
		{ fail "make image IMAGE_ARCHES='x86 arm64': $(tail -3 "$TMP/mbuild.log")"; return; }
	IMG=$(make -s image-name IMAGE_NAME=$NAME)
	podman manifest inspect "$IMG" >"$TMP/list.json" 2>&1 || { fail "no manifest list $IMG"; return; }
	$PY - "$TMP/list.json" <<-'EOF' >"$TMP/m.out" 2>&1 || fail "$(cat "$TMP/m.out")"
	import json, sys
	m = json.load(open(sys.argv[1]))
	arches = sorted(x["platform"]["architecture"] for x in m["manifests"])
	assert arches == ["amd64", "arm64"], arches
	EOF
	podman image inspect --format '{{.Architecture}} {{.Size}}' "$IMG-arm64" >"$TMP/a.out" ||
		{ fail "no $IMG-arm64"; return; }
	read -r arch size <"$TMP/a.out"
	[ "$arch" = arm64 ] || fail "the arm64 image says $arch"
	[ "$size" -lt $((MAXMB * 1000000)) ] || fail "arm64 image $size bytes"
	echo "# arm64 image $((size / 1000000)) MB"
	cid=$(podman create --pull=never --arch arm64 "$IMG-arm64" 2>/dev/null) && podman export "$cid" |
		tar -xO usr/bin/culpert-bpf >"$TMP/bpf-arm64"
	[ -n "$cid" ] && podman rm "$cid" >/dev/null
	readelf -h "$TMP/bpf-arm64" 2>/dev/null | grep -q 'Machine:.*AArch64' ||
		fail "the arm64 image's culpert-bpf is no AArch64 binary"
}

# the images of earlier runs of this test (other versions), and untagged leftovers
cleanup_images() {
	keep=$(make -s image-name IMAGE_NAME=$NAME)
	# (podman 4.3's `manifest rm` of a plain image removes the image)
	podman manifest inspect "$keep" >/dev/null 2>&1 && podman manifest rm "$keep" >/dev/null
	podman images --filter "reference=localhost/$NAME" --format '{{.Repository}}:{{.Tag}}' |
		grep -v -e ":${keep#*:}-amd64\$" | while read -r ref; do
		podman rmi "$ref" >/dev/null 2>&1
	done
	podman images --filter label=org.culpert.inputs --filter dangling=true -q |
		xargs -r podman rmi >/dev/null 2>&1
	return 0
}

run_test image_build test_image_build
run_test image_daemonset_attach test_image_daemonset_attach
run_test image_missing_capability test_image_missing_capability
run_test image_default_seccomp test_image_default_seccomp
if podman_run "$(make -s image-name IMAGE_NAME=$NAME)" agent --help >/dev/null 2>&1; then
	run_test image_agent test_image_agent
else
	echo "# image_agent not run: this culpert-bpf has no agent command yet"
fi
run_test image_multiarch test_image_multiarch
cleanup_images
