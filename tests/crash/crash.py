#!/usr/bin/env python3
"""Crash consistency under load: kill -9 at random moments, restart on the same data dir.

Usage: tests/crash/crash.py --kapi build/kapi [--cycles 5] [--writers 4] [--seed N]

Each cycle starts kapi on one data dir (kept across cycles), checks what the previous cycle
left, then runs concurrent writers (creates, updates with the resourceVersion they expect,
deletes) of events.k8s.io/v1 Events and a watcher, and kills kapi with SIGKILL after a
random time while they run. Each writer owns its objects, so at a kill each object has at
most one write whose outcome is unknown. After every restart:

  - every acknowledged write is there: an object is as its last acknowledged write left it
    (same resourceVersion and content, or absent after a delete), or as the one write in
    flight at the kill would have left it (a later resourceVersion; absent for a delete);
  - revisions are monotonic: every revision handed out after a restart is above every
    revision seen before it, and each watch stream's revisions increase;
  - the watch resumes with no gap: a watch from the last resourceVersion the watcher saw
    before the kill (or, half the time, an earlier one it saw: a client that lagged behind)
    delivers every acknowledged write after it (the created or updated
    object at its resourceVersion, a DELETED event for a delete), and the live watch
    delivered every acknowledged write up to the last revision it saw.

Uses only the Python standard library. Ends with "N passed, N failed".
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

NS = "crash"
COLLECTION = f"/apis/events.k8s.io/v1/namespaces/{NS}/events"
NAMES_PER_WRITER = 25


class Failure(Exception):
    pass


def free_port():
    """A free port below the kernel's ephemeral range, which outgoing connections use."""
    while True:
        port = random.randrange(20000, 32000)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            pass
        finally:
            s.close()


def event_body(name, gen, rv=None):
    meta = {"name": name, "namespace": NS, "labels": {"gen": str(gen)}}
    if rv is not None:
        meta["resourceVersion"] = str(rv)
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta,
        "eventTime": "2024-05-01T12:00:00.000000Z", "reportingController": "kapi.dev/crash",
        "reportingInstance": "crash-1", "action": "Write", "reason": "Crash", "type": "Normal",
        "regarding": {"kind": "Pod", "namespace": NS, "name": "p"}, "note": "crash test",
    }


def gen_of(obj):
    return int(obj["metadata"]["labels"]["gen"])


def rv_of(obj):
    return int(obj["metadata"]["resourceVersion"])


class Kapi:
    """One kapi process on the test's data dir."""

    def __init__(self, binary, data):
        self.binary, self.data, self.proc, self.port = binary, data, None, None

    def start(self):
        self.port = free_port()
        log = open(self.data + ".log", "ab")
        self.proc = subprocess.Popen(
            [self.binary, "--data-dir", self.data, "--secure-port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failure(f"kapi exited with {self.proc.returncode} at start; see {self.data}.log")
            try:
                if self.request("GET", "/readyz", auth=False)[0] == 200:
                    return
            except (OSError, http.client.HTTPException, ssl.SSLError):
                pass
            time.sleep(0.05)
        raise Failure("kapi did not become ready in 30 s")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()

    def connect(self, timeout=30):
        ctx = ssl.create_default_context(cafile=os.path.join(self.data, "ca.crt"))
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx, timeout=timeout)

    def headers(self, auth=True):
        h = {"Accept": "application/json", "Content-Type": "application/json"}
        if auth:
            with open(os.path.join(self.data, "admin-token")) as f:
                h["Authorization"] = "Bearer " + f.read().strip()
        return h

    def request(self, method, path, body=None, conn=None, auth=True):
        own = conn is None
        conn = conn or self.connect()
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers=self.headers(auth))
            resp = conn.getresponse()
            data = resp.read()
            try:
                doc = json.loads(data) if data else None
            except ValueError:
                doc = data.decode(errors="replace")
            return resp.status, doc
        finally:
            if own:
                conn.close()


