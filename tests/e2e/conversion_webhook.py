#!/usr/bin/env python3
"""A CRD conversion webhook for the e2e tests: HTTPS on 127.0.0.1, standard library only.

usage: conversion_webhook.py PORT CERT KEY DIR

Widgets of example.com: v1 has spec.size (a string of digits), v2 spec.length (an
integer). Each request is appended to DIR/requests.jsonl (path and body). How it answers
is read from DIR/mode on each request: "ok" converts; "fail" answers result Failure with
the message "no converting today"; "rename" converts but changes metadata.name; "label"
converts and adds the label converted-by=webhook.
"""
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, CERT, KEY, DIR = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
LOCK = threading.Lock()


def mode():
    try:
        with open(os.path.join(DIR, "mode")) as f:
            return f.read().strip() or "ok"
    except FileNotFoundError:
        return "ok"


def convert(obj, desired, m):
    out = json.loads(json.dumps(obj))
    spec = out.setdefault("spec", {})
    if desired.endswith("/v2") and "size" in spec:
        spec["length"] = int(spec.pop("size"))
    elif desired.endswith("/v1") and "length" in spec:
        spec["size"] = str(spec.pop("length"))
    out["apiVersion"] = desired
    if m == "rename":
        out["metadata"]["name"] += "-renamed"
    elif m == "label":
        out["metadata"].setdefault("labels", {})["converted-by"] = "webhook"
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        review = json.loads(raw)
        with LOCK, open(os.path.join(DIR, "requests.jsonl"), "a") as f:
            f.write(json.dumps({"path": self.path, "body": review}) + "\n")
        m = mode()
        req = review["request"]
        resp = {"uid": req["uid"]}
        if m == "fail":
            resp["result"] = {"status": "Failure", "message": "no converting today"}
        else:
            resp["result"] = {"status": "Success"}
            resp["convertedObjects"] = [
                convert(o, req["desiredAPIVersion"], m) for o in req["objects"]
            ]
        body = json.dumps({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
