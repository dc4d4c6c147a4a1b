#!/usr/bin/env bash
# Data integrity (issue 12): a name is its own key whatever bytes it holds; decisions on
# stored objects are made on the parsed object, never fooled by a label or annotation
# holding the searched text; watches, Exact lists and continue tokens from before a
# restart work after it while their revisions are inside the history window.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
api=https://127.0.0.1:$port
auth=(-H "Authorization: Bearer $(cat "$data/admin-token")")
c() { curl -s --cacert "$data/ca.crt" "${auth[@]}" "$@"; }
# curl_code ARGS...: the body into $work/body, the status code on stdout.
curl_code() { c -o "$work/body" -w '%{http_code}' "$@"; }
post() { curl_code -X POST -H 'Content-Type: application/json' -d "$2" "$api$1"; }
status_of() { jq -r '"\(.code) \(.reason) \(.message)"' "$work/body"; }
ns_create() { post /api/v1/namespaces "{\"metadata\":{\"name\":\"$1\"${2:+,$2}}}" >/dev/null; }
ev_url() { echo "$api/api/v1/namespaces/$1/events${2:+/$2}"; }
# ev NAME-JSON [NS] [MESSAGE] [REASON]: a core/v1 Event body named by the JSON string NAME-JSON.
ev() {
    printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":%s},' "$1"
    printf '"involvedObject":{"kind":"Pod","namespace":"%s","name":"p"},"reason":"%s","message":"%s"}' \
        "${2:-it}" "${4:-R}" "${3:-m}"
}
# poll SECONDS COMMAND...: retries COMMAND every 0.1 s until it succeeds or time runs out.
poll() {
    local end=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -ge "$end" ] && return 1
        sleep 0.1
    done
}

# ---- a NUL byte in a name never aliases another object ----
# Names are validated as 1.26 validates each type: an events.k8s.io/v1 Event name is a DNS
# subdomain (422), while a core/v1 Event name passes only the path-segment rule, so
# "a\u0000b" is a legal core/v1 Event name and must be its own object.

eve() {
    printf '{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":%s},' "$1"
    printf '"eventTime":"2024-01-02T03:04:05.123456Z","reportingController":"a.b/c",'
    printf '"reportingInstance":"i","action":"A","reason":"R","type":"Normal",'
    printf '"regarding":{"kind":"Pod","namespace":"nul","name":"p"}}'
}
ns_create nul
post /api/v1/namespaces/nul/events "$(ev '"victim"' nul original)" >/dev/null
want='422 Invalid Event "victim\x00x" is invalid: metadata.name: Invalid value: "victim\x00x": a lowercase RFC 1123 subdomain must consist of'
post /apis/events.k8s.io/v1/namespaces/nul/events "$(eve '"victim\u0000x"')" >/dev/null
expect_eq "events.k8s.io/v1 create of victim\\u0000x: 422 with kube's message" "$want" \
    "$(status_of | cut -c1-${#want})"
expect_eq "PUT .../events/victim%00x of a body named victim: 400, the name does not match" \
    "400 BadRequest the name of the object (victim) does not match the name on the URL (victim\\x00x)" \
    "$(curl_code -X PUT -H 'Content-Type: application/json' -d "$(ev '"victim"' nul overwritten)" \
        "$(ev_url nul victim%00x)" >/dev/null; status_of)"
expect_eq "DELETE .../events/victim%00zzz: 404 naming the whole name" \
    '404 NotFound events "victim\x00zzz" not found' \
    "$(curl_code -X DELETE "$(ev_url nul victim%00zzz)" >/dev/null; status_of)"
expect_eq "victim is untouched" original "$(c "$(ev_url nul victim)" | jq -r .message)"

expect_eq "core/v1 create of a\\u0000b: its own object" 201 \
    "$(post /api/v1/namespaces/nul/events "$(ev '"a\u0000b"' nul with-nul)")"
expect_eq "core/v1 create of a after a\\u0000b: not taken for it" 201 \
    "$(post /api/v1/namespaces/nul/events "$(ev '"a"' nul plain)")"
expect_eq "GET .../events/a returns a, not a\\u0000b" "a plain" \
    "$(c "$(ev_url nul a)" | jq -r '"\(.metadata.name) \(.message)"')"
expect_eq "GET .../events/a%00b returns a\\u0000b" '"a\u0000b" with-nul' \
    "$(c "$(ev_url nul a%00b)" | jq -r '"\(.metadata.name | tojson) \(.message)"')"
expect_eq "GET .../events/a%00: 404" 404 "$(curl_code "$(ev_url nul a%00)")"
expect_eq "a fieldSelector metadata.name=a selects a only" plain \
    "$(c "$(ev_url nul)?fieldSelector=metadata.name=a" | jq -r '[.items[].message] | join(",")')"
c "$(ev_url nul)?limit=1" >"$work/nul1.json"
c "$(ev_url nul)?limit=1&continue=$(jq -r .metadata.continue "$work/nul1.json")" >"$work/nul2.json"
expect_eq "pages of one: a, then a\\u0000b after it (the continue token keeps the NUL)" \
    'plain with-nul' "$(jq -r '.items[0].message' "$work/nul1.json") $(jq -r '.items[0].message' "$work/nul2.json")"
