#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Run a composite GitHub action's steps as the runner does, for tests/cli/test_action.sh.

  action_runner.py eval EXPR [--contexts JSON_FILE] [--failed]
      one expression's value, as JSON
  action_runner.py lint ACTION_YML
      the file's structure, every ${{ }} parsed by the evaluator below, every input used
      and every one used declared, steps.ID only after that step.  Exit 1 on a finding.
  action_runner.py run ACTION_YML --event NAME --event-file FILE --sha SHA --ref REF
                   --work DIR --result FILE [--with KEY=VALUE]... [--workflow FILE --job JOB]
                   [--vars FILE] [--secrets FILE]
      the steps in order: `if:` (with the implicit success()), `${{ }}` in env, with, run
      and working-directory, a `run:` step as `bash --noprofile --norc -eo pipefail FILE`
      with GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY files, a `uses:`
      step checked against KNOWN_ACTIONS and recorded instead of run.  The inputs come from
      --with, or from the `with:` of the step of --workflow's JOB that uses this action
      (evaluated with github, env, vars and secrets).  Exit 0 when the action succeeded, 1
      when a step failed, 2 when this runner refused something (an expression it does not
      know, an unknown input, a malformed file).  --result gets a JSON account: each step's
      outcome, the action's outputs, the uses: calls, the annotations (::error:: ...) and
      the summary.

The evaluator implements a subset of GitHub's expression language faithfully and refuses
the rest: literals ('string' with '' escapes, numbers, true, false, null), contexts and
.property (names with '-'), ! == != && || and parentheses, and the status functions
success(), failure(), always(), cancelled().  Semantics as GitHub documents them: && and ||
return one of their operands, == on two strings ignores case, values of different types
compare as numbers (null 0, booleans 1/0, strings parsed, '' 0), a missing property is null,
null prints as ''.  Stricter than GitHub (a test wants mistakes loud): an input the action
does not declare, steps.ID of a step not run before, an input given that is not declared,
an unknown action in uses:.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

# The inputs of the actions a composite step may use, from each action's action.yml /
# README (fetched for this test): a with: key outside the list is a mistake.
KNOWN_ACTIONS = {
    # marocchino/sticky-pull-request-comment v2: README and action.yml
    "marocchino/sticky-pull-request-comment@v2": {
        "inputs": {"header", "append", "recreate", "delete", "only_create", "only_update",
                   "hide_details", "hide", "hide_and_recreate", "hide_classify", "message",
                   "path", "ignore_empty", "skip_unchanged", "follow_symbolic_links",
                   "number", "owner", "repo", "GITHUB_TOKEN"},
        # "message" or "path" gives the comment's text
        "one_of": ("message", "path"),
    },
}

STEP_KEYS = {"name", "id", "if", "run", "shell", "env", "working-directory", "uses", "with"}
STATUS_FUNCS = {"success", "failure", "always", "cancelled"}


class Refused(Exception):
    """Something this runner does not implement or the action got wrong: exit 2."""


# --- expressions ------------------------------------------------------------------------

