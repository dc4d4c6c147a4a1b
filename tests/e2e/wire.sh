#!/usr/bin/env bash
# The wire (issue 15): protobuf bodies and answers for built-in types, as kubectl's typed
# commands and client-go send and ask for them; custom resources without protobuf.
# tests/e2e/pbwire.py reads the answers by wire structure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
api=https://127.0.0.1:$port
auth=(-H "Authorization: Bearer $(cat "$data/admin-token")")
PB=application/vnd.kubernetes.protobuf
c() { curl -s --cacert "$data/ca.crt" "${auth[@]}" "$@"; }
# get PATH ACCEPT: the answer into $work/ans, "CODE CONTENT-TYPE" on stdout.
get() { c -o "$work/ans" -w '%{http_code} %{content_type}' -H "Accept: $2" "$api$1"; }
pbq() { python3 "$here/pbwire.py" "$work/ans" "$@" | paste -sd' '; }

# ---- kubectl's typed commands send protobuf ----
kubectl create cronjob wire --image=busybox --schedule='*/5 * * * *' -v=8 >"$work/kc.log" 2>&1
expect_eq "kubectl create cronjob: created" "cronjob.batch/wire created" \
    "$(grep -v '^I[0-9]' "$work/kc.log" | tail -1)"
expect_eq "its body was protobuf" 1 \
    "$(grep -c "Content-Type: $PB\$" "$work/kc.log" | awk '{print ($1 > 0)}')"
expect_eq "the CronJob holds what kubectl sent, defaulted" \
    "*/5 * * * * busybox Allow 3" \
    "$(kubectl get cronjob wire -o jsonpath='{.spec.schedule} {.spec.jobTemplate.spec.template.spec.containers[0].image} {.spec.concurrencyPolicy} {.spec.successfulJobsHistoryLimit}')"
check "kubectl create namespace" kubectl create namespace wire-ns

# ---- answers in protobuf ----
expect_eq "GET a CronJob with Accept protobuf" "200 $PB" \
    "$(get /apis/batch/v1/namespaces/default/cronjobs/wire $PB)"
expect_eq "the envelope names the kind; metadata.name and spec.schedule read back" \
    "batch/v1 CronJob wire */5 * * * *" "$(pbq apiVersion kind 1.1 2.1)"
kubectl create cronjob wire2 --image=busybox --schedule='0 1 * * *' >/dev/null
expect_eq "a list: CronJobList with both items" "200 $PB CronJobList 2" \
    "$(get /apis/batch/v1/namespaces/default/cronjobs $PB) $(pbq kind '2#')"
expect_eq "a page of one keeps its continue token" "1 1" \
    "$(get '/apis/batch/v1/namespaces/default/cronjobs?limit=1' $PB >/dev/null
       pbq '2#' | tr -d '\n'; echo -n ' '; pbq 1.3 | awk '{print (length($0) > 0)}')"
expect_eq "PartialObjectMetadata in protobuf" "200 $PB PartialObjectMetadata meta.k8s.io/v1 wire" \
    "$(get /apis/batch/v1/namespaces/default/cronjobs/wire "$PB;as=PartialObjectMetadata;g=meta.k8s.io;v=v1") $(pbq kind apiVersion 1.1)"
expect_eq "a Table has no protobuf form: 406" 406 \
    "$(get /apis/batch/v1/namespaces/default/cronjobs/wire "$PB;as=Table;g=meta.k8s.io;v=v1" | cut -d' ' -f1)"
expect_eq "a 404 is a protobuf Status" "404 $PB Status NotFound 404" \
    "$(get /apis/batch/v1/namespaces/default/cronjobs/none $PB) $(pbq kind 4 6)"
expect_eq "protobuf first, JSON after: protobuf" "200 $PB" \
    "$(get /api/v1/namespaces/wire-ns "$PB, application/json")"
expect_eq "JSON preferred by q: JSON" "200 application/json" \
    "$(get /api/v1/namespaces/wire-ns "$PB;q=0.5, application/json")"

# ---- a protobuf body round trip: kapi's own answer sent back as an update ----
get /apis/batch/v1/namespaces/default/cronjobs/wire $PB >/dev/null
expect_eq "PUT of the protobuf answer is accepted" 200 \
    "$(c -o /dev/null -w '%{http_code}' -X PUT -H "Content-Type: $PB" --data-binary @"$work/ans" \
        "$api/apis/batch/v1/namespaces/default/cronjobs/wire")"
# DeleteOptions as client-go's typed clients send them: protobuf, in the resource's group
# version (kube takes meta.k8s.io/v1 too): gracePeriodSeconds 0, propagationPolicy Background.
delete_options() {
    python3 - "$1" <<'PY'
import sys
def v(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])
def f(num, b):
    return v(num << 3 | 2) + v(len(b)) + b
