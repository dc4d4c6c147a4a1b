#!/usr/bin/env bash
# Jobs (batch/v1) as a kubectl user meets them: discovery, kubectl create job with an
# image and --from=cronjob/X (the owner reference and the instantiate annotation), the
# generated selector and labels, the table of kubectl get -o wide, completion reported
# by a client through /status (kapi runs no Pods), kubectl wait and describe, the
# status.successful field selector, kube's 422s for a bad selector and a template
# change, kubectl explain, and delete. Each expectation was checked against
# kube-apiserver 1.26 with the same kubectl (the one known difference, the value shown
# for an immutable template, is not checked).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
# The cronjob controller is off (lib.sh): the CronJob here must not create Jobs of its own.
e2e_setup "$1"
start_kapi "$bin" "$data" "$port" || exit 1
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=10s "$@"; }

expect_eq "api-resources: jobs, namespaced, no short name" \
    "jobs batch/v1 true Job" \
    "$(kc api-resources --api-group=batch --no-headers | awk '$1=="jobs"{print $1, $2, $3, $4}')"
expect_eq "jobs are in the category all" "all" \
    "$(kc get --raw /apis/batch/v1 | python3 -c 'import json,sys; print(*[",".join(r["categories"]) for r in json.load(sys.stdin)["resources"] if r["name"]=="jobs"])')"

kc create namespace e2e >/dev/null
kj() { kc -n e2e "$@"; }
check "kubectl create cronjob" kj create cronjob hello --image=busybox --schedule='*/5 * * * *' -- echo hi
expect_eq "kubectl create job --image" "job.batch/pi created" \
    "$(kj create job pi --image=perl:5.34 -- perl -e 'print 1')"
expect_eq "kubectl create job --from=cronjob/hello" "job.batch/manual created" \
    "$(kj create job manual --from=cronjob/hello)"
expect_eq "the Job from the CronJob is owned by it and marked manual" \
    "CronJob/hello true manual" \
    "$(kj get job manual -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller} {.metadata.annotations.cronjob\.kubernetes\.io/instantiate}')"
uid=$(kj get job pi -o jsonpath='{.metadata.uid}')
expect_eq "the selector and the labels are generated from the uid and the name" \
    "$uid $uid pi $uid pi" \
    "$(kj get job pi -o jsonpath='{.spec.selector.matchLabels.controller-uid} {.spec.template.metadata.labels.controller-uid} {.spec.template.metadata.labels.job-name} {.metadata.labels.controller-uid} {.metadata.labels.job-name}')"
expect_eq "defaults: completions, parallelism, backoffLimit, completionMode, suspend" \
    "1 1 6 NonIndexed false" \
    "$(kj get job pi -o jsonpath='{.spec.completions} {.spec.parallelism} {.spec.backoffLimit} {.spec.completionMode} {.spec.suspend}')"
# Before a Job starts its DURATION is empty, so its row has one field less.
expect_eq "kubectl get jobs -o wide: the columns and cells" \
    "NAME COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR|manual 0/1 hello busybox controller-uid=|pi 0/1 pi perl:5.34 controller-uid=$uid" \
    "$(kj get jobs -o wide | awk 'NR==1{o=$1" "$2" "$3" "$4" "$5" "$6" "$7} NR>1{s=$6; if ($1=="manual") sub(/=.*/, "=", s); o=o"|"$1" "$2" "$4" "$5" "s} END{print o}')"

# Completion is reported through /status, as a Job controller (or a simulation) does.
check "a client reports completion through /status" \
    kj patch job pi --subresource=status --type=merge \
    -p '{"status":{"startTime":"2024-01-01T00:00:00Z","completionTime":"2024-01-01T00:02:30Z","succeeded":1,"conditions":[{"type":"Complete","status":"True","lastProbeTime":"2024-01-01T00:02:30Z","lastTransitionTime":"2024-01-01T00:02:30Z"}]}}'
expect_eq "kubectl get job: COMPLETIONS and DURATION" "pi 1/1 2m30s" \
    "$(kj get job pi --no-headers | awk '{print $1, $2, $3}')"
check "kubectl wait --for=condition=complete" kj wait --for=condition=complete job/pi --timeout=5s
expect_eq "kubectl describe job: times and pod counts" \
    "Start Time:       Mon, 01 Jan 2024 00:00:00 +0000|Completed At:     Mon, 01 Jan 2024 00:02:30 +0000|Duration:         2m30s|Pods Statuses:    0 Active / 1 Succeeded / 0 Failed" \
    "$(kj describe job pi | grep -E '^(Start Time|Completed At|Duration|Pods Statuses):' | paste -sd'|')"
expect_eq "a status write keeps the spec" "1" \
    "$(kj patch job pi --subresource=status --type=merge -p '{"spec":{"parallelism":5}}' -o jsonpath='{.spec.parallelism}')"
expect_eq "fieldSelector status.successful" "job.batch/pi" \
    "$(kj get jobs --field-selector status.successful=1 -o name)"
expect_eq "fieldSelector status.successful=0 reads an absent count as 0" "job.batch/manual" \
    "$(kj get jobs --field-selector status.successful=0 -o name)"
refuses "another field label is refused in the words of the Job conversion" \
    'field label "spec.x" not supported for Job' kj get jobs --field-selector spec.x=1

# Validation, with kube's paths and messages.
refuses "a manual selector must match the template's labels" \
    'The Job "sel" is invalid: spec.template.metadata.labels: Invalid value: map\[string\]string\{"a":"b"\}: `selector` does not match template `labels`' \
    kj create -f - <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: sel}
spec:
  manualSelector: true
  selector: {matchLabels: {a: c}}
  template:
    metadata: {labels: {a: b}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
YAML
refuses "restartPolicy Always is refused" \
    'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"' \
    kj create -f - <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: always}
spec:
  template:
    spec:
      restartPolicy: Always
      containers: [{name: c, image: busybox}]
YAML
refuses "the template is immutable" 'The Job "pi" is invalid: spec.template: Invalid value: .*: field is immutable' \
    kj patch job pi --type=merge -p '{"spec":{"template":{"spec":{"containers":[{"name":"pi","image":"perl:5.36"}]}}}}'
refuses "completions are immutable" \
    'The Job "pi" is invalid: spec.completions: Invalid value: 3: field is immutable' \
    kj patch job pi --type=merge -p '{"spec":{"completions":3}}'
expect_eq "parallelism may change, and the generation moves on" "2 2" \
    "$(kj patch job pi --type=merge -p '{"spec":{"parallelism":2}}' -o jsonpath='{.spec.parallelism} {.metadata.generation}')"

expect_eq "kubectl explain jobs.spec" "KIND:       Job|FIELD: spec <JobSpec>" \
    "$(kc explain jobs.spec | grep -E '^(KIND|FIELD):' | paste -sd'|')"
expect_eq "kubectl explain jobs.status.succeeded is an integer" "FIELD: succeeded <integer>" \
    "$(kc explain jobs.status.succeeded | grep -E '^FIELD:')"

expect_eq "kubectl delete job" 'job.batch "pi" deleted|job.batch "manual" deleted' \
    "$(kj delete job pi manual | paste -sd'|')"
expect_eq "no Job is left" "" "$(kj get jobs -o name)"
e2e_finish