TOKEN_RE = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<num>-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))
  | (?P<op>==|!=|&&|\|\||<=|>=|[!<>().,\[\]*])
  | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
)""", re.X)


def tokenize(src):
    toks, i = [], 0
    src = src.rstrip()
    while i < len(src):
        m = TOKEN_RE.match(src, i)
        if not m or m.end() == i:
            raise Refused("cannot read the expression at %r" % src[i:])
        kind = m.lastgroup
        toks.append((kind, m.group(kind)))
        i = m.end()
    return toks


class Parser:
    """Recursive descent; nodes are tuples.  Precedence: ! > == != > && > ||."""

    def __init__(self, src):
        self.toks = tokenize(src)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise Refused("expected %r, found %r" % (value, tok[1]))
        self.i += 1
        return tok

    def parse(self):
        node = self.or_()
        if self.i != len(self.toks):
            raise Refused("unexpected %r" % self.peek()[1])
        return node

    def binary(self, ops, sub):
        node = sub()
        while self.peek()[0] == "op" and self.peek()[1] in ops:
            op = self.take()[1]
            node = (op, node, sub())
        return node

    def or_(self):
        return self.binary({"||"}, self.and_)

    def and_(self):
        return self.binary({"&&"}, self.eq)

    def eq(self):
        node = self.unary()
        if self.peek()[0] == "op" and self.peek()[1] in ("<", "<=", ">", ">="):
            raise Refused("comparison %r is not implemented" % self.peek()[1])
        while self.peek()[0] == "op" and self.peek()[1] in ("==", "!="):
            op = self.take()[1]
            node = (op, node, self.unary())
        return node

    def unary(self):
        if self.peek() == ("op", "!"):
            self.take()
            return ("!", self.unary())
        return self.primary()

    def primary(self):
        kind, val = self.take()
        if kind == "str":
            return ("lit", val[1:-1].replace("''", "'"))
        if kind == "num":
            return ("lit", float(int(val, 16)) if val.startswith(("0x", "-0x")) else float(val))
        if kind == "op" and val == "(":
            node = self.or_()
            self.take(")")
            return node
        if kind != "name":
            raise Refused("unexpected %r" % val)
        if val in ("true", "false"):
            return ("lit", val == "true")
        if val == "null":
            return ("lit", None)
        if self.peek() == ("op", "("):
            if val not in STATUS_FUNCS:
                raise Refused("function %s() is not implemented" % val)
            self.take("(")
            self.take(")")
            return ("call", val)
        path = [val]
        while self.peek()[0] == "op" and self.peek()[1] in (".", "[", "*"):
            if self.peek()[1] != ".":
                raise Refused("%r after %s is not implemented" % (self.peek()[1], val))
            self.take(".")
            kind, name = self.take()
            if kind != "name":
                raise Refused("a property name after '.', not %r" % name)
            path.append(name)
        return ("ctx", tuple(path))


def truthy(v):
    if v is None or v is False:
        return False
    if isinstance(v, float):
        return v != 0 and v == v
    if isinstance(v, str):
        return v != ""
    return True


def to_number(v):
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, float):
        return v
    if isinstance(v, str):
        s = v.strip()
        if s == "":
            return 0.0
        try:
            return float(int(s, 16)) if s.lower().startswith("0x") else float(s)
        except ValueError:
            return float("nan")
    return float("nan")


def equal(a, b):
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    if type(a) is type(b) and not isinstance(a, (dict, list)):
        return a == b
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    return to_number(a) == to_number(b)


def to_string(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v == int(v) else repr(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, indent=2)
    return v


class Evaluator:
    """Contexts: a dict name -> value; 'inputs' and 'steps' are checked strictly."""

    def __init__(self, contexts, declared_inputs=None, known_steps=None, failed=False):
        self.contexts = contexts
        self.declared_inputs = declared_inputs
        self.known_steps = known_steps
        self.failed = failed

    def lookup(self, path):
        name = path[0]
        if name not in self.contexts:
            raise Refused("context %r is not available here" % name)
        if name == "inputs" and self.declared_inputs is not None:
            if len(path) < 2 or path[1] not in self.declared_inputs:
                raise Refused("inputs.%s is not declared" % ".".join(path[1:]))
        if name == "steps" and self.known_steps is not None:
            if len(path) < 2 or path[1] not in self.known_steps:
                raise Refused("steps.%s: no earlier step has that id" % ".".join(path[1:]))
        v = self.contexts[name]
        for p in path[1:]:
            v = v.get(p) if isinstance(v, dict) else None
        return v

    def eval(self, node):
        op = node[0]
        if op == "lit":
            return node[1]
        if op == "ctx":
            return self.lookup(node[1])
        if op == "call":
            return {"success": not self.failed, "failure": self.failed, "always": True,
                    "cancelled": False}[node[1]]
        if op == "!":
            return not truthy(self.eval(node[1]))
        if op == "||":
            a = self.eval(node[1])
            return a if truthy(a) else self.eval(node[2])
        if op == "&&":
            a = self.eval(node[1])
            return self.eval(node[2]) if truthy(a) else a
        if op in ("==", "!="):
            r = equal(self.eval(node[1]), self.eval(node[2]))
            return r if op == "==" else not r
        raise Refused("operator %r" % op)


EXPR_RE = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def yaml_str(v):
    """A scalar of env: or with: as the runner reads it: YAML's true is "true"."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise Refused("a value must be a scalar here, not %r" % (v,))


