#!/usr/bin/env python3
"""Generate apiserver/src/apply/pointer_fields.rs: the optional pointer-to-struct fields of the
built-in API types (k8s.io/api, meta/v1, apiextensions/v1, apiregistration/v1), as OpenAPI
definition name and JSON field name; and tools/go-zero-fields.json, their fields without
`omitempty` (read by gen-go-shape.py).

Server-side apply compares a create with the zero object of the kind's Go type: the non-pointer
structs in it exist, so a create does not "add" them, while an `omitempty` pointer is nil there,
so a create that sets one adds it as a whole (its `.` entry in managedFields, e.g. a
Deployment's `f:strategy: {f:rollingUpdate: {.: {}, ...}}`). The OpenAPI schema does not say
which struct fields are pointers; Go does.

Usage:
  for m in api apimachinery apiextensions-apiserver kube-aggregator; do
    git clone -q https://github.com/kubernetes/$m /tmp/repo-$m && mkdir -p /tmp/go-src/$m
    git -C /tmp/repo-$m archive v0.33.9 | tar -x -C /tmp/go-src/$m
  done
  python3 tools/gen-go-pointers.py --go-src /tmp/go-src
(The committed files were made from the v0.33.9 tags, the API of Kubernetes 1.33.)
"""

import argparse
import glob
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "apiserver/src/apply/pointer_fields.rs")
ZEROS = os.path.join(ROOT, "tools/go-zero-fields.json")
STRUCT = re.compile(r"^type (\w+) struct \{\s*$")
NAMED = re.compile(r"^type (\w+) (\[\][\w.]+|map\[[\w.]+\][\w.*]+|[\w.]+)\s*(//.*)?$")
FIELD = re.compile(r"^\s*(\w+)\s+([^\s`]+)\s+`([^`]*)`")
EMBED = re.compile(r'^\s*(\w+)\s+`[^`]*json:",inline"')
# Types whose JSON form is not an object of their fields, and what Go writes for their zero.
SPECIAL = {"Time": "time", "MicroTime": "time", "Quantity": "quantity",
           "IntOrString": "intorstring", "Duration": None, "RawExtension": None}
# Struct types of k8s.io/apimachinery that k8s.io/api uses.
META_STRUCTS = {"LabelSelector", "ObjectMeta", "ListMeta", "Status"}
BASIC = {"string": "string", "bool": "bool", "byte": "number", "UID": "string"}
# (module directory, the packages read in it, OpenAPI prefix, protobuf prefix); a package's
# definitions are the prefix, its path with dots, and the type name.
MODULES = [
    ("api", "", "io.k8s.api.", "k8s.io.api."),
    ("apimachinery", "pkg/apis/meta/v1", "io.k8s.apimachinery.", "k8s.io.apimachinery."),
    ("apiextensions-apiserver", "pkg/apis/apiextensions/v1",
     "io.k8s.apiextensions-apiserver.", "k8s.io.apiextensions_apiserver."),
    ("kube-aggregator", "pkg/apis/apiregistration/v1",
     "io.k8s.kube-aggregator.", "k8s.io.kube_aggregator."),
]


