#!/usr/bin/env bash
# ServiceAccounts and their tokens as a user meets them: the "default" account in every
# namespace, `kubectl create serviceaccount` and `kubectl create token` (audience and
# duration honoured), the token used with curl, kubectl and the Python client, a bad,
# tampered, expired or orphaned token refused with 401, the OpenID discovery documents,
# the signing key kept across a restart, and the --service-account-* flags.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
url=https://127.0.0.1:$port
cacert=$data/ca.crt

# The JSON of part N (1 header, 2 claims) of a token.
part() { echo "$1" | cut -d. -f"$2" | tr '_-' '/+' | base64 -d 2>/dev/null; }
# The status of GET path with a bearer token.
status_as() { curl -s -o /dev/null -w '%{http_code}' --cacert "$cacert" -H "Authorization: Bearer $1" "$url$2"; }

expect_eq "the signing key is made in the data dir, private" 600 "$(stat -c %a "$data/sa.key")"
for ns in default kube-system kube-public kube-node-lease; do
    check "$ns has a default ServiceAccount" eventually kubectl -n "$ns" get sa default
done
kubectl create namespace team-a >/dev/null
check "a new namespace gets a default ServiceAccount" eventually kubectl -n team-a get serviceaccount default
expect_eq "kubectl create serviceaccount" "serviceaccount/robot created" \
    "$(kubectl -n team-a create serviceaccount robot 2>&1)"
# What the account may do is RBAC's: the view role everywhere.
kubectl create clusterrolebinding robot-views --clusterrole=view --serviceaccount=team-a:robot >/dev/null
table=$(kubectl -n team-a get sa 2>&1)
expect_eq "kubectl get sa: its columns" "NAME SECRETS AGE" "$(echo "$table" | head -1 | tr -s ' ')"
expect_eq "kubectl get sa: default and robot, no secrets" "default 0 robot 0" \
    "$(echo "$table" | tail -n +2 | awk '{printf "%s%s %s", (NR > 1 ? " " : ""), $1, $2}')"
kubectl -n team-a delete sa default >/dev/null
check "a deleted default ServiceAccount comes back" eventually kubectl -n team-a get sa default

token=$(kubectl -n team-a create token robot 2>&1)
header=$(part "$token" 1)
claims=$(part "$token" 2)
expect_eq "the token's header: ES256 (the generated key) and a kid" "ES256 43" \
    "$(echo "$header" | jq -r '"\(.alg) \(.kid | length)"')"
expect_eq "the token's subject and account" "system:serviceaccount:team-a:robot team-a robot" \
    "$(echo "$claims" | jq -r '"\(.sub) \(."kubernetes.io".namespace) \(."kubernetes.io".serviceaccount.name)"')"
expect_eq "the token's audience and lifetime (an hour)" \
    "https://kubernetes.default.svc.cluster.local 3600" \
    "$(echo "$claims" | jq -r '"\(.aud | join(",")) \(.exp - .iat)"')"
expect_eq "the token's uid is the account's" "$(kubectl -n team-a get sa robot -o jsonpath='{.metadata.uid}')" \
    "$(echo "$claims" | jq -r '."kubernetes.io".serviceaccount.uid')"
expect_eq "curl with the token" 200 "$(status_as "$token" /api/v1/namespaces/team-a/serviceaccounts)"
expect_eq "kubectl --token: the request goes through as the account" "robot" \
    "$(kubectl --token="$token" -n team-a get sa robot -o jsonpath='{.metadata.name}' 2>&1)"

short=$(kubectl -n team-a create token robot --audience vault --duration 10m 2>&1)
expect_eq "--audience and --duration are honoured" "vault 600" \
    "$(part "$short" 2 | jq -r '"\(.aud | join(",")) \(.exp - .iat)"')"
expect_eq "a token for another audience is 401" 401 "$(status_as "$short" /api/v1/namespaces)"
both=$(kubectl -n team-a create token robot --audience vault \
    --audience https://kubernetes.default.svc.cluster.local 2>&1)
expect_eq "a token for the API among others is 200" 200 "$(status_as "$both" /api/v1/namespaces)"
out=$(kubectl -n team-a create token robot --duration 5m 2>&1)
case $out in
*"may not specify a duration less than 10 minutes"*) pass "a duration under 10 minutes is refused" ;;
*) fail "a duration under 10 minutes is refused" "$out" ;;
esac
out=$(kubectl -n team-a create token nobody 2>&1)
expect_eq "a token for a missing account" 'error: failed to create token: serviceaccounts "nobody" not found' "$out"

expect_eq "a garbage token is 401" 401 "$(status_as garbage /api/v1/namespaces)"
expect_eq "a token with another signature is 401" 401 "$(status_as "${token%????}AAAA" /api/v1/namespaces)"
expect_eq "an unsigned (alg none) token is 401" 401 \
    "$(status_as "$(printf '{"alg":"none"}' | base64 -w0 | tr '/+' '_-' | tr -d =).$(echo "$token" | cut -d. -f2)." /api/v1/namespaces)"
out=$(kubectl --token=garbage get ns 2>&1)
expect_eq "kubectl with a garbage token" "error: You must be logged in to the server (Unauthorized)" "$out"

