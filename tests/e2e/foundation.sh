#!/usr/bin/env bash
# The foundation as a new user meets it: kubectl against a fresh kapi (namespaces,
# api-resources, apply/get/delete of a CronJob), persistence across a restart, and the
# Status bodies of the common errors, read with curl.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
token=$(cat "$data/admin-token")
api=https://127.0.0.1:$port
kc() { kubectl --request-timeout=10s "$@"; }
curl_code() { curl -s -o "$work/body" -w '%{http_code}' --cacert "$data/ca.crt" "$@"; }
auth=(-H "Authorization: Bearer $token")

check "kubectl get ns lists the default namespaces" bash -c "kubectl get ns -o name | grep -qx namespace/kube-system"
check "kubectl api-resources shows cronjobs" bash -c "kubectl api-resources | grep -q '^cronjobs .*cj .*batch/v1 .*true .*CronJob'"
check "kubectl api-versions shows networking.k8s.io/v1alpha1" bash -c "kubectl api-versions | grep -qx networking.k8s.io/v1alpha1"
check "kubectl create ns demo" kc create ns demo
cat >"$work/cronjob.yaml" <<'YAML'
apiVersion: batch/v1
kind: CronJob
metadata:
  name: x
  namespace: demo
  labels: {app: demo}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: main
            image: busybox:1.36
            command: ["echo", "hello"]
YAML
check "kubectl apply -f cronjob.yaml" kc apply -f "$work/cronjob.yaml"
check "kubectl get cronjobs -n demo" bash -c "kubectl get cronjobs -n demo | grep -q '^x '"
kc get cronjob x -n demo -o yaml >"$work/x.yaml" 2>&1
check "kubectl get cronjob x -o yaml has the schedule" grep -q "schedule: '\*/5 \* \* \* \*'" "$work/x.yaml"
check "kubectl apply kept the last-applied annotation" grep -q "kubectl.kubernetes.io/last-applied-configuration" "$work/x.yaml"
uid=$(kc get cronjob x -n demo -o jsonpath='{.metadata.uid}')
rv=$(kc get cronjob x -n demo -o jsonpath='{.metadata.resourceVersion}')
check "the CronJob has a uid and a resourceVersion" test -n "$uid" -a -n "$rv"
check "kubectl create ns keep" kc create ns keep

# Restart: everything created is still there, with the same uid and resourceVersion.
stop_kapi
start_kapi "$bin" "$data" "$port" || exit 1
expect_eq "uid survives a restart" "$uid" "$(kc get cronjob x -n demo -o jsonpath='{.metadata.uid}')"
expect_eq "resourceVersion survives a restart" "$rv" "$(kc get cronjob x -n demo -o jsonpath='{.metadata.resourceVersion}')"
check "namespace survives a restart" kc get ns keep
check "kubectl delete cronjob x" kc delete cronjob x -n demo
expect_eq "deleted CronJob is gone" "404" "$(curl_code "${auth[@]}" "$api/apis/batch/v1/namespaces/demo/cronjobs/x")"

# Errors are Status bodies with the right code and reason.
status_reason() { jq -r '"\(.kind) \(.code) \(.reason)"' "$work/body"; }
code=$(curl_code "$api/api/v1/namespaces")
expect_eq "no token: anonymous, 403 Forbidden" "403 Status 403 Forbidden" "$code $(status_reason)"
code=$(curl_code -H "Authorization: Bearer wrong" "$api/api/v1/namespaces")
expect_eq "wrong token: 401" "401 Status 401 Unauthorized" "$code $(status_reason)"
code=$(curl_code "${auth[@]}" "$api/apis/batch/v1/namespaces/demo/cronjobs/nope")
expect_eq "missing object: 404 NotFound" "404 Status 404 NotFound" "$code $(status_reason)"
expect_eq "404 message" 'cronjobs.batch "nope" not found' "$(jq -r .message "$work/body")"
code=$(curl_code "${auth[@]}" -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"}}' "$api/api/v1/namespaces")
expect_eq "duplicate: 409 AlreadyExists" "409 Status 409 AlreadyExists" "$code $(status_reason)"
code=$(curl_code "${auth[@]}" -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"Bad_Name"}}' "$api/api/v1/namespaces")
expect_eq "bad name: 422 Invalid" "422 Status 422 Invalid" "$code $(status_reason)"
expect_eq "422 names the field" "metadata.name" "$(jq -r '.details.causes[0].field' "$work/body")"
code=$(curl_code "${auth[@]}" -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"y","namespace":"other"}}' \
    "$api/apis/batch/v1/namespaces/demo/cronjobs")
expect_eq "namespace mismatch: 400 BadRequest" "400 Status 400 BadRequest" "$code $(status_reason)"
code=$(curl_code "${auth[@]}" -X POST -H 'Content-Type: application/json' -d '{"apiVersion":' \
    "$api/apis/batch/v1/namespaces/demo/cronjobs")
expect_eq "malformed JSON: 400 BadRequest" "400 Status 400 BadRequest" "$code $(status_reason)"
code=$(curl_code "${auth[@]}" -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"y"}}' \
    "$api/apis/batch/v1/namespaces/missing/cronjobs")
expect_eq "missing namespace: 404 naming it" '404 namespaces "missing" not found' "$code $(jq -r .message "$work/body")"
head -c $((3 * 1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$work/big"
code=$(curl_code "${auth[@]}" -X POST -H 'Content-Type: application/json' --data-binary @"$work/big" \
    "$api/api/v1/namespaces")
expect_eq "body over 3 MiB: 413" "413 Status 413 RequestEntityTooLarge" "$code $(status_reason)"
expect_eq "the 413 names the limit the http layer applied" \
    "Request entity too large: limit is 3145728" "$(jq -r .message "$work/body")"
expect_eq "/readyz answers ok" "ok" "$(curl -s --cacert "$data/ca.crt" "$api/readyz")"
e2e_finish
