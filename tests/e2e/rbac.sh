#!/usr/bin/env bash
# RBAC (issue 16), tried as a new user would: the admin gives alice (a token user) the
# reading of CronJobs in one namespace; alice can there and nowhere else, cannot create,
# cannot escalate; a client certificate in system:masters is admin, one without is not;
# anonymous reads /version and /healthz only; impersonation needs the impersonate verb;
# the bootstrap roles are there; --authorization-mode=AlwaysAllow lets everyone in.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
mkdir -p "$work/pki"
cat >"$work/tokens.csv" <<'EOF'
alice-token,alice,1001,"devs"
bob-token,bob,1002,
EOF
# A client CA and two users: carol in system:masters, dave in no group.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=e2e-ca \
    -keyout "$work/pki/ca.key" -out "$work/pki/ca.crt" 2>/dev/null
client_cert() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" \
        -keyout "$work/pki/$1.key" -out "$work/pki/$1.csr" 2>/dev/null
    openssl x509 -req -in "$work/pki/$1.csr" -CA "$work/pki/ca.crt" -CAkey "$work/pki/ca.key" \
        -CAcreateserial -days 2 -out "$work/pki/$1.crt" 2>/dev/null
}
client_cert carol "/O=system:masters/CN=carol"
client_cert dave "/CN=dave"
start_kapi "$bin" "$data" "$port" --token-auth-file "$work/tokens.csv" \
    --client-ca-file "$work/pki/ca.crt" || exit 1
export KUBECONFIG=$data/kubeconfig
api=https://127.0.0.1:$port
as_token() { kubectl --token="$1" "${@:2}"; }
alice() { as_token alice-token "$@"; }
code() { curl -s --cacert "$data/ca.crt" -o "$work/body" -w '%{http_code}' "$@"; }

# ---- the bootstrap policy ----
expect_eq "the bootstrap ClusterRoles are there" \
    "admin cluster-admin edit system:discovery system:public-info-viewer view" \
    "$(kubectl get clusterroles -o name | sed 's|.*/||' |
       grep -xE 'admin|cluster-admin|edit|view|system:discovery|system:public-info-viewer' | paste -sd' ')"
expect_eq "cluster-admin is bound to system:masters" "Group system:masters" \
    "$(kubectl get clusterrolebinding cluster-admin -o jsonpath='{.subjects[0].kind} {.subjects[0].name}')"

# ---- a namespace for alice ----
kubectl create namespace team >/dev/null
kubectl create namespace other >/dev/null
kubectl create cronjob in-team -n team --image=busybox --schedule='*/5 * * * *' >/dev/null
kubectl create cronjob in-other -n other --image=busybox --schedule='*/5 * * * *' >/dev/null
check "no access yet: alice cannot list in team" \
    sh -c "! kubectl --token=alice-token get cronjobs -n team 2>$work/err"
expect_eq "the 403 is kube's" \
    'Error from server (Forbidden): cronjobs.batch is forbidden: User "alice" cannot list resource "cronjobs" in API group "batch" in the namespace "team"' \
    "$(cat "$work/err")"
check "the admin makes a Role" kubectl create role cj-reader -n team --verb=get,list,watch --resource=cronjobs
check "and binds alice to it" kubectl create rolebinding alice-reads -n team --role=cj-reader --user=alice
expect_eq "alice lists CronJobs in team" "in-team" \
    "$(alice get cronjobs -n team -o jsonpath='{.items[*].metadata.name}')"
expect_eq "alice gets one by name" "in-team" \
    "$(alice get cronjob in-team -n team -o jsonpath='{.metadata.name}')"
check "alice cannot list in other" sh -c "! kubectl --token=alice-token get cronjobs -n other"
check "alice cannot list across namespaces" sh -c "! kubectl --token=alice-token get cronjobs -A"
check "alice cannot create in team" \
    sh -c "! kubectl --token=alice-token create cronjob x -n team --image=busybox --schedule='@daily'"
check "alice cannot delete in team" sh -c "! kubectl --token=alice-token delete cronjob in-team -n team"
check "alice cannot read namespaces" sh -c "! kubectl --token=alice-token get namespaces"
check "a group binding works: devs may create in team" \
    kubectl create rolebinding devs-edit -n team --clusterrole=edit --group=devs
check "alice (in devs) now creates in team" \
    alice create cronjob by-alice -n team --image=busybox --schedule='@daily'
check "bob (not in devs) still cannot" \
    sh -c "! kubectl --token=bob-token get cronjobs -n team"

# ---- escalation ----
check "alice cannot make a ClusterRole granting everything" \
    sh -c "! kubectl --token=alice-token create clusterrole everything --verb='*' --resource='*'"

# ---- client certificates ----
cert() { curl -s --cacert "$data/ca.crt" --cert "$work/pki/$1.crt" --key "$work/pki/$1.key" \
    -o /dev/null -w '%{http_code}' "${@:2}"; }
expect_eq "carol (system:masters) lists namespaces" 200 "$(cert carol "$api/api/v1/namespaces")"
expect_eq "dave (no group) may not" 403 "$(cert dave "$api/api/v1/namespaces")"
expect_eq "dave may read discovery (system:discovery)" 200 "$(cert dave "$api/apis")"

# ---- anonymous ----
for p in /version /healthz /livez /readyz; do
    expect_eq "anonymous GET $p" 200 "$(code "$api$p")"
done
expect_eq "anonymous GET /apis is forbidden" 403 "$(code "$api/apis")"
expect_eq "anonymous list of namespaces is forbidden" 403 "$(code "$api/api/v1/namespaces")"
expect_eq "its Status names system:anonymous" \
    'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope' \
    "$(jq -r .message "$work/body")"
expect_eq "a bad token is 401, not anonymous" 401 \
    "$(code -H 'Authorization: Bearer nope' "$api/version")"

# ---- impersonation ----
check "alice cannot act as the admin" sh -c "! kubectl --token=alice-token --as=admin get ns 2>$work/err"
expect_eq "the 403 names the impersonate verb" \
    'Error from server (Forbidden): users "admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope' \
    "$(cat "$work/err")"
expect_eq "the admin acts as alice" "in-team" \
    "$(kubectl --as=alice get cronjob in-team -n team -o jsonpath='{.metadata.name}')"
check "and is then alice: other is closed" sh -c "! kubectl --as=alice get cronjobs -n other"
expect_eq "a group without a user is kube's 500" 500 \
    "$(code -H "Authorization: Bearer $(cat "$data/admin-token")" -H 'Impersonate-Group: devs' "$api/api")"
check "a user may be given the impersonate verb" \
    kubectl create clusterrole impersonator --verb=impersonate --resource=users
check "bound to bob" kubectl create clusterrolebinding bob-impersonates --clusterrole=impersonator --user=bob
expect_eq "bob acts as alice" "in-team" \
    "$(as_token bob-token --as=alice get cronjob in-team -n team -o jsonpath='{.metadata.name}')"

stop_kapi

# ---- AlwaysAllow ----
start_kapi "$bin" "$data" "$port" --token-auth-file "$work/tokens.csv" \
    --authorization-mode AlwaysAllow || exit 1
expect_eq "AlwaysAllow: bob lists namespaces" 200 \
    "$(code -H 'Authorization: Bearer bob-token' "$api/api/v1/namespaces")"
stop_kapi
start_kapi "$bin" "$data" "$port" --anonymous-auth=false || exit 1
expect_eq "--anonymous-auth=false: /version without credentials is 401" 401 "$(code "$api/version")"

e2e_finish
