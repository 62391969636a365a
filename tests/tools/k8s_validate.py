#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Validate Kubernetes manifests against the API's schema, rejecting unknown fields.

  k8s_validate.py FILE...     every YAML document of each FILE ('-': stdin)

The schema is that of Debian's python3-kubernetes (the OpenAPI models of the Kubernetes
API it was generated from): each document's apiVersion and kind name its model class;
every field must be one the model knows (an unknown or misspelt one is an error, which
the client's own deserializer would silently drop), of the model's type, recursively;
each object is then built with the model's constructor, which enforces required fields
and enumerations.  On top, checks the API server does that a schema cannot say:
resource quantities, names (RFC 1123), a DaemonSet's selector matching its template,
volume mounts naming volumes, probe ports naming container ports.
Prints one line per problem and exits 1 if there is any; 0 and "ok N documents" if not.
"""
import datetime
import re
import sys

import kubernetes.client as kc
import yaml

QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
PRIMITIVE = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,),
             "object": (object,), "date": (str, datetime.date),
             "datetime": (str, datetime.datetime)}


class Checker:
    def __init__(self, where):
        self.where = where
        self.errors = []

    def err(self, path, msg):
        self.errors.append(f"{self.where}: {path}: {msg}")

    def build(self, value, typ, path):
        """value checked against the type string of the client's models; the built value"""
        if typ in PRIMITIVE:
            ok = isinstance(value, PRIMITIVE[typ])
            if typ in ("int", "float") and isinstance(value, bool):
                ok = False
            if not ok:
                self.err(path, f"want {typ}, have {type(value).__name__} {value!r}")
            return value
        m = re.fullmatch(r"list\[(.+)\]", typ)
        if m:
            if not isinstance(value, list):
                self.err(path, f"want a list, have {value!r}")
                return None
            return [self.build(v, m.group(1), f"{path}[{i}]") for i, v in enumerate(value)]
        m = re.fullmatch(r"dict\(str, (.+)\)", typ)
        if m:
            if not isinstance(value, dict):
                self.err(path, f"want a map, have {value!r}")
                return None
            return {k: self.build(v, m.group(1), f"{path}.{k}") for k, v in value.items()}
        return self.model(value, getattr(kc, typ), path)

    def model(self, value, cls, path):
        if not isinstance(value, dict):
            self.err(path, f"want an object ({cls.__name__}), have {value!r}")
            return None
        by_json = {j: a for a, j in cls.attribute_map.items()}
        kwargs = {}
        for k, v in value.items():
            if k not in by_json:
                self.err(f"{path}.{k}", f"unknown field of {cls.__name__}")
                continue
            a = by_json[k]
            kwargs[a] = self.build(v, cls.openapi_types[a], f"{path}.{k}")
        try:
            return cls(**kwargs)
        except (ValueError, TypeError) as e:
            self.err(path, f"{cls.__name__}: {e}")
            return None


def model_class(doc):
    api, kind = doc.get("apiVersion", ""), doc.get("kind", "")
    version = api.split("/")[-1]
    return getattr(kc, version[:1].upper() + version[1:] + kind, None)


def semantic(c, doc):
    """what the API server validates beyond the schema"""
    name = doc.get("metadata", {}).get("name", "")
    if not DNS_SUBDOMAIN.match(name):
        c.err("metadata.name", f"{name!r} is not an RFC 1123 subdomain")
    spec = doc.get("spec", {})
    if doc.get("kind") in ("DaemonSet", "Deployment", "StatefulSet"):
        sel = spec.get("selector", {}).get("matchLabels", {})
        labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
        for k, v in sel.items():
            if labels.get(k) != v:
                c.err("spec.selector", f"{k}={v} does not select the pod template")
        pod(c, spec.get("template", {}).get("spec", {}), "spec.template.spec")


def pod(c, spec, path):
    vols = {v.get("name") for v in spec.get("volumes", [])}
    for i, ct in enumerate(spec.get("containers", [])):
        p = f"{path}.containers[{i}]"
        if not DNS_LABEL.match(ct.get("name", "")):
            c.err(f"{p}.name", "not an RFC 1123 label")
        ports = {x.get("name") for x in ct.get("ports", []) if x.get("name")}
        for x in ct.get("ports", []):
            if x.get("name") and len(x["name"]) > 15:
                c.err(f"{p}.ports", f"port name {x['name']} longer than 15")
        for m in ct.get("volumeMounts", []):
            if m.get("name") not in vols:
                c.err(f"{p}.volumeMounts", f"{m.get('name')} names no volume")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            port = ct.get(probe, {}).get("httpGet", {}).get("port")
            if isinstance(port, str) and port not in ports:
                c.err(f"{p}.{probe}", f"port {port} names no container port")
        for kind in ("limits", "requests"):
            for k, v in ct.get("resources", {}).get(kind, {}).items():
                if not QUANTITY.match(str(v)):
                    c.err(f"{p}.resources.{kind}.{k}", f"{v!r} is not a quantity")


def main():
    total, errors = 0, []
    for path in sys.argv[1:]:
        f = sys.stdin if path == "-" else open(path)
        try:
            docs = list(yaml.safe_load_all(f))
        except yaml.YAMLError as e:
            errors.append(f"{path}: not YAML: {e}")
            continue
        for n, doc in enumerate(docs):
            if doc is None:
                continue
            total += 1
            c = Checker(f"{path}#{n} {doc.get('kind', '?')}")
            cls = model_class(doc)
            if cls is None:
                c.err("", f"no model for apiVersion {doc.get('apiVersion')!r} kind "
                      f"{doc.get('kind')!r}")
            else:
                c.model(doc, cls, doc.get("kind", ""))
                semantic(c, doc)
            errors += c.errors
    for e in errors:
        print(e)
    if errors:
        sys.exit(1)
    print(f"ok {total} documents")


if __name__ == "__main__":
    main()
