#!/usr/bin/python3
"""An informer against kapi with a real client library (Debian's python3-kubernetes).

The informer lists CronJobs, keeps a copy by name and watches from the list's
resourceVersion, re-listing when the server answers 410. A writer thread meanwhile makes
1,000 random creates, PUT updates and deletes over a pool of 50 names. In the middle the
informer is made to reconnect (close, watch again from its last resourceVersion: no
410), and to fall behind: it stops watching for longer than kapi's history window
(--watch-history 2) while the writes go on, then resumes from its old resourceVersion,
which must answer 410 and lead to a re-list. At the end the informer's copy must be the
server's list exactly.

Usage: informer.py KUBECONFIG [WRITER_KUBECONFIG]. The writer writes through the second
kubeconfig when given (another kapi instance on the same etcd). Prints one PASS or FAIL
line per check.
"""
import json
import random
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NAMESPACE = "informer"
POOL = 50
WRITES = 1000
RATE = 120  # writes per second
HISTORY_S = 2  # kapi's --watch-history
RECONNECT_AT = 150  # writes done when the informer reconnects
PAUSE_AT = 350  # writes done when the informer stops watching for a while
WATCH_TIMEOUT_S = 5
CATCH_UP_S = 20

failures = 0


def check(name, ok, why=""):
    global failures
    if ok:
        print("PASS " + name, flush=True)
    else:
        failures += 1
        print("FAIL " + name + (": " + why if why else ""), flush=True)


def cronjob(name, gen, rv=None):
    meta = {"name": name, "labels": {"gen": str(gen)}}
    if rv:
        meta["resourceVersion"] = rv
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta,
        "spec": {
            "suspend": True,
            "schedule": "0 3 29 2 *",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "main", "image": "busybox"}],
            }}}},
        },
    }


class Writer(threading.Thread):
    """Random writes at RATE per second; keeps what it wrote last for each name."""

    def __init__(self, api):
        super().__init__(daemon=True)
        self.api = api
        self.objs = {}
        self.done = 0
        self.ops = {"create": 0, "update": 0, "delete": 0}
        self.errors = []

    def write(self, rnd, i):
        name = "cj-%02d" % rnd.randrange(POOL)
        if name not in self.objs:
            resp = self.api.create_namespaced_cron_job(
                NAMESPACE, cronjob(name, i), _preload_content=False)
            self.objs[name] = json.loads(resp.data)
            self.ops["create"] += 1
        elif rnd.random() < 0.3:
            self.api.delete_namespaced_cron_job(name, NAMESPACE, _preload_content=False)
            del self.objs[name]
            self.ops["delete"] += 1
        else:
            rv = self.objs[name]["metadata"]["resourceVersion"]
            resp = self.api.replace_namespaced_cron_job(
                name, NAMESPACE, cronjob(name, i, rv), _preload_content=False)
            self.objs[name] = json.loads(resp.data)
            self.ops["update"] += 1

    def run(self):
        rnd = random.Random(4)
        start = time.monotonic()
        for i in range(WRITES):
            delay = start + i / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                self.write(rnd, i)
            except ApiException as e:
                self.errors.append("write %d: %s %s" % (i, e.status, e.reason))
            self.done = i + 1


class Informer:
    """A list + watch cache of the namespace's CronJobs."""

    def __init__(self, api):
        self.api = api
        self.objs = {}
        self.rv = "0"
        self.relists = 0
        self.expired = 0
        self.events = 0
        self.bookmarks = 0
        self.problems = []

    def relist(self):
        resp = self.api.list_namespaced_cron_job(NAMESPACE, _preload_content=False)
        body = json.loads(resp.data)
        self.objs = {o["metadata"]["name"]: o for o in body["items"]}
        self.rv = body["metadata"]["resourceVersion"]
        self.relists += 1

    def apply(self, ev):
        kind, obj = ev["type"], ev["raw_object"]
        rv = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            if int(rv) < int(self.rv):
                self.problems.append("BOOKMARK at %s after %s" % (rv, self.rv))
            self.bookmarks += 1
            self.rv = rv
            return
        name = obj["metadata"]["name"]
        if int(rv) <= int(self.rv):
            self.problems.append("%s %s at %s after %s" % (kind, name, rv, self.rv))
        known = name in self.objs
        if kind not in ("ADDED", "MODIFIED", "DELETED") or known != (kind != "ADDED"):
            self.problems.append("%s of %s, which the copy %s" %
                                 (kind, name, "has" if known else "lacks"))
        if kind == "DELETED":
            self.objs.pop(name, None)
        else:
            self.objs[name] = obj
        self.rv = rv
        self.events += 1

    def watch(self, until):
        """Watches from self.rv until until() holds (looked at after each event) or the
        stream times out. On 410, re-lists and returns False."""
        w = watch.Watch()
        try:
            for ev in w.stream(self.api.list_namespaced_cron_job, NAMESPACE,
                               resource_version=self.rv, timeout_seconds=WATCH_TIMEOUT_S,
                               allow_watch_bookmarks=True):
                self.apply(ev)
                if until():
                    w.stop()
        except ApiException as e:
            if e.status != 410:
                raise
            self.expired += 1
            self.relist()
            return False
        return True

    def watch_until(self, until, deadline):
        while not until() and time.monotonic() < deadline:
            self.watch(until)
        return until()


