#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Checks of the scrape configurations in deploy/scrape that no Debian package can do.

  scrape_check.py promtool-copy CONFIG OUT TOKEN   Prometheus or Parca CONFIG -> a copy for
        `promtool check config`: Debian's Prometheus is built without Kubernetes discovery,
        so each kubernetes_sd_configs (checked here against Prometheus' documented fields)
        becomes a file_sd_configs; Parca's own fields (checked here against Parca's
        pkg/config) are removed; credentials files point at TOKEN (promtool opens them)
  scrape_check.py relabel CONFIG JOB POD.json       the labels JOB's relabel_configs make of
        the target described by POD.json (discovered labels), as Prometheus would
  scrape_check.py alloy FILE [POD.json]              parse FILE as Alloy configuration syntax,
        check the components used against their documented arguments and blocks and every
        component reference; with POD.json, print the labels discovery.relabel makes of it

Exit 1 with one line per problem, 0 otherwise.
"""
import json
import re
import sys

import yaml

K8S_SD = {"api_server", "role", "kubeconfig_file", "basic_auth", "authorization", "oauth2",
          "proxy_url", "no_proxy", "proxy_from_environment", "proxy_connect_header",
          "follow_redirects", "enable_http2", "tls_config", "namespaces", "selectors",
          "attach_metadata"}
K8S_ROLES = {"node", "service", "pod", "endpoints", "endpointslice", "ingress"}
# Parca's pkg/config: Config and ScrapeConfig (the HTTP client and discovery are Prometheus')
PARCA_TOP = {"object_storage", "scrape_configs"}
PARCA_ONLY = {"profiling_config", "normalized_addresses"}
PARCA_PROFILING = {"pprof_config", "path_prefix"}
PARCA_PPROF = {"enabled", "path", "delta", "keep_sample_type"}

problems = []


def problem(msg):
    problems.append(msg)


def done(out=None):
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    if out is not None:
        print(out)


def duration_s(d):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", str(d))
    if not m:
        problem(f"duration {d!r}")
        return 0
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def check_k8s_sd(job, sds):
    for sd in sds:
        for k in set(sd) - K8S_SD:
            problem(f"{job}: kubernetes_sd_configs: unknown field {k}")
        if sd.get("role") not in K8S_ROLES:
            problem(f"{job}: kubernetes_sd_configs: role {sd.get('role')!r}")
        for k in set(sd.get("namespaces", {})) - {"own_namespace", "names"}:
            problem(f"{job}: kubernetes_sd_configs.namespaces: unknown field {k}")


def check_parca(cfg):
    for k in set(cfg) - PARCA_TOP:
        problem(f"parca: unknown top-level field {k}")
    if not cfg.get("object_storage", {}).get("bucket"):
        problem("parca: object_storage.bucket is required")
    for sc in cfg.get("scrape_configs", []):
        job = sc.get("job_name") or problem("parca: a scrape config without job_name")
        pc = sc.get("profiling_config", {})
        for k in set(pc) - PARCA_PROFILING:
            problem(f"{job}: profiling_config: unknown field {k}")
        for name, p in pc.get("pprof_config", {}).items():
            for k in set(p or {}) - PARCA_PPROF:
                problem(f"{job}: pprof_config.{name}: unknown field {k}")
        # Parca: the timeout defaults to the interval + 3 s and must exceed it
        interval = duration_s(sc.get("scrape_interval", "10s"))
        timeout = duration_s(sc.get("scrape_timeout", f"{int(interval) + 3}s"))
        if timeout <= interval:
            problem(f"{job}: scrape timeout must be greater than the interval")


def promtool_copy(path, out, token):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    parca = "object_storage" in cfg
    if parca:
        check_parca(cfg)
        cfg = {"scrape_configs": cfg.get("scrape_configs", [])}
    for sc in cfg.get("scrape_configs", []):
        for k in PARCA_ONLY if parca else ():
            sc.pop(k, None)
        if "kubernetes_sd_configs" in sc:
            check_k8s_sd(sc.get("job_name"), sc.pop("kubernetes_sd_configs"))
            sc["file_sd_configs"] = [{"files": ["/nonexistent/culpert-targets.json"]}]
        if "credentials_file" in sc.get("authorization", {}):
            sc["authorization"]["credentials_file"] = token
    with open(out, "w") as f:
        yaml.safe_dump(cfg, f)
    done()


# --- relabeling, as Prometheus' model/relabel does it (RE2 anchored, $1 expansion) -----

def relabel(labels, rules):
    labels = dict(labels)
    for r in rules:
        src = r.get("source_labels", [])
        val = r.get("separator", ";").join(labels.get(s, "") for s in src)
        rx = re.compile("^(?:" + r.get("regex", "(.*)") + ")$")
        act = r.get("action", "replace")
        m = rx.match(val)
        if act == "keep" and not m:
            return None
        if act == "drop" and m:
            return None
        if act == "replace" and m:
            rep = re.sub(r"\$\{?(\d+)\}?", lambda g: m.group(int(g.group(1))) or "",
                         r.get("replacement", "$1"))
            if rep:
                labels[r["target_label"]] = rep
            else:
                labels.pop(r["target_label"], None)
        if act not in ("keep", "drop", "replace"):
            problem(f"relabel action {act} is not simulated")
    return labels


def relabel_job(path, job, podfile):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    with open(podfile) as f:
        pod = json.load(f)
    sc = next((s for s in cfg["scrape_configs"] if s["job_name"] == job), None)
    if sc is None:
        problem(f"no job {job}")
        done()
    out = relabel(pod, sc.get("relabel_configs", []))
    if out is not None:
        for k, v in sc.get("params", {}).items():
            out.setdefault("__param_" + k, v[0])
    done(json.dumps(public(out), sort_keys=True))


def public(labels):
    """what is left for the scrape: no __meta_ labels"""
    if labels is None:
        return None
    return {k: v for k, v in labels.items() if not k.startswith("__meta_")}


# --- Alloy configuration syntax -----------------------------------------------------------

TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+) | (?P<nl>\n) | (?P<comment>//[^\n]*|/\*.*?\*/) |
    (?P<string>"(?:[^"\\\n]|\\.)*") | (?P<raw>`[^`]*`) |
    (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?) |
    (?P<ident>[A-Za-z_][A-Za-z0-9_]*) |
    (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%^<>!=.,(){}\[\]])
""", re.X | re.S)


