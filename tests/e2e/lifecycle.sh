#!/usr/bin/env bash
# The namespace lifecycle through the write pipeline: a namespace being deleted stays
# (Terminating) while an object in it waits for its finalizer, also across a write to
# its /status (only its /finalize write, or the controller's, may remove it: kube's
# namespace ShouldDeleteDuringUpdate); it goes once the object's finalizer does. And a
# server stopped while the controller empties a namespace stops at once.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
token=$(cat "$data/admin-token")
api=https://127.0.0.1:$port
auth=(-H "Authorization: Bearer $token")
cu() { curl -s --cacert "$data/ca.crt" "${auth[@]}" "$@"; }
json=(-H 'Content-Type: application/json')
phase() { cu "$api/api/v1/namespaces/$1" | jq -r '.reason // .status.phase'; }
# wait_for SECONDS COMMAND...: true once the command succeeds within the time.
wait_for() {
    local until=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -ge "$until" ] && return 1
        sleep 0.1
    done
}
cronjob() { # NAME [METADATA MEMBERS]
    printf '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"%s"%s},"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"main","image":"busybox"}]}}}}}}' "$1" "${2:-}"
}
cj_deleting() { [ "$(cu "$api/apis/batch/v1/namespaces/held/cronjobs/x" | jq -r '.metadata.deletionTimestamp != null')" = true ]; }
ns_gone() { [ "$(phase held)" = NotFound ]; }

cu "${json[@]}" -X POST "$api/api/v1/namespaces" -d '{"metadata":{"name":"held"}}' >/dev/null
cu "${json[@]}" -X POST "$api/apis/batch/v1/namespaces/held/cronjobs" -d "$(cronjob x ',"finalizers":["example.com/hold"]')" >/dev/null
cu -X DELETE "$api/api/v1/namespaces/held" >/dev/null
check "the held object is being deleted" wait_for 5 cj_deleting
expect_eq "the namespace is Terminating" Terminating "$(phase held)"
cu "$api/api/v1/namespaces/held" >"$work/ns.json"
code=$(cu -o /dev/null -w '%{http_code}' "${json[@]}" -X PUT "$api/api/v1/namespaces/held/status" -d @"$work/ns.json")
expect_eq "a /status write of the Terminating namespace" 200 "$code"
expect_eq "the namespace stays after its /status write" Terminating "$(phase held)"
cu -X PATCH -H 'Content-Type: application/merge-patch+json' \
    "$api/apis/batch/v1/namespaces/held/cronjobs/x" -d '{"metadata":{"finalizers":null}}' >/dev/null
check "the namespace goes with its last object" wait_for 5 ns_gone

# Stopping while the controller empties a namespace of many objects: the server stops
# at once, without waiting for the controller's pass to delete them all.
cu "${json[@]}" -X POST "$api/api/v1/namespaces" -d '{"metadata":{"name":"many"}}' >/dev/null
python3 - "$port" "$token" "$data/ca.crt" <<'PY'
import http.client, json, ssl, sys
port, token, ca = sys.argv[1:4]
c = http.client.HTTPSConnection("127.0.0.1", int(port), context=ssl.create_default_context(cafile=ca))
spec = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
    "restartPolicy": "OnFailure", "containers": [{"name": "main", "image": "busybox"}]}}}}}
for i in range(2000):
    body = json.dumps({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c%d" % i}, "spec": spec})
    c.request("POST", "/apis/batch/v1/namespaces/many/cronjobs", body,
              {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    assert r.status == 201, r.status
PY
cu -X DELETE "$api/api/v1/namespaces/many" >/dev/null
sleep 0.3
start=$(date +%s%N)
stop_kapi
took_ms=$((($(date +%s%N) - start) / 1000000))
check "the server stops within 1 s while a namespace of 2000 objects is emptied (${took_ms} ms)" \
    test "$took_ms" -le 1000
e2e_finish
