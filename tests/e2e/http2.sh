#!/usr/bin/env bash
# HTTP/2 (issue 15): ALPN picks h2 for a client that offers it and HTTP/1.1 for one that
# does not; 100 watches multiplexed on one connection each receive every event; a Python
# client (httpx over h2, Debian's python3-httpx and python3-h2) lists and watches like an
# informer; kubectl works over h2; --http2-max-streams-per-connection is advertised.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
start_kapi "$bin" "$data" "$port" --http2-max-streams-per-connection 150 || exit 1
export KUBECONFIG=$data/kubeconfig
api=https://127.0.0.1:$port
token=$(cat "$data/admin-token")
c() { curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer $token" "$@"; }

expect_eq "curl --http2 negotiates h2" "2 200" \
    "$(c --http2 -o /dev/null -w '%{http_version} %{http_code}' "$api/version")"
expect_eq "curl --http1.1 still gets HTTP/1.1" "1.1 200" \
    "$(c --http1.1 -o /dev/null -w '%{http_version} %{http_code}' "$api/version")"
code=$(c --http2 -o "$work/nf" -w '%{http_code}' "$api/api/v1/namespaces/nope")
expect_eq "an error answer over h2 is kube's Status" "404 NotFound" "$code $(jq -r .reason "$work/nf")"

check "kubectl over h2: create a namespace" kubectl create namespace h2
check "kubectl over h2: create a CronJob (protobuf body)" \
    kubectl create cronjob first -n h2 --image=busybox --schedule='*/5 * * * *'

# ---- 100 watches on one connection ----
rv=$(c "$api/apis/batch/v1/namespaces/h2/cronjobs" | jq -r .metadata.resourceVersion)
: >"$work/watches"
for i in $(seq 1 100); do
    echo "url = \"$api/apis/batch/v1/namespaces/h2/cronjobs?watch=1&resourceVersion=$rv&timeoutSeconds=8\""
    echo "output = \"$work/w$i\""
done >"$work/watches"
c --http2 --parallel --parallel-max 100 -K "$work/watches" \
    -w '%{http_version} %{num_connects}\n' >"$work/watch-info" 2>/dev/null &
curl_pid=$!
sleep 2
for i in 1 2 3 4 5; do
    kubectl create cronjob "c$i" -n h2 --image=busybox --schedule='*/5 * * * *' >/dev/null
done
kubectl delete cronjob c1 -n h2 >/dev/null
wait $curl_pid
expect_eq "every watch spoke h2" 100 "$(grep -c '^2 ' "$work/watch-info")"
expect_eq "all 100 shared one connection" 1 "$(awk '{n += $2} END {print n}' "$work/watch-info")"
got=$(for i in $(seq 1 100); do jq -rc '[.type, .object.metadata.name] | join(" ")' "$work/w$i" |
    paste -sd,; done | sort | uniq -c | sed 's/^ *//')
expect_eq "each watch received every event, in order" \
    "100 ADDED c1,ADDED c2,ADDED c3,ADDED c4,ADDED c5,DELETED c1" "$got"

# ---- the stream limit is kube-apiserver's flag ----
expect_eq "SETTINGS_MAX_CONCURRENT_STREAMS is the flag's value" 150 \
    "$(nghttp -nv "$api/version" 2>/dev/null |
       awk '/recv SETTINGS/ {r = 1} /send SETTINGS/ {r = 0} r && /MAX_CONCURRENT_STREAMS/' |
       sed 's/.*:\([0-9]*\)].*/\1/')"

# ---- a Python client over h2, as an informer does: list, then watch from its version ----
out=$(/usr/bin/python3 - "$api" "$token" "$data/ca.crt" <<'EOF' 2>&1
import json, subprocess, sys, threading, time
import httpx
api, token, ca = sys.argv[1:4]
# The informer's connection lists and watches; the writes go on a second one (httpcore's
# sync client serves one connection's streams from whichever thread reads, so a write
# sharing the watch's connection waits on the watch's reads).
def connect():
    return httpx.Client(http2=True, verify=ca, timeout=30,
                        headers={"Authorization": "Bearer " + token})
client, writer = connect(), connect()
lst = client.get(api + "/apis/batch/v1/namespaces/h2/cronjobs")
names = sorted(i["metadata"]["name"] for i in lst.json()["items"])
rv = lst.json()["metadata"]["resourceVersion"]
seen = []
def watch():
    with client.stream("GET", api + "/apis/batch/v1/namespaces/h2/cronjobs",
                       params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "8",
                               "allowWatchBookmarks": "true"}) as r:
        for line in r.iter_lines():
            ev = json.loads(line)
            if ev["type"] != "BOOKMARK":
                seen.append(ev["type"] + " " + ev["object"]["metadata"]["name"])
t = threading.Thread(target=watch)
t.start()
time.sleep(1)
body = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "py"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
created = writer.post(api + "/apis/batch/v1/namespaces/h2/cronjobs", json=body)
writer.delete(api + "/apis/batch/v1/namespaces/h2/cronjobs/py")
t.join()
print(lst.http_version, created.http_version, created.status_code, ",".join(names), ";".join(seen))
EOF
)
expect_eq "a Python client lists, creates and watches over h2" \
    "HTTP/2 HTTP/2 201 c2,c3,c4,c5,first ADDED py;DELETED py" "$out"

e2e_finish
