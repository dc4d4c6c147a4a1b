#!/usr/bin/env bash
# Server-side apply and managedFields as a kubectl user meets them (issue 14):
# `kubectl apply --server-side` creates and updates a CronJob, a ClusterCIDR, a Namespace
# and a custom resource; two managers share an object; a conflicting apply fails naming
# the field and the manager, --force-conflicts takes it; a field dropped from the applied
# file leaves the object; client-side `kubectl apply` then --server-side migrates without
# conflicts; `kubectl get --show-managed-fields` shows the entries; the Python client's
# dynamic server_side_apply applies a CronJob and a custom resource.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }
f=$work/f.yaml

# cronjob NAME SCHEDULE [EXTRA-LABEL-LINES]: a suspended CronJob manifest.
cronjob() {
    cat <<EOF
apiVersion: batch/v1
kind: CronJob
metadata:
  name: $1
  labels:
    app: applied
${3:-}
spec:
  schedule: "$2"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: main
            image: busybox
EOF
}
get() { kc get "$1" "$2" ${3:+-n "$3"} -o "jsonpath=$4" 2>&1; }
# managers KIND NAME [NS]: "manager/operation" of each managedFields entry, sorted.
managers() {
    kc get "$1" "$2" ${3:+-n "$3"} -o json --show-managed-fields |
        jq -r '[.metadata.managedFields[] | .manager + "/" + .operation] | sort | join(" ")'
}

kc create ns ap >/dev/null

# ---- a CronJob: create, re-apply, two managers, conflict, force, removal ----
cronjob cj "0 3 29 2 *" "    team: a" >"$f"
expect_eq "apply --server-side creates a CronJob" "cronjob.batch/cj serverside-applied" \
    "$(kc apply --server-side -n ap -f "$f" 2>&1)"
expect_eq "its managedFields entry is kubectl's Apply" "kubectl/Apply" "$(managers cronjob cj ap)"
rv=$(get cronjob cj ap '{.metadata.resourceVersion}')
kc apply --server-side -n ap -f "$f" >/dev/null
expect_eq "re-applying the same file changes nothing (resourceVersion kept)" "$rv" \
    "$(get cronjob cj ap '{.metadata.resourceVersion}')"
kc get cronjob cj -n ap -o yaml --show-managed-fields >"$work/cj.yaml"
check "get -o yaml --show-managed-fields shows the owned fields" \
    grep -q 'f:schedule: {}' "$work/cj.yaml"
check "get -o yaml hides managedFields without --show-managed-fields" \
    sh -c "! kubectl get cronjob cj -n ap -o yaml | grep -q managedFields"

cat >"$work/b.yaml" <<EOF
apiVersion: batch/v1
kind: CronJob
metadata:
  name: cj
  labels:
    owner: b
EOF
kc apply --server-side --field-manager=b -n ap -f "$work/b.yaml" >/dev/null
expect_eq "a second manager adds its own label" "applied b" \
    "$(get cronjob cj ap '{.metadata.labels.app} {.metadata.labels.owner}')"
expect_eq "both managers have an entry" "b/Apply kubectl/Apply" "$(managers cronjob cj ap)"

cronjob cj "30 3 29 2 *" "    owner: b" >"$work/c.yaml"
kc apply --server-side --field-manager=b -n ap -f "$work/c.yaml" >"$work/out" 2>&1
check "a conflicting apply fails naming the field and the manager" \
    grep -q 'conflict with "kubectl": .spec.schedule' "$work/out"
expect_eq "the conflicting apply changed nothing" "0 3 29 2 *" \
    "$(get cronjob cj ap '{.spec.schedule}')"
kc apply --server-side --field-manager=b --force-conflicts -n ap -f "$work/c.yaml" >/dev/null
expect_eq "--force-conflicts takes the field" "30 3 29 2 *" "$(get cronjob cj ap '{.spec.schedule}')"
expect_eq "kubectl no longer owns the schedule" "" \
    "$(kc get cronjob cj -n ap -o json --show-managed-fields |
        jq -r '.metadata.managedFields[] | select(.manager=="kubectl") | .fieldsV1["f:spec"]["f:schedule"] // empty')"

cronjob cj "0 3 29 2 *" >"$f" # kubectl's file without the team label
kc apply --server-side -n ap -f "$f" >/dev/null 2>&1 ||
    kc apply --server-side --force-conflicts -n ap -f "$f" >/dev/null
expect_eq "a label dropped from the applied file leaves the object" "" \
    "$(get cronjob cj ap '{.metadata.labels.team}')"
expect_eq "a label another manager still applies stays" "b" \
    "$(get cronjob cj ap '{.metadata.labels.owner}')"

