#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A seccomp profile for culpert-bpf: a runtime's default profile plus bpf() and
perf_event_open(), for the container's capability set.

Why: containerd (1.6.9+) and Docker (23+) allow bpf() to a container with CAP_BPF and
perf_event_open() to one with CAP_PERFMON in their default profiles, so the DaemonSet's
`seccompProfile: RuntimeDefault` works there.  CRI-O and Podman use containers/common's
profile, which (until late 2025) allows both only with CAP_SYS_ADMIN: there, give the pod
the profile this writes, as a Localhost profile on every node:

  deploy/kubernetes/seccomp-profile.py /usr/share/containers/seccomp.json \\
      > /var/lib/kubelet/seccomp/culpert-bpf.json
  # seccompProfile: {type: Localhost, localhostProfile: culpert-bpf.json}

It reads a profile in the Docker/containers JSON format, keeps the rules that apply to a
container with CAPS (their includes/excludes resolved, so the output has none), removes
every rule naming bpf or perf_event_open and adds one that allows both.  The kernel still
checks CAP_BPF and CAP_PERFMON; nothing else is opened.  tests/deploy/test_image.sh uses
the same file to stand for containerd's RuntimeDefault under Podman.
"""
import argparse
import json
import platform
import sys

CAPS = "BPF,PERFMON,SYS_PTRACE,DAC_READ_SEARCH,CHECKPOINT_RESTORE,SYS_RESOURCE"
OURS = ["bpf", "perf_event_open"]
# the runtime's names for this machine's architecture
ARCHES = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


def applies(rule, caps, arch):
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if any(c not in caps for c in inc.get("caps") or []):
        return False
    if any(c in caps for c in exc.get("caps") or []):
        return False
    if inc.get("arches") and arch not in inc["arches"]:
        return False
    if exc.get("arches") and arch in exc["arches"]:
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", help="the runtime's default profile (JSON)")
    ap.add_argument("--caps", default=CAPS, help=f"the container's capabilities ({CAPS})")
    ap.add_argument("--arch", default=platform.machine(), help="uname -m of the nodes")
    o = ap.parse_args()
    try:
        with open(o.profile) as f:
            src = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"error: {o.profile}: {e}; give the runtime's default seccomp profile, "
                 "e.g. /usr/share/containers/seccomp.json")
    caps = {"CAP_" + c.strip().upper().removeprefix("CAP_") for c in o.caps.split(",")}
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(o.arch, o.arch)
    rules = []
    for r in src.get("syscalls", []):
        if not applies(r, caps, arch):
            continue
        names = [n for n in r.get("names", []) if n not in OURS]
        if not names:
            continue
        out = {"names": names, "action": r["action"]}
        for k in ("args", "errnoRet"):
            if r.get(k):
                out[k] = r[k]
        rules.append(out)
    rules.append({"names": OURS, "action": "SCMP_ACT_ALLOW"})
    dst = {k: src[k] for k in ("defaultAction", "defaultErrnoRet") if k in src}
    if "archMap" in src:
        dst["archMap"] = src["archMap"]
    elif "architectures" in src:
        dst["architectures"] = src["architectures"]
    elif o.arch in ARCHES:
        dst["architectures"] = [ARCHES[o.arch]]
    dst["syscalls"] = rules
    json.dump(dst, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
