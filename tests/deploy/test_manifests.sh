#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# deploy/kubernetes and deploy/scrape: the manifests are valid Kubernetes objects (the
# API's schema from Debian's python3-kubernetes, unknown fields rejected), the
# kustomization renders with Debian's kubectl (kubernetes-client, unpacked: installing it
# could clash with another kubectl), promtool accepts the Prometheus and Parca
# configurations, Alloy's parses, and the relabeling of each turns a discovered pod into
# the agent's URL for that container.  No privileges needed.
. tests/lib.sh

K8S=deploy/kubernetes
SCRAPE=deploy/scrape
VALIDATE="$PY tests/tools/k8s_validate.py"
CHECK="$PY tests/tools/scrape_check.py"
KUBECTL=$OUTPUT/debs/kubernetes-client/usr/bin/kubectl

test_manifests_valid() {
	$VALIDATE $K8S/namespace.yaml $K8S/rbac.yaml $K8S/service.yaml $K8S/daemonset.yaml \
		>"$TMP/v.out" 2>&1 || fail "$(tr '\n' ';' <"$TMP/v.out")"
	grep -q '^ok 6 documents' "$TMP/v.out" || fail "not 6 documents: $(cat "$TMP/v.out")"
	# every manifest here is in the kustomization, and nothing else
	for f in $K8S/*.yaml; do
		case ${f##*/} in kustomization.yaml | kube-api.patch.yaml) continue ;; esac
		grep -q "^  - ${f##*/}\$" $K8S/kustomization.yaml ||
			fail "${f##*/} is not in kustomization.yaml's resources"
	done
}

