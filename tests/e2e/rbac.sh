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
# A certificate the client CA did not sign.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=eve \
    -keyout "$work/pki/eve.key" -out "$work/pki/eve.crt" 2>/dev/null
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

# ---- kubectl auth can-i agrees with what requests get ----
alice_can() { # VERB RESOURCE NS: kubectl auth can-i's yes or no for alice
    kubectl --token=alice-token auth can-i "$1" "$2" ${3:+-n "$3"} 2>/dev/null
}
cj='{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"probe"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}'
ns_body='{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"probe"}}'
role_body='{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"probe"},"rules":[]}'
sa_body='{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"probe"}}'
# verb resource namespace (- for none), then the request: method, path, body (a variable's
# name; writes are dry runs). A namespace's own namespace is its name, as RequestInfo has
# it: alice, an editor in team, may read the namespace team.
matrix=(
    "get cronjobs team GET /apis/batch/v1/namespaces/team/cronjobs/in-team"
    "list cronjobs team GET /apis/batch/v1/namespaces/team/cronjobs"
    "watch cronjobs team GET /apis/batch/v1/namespaces/team/cronjobs?watch=1&timeoutSeconds=1"
    "create cronjobs team POST /apis/batch/v1/namespaces/team/cronjobs?dryRun=All cj"
    "delete cronjobs team DELETE /apis/batch/v1/namespaces/team/cronjobs/in-team?dryRun=All"
    "get cronjobs other GET /apis/batch/v1/namespaces/other/cronjobs/in-other"
    "list cronjobs other GET /apis/batch/v1/namespaces/other/cronjobs"
    "create cronjobs other POST /apis/batch/v1/namespaces/other/cronjobs?dryRun=All cj"
    "list cronjobs - GET /apis/batch/v1/cronjobs"
    "get namespaces/team team GET /api/v1/namespaces/team"
    "list namespaces - GET /api/v1/namespaces"
    "create namespaces - POST /api/v1/namespaces?dryRun=All ns_body"
    "list events team GET /api/v1/namespaces/team/events"
    "list events other GET /api/v1/namespaces/other/events"
    "create roles team POST /apis/rbac.authorization.k8s.io/v1/namespaces/team/roles?dryRun=All role_body"
    "list roles team GET /apis/rbac.authorization.k8s.io/v1/namespaces/team/roles"
    "list serviceaccounts team GET /api/v1/namespaces/team/serviceaccounts"
    "create serviceaccounts team POST /api/v1/namespaces/team/serviceaccounts?dryRun=All sa_body"
    "list clustercidrs - GET /apis/networking.k8s.io/v1alpha1/clustercidrs"
    "list clusterroles - GET /apis/rbac.authorization.k8s.io/v1/clusterroles"
)
agree=0
table=""
for row in "${matrix[@]}"; do
    read -r verb res ns method path body <<<"$row"
    [ "$ns" = - ] && ns=
    said=$(alice_can "$verb" "$res" "$ns")
    got=$(curl -s --cacert "$data/ca.crt" -H 'Authorization: Bearer alice-token' -o /dev/null \
        -w '%{http_code}' -X "$method" ${body:+-H 'Content-Type: application/json' -d "${!body}"} \
        --max-time 5 "$api$path")
    actual=$([ "$got" = 403 ] && echo no || echo yes)
    table="$table $verb/$res/${ns:-*}=$said"
    if [ "$said" = "$actual" ]; then agree=$((agree + 1)); else echo "disagree: $row: can-i $said, request $got"; fi
done
expect_eq "kubectl auth can-i agrees with 20 requests' answers" 20 "$agree"
expect_eq "the matrix is what was granted" \
    " get/cronjobs/team=yes list/cronjobs/team=yes watch/cronjobs/team=yes create/cronjobs/team=yes delete/cronjobs/team=yes get/cronjobs/other=no list/cronjobs/other=no create/cronjobs/other=no list/cronjobs/*=no get/namespaces/team/team=yes list/namespaces/*=no create/namespaces/*=no list/events/team=yes list/events/other=no create/roles/team=no list/roles/team=no list/serviceaccounts/team=yes create/serviceaccounts/team=yes list/clustercidrs/*=no list/clusterroles/*=no" \
    "$table"
list=$(kubectl --token=alice-token auth can-i --list -n team 2>&1)
case $list in
*"cronjobs.batch "*"[get list watch]"*) pass "can-i --list shows the Role's rule" ;;
*) fail "can-i --list shows the Role's rule" "$(echo "$list" | head -5 | tr '\n' ' ')" ;;
esac
case $list in
*"selfsubjectaccessreviews.authorization.k8s.io"*"[create]"*) pass "can-i --list shows system:basic-user's" ;;
*) fail "can-i --list shows system:basic-user's" "$(echo "$list" | head -3 | tr '\n' ' ')" ;;
esac
expect_eq "kubectl auth whoami as alice" "alice devs,system:authenticated" \
    "$(kubectl --token=alice-token auth whoami -o json | jq -r '"\(.status.userInfo.username) \(.status.userInfo.groups | join(","))"')"
