#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The `podman run` flags a Kubernetes DaemonSet's pod implies, from the manifest itself.

  manifest_podman.py flags DAEMONSET [options]   one podman argument per line, up to the image
  manifest_podman.py args DAEMONSET              the container's args, one per line
  manifest_podman.py probe DAEMONSET             "PATH PORT" of the liveness probe

What is mapped (anything else in the pod spec that would change how the container runs
is refused, so that a new field cannot be silently left out of the test):
  hostPID -> --pid=host; hostNetwork -> --network=host, else the default network with
  each containerPort published on 127.0.0.1 with --publish-port HOSTPORT (never on the
  node's addresses; not at all without it); runAsUser/runAsGroup -> --user; fsGroup -> --group-add; capabilities ->
  --cap-drop/--cap-add; allowPrivilegeEscalation: false -> no-new-privileges;
  readOnlyRootFilesystem -> --read-only without podman's extra tmpfs mounts; privileged;
  seccompProfile -> --security-opt seccomp= (RuntimeDefault: the file given with
  --runtime-default-seccomp, Localhost: --localhost-seccomp-dir/NAME); hostPath, secret
  and configMap volumes -> read-only bind mounts (--map HOSTPATH=DIR, --secret NAME=DIR,
  --configmap NAME=DIR say where they come from here); env values and spec.nodeName ->
  -e; resources.limits -> --memory/--cpus.
Options changing the manifest's capability list for negative tests: --drop-cap CAP.
"""
import argparse
import os
import socket
import sys

import yaml

# pod and container fields that do not change how the container runs on one node
POD_IGNORED = {"serviceAccountName", "automountServiceAccountToken", "tolerations",
               "nodeSelector", "terminationGracePeriodSeconds", "priorityClassName",
               "containers", "volumes", "securityContext", "hostPID", "hostNetwork",
               "affinity", "dnsPolicy"}
CONTAINER_IGNORED = {"name", "image", "imagePullPolicy", "args", "command", "env", "ports",
                     "securityContext", "livenessProbe", "readinessProbe", "startupProbe",
                     "resources", "volumeMounts", "terminationMessagePolicy"}


def die(msg):
    print(f"error: manifest_podman: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    ds = [d for d in docs if d.get("kind") == "DaemonSet"]
    if len(ds) != 1:
        die(f"{path}: want exactly one DaemonSet, found {len(ds)}")
    spec = ds[0]["spec"]["template"]["spec"]
    unknown = set(spec) - POD_IGNORED
    if unknown:
        die(f"pod spec fields not mapped to podman: {sorted(unknown)}")
    if len(spec["containers"]) != 1:
        die("want one container")
    c = spec["containers"][0]
    unknown = set(c) - CONTAINER_IGNORED
    if unknown:
        die(f"container fields not mapped to podman: {sorted(unknown)}")
    return ds[0], spec, c


def pairs(values, what):
    out = {}
    for v in values or []:
        k, sep, d = v.partition("=")
        if not sep:
            die(f"{what} wants NAME=DIR, not {v}")
        out[k] = d
    return out


def security(spec, c, o):
    psc, csc = spec.get("securityContext", {}), c.get("securityContext", {})
    sc = dict(psc, **csc)
    flags = []
    uid, gid = sc.get("runAsUser"), sc.get("runAsGroup")
    if sc.get("runAsNonRoot") and uid in (None, 0):
        die("runAsNonRoot without a non-zero runAsUser")
    if uid is not None:
        flags.append(f"--user={uid}:{gid if gid is not None else uid}")
    if "fsGroup" in psc:
        flags.append(f"--group-add={psc['fsGroup']}")
    if sc.get("privileged"):
        flags.append("--privileged")
    caps = sc.get("capabilities", {})
    for cap in caps.get("drop", []):
        flags.append(f"--cap-drop={cap}")
    dropped = {d.upper() for d in o.drop_cap or []}
    for cap in caps.get("add", []):
        if cap.upper() not in dropped:
            flags.append(f"--cap-add={cap}")
    if sc.get("allowPrivilegeEscalation") is False:
        flags.append("--security-opt=no-new-privileges")
    if sc.get("readOnlyRootFilesystem"):
        flags += ["--read-only", "--read-only-tmpfs=false"]
    seccomp = sc.get("seccompProfile", {"type": "RuntimeDefault"})
    kind = seccomp["type"]
    if kind == "RuntimeDefault":
        if not o.runtime_default_seccomp:
            die("seccompProfile RuntimeDefault: give --runtime-default-seccomp FILE")
        flags.append(f"--security-opt=seccomp={o.runtime_default_seccomp}")
    elif kind == "Localhost":
        if not o.localhost_seccomp_dir:
            die("seccompProfile Localhost: give --localhost-seccomp-dir DIR")
        flags.append("--security-opt=seccomp=" +
                     os.path.join(o.localhost_seccomp_dir, seccomp["localhostProfile"]))
    elif kind == "Unconfined":
        flags.append("--security-opt=seccomp=unconfined")
    else:
        die(f"seccompProfile type {kind}")
    return flags


def volumes(spec, c, o):
    hostmap, secrets, cms = pairs(o.map, "--map"), pairs(o.secret, "--secret"), \
        pairs(o.configmap, "--configmap")
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    flags = []
    for m in c.get("volumeMounts", []):
        v = vols[m["name"]]
        if "hostPath" in v:
            src = hostmap.get(v["hostPath"]["path"], v["hostPath"]["path"])
            if v["hostPath"].get("type") == "Directory" and not os.path.isdir(src):
                die(f"hostPath {src} (type Directory) does not exist here")
        elif "secret" in v:
            src = secrets.get(v["secret"]["secretName"]) or \
                die(f"secret {v['secret']['secretName']}: give --secret NAME=DIR")
        elif "configMap" in v:
            src = cms.get(v["configMap"]["name"]) or \
                die(f"configMap {v['configMap']['name']}: give --configmap NAME=DIR")
        else:
            die(f"volume {m['name']}: only hostPath, secret and configMap are mapped")
        if "subPath" in m or "mountPropagation" in m:
            die(f"volumeMount {m['name']}: subPath/mountPropagation not mapped")
        # secret and configMap volumes are read-only whatever the mount says
        ro = m.get("readOnly") or "hostPath" not in v
        flags.append(f"--volume={src}:{m['mountPath']}:{'ro' if ro else 'rw'}")
    return flags


def env(c):
    flags = []
    for e in c.get("env", []):
        if "value" in e:
            flags.append(f"--env={e['name']}={e['value']}")
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            flags.append(f"--env={e['name']}={socket.gethostname()}")
        else:
            die(f"env {e['name']}: only values and spec.nodeName are mapped")
    return flags


def network(spec, c, o):
    if spec.get("hostNetwork"):
        return ["--network=host"]
    flags = []
    # without --publish-port nothing is published (a test that serves nothing)
    for p in c.get("ports", []) if o.publish_port else []:
        flags.append(f"--publish=127.0.0.1:{o.publish_port}:{p['containerPort']}")
    return flags


def limits(c):
    lim = c.get("resources", {}).get("limits", {})
    flags = []
    if "memory" in lim:
        m = lim["memory"]
        units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
        n = int(m[:-2]) * units[m[-2:]] if m[-2:] in units else int(m)
        flags.append(f"--memory={n}")
    if "cpu" in lim:
        cpu = str(lim["cpu"])
        flags.append(f"--cpus={int(cpu[:-1]) / 1000 if cpu.endswith('m') else float(cpu)}")
    return flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["flags", "args", "probe"])
    ap.add_argument("daemonset")
    ap.add_argument("--runtime-default-seccomp")
    ap.add_argument("--localhost-seccomp-dir")
    ap.add_argument("--publish-port")
    ap.add_argument("--map", action="append")
    ap.add_argument("--secret", action="append")
    ap.add_argument("--configmap", action="append")
    ap.add_argument("--drop-cap", action="append")
    o = ap.parse_args()
    _, spec, c = load(o.daemonset)
    if o.mode == "args":
        if "command" in c:
            die("command is not mapped (the image's entrypoint is used)")
        print("\n".join(c.get("args", [])))
        return
    if o.mode == "probe":
        p = c["livenessProbe"]["httpGet"]
        port = p["port"]
        if isinstance(port, str):
            port = next(x["containerPort"] for x in c["ports"] if x.get("name") == port)
        print(p["path"], port)
        return
    flags = []
    if spec.get("hostPID"):
        flags.append("--pid=host")
    flags += security(spec, c, o) + volumes(spec, c, o) + env(c) + network(spec, c, o)
    flags += limits(c)
    print("\n".join(flags))


if __name__ == "__main__":
    main()