# the validator itself refuses what the API server would: a misspelt field, a missing
# required one, a wrong type, a selector that does not select the template
test_validator_rejects() {
	$PY - "$K8S/daemonset.yaml" "$TMP" <<-'EOF' || fail "could not write the broken copies"
	import copy, sys, yaml
	d = yaml.safe_load(open(sys.argv[1]))
	c = lambda: copy.deepcopy(d)
	ctr = lambda x: x["spec"]["template"]["spec"]["containers"][0]
	bad = {}
	x = c(); ctr(x)["securityContext"]["readOnlyRootFileSystem"] = True; bad["field"] = x
	x = c(); del ctr(x)["name"]; bad["required"] = x
	x = c(); ctr(x)["securityContext"]["runAsUser"] = "65532"; bad["type"] = x
	x = c(); x["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] = "other"
	bad["selector"] = x
	x = c(); ctr(x)["resources"]["limits"]["memory"] = "256MB"; bad["quantity"] = x
	for k, v in bad.items():
	    yaml.safe_dump(v, open(f"{sys.argv[2]}/bad-{k}.yaml", "w"))
	EOF
	for k in field required type selector quantity; do
		if $VALIDATE "$TMP/bad-$k.yaml" >"$TMP/bad.out" 2>&1; then
			fail "the validator accepted a DaemonSet with a bad $k"
		fi
	done
	$VALIDATE "$TMP/bad-field.yaml" | grep -q 'readOnlyRootFileSystem: unknown field' ||
		fail "no unknown-field error naming readOnlyRootFileSystem"
}

fetch_kubectl() {
	[ -x "$KUBECTL" ] && return 0
	sh tests/tools/debfetch.sh kubernetes-client "$OUTPUT/debs/kubernetes-client" \
		./usr/bin/kubectl 2>"$TMP/fetch.err" ||
		{ fail "Debian's kubernetes-client: $(cat "$TMP/fetch.err")"; return 1; }
}

test_kustomize_renders_valid() {
	fetch_kubectl || return
	"$KUBECTL" kustomize $K8S >"$TMP/all.yaml" 2>"$TMP/k.err" ||
		{ fail "kubectl kustomize: $(cat "$TMP/k.err")"; return; }
	$VALIDATE "$TMP/all.yaml" >"$TMP/v.out" 2>&1 || fail "rendered: $(tr '\n' ';' <"$TMP/v.out")"
	# the ConfigMap of agent.args, under the name the DaemonSet mounts (hash included)
	$PY - "$TMP/all.yaml" $K8S/agent.args <<-'EOF' >"$TMP/r.out" 2>&1 || fail "$(cat "$TMP/r.out")"
	import sys, yaml
	docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
	cm, ds = docs["ConfigMap"], docs["DaemonSet"]
	vol = [v for v in ds["spec"]["template"]["spec"]["volumes"] if "configMap" in v][0]
	assert vol["configMap"]["name"] == cm["metadata"]["name"], "ConfigMap name not rewritten"
	assert cm["data"]["agent.args"] == open(sys.argv[2]).read(), "agent.args not the data"
	assert all(d["metadata"].get("namespace", "culpert-bpf") == "culpert-bpf"
	           for d in docs.values()), "namespace not set"
	img = ds["spec"]["template"]["spec"]["containers"][0]["image"]
	assert img == "registry.example.com/culpert-bpf:latest", img
	EOF
}

# kube-api.patch.yaml, enabled as kustomization.yaml says: the token mounted, --kube-api given
test_kustomize_kube_api() {
	fetch_kubectl || return
	mkdir -p "$TMP/k" && cp $K8S/* "$TMP/k/"
	sed -i '/^# patchesJson6902:/,/^#     path:/ s/^# //' "$TMP/k/kustomization.yaml"
	"$KUBECTL" kustomize "$TMP/k" >"$TMP/kapi.yaml" 2>"$TMP/k.err" ||
		{ fail "kubectl kustomize with the patch: $(cat "$TMP/k.err")"; return; }
	$VALIDATE "$TMP/kapi.yaml" >"$TMP/v.out" 2>&1 || fail "$(tr '\n' ';' <"$TMP/v.out")"
	$PY - "$TMP/kapi.yaml" <<-'EOF' >"$TMP/r.out" 2>&1 || fail "$(cat "$TMP/r.out")"
	import sys, yaml
	ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
	spec = ds["spec"]["template"]["spec"]
	assert spec["automountServiceAccountToken"] is True, "token not mounted"
	assert spec["containers"][0]["args"][-1] == "--kube-api", spec["containers"][0]["args"]
	EOF
}

test_seccomp_profile() {
	$PY $K8S/seccomp-profile.py /usr/share/containers/seccomp.json >"$TMP/sc.json" \
		2>"$TMP/sc.err" || { fail "seccomp-profile.py: $(cat "$TMP/sc.err")"; return; }
	$PY - "$TMP/sc.json" <<-'EOF' >"$TMP/r.out" 2>&1 || fail "$(cat "$TMP/r.out")"
	import json, sys
	p = json.load(open(sys.argv[1]))
	allow = {n for r in p["syscalls"] if r["action"] == "SCMP_ACT_ALLOW" for n in r["names"]}
	others = [r for r in p["syscalls"] if r["action"] != "SCMP_ACT_ALLOW"
	          and {"bpf", "perf_event_open"} & set(r["names"])]
	assert {"bpf", "perf_event_open", "read", "ptrace"} <= allow, "allowed set"
	assert not others, f"rules still refusing bpf: {others}"
	assert "setdomainname" not in allow, "CAP_SYS_ADMIN's syscalls allowed"
	assert not any("includes" in r or "excludes" in r for r in p["syscalls"])
	EOF
	expect_error 1 '/nonexistent' $PY $K8S/seccomp-profile.py /nonexistent
}

# promtool check config on CONFIG's checkable copy OUT (scrape_check.py promtool-copy)
promtool_check() {
	echo token >"$TMP/token"
	$CHECK promtool-copy "$1" "$2" "$TMP/token" >"$TMP/c.out" 2>&1 ||
		{ fail "$(cat "$TMP/c.out")"; return 1; }
	promtool check config "$2" >"$TMP/p.out" 2>&1 ||
		{ fail "promtool on $1: $(grep -v WARNING "$TMP/p.out" | tr '\n' ' ')"; return 1; }
	grep -q 'SUCCESS' "$TMP/p.out" || fail "promtool said no SUCCESS for $1"
}

test_prometheus_config() {
	promtool_check $SCRAPE/prometheus.yml "$TMP/prom.yml" || return
	# the agent's pod becomes its /metrics at the annotated port
	cat >"$TMP/agentpod.json" <<-'EOF'
	{"__address__": "10.244.1.9", "__meta_kubernetes_pod_label_app_kubernetes_io_name": "culpert-bpf",
	 "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
	 "__meta_kubernetes_pod_annotation_prometheus_io_port": "7790",
	 "__meta_kubernetes_pod_annotation_prometheus_io_path": "/metrics",
	 "__meta_kubernetes_pod_node_name": "node-4", "__meta_kubernetes_pod_name": "culpert-bpf-x7"}
	EOF
	got=$($CHECK relabel $SCRAPE/prometheus.yml culpert-bpf "$TMP/agentpod.json")
	[ "$got" = '{"__address__": "10.244.1.9:7790", "__metrics_path__": "/metrics", "node": "node-4", "pod": "culpert-bpf-x7"}' ] ||
		fail "the agent's pod relabeled to $got"
	# a promtool that can fail: an unknown field
	sed 's/credentials_file/credential_file/' "$TMP/prom.yml" >"$TMP/bad.yml"
	promtool check config "$TMP/bad.yml" >/dev/null 2>&1 && fail "promtool accepted a misspelt field"
	return 0
}

# a discovered container of the namespace the agent profiles, and two that are not scraped
write_pods() {
	cat >"$TMP/pod.json" <<-'EOF'
	{"__address__": "10.244.1.7:8080", "__meta_kubernetes_namespace": "shop",
	 "__meta_kubernetes_pod_name": "cart-7d9f8", "__meta_kubernetes_pod_container_name": "cart",
	 "__meta_kubernetes_pod_container_id": "containerd://0123abcd",
	 "__meta_kubernetes_pod_container_init": "false", "__meta_kubernetes_pod_phase": "Running",
	 "__meta_kubernetes_pod_host_ip": "192.168.7.4", "__meta_kubernetes_pod_node_name": "node-4"}
	EOF
	sed 's/"shop"/"kube-system"/' "$TMP/pod.json" >"$TMP/other.json"
	sed 's/"__meta_kubernetes_pod_container_init": "false"/"__meta_kubernetes_pod_container_init": "true"/' \
		"$TMP/pod.json" >"$TMP/init.json"
	sed 's/}$/, "__meta_kubernetes_pod_annotation_pyroscope_io_service_name": "checkout"}/' \
		"$TMP/pod.json" >"$TMP/annotated.json"
}

test_parca_config() {
	promtool_check $SCRAPE/parca.yaml "$TMP/parca-prom.yml" || return
	write_pods
	got=$($CHECK relabel $SCRAPE/parca.yaml culpert-bpf "$TMP/pod.json")
	[ "$got" = '{"__address__": "192.168.7.4:7790", "__param_container": "0123abcd", "container": "cart", "namespace": "shop", "node": "node-4", "pod": "cart-7d9f8"}' ] ||
		fail "the container relabeled to $got"
	for p in other init; do
		got=$($CHECK relabel $SCRAPE/parca.yaml culpert-bpf "$TMP/$p.json")
		[ "$got" = null ] || fail "$p container scraped as $got"
	done
	# Parca's own fields: a misspelt one is refused (Parca loads with KnownFields)
	sed 's/^    profiling_config:/    profiling_configs:/' $SCRAPE/parca.yaml >"$TMP/bad.yaml"
	$CHECK promtool-copy "$TMP/bad.yaml" "$TMP/x.yml" "$TMP/token" >/dev/null 2>&1 &&
		promtool check config "$TMP/x.yml" >/dev/null 2>&1 && fail "a misspelt Parca field passed"
	sed 's/          path: \/debug\/pprof\/heap/          paths: \/debug\/pprof\/heap/' \
		$SCRAPE/parca.yaml >"$TMP/bad2.yaml"
	$CHECK promtool-copy "$TMP/bad2.yaml" "$TMP/x.yml" "$TMP/token" >/dev/null 2>&1 &&
		fail "a misspelt pprof_config field passed"
	return 0
}

test_alloy_config() {
	$CHECK alloy $SCRAPE/culpert-bpf.alloy >"$TMP/a.out" 2>&1 || { fail "$(cat "$TMP/a.out")"; return; }
	write_pods
	got=$($CHECK alloy $SCRAPE/culpert-bpf.alloy "$TMP/pod.json")
	[ "$got" = '{"__address__": "192.168.7.4:7790", "__param_container": "0123abcd", "container": "cart", "namespace": "shop", "pod": "cart-7d9f8", "service_name": "shop/cart"}' ] ||
		fail "the container relabeled to $got"
	got=$($CHECK alloy $SCRAPE/culpert-bpf.alloy "$TMP/annotated.json")
	case $got in *'"service_name": "checkout"'*) ;; *) fail "annotation ignored: $got" ;; esac
	got=$($CHECK alloy $SCRAPE/culpert-bpf.alloy "$TMP/other.json")
	[ "$got" = null ] || fail "another namespace scraped as $got"
	# and the checker refuses what Alloy would
	sed 's/  scrape_interval   = "60s"/  scrape_intervall = "60s"/' $SCRAPE/culpert-bpf.alloy >"$TMP/b1.alloy"
	sed '0,/^}/s/^}//' $SCRAPE/culpert-bpf.alloy >"$TMP/b2.alloy"
	sed 's/discovery.relabel.culpert.output/discovery.relabel.culprit.output/' \
		$SCRAPE/culpert-bpf.alloy >"$TMP/b3.alloy"
	sed 's/    profile.custom "heap" {/    profile.custom {/' $SCRAPE/culpert-bpf.alloy >"$TMP/b4.alloy"
	sed 's/regex         = "shop"/regex         = "shop/' $SCRAPE/culpert-bpf.alloy >"$TMP/b5.alloy"
	for b in b1 b2 b3 b4 b5; do
		cmp -s "$TMP/$b.alloy" $SCRAPE/culpert-bpf.alloy && { fail "$b: the edit did nothing"; continue; }
		$CHECK alloy "$TMP/$b.alloy" >/dev/null 2>&1 && fail "the Alloy check accepted $b"
	done
	return 0
}

run_test manifests_valid test_manifests_valid
run_test validator_rejects test_validator_rejects
run_test kustomize_renders_valid test_kustomize_renders_valid
run_test kustomize_kube_api test_kustomize_kube_api
run_test seccomp_profile test_seccomp_profile
run_test prometheus_config test_prometheus_config
run_test parca_config test_parca_config
run_test alloy_config test_alloy_config
