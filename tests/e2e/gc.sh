#!/usr/bin/env bash
# The garbage collector as a kubectl user meets it: a CronJob owning Jobs (made with
# kubectl create job --from=cronjob/X) deleted with --cascade=background, foreground and
# orphan; a Job held by a finalizer, its reference blocking its owner's deletion, holding
# its CronJob's foreground deletion until it goes; a custom resource owning a CronJob
# that owns a Job, deleted each way; dangling owner references (no such owner, or
# another object by its name); the per-type default of a delete without options
# (batch/v1 Jobs orphan, CronJobs not); a namespace deletion. The metadata seen during
# each mode was checked against kube-apiserver and kube-controller-manager 1.26.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }
kg() { kc -n gc "$@"; }
# gone KIND/NAME: polls until the object is gone.
gone() { eventually bash -c "! kubectl -n gc get $1 -o name 2>/dev/null | grep -q ."; }

kc create namespace gc >/dev/null
# cronjob NAME JOB...: a CronJob and Jobs made from it.
cronjob() {
    local cj=$1
    shift
    kg create cronjob "$cj" --image=busybox --schedule='0 0 1 1 *' -- true >/dev/null
    for j in "$@"; do kg create job "$j" --from=cronjob/"$cj" >/dev/null; done
}
jobs_of() { kg get jobs -o name | sed 's|job.batch/||' | grep "^$1-" | paste -sd' '; }

# ---- Background ----
cronjob bg bg-1 bg-2
expect_eq "the Jobs' owner reference names their CronJob as controller" "CronJob bg true" \
    "$(kg get job bg-1 -o jsonpath='{.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller}')"
expect_eq "--cascade=background removes the CronJob at once" 'cronjob.batch "bg" deleted' \
    "$(kg delete cronjob bg --cascade=background --wait=false)"
check "then its Jobs go" gone "job/bg-1 job/bg-2"

# ---- Foreground ----
cronjob fg fg-1 fg-2
check "a finalizer holds one Job, whose reference blocks its owner's deletion" \
    kg patch job fg-2 --type=json -p '[{"op":"add","path":"/metadata/finalizers","value":["example.com/hold"]},{"op":"add","path":"/metadata/ownerReferences/0/blockOwnerDeletion","value":true}]'
check "kubectl delete --cascade=foreground --wait=false" \
    kg delete cronjob fg --cascade=foreground --wait=false
expect_eq "the CronJob waits with foregroundDeletion and a deletionTimestamp" \
    "foregroundDeletion true" \
    "$(kg get cronjob fg -o jsonpath='{.metadata.finalizers[*]} {.metadata.deletionTimestamp}' | sed 's/ 20.*Z$/ true/')"
check "the free Job goes" gone job/fg-1
expect_eq "the held Job is being deleted" "example.com/hold true" \
    "$(kg get job fg-2 -o jsonpath='{.metadata.finalizers[*]} {.metadata.deletionTimestamp}' | sed 's/ 20.*Z$/ true/')"
sleep 1
expect_eq "its blockOwnerDeletion keeps the CronJob" "cronjob.batch/fg" "$(kg get cronjob fg -o name)"
check "the hold is released" kg patch job fg-2 --type=merge -p '{"metadata":{"finalizers":null}}'
check "the Job goes, then the CronJob" gone "job/fg-2 cronjob/fg"

# ---- Orphan ----
cronjob or or-1 or-2
expect_eq "kubectl delete --cascade=orphan waits for the CronJob to go" \
    'cronjob.batch "or" deleted' "$(kg delete cronjob or --cascade=orphan)"
expect_eq "its Jobs stay" "or-1 or-2" "$(jobs_of or)"
expect_eq "without their owner reference" "||" \
    "$(kg get jobs or-1 or-2 -o jsonpath='{range .items[*]}|{.metadata.ownerReferences}{end}')"

