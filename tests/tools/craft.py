#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""
Crafted pprof profiles for the robustness tests (tests/cli/test_crafted.sh),
written straight in the protobuf wire format: independent of our own writer,
and free to write what no honest writer would (extreme values, hostile
names, length fields that lie).

    craft.py KIND [N] -o OUT      OUT gzip'd; "-o OUT.pb" (no .gz) writes raw protobuf

KIND (N is the size of the attack):
    deep-span N      one sample whose span_path has N segments
    deep-named N     N spans chained by span_parent_id, each allocating
    deep-orphan N    a root span R with a path of N more under it, and R nested in top;R:
                     R looks entered before attach (proto/query/orphans.c)
    deep-stack N     one sample with N frames (one location N times)
    inline-flood N   a location with N inline lines, in a stack N locations deep
    deep-wrapped N   one sample with N frames, w_alloc and work alternating (w_alloc the
                     leaf), in span "deep": N / 2 frames are left after --skip 'w_*'
    loc-flood N      N locations and functions, one sample each
    span-flood N     N distinct span paths 100 segments deep, sharing their first 99
    values           INT64_MAX, INT64_MIN, negative and zero values, summed in one span
    diff-base        a profile like pprof -diff_base writes: negative values
    names            hostile names (see NAMES) as functions, spans, files, comments
                     (the allocator's and argv0's among them)
    wrappers         hostile names as allocation wrappers ("w_" + name, for --skip 'w_*'),
                     each called by caller<i> in src<i>.c, outside any span; the first
                     names get the most bytes; a culpert-bpf profile (sampled_allocs)
    bomb N           N minimal locations: a small file that decodes to large tables
    sample-bomb N    N distinct minimal samples: a small file, many records
    long-string N    a string table entry whose length field claims N bytes
    many-types N     N sample types
    long-name N      a function and a span named with N bytes