review() { kubectl create -o jsonpath="$1" -f -; }
expect_eq "a SubjectAccessReview for bob (the admin asks)" "false" \
    "$(echo '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"list","group":"batch","resource":"cronjobs","namespace":"team"}}}' | review '{.status.allowed}')"
expect_eq "its reason when allowed names the binding" \
    'true RBAC: allowed by RoleBinding "alice-reads/team" of Role "cj-reader" to User "alice"' \
    "$(echo '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"verb":"list","group":"batch","resource":"cronjobs","namespace":"team"}}}' | review '{.status.allowed} {.status.reason}')"
expect_eq "a TokenReview of alice's token" "true alice" \
    "$(echo '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice-token"}}' | review '{.status.authenticated} {.status.user.username}')"
expect_eq "reviews are answered, never stored: a list is 405" 405 \
    "$(curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer $(cat "$data/admin-token")" \
        -o /dev/null -w '%{http_code}' "$api/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")"

# ---- escalation ----
check "alice cannot make a ClusterRole granting everything" \
    sh -c "! kubectl --token=alice-token create clusterrole everything --verb='*' --resource='*'"

# ---- escalation: a namespace admin may write roles, but not grant more than it holds ----
check "alice becomes admin of team" kubectl create rolebinding alice-admin -n team --clusterrole=admin --user=alice
check "alice makes a Role within what she holds" \
    alice create role readers -n team --verb=get,list --resource=cronjobs
alice create role everything -n team --verb='*' --resource='*' >/dev/null 2>"$work/err"
expect_eq "a Role granting more is kube's escalation 403" \
    'Error from server (Forbidden): roles.rbac.authorization.k8s.io "everything" is forbidden: user "alice" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:' \
    "$(head -1 "$work/err")"
expect_eq "listing what is missing as kube does (kubectl asks for the core group)" \
    '{APIGroups:[""], Resources:["*"], Verbs:["*"]}' \
    "$(sed -n 2p "$work/err")"
alice create rolebinding to-admin -n team --clusterrole=cluster-admin --user=alice >/dev/null 2>"$work/err"
case $(cat "$work/err") in
*'rolebindings.rbac.authorization.k8s.io "to-admin" is forbidden: user "alice"'*'not currently held'*) pass "binding cluster-admin is an escalation too" ;;
*) fail "binding cluster-admin is an escalation too" "$(head -2 "$work/err" | tr '\n' ' ')" ;;
esac
check "a binding to a role she holds is fine" \
    alice create rolebinding bob-reads -n team --role=readers --user=bob
check "with the bind verb on cluster-admin she may bind it" \
    kubectl create clusterrole binder --verb=bind --resource=clusterroles --resource-name=cluster-admin
kubectl create rolebinding alice-binds -n team --clusterrole=binder --user=alice >/dev/null
check "and then binds it" alice create rolebinding to-admin -n team --clusterrole=cluster-admin --user=bob

# ---- aggregation ----
check "edit is filled by aggregation" test "$(kubectl get clusterrole edit -o jsonpath='{.rules[0].verbs}')" != ""
kubectl create clusterrole widgets-view --verb=get,list --resource=cronjobs.batch >/dev/null
kubectl label clusterrole widgets-view rbac.authorization.k8s.io/aggregate-to-view=true >/dev/null
check "a role labeled aggregate-to-view joins view" eventually sh -c \
    "kubectl get clusterrole view -o json | jq -e '.rules | map(select(.apiGroups == [\"batch\"] and .resources == [\"cronjobs\"] and .verbs == [\"get\",\"list\"])) | length == 1'"

# ---- client certificates ----
cert() { curl -s --cacert "$data/ca.crt" --cert "$work/pki/$1.crt" --key "$work/pki/$1.key" \
    -o /dev/null -w '%{http_code}' "${@:2}"; }
expect_eq "carol (system:masters) lists namespaces" 200 "$(cert carol "$api/api/v1/namespaces")"
expect_eq "dave (no group) may not" 403 "$(cert dave "$api/api/v1/namespaces")"
expect_eq "dave may read discovery (system:discovery)" 200 "$(cert dave "$api/apis")"
expect_eq "a certificate that does not verify is 401, not anonymous" 401 \
    "$(cert eve "$api/version")"
expect_eq "unless a token authenticates beside it" 200 \
    "$(cert eve -H 'Authorization: Bearer alice-token' "$api/apis")"

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
