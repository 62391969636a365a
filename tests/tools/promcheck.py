#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Check a Prometheus text exposition on stdin: parsed by the official client's
parser (python3-prometheus-client), then the naming rules of
https://prometheus.io/docs/practices/naming/ that a parser does not enforce.

  promcheck.py [REQUIRED_LABEL...] < metrics.txt
REQUIRED_LABELs are required on the per-process series (culpert_process_*,
culpert_cgroup_*, culpert_target_*); the agent's own (culpert_agent_*) have none.
Prints one line per problem and exits 1 if there is any; prints
"ok N families N samples" otherwise."""
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

NAME = re.compile(r'^culpert_(process|cgroup|allocator|target|span|agent)_[a-z0-9_]+$')
PER_PROCESS = re.compile(r'^culpert_(process|cgroup|allocator|target|span)_')
BASE_UNITS_BAD = re.compile(r'_(kb|kib|mb|mib|gb|percent|milliseconds|microseconds|us|ms)(_|$)')


def histogram_problems(fam):
    """Each series' buckets cumulative in le, +Inf there and equal to _count."""
    problems = []
    buckets, counts = {}, {}
    for s in fam.samples:
        key = tuple(sorted((k, v) for k, v in s.labels.items() if k != 'le'))
        if s.name.endswith('_bucket'):
            buckets.setdefault(key, []).append((float(s.labels['le']), s.value))
        elif s.name.endswith('_count'):
            counts[key] = s.value
    for key, b in buckets.items():
        b.sort()
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            problems.append('%s%s: buckets not cumulative' % (fam.name, dict(key)))
        if b[-1][0] != float('inf') or counts.get(key) != b[-1][1]:
            problems.append('%s%s: +Inf bucket missing or not _count' % (fam.name, dict(key)))
    return problems


def main():
    text = sys.stdin.read()
    required = sys.argv[1:]
    problems = []
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser's own words are the diagnosis
        print("parse error: %s" % e)
        return 1
    helps = set(re.findall(r'^# HELP (\S+) \S', text, re.M))
    types = dict(re.findall(r'^# TYPE (\S+) (\S+)$', text, re.M))
    seen = set()
    nsamples = 0
    for fam in families:
        if fam.type not in ('gauge', 'counter', 'histogram'):
            problems.append('%s: type %s' % (fam.name, fam.type))
        if fam.type == 'histogram':
            problems += histogram_problems(fam)
        for s in fam.samples:
            nsamples += 1
            # the name as exposed: HELP and TYPE must carry it (text format 0.0.4);
            # a histogram's _bucket, _sum and _count go by its family's
            exposed = fam.name if fam.type == 'histogram' else s.name
            if exposed not in helps:
                problems.append('%s: no HELP line' % s.name)
            if types.get(exposed) != fam.type:
                problems.append('%s: no TYPE %s line' % (s.name, fam.type))
            if not NAME.match(s.name):
                problems.append('%s: not culpert_{process,cgroup,allocator,target,span,agent}_*' % s.name)
            if fam.type == 'counter' and not s.name.endswith('_total'):
                problems.append('%s: a counter must end in _total' % s.name)
            if fam.type == 'gauge' and s.name.endswith('_total'):
                problems.append('%s: _total on a gauge' % s.name)
            if BASE_UNITS_BAD.search(s.name):
                problems.append('%s: not in a base unit' % s.name)
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in seen:
                problems.append('%s%s: duplicate series' % (s.name, s.labels))
            seen.add(key)
            for label in required if PER_PROCESS.match(s.name) else ():
                if label not in s.labels:
                    problems.append('%s: no label %s' % (s.name, label))
            if s.value < 0:
                problems.append('%s%s: negative %s' % (s.name, s.labels, s.value))
    if not families:
        problems.append('no metrics')
    for p in problems:
        print(p)
    if problems:
        return 1
    print('ok %d families %d samples' % (len(families), nsamples))
    return 0


if __name__ == '__main__':
    sys.exit(main())