def interpolate(text, ev):
    """Every ${{ expr }} of a string replaced by its value as a string."""
    if not isinstance(text, str):
        raise Refused("a value must be a string here, not %r (quote it)" % (text,))
    return EXPR_RE.sub(lambda m: to_string(ev.eval(Parser(m.group(1)).parse())), text)


def uses_status_func(node):
    if node[0] == "call":
        return True
    return any(isinstance(n, tuple) and uses_status_func(n) for n in node[1:])


def condition(text, ev):
    """An if: as the runner reads it: ${{ }} optional, success() && (...) unless it has
    a status function of its own."""
    if isinstance(text, bool):
        text = "true" if text else "false"
    s = text.strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", s, re.S)
    node = Parser(m.group(1) if m else s).parse()
    if not uses_status_func(node):
        node = ("&&", ("call", "success"), node)
    return truthy(ev.eval(node))


def expressions(value):
    """Every ${{ }} body in a YAML value, recursively."""
    if isinstance(value, str):
        return [m.group(1) for m in EXPR_RE.finditer(value)]
    if isinstance(value, dict):
        return [e for v in value.values() for e in expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in expressions(v)]
    return []


def refs(node, out):
    """Context paths a parsed expression reads."""
    if node[0] == "ctx":
        out.append(node[1])
    for n in node[1:]:
        if isinstance(n, tuple):
            refs(n, out)
    return out


# --- the action file ----------------------------------------------------------------------

def check_uses(st):
    """A uses: step names an action this runner knows, with inputs that action has."""
    known = KNOWN_ACTIONS.get(st["uses"])
    if not known:
        raise Refused("uses: %s is not one this runner knows" % st["uses"])
    unknown = set(st.get("with") or {}) - known["inputs"]
    if unknown:
        raise Refused("uses: %s has no input %s" % (st["uses"], sorted(unknown)))


def load_action(path):
    with open(path) as f:
        a = yaml.safe_load(f)
    if not isinstance(a, dict) or not isinstance(a.get("runs"), dict):
        raise Refused("%s: not an action (no runs:)" % path)
    if a["runs"].get("using") != "composite":
        raise Refused("%s: runs.using is %r, not composite" % (path, a["runs"].get("using")))
    for key in ("name", "description"):
        if not isinstance(a.get(key), str):
            raise Refused("%s: no %s" % (path, key))
    for name, spec in (a.get("inputs") or {}).items():
        if not isinstance(spec, dict) or not isinstance(spec.get("description"), str):
            raise Refused("input %s: no description" % name)
        if "default" in spec and not isinstance(spec["default"], str):
            raise Refused("input %s: default %r is not a string (quote it)" %
                          (name, spec["default"]))
    ids = set()
    for i, st in enumerate(a["runs"].get("steps") or []):
        extra = set(st) - STEP_KEYS
        if extra:
            raise Refused("step %d: keys %s are not implemented" % (i + 1, sorted(extra)))
        if ("run" in st) == ("uses" in st):
            raise Refused("step %d: wants exactly one of run: and uses:" % (i + 1))
        if "run" in st and st.get("shell") != "bash":
            raise Refused("step %d: shell %r (a composite run: step needs one; bash is "
                          "implemented)" % (i + 1, st.get("shell")))
        if "uses" in st:
            check_uses(st)
        if "id" in st:
            if st["id"] in ids:
                raise Refused("step id %s twice" % st["id"])
            ids.add(st["id"])
    return a