def tokenize(text):
    toks, pos, line = [], 0, 1
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"line {line}: unexpected {text[pos]!r}")
        kind = m.lastgroup
        if kind == "nl" or (kind == "comment" and "\n" in m.group()):
            toks.append(("nl", "\n", line))
        elif kind not in ("ws", "comment"):
            toks.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    toks.append(("eof", "", line))
    return toks


class Parser:
    """body = {attribute | block}; block = name {"." name} [string] "{" body "}";
    attribute = name "=" expr; the expression grammar of the Alloy syntax reference"""

    BINARY = [["||"], ["&&"], ["==", "!=", "<", "<=", ">", ">="], ["+", "-"],
              ["*", "/", "%"], ["^"]]

    def __init__(self, text):
        self.t, self.i, self.nest = tokenize(text), 0, 0

    def peek(self, skip_nl=None):
        j = self.i
        skip = self.nest > 0 if skip_nl is None else skip_nl
        while skip and self.t[j][0] == "nl":
            j += 1
        return j, self.t[j]

    def next(self, skip_nl=None):
        self.i, tok = self.peek(skip_nl)
        self.i += 1
        return tok

    def expect(self, value, skip_nl=None):
        tok = self.next(skip_nl)
        if tok[1] != value:
            raise SyntaxError(f"line {tok[2]}: want {value!r}, have {tok[1]!r}")
        return tok

    def body(self, end):
        stmts = []
        while True:
            _, tok = self.peek(True)
            if tok[1] == end and tok[0] in ("op", "eof"):
                self.next(True)
                return stmts
            if tok[0] != "ident":
                raise SyntaxError(f"line {tok[2]}: want an attribute or a block, have {tok[1]!r}")
            stmts.append(self.statement())

    def statement(self):
        name = [self.next(True)]
        if self.peek(False)[1][1] == "=":
            self.next(False)
            expr = self.expr()
            if self.peek(False)[1][0] not in ("nl", "eof") and self.peek(False)[1][1] != "}":
                raise SyntaxError(f"line {name[0][2]}: attribute {name[0][1]} not ended by a newline")
            return ("attr", name[0][1], expr, name[0][2])
        while self.peek(False)[1][1] == ".":
            self.next(False)
            tok = self.next(False)
            if tok[0] != "ident":
                raise SyntaxError(f"line {tok[2]}: block name")
            name.append(tok)
        label = None
        if self.peek(False)[1][0] == "string":
            label = json.loads(self.next(False)[1])
        self.expect("{", False)
        return ("block", ".".join(n[1] for n in name), label, self.body("}"), name[0][2])

    def expr(self, level=0):
        if level == len(self.BINARY):
            return self.unary()
        left = self.expr(level + 1)
        while self.peek()[1][1] in self.BINARY[level]:
            op = self.next()[1]
            left = ("binary", op, left, self.expr(level + 1))
        return left

    def unary(self):
        if self.peek()[1][1] in ("!", "-"):
            return ("unary", self.next()[1], self.unary())
        return self.postfix(self.primary())

    def postfix(self, e):
        while True:
            tok = self.peek(False)[1]
            if tok[1] == ".":
                self.next(False)
                e = ("access", e, self.next(False)[1])
            elif tok[1] == "[":
                self.next(False)
                self.nest += 1
                e = ("index", e, self.expr())
                self.expect("]")
                self.nest -= 1
            elif tok[1] == "(":
                self.next(False)
                e = ("call", e, self.items(")", self.expr))
            else:
                return e

    def items(self, end, item):
        self.nest += 1
        out = []
        while self.peek()[1][1] != end:
            out.append(item())
            if self.peek()[1][1] != ",":
                break
            self.next()
        self.expect(end)
        self.nest -= 1
        return out

    def field(self):
        tok = self.next()
        if tok[0] not in ("ident", "string"):
            raise SyntaxError(f"line {tok[2]}: object key {tok[1]!r}")
        self.expect("=")
        return (json.loads(tok[1]) if tok[0] == "string" else tok[1], self.expr())

    def primary(self):
        tok = self.next()
        kind, val, line = tok
        if kind == "string":
            return ("lit", json.loads(val))
        if kind == "raw":
            return ("lit", val[1:-1])
        if kind == "number":
            return ("lit", float(val))
        if kind == "ident":
            if val in ("true", "false"):
                return ("lit", val == "true")
            if val == "null":
                return ("lit", None)
            return ("ident", val)
        if val == "(":
            self.nest += 1
            e = self.expr()
            self.expect(")")
            self.nest -= 1
            return e
        if val == "[":
            return ("array", self.items("]", self.expr))
        if val == "{":
            return ("object", self.items("}", self.field))
        raise SyntaxError(f"line {line}: unexpected {val!r}")