class Model:
    """What the test knows of each object: its acknowledged state and the write in flight."""

    def __init__(self, writers):
        self.lock = threading.Lock()
        self.objs = {}  # name -> {"rv": int, "gen": int} for present objects
        self.inflight = {}  # name -> ("create"|"update"|"delete", gen)
        self.acked = []  # (rv or None, name, op, prev_rv) of this cycle, in ack order
        self.acked_count = 0
        self.gen = 0
        self.names = [[f"e-{w}-{k:02d}" for k in range(NAMES_PER_WRITER)] for w in range(writers)]


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, why=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}{': ' + why if why else ''}", flush=True)
        return ok


class Writer(threading.Thread):
    """Writes its own objects until told to stop or kapi goes away."""

    def __init__(self, kapi, model, names, stop, checks, rnd):
        super().__init__(daemon=True)
        self.kapi, self.model, self.names, self.stop = kapi, model, names, stop
        self.checks, self.rnd, self.error = checks, rnd, None

    def run(self):
        conn = self.kapi.connect()
        try:
            while not self.stop.is_set():
                self.one(conn)
        except (OSError, http.client.HTTPException, ssl.SSLError):
            pass  # kapi was killed: the write in flight stays in flight
        except Failure as e:
            self.error = str(e)
        finally:
            conn.close()

    def one(self, conn):
        m = self.model
        name = self.rnd.choice(self.names)
        with m.lock:
            cur = m.objs.get(name)
            m.gen += 1
            gen = m.gen
            op = "create" if cur is None else ("update" if self.rnd.random() < 0.7 else "delete")
            m.inflight[name] = (op, gen)
        if op == "create":
            status, doc = self.kapi.request("POST", COLLECTION, event_body(name, gen), conn)
            want = 201
        elif op == "update":
            status, doc = self.kapi.request("PUT", f"{COLLECTION}/{name}",
                                            event_body(name, gen, cur["rv"]), conn)
            want = 200
        else:
            status, doc = self.kapi.request("DELETE", f"{COLLECTION}/{name}", None, conn)
            want = 200
        if status != want:
            raise Failure(f"{op} {name}: {status} {doc}")
        with m.lock:
            del m.inflight[name]
            if op == "delete":
                m.objs.pop(name)
                m.acked.append((None, name, op, cur["rv"]))
            else:
                m.objs[name] = {"rv": rv_of(doc), "gen": gen}
                m.acked.append((rv_of(doc), name, op, cur["rv"] if cur else 0))
            m.acked_count += 1