c "$(ev_url nul a)?watch=1&resourceVersion=1&timeoutSeconds=1" >"$work/nulw.json"
expect_eq "a watch of the item a sees a only" "ADDED plain;" \
    "$(jq -r '"\(.type) \(.object.message)"' "$work/nulw.json" | tr '\n' ';')"
c -X DELETE "$(ev_url nul a%00b)" >/dev/null
expect_eq "DELETE .../events/a%00b deletes a\\u0000b, and a stays" "404 200" \
    "$(curl_code "$(ev_url nul a%00b)") $(curl_code "$(ev_url nul a)")"
post /api/v1/namespaces/nul/events "$(ev '"a\u0000c"' nul kept-nul)" >/dev/null
expect_eq "a merge patch of a%00c changes a\u0000c only" "200 patched plain" \
    "$(curl_code -X PATCH -H 'Content-Type: application/merge-patch+json' \
        -d '{"message":"patched"}' "$(ev_url nul a%00c)") $(c "$(ev_url nul a%00c)" | jq -r .message) $(c "$(ev_url nul a)" | jq -r .message)"
c -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"message":"kept-nul"}' \
    "$(ev_url nul a%00c)" >/dev/null
post /api/v1/namespaces/nul/events \
    '{"metadata":{"generateName":"g\u0000"},"involvedObject":{"namespace":"nul"}}' >/dev/null
expect_eq "a generated name keeps the whole generateName, NUL included" '201 "g\u0000' \
    "$(jq -r '.code // 201' "$work/body") $(jq -r '.metadata.name | tojson' "$work/body" | cut -c1-8)"
expect_eq "deletecollection with fieldSelector=metadata.name=a%00c: 400, and a stays" "400 200" \
    "$(curl_code -X DELETE "$(ev_url nul)?fieldSelector=metadata.name%3Da%00c") $(curl_code "$(ev_url nul a)")"
expect_eq "a NUL in a group or a resource names nothing: 404, not the part before it" "404 404" \
    "$(curl_code "$api/apis/batch%00x/v1/cronjobs") $(curl_code "$api/api/v1/namespaces/nul/events%00x")"

# ---- byte searches on stored JSON: decisions are made on the parsed object ----

crd() { # crd PLURAL METADATA-MEMBERS
    printf '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",'
    printf '"metadata":{"name":"%s.bytes.example.com"%s},' "$1" "${2:+,$2}"
    printf '"spec":{"group":"bytes.example.com","scope":"Namespaced","names":{"plural":"%s",' "$1"
    printf '"singular":"%s","kind":"%s","listKind":"%sList"},' "${1%s}" "K${1%s}" "K${1%s}"
    printf '"versions":[{"name":"v1","served":true,"storage":true,'
    printf '"schema":{"openAPIV3Schema":{"type":"object"}}}]}}'
}
established() {
    c "$api/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1.bytes.example.com" |
        jq -e '.status.conditions[] | select(.type == "Established" and .status == "True")'
}
post /apis/apiextensions.k8s.io/v1/customresourcedefinitions \
    "$(crd labelones '"labels":{"type":"Established"}')" >/dev/null
check "a CRD labelled type=Established (its bytes hold \"type\":\"Established\") is established" \
    poll 5 established labelones
post /apis/apiextensions.k8s.io/v1/customresourcedefinitions \
    "$(crd deltas '"labels":{"deletionTimestamp":"x"},"annotations":{"a":"\"deletionTimestamp\":"}')" \
    >/dev/null
check "a CRD with a label key deletionTimestamp is established, not cleaned up" \
    poll 5 established deltas

# A custom resource name is a DNS subdomain in 1.26 (NameIsDNSSubdomain): a NUL is refused.
want='422 Invalid Klabelone.bytes.example.com "w\x00x" is invalid: metadata.name: Invalid value: "w\x00x": a lowercase RFC 1123 subdomain'
post /apis/bytes.example.com/v1/namespaces/nul/labelones \
    '{"apiVersion":"bytes.example.com/v1","kind":"Klabelone","metadata":{"name":"w\u0000x"}}' >/dev/null
expect_eq "a custom resource named w\\u0000x: 422 naming the whole name" "$want" \
    "$(status_of | cut -c1-${#want})"

# A namespace whose bytes hold "deletionTimestamp": in a label key (and, in its
# managedFields, "f:deletionTimestamp") is neither terminating nor emptied. (A client's
# managedFields are no longer stored as sent: entries that do not read as field sets are
# replaced, as kube-apiserver replaces them.)
ns_create bytes-ns '"labels":{"deletionTimestamp":"x"}'
check "the namespace's stored bytes do hold the label key" \
    sh -c "curl -s --cacert '$data/ca.crt' -H 'Authorization: Bearer $(cat "$data/admin-token")' \
        '$api/api/v1/namespaces/bytes-ns' | grep -q '\"deletionTimestamp\":\"x\"'"
