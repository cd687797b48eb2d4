#!/usr/bin/env python3
"""Generate apiserver/src/go_shape/table.rs from apiserver/src/protobuf/schema.json.

Upstream's API server keeps every object as a Go struct, so what it returns always carries the
fields Go's JSON encoder writes for zero values: a non-pointer struct field, `omitempty` or not,
is written as `{}` (a Service's `status: {loadBalancer: {}}`), a zero `metav1.Time` as `null`
(a template's `metadata: {creationTimestamp: null}`, a pod condition's `lastProbeTime: null`), a
zero Quantity as "0" and a zero IntOrString as 0, and an empty list or map under `omitempty`
is left out. The table lists, per message, only the fields that matter for that: the ones to
fill when absent, the lists and maps to drop when empty, and the message fields to walk into,
pruned to messages where something can be filled or dropped. It is static data (no parsing at run time, so it
costs no heap: the protobuf schema, parsed, takes several MiB).

Usage: python3 tools/gen-go-shape.py [--check]
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "apiserver/src/protobuf/schema.json")
OUT = os.path.join(ROOT, "apiserver/src/go_shape/table.rs")
# Go's non-pointer fields without omitempty, from k8s.io/api (made by tools/gen-go-pointers.py).
ZEROS = os.path.join(ROOT, "tools/go-zero-fields.json")

META = "k8s.io.apimachinery.pkg.apis.meta.v1."
# Special types: their JSON form is not an object of their fields.
ZERO_OF_SPECIAL = {
    META + "Time": "Null",
    META + "MicroTime": "Null",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "ZeroQuantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "ZeroInt",
}
OTHER_SPECIAL = {
    META + "Duration",
    META + "FieldsV1",
    META + "Verbs",
    "k8s.io.apimachinery.pkg.runtime.RawExtension",
    "k8s.io.apimachinery.pkg.runtime.Unknown",
}


def full_type(msg, ty):
    if ty.startswith("."):
        return msg.rsplit(".", 1)[0] + ty
    return ty


def is_special(ty):
    return (
        ty in ZERO_OF_SPECIAL
        or ty in OTHER_SPECIAL
        or ty.startswith("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON")
        or ty.endswith(".ExtraValue")
    )


ZERO_OF_KIND = {"time": "Null", "quantity": "ZeroQuantity", "intorstring": "ZeroInt",
                "string": "ZeroString", "number": "ZeroInt", "bool": "ZeroBool", "null": "Null"}


def build(schema, zeros):
    messages = schema["messages"]

    def fields_of(name):
        for _tag, json_name, ty, flags in messages[name]:
            yield json_name, full_type(name, ty), flags

    def walks(ty):
        return ty in messages and not is_special(ty)

    def fill_of(name, json_name, ty, flags):
        """What Go writes for the field when it is absent: "struct", a Fill name, or None."""
        if flags == "z":
            if ty in ZERO_OF_SPECIAL:
                return ZERO_OF_SPECIAL[ty]
            return "struct" if walks(ty) else None
        zero = zeros.get(name, {}).get(json_name)
        if zero is None or flags == "i":
            return None
        if zero == "struct":
            return "struct" if walks(ty) else None
        return ZERO_OF_KIND.get(zero)

    # A message matters when one of its fields is filled, or leads to a message that matters.
    matters = set()
    changed = True
    while changed:
        changed = False
        for name in messages:
            if name in matters or is_special(name):
                continue
            for json_name, ty, flags in fields_of(name):
                # An omitempty list or map matters too: Go leaves it out when empty.
                dropped = flags in ("r", "m")
                if fill_of(name, json_name, ty, flags) or dropped or (walks(ty) and ty in matters):
                    matters.add(name)
                    changed = True
                    break
    order = sorted(matters)
    index = {name: i for i, name in enumerate(order)}
    table = []
    for name in order:
        entries = []
        for json_name, ty, flags in fields_of(name):
            fill = fill_of(name, json_name, ty, flags)
            inner = index[ty] if walks(ty) and ty in matters else None
            if flags == "i":
                if inner is not None:
                    entries.append(("", f"Inline({inner})"))
            elif flags in ("r", "m"):
                walk = "List" if flags == "r" else "Map"
                null = "true" if fill == "Null" else "false"
                if inner is not None:
                    entries.append((json_name, f"{walk}({inner}, {null})"))
                elif fill == "Null":
                    entries.append((json_name, "Null"))
                else:
                    entries.append((json_name, "DropEmpty"))
            elif fill == "struct":
                entries.append((json_name, f"Struct({inner})" if inner is not None else "Struct(NONE)"))
            elif inner is not None:
                null = "true" if fill == "Null" else "false"
                entries.append((json_name, f"Optional({inner}, {null})"))
            elif fill:
                entries.append((json_name, fill))
        table.append((name, entries))
    kinds = []
    for api_version, ks in sorted(schema["kinds"].items()):
        for kind, message in sorted(ks.items()):
            if message in index and not kind.endswith("List"):
                kinds.append((api_version, kind, index[message]))
    return table, kinds


def render(table, kinds):
    out = [
        "//! Generated by tools/gen-go-shape.py from protobuf/schema.json: do not edit.",
        "",
        "use super::Fill::{self, *};",
        "use super::NONE;",
        "",
        "/// Per message: the fields Go writes when zero, and the message fields to walk into.",
        "pub(super) static MESSAGES: &[&[(&str, Fill)]] = &[",
    ]
    for name, entries in table:
        out.append(f"    // {name}")
        body = ", ".join(f'("{j}", {f})' for j, f in entries)
        out.append(f"    &[{body}],")
    out.append("];")
    out.append("")
    out.append("/// (apiVersion, kind, message), sorted.")
    out.append("pub(super) static KINDS: &[(&str, &str, u16)] = &[")
    for api_version, kind, i in kinds:
        out.append(f'    ("{api_version}", "{kind}", {i}),')
    out.append("];")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="fail when the file is out of date")
    args = ap.parse_args()
    with open(SCHEMA) as f:
        schema = json.load(f)
    with open(ZEROS) as f:
        zeros = json.load(f)
    text = render(*build(schema, zeros))
    if args.check:
        with open(OUT) as f:
            if f.read() != text:
                sys.exit(f"{OUT} is out of date: run tools/gen-go-shape.py")
        return
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