class Watcher(threading.Thread):
    """One watch of the collection from a resourceVersion, until the stream ends."""

    def __init__(self, kapi, from_rv):
        super().__init__(daemon=True)
        self.kapi, self.from_rv = kapi, from_rv
        self.cond = threading.Condition()
        self.events = []  # (type, name, rv)
        self.last_rv = from_rv
        self.gone = False
        self.error = None
        self.started = threading.Event()
        self.ended_at = None  # monotonic time the stream ended
        self.ended_by = "the end of the stream"

    def run(self):
        conn = self.kapi.connect(timeout=None)
        try:
            conn.request("GET", f"{COLLECTION}?watch=1&resourceVersion={self.from_rv}",
                         headers=self.kapi.headers())
            resp = conn.getresponse()
            self.started.set()
            if resp.status == 410:
                self.set_gone()
                return
            if resp.status != 200:
                self.error = f"watch answered {resp.status}: {resp.read()[:300]!r}"
                return
            while True:
                line = resp.readline()
                if not line:
                    return
                self.add(json.loads(line))
        except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as e:
            self.ended_by = repr(e)  # kapi killed mid-stream, or a defect if it was not
        finally:
            self.ended_at = time.monotonic()
            self.started.set()
            conn.close()
            with self.cond:
                self.cond.notify_all()

    def set_gone(self):
        with self.cond:
            self.gone = True
            self.cond.notify_all()

    def add(self, ev):
        obj = ev.get("object") or {}
        if ev.get("type") == "ERROR":
            if obj.get("code") == 410:
                self.ended_by = f"410: {obj.get('message')}"
                self.set_gone()
            else:
                self.error = f"watch ERROR event: {obj}"
            return
        rv = rv_of(obj)
        with self.cond:
            if rv <= self.last_rv:
                self.error = f"watch revisions not increasing: {rv} after {self.last_rv}"
            self.events.append((ev["type"], obj["metadata"]["name"], rv))
            self.last_rv = max(self.last_rv, rv)
            self.cond.notify_all()

    def missing(self, acked, after):
        """The acknowledged writes after revision `after` that this stream has not delivered."""
        with self.cond:
            seen_rv = {(n, rv) for _, n, rv in self.events}
            deleted = [(n, rv) for t, n, rv in self.events if t == "DELETED"]
        out = []
        for rv, name, op, prev_rv in acked:
            if op == "delete":
                if prev_rv >= after and not any(n == name and r > prev_rv for n, r in deleted):
                    out.append((op, name, f"after {prev_rv}"))
            elif rv > after and (name, rv) not in seen_rv:
                out.append((op, name, rv))
        return out

    def wait_for(self, acked, after, upto, timeout):
        """Waits until the stream has delivered what missing() asks and reached revision
        upto, or has ended; returns what is missing."""
        deadline = time.monotonic() + timeout
        while True:
            missing = self.missing(acked, after)
            with self.cond:
                if self.last_rv < upto:
                    missing.append(("revision", upto, f"stream at {self.last_rv}"))
            if (not missing or self.gone or self.error or not self.is_alive() or
                    time.monotonic() > deadline):
                return missing
            with self.cond:
                self.cond.wait(0.1)


def verify_state(kapi, model, checks, cycle):
    """After a restart: each object as its last acknowledged write, or its write in flight,
    left it. Returns how many acknowledged writes were lost. Resyncs the model."""
    lost = 0
    conn = kapi.connect()
    try:
        for names in model.names:
            for name in names:
                status, doc = kapi.request("GET", f"{COLLECTION}/{name}", None, conn)
                if status not in (200, 404):
                    raise Failure(f"get {name} after restart: {status} {doc}")
                actual = {"rv": rv_of(doc), "gen": gen_of(doc)} if status == 200 else None
                want = model.objs.get(name)
                op, gen = model.inflight.get(name, (None, None))
                as_acked = actual == want
                as_inflight = op is not None and (
                    (op == "delete" and actual is None) or
                    (op != "delete" and actual is not None and actual["gen"] == gen and
                     actual["rv"] > (want["rv"] if want else 0)))
                if not checks.check(f"cycle {cycle}: {name} as acknowledged", as_acked or as_inflight,
                                    f"acknowledged {want}, in flight {op} gen {gen}, found {actual}"):
                    lost += 1
                if actual is None:
                    model.objs.pop(name, None)
                else:
                    model.objs[name] = actual
        model.inflight.clear()
    finally:
        conn.close()
    return lost


def list_rv(kapi):
    status, doc = kapi.request("GET", f"{COLLECTION}?limit=1")
    if status != 200:
        raise Failure(f"list: {status} {doc}")
    return int(doc["metadata"]["resourceVersion"])


