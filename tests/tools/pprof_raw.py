#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Sums of `go tool pprof -raw` output (read from stdin) by leaf function.

  pprof_raw.py SAMPLE_TYPE     "FUNCTION VALUE" per leaf function, summed over
                               samples, for SAMPLE_TYPE (e.g. inuse_space)
  pprof_raw.py --header        "duration SECONDS", "default TYPE", then
                               "types T1 T2 ..." in the profile's order, then
                               "time NS" (the profile's start, Unix ns; 0 if none)
  pprof_raw.py --stacks TYPE   "VALUE STACK" per sample (STACK: leaf first,
                               functions joined by ';'), for monotonicity checks
  pprof_raw.py --label KEY TYPE  "VALUE LABEL" summed by the value of label KEY
                               ("-" for samples without it)
  pprof_raw.py --keys          the label keys the samples carry, one a line
"""
import datetime
import re
import sys

start_ns = 0


GO_UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9}


def go_seconds(text):
    """A Go duration ("1h2m3.5s", "500ms") or plain seconds ("8.74"), in seconds."""
    parts = re.findall(r"([0-9.]+)(h|ms|m|us|\u00b5s|ns|s)", text)
    if not parts:
        return float(text)
    return sum(float(n) * GO_UNITS[u] for n, u in parts)


def parse(text):
    types, default, duration, samples, locs = [], None, None, [], {}
    section = None
    cur = None
    global start_ns
    for line in text.splitlines():
        if line.startswith("Time:"):
            # Go's "2006-01-02 15:04:05.999999999 -0700 MST"
            date, clock, zone = line.split()[1:4]
            secs, _, frac = clock.partition(".")
            t = datetime.datetime.strptime(date + " " + secs + " " + zone, "%Y-%m-%d %H:%M:%S %z")
            start_ns = int(t.timestamp()) * 10**9 + int((frac + "000000000")[:9])
            continue
        if line.startswith("Duration:"):
            # "5s", "8.74", "2m51s" (google/pprof's formatting, Go's for a minute
            # or more): the seconds
            duration = go_seconds(line.split()[1])
            duration = int(duration) if duration == int(duration) else duration
            continue
        if line.startswith("Samples:"):
            section = "types"
            continue
        if line.startswith("Locations"):
            section = "locs"
            continue
        if line.startswith("Mappings"):
            section = None
            continue
        if section == "types":
            for t in line.split():
                name = t.split("/")[0]
                if t.endswith("[dflt]"):
                    default = name
                types.append(name)
            section = "samples"
            continue
        if section == "samples":
            head, sep, ids = line.partition(":")
            vals = head.split()
            if sep and len(vals) == len(types) and all(v.lstrip("-").isdigit() for v in vals):
                cur = ([int(v) for v in vals], [int(i) for i in ids.split()], {})
                samples.append(cur)
            elif cur:
                # "key:[value] key:[N unit]" under its sample
                for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line):
                    cur[2][k] = v
            continue
        if section == "locs":
            parts = line.split()
            if parts and parts[0].endswith(":") and parts[0][:-1].isdigit():
                # "ID: ADDR M=N FUNCTION FILE:LINE ..." (the innermost inlined frame first)
                fn = parts[3] if len(parts) > 3 else parts[1]
                locs[int(parts[0][:-1])] = fn
    return types, default, duration, samples, locs


def main():
    types, default, duration, samples, locs = parse(sys.stdin.read())
    if sys.argv[1] == "--header":
        print("duration %s" % duration)
        print("default %s" % default)
        print("types " + " ".join(types))
        print("time %d" % start_ns)
        return
    if sys.argv[1] == "--keys":
        print("\n".join(sorted({k for _, _, labels in samples for k in labels})))
        return
    if sys.argv[1] == "--label":
        i = types.index(sys.argv[3])
        sums = {}
        for vals, _, labels in samples:
            key = labels.get(sys.argv[2], "-")
            sums[key] = sums.get(key, 0) + vals[i]
        for k, v in sorted(sums.items()):
            print("%d %s" % (v, k))
        return
    stacks = sys.argv[1] == "--stacks"
    i = types.index(sys.argv[2] if stacks else sys.argv[1])
    sums = {}
    for vals, ids, _ in samples:
        key = ";".join(locs.get(x, "?") for x in ids) if stacks else locs.get(ids[0], "?")
        sums[key] = sums.get(key, 0) + vals[i]
    for k, v in sorted(sums.items()):
        print("%s %d" % (k, v) if not stacks else "%d %s" % (v, k))


main()
