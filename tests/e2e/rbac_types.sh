#!/usr/bin/env bash
# The four RBAC types (rbac.authorization.k8s.io/v1) as a kubectl user meets them: the
# kubectl create role / clusterrole / rolebinding / clusterrolebinding generators, the
# tables of kubectl get (wide included), describe, the defaults of -o yaml, invalid
# objects refused with kube's messages, a roleRef that cannot change, set subject, watch,
# and kubectl auth reconcile. Who may do what is not checked here: that is the
# authorizer's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }

check "api-resources lists the four types without short names" sh -c \
    "kubectl api-resources --api-group=rbac.authorization.k8s.io --no-headers |
     awk '{print \$1, \$2, \$3, \$4}' | tr '\n' ';' |
     grep -qx 'clusterrolebindings rbac.authorization.k8s.io/v1 false ClusterRoleBinding;clusterroles rbac.authorization.k8s.io/v1 false ClusterRole;rolebindings rbac.authorization.k8s.io/v1 true RoleBinding;roles rbac.authorization.k8s.io/v1 true Role;'"

kc create namespace team >/dev/null
check "kubectl create role" kc -n team create role reader --verb=get,list,watch \
    --resource=cronjobs.batch,cronjobs.batch/status,events --resource-name=nightly
check "kubectl create clusterrole with a non-resource URL" kc create clusterrole probe \
    --verb=get --non-resource-url=/healthz --non-resource-url='/metrics*'
check "kubectl create clusterrole with an aggregation rule" kc create clusterrole monitoring \
    --aggregation-rule=rbac.example.com/aggregate-to-monitoring=true
check "kubectl create rolebinding" kc -n team create rolebinding readers --role=reader \
    --user=alice --user=bob --group=devs --serviceaccount=team:builder
check "kubectl create rolebinding to a ClusterRole" kc -n team create rolebinding viewers \
    --clusterrole=view --serviceaccount=other:sa
check "kubectl create clusterrolebinding" kc create clusterrolebinding probers \
    --clusterrole=probe --user=carol --group=ops --serviceaccount=team:builder

expect_eq "a Role reads back as created, a rule per API group" \
    ':events:nightly:get,list,watch;batch:cronjobs,cronjobs/status:nightly:get,list,watch;' \
    "$(kc -n team get role reader -o go-template='{{range .rules}}{{index .apiGroups 0}}:{{range $i, $r := .resources}}{{if $i}},{{end}}{{$r}}{{end}}:{{index .resourceNames 0}}:{{range $i, $v := .verbs}}{{if $i}},{{end}}{{$v}}{{end}};{{end}}')"
expect_eq "the aggregated ClusterRole has null rules and its selector" \
    'null {"clusterRoleSelectors":[{"matchLabels":{"rbac.example.com/aggregate-to-monitoring":"true"}}]}' \
    "$(kc get clusterrole monitoring -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["rules"]), json.dumps(d["aggregationRule"], separators=(",", ":")))')"
expect_eq "subjects' apiGroups defaulted by kind" \
    'User/rbac.authorization.k8s.io/alice User/rbac.authorization.k8s.io/bob Group/rbac.authorization.k8s.io/devs ServiceAccount//builder/team rbac.authorization.k8s.io' \
    "$(kc -n team get rolebinding readers -o go-template='{{range .subjects}}{{.kind}}/{{if .apiGroup}}{{.apiGroup}}{{end}}/{{.name}}{{with .namespace}}/{{.}}{{end}} {{end}}{{.roleRef.apiGroup}}')"

# The tables, as kube-apiserver 1.26 prints them.
expect_eq "kubectl get roles: NAME and CREATED AT" "NAME CREATED AT|reader" \
    "$(kc -n team get roles | awk 'NR==1{h=$1" "$2" "$3} NR==2{r=$1} END{print h"|"r}')"
expect_eq "kubectl get rolebindings: NAME, ROLE, AGE" \
    "NAME ROLE AGE|readers Role/reader|viewers ClusterRole/view" \
    "$(kc -n team get rolebindings | awk 'NR==1{o=$1" "$2" "$3} NR>1{o=o"|"$1" "$2} END{print o}')"
expect_eq "kubectl get rolebindings -o wide: the subjects by kind" \
    "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS|readers Role/reader alice, bob devs team/builder" \
    "$(kc -n team get rolebinding readers -o wide | sed -E 's/  +/ /g; s/ [0-9]+[smhd] / /' | tr '\n' '|' | sed 's/|$//')"
expect_eq "kubectl get clusterrolebinding -o wide" \
    "probers ClusterRole/probe carol ops team/builder" \
    "$(kc get clusterrolebinding probers -o wide --no-headers | sed -E 's/  +/ /g; s/ [0-9]+[smhd] / /')"
expect_eq "an empty subject kind column is blank" "viewers ClusterRole/view other/sa" \
    "$(kc -n team get rolebinding viewers -o wide --no-headers | sed -E 's/  +/ /g; s/ [0-9]+[smhd] / /')"
check "kubectl describe rolebinding lists the subjects" sh -c \
    "kubectl -n team describe rolebinding readers | grep -qE '^  ServiceAccount +builder +team\$'"