# the components deploy/scrape uses: arguments, blocks (None: any label-free block of that
# schema), exported fields; from the Alloy reference of each component
RULE = {"source_labels", "separator", "regex", "modulus", "target_label", "replacement",
        "action"}
PROFILE = {"enabled", "path", "delta"}
COMPONENTS = {
    "discovery.kubernetes": ({"api_server", "kubeconfig_file", "role", "bearer_token",
                              "bearer_token_file", "proxy_url", "follow_redirects",
                              "enable_http2"},
                             {"namespaces": {"own_namespace", "names"},
                              "selectors": {"role", "label", "field"},
                              "attach_metadata": {"node"}}, {"targets"}),
    "discovery.relabel": ({"targets"}, {"rule": RULE}, {"output", "rules"}),
    "pyroscope.scrape": ({"targets", "forward_to", "bearer_token", "bearer_token_file",
                          "delta_profiling_duration", "enable_http2", "follow_redirects",
                          "http_headers", "job_name", "no_proxy", "params",
                          "proxy_connect_header", "proxy_from_environment", "proxy_url",
                          "scheme", "scrape_interval", "scrape_timeout"},
                         {"profiling_config": {"path_prefix"}, "authorization": None,
                          "basic_auth": None, "tls_config": None, "clustering": {"enabled"}},
                         set()),
    "pyroscope.write": (set(), {"endpoint": {"url", "name", "remote_timeout", "headers",
                                             "bearer_token", "bearer_token_file",
                                             "min_backoff_period", "max_backoff_period",
                                             "max_backoff_retries"},
                                "external_labels": None}, {"receiver"}),
}
PROFILE_BLOCKS = {"profile.memory", "profile.block", "profile.goroutine", "profile.mutex",
                  "profile.process_cpu", "profile.fgprof", "profile.godeltaprof_memory",
                  "profile.godeltaprof_mutex", "profile.godeltaprof_block"}