# ---- a Namespace, a ClusterCIDR ----
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ap-ns\n  labels:\n    x: "1"\n' >"$f"
expect_eq "apply --server-side creates a Namespace" "namespace/ap-ns serverside-applied" \
    "$(kc apply --server-side -f "$f" 2>&1)"
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ap-ns\n  labels:\n    x: "2"\n' >"$f"
kc apply --server-side -f "$f" >/dev/null
expect_eq "and updates it" "2" "$(get namespace ap-ns '' '{.metadata.labels.x}')"
cat >"$f" <<EOF
apiVersion: networking.k8s.io/v1alpha1
kind: ClusterCIDR
metadata:
  name: ap-cc
spec:
  perNodeHostBits: 8
  ipv4: 10.120.0.0/16
EOF
expect_eq "apply --server-side creates a ClusterCIDR" \
    "clustercidr.networking.k8s.io/ap-cc serverside-applied" "$(kc apply --server-side -f "$f" 2>&1)"
sed -i 's|10.120.0.0/16|10.121.0.0/16|' "$f"
check "re-applying an immutable field is refused as an update is" \
    sh -c "kubectl apply --server-side -f '$f' 2>&1 | grep -q 'field is immutable'"

# ---- a custom resource ----
cat >"$f" <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.ap.example.com
spec:
  group: ap.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
EOF
kc apply --server-side -f "$f" >/dev/null
kc wait --for=condition=Established crd/gadgets.ap.example.com --timeout=10s >/dev/null
printf 'apiVersion: ap.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: M\n  ports:\n  - {name: http, port: 80}\n' >"$f"
expect_eq "apply --server-side creates a custom resource" \
    "gadget.ap.example.com/g serverside-applied" "$(kc apply --server-side -n ap -f "$f" 2>&1)"
printf 'apiVersion: ap.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  ports:\n  - {name: metrics, port: 9090}\n' >"$work/g2.yaml"
kc apply --server-side --field-manager=other -n ap -f "$work/g2.yaml" >/dev/null
expect_eq "a second manager's list-map entry merges by key" "http metrics" \
    "$(get gadget g ap '{.spec.ports[*].name}')"

# ---- client-side apply, then server-side ----
cronjob csa "0 3 29 2 *" >"$f"
kc apply -n ap -f "$f" >/dev/null
expect_eq "client-side apply records kubectl-client-side-apply" "kubectl-client-side-apply/Update" \
    "$(managers cronjob csa ap)"
cronjob csa "15 3 29 2 *" >"$f"
expect_eq "then --server-side takes over without a conflict" \
    "cronjob.batch/csa serverside-applied" "$(kc apply --server-side -n ap -f "$f" 2>&1)"
expect_eq "the schedule changed" "15 3 29 2 *" "$(get cronjob csa ap '{.spec.schedule}')"
check "the last-applied annotation follows the server-side apply" \
    sh -c "kubectl get cronjob csa -n ap -o jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}' | grep -q '15 3 29 2'"

# ---- the Python client's server_side_apply ----
# Debian's client (22.6) sends a body other than JSON only when it is already text, so
# the configuration goes as a JSON string, with its name.
out=$(/usr/bin/python3 - "$KUBECONFIG" <<'EOF' 2>&1
import json
import sys
from kubernetes import config, dynamic
from kubernetes.client import api_client
dyn = dynamic.DynamicClient(api_client.ApiClient(configuration=config.load_kube_config(sys.argv[1])))
cj = dyn.resources.get(api_version="batch/v1", kind="CronJob")
body = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "py"},
        "spec": {"schedule": "0 3 29 2 *", "suspend": True, "jobTemplate": {"spec": {"template": {
            "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "main", "image": "busybox"}]}}}}}}
r = cj.server_side_apply(body=json.dumps(body), name="py", namespace="ap", field_manager="py")
print("cronjob", r.spec.schedule, r.metadata.managedFields[0].manager, r.metadata.managedFields[0].operation)
g = dyn.resources.get(api_version="ap.example.com/v1", kind="Gadget")
r = g.server_side_apply(body=json.dumps({"apiVersion": "ap.example.com/v1", "kind": "Gadget",
                                         "metadata": {"name": "pyg"}, "spec": {"size": "L"}}),
                        name="pyg", namespace="ap", field_manager="py")
print("gadget", r.spec.size, r.metadata.managedFields[0].manager)
EOF
)
expect_eq "the Python client applies a CronJob and a custom resource" \
    "cronjob 0 3 29 2 * py Apply
gadget L py" "$out"

e2e_finish