raw = bytes([0x08, 0x00]) + f(4, b"Background")
env = f(1, f(1, sys.argv[1].encode()) + f(2, b"DeleteOptions")) + f(2, raw) + f(3, b"") + f(4, b"")
sys.stdout.buffer.write(b"k8s\0" + env)
PY
}
for av in batch/v1 meta.k8s.io/v1; do
    kubectl create cronjob wire-del --image=busybox --schedule='0 3 * * *' >/dev/null
    delete_options "$av" >"$work/delopts"
    expect_eq "DELETE with protobuf DeleteOptions of $av" "200 Success" \
        "$(c -o "$work/ans" -w '%{http_code}' -X DELETE -H "Content-Type: $PB" \
            --data-binary @"$work/delopts" "$api/apis/batch/v1/namespaces/default/cronjobs/wire-del") $(jq -r .status "$work/ans")"
done
printf 'k8s\0\x0a\x02' >"$work/bad"
expect_eq "a truncated protobuf body is a 400" 400 \
    "$(c -o /dev/null -w '%{http_code}' -X POST -H "Content-Type: $PB" --data-binary @"$work/bad" \
        "$api/apis/batch/v1/namespaces/default/cronjobs")"

# ---- every watch form ----
# watch ACCEPT OUT: a watch of namespace default's CronJobs from now, with bookmarks, for 3 s,
# into $work/OUT, while wire3 is created and deleted and wire is labelled.
watch() {
    local rv
    rv=$(c "$api/apis/batch/v1/namespaces/default/cronjobs" | jq -r .metadata.resourceVersion)
    c -N -H "Accept: $1" -o "$work/$2" -D "$work/$2.h" \
        "$api/apis/batch/v1/namespaces/default/cronjobs?watch=1&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=3" &
    local pid=$!
    sleep 0.5
    kubectl create cronjob wire3 --image=busybox --schedule='0 2 * * *' >/dev/null
    kubectl label --overwrite cronjob wire "round=${2%%.*}" >/dev/null
    kubectl delete cronjob wire3 >/dev/null
    wait $pid
}
TABLE="application/json;as=Table;g=meta.k8s.io;v=v1"
watch "$TABLE" table.json
expect_eq "a Table watch: a row per event, the column definitions with the first only" \
    "ADDED Table 9 wire3 0 2 * * *|MODIFIED Table null wire */5 * * * *|DELETED Table null wire3 0 2 * * *" \
    "$(jq -r 'select(.type != "BOOKMARK") | "\(.type) \(.object.kind) \(.object.columnDefinitions | if . == null then "null" else length end) \(.object.rows[0].cells[0]) \(.object.rows[0].cells[1])"' "$work/table.json" | paste -sd'|')"
expect_eq "its rows hold the objects' metadata" "PartialObjectMetadata wire3" \
    "$(jq -r 'select(.type == "ADDED") | "\(.object.rows[0].object.kind) \(.object.rows[0].object.metadata.name)"' "$work/table.json")"
watch "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1" pom.json
expect_eq "a metadata-only watch: PartialObjectMetadata events, no spec" \
    "ADDED PartialObjectMetadata wire3 false|MODIFIED PartialObjectMetadata wire false|DELETED PartialObjectMetadata wire3 false" \
    "$(jq -r 'select(.type != "BOOKMARK") | "\(.type) \(.object.kind) \(.object.metadata.name) \(.object | has("spec"))"' "$work/pom.json" | paste -sd'|')"
watch "$PB" pb.bin
expect_eq "a protobuf watch is a stream of frames" "application/vnd.kubernetes.protobuf;stream=watch" \
    "$(grep -i '^content-type:' "$work/pb.bin.h" | cut -d' ' -f2 | tr -d '\r')"
expect_eq "each frame a WatchEvent holding the enveloped object" \
    "ADDED CronJob wire3 0 2 * * *|MODIFIED CronJob wire */5 * * * *|DELETED CronJob wire3 0 2 * * *" \
    "$(python3 "$here/pbwire.py" --watch "$work/pb.bin" kind 1.1 2.1 | grep -v BOOKMARK | paste -sd'|')"
watch "$PB;as=PartialObjectMetadata;g=meta.k8s.io;v=v1" pbpom.bin
expect_eq "metadata-only in protobuf" \
    "ADDED PartialObjectMetadata meta.k8s.io/v1 wire3|MODIFIED PartialObjectMetadata meta.k8s.io/v1 wire|DELETED PartialObjectMetadata meta.k8s.io/v1 wire3" \
    "$(python3 "$here/pbwire.py" --watch "$work/pbpom.bin" kind apiVersion 1.1 | grep -v BOOKMARK | paste -sd'|')"
kubectl get cronjobs -w --output-watch-events >"$work/getw.txt" 2>&1 &
getw=$!
sleep 1
kubectl create cronjob wire4 --image=busybox --schedule='0 4 * * *' >/dev/null
sleep 1
kill $getw 2>/dev/null
wait $getw 2>/dev/null
expect_eq "kubectl get -w prints rows under one header" "EVENT NAME SCHEDULE|ADDED wire 5|ADDED wire2 0|ADDED wire4 0" \
    "$(awk '{print $1, $2, $3}' "$work/getw.txt" | sed 's/\*\/5/5/' | paste -sd'|')"