/usr/bin/python3 "$here/serviceaccounts.py" "$data/kubeconfig" "$data" team-a "$token" >"$work/py" 2>&1
rc=$?
while IFS= read -r line; do
    case $line in
    PASS\ *) pass "${line#PASS }" ;;
    FAIL\ *) fail "${line#FAIL }" ;;
    *) echo "$line" ;;
    esac
done <"$work/py"
[ "$rc" -eq 0 ] || [ "$E2E_FAILED" -gt 0 ] || fail "serviceaccounts.py exited with $rc"

admin=$(cat "$data/admin-token")
doc=$(curl -s --cacert "$cacert" -H "Authorization: Bearer $admin" "$url/.well-known/openid-configuration")
expect_eq "openid-configuration" \
    "https://kubernetes.default.svc.cluster.local $url/openid/v1/jwks id_token public ES256" \
    "$(echo "$doc" | jq -r '"\(.issuer) \(.jwks_uri) \(.response_types_supported[0]) \(.subject_types_supported[0]) \(.id_token_signing_alg_values_supported | join(","))"')"
head=$(curl -s -D - -o /dev/null --cacert "$cacert" -H "Authorization: Bearer $token" "$url/openid/v1/jwks" |
    tr -d '\r' | tr 'A-Z' 'a-z')
case $head in
*"content-type: application/jwk-set+json"*"cache-control: public, max-age=3600"*) pass "jwks: its type and caching, for a ServiceAccount" ;;
*) fail "jwks: its type and caching, for a ServiceAccount" "$head" ;;
esac
# kube's bootstrap binds the issuer discovery role to service accounts only
expect_eq "jwks without credentials is forbidden to anonymous" 403 \
    "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$cacert" "$url/openid/v1/jwks")"

stop_kapi
start_kapi "$bin" "$data" "$port" || exit 1
expect_eq "after a restart: the same key, the token still works" 200 \
    "$(status_as "$token" /api/v1/namespaces/team-a/serviceaccounts)"
kubectl -n team-a delete sa robot >/dev/null
expect_eq "the account deleted, its token is 401" 401 "$(status_as "$token" /api/v1/namespaces)"
kubectl -n team-a create sa robot >/dev/null
expect_eq "an account of the same name does not revive it" 401 "$(status_as "$token" /api/v1/namespaces)"
stop_kapi

# The flags: an issuer and audiences of one's own, an RSA key (RS256, as kubeadm makes),
# a cap on lifetimes, and the verifying keys given apart (the private key file serves its
# public half, and another key).
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/rsa.key" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/ec.key" 2>/dev/null
openssl pkey -in "$work/ec.key" -pubout -out "$work/ec.pub" 2>/dev/null
start_kapi "$bin" "$work/flags" "$port" --service-account-issuer https://kapi.example.com \
    --service-account-signing-key-file "$work/rsa.key" --service-account-key-file "$work/rsa.key" \
    --service-account-key-file "$work/ec.pub" --api-audiences api-one,api-two \
    --service-account-max-token-expiration 2h \
    --service-account-jwks-uri https://keys.example.com/jwks || exit 1
export KUBECONFIG=$work/flags/kubeconfig
cacert=$work/flags/ca.crt
check "flags: the default namespace's account" eventually kubectl -n default get sa default
kubectl create clusterrolebinding default-views --clusterrole=view --serviceaccount=default:default >/dev/null
tok=$(kubectl -n default create token default --duration 5h 2>"$work/warn")
expect_eq "flags: RS256, the issuer, the API's audiences, capped at 2h" \
    "RS256 https://kapi.example.com api-one,api-two 7200" \
    "$(echo "$(part "$tok" 1)$(part "$tok" 2)" | jq -rs '"\(.[0].alg) \(.[1].iss) \(.[1].aud | join(",")) \(.[1].exp - .[1].iat)"')"
expect_eq "flags: the cap is a warning" \
    "Warning: requested expiration of 18000 seconds shortened to 7200 seconds" "$(cat "$work/warn")"
expect_eq "flags: the token authenticates" 200 "$(status_as "$tok" /api/v1/namespaces)"
expect_eq "flags: no key is generated when one is given" "" "$(ls "$work/flags/sa.key" 2>/dev/null)"
expect_eq "flags: jwks lists both keys, openid-configuration both algorithms and the jwks-uri" \
    "2 ES256,RS256 https://keys.example.com/jwks" \
    "$(echo "$(curl -s --cacert "$cacert" -H "Authorization: Bearer $tok" "$url/openid/v1/jwks")" \
        "$(curl -s --cacert "$cacert" -H "Authorization: Bearer $tok" "$url/.well-known/openid-configuration")" |
        jq -rs '"\(.[0].keys | length) \(.[1].id_token_signing_alg_values_supported | join(",")) \(.[1].jwks_uri)"')"
stop_kapi
out=$("$bin" --data-dir "$work/bad" --secure-port 0 --service-account-max-token-expiration 30m 2>&1)
expect_eq "flags: a cap under an hour is refused" \
    'Error: invalid argument "30m" for "--service-account-max-token-expiration" flag: must be between 1 hour and 2^32 seconds' "$out"
e2e_finish
