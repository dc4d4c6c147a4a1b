#!/usr/bin/env bash
# Issue 12's smaller defects, as a careless client or a local user meets them: the health
# endpoints with named checks, a private data dir, error bodies that are valid UTF-8 JSON
# whatever bytes came in, Content-Types that Go's mime.ParseMediaType accepts, and
# `kubectl create -f` of a List (kubectl validates it through /openapi/v2 in protobuf).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
api=https://127.0.0.1:$port
mode() { stat -c '%a' "$1"; }

# A data dir left readable by others (an older kapi, or by hand) is tightened at start.
mkdir -p "$data"
chmod 0755 "$data"
touch "$data/kapi.db" && chmod 0644 "$data/kapi.db"
start_kapi "$bin" "$data" "$port" || exit 1
export KUBECONFIG=$data/kubeconfig
token=$(cat "$data/admin-token")
auth=(-H "Authorization: Bearer $token")
curl_code() { curl -s -o "$work/body" -D "$work/head" -w '%{http_code}' --cacert "$data/ca.crt" "$@"; }

expect_eq "data dir is 0700" 700 "$(mode "$data")"
loose=$(find "$data" -type f -perm /077 | wc -l)
expect_eq "no file in the data dir is readable by others (kapi.db, -wal, -shm, keys)" 0 "$loose"
# (On etcd, E2E_ETCD=1, there is no SQLite file.)
[ "${E2E_ETCD:-}" = 1 ] || check "the SQLite WAL exists and is 0600" test "$(mode "$data/kapi.db-wal")" = 600

# Health: kube-apiserver's format, with kapi's own checks.
expect_eq "/livez answers ok" "200 ok" "$(curl_code "$api/livez") $(cat "$work/body")"
expect_eq "/livez?verbose lists each check" \
    "$(printf '[+]ping ok\n[+]store ok\nlivez check passed')" \
    "$(curl -s --cacert "$data/ca.crt" "$api/livez?verbose")"
expect_eq "/readyz?verbose has the shutdown check" \
    "$(printf '[+]ping ok\n[+]store ok\n[+]shutdown ok\nreadyz check passed')" \
    "$(curl -s --cacert "$data/ca.crt" "$api/readyz?verbose")"
expect_eq "?exclude skips a check and warns about unknown ones" \
    "$(printf '[+]ping ok\n[+]store excluded: ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed')" \
    "$(curl -s --cacert "$data/ca.crt" "$api/healthz?verbose&exclude=store&exclude=nope")"
# One check by name is not among the paths everyone may read (system:public-info-viewer
# names /livez, /readyz, /healthz themselves): asked as the admin.
expect_eq "/livez/ping is one check" "200 ok" \
    "$(curl_code "${auth[@]}" "$api/livez/ping") $(cat "$work/body")"
expect_eq "/readyz/shutdown is one check" "200 ok" \
    "$(curl_code "${auth[@]}" "$api/readyz/shutdown") $(cat "$work/body")"
expect_eq "/livez/x is 404" 404 "$(curl_code "${auth[@]}" "$api/livez/x")"
expect_eq "/healthz/anything/else is 404" 404 "$(curl_code "${auth[@]}" "$api/healthz/anything/else")"
expect_eq "/readyz/ is 404" 404 "$(curl_code "${auth[@]}" "$api/readyz/")"
expect_eq "anonymous /livez/ping is forbidden, as kube's bootstrap roles have it" 403 \
    "$(curl_code "$api/livez/ping")"

# Bytes that are not UTF-8 never reach an answer: Go's encoder writes U+FFFD.
valid_json() { python3 -c 'import json,sys; json.loads(open(sys.argv[1],"rb").read().decode("utf-8"))' "$1"; }
printf '\xff\xfe\x80garbage' >"$work/bad.json"
code=$(curl_code "${auth[@]}" -H 'Content-Type: application/json' --data-binary @"$work/bad.json" \
    "$api/api/v1/namespaces/default/events")