check "kubectl describe clusterrole shows the non-resource URLs" sh -c \
    "kubectl describe clusterrole probe | grep -qE '^ +\\[/healthz\\] +\\[\\] +\\[get\\]\$'"
check "field selector on the name" sh -c \
    "kubectl get clusterrolebindings --field-selector metadata.name=probers -o name | grep -qx clusterrolebinding.rbac.authorization.k8s.io/probers"
refuses "an unknown field label is refused as kube words it" \
    '"roleRef.name" is not a known field selector: only "metadata.name", "metadata.namespace"' \
    kc get clusterrolebindings --field-selector roleRef.name=probe

# Invalid objects, refused with kube's field paths and messages.
yaml() { printf '%s\n' "$@" >"$work/obj.yaml"; }
yaml 'apiVersion: rbac.authorization.k8s.io/v1' 'kind: Role' 'metadata: {name: bad, namespace: team}' \
    'rules:' '- nonResourceURLs: [/healthz]'
refuses "a Role's rule needs verbs and cannot name URLs" \
    'rules\[0\].verbs: Required value: verbs must contain at least one value \* rules\[0\].nonResourceURLs: Invalid value: \[\]string\{"/healthz"\}: namespaced rules cannot apply to non-resource URLs' \
    kc create -f "$work/obj.yaml"
yaml 'apiVersion: rbac.authorization.k8s.io/v1' 'kind: ClusterRole' 'metadata: {name: bad}' \
    'rules:' '- verbs: [get]' '  resources: [cronjobs]'
refuses "a resource rule needs apiGroups" \
    'rules\[0\].apiGroups: Required value: resource rules must supply at least one api group' \
    kc create -f "$work/obj.yaml"
yaml 'apiVersion: rbac.authorization.k8s.io/v1' 'kind: ClusterRole' 'metadata: {name: bad}' \
    'aggregationRule: {clusterRoleSelectors: []}'
refuses "an aggregationRule needs selectors" \
    'aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil' \
    kc create -f "$work/obj.yaml"
yaml 'apiVersion: rbac.authorization.k8s.io/v1' 'kind: ClusterRoleBinding' 'metadata: {name: bad}' \
    'roleRef: {kind: Role, name: reader}' 'subjects:' '- {kind: ServiceAccount, name: sa}' \
    '- {kind: Robot, name: r2}'
refuses "a ClusterRoleBinding binds ClusterRoles and namespaced ServiceAccounts" \
    'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole" \* subjects\[0\].namespace: Required value \* subjects\[1\].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"' \
    kc create -f "$work/obj.yaml"
refuses "a service account named as no DNS subdomain" \
    'subjects\[0\].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain' \
    kc -n team create rolebinding bad --role=reader --serviceaccount=team:Bad_Name
refuses "a name with a '%'" 'metadata.name: Invalid value: "a%b": may not contain' \
    kc -n team create role 'a%b' --verb=get --resource=events
check "a name with ':' is an RBAC name" kc -n team create role 'system:reader' --verb=get \
    --resource=events

# A binding's roleRef never changes; its subjects do.
refuses "roleRef cannot change" \
    'roleRef: Invalid value: rbac.RoleRef\{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"\}: cannot change roleRef' \
    kc -n team patch rolebinding readers --type=merge -p '{"roleRef":{"name":"other"}}'
check "kubectl set subject adds a user" kc -n team set subject rolebinding readers --user=dave
expect_eq "the new user is listed" "alice, bob, dave" \
    "$(kc -n team get rolebinding readers -o wide --no-headers | sed -E 's/  +/|/g' | cut -d'|' -f4)"

# A watch sees a binding come and go.
kc -n team get rolebindings --watch-only -o name >"$work/watch" 2>&1 &
watcher=$!
sleep 1
kc -n team create rolebinding watched --clusterrole=view --group=g >/dev/null
kc -n team delete rolebinding watched >/dev/null
sleep 1
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
expect_eq "kubectl get --watch sees the create and the delete" \
    "rolebinding.rbac.authorization.k8s.io/watched rolebinding.rbac.authorization.k8s.io/watched" \
    "$(tr '\n' ' ' <"$work/watch" | sed 's/ $//')"

# kubectl auth reconcile creates what is missing and merges rules into what exists.
cat >"$work/reconcile.yaml" <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: team}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reconciled, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: User, name: erin}
EOF
check "kubectl auth reconcile" kc auth reconcile -f "$work/reconcile.yaml"
expect_eq "reconcile added the missing rule to the Role" "3" \
    "$(kc -n team get role reader -o go-template='{{len .rules}}')"
expect_eq "reconcile created the binding" "Role/reader erin" \
    "$(kc -n team get rolebinding reconciled -o wide --no-headers | sed -E 's/  +/|/g' | cut -d'|' -f2,4 | tr '|' ' ')"

check "kubectl delete of each type" kc -n team delete role reader
check "kubectl delete clusterrole, clusterrolebinding" kc delete clusterrole probe monitoring
check "kubectl delete clusterrolebinding" kc delete clusterrolebinding probers
e2e_finish
