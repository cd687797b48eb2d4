#!/usr/bin/env python3
"""Generate apiserver/src/protobuf/schema.json: the Kubernetes protobuf message schema.

The k1s protobuf codec (apiserver/src/protobuf/) is driven by data, not generated code. This
script builds that data from three sources, all read as plain text (stdlib only):

1. k8s-pb (prost-generated Rust structs of every Kubernetes API message, from the cargo
   registry): message names, field tags, wire types, repeated/map labels, field message types.
2. k8s-openapi (cargo registry): the exact JSON property name of every field (prost snake_cased
   the proto names, `podIP` -> `pod_ip`; k8s-openapi's deserializers list `"podIP" => Field::...`).
   Matched per struct by normalized name (lowercase, only [a-z0-9]).
3. Go sources of k8s.io/{api,apimachinery,apiextensions-apiserver,kube-aggregator}
   (`--go-src`): the upstream message names (prost renamed `HostIP` to `HostIp`), the JSON name
   from the `json:"..."` tag (cross-check, and the names of types k8s-openapi lacks, such as
   lists), embedded structs whose fields Go's JSON inlines (`Volume` + `VolumeSource`), and
   whether a field is a non-pointer `omitempty` one. Go's protobuf encoder always writes
   non-pointer fields, even when zero, while Go's JSON encoder drops zero `omitempty` ones;
   fields flagged `z` get the same treatment when k1s turns protobuf into JSON.

Usage:
  for r in api apimachinery apiextensions-apiserver kube-aggregator; do
    git clone --depth 1 https://github.com/kubernetes/$r /tmp/k8s-go/$r; done
  python3 tools/gen-proto-schema.py --go-src /tmp/k8s-go [--check]
(The committed file was made from the master branches of July 2026; field numbers and names
never change upstream, so any recent checkout gives the same file for k8s-pb's messages.)

Output format (one message per line, deterministic):
  {"kinds": {"<apiVersion>": {"<Kind>": "<message>"}},
   "messages": {"<full proto name>": [[tag, "jsonName", "type", "flags"], ...]}}
  type:  string | int32 | int64 | bool | bytes | double | <full message name> | .<Name> (a message
         in the same proto package); flags: r = repeated, m = map<string, type>, z = omit zero, i = inline (an
         embedded Go struct: its fields sit in the parent's JSON object; the JSON name is "").
"""

import argparse
import glob
import json
import os
import re
import sys

SCALARS = {"string", "int32", "int64", "bool", "bytes", "double"}
# k8s-pb top-level module -> nothing to skip; these packages are not served by k1s.
SKIP_PREFIXES = ("k8s.io.metrics.", "k8s.io.apimachinery.pkg.apis.testapigroup.")
# Kinds of the meta group that clients send with any apiVersion (registered in every group).
META_KINDS = [
    "APIGroup", "APIGroupList", "APIResourceList", "APIVersions", "CreateOptions", "DeleteOptions",
    "GetOptions", "ListOptions", "PartialObjectMetadata", "PartialObjectMetadataList",
    "PatchOptions", "Status", "UpdateOptions", "WatchEvent",
]
META_PKG = "k8s.io.apimachinery.pkg.apis.meta.v1"
# Served group versions whose k8s-pb package has no `impl Resource` to learn the apiVersion from.
EXTRA_GROUPS = {
    "k8s.io.api.apidiscovery.v2": "apidiscovery.k8s.io/v2",
    "k8s.io.api.apidiscovery.v2beta1": "apidiscovery.k8s.io/v2beta1",
}


def norm(name):
    return re.sub(r"[^a-z0-9]", "", name.lower())


def registry_dir(crate):
    pattern = os.path.expanduser(f"~/.cargo/registry/src/*/{crate}/src")
    found = sorted(glob.glob(pattern))
    if not found:
        sys.exit(f"cannot find {crate} in the cargo registry ({pattern}); run cargo fetch")
    return found[-1]


# ---------------------------------------------------------------- k8s-pb (prost) parsing