expect_eq "creating in a namespace whose bytes hold the Terminating text is allowed" 201 \
    "$(post /api/v1/namespaces/bytes-ns/events "$(ev '"kept"' bytes-ns)")"
sleep 0.5 # more than two passes of the namespace controller
expect_eq "the namespace controller leaves its content alone" 200 \
    "$(curl_code "$(ev_url bytes-ns kept)")"

# A typed list item is cut at its "metadata": member; an annotation holding that text
# cannot move the cut (the proof is beside list_item_chunks).
ns_create meta-ns '"annotations":{"x":"\"metadata\":{\"name\":\"fake\"}"}'
c "$api/api/v1/namespaces?fieldSelector=metadata.name=meta-ns" >"$work/list.json"
expect_eq "a list item whose annotation holds \"metadata\": is whole" \
    'meta-ns "metadata":{"name":"fake"}' \
    "$(jq -r '.items[0] | "\(.metadata.name) \(.metadata.annotations.x)"' "$work/list.json")"

# ---- watch history, Exact lists and continue tokens across a restart ----

ns_create rs
post /api/v1/namespaces/rs/events "$(ev '"e1"' rs)" >/dev/null
post /api/v1/namespaces/rs/events "$(ev '"e2"' rs)" >/dev/null
rv0=$(c "$(ev_url rs)" | jq -r .metadata.resourceVersion)
c "$(ev_url rs)?limit=1" >"$work/page1.json"
token=$(jq -r .metadata.continue "$work/page1.json")
post /api/v1/namespaces/rs/events "$(ev '"e3"' rs)" >/dev/null
c -X PUT -H 'Content-Type: application/json' -d "$(ev '"e1"' rs changed Changed)" "$(ev_url rs e1)" >/dev/null
c -X DELETE "$(ev_url rs e2)" >/dev/null
stop_kapi
start_kapi "$bin" "$data" "$port" || exit 1
post /api/v1/namespaces/rs/events "$(ev '"e4"' rs)" >/dev/null

# SQLite reloads the watch history window at start; on etcd (E2E_ETCD=1) it starts at
# the instance's start, as kube-apiserver's watch cache does (a 410 sends the client to
# re-list), while Exact lists and continue tokens read etcd's own history.
if [ "${E2E_ETCD:-}" != 1 ]; then
    c "$(ev_url rs)?watch=1&resourceVersion=$rv0&timeoutSeconds=1" >"$work/watch.json"
    expect_eq "a watch from a resourceVersion before the restart gets every later change" \
        "ADDED e3;MODIFIED e1;DELETED e2;ADDED e4;" \
        "$(jq -r '"\(.type) \(.object.metadata.name)"' "$work/watch.json" | tr '\n' ';')"
    expect_eq "the MODIFIED event carries the new message" changed \
        "$(jq -r 'select(.type == "MODIFIED") | .object.message' "$work/watch.json")"
    c "$(ev_url rs)?watch=1&resourceVersion=$rv0&timeoutSeconds=1&fieldSelector=reason=R" \
        >"$work/watchsel.json"
    expect_eq "a selector watch from before the restart sees e1 stop matching (DELETED)" \
        "ADDED e3;DELETED e1;DELETED e2;ADDED e4;" \
        "$(jq -r '"\(.type) \(.object.metadata.name)"' "$work/watchsel.json" | tr '\n' ';')"
else
    c "$(ev_url rs)?watch=1&resourceVersion=$rv0&timeoutSeconds=1" >"$work/watch.json"
    expect_eq "on etcd, a watch from before the restart is told to re-list (410 Expired)" \
        "ERROR 410 Expired" "$(jq -r '"\(.type) \(.object.code) \(.object.reason)"' "$work/watch.json")"
fi
c "$(ev_url rs)?resourceVersion=$rv0&resourceVersionMatch=Exact" >"$work/exact.json"
expect_eq "an Exact list at a revision before the restart" "e1:m e2:m " \
    "$(jq -r '.items[] | "\(.metadata.name):\(.message)"' "$work/exact.json" | tr '\n' ' ')"
c "$(ev_url rs)?limit=5&continue=$token" >"$work/page2.json"
expect_eq "a continue token from before the restart gives the rest of its list" "e2 " \
    "$(jq -r '.items[].metadata.name' "$work/page2.json" | tr '\n' ' ')"

expect_eq "after the restart a\\u0000c and a are still two objects" "kept-nul plain" \
    "$(c "$(ev_url nul a%00c)" | jq -r .message) $(c "$(ev_url nul a)" | jq -r .message)"
c -X DELETE "$api/api/v1/namespaces/nul" >/dev/null
check "deleting the namespace removes a\\u0000c and a, then the namespace" \
    poll 10 sh -c "test \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$data/ca.crt' \
        -H 'Authorization: Bearer $(cat "$data/admin-token")' '$api/api/v1/namespaces/nul')\" = 404"

e2e_finish
