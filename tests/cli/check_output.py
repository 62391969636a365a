#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""
Independent checks of culpert's output formats, for tests/cli/test_crafted.sh:

    check_output.py text FILE         UTF-8, no control character but the newline
    check_output.py json FILE         parses as JSON (strict UTF-8), every integer an int64
    check_output.py folded FILE [N]   "name;...;name weight" lines; N: the sum of the weights
    check_output.py svg FILE          well-formed XML (a parser of its own, besides xmllint)
    check_output.py md FILE           rendered by cmark-gfm (GitHub's parser): every table row
                                      has its header's cells, no name became HTML
Exit 0 when the check holds, else 1 with the reason.
"""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

INT64 = (-(1 << 63), (1 << 63) - 1)


def fail(why):
    sys.stderr.write(why + "\n")
    sys.exit(1)


def text(path):
    data = open(path, "rb").read()
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("%s: not UTF-8: %s" % (path, e))
    for i, c in enumerate(s):
        o = ord(c)
        if c != "\n" and (o < 0x20 or o == 0x7F or 0x80 <= o < 0xA0 or
                          0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069):
            fail("%s: control character U+%04X at %d: %r" % (path, o, i, s[max(0, i - 20):i + 20]))
    return s


def ints(v):
    if isinstance(v, bool):
        return
    if isinstance(v, int):
        if not INT64[0] <= v <= INT64[1]:
            fail("integer %d outside int64" % v)
    elif isinstance(v, dict):
        for x in v.values():
            ints(x)
    elif isinstance(v, list):
        for x in v:
            ints(x)


def check_json(path):
    text(path)
    try:
        doc = json.loads(open(path, "rb").read().decode("utf-8"),
                         parse_constant=lambda c: fail("non-standard constant " + c))
    except ValueError as e:
        fail("%s: not JSON: %s" % (path, e))
    ints(doc)
    return doc


def folded(path, want=None):
    total = 0
    for n, line in enumerate(text(path).split("\n")[:-1], 1):
        m = re.fullmatch(r"(.+) (\d+)", line)
        if not m or any(not name for name in m.group(1).split(";")):
            fail("%s:%d: not a folded line: %r" % (path, n, line[:200]))
        total += int(m.group(2))
    if want is not None and total != int(want):
        fail("%s: weights sum to %d, want %s" % (path, total, want))


def svg(path):
    text(path)
    try:
        ET.parse(path)
    except ET.ParseError as e:
        fail("%s: not XML: %s" % (path, e))


def md(path):
    text(path)
    html = subprocess.run(["cmark-gfm", "-e", "table", "--unsafe", path], check=True,
                          capture_output=True, text=True).stdout
    for tag in ("<script", "<img", "<a href"):
        if tag in html:
            fail("%s: a name became HTML (%s)" % (path, tag))
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        cells = [len(re.findall(r"<t[hd][ >]", r)) for r in rows]
        if len(set(cells)) != 1:
            fail("%s: table rows with %s cells" % (path, cells))
    # every line of a table in the source is a row of a rendered table
    src_rows = sum(1 for l in open(path, encoding="utf-8") if l.startswith("|"))
    html_rows = html.count("<tr>")
    if src_rows != html_rows + html.count("<table>"):
        fail("%s: %d table lines, %d rendered rows" % (path, src_rows, html_rows))


def main(argv):
    kinds = {"text": text, "json": check_json, "folded": folded, "svg": svg, "md": md}
    if len(argv) < 3 or argv[1] not in kinds:
        fail(__doc__)
    kinds[argv[1]](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