def lint(path):
    a = load_action(path)
    declared = set((a.get("inputs") or {}).keys())
    used, problems, seen = set(), [], set()
    contexts = {"inputs", "github", "env", "steps", "runner", "job", "strategy", "matrix"}

    def check(value, where, steps_known):
        for e in expressions(value):
            try:
                node = Parser(e).parse()
            except Refused as err:
                problems.append("%s: ${{%s}}: %s" % (where, e, err))
                continue
            for p in refs(node, []):
                if p[0] not in contexts:
                    problems.append("%s: unknown context %s" % (where, p[0]))
                if p[0] == "inputs":
                    if len(p) < 2 or p[1] not in declared:
                        problems.append("%s: inputs.%s is not declared" %
                                        (where, ".".join(p[1:])))
                    else:
                        used.add(p[1])
                if p[0] == "steps" and (len(p) < 2 or p[1] not in steps_known):
                    problems.append("%s: steps.%s before that step" % (where, ".".join(p[1:])))

    for i, st in enumerate(a["runs"]["steps"]):
        where = "step %d (%s)" % (i + 1, st.get("name", st.get("id", "?")))
        for key in ("if",):
            if key in st:
                v = st[key]
                check(v if "${{" in str(v) else "${{ %s }}" % v, where + " if", seen)
        for key in ("env", "with", "run", "working-directory"):
            if key in st:
                check(st[key], "%s %s" % (where, key), seen)
        if "id" in st:
            seen.add(st["id"])
    check(a.get("outputs") or {}, "outputs", seen)
    for name in sorted(declared - used):
        problems.append("input %s is never used" % name)
    for p in problems:
        print("action_runner: lint: %s" % p)
    return 1 if problems else 0


# --- running it ------------------------------------------------------------------------