# A field: its attribute, name and type; rustfmt may wrap the type over several lines, so the
# type runs up to the `,` that ends the line before the next doc comment, attribute or the end.
PROST_ATTR = re.compile(r"#\[prost\((.*?)\)\]\s*pub (?:r#)?(\w+):\s*(.*?),\n(?=\s*(?:///|#\[|$))", re.S)
STRUCT = re.compile(r"\npub struct (\w+) \{(?:\}|\n(.*?)\n\})", re.S)
RESOURCE = re.compile(
    r'impl crate::Resource for (\w+) \{\s*const API_VERSION: &\'static str = "([^"]*)";'
    r'.*?const KIND: &\'static str = "([^"]*)";', re.S)
MAPS = ("::std::collections::BTreeMap<", "::prost::alloc::collections::BTreeMap<")
WRAPPERS = ("::core::option::Option<", "::prost::alloc::vec::Vec<", "::prost::alloc::boxed::Box<")


def rust_type_path(rust_ty, module):
    """The message a prost field type refers to, as (module path list, struct name)."""
    ty = rust_ty.strip()
    changed = True
    while changed:
        changed = False
        for w in WRAPPERS:
            if ty.startswith(w) and ty.endswith(">"):
                ty = ty[len(w):-1].strip()
                changed = True
        for w in MAPS:
            if ty.startswith(w) and ty.endswith(">"):
                ty = ty[len(w):-1].split(",", 1)[1].strip()
                changed = True
    parts = ty.split("::")
    mod = list(module)
    if parts[0] == "crate":
        mod, parts = [], parts[1:]
    while parts and parts[0] == "super":
        mod = mod[:-1]
        parts = parts[1:]
    return mod + parts[:-1], parts[-1]


def parse_prost(src):
    """{(pkg, struct): [field dict]}, {(pkg, struct): (apiVersion, kind)}."""
    messages, resources = {}, {}
    for path in sorted(glob.glob(os.path.join(src, "**", "*.rs"), recursive=True)):
        rel = os.path.relpath(os.path.dirname(path), src)
        if rel == ".":
            continue
        module = rel.split(os.sep)
        pkg = "k8s.io." + ".".join(module)
        text = open(path, encoding="utf-8").read()
        for m in STRUCT.finditer(text):
            fields = []
            body = (m.group(2) or "") + "\n"
            found = list(PROST_ATTR.finditer(body))
            if len(found) != body.count("#[prost("):
                sys.exit(f"{pkg}.{m.group(1)}: could not parse every field")
            for a in found:
                attr, name = a.group(1), a.group(2)
                rust_ty = " ".join(a.group(3).split()).replace("< ", "<").replace(" >", ">").replace(",>", ">")
                tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
                f = {"tag": tag, "rust": name}
                mm = re.match(r'(?:btree_map|map|hash_map) = "(\w+), (\w+)"', attr)
                if mm:
                    if mm.group(1) != "string":
                        sys.exit(f"{pkg}.{m.group(1)}.{name}: map key {mm.group(1)} unsupported")
                    f["label"] = "m"
                    f["kind"] = mm.group(2)
                else:
                    f["kind"] = attr.split(",")[0].split("=")[0].strip()
                    f["label"] = "r" if ", repeated" in attr else ""
                if f["kind"] not in SCALARS | {"message"}:
                    sys.exit(f"{pkg}.{m.group(1)}.{name}: unsupported prost kind {attr}")
                if f["kind"] == "message":
                    f["ref"] = rust_type_path(rust_ty, module)
                fields.append(f)
            messages[(pkg, m.group(1))] = fields
        for r in RESOURCE.finditer(text):
            resources[(pkg, r.group(1))] = (r.group(2), r.group(3))
    return messages, resources


# ---------------------------------------------------------------- k8s-openapi parsing

OPENAPI_KEY = re.compile(r'"([^"]+)" => Field::Key_(\w+),')


def parse_openapi(src):
    """{(pkg, normalized struct): {normalized json name: json name}} and struct names.

    Versions are read newest first; a struct keeps the names of every version (fields are
    only ever added), so messages of older API versions still find theirs."""
    names, structs = {}, {}
    versions = sorted((d for d in os.listdir(src) if re.fullmatch(r"v\d+_\d+", d)),
                      key=lambda v: [int(x) for x in v[1:].split("_")], reverse=True)
    for ver in versions:
        root = os.path.join(src, ver)
        for path in sorted(glob.glob(os.path.join(root, "**", "*.rs"), recursive=True)):
            rel = os.path.relpath(os.path.dirname(path), root)
            if rel == ".":
                continue
            pkg = "k8s.io." + ".".join(rel.split(os.sep))
            text = open(path, encoding="utf-8").read()
            sm = re.search(r"\npub struct (\w+)", text)
            if not sm:
                continue
            key = (pkg, norm(sm.group(1)))
            structs.setdefault(key, sm.group(1))
            entry = names.setdefault(key, {})
            for k in OPENAPI_KEY.finditer(text):
                entry.setdefault(norm(k.group(1)), k.group(1))
    return names, structs


