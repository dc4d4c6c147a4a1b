#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from the golden
requests (../shared/testdata/golden/requests.jsonl), the golden responses and their
managedFields, the YAML decode table (tests/data/yaml/decode.jsonl), the field set table
(tests/data/smd/fieldsv1.jsonl), kube-apiserver's protobuf answers
(tests/unit/registry/protobuf/) and JSON_EDGES below, in each target's input format (see
tests/fuzz/fuzz_*.c).

Usage: tools/fuzz-seeds.py [GOLDEN_DIR]   (run from the repository root; replaces the
seeds it derives, keeps the regression seeds named crash-*)."""
import base64
import hashlib
import json
import os
import sys

GOLDEN = sys.argv[1] if len(sys.argv) > 1 else "../shared/testdata/golden"
OUT = "tests/fuzz/corpus"
PER_TARGET = 40

# The registry's order (kapi_registry_at): the type index of fuzz_create, fuzz_patch and
# fuzz_selectors.
TYPES = [("v1", "events"), ("v1", "namespaces"), ("events.k8s.io/v1", "events"),
         ("batch/v1", "cronjobs"), ("networking.k8s.io/v1alpha1", "clustercidrs"),
         ("apiextensions.k8s.io/v1", "customresourcedefinitions")]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
PATCH_FORMATS = {"application/json-patch+json": 0, "application/merge-patch+json": 1,
                 "application/strategic-merge-patch+json": 2}

# fuzz_json: texts at the edges of jansson's grammar, where kapi_json_parse's fast path must
# give up exactly when jansson refuses (numbers out of range, escapes, surrogates, UTF-8 that
# jansson refuses, a NUL in a key, a repeated key, trailing bytes).
JSON_EDGES = [
    b'[0,-0,1,-1,9223372036854775807,-9223372036854775808,9223372036854775808,123456789012345678]',
    b'[0.0,-0.0,1.5,1E+2,1e-2,1e308,1e309,4.9e-324,1e-400,2.2250738585072014e-308,0.1]',
    b'[01,-,1.,.5,1e,1e+]',
    b'"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac\\uD83D\\uDE00\\u0000"',
    b'"\\ud800\\u0041"',
    b'"\\udc00"',
    "\"caf\u00e9 \u20ac \U0001F600 \x7f\"".encode(),
    b'"\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe0\x80\xaf \xff"',
    b'{"a":1,"b":2,"a":3,"\\u0061":{"c":[true,false,null]}}',
    b'{"k:{\\"name\\":\\"main\\"}":{".":{},"f:image":{}},"f:metadata":{}}',
    b'{"a\\u0000b":1}',
    b'{"v":"a\\u0000b"}',
    b'[[[[[[[[[[[[[[[[{"a":[{"b":{}}]}]]]]]]]]]]]]]]]',
    b' \t\r\n true \n',
    b'{"a":1,}',
    b'[1,2] x',
]

seeds = {}


def add(target, data):
    if isinstance(data, str):
        data = data.encode()
    seeds.setdefault(target, {})[hashlib.sha1(data).hexdigest()[:16]] = data


def type_index(path):
    parts = [p for p in path.split("?")[0].split("/") if p]
    if len(parts) < 3:
        return None
    gv = parts[1] if parts[0] == "api" else "/".join(parts[1:3])
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        rest = rest[2:]
    return TYPES.index((gv, rest[0])) if rest and (gv, rest[0]) in TYPES else None


def body_bytes(r):
    b = r.get("body")
    if b is None:
        return b""
    return (b if isinstance(b, str) else json.dumps(b)).encode()


def query_values(path, key):
    q = path.split("?", 1)[1] if "?" in path else ""
    for pair in q.split("&"):
        k, _, v = pair.partition("=")
        if k == key:
            from urllib.parse import unquote_plus
            yield unquote_plus(v)


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def namespace_msg(name, labels):
    """A v1.Namespace message: metadata (name, labels) and spec.finalizers."""
    meta = field(1, name.encode()) + b"".join(
        field(11, field(1, k.encode()) + field(2, v.encode())) for k, v in labels.items())
    return field(1, meta) + field(2, field(1, b"kubernetes"))


def namespace_pb(name, labels):
    unknown = field(1, field(1, b"v1") + field(2, b"Namespace")) + field(2, namespace_msg(name, labels))
    return b"k8s\0" + unknown


def managed_fields(v):
    """Every managedFields[].fieldsV1 in a decoded JSON body."""
    if isinstance(v, list):
        for x in v:
            yield from managed_fields(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            if k == "managedFields" and isinstance(x, list):
                yield from (e["fieldsV1"] for e in x if isinstance(e, dict) and "fieldsV1" in e)
            else:
                yield from managed_fields(x)


def main():
    reqs = [json.loads(l) for l in open(os.path.join(GOLDEN, "requests.jsonl"))]
    created = {}
    for r in reqs:
        path, method, body = r["path"], r["method"], body_bytes(r)
        headers = r.get("headers") or {}
        ct = headers.get("Content-Type", "")
        t = type_index(path)
        add("fuzz_request", bytes([METHODS.index(method)]) + path.encode() + b"\n" +
            headers.get("Accept", "").encode() + b"\n" + ct.encode() + b"\n" + body)
        if method in ("POST", "PUT") and t is not None and body:
            fmt = 1 if ct.endswith("yaml") else 0
            add("fuzz_create", bytes([t | fmt << 3]) + body)
            try:
                obj = json.loads(body) if not fmt else None
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                created.setdefault(t, body)
                if t == 5 and isinstance(obj, dict):
                    for v in obj.get("spec", {}).get("versions", []):
                        s = v.get("schema", {}).get("openAPIV3Schema")
                        if s:
                            add("fuzz_schema", json.dumps(s).encode() + b"\0" +
                                b'{"apiVersion":"golden.example.com/v1","kind":"Widget",'
                                b'"metadata":{"name":"w"},"spec":{"size":3,"color":"red"}}')
        if ct.endswith("yaml") and body:
            add("fuzz_yaml", body)
        if method == "PATCH" and t is not None and ct in PATCH_FORMATS:
            doc = created.get(t, b"{}")
            add("fuzz_patch", bytes([PATCH_FORMATS[ct] | 4 | t << 3]) + doc + b"\0" + body)
        for sel in query_values(path, "labelSelector"):
            add("fuzz_selectors", bytes([t or 0]) + sel.encode() + b"\n")
        for sel in query_values(path, "fieldSelector"):
            add("fuzz_selectors", bytes([t or 0]) + b"\n" + sel.encode())
        for tok in query_values(path, "continue"):
            add("fuzz_continue", b"\1" + tok.encode())
    for line in open("tests/data/yaml/decode.jsonl"):
        if line.startswith("{"):
            add("fuzz_yaml", json.loads(line)["yaml"])
    for rv, start in ((5, "golden-a/cj-1\0"), (12, "a\0"), (-1, "/x/y\0"), (3, "../a")):
        add("fuzz_continue", b"\0" + json.dumps({"v": "meta.k8s.io/v1", "rv": rv,
                                                 "start": start}).encode())
    for line in open(os.path.join(GOLDEN, "responses.jsonl")):
        for fields in managed_fields(json.loads(line).get("body")):
            add("fuzz_fieldsv1", json.dumps(fields, separators=(",", ":")))
    for text in JSON_EDGES:
        add("fuzz_json", text)
    lines = open(os.path.join(GOLDEN, "responses.jsonl"), "rb").read().splitlines()
    for line in lines[::-(-len(lines) // (PER_TARGET - len(JSON_EDGES)))]:
        add("fuzz_json", line)
    for line in open("tests/data/smd/fieldsv1.jsonl"):
        if line.startswith("{"):
            row = json.loads(line)
            add("fuzz_fieldsv1", row["in"] if "in" in row else "[" + row["x"] + "," + row["y"] + "]")
    add("fuzz_protobuf", b"\0" + namespace_pb("demo", {"a": "b"}))
    for message in range(8):  # each message of the tables, read from a Namespace's bytes
        add("fuzz_protobuf", bytes([message]) + namespace_msg("demo", {"a": "b", "c": ""}))
    pb_dir = "tests/unit/registry/protobuf"
    for i, name in enumerate(sorted(f for f in os.listdir(pb_dir) if f.endswith(".pb"))):
        add("fuzz_protobuf", bytes([i]) + open(os.path.join(pb_dir, name), "rb").read())
    add("fuzz_create", bytes([1 | 2 << 3]) + namespace_pb("demo", {"a": "b"}))
    add("fuzz_create", bytes([1 | 2 << 3]) + namespace_pb("bad name", {}))
    for target, bucket in seeds.items():
        d = os.path.join(OUT, target)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if not f.startswith("crash-"):
                os.remove(os.path.join(d, f))
        items = list(bucket.items())
        items = items[::max(1, -(-len(items) // PER_TARGET))]  # spread over the whole script
        for name, data in items:
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(items)} seeds")


main()