def server_state(api):
    body = json.loads(api.list_namespaced_cron_job(NAMESPACE, _preload_content=False).data)
    return body["metadata"]["resourceVersion"], body["items"]


def summary(objs):
    return {o["metadata"]["name"]: (o["metadata"]["resourceVersion"],
                                    o["metadata"]["labels"].get("gen")) for o in objs}


def diff(want, got):
    out = []
    for name in sorted(set(want) | set(got)):
        if want.get(name) != got.get(name):
            out.append("%s: server %s, informer %s" % (name, want.get(name), got.get(name)))
    return "; ".join(out[:10]) + (" ..." if len(out) > 10 else "")


def main():
    kubeconfig = sys.argv[1]
    core = client.CoreV1Api(config.new_client_from_config(kubeconfig))
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": NAMESPACE}})
    check("the client verifies kapi's certificate against the kubeconfig's CA",
          core.api_client.configuration.verify_ssl and
          bool(core.api_client.configuration.ssl_ca_cert))
    informer = Informer(client.BatchV1Api(config.new_client_from_config(kubeconfig)))
    writes_to = sys.argv[2] if len(sys.argv) > 2 else kubeconfig
    writer = Writer(client.BatchV1Api(config.new_client_from_config(writes_to)))
    informer.relist()
    started = time.monotonic()
    writer.start()
    deadline = started + WRITES / RATE + CATCH_UP_S

    # A forced reconnect: close the watch, watch again from the last resourceVersion.
    informer.watch_until(lambda: writer.done >= RECONNECT_AT, deadline)
    informer.watch_until(lambda: writer.done >= PAUSE_AT, deadline)
    check("a reconnect from the last resourceVersion resumes without a 410",
          informer.expired == 0 and informer.relists == 1,
          "%d expired, %d lists" % (informer.expired, informer.relists))

    # Fall behind the history window while the writes go on, then resume from the old rv.
    # On a loaded machine the writer is slower: wait for its writes, not only the clock.
    old_rv, done = informer.rv, writer.done
    time.sleep(HISTORY_S + 1.5)
    while writer.done - done < 100 and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    check("the writes went on while the informer was away (%d)" % (writer.done - done),
          writer.done - done >= 100 and writer.done < WRITES)
    resumed = informer.watch(lambda: True)
    check("watching again from rv %s, older than the history, answers 410" % old_rv,
          not resumed and informer.expired == 1)
    check("the informer re-listed after the 410", informer.relists == 2)

    # Catch up: the writes end, the informer reaches the server's latest revision.
    writer.join(deadline - time.monotonic())
    check("the writer made %d writes (%s), none failed" % (writer.done, writer.ops),
          writer.done == WRITES and not writer.errors and min(writer.ops.values()) > 0,
          "; ".join(writer.errors[:5]))
    latest, items = server_state(informer.api)
    caught_up = informer.watch_until(lambda: int(informer.rv) >= int(latest),
                                     time.monotonic() + CATCH_UP_S)
    check("the informer caught up with the server's resourceVersion %s" % latest, caught_up,
          "it is at %s" % informer.rv)
    want, got = summary(items), summary(informer.objs.values())
    check("the informer's copy is the server's list: %d objects, names and "
          "resourceVersions" % len(want), want == got, diff(want, got))
    check("the writer's last answers are the server's list",
          summary(writer.objs.values()) == want, diff(want, summary(writer.objs.values())))
    check("every event was consistent with the copy, in resourceVersion order "
          "(%d events, %d bookmarks, %d lists)" %
          (informer.events, informer.bookmarks, informer.relists),
          not informer.problems, "; ".join(informer.problems[:5]))
    check("the whole run took %.1f s" % (time.monotonic() - started),
          time.monotonic() - started < WRITES / RATE + CATCH_UP_S)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