REQUIRED = {"discovery.relabel": {"targets"}, "pyroscope.scrape": {"targets", "forward_to"}}


def refs(e):
    """component references: ("discovery", "relabel", "culpert", "output")"""
    if e[0] == "access":
        chain = []
        while e[0] == "access":
            chain.append(e[2])
            e = e[1]
        if e[0] == "ident":
            yield tuple([e[1]] + chain[::-1])
        else:
            yield from refs(e)
        return
    for sub in e[1:]:
        if isinstance(sub, tuple):
            yield from refs(sub)
        elif isinstance(sub, list):
            for x in sub:
                if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and \
                        isinstance(x[1], tuple):
                    yield from refs(x[1])
                elif isinstance(x, tuple):
                    yield from refs(x)


def check_alloy(stmts):
    defined, uses = {}, []
    for s in stmts:
        if s[0] != "block" or s[1] not in COMPONENTS:
            problem(f"line {s[-1]}: {s[1]}: not a component this check knows")
            continue
        _, name, label, body, line = s
        if label is None:
            problem(f"line {line}: component {name} needs a label")
        if (name, label) in defined:
            problem(f"line {line}: {name} \"{label}\" defined twice")
        defined[(name, label)] = COMPONENTS[name][2]
        args, blocks, _ = COMPONENTS[name]
        seen = set()
        for b in body:
            if b[0] == "attr":
                seen.add(b[1])
                if b[1] not in args:
                    problem(f"line {b[3]}: {name}: unknown argument {b[1]}")
                uses += [(r, b[3]) for r in refs(b[2])]
            elif b[1] not in blocks:
                problem(f"line {b[4]}: {name}: unknown block {b[1]}")
            else:
                check_block(name, b, blocks[b[1]])
        for r in REQUIRED.get(name, set()) - seen:
            problem(f"line {line}: {name} \"{label}\": {r} is required")
    for r, line in uses:
        if len(r) < 4 or (".".join(r[:2]), r[2]) not in defined:
            problem(f"line {line}: {'.'.join(r)} names no component defined here")
        elif r[3] not in defined[(".".join(r[:2]), r[2])]:
            problem(f"line {line}: {'.'.join(r[:3])} exports no {r[3]}")


def check_block(comp, b, schema):
    _, name, label, body, line = b
    if schema is None:
        return
    for s in body:
        if s[0] == "attr" and s[1] not in schema:
            problem(f"line {s[3]}: {comp} > {name}: unknown argument {s[1]}")
        elif s[0] == "block":
            if name == "profiling_config" and s[1] in PROFILE_BLOCKS | {"profile.custom"}:
                if (s[1] == "profile.custom") != (s[2] is not None):
                    problem(f"line {s[4]}: {s[1]}: a label goes with profile.custom only")
                keys = {x[1] for x in s[3] if x[0] == "attr"}
                for k in keys - PROFILE:
                    problem(f"line {s[4]}: {s[1]}: unknown argument {k}")
                if s[1] == "profile.custom" and not {"enabled", "path"} <= keys:
                    problem(f"line {s[4]}: profile.custom needs enabled and path")
            else:
                problem(f"line {s[4]}: {comp} > {name}: unknown block {s[1]}")


def value(e):
    if e[0] == "lit":
        return e[1]
    if e[0] == "array":
        return [value(x) for x in e[1]]
    if e[0] == "object":
        return {k: value(v) for k, v in e[1]}
    raise ValueError("not a literal")


def alloy(path, podfile=None):
    with open(path) as f:
        text = f.read()
    try:
        stmts = Parser(text).body("")
    except SyntaxError as e:
        problem(f"{path}: {e}")
        done()
    check_alloy(stmts)
    if not podfile:
        done(f"ok {len(stmts)} components")
        return
    with open(podfile) as f:
        pod = json.load(f)
    out = pod
    for s in stmts:
        if s[1] == "discovery.relabel":
            rules = [{a[1]: value(a[2]) for a in r[3]} for r in s[3] if r[0] == "block"]
            out = relabel(pod, rules)
    done(json.dumps(public(out), sort_keys=True))


def main():
    a = sys.argv[1:]
    if a[:1] == ["promtool-copy"] and len(a) == 4:
        promtool_copy(*a[1:])
    elif a[:1] == ["relabel"] and len(a) == 4:
        relabel_job(*a[1:])
    elif a[:1] == ["alloy"] and len(a) in (2, 3):
        alloy(*a[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
