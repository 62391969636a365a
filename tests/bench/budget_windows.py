#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Where a flat-out target's CPU goes under the agent's duty cycle
(docs/agent.md, "Where the flat-out loop's loss went"): alloc_bound's own
counts every DT seconds (ops and its CPU on SIGUSR1, utime and stime from
/proc/PID/stat), in rounds of: a twin never probed (the other one stopped),
the probed process with no agent, then an agent on it for SECS seconds from
its first checked cost.  The agent's windows are told apart by the loop's
CPU per op (over 20 times the unprofiled one: probes on); each round prints
the CPU per op of each kind of window and the CPU lost in on and off
windows, % of one CPU, against the no-agent windows on either side.

  budget_windows.py OUT [ROUNDS [SECS]]   (as root, from the source tree)
  BINS=a:b alternates agent builds round by round; AGENT_ARGS, DT
"""
import os, re, shutil, signal, subprocess, sys, tempfile, time

OUTPUT = os.environ.get("OUTPUT", ".output")
BINS = os.environ.get("BINS", OUTPUT + "/culpert-bpf").split(":")
ARGS = os.environ.get("AGENT_ARGS", "--inuse --max-overhead 10 --duty-period 4s").split()
DT = float(os.environ.get("DT", "0.05"))


def spawn(path):
    p = subprocess.Popen([path, "0", "1024", "64"], stdout=subprocess.PIPE, text=True)
    assert "ready" in p.stdout.readline()
    return p


def sample(p):
    os.kill(p.pid, signal.SIGUSR1)
    f = p.stdout.readline().split()
    st = open("/proc/%d/stat" % p.pid).read()
    st = st[st.rindex(")") + 2:].split()
    return [int(f[1]), int(f[3]), int(f[5]), int(st[11]), int(st[12])]


def run(p, label, secs, out):
    """samples of p every DT for secs, as (label, ops, wall, cpu, utime, stime) rows"""
    rows, end, due = [], time.monotonic() + secs, time.monotonic()
    while time.monotonic() < end:
        rows.append([label] + sample(p))
        due += DT
        time.sleep(max(0, due - time.monotonic()))
    out.extend(rows)
    out.append(None)


def agent(binary, pid, log):
    a = subprocess.Popen([binary, "agent", "--listen", "127.0.0.1:0", "-v", "--select",
                          "pid=%d" % pid] + ARGS, stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(300):
        time.sleep(0.2)
        if re.search(r"pid %d: .*scaled by" % pid, open(log.name).read()):
            break
    return a


def deltas(rows):
    """per-interval [ops, wall, cpu, utime, stime] of consecutive samples"""
    return [[b[i] - a[i] for i in range(1, 6)] for a, b in zip(rows, rows[1:])
            if a and b and a[0] == b[0]]


def total(iv):
    return [sum(x[i] for x in iv) for i in range(5)]


def report(segs, bins):
    """one line per agent round: CPU per op of each window kind, the CPU lost"""
    nones = [s for l, s in segs if l == "none"]
    for r, ag in enumerate(s for l, s in segs if l == "agent"):
        n = total(nones[r] + nones[r + 1])
        ref = n[2] / n[0]
        on = [x for x in ag if not x[0] or x[2] / x[0] > 20 * ref]
        off = [x for x in ag if x[0] and x[2] / x[0] <= 20 * ref]
        a, o, f = total(ag), total(on), total(off)
        print("%s round %d: unprofiled %.2f ns/op, off windows %.2f, on share %.3f, on CPU "
              "%.1f%% (user %.1f%%); lost %.1f%% of a CPU: %.1f%% on, %.1f%% off" % (
                  os.path.basename(os.path.dirname(os.path.dirname(bins[r % len(bins)]))) or
                  bins[r % len(bins)], r, ref, f[2] / f[0] if f[0] else 0, o[1] / a[1],
                  100 * o[2] / o[1] if o[1] else 0, 100 * o[3] * 1e7 / o[1] if o[1] else 0,
                  100 * (a[2] - a[0] * ref) / a[1], 100 * (o[2] - o[0] * ref) / a[1],
                  100 * (f[2] - f[0] * ref) / a[1]))


def main():
    out_path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    secs = float(sys.argv[3]) if len(sys.argv) > 3 else 12
    tmp = tempfile.mkdtemp(prefix="budget_windows.")
    for name in ("probed", "twin"):
        shutil.copy(OUTPUT + "/tests/targets/alloc_bound", tmp + "/" + name)
    probed, twin = spawn(tmp + "/probed"), spawn(tmp + "/twin")
    rows = []
    try:
        for r in range(rounds + 1):
            os.kill(probed.pid, signal.SIGSTOP)
            os.kill(twin.pid, signal.SIGCONT)
            run(twin, "twin", secs / 2, rows)
            os.kill(twin.pid, signal.SIGSTOP)
            os.kill(probed.pid, signal.SIGCONT)
            run(probed, "none", secs / 2, rows)
            if r == rounds:
                break
            with open("%s/agent%d.log" % (tmp, r), "w") as log:
                a = agent(BINS[r % len(BINS)], probed.pid, log)
                run(probed, "agent", secs, rows)
                a.send_signal(signal.SIGTERM)
                a.wait()
    finally:
        for p in (probed, twin):
            p.kill()
            p.wait()
    with open(out_path, "w") as f:
        for x in rows:
            f.write("\n" if x is None else " ".join(map(str, x)) + "\n")
    segs, cur = [], []
    for x in rows:
        if x is None:
            segs.append((cur[0][0], deltas(cur)))
            cur = []
        else:
            cur.append(x)
    report(segs, BINS)
    print("agent logs in", tmp)


if __name__ == "__main__":
    main()