# ---- per-type defaults of a delete without options ----
cronjob dj dj-1
expect_eq "a Job deleted without options gets the orphan finalizer (batch/v1)" "orphan" \
    "$(kc delete --raw /apis/batch/v1/namespaces/gc/jobs/dj-1 | python3 -c 'import json,sys; print(*json.load(sys.stdin)["metadata"].get("finalizers", []))')"
check "which the collector removes, and the Job goes" gone job/dj-1
cronjob dc dc-1
expect_eq "a CronJob deleted without options goes at once (its dependents in the background)" \
    "Success" \
    "$(kc delete --raw /apis/batch/v1/namespaces/gc/cronjobs/dc | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')"
check "and its Job after it" gone job/dc-1

# ---- a custom resource owning a CronJob ----
kc apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.gc.example.com
spec:
  group: gc.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
check "the CRD is established" kc wait --for=condition=established crd/widgets.gc.example.com --timeout=5s
# widget MODE: a Widget owning the CronJob MODE-cj, which owns the Job MODE-cj-1.
widget() {
    kg create -f - >/dev/null <<EOF
apiVersion: gc.example.com/v1
kind: Widget
metadata: {name: $1}
EOF
    local uid
    uid=$(kg get widget "$1" -o jsonpath='{.metadata.uid}')
    kg create -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: CronJob
metadata:
  name: $1-cj
  ownerReferences:
  - {apiVersion: gc.example.com/v1, kind: Widget, name: $1, uid: $uid, blockOwnerDeletion: true}
spec:
  schedule: "0 0 1 1 *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
EOF
    kg create job "$1-cj-1" --from=cronjob/"$1-cj" >/dev/null
}
widget wbg
check "a Widget deleted in the background" kg delete widget wbg --cascade=background
check "its CronJob and that one's Job go" gone "cronjob/wbg-cj job/wbg-cj-1"
widget wfg
check "a Widget deleted in the foreground" kg delete widget wfg --cascade=foreground
check "goes with its CronJob and Job" gone "widget/wfg cronjob/wfg-cj job/wfg-cj-1"
widget wor
check "a Widget deleted orphaning" kg delete widget wor --cascade=orphan
expect_eq "its CronJob stays, without its owner reference, its Job with its own" \
    "cronjob.batch/wor-cj  CronJob" \
    "$(kg get cronjob wor-cj -o name) $(kg get cronjob wor-cj -o jsonpath='{.metadata.ownerReferences}') $(kg get job wor-cj-1 -o jsonpath='{.metadata.ownerReferences[0].kind}')"

# ---- dangling owner references ----
kg create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: orphaned
  ownerReferences:
  - {apiVersion: batch/v1, kind: CronJob, name: nobody, uid: 00000000-0000-0000-0000-000000000001}
EOF
check "an object whose owner does not exist is deleted" gone serviceaccount/orphaned
cronjob real
kg create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: impostor
  ownerReferences:
  - {apiVersion: batch/v1, kind: CronJob, name: real, uid: 00000000-0000-0000-0000-000000000002}
EOF
check "so is one whose owner's name is another object's" gone serviceaccount/impostor
real_uid=$(kg get cronjob real -o jsonpath='{.metadata.uid}')
kg create -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: two-owners
  ownerReferences:
  - {apiVersion: batch/v1, kind: CronJob, name: real, uid: $real_uid}
  - {apiVersion: batch/v1, kind: CronJob, name: nobody, uid: 00000000-0000-0000-0000-000000000003}
EOF
check "with one owner left, only the dangling reference goes" eventually bash -c \
    "[ \"\$(kubectl -n gc get sa two-owners -o jsonpath='{.metadata.ownerReferences[*].name}')\" = real ]"

# ---- a namespace deletion ----
check "the namespace is deleted with everything in it" kc delete namespace gc --timeout=20s
expect_eq "nothing is left" "" "$(kc get namespace gc -o name 2>/dev/null)"
e2e_finish
