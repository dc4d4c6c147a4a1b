#!/usr/bin/env python3
"""Reads Kubernetes protobuf answers for the e2e tests, by wire structure alone.

pbwire.py FILE QUERY...: FILE holds an answer ("k8s\\0" and a runtime.Unknown). Each
QUERY prints one line: "kind" and "apiVersion" from the envelope, or a path of field
numbers into the object's message, "2.1" (field 2, then its field 1), with "#" for the
number of times the last field occurs, e.g. "2#" is the items of a list. A length-
delimited value prints as text, a varint as a number; a missing field prints nothing.

pbwire.py --watch FILE QUERY...: FILE holds a protobuf watch (frames of a 4-byte big-
endian length and a WatchEvent {type, object: RawExtension {raw: an answer}}); one line
per frame: its type, then the QUERY answers for its object, space-separated.
"""
import sys


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """The (number, value) pairs of a message: bytes for length-delimited, int otherwise."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire in (1, 5):
            w = 8 if wire == 1 else 4
            v, i = int.from_bytes(b[i:i + w], "little"), i + w
        else:
            raise ValueError("wire type %d" % wire)
        out.append((num, v))
    return out


def first(msg, num):
    for n, v in fields(msg):
        if n == num:
            return v
    return None


def answer(data, queries):
    """The answers to queries about one enveloped object, one string each."""
    if data[:4] != b"k8s\x00":
        sys.exit("not a protobuf answer")
    unknown = data[4:]
    type_meta = first(unknown, 1) or b""
    raw = first(unknown, 2) or b""
    out = []
    for q in queries:
        if q in ("apiVersion", "kind"):
            out.append((first(type_meta, 1 if q == "apiVersion" else 2) or b"").decode())
            continue
        count = q.endswith("#")
        path = [int(p) for p in q.rstrip("#").split(".")]
        msg = raw
        for n in path[:-1]:
            msg = first(msg, n) if isinstance(msg, bytes) else None
            if msg is None:
                break
        if msg is None:
            out.append("")
        elif count:
            out.append(str(sum(1 for n, _ in fields(msg) if n == path[-1])))
        else:
            v = first(msg, path[-1])
            out.append("" if v is None else v.decode() if isinstance(v, bytes) else str(v))
    return out


def main():
    if sys.argv[1] == "--watch":
        data = open(sys.argv[2], "rb").read()
        i = 0
        while i + 4 <= len(data):
            n = int.from_bytes(data[i:i + 4], "big")
            event = data[i + 4:i + 4 + n]
            i += 4 + n
            obj = first(first(event, 2) or b"", 1) or b""
            print(" ".join([(first(event, 1) or b"").decode()] + answer(obj, sys.argv[3:])))
        return
    data = open(sys.argv[1], "rb").read()
    for line in answer(data, sys.argv[2:]):
        print(line)


main()
