# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# python3 LIB: libculpert-sampler.so loaded into a running interpreter with
# ctypes (dlopen), taken over, released (tests/bpf/test_sampler_late.sh).
# The interpreter's work must give the same digest before, while taken
# over and after; an extension module imported while taken over (sqlite3:
# _sqlite3 and libsqlite3 opened through the dlopen hook) must work.
import ctypes
import hashlib
import json
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
page = ctypes.addressof(ctypes.c_char.in_dll(lib, "culpert_sampler_page"))
# struct culpert_sampler_page: magic, version, size, rate, allocator, pad, stats_interval_ns, events
events = ctypes.c_uint64.from_address(page + 40)


def work(n):
    d = {}
    for i in range(n):
        d[str(i)] = [i] * (i % 50)
    return hashlib.sha256(json.dumps(d).encode()).hexdigest()


def timed(f, *args):
    c = time.thread_time()
    r = f(*args)
    return r, (time.thread_time() - c) * 1e6


ref = work(20000)
r, us = timed(lib.culpert_sampler_takeover, 4096)
print("takeover %d cpu_us %.0f state %d" % (r, us, lib.culpert_sampler_state()))
e0 = events.value
same = work(20000) == ref
import sqlite3  # noqa: E402 (opened while taken over, on purpose)
con = sqlite3.connect(":memory:")
con.execute("create table t(x)")
con.executemany("insert into t values(?)", [(str(i) * 10,) for i in range(20000)])
rows = con.execute("select count(*), sum(length(x)) from t").fetchone()
e1 = events.value
r, us = timed(lib.culpert_sampler_release)
print("release %d cpu_us %.0f state %d" % (r, us, lib.culpert_sampler_state()))
same &= work(20000) == ref
con.execute("insert into t values('after')")
print("events taken_over %d released %d" % (e1 - e0, events.value - e1))
print("same %s rows %d %d" % (same, rows[0], rows[1]))