# ---------------------------------------------------------------- Go sources parsing

GO_REPOS = {
    "api": "k8s.io.api",
    "apimachinery": "k8s.io.apimachinery",
    "apiextensions-apiserver": "k8s.io.apiextensions_apiserver",
    "kube-aggregator": "k8s.io.kube_aggregator",
}
# `Name Type `tags`` or an embedded `Type `tags`` (then the name is the type's last segment).
GO_FIELD = re.compile(r"^\s*(\*?[\w.]+)(?:\s+([^`]+?))?\s+`([^`]*)`")


def parse_go(root):
    """{(pkg, Go type name): {tag: {json, omitempty, pointer}}} from types*.go files."""
    out = {}
    for repo, prefix in GO_REPOS.items():
        base = os.path.join(root, repo)
        if not os.path.isdir(base):
            sys.exit(f"--go-src {root}: missing {repo}/ (need {', '.join(GO_REPOS)})")
        for path in sorted(glob.glob(os.path.join(base, "**", "*.go"), recursive=True)):
            if path.endswith("_test.go") or "/vendor/" in path or "/testdata/" in path:
                continue
            rel = os.path.relpath(os.path.dirname(path), base)
            pkg = prefix + "." + ".".join(rel.split(os.sep))
            lines = open(path, encoding="utf-8").read().split("\n")
            i = 0
            while i < len(lines):
                m = re.match(r"^type (\w+) struct \{\s*$", lines[i])
                i += 1
                if not m:
                    continue
                fields, depth = {}, 1
                while i < len(lines) and depth > 0:
                    line = lines[i]
                    i += 1
                    if line.lstrip().startswith("//"):
                        continue
                    if depth == 1:
                        fm = GO_FIELD.match(line)
                        if fm and 'protobuf:"' in fm.group(3):
                            tags = dict(re.findall(r'(\w+):"([^"]*)"', fm.group(3)))
                            pb = tags["protobuf"].split(",")
                            if len(pb) < 2 or not pb[1].isdigit():
                                continue
                            js = tags.get("json", "").split(",")
                            embedded = fm.group(2) is None
                            gty = fm.group(1) if embedded else fm.group(2).strip()
                            fields[int(pb[1])] = {
                                # An embedded struct without a JSON name has its fields inlined.
                                "inline": embedded and not js[0],
                                "json": js[0] or fm.group(1).lstrip("*").split(".")[-1],
                                "omitempty": "omitempty" in js[1:],
                                "pointer": gty.startswith("*"),
                            }
                    depth += line.count("{") - line.count("}")
                if fields:
                    out[(pkg, m.group(1))] = fields
    return out


