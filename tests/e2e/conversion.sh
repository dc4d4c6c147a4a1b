#!/usr/bin/env bash
# A CRD whose versions are converted by a webhook, as a user meets it: a small HTTPS
# conversion webhook of the test's own (conversion_webhook.py) turns v1's spec.size into
# v2's spec.length and back; kubectl and curl read, write, list and watch in both versions
# and across a change of the storage version; the webhook reached by a service reference
# (--webhook-resolve); and each way it fails gives kube's 500 naming it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
hook=$work/hook
mkdir -p "$hook"
hport=$(free_port)

# The webhook's CA and its certificate, for 127.0.0.1 and the service's name.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=e2e-webhook-ca \
    -keyout "$hook/ca.key" -out "$hook/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=conv.webhooks.svc \
    -keyout "$hook/tls.key" -out "$hook/tls.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:conv.webhooks.svc\n' >"$hook/ext"
openssl x509 -req -in "$hook/tls.csr" -CA "$hook/ca.crt" -CAkey "$hook/ca.key" \
    -CAcreateserial -days 2 -extfile "$hook/ext" -out "$hook/tls.crt" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca \
    -keyout "$hook/other.key" -out "$hook/other.crt" 2>/dev/null
ca=$(base64 -w0 <"$hook/ca.crt")
other_ca=$(base64 -w0 <"$hook/other.crt")

start_hook() {
    python3 "$here/conversion_webhook.py" "$hport" "$hook/tls.crt" "$hook/tls.key" "$hook" \
        2>"$hook/log" &
    HOOK_PID=$!
    for _ in $(seq 1 50); do
        curl -s --cacert "$hook/ca.crt" -o /dev/null "https://127.0.0.1:$hport/" && return 0
        sleep 0.1
    done
}
stop_hook() {
    kill "$HOOK_PID" 2>/dev/null
    wait "$HOOK_PID" 2>/dev/null
}
trap 'stop_hook; stop_kapi; rm -rf "$work"' EXIT
start_hook
start_kapi "$bin" "$data" "$port" --webhook-resolve "conv.webhooks.svc:$hport:127.0.0.1" || exit 1
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=40s "$@"; }
api=https://127.0.0.1:$port
c() { curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer $(cat "$data/admin-token")" "$@"; }
w=$api/apis/example.com

# crd STORAGE CLIENT_CONFIG: the CRD, v1 and v2 served, STORAGE the storage version.
crd() {
    local v1=true v2=false
    [ "$1" = v2 ] && v1=false v2=true
    cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: $v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string}
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
  - name: v2
    served: true
    storage: $v2
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              length: {type: integer}
              unit: {type: string, default: cm}
    additionalPrinterColumns:
    - {name: Length, type: integer, jsonPath: .spec.length}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1, v1beta1]
      clientConfig: $2
EOF
}
by_url="{url: 'https://127.0.0.1:$hport/convert', caBundle: '$ca'}"
by_service="{service: {namespace: webhooks, name: conv, port: $hport, path: /convert}, caBundle: '$ca'}"

check "the CRD with a conversion webhook" kc apply -f <(crd v1 "$by_url")
check "it is established" kc wait --for=condition=Established crd/widgets.example.com --timeout=10s

# Written in the storage version: nothing to convert.
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: "5"}\n' |
    check "create in v1" kc apply -f -
expect_eq "no webhook call for the storage version" no "$([ -e "$hook/requests.jsonl" ] && echo yes || echo no)"

# Read in v2: converted, then defaulted by v2's schema.
expect_eq "get in v2 converts" "5 cm" \
    "$(kc get widgets.v2.example.com w1 -o jsonpath='{.spec.length} {.spec.unit}')"
last=$(tail -1 "$hook/requests.jsonl")
expect_eq "the request: path with kube's timeout" "/convert?timeout=30s" \
    "$(echo "$last" | jq -r .path)"
expect_eq "the request: a v1 ConversionReview for v2" \
    "apiextensions.k8s.io/v1 ConversionReview example.com/v2 1 example.com/v1 w1" \
    "$(echo "$last" | jq -r '.body | "\(.apiVersion) \(.kind) \(.request.desiredAPIVersion) \(.request.objects|length) \(.request.objects[0].apiVersion) \(.request.objects[0].metadata.name)"')"
expect_eq "the objects go as stored, without resourceVersion" false \
    "$(echo "$last" | jq '.body.request.objects[0].metadata | has("resourceVersion")')"
check "the request's uid is a UUID" \
    grep -qE '"uid": "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"' <(echo "$last")
expect_eq "kubectl's columns are v2's" "w1 5" \
    "$(kc get widgets.v2.example.com --no-headers | awk '{print $1, $2}')"

# Written in v2: converted to v1 on the way in.
printf 'apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w2}\nspec: {length: 7}\n' |
    check "create in v2" kc apply -f -
expect_eq "stored in v1" '"7" false' \
    "$(c "$w/v1/namespaces/default/widgets/w2" | jq -c '[.spec.size, (.spec|has("length"))]' | tr -d '[]' | tr ',' ' ')"
check "patch in v2" kc patch widgets.v2.example.com w2 --type=merge -p '{"spec":{"length":8}}'
expect_eq "the patch is stored in v1" '"8"' "$(c "$w/v1/namespaces/default/widgets/w2" | jq -c .spec.size)"