def parse_kv_file(path):
    """GITHUB_OUTPUT / GITHUB_ENV: NAME=VALUE lines and NAME<<DELIM ... DELIM blocks."""
    out = {}
    if not os.path.exists(path):
        return out
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            body = []
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise Refused("%s: %s<<%s has no end" % (path, name, delim))
            i += 1
            out[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        else:
            raise Refused("%s: cannot read %r" % (path, line))
    return out


def github_context(args, event):
    ref = args.ref
    if ref.startswith("refs/heads/"):
        ref_name = ref[len("refs/heads/"):]
    elif ref.startswith("refs/pull/"):
        ref_name = ref[len("refs/pull/"):]
    else:
        ref_name = ref.rsplit("/", 1)[-1]
    pr = event.get("pull_request") or {}
    is_pr = args.event.startswith("pull_request")
    return {
        "event_name": args.event,
        "event": event,
        "sha": args.sha,
        "ref": ref,
        "ref_name": ref_name,
        "head_ref": (pr.get("head") or {}).get("ref", "") if is_pr else "",
        "base_ref": (pr.get("base") or {}).get("ref", "") if is_pr else "",
        "repository": (event.get("repository") or {}).get("full_name", "owner/repo"),
        "workspace": args.work,
        "token": "ghs_simulated-token",
        "action_path": os.path.dirname(os.path.abspath(args.action)),
    }


def github_env(gh, args):
    return {
        "GITHUB_ACTIONS": "true", "CI": "true",
        "GITHUB_EVENT_NAME": gh["event_name"], "GITHUB_EVENT_PATH": args.event_file,
        "GITHUB_SHA": gh["sha"], "GITHUB_REF": gh["ref"], "GITHUB_REF_NAME": gh["ref_name"],
        "GITHUB_HEAD_REF": gh["head_ref"], "GITHUB_BASE_REF": gh["base_ref"],
        "GITHUB_REPOSITORY": gh["repository"], "GITHUB_WORKSPACE": args.work,
        "GITHUB_ACTION_PATH": gh["action_path"], "RUNNER_TEMP": os.path.join(args.work, ".tmp"),
        "RUNNER_OS": "Linux",
    }


def workflow_inputs(args, gh, action_path):
    """The with: of the step of the workflow's job that uses this action, evaluated."""
    with open(args.workflow) as f:
        wf = yaml.safe_load(f)
    job = (wf.get("jobs") or {}).get(args.job)
    if not job:
        raise Refused("%s: no job %s" % (args.workflow, args.job))
    vars_ = json.load(open(args.vars)) if args.vars else {}
    secrets = json.load(open(args.secrets)) if args.secrets else {}
    env = {}
    for scope in (wf.get("env") or {}, job.get("env") or {}):
        ev = Evaluator({"github": gh, "vars": vars_, "secrets": secrets, "env": dict(env)})
        env.update({k: interpolate(yaml_str(v), ev) for k, v in scope.items()})
    for st in job.get("steps") or []:
        uses = st.get("uses", "")
        if uses == "./.github/actions/culpert-diff" or \
                re.fullmatch(r"[^/]+/[^/]+/\.github/actions/culpert-diff@\S+", uses):
            step_env = dict(env)
            ev = Evaluator({"github": gh, "vars": vars_, "secrets": secrets, "env": env})
            step_env.update({k: interpolate(yaml_str(v), ev)
                             for k, v in (st.get("env") or {}).items()})
            ev = Evaluator({"github": gh, "vars": vars_, "secrets": secrets, "env": step_env})
            return {k: interpolate(yaml_str(v), ev)
                    for k, v in (st.get("with") or {}).items()}, step_env
    raise Refused("%s: job %s has no step using the culpert-diff action" %
                  (args.workflow, args.job))


def run_uses(st, ev, env, result):
    check_uses(st)
    name = st["uses"]
    known = KNOWN_ACTIONS[name]
    given = {k: interpolate(yaml_str(v), ev) for k, v in (st.get("with") or {}).items()}
    call = {"uses": name, "with": given}
    if not any(given.get(k) for k in known["one_of"]):
        print("action_runner: %s: neither of %s given" % (name, known["one_of"]))
        call["error"] = "no message"
        result["uses"].append(call)
        return False
    if given.get("path"):
        path = os.path.join(env["GITHUB_WORKSPACE"], given["path"])
        if not os.path.isfile(path):
            print("action_runner: %s: path %s is not a file" % (name, given["path"]))
            call["error"] = "no file"
            result["uses"].append(call)
            return False
        call["message"] = open(path).read()
    else:
        call["message"] = given["message"]
    print("action_runner: %s with %s" % (name, json.dumps(given, sort_keys=True)))
    result["uses"].append(call)
    return True


def run_script(st, ev, env, env_ctx, work, result):
    """A run: step; env is the processes' environment, env_ctx the env context, both
    updated by what the step writes to GITHUB_ENV and GITHUB_PATH."""
    script = interpolate(st["run"], ev)
    step_env = dict(env)
    step_env.update({k: interpolate(yaml_str(v), ev) for k, v in (st.get("env") or {}).items()})
    files = {}
    for var in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY"):
        fd, files[var] = tempfile.mkstemp(prefix=var.lower() + ".", dir=env["RUNNER_TEMP"])
        os.close(fd)
        step_env[var] = files[var]
    fd, script_path = tempfile.mkstemp(suffix=".sh", dir=env["RUNNER_TEMP"])
    with os.fdopen(fd, "w") as f:
        f.write(script)
    cwd = os.path.join(work, interpolate(st.get("working-directory", "."), ev))
    p = subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail", script_path],
                         cwd=cwd, env=step_env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        sys.stdout.write(line)
        m = re.match(r"::(error|warning|notice)( [^:]*)?::(.*)", line.rstrip("\n"))
        if m:
            result["annotations"].append({"level": m.group(1), "message": m.group(3)})
    rc = p.wait()
    outputs = parse_kv_file(files["GITHUB_OUTPUT"])
    added = parse_kv_file(files["GITHUB_ENV"])
    env.update(added)
    env_ctx.update(added)
    for d in open(files["GITHUB_PATH"]).read().split("\n"):
        if d.strip():
            env["PATH"] = d.strip() + os.pathsep + env["PATH"]
    with open(files["GITHUB_STEP_SUMMARY"]) as f:
        result["summary"] += f.read()
    for path in list(files.values()) + [script_path]:
        os.unlink(path)
    return rc, outputs


def run(args):
    a = load_action(args.action)
    declared = a.get("inputs") or {}
    event = json.load(open(args.event_file))
    gh = github_context(args, event)
    # the processes get the runner's environment; the env context only what the
    # workflow set (and steps add through GITHUB_ENV)
    env = dict(os.environ)
    env.update(github_env(gh, args))
    env_ctx = {}
    os.makedirs(env["RUNNER_TEMP"], exist_ok=True)
    if args.workflow:
        given, env_ctx = workflow_inputs(args, gh, args.action)
        env.update(env_ctx)
    else:
        given = dict(kv.split("=", 1) for kv in args.with_)
    unknown = set(given) - set(declared)
    if unknown:
        raise Refused("inputs %s are not declared by the action" % sorted(unknown))
    inputs = {}
    for name, spec in declared.items():
        if name in given:
            inputs[name] = given[name]
        elif spec.get("required") and "default" not in spec:
            raise Refused("required input %s not given" % name)
        else:
            inputs[name] = interpolate(spec.get("default", ""),
                                       Evaluator({"github": gh, "env": env_ctx}))
    result = {"steps": [], "uses": [], "annotations": [], "summary": "", "inputs": inputs}
    steps, failed = {}, False
    for st in a["runs"]["steps"]:
        ev = Evaluator({"inputs": inputs, "github": gh, "env": env_ctx, "steps": steps,
                        "runner": {"temp": env["RUNNER_TEMP"], "os": "Linux"}},
                       declared_inputs=set(declared), known_steps=set(steps), failed=failed)
        name = st.get("name", st.get("id", "?"))
        outcome, outputs = "skipped", {}
        if condition(st.get("if", "success()"), ev):
            print("action_runner: ::group::%s" % name)
            if "uses" in st:
                ok = run_uses(st, ev, env, result)
            else:
                rc, outputs = run_script(st, ev, env, env_ctx, args.work, result)
                ok = rc == 0
            outcome = "success" if ok else "failure"
            failed = failed or not ok
        if "id" in st:
            steps[st["id"]] = {"outputs": outputs, "outcome": outcome, "conclusion": outcome}
        result["steps"].append({"name": name, "id": st.get("id"), "outcome": outcome,
                                "outputs": outputs})
        print("action_runner: step %r: %s" % (name, outcome))
    ev = Evaluator({"steps": steps, "inputs": inputs, "github": gh, "env": env_ctx},
                   declared_inputs=set(declared), known_steps=set(steps))
    result["outputs"] = {k: interpolate(v.get("value", ""), ev)
                         for k, v in (a.get("outputs") or {}).items()}
    result["status"] = "failure" if failed else "success"
    with open(args.result, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    return 1 if failed else 0


def eval_cmd(args):
    """One expression against contexts from a JSON file: its value as JSON on stdout."""
    contexts = json.load(open(args.contexts)) if args.contexts else {}
    ev = Evaluator(contexts, failed=args.failed)
    print(json.dumps(ev.eval(Parser(args.expr).parse())))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("lint")
    lp.add_argument("action")
    ep = sub.add_parser("eval")
    ep.add_argument("expr")
    ep.add_argument("--contexts")
    ep.add_argument("--failed", action="store_true")
    rp = sub.add_parser("run")
    rp.add_argument("action")
    rp.add_argument("--event", required=True)
    rp.add_argument("--event-file", required=True)
    rp.add_argument("--sha", required=True)
    rp.add_argument("--ref", required=True)
    rp.add_argument("--work", required=True)
    rp.add_argument("--result", required=True)
    rp.add_argument("--with", dest="with_", action="append", default=[])
    rp.add_argument("--workflow")
    rp.add_argument("--job")
    rp.add_argument("--vars")
    rp.add_argument("--secrets")
    args = ap.parse_args()
    try:
        if args.cmd == "eval":
            return eval_cmd(args)
        return lint(args.action) if args.cmd == "lint" else run(args)
    except (Refused, yaml.YAMLError) as err:
        print("action_runner: refused: %s" % err)
        return 2


if __name__ == "__main__":
    sys.exit(main())
