#!/usr/bin/env bash
# Leases (coordination.k8s.io/v1) as a kubectl user meets them: discovery, create from
# YAML, the table of kubectl get (HOLDER), MicroTimes as written, replace (a
# resourceVersion is required), patch, watch, kube's 422 for a zero lease duration,
# protobuf, delete and deletecollection. Each expectation was checked against
# kube-apiserver 1.26 with the same kubectl.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }
token=$(cat "$data/admin-token")
api=https://127.0.0.1:$port/apis/coordination.k8s.io/v1

expect_eq "api-resources: leases, namespaced, no short name" \
    "leases coordination.k8s.io/v1 true Lease" \
    "$(kc api-resources --api-group=coordination.k8s.io --no-headers | awk '{print $1, $2, $3, $4}')"

kc create namespace team >/dev/null
cat >"$work/lease.yaml" <<'EOF'
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lock, namespace: team}
spec:
  holderIdentity: host-a_1
  leaseDurationSeconds: 15
  acquireTime: "2024-03-04T05:06:07.000001Z"
  renewTime: "2024-03-04T05:06:17.987654Z"
  leaseTransitions: 0
EOF
check "kubectl create -f a Lease" kc create -f "$work/lease.yaml"
kc -n team create -f - >/dev/null <<'EOF'
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: free}
spec: {}
EOF
expect_eq "MicroTimes read back with their microseconds" \
    "host-a_1 15 2024-03-04T05:06:07.000001Z 2024-03-04T05:06:17.987654Z 0" \
    "$(kc -n team get lease lock -o go-template='{{.spec.holderIdentity}} {{.spec.leaseDurationSeconds}} {{.spec.acquireTime}} {{.spec.renewTime}} {{.spec.leaseTransitions}}')"
expect_eq "kubectl get leases -A: NAMESPACE, NAME, HOLDER, AGE" \
    "NAMESPACE NAME HOLDER AGE|team free|team lock host-a_1" \
    "$(kc get leases -A | awk 'NR==1{o=$1" "$2" "$3" "$4} NR>1 && $1=="team"{o=o"|"$1" "$2; if (NF==4) o=o" "$3} END{print o}')"
refuses "a time without microseconds is refused as Go's MicroTime refuses it" \
    'parsing time "2024-03-04T05:06:07Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"' \
    kc -n team patch lease lock --type=merge -p '{"spec":{"acquireTime":"2024-03-04T05:06:07Z"}}'

# Validation, with kube's paths and messages.
refuses "leaseDurationSeconds 0 is a 422" \
    'The Lease "bad" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0' \
    kc -n team create -f - <<'EOF'
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: bad}
spec: {leaseDurationSeconds: 0}
EOF
code=$(curl -s -o "$work/status" -w '%{http_code}' --cacert "$data/ca.crt" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"bad"},"spec":{"leaseDurationSeconds":0,"leaseTransitions":-1}}' \
    "$api/namespaces/team/leases")
expect_eq "the 422 Status, byte for byte as kube-apiserver's" \
    '422 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Lease.coordination.k8s.io \"bad\" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]","reason":"Invalid","details":{"name":"bad","group":"coordination.k8s.io","kind":"Lease","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: 0: must be greater than 0","field":"spec.leaseDurationSeconds"},{"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.leaseTransitions"}]},"code":422}' \
    "$code $(cat "$work/status")"

# Updates: a resourceVersion is required (AllowUnconditionalUpdate is false for Leases).
# (kubectl replace reads the resourceVersion first when the file has none; a client that
# does not is refused.)
code=$(curl -s -o "$work/status" -w '%{http_code}' --cacert "$data/ca.crt" -X PUT \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lock"},"spec":{}}' \
    "$api/namespaces/team/leases/lock")
expect_eq "a PUT without a resourceVersion is a 422, naming the resource as kube does" \
    '422 leases.coordination.k8s.io "lock" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update' \
    "$code $(python3 -c 'import json,sys; print(json.load(sys.stdin)["message"])' <"$work/status")"
check "kubectl replace without a resourceVersion (kubectl reads it first)" \
    kc replace -f "$work/lease.yaml"
kc -n team get lease lock -o json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); d["spec"]["holderIdentity"]="host-b_2"; d["spec"]["leaseTransitions"]=1; print(json.dumps(d))' \
        >"$work/replaced.json"
check "kubectl replace at the resourceVersion read" kc replace -f "$work/replaced.json"
refuses "kubectl replace at a stale resourceVersion is a conflict" \
    'Operation cannot be fulfilled on leases.coordination.k8s.io "lock": the object has been modified; please apply your changes to the latest version and try again' \
    kc replace -f "$work/replaced.json"
refuses "a patch to leaseDurationSeconds 0 is a 422" \
    'spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0' \
    kc -n team patch lease lock --type=merge -p '{"spec":{"leaseDurationSeconds":0}}'

# A watch sees a renewal and the delete.
kc -n team get leases --watch-only --output-watch-events \
    -o go-template='{{.type}} {{.object.spec.holderIdentity}}{{"\n"}}' >"$work/watch" 2>&1 &
watcher=$!
sleep 1
check "kubectl patch a renewal" kc -n team patch lease lock --type=merge \
    -p '{"spec":{"holderIdentity":"host-c_3","renewTime":"2024-03-04T05:07:00.000000Z"}}'
check "kubectl delete lease" kc -n team delete lease lock
sleep 1
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
expect_eq "kubectl get --watch sees the renewal and the delete" \
    "MODIFIED host-c_3|DELETED host-c_3" "$(paste -sd'|' "$work/watch")"

# Protobuf, as client-go's typed clients ask.
kc create -f "$work/lease.yaml" >/dev/null
curl -s -o "$work/pb" --cacert "$data/ca.crt" -H "Authorization: Bearer $token" \
    -H 'Accept: application/vnd.kubernetes.protobuf' "$api/namespaces/team/leases/lock"
expect_eq "protobuf get: envelope, name, holder, duration, acquireTime's micros, transitions" \
    "Lease coordination.k8s.io/v1 lock host-a_1 15 1000 0" \
    "$(python3 "$here/pbwire.py" "$work/pb" kind apiVersion 1.1 2.1 2.2 2.3.2 2.5 | paste -sd' ')"

check "kubectl delete leases --all (deletecollection)" kc -n team delete leases --all
expect_eq "the namespace has no Lease left" "" "$(kc -n team get leases -o name)"
e2e_finish