# ---- a streaming list: the state as events, then the bookmark that ends it ----
list_rv() { c "$api/apis/batch/v1/namespaces/default/cronjobs" | jq -r .metadata.resourceVersion; }
before=$(list_rv)
c -N -o "$work/stream.json" \
    "$api/apis/batch/v1/namespaces/default/cronjobs?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
after=$(list_rv)
expect_eq "a streaming list: each CronJob ADDED, then the initial-events-end bookmark" \
    "ADDED wire|ADDED wire2|ADDED wire4|BOOKMARK true" \
    "$(jq -r '"\(.type) \(.object.metadata.name // .object.metadata.annotations["k8s.io/initial-events-end"])"' "$work/stream.json" | paste -sd'|')"
# The revision the state was read at: the store's, which other writers move meanwhile
# (the controller-manager's lease renewals), so it lies between a list before and after.
bm=$(jq -r 'select(.type == "BOOKMARK") | .object.metadata.resourceVersion' "$work/stream.json")
check "its bookmark is at the revision the list was read at ($before <= $bm <= $after)" \
    test "$before" -le "$bm" -a "$bm" -le "$after"

# ---- custom resources have no protobuf form ----
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: wires.e2e.example.com}
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: wires, kind: Wire}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
YAML
kubectl wait --for=condition=Established crd/wires.e2e.example.com >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: e2e.example.com/v1
kind: Wire
metadata: {name: w1, namespace: default}
YAML
# ---- aggregated discovery: one document for /api and one for /apis ----
AGG="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
expect_eq "/apis aggregated (v2), as kubectl 1.32 asks first" "200 $AGG APIGroupDiscoveryList" \
    "$(get /apis "$AGG,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json") $(jq -r .kind "$work/ans")"
expect_eq "batch/v1 cronjobs with their kind, scope, short names and status" \
    "batch/v1 CronJob Namespaced cronjob cj status" \
    "$(jq -r '.items[] | select(.metadata.name == "batch") | .versions[0] | .resources[] | select(.resource == "cronjobs") | "\(.responseKind.group)/\(.responseKind.version) \(.responseKind.kind) \(.scope) \(.singularResource) \(.shortNames | join(",")) \(.subresources | map(.subresource) | join(","))"' "$work/ans")"
expect_eq "a custom resource is there once its CRD is Established" "wires Wire Current" \
    "$(jq -r '.items[] | select(.metadata.name == "e2e.example.com") | .versions[0] | "\(.resources[0].resource) \(.resources[0].responseKind.kind) \(.freshness)"' "$work/ans")"
expect_eq "/api aggregated (v2beta1): the core group, unnamed" "apidiscovery.k8s.io/v2beta1 null v1 namespaces" \
    "$(get /api "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList" >/dev/null
       jq -r '"\(.apiVersion) \(.items[0].metadata.name) \(.items[0].versions[0].version) \(.items[0].versions[0].resources | map(.resource) | map(select(. == "namespaces"))[0])"' "$work/ans")"
expect_eq "plain JSON keeps the old document" "APIGroupList" \
    "$(get /apis application/json >/dev/null; jq -r .kind "$work/ans")"
rm -rf "$work/kcache"
kubectl --cache-dir "$work/kcache" get cronjobs -v=6 >"$work/disc.log" 2>&1
expect_eq "kubectl discovers in two requests, no group version documents" "2 0" \
    "$(grep -cE 'GET https://[^ /]*/(api|apis)[?]' "$work/disc.log") $(grep -cE 'GET https://[^ /]*/apis/[^/]+/[^/?]+[?]timeout' "$work/disc.log")"

expect_eq "a custom resource with Accept protobuf only: 406, its Status in protobuf" \
    "406 $PB NotAcceptable" \
    "$(get /apis/e2e.example.com/v1/namespaces/default/wires/w1 $PB) $(pbq 4)"
expect_eq "with a JSON fallback: JSON" "200 application/json" \
    "$(get /apis/e2e.example.com/v1/namespaces/default/wires/w1 "$PB, application/json")"

# ---- numbers as Go writes them: 1e20 is 100000000000000000000 on the wire ----
printf '{"apiVersion":"e2e.example.com/v1","kind":"Wire","metadata":{"name":"big"},"n":1e20}' |
    kubectl apply -n default -f - >/dev/null
expect_eq "a number beyond int64 (kubectl sends 1e20 without exponent) is stored" \
    100000000000000000000 "$(get /apis/e2e.example.com/v1/namespaces/default/wires/big application/json >/dev/null
                             jq -r .n "$work/ans" | awk '{printf "%.0f", $1}')"
check "and the object stays readable and writable" \
    kubectl patch wire big -n default --type=merge -p '{"m":1}'

e2e_finish
