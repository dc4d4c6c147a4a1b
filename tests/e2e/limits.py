#!/usr/bin/env python3
"""Load for the memory limits: non-reading watchers, a stream of Events, concurrent lists.

    limits.py URL DATA_DIR PID watchers N EVENTS SIZE [GROUP_PATH]
                                                       N watchers that never read (4 KB
                                                       receive buffer) while EVENTS Events of
                                                       SIZE bytes are created; prints the RSS
                                                       (MB) idle, at its peak while they are
                                                       connected, and after they close; one
                                                       more watcher reads only afterwards: how
                                                       its stream ended (GROUP_PATH: the Events'
                                                       view, /api/v1 or /apis/events.k8s.io/v1)
    limits.py URL DATA_DIR PID fill EVENTS SIZE        creates EVENTS Events of SIZE bytes
    limits.py URL DATA_DIR PID lists N [ACCEPT]        N concurrent full lists of the Events;
                                                       prints the peak RSS (MB), the seconds and
                                                       the bytes of one answer

Events go to the namespace "limits". RSS is kapi's VmRSS from /proc/PID/status; the peak is
VmHWM, reset through /proc/PID/clear_refs before each phase.
"""
import http.client
import json
import socket
import ssl
import sys
import threading
import time

NS = "limits"


def rss_mb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(field + " not found")


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


class Api:
    def __init__(self, url, data):
        self.host, port = url.replace("https://", "").split(":")
        self.port = int(port)
        self.token = open(f"{data}/admin-token").read().strip()
        self.ctx = ssl.create_default_context(cafile=f"{data}/ca.crt")

    def conn(self):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)

    def request(self, c, method, path, body=None, accept="application/json"):
        headers = {"Authorization": "Bearer " + self.token, "Accept": accept}
        if body is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read()


def event(i, size):
    ev = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"ev-{i:06d}", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": f"pod-{i}", "namespace": NS},
        "reason": "Limits",
        "message": "",
        "type": "Normal",
    }
    ev["message"] = "x" * max(0, size - len(json.dumps(ev)) - 200)
    return ev


def ensure_namespace(api):
    c = api.conn()
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    status, _ = api.request(c, "POST", "/api/v1/namespaces", body)
    assert status in (201, 409), status
    c.close()


def fill(api, start, count, size, threads=8):
    """Creates Events start .. start+count-1 over threads connections."""
    errors = []

    def work(k):
        c = api.conn()
        for i in range(start + k, start + count, threads):
            status, body = api.request(c, "POST", f"/api/v1/namespaces/{NS}/events", event(i, size))
            if status != 201:
                errors.append((status, body[:200]))
        c.close()

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} creates failed, first: {errors[0]}")


def open_watcher(api, group="/api/v1"):
    """A watch of the namespace's Events on a socket with a 4 KB receive buffer, never read."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((api.host, api.port))
    t = api.ctx.wrap_socket(s, server_hostname=api.host)
    t.sendall((f"GET {group}/namespaces/{NS}/events?watch=1 HTTP/1.1\r\nHost: x\r\n"
               f"Authorization: Bearer {api.token}\r\n\r\n").encode())
    return t


def read_late(w, timeout):
    """Reads a watcher that stopped until its connection ends: (added events, how it ended)."""
    w.settimeout(timeout)
    raw = bytearray()
    try:
        while True:
            b = w.recv(65536)
            if not b:
                break
            raw += b
    except (socket.timeout, TimeoutError):
        return raw.count(b'"type":"ADDED"'), "still open"
    except (ssl.SSLError, OSError) as e:
        return raw.count(b'"type":"ADDED"'), "error " + str(e)
    if b'"type":"ERROR"' in raw:
        return raw.count(b'"type":"ADDED"'), "ERROR event"
    clean = raw.endswith(b"\r\n0\r\n\r\n")
    return raw.count(b'"type":"ADDED"'), "clean end" if clean else "cut"


def cmd_watchers(api, pid, n, events, size, group):
    ensure_namespace(api)
    time.sleep(0.5)
    idle = rss_mb(pid)
    late = open_watcher(api, group)
    watchers = [open_watcher(api, group) for _ in range(n)]
    time.sleep(0.5)
    reset_peak(pid)
    t0 = time.time()
    fill(api, 0, events, size)
    fill_s = time.time() - t0
    time.sleep(1.0)
    connected = rss_mb(pid)
    peak = rss_mb(pid, "VmHWM")
    late_events, late_end = read_late(late, 15)
    late.close()
    for w in watchers:
        w.close()
    time.sleep(2.0)
    after = rss_mb(pid)
    print(json.dumps({"watchers": n, "events": events, "size": size, "idle_mb": round(idle, 1),
                      "peak_mb": round(peak, 1), "connected_mb": round(connected, 1),
                      "after_close_mb": round(after, 1), "create_s": round(fill_s, 2),
                      "late_reader_events": late_events, "late_reader_end": late_end}))


def cmd_fill(api, pid, events, size):
    ensure_namespace(api)
    t0 = time.time()
    fill(api, 0, events, size)
    print(json.dumps({"events": events, "size": size, "create_s": round(time.time() - t0, 2),
                      "rss_mb": round(rss_mb(pid), 1)}))


def cmd_lists(api, pid, n, accept):
    sizes, errors, times = [], [], []

    def work():
        c = api.conn()
        t0 = time.time()
        status, body = api.request(c, "GET", f"/api/v1/namespaces/{NS}/events", accept=accept)
        times.append(time.time() - t0)
        if status != 200:
            errors.append(status)
        sizes.append(len(body))
        c.close()

    idle = rss_mb(pid)
    reset_peak(pid)
    ts = [threading.Thread(target=work) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    peak = rss_mb(pid, "VmHWM")
    if errors:
        raise RuntimeError(f"lists failed: {errors}")
    print(json.dumps({"lists": n, "accept": accept, "bytes": sizes[0], "idle_mb": round(idle, 1),
                      "peak_mb": round(peak, 1), "max_s": round(max(times), 2)}))


def main():
    url, data, pid, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    args = sys.argv[5:]
    api = Api(url, data)
    if cmd == "watchers":
        cmd_watchers(api, pid, int(args[0]), int(args[1]), int(args[2]),
                     args[3] if len(args) > 3 else "/api/v1")
    elif cmd == "fill":
        cmd_fill(api, pid, int(args[0]), int(args[1]))
    elif cmd == "lists":
        cmd_lists(api, pid, int(args[0]), args[1] if len(args) > 1 else "application/json")
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