def run(args):
    rnd = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="kapi-crash-")
    data = os.path.join(work, "data")
    kapi = Kapi(os.path.abspath(args.kapi), data)
    model = Model(args.writers)
    checks = Checks()
    lost = 0
    max_seen = 0  # the highest revision seen before the current cycle's kill
    watch_from = None  # the last revision the watcher saw before the kill
    acked_before = []  # the previous cycle's acknowledged writes
    try:
        for cycle in range(1, args.cycles + 1):
            kapi.start()
            if cycle == 1:
                status, doc = kapi.request("POST", "/api/v1/namespaces",
                                           {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": NS}})
                if status != 201:
                    raise Failure(f"create namespace: {status} {doc}")
                watch_from = list_rv(kapi)
            else:
                lost += verify_state(kapi, model, checks, cycle)
            now = list_rv(kapi)
            checks.check(f"cycle {cycle}: revision after restart", now >= max_seen,
                         f"list at {now}, {max_seen} seen before the kill")
            watcher = Watcher(kapi, watch_from)
            watcher.start()
            watcher.started.wait(10)
            # Every write of this test is an Event of NS: the stream reaches the store's
            # revision (the writes in flight at the kill that were applied included).
            missing = watcher.wait_for(acked_before, watch_from, now, 10) if cycle > 1 else []
            why = (watcher.ended_by if watcher.gone else watcher.error or
                   (f"stream ended: {watcher.ended_by}" if not watcher.is_alive() else
                    f"missing {missing[:5]}"))
            checks.check(f"cycle {cycle}: watch from {watch_from} resumes",
                         watcher.is_alive() and not watcher.error and not missing, why)
            if watcher.gone:  # a new watch from the state verify_state read
                watcher = Watcher(kapi, now)
                watcher.start()
                watcher.started.wait(10)
            model.acked = []
            stop = threading.Event()
            writers = [Writer(kapi, model, model.names[w], stop, checks,
                              random.Random(rnd.random())) for w in range(args.writers)]
            for w in writers:
                w.start()
            time.sleep(rnd.uniform(0.05, args.max_run))
            killed_at = time.monotonic()
            kapi.kill()
            stop.set()
            for w in writers:
                w.join(30)
                if w.error:
                    raise Failure(w.error)
            watcher.join(30)
            first = min((rv for rv, *_ in model.acked if rv is not None), default=None)
            checks.check(f"cycle {cycle}: revisions above those before the restart",
                         first is None or first > max_seen, f"acknowledged {first} after {max_seen}")
            # The live watch saw every acknowledged write up to the last revision it saw.
            seen = watcher.last_rv
            live_gap = watcher.missing([a for a in model.acked if a[0] is None or a[0] <= seen],
                                       watcher.from_rv)
            live_gap = [g for g in live_gap if g[0] != "delete"]  # a delete's rv is not known
            checks.check(f"cycle {cycle}: live watch has no gap", not live_gap and not watcher.error,
                         watcher.error or f"missing {live_gap[:5]}")
            checks.check(f"cycle {cycle}: live watch lasts until the kill",
                         watcher.ended_at is not None and watcher.ended_at >= killed_at,
                         f"ended {killed_at - (watcher.ended_at or 0):.2f} s before: "
                         f"{watcher.ended_by}")
            max_seen = max([max_seen, seen, now] + [rv for rv, *_ in model.acked if rv is not None])
            # A client resumes from the last revision it saw: this watcher's last, or, half
            # the time, an earlier one (a client that lagged behind).
            with watcher.cond:
                earlier = [rv for _, _, rv in watcher.events]
            watch_from = seen if not earlier or rnd.random() < 0.5 else rnd.choice(earlier)
            acked_before = model.acked
            print(f"cycle {cycle}: {len(model.acked)} writes acknowledged, "
                  f"{len(model.inflight)} in flight at the kill, watch at {seen}", flush=True)
        kapi.start()
        lost += verify_state(kapi, model, checks, args.cycles + 1)
        kapi.stop()
    except Failure as e:
        checks.check("run", False, str(e))
    finally:
        kapi.kill()
    print(f"{args.cycles} kill -9 cycles, {model.acked_count} writes acknowledged, {lost} lost")
    if checks.failed == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"data dir and log kept in {work}")
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kapi", default="build/kapi")
    p.add_argument("--cycles", type=int, default=5)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--max-run", type=float, default=1.5, help="longest load before a kill, s")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    print(f"seed {args.seed}", flush=True)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