# A watch in v2 sees the changes converted.
c -N "$w/v2/namespaces/default/widgets?watch=1&timeoutSeconds=3" >"$work/watch.out" &
watcher=$!
sleep 0.5
check "patch in v1 while watching" kc patch widgets.v1.example.com w1 --type=merge -p '{"spec":{"size":"6"}}'
wait "$watcher"
expect_eq "the watch's events are v2" "ADDED:5 ADDED:8 MODIFIED:6" \
    "$(jq -r '"\(.type):\(.object.spec.length)"' "$work/watch.out" | sort | tr '\n' ' ' | sed 's/ $//')"

# Bookmarks on such a watch (its events wait for the converter; its bookmarks too).
c -N "$w/v2/namespaces/default/widgets?watch=1&allowWatchBookmarks=true&timeoutSeconds=3" \
    >"$work/bookmarks.out" &
watcher=$!
wait "$watcher"
expect_eq "a watch with bookmarks gets them" "ADDED ADDED BOOKMARK" \
    "$(jq -r .type "$work/bookmarks.out" | tr '\n' ' ' | sed 's/ $//')"
check "and the server still writes" kc label widgets.v1.example.com w1 bookmarked=yes

# The storage version moves to v2: old objects stay in v1 until written, lists convert
# each item from the version it is stored in.
check "storage version to v2" kc apply -f <(crd v2 "$by_url")
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3}\nspec: {size: "9"}\n' |
    check "create in v1 after the change" kc apply -f -
expect_eq "stored in v2 now" 9 "$(c "$w/v2/namespaces/default/widgets/w3" | jq .spec.length)"
before=$(wc -l <"$hook/requests.jsonl")
expect_eq "a mixed list in v1" '"6" "8" "9"' \
    "$(c "$w/v1/namespaces/default/widgets" | jq -c '[.items[].spec.size]' | tr -d '[]' | tr ',' ' ')"
expect_eq "a list's items go in one review" 1 $(($(wc -l <"$hook/requests.jsonl") - before))
expect_eq "a mixed list in v2" "6 8 9" \
    "$(kc get widgets.v2.example.com -o jsonpath='{.items[*].spec.length}')"

# Labels and annotations are the webhook's to change; the rest of metadata is kept.
echo label >"$hook/mode"
expect_eq "labels from the webhook" webhook \
    "$(c "$w/v2/namespaces/default/widgets/w1" | jq -r '.metadata.labels["converted-by"]')"

# Failures: kube's 500, no reason, the message naming the webhook.
echo rename >"$hook/mode"
expect_eq "a renamed object is refused" \
    '500 "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: w1 != w1-renamed"' \
    "$(c "$w/v2/namespaces/default/widgets/w1" | jq -c '"\(.code) \(.message|tojson)"' | jq -r .)"
echo fail >"$hook/mode"
out=$(c -w '\n%{http_code}' "$w/v2/namespaces/default/widgets/w1")
expect_eq "a failure answer" \
    '500 null conversion webhook for example.com/v1, Kind=Widget failed: no converting today' \
    "$(echo "$out" | tail -1) $(echo "$out" | head -n -1 | jq -r '"\(.reason) \(.message)"')"
refuses "kubectl shows it" "conversion webhook for example.com/v1, Kind=Widget failed: no converting today" \
    kc get widgets.v2.example.com w1
refuses "a create that needs converting fails" \
    "conversion webhook for example.com/v1, Kind=Widget failed: no converting today" \
    kc create -f - <<<'{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w4"},"spec":{"size":"1"}}'
expect_eq "and stores nothing" 404 "$(c -o /dev/null -w '%{http_code}' "$w/v2/namespaces/default/widgets/w4")"
echo ok >"$hook/mode"

stop_hook
expect_eq "the webhook down" \
    "conversion webhook for example.com/v1, Kind=Widget failed: Post \"https://127.0.0.1:$hport/convert?timeout=30s\": dial tcp 127.0.0.1:$hport: connect: connection refused" \
    "$(c "$w/v2/namespaces/default/widgets/w1" | jq -r .message)"
c -N "$w/v2/namespaces/default/widgets?watch=1&timeoutSeconds=10" >"$work/watch2.out" &
watcher=$!
start=$(date +%s)
wait "$watcher"
expect_eq "a watch whose conversion fails ends, with no event" "0 yes" \
    "$(wc -l <"$work/watch2.out") $([ $(($(date +%s) - start)) -lt 8 ] && echo yes)"
check "the same version reads without the webhook" c -f "$w/v2/namespaces/default/widgets/w3"
start_hook

# The webhook by a service reference: name.namespace.svc, reached through --webhook-resolve.
check "a service reference" kc apply -f <(crd v2 "$by_service")
expect_eq "converts through it" '"6"' "$(c "$w/v1/namespaces/default/widgets/w1" | jq -c .spec.size)"

# The server's certificate is verified with caBundle.
check "a caBundle that does not match" kc apply -f <(crd v2 "{url: 'https://127.0.0.1:$hport/convert', caBundle: '$other_ca'}")
expect_eq "is refused" \
    "conversion webhook for example.com/v1, Kind=Widget failed: Post \"https://127.0.0.1:$hport/convert?timeout=30s\": x509: certificate signed by unknown authority" \
    "$(c "$w/v2/namespaces/default/widgets/w1" | jq -r .message)"
e2e_finish