"""
import gzip
import sys

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

# one per line of trouble: terminal escapes, line breaks, markup of each output
# format, invalid and surrogate UTF-8, bidi overrides, separators of folded lines
NAMES = [
    "ev\x1b[2J\x1b[31mred",            # clears the screen, colours the rest
    "bell\x07back\x08space",
    "carriage\rreturn",
    "new\nline",
    "tab\there",
    "semi;colon",
    "trailing count 42",
    "pipe|cell",
    "back`tick``s",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "amp&lt;entity&#x41;",
    "  leading and trailing  ",
    # bytes that are not UTF-8, as surrogateescape writes them (raw() below)
    "latin1 caf\udce9",                # a lone 0xE9 byte
    "surrogate \udced\udca0\udc80 half",   # U+D800 encoded: not UTF-8
    "overlong \udcc0\udcaf slash",
    "truncated \udce2\udc82",
    "bidi \u202egnirts\u202c end",
    "c1 \u0085 next line",
    "del\x7f",
    "quote\"apos'",
    "back\\slash",
    "*emph* _under_ [link](http://x) # head",
    "ok caf\u00e9 \u4e2d\u6587",
]


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wt):
    return varint(field << 3 | wt)


def f_varint(field, v):
    return key(field, 0) + varint(v)


def f_len(field, body):
    return key(field, 2) + varint(len(body)) + body


def packed(field, values):
    return f_len(field, b"".join(varint(v) for v in values))


def raw(s):
    return s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s


class Profile:
    def __init__(self, types=(("alloc_objects", "count"), ("alloc_space", "bytes"))):
        self.strings = [b""]
        self.index = {b"": 0}
        self.out = bytearray()
        self.types = types
        for t, u in types:
            self.out += f_len(1, f_varint(1, self.s(t)) + f_varint(2, self.s(u)))
        self.out += f_len(11, f_varint(1, self.s("space")) + f_varint(2, self.s("bytes")))
        self.out += f_varint(12, 524288)
        self.out += f_varint(14, self.s(types[-1][0]))
        self.out += f_len(3, f_varint(1, 1) + f_varint(2, 0x1000) + f_varint(3, 0x100000) +
                          f_varint(5, self.s("/usr/bin/app")) + f_varint(7, 1))

    def s(self, text):
        b = raw(text)
        if b not in self.index:
            self.index[b] = len(self.strings)
            self.strings.append(b)
        return self.index[b]

    def function(self, fid, name, filename=""):
        self.out += f_len(5, f_varint(1, fid) + f_varint(2, self.s(name)) +
                          f_varint(4, self.s(filename)))

    def location(self, lid, lines, address=None):
        body = f_varint(1, lid) + f_varint(2, 1) + f_varint(3, address or 0x1000 + 16 * lid)
        for fid, line in lines:
            body += f_len(4, f_varint(1, fid) + f_varint(2, line))
        self.out += f_len(4, body)

    def sample(self, locs, values, labels=()):
        body = packed(1, locs) + packed(2, values)
        for k, v in labels:
            lab = f_varint(1, self.s(k))
            lab += f_varint(3, v) if isinstance(v, int) else f_varint(2, self.s(v))
            body += f_len(3, lab)
        self.out += f_len(2, body)

    def comment(self, text):
        self.out += f_varint(13, self.s(text))

    def encode(self):
        return bytes(self.out) + b"".join(f_len(6, s) for s in self.strings)


def simple(p, name="work", fid=1):
    p.function(fid, name, "work.c")
    p.location(fid, [(fid, 10)])


def deep_span(n):
    p = Profile()
    simple(p)
    p.sample([1], [1, 4096], [("span_path", ";".join("s%d" % i for i in range(n)))])
    return p


def deep_named(n):
    p = Profile()
    simple(p)
    for i in range(1, n + 1):
        labels = [("span_name", "n%d" % i), ("span_id", i)]
        if i > 1:
            labels.append(("span_parent_id", i - 1))
        p.sample([1], [1, 4096], labels)
    return p


def deep_orphan(n):
    p = Profile()
    simple(p)
    p.sample([1], [1, 4096], [("span_path", "top;R")])
    p.sample([1], [1, 4096], [("span_path", ";".join(["R"] + ["d%d" % i for i in range(n)]))])
    return p


def deep_stack(n):
    p = Profile()
    simple(p)
    p.sample([1] * n, [1, 4096], [("span_path", "deep")])
    return p


def deep_wrapped(n):
    p = Profile()
    simple(p)
    simple(p, "w_alloc", 2)
    p.sample([2 if i % 2 == 0 else 1 for i in range(n)], [1, 4096], [("span_path", "deep")])
    return p


def inline_flood(n):
    p = Profile()
    p.function(1, "inlined", "i.c")
    p.location(1, [(1, i) for i in range(n)])
    p.sample([1] * n, [1, 4096])
    return p


def loc_flood(n):
    p = Profile()
    for i in range(1, n + 1):
        p.function(i, "f%d" % i, "f.c")
        p.location(i, [(i, i)])
        p.sample([i], [1, 100 + i], [("span_path", "a;b%d" % (i % 50))])
    return p


def span_flood(n):
    p = Profile()
    simple(p)
    base = ";".join("level%d" % i for i in range(99))
    for i in range(n):
        p.sample([1], [1, 1000], [("span_path", "%s;leaf%d" % (base, i))])
    return p


def values():
    p = Profile()
    simple(p)
    for v in (INT64_MAX, INT64_MAX, INT64_MIN, -5, 0, 7):
        p.sample([1], [v, v], [("span_path", "big")])
    p.sample([1], [-3, -(1 << 40)], [("span_path", "negative"), ("age_ns", INT64_MIN)])
    p.sample([], [1, INT64_MAX], [("span_path", "no stack")])
    return p


def diff_base():
    p = Profile()
    simple(p, "grow", 1)
    simple(p, "shrink", 2)
    p.sample([1], [10, 10 << 20], [("span_path", "request;grow")])
    p.sample([2], [-10, -(20 << 20)], [("span_path", "request;shrink")])
    p.sample([2], [-1, -(1 << 20)], [("span_path", "only_base")])
    return p


def names():
    p = Profile()
    for i, name in enumerate(NAMES, 1):
        p.function(i, name, name + ".c")
        p.location(i, [(i, i)])
    for i, name in enumerate(NAMES, 1):
        leaf = len(NAMES) + 1 - i
        p.sample([leaf, i], [i, i << 20], [("span_path", "root;" + name), ("span_name", name)])
        p.comment("note.%d=%s" % (i, name))
    p.comment("target.comm=" + NAMES[0])
    p.comment("target.exe=/usr/bin/" + NAMES[3])
    p.comment("target.argv0=" + NAMES[2])
    p.comment("target.argv0_link=" + NAMES[1])
    # culpert info's Allocator section (docs/memory-picture.md)
    p.comment("mem.end.allocator.family=glibc")
    p.comment("mem.end.allocator.glibc.version=" + NAMES[0])
    p.comment("mem.end.allocator.glibc.arena_count=" + NAMES[3])
    p.comment("mem.end.allocator.glibc.mmapped_chunks=" + NAMES[17])
    p.comment("mem.end.allocator.sampler_absent=" + NAMES[2])
    p.out += f_len(3, f_varint(1, 2) + f_varint(2, 0x200000) + f_varint(3, 0x300000) +
                   f_varint(5, p.s("/lib/" + NAMES[13])) + f_varint(6, p.s(NAMES[1])))
    return p


def wrappers():
    p = Profile()
    for i, name in enumerate(NAMES):
        p.function(2 * i + 1, "w_" + name, name + ".c")
        p.function(2 * i + 2, "caller%d" % i, "src%d.c" % i)
        p.location(2 * i + 1, [(2 * i + 1, 1)])
        p.location(2 * i + 2, [(2 * i + 2, 10 + i)])
        p.sample([2 * i + 1, 2 * i + 2], [1, (len(NAMES) - i) << 20], [("sampled_allocs", 2)])
    return p


def bomb(n):
    # n locations of 4 bytes each, all id 1 (the first of equal ids wins): it
    # compresses a thousandfold and decodes to 32 bytes a location, and more
    p = Profile()
    p.out += f_len(4, f_varint(1, 1)) * n
    p.sample([1], [1, 1])
    return p


def sample_bomb(n):
    # n distinct samples (by age_ns) of a dozen bytes: a record each in the view
    p = Profile()
    simple(p)
    k = p.s("age_ns")
    head = key(2, 2)
    p.out += b"".join(head + varint(len(body)) + body for body in
                      (packed(2, [1, 1]) + f_len(3, f_varint(1, k) + f_varint(3, i))
                       for i in range(n)))
    return p


def long_string(n):
    p = Profile()
    simple(p)
    p.sample([1], [1, 1])
    return p, key(6, 2) + varint(n) + b"abc"


def many_types(n):
    p = Profile(types=tuple(("t%d" % i, "count") for i in range(n)))
    simple(p)
    p.sample([1], list(range(n)))
    return p


def long_name(n):
    p = Profile()
    simple(p, "f" * n)
    p.sample([1], [1, 4096], [("span_name", "s" * n)])
    return p


KINDS = {
    "deep-span": deep_span, "deep-named": deep_named, "deep-orphan": deep_orphan, "deep-stack": deep_stack,
    "inline-flood": inline_flood, "deep-wrapped": deep_wrapped, "loc-flood": loc_flood, "span-flood": span_flood,
    "values": values, "diff-base": diff_base, "names": names, "bomb": bomb,
    "sample-bomb": sample_bomb, "long-string": long_string, "many-types": many_types,
    "long-name": long_name, "wrappers": wrappers,
}


def main(argv):
    if len(argv) < 4 or argv[-2] != "-o" or argv[1] not in KINDS:
        sys.stderr.write(__doc__)
        return 2
    args = [int(a) for a in argv[2:-2]]
    made = KINDS[argv[1]](*args)
    tail = b""
    if isinstance(made, tuple):
        made, tail = made
    data = made.encode() + tail
    out = argv[-1]
    if out.endswith(".gz"):
        data = gzip.compress(data, 9, mtime=0)
    with open(out, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