# ---------------------------------------------------------------- assembly

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "apiserver", "src", "protobuf",
                                                  "schema.json"))
    ap.add_argument("--go-src", required=True,
                    help="dir with checkouts of k8s.io/" + ", k8s.io/".join(GO_REPOS))
    ap.add_argument("--check", action="store_true", help="fail if --out would change")
    args = ap.parse_args()

    prost, resources = parse_prost(registry_dir("k8s-pb-0.9.0"))
    openapi, openapi_structs = parse_openapi(registry_dir("k8s-openapi-0.29.0"))
    go = parse_go(args.go_src)
    go_by_norm = {(p, norm(n)): n for (p, n) in go}

    prost = {k: v for k, v in prost.items() if not k[0].startswith(SKIP_PREFIXES)}

    # Upstream message names: Go type name, else k8s-openapi struct name, else prost's.
    upstream = {}
    for (pkg, struct) in prost:
        key = (pkg, norm(struct))
        upstream[(pkg, struct)] = go_by_norm.get(key) or openapi_structs.get(key) or struct
    full = {k: f"{k[0]}.{n}" for k, n in upstream.items()}
    if len(set(full.values())) != len(full):
        sys.exit("two prost structs map to one upstream message name")

    stats = {"fields": 0, "openapi": 0, "go": 0, "fallback": 0, "mismatch": 0, "z": 0, "inline": 0}
    messages = {}
    for (pkg, struct), fields in sorted(prost.items()):
        name = upstream[(pkg, struct)]
        json_names = openapi.get((pkg, norm(name)), {})
        go_fields = go.get((pkg, name), {})
        out = []
        for f in sorted(fields, key=lambda f: f["tag"]):
            stats["fields"] += 1
            gf = go_fields.get(f["tag"])
            jn = json_names.get(norm(f["rust"]))
            if jn:
                stats["openapi"] += 1
                if gf and gf["json"] != jn:
                    stats["mismatch"] += 1
                    print(f"note: {pkg}.{name} tag {f['tag']}: k8s-openapi {jn!r}, Go {gf['json']!r}",
                          file=sys.stderr)
            elif gf:
                jn = gf["json"]
                stats["go"] += 1
            else:
                parts = f["rust"].split("_")
                jn = parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
                stats["fallback"] += 1
            if f["kind"] == "message":
                mod, ref = f["ref"]
                rpkg = "k8s.io." + ".".join(mod)
                if (rpkg, ref) not in upstream:
                    sys.exit(f"{pkg}.{name}.{f['rust']}: unknown message {rpkg}.{ref}")
                rname = upstream[(rpkg, ref)]
                ty = "." + rname if rpkg == pkg else f"{rpkg}.{rname}"
            else:
                ty = f["kind"]
            flags = f["label"]
            # (meta.v1.Duration embeds a time.Duration; it is a special type, not inlined.)
            if gf and gf["inline"] and f["kind"] == "message" and not flags:
                flags += "i"
                jn = ""
                stats["inline"] += 1
            if gf and gf["omitempty"] and not gf["pointer"] and not flags:
                flags += "z"
                stats["z"] += 1
            out.append([f["tag"], jn, ty, flags])
        messages[f"{pkg}.{name}"] = out

    kinds = {}

    def add_kind(api_version, kind, message):
        if message in messages:
            kinds.setdefault(api_version, {})[kind] = message

    group_of_pkg = dict(EXTRA_GROUPS)
    for (pkg, struct), (api_version, kind) in sorted(resources.items()):
        if (pkg, struct) in prost:
            add_kind(api_version, kind, full[(pkg, struct)])
            group_of_pkg[pkg] = api_version
    # Every message with ObjectMeta/ListMeta metadata in a served package is a kind (this adds
    # the lists and subresource kinds such as Scale, Eviction, TokenRequest).
    for (pkg, struct), fields in sorted(prost.items()):
        api_version = group_of_pkg.get(pkg)
        meta = [f for f in fields if f["tag"] == 1 and f["kind"] == "message"]
        if api_version and meta and meta[0]["ref"][1] in ("ObjectMeta", "ListMeta"):
            add_kind(api_version, upstream[(pkg, struct)], full[(pkg, struct)])
    for kind in META_KINDS:
        add_kind("meta.k8s.io/v1", kind, f"{META_PKG}.{kind}")

    lines = ["{", '"kinds": {']
    av = sorted(kinds)
    for i, a in enumerate(av):
        body = json.dumps(kinds[a], sort_keys=True, separators=(",", ":"))
        lines.append(f"{json.dumps(a)}: {body}" + ("," if i + 1 < len(av) else ""))
    lines.append("},")
    lines.append('"messages": {')
    names = sorted(messages)
    for i, n in enumerate(names):
        body = json.dumps(messages[n], separators=(",", ":"))
        lines.append(f"{json.dumps(n)}: {body}" + ("," if i + 1 < len(names) else ""))
    lines.append("}")
    lines.append("}")
    text = "\n".join(lines) + "\n"

    out_path = os.path.normpath(args.out)
    if args.check:
        old = open(out_path, encoding="utf-8").read() if os.path.exists(out_path) else ""
        if old != text:
            sys.exit(f"{out_path} is out of date; run {sys.argv[0]}")
        return
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {out_path}: {len(messages)} messages, {sum(len(k) for k in kinds.values())} "
          f"kinds, {len(text)} bytes; fields {stats}", file=sys.stderr)


if __name__ == "__main__":
    main()