expect_eq "a body of invalid UTF-8 is a 400" 400 "$code"
check "its Status is valid UTF-8 JSON" valid_json "$work/body"
check "the bad bytes are U+FFFD in the message" grep -q 'ufffd\\ufffd\\ufffdgarbage' "$work/body"
printf 'metadata: {name: "\xff"}' >"$work/bad.yaml"
curl_code "${auth[@]}" -H 'Content-Type: application/yaml' --data-binary @"$work/bad.yaml" \
    "$api/api/v1/namespaces/default/events" >/dev/null
check "a YAML error quoting invalid UTF-8 is valid JSON" valid_json "$work/body"
# Inside a JSON string Go reads an invalid byte as U+FFFD, and so does kapi.
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"utf","annotations":{"a":"x\xffy"}}}' \
    >"$work/ns.json"
code=$(curl_code "${auth[@]}" -H 'Content-Type: application/json' --data-binary @"$work/ns.json" \
    "$api/api/v1/namespaces")
expect_eq "invalid UTF-8 inside a JSON string is read as U+FFFD" "201 x�y" \
    "$code $(jq -r '.metadata.annotations.a' "$work/body" 2>/dev/null)"

# Every Content-Type kapi sends parses with Go's mime.ParseMediaType rules.
cat >"$work/media.py" <<'PY'
import re, sys
tok = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
media = re.compile(r"^\s*%s/%s\s*(;\s*%s=(%s|\"([^\"\\]|\\.)*\")\s*)*;?\s*$" % (tok, tok, tok, tok))
bad = [l for l in sys.stdin.read().splitlines() if l and not media.match(l)]
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
: >"$work/types"
ctype() { curl -s -o /dev/null -D - --cacert "$data/ca.crt" "${auth[@]}" "$@" |
    tr -d '\r' | sed -n 's/^[Cc]ontent-[Tt]ype: //p' >>"$work/types"; }
pb='application/com.github.proto-openapi.spec.v2@v1.0+protobuf'
ctype "$api/openapi/v2"
ctype -H "Accept: $pb" "$api/openapi/v2"
ctype "$api/openapi/v3"
ctype "$api/openapi/v3/api/v1"
ctype "$api/api"
ctype "$api/apis/batch/v1"
ctype "$api/version"
ctype "$api/livez"
ctype "$api/nope"
ctype "$api/api/v1/namespaces"
ctype -H 'Accept: application/yaml' "$api/api/v1/namespaces/default"
ctype -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' "$api/api/v1/namespaces"
ctype -H 'Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' "$api/api/v1/namespaces"
ctype "$api/api/v1/namespaces/nope"
ctype "$api/api/v1/namespaces?watch=1&timeoutSeconds=1"
expect_eq "15 answers had a Content-Type" 15 "$(wc -l <"$work/types")"
check "each parses as Go parses media types" python3 "$work/media.py" <"$work/types"
check "the protobuf OpenAPI is application/octet-stream, as kube-apiserver 1.26 sends it" \
    grep -qx 'application/octet-stream' "$work/types"

# kubectl validates a List client-side against the protobuf /openapi/v2.
cat >"$work/list.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: from-list-a}
- apiVersion: v1
  kind: Namespace
  metadata: {name: from-list-b}
YAML
check "kubectl create -f of a kind: List" kubectl --request-timeout=10s create -f "$work/list.yaml"
check "both of its items exist" kubectl get ns from-list-a from-list-b

# The files stay private after a restart with a loosened dir.
stop_kapi
chmod 0755 "$data"
chmod 0644 "$data"/kapi.db*
start_kapi "$bin" "$data" "$port" || exit 1
expect_eq "restart: the data dir is 0700 again" 700 "$(mode "$data")"
expect_eq "restart: kapi.db is 0600 again" 600 "$(mode "$data/kapi.db")"
e2e_finish