def parse(src, packages):
    """Every struct field with a JSON name: (message, field, Go type, omitempty), the struct
    names, and the named non-struct types; an embedded struct's fields count for the struct
    that inlines it (a Volume's VolumeSource)."""
    fields, structs, named, embeds = [], set(META_STRUCTS), {}, []
    for path in sorted(glob.glob(os.path.join(src, packages, "**", "*.go"), recursive=True)):
        if path.endswith("_test.go") or "/testdata/" in path:
            continue
        if packages and os.path.dirname(path) != os.path.join(src, packages):
            continue
        pkg = os.path.relpath(os.path.dirname(path), src).replace(os.sep, ".")
        current, depth = None, 0
        for line in open(path, encoding="utf-8"):
            if depth == 0:
                m = STRUCT.match(line)
                if m:
                    current, depth = m.group(1), 1
                    structs.add(current)
                    continue
                n = NAMED.match(line)
                if n:
                    named[n.group(1)] = n.group(2)
            if current is None:
                continue
            if depth == 1 and not line.lstrip().startswith("//"):
                e = EMBED.match(line)
                if e:
                    embeds.append((f"{pkg}.{current}", f"{pkg}.{e.group(1)}"))
                f = FIELD.match(line)
                if f:
                    tags = dict(re.findall(r'(\w+):"([^"]*)"', f.group(3)))
                    js = tags.get("json", "").split(",")
                    if js[0] and js[0] != "-":
                        fields.append((f"{pkg}.{current}", js[0], f.group(2), "omitempty" in js[1:]))
            depth += line.count("{") - line.count("}")
            if depth <= 0:
                current, depth = None, 0
    for _ in range(4):  # embeds of embeds
        for outer, inner in embeds:
            have = {(d, j) for d, j, _, _ in fields}
            fields += [(outer, j, t, o) for d, j, t, o in fields
                       if d == inner and (outer, j) not in have]
    return fields, structs, named


def zero_kind(ty, structs, named, depth=0):
    """What Go's JSON encoder writes for the zero value of a non-pointer field of type `ty`."""
    if depth > 8:
        return None
    if ty.startswith("*"):
        return "null"
    if ty.startswith("[]") or ty.startswith("map["):
        return "null"
    name = ty.split(".")[-1]
    if name in SPECIAL:
        return SPECIAL[name]
    if name in BASIC:
        return BASIC[name]
    if re.fullmatch(r"u?int(8|16|32|64)?|float(32|64)", name):
        return "number"
    if name in structs:
        return "struct"
    if name in named:
        return zero_kind(named[name], structs, named, depth + 1)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go-src", required=True,
                    help="a directory holding the source trees of " + ", ".join(m[0] for m in MODULES))
    args = ap.parse_args()
    parsed = [(parse(os.path.join(args.go_src, m), pkgs), api, proto)
              for m, pkgs, api, proto in MODULES]
    structs = set().union(*(p[0][1] for p in parsed))
    named = {k: v for p in parsed for k, v in p[0][2].items()}
    rows = sorted({
        (f"{api}{d}", j) for (fields, _, _), api, _ in parsed for d, j, t, omit in fields
        if omit and t.startswith("*") and t[1:].split(".")[-1] in structs
        and t[1:].split(".")[-1] not in SPECIAL
    })
    out = [
        "//! Generated by tools/gen-go-pointers.py from the Kubernetes 1.33 API types: do not edit.",
        "",
        "/// (OpenAPI definition, JSON field) of every optional pointer-to-struct field, sorted.",
        "static POINTER_STRUCT_FIELDS: &[(&str, &str)] = &[",
    ]
    out += [f'    ("{d}", "{f}"),' for d, f in rows]
    out.append("];")
    out += [
        "",
        "/// Whether `field` of the definition `definition` is an optional pointer to a struct.",
        "pub(super) fn is_pointer(definition: Option<&str>, field: &str) -> bool {",
        "    definition.is_some_and(|d| {",
        "        POINTER_STRUCT_FIELDS",
        "            .binary_search_by(|(def, f)| (*def, *f).cmp(&(d, field)))",
        "            .is_ok()",
        "    })",
        "}",
    ]
    with open(OUT, "w") as fh:
        fh.write("\n".join(out) + "\n")
    # Non-pointer fields without omitempty: Go writes their zero values (read by gen-go-shape.py).
    zeros = {}
    for (fields, _, _), _, proto in parsed:
        for d, j, t, omit in fields:
            kind = None if omit else zero_kind(t, structs, named)
            if kind:
                zeros.setdefault(f"{proto}{d}", {})[j] = kind
    with open(ZEROS, "w") as fh:
        json.dump(zeros, fh, indent=0, sort_keys=True)
        fh.write("\n")
    print(f"{len(rows)} pointer fields, {sum(map(len, zeros.values()))} zero-valued fields")


if __name__ == "__main__":
    main()
