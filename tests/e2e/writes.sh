#!/usr/bin/env bash
# Writes as clients meet them (issue 5): kubectl patch (json, merge, strategic), label,
# annotate, edit and client-side apply; the two-phase deletion of an object with a
# finalizer; --dry-run=server on every write, checked with a list and an open watch; the
# status subresource of a CronJob; deletecollection by label; namespace deletion.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }
api=https://127.0.0.1:$port
auth=(-H "Authorization: Bearer $(cat "$data/admin-token")")
c() { curl -s --cacert "$data/ca.crt" "${auth[@]}" "$@"; }
# curl_code ARGS...: the body into $work/body, the status code on stdout.
curl_code() { c -o "$work/body" -w '%{http_code}' "$@"; }
cj_url() { echo "$api/apis/batch/v1/namespaces/$1/cronjobs${2:+/$2}"; }

# cj NAME [LABELS-JSON-MEMBERS] [METADATA-JSON-MEMBERS]: a suspended CronJob that never
# fires, as JSON (kubectl sends -f manifests as JSON; `kubectl create cronjob` would send
# protobuf).
cj() {
    printf '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"%s","labels":{%s}%s},' \
        "$1" "${2:-}" "${3:+,$3}"
    printf '"spec":{"suspend":true,"schedule":"0 3 29 2 *","jobTemplate":{"spec":{"template":'
    printf '{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"main","image":"busybox"}]}}}}}}'
}
# get NS NAME JSONPATH: one field of a CronJob as kubectl reads it.
get() { kc get cronjob "$2" -n "$1" -o "jsonpath=$3" 2>&1; }
names() { kc get cronjobs -n "$1" -o name "${@:2}" | sed 's|cronjob.batch/||' | tr '\n' ' '; }

kc create ns wr >/dev/null

# ---- kubectl patch (three types), label, annotate, edit ----
cj p '"app":"web"' | kc create -n wr -f - >/dev/null
kc patch cronjob p -n wr --type=merge -p '{"spec":{"schedule":"5 3 29 2 *"}}' >/dev/null
expect_eq "kubectl patch --type=merge" "5 3 29 2 *" "$(get wr p '{.spec.schedule}')"
kc patch cronjob p -n wr --type=json \
    -p '[{"op":"add","path":"/metadata/labels/j","value":"1"},{"op":"test","path":"/spec/suspend","value":true}]' >/dev/null
expect_eq "kubectl patch --type=json" "1" "$(get wr p '{.metadata.labels.j}')"
smp='{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"alpine"}]}}}}}}'
kc patch cronjob p -n wr --type=strategic -p "$smp" >/dev/null
# a new item goes before the ones the patch does not name, as apimachinery orders them
expect_eq "kubectl patch --type=strategic merges containers by name" "side main" \
    "$(get wr p '{.spec.jobTemplate.spec.template.spec.containers[*].name}')"
kc patch cronjob p -n wr -p '{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}}}' >/dev/null
expect_eq "kubectl patch (strategic by default) with \$patch: delete" "main" \
    "$(get wr p '{.spec.jobTemplate.spec.template.spec.containers[*].name}')"
code=$(kc patch cronjob p -n wr --type=json -p '[{"op":"test","path":"/spec/schedule","value":"x"}]' 2>&1)
check "a failed JSON patch test is refused" grep -q 'the server rejected our request' <<<"$code"
kc label cronjob p -n wr tier=gold >/dev/null
expect_eq "kubectl label" "gold" "$(get wr p '{.metadata.labels.tier}')"
kc label cronjob p -n wr tier- >/dev/null
expect_eq "kubectl label tier- removes it" "app=web j=1" \
    "$(kc get cronjob p -n wr -o json | jq -r '.metadata.labels | to_entries | map("\(.key)=\(.value)") | join(" ")')"
kc annotate cronjob p -n wr note=hello >/dev/null
expect_eq "kubectl annotate" "hello" "$(get wr p '{.metadata.annotations.note}')"
printf '#!/bin/sh\nsed -i "s/schedule: .*/schedule: 7 3 29 2 */" "$1"\n' >"$work/editor.sh"
chmod +x "$work/editor.sh"
EDITOR=$work/editor.sh kc edit cronjob p -n wr >/dev/null
expect_eq "kubectl edit (EDITOR a script)" "7 3 29 2 *" "$(get wr p '{.spec.schedule}')"
expect_eq "the edits moved the generation once per spec change (4 of them)" "5" \
    "$(get wr p '{.metadata.generation}')"

# ---- client-side apply, twice ----
cj ap '"app":"ap","stage":"one"' | jq . >"$work/ap.json"
check "kubectl apply creates" kc apply -n wr -f "$work/ap.json"
jq '.spec.schedule = "9 3 29 2 *" | del(.metadata.labels.stage)' "$work/ap.json" >"$work/ap2.json"
out=$(kc apply -n wr -f "$work/ap2.json")
expect_eq "kubectl apply again configures" "cronjob.batch/ap configured" "$out"
expect_eq "the second apply changed the schedule and removed the label it dropped" \
    "9 3 29 2 * app=ap" \
    "$(get wr ap '{.spec.schedule}') $(kc get cronjob ap -n wr -o json | jq -r '.metadata.labels | to_entries | map("\(.key)=\(.value)") | join(" ")')"
check "the last-applied annotation is the second manifest" test "$(get wr ap \
    '{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}' | jq -r .spec.schedule)" = "9 3 29 2 *"

# ---- two-phase deletion with a finalizer ----
cj fin '' '"finalizers":["example.com/hold"]' | kc create -n wr -f - >/dev/null
kc delete cronjob fin -n wr --wait=false >/dev/null
check "deleted with a finalizer: still there, with a deletionTimestamp" \
    test -n "$(get wr fin '{.metadata.deletionTimestamp}')"
code=$(curl_code -X PATCH -H 'Content-Type: application/merge-patch+json' \
    -d '{"metadata":{"finalizers":["example.com/hold","example.com/new"]}}' "$(cj_url wr fin)")
expect_eq "a deleting object takes no new finalizer: 422" "422" "$code"
kc patch cronjob fin -n wr --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
code=$(curl_code "$(cj_url wr fin)")
expect_eq "patching the finalizer away removes it" "404" "$code"
cj fin | kc create -n wr -f - >/dev/null
expect_eq "the name can be used again, by a fresh object" "" "$(get wr fin '{.metadata.deletionTimestamp}')"

# ---- --dry-run=server changes nothing: a list, and a watch open throughout ----
kc create ns dry >/dev/null
cj keep '"x":"y"' | kc create -n dry -f - >/dev/null
c -N "$(cj_url dry)?watch=1&timeoutSeconds=60" >"$work/dry-watch.json" &
watch_pid=$!
for _ in $(seq 1 100); do grep -q '"keep"' "$work/dry-watch.json" && break; sleep 0.05; done
cj drynew | jq . >"$work/drynew.json"
out=$(kc apply --dry-run=server -n dry -f "$work/drynew.json")
expect_eq "apply --dry-run=server of a new object" "cronjob.batch/drynew created (server dry run)" "$out"
cj keep '"x":"y","applied":"yes"' >"$work/keep.json"
# (kubectl warns that keep was not created by apply)
kc apply --dry-run=server -n dry -f "$work/keep.json" >/dev/null 2>&1
cj "" | jq '.metadata = {"generateName": "gen-"}' >"$work/gen.json"
gen=$(kc create --dry-run=server -n dry -f "$work/gen.json" -o jsonpath='{.metadata.name}')
check "create --dry-run=server fills the name from generateName ($gen)" \
    grep -qE '^gen-[a-z0-9]{5}$' <<<"$gen"
out=$(kc patch --dry-run=server cronjob keep -n dry --type=merge -p '{"spec":{"schedule":"1 1 1 1 *"}}' \
    -o jsonpath='{.spec.schedule}')
expect_eq "patch --dry-run=server answers the patched object" "1 1 1 1 *" "$out"
c "$(cj_url dry keep)" | jq '.metadata.labels.put = "yes"' >"$work/put.json"
code=$(curl_code -X PUT -H 'Content-Type: application/json' -d @"$work/put.json" "$(cj_url dry keep)?dryRun=All")
expect_eq "PUT ?dryRun=All answers 200 and the would-be object" "200 yes" \
    "$code $(jq -r .metadata.labels.put "$work/body")"
out=$(kc delete --dry-run=server cronjob keep -n dry)
expect_eq "delete --dry-run=server" 'cronjob.batch "keep" deleted (server dry run)' "$out"
code=$(curl_code -X DELETE "$(cj_url dry)?dryRun=All&labelSelector=x%3Dy")
expect_eq "deletecollection ?dryRun=All answers the would-be deleted list" "200 keep" \
    "$code $(jq -r '[.items[].metadata.name] | join(" ")' "$work/body")"
kc delete --dry-run=server ns dry >/dev/null
for verb in POST PUT PATCH; do
    path=$(cj_url dry keep)
    [ "$verb" = POST ] && path=$(cj_url dry)
    body=$(cat "$work/put.json")
    ct=application/json
    [ "$verb" = PATCH ] && body='{}' && ct=application/merge-patch+json
    code=$(curl_code -X "$verb" -H "Content-Type: $ct" -d "$body" "$path?dryRun=Bogus")
    expect_eq "$verb ?dryRun=Bogus: 422" "422 Invalid" "$code $(jq -r .reason "$work/body")"
done
code=$(curl_code -X DELETE "$(cj_url dry keep)?dryRun=Bogus")
expect_eq "DELETE ?dryRun=Bogus: 422" "422 Invalid" "$code $(jq -r .reason "$work/body")"
code=$(curl_code -X DELETE -H 'Content-Type: application/json' \
    -d '{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["Bogus"]}' "$(cj_url dry keep)")
expect_eq "DELETE with dryRun Bogus in DeleteOptions: 422" "422 Invalid" \
    "$code $(jq -r .reason "$work/body")"
code=$(curl_code -X DELETE "$(cj_url dry)?dryRun=Bogus")
expect_eq "deletecollection ?dryRun=Bogus: 422" "422 Invalid" "$code $(jq -r .reason "$work/body")"
code=$(curl_code -X DELETE -H 'Content-Type: application/json' -d @"$work/put.json" "$(cj_url dry keep)")
expect_eq "DELETE with an object for a body, not DeleteOptions: 400" "400 BadRequest" \
    "$code $(jq -r .reason "$work/body")"
code=$(curl_code -X DELETE "$(cj_url dry keep)?gracePeriodSeconds=abc")
expect_eq "DELETE ?gracePeriodSeconds=abc: 400, strconv's words, nothing deleted" \
    '400 BadRequest strconv.ParseInt: parsing "abc": invalid syntax' \
    "$code $(jq -r '.reason + " " + .message' "$work/body")"
# A real write last: once its event is seen, every earlier one would have been.
kc label cronjob keep -n dry sentinel=1 >/dev/null
for _ in $(seq 1 100); do grep -q '"sentinel"' "$work/dry-watch.json" && break; sleep 0.05; done
kill "$watch_pid" 2>/dev/null
wait "$watch_pid" 2>/dev/null
expect_eq "the watch saw no event from the dry runs" "ADDED keep;MODIFIED keep;" \
    "$(jq -r '"\(.type) \(.object.metadata.name)"' "$work/dry-watch.json" | tr '\n' ';')"
expect_eq "the list holds only keep, as it was" "keep |0 3 29 2 * y|" \
    "$(names dry)|$(get dry keep '{.spec.schedule} {.metadata.labels.x}')|$(get dry keep '{.metadata.labels.applied}')"
expect_eq "the namespace is still Active" "Active" \
    "$(kc get ns dry -o jsonpath='{.status.phase}')"

# ---- the status subresource of a CronJob ----
cj st '"app":"st"' | jq '.status = {"lastScheduleTime": "2024-01-02T03:04:05Z"}' >"$work/st.json"
code=$(curl_code -X POST -H 'Content-Type: application/json' -d @"$work/st.json" "$(cj_url wr)")
expect_eq "create ignores status" "201 {}" "$code $(jq -c .status "$work/body")"
c "$(cj_url wr st)" | jq '.status = {"lastScheduleTime": "2024-01-02T03:04:05Z"} | .metadata.labels.put = "1"' \
    >"$work/st-put.json"
code=$(curl_code -X PUT -H 'Content-Type: application/json' -d @"$work/st-put.json" "$(cj_url wr st)")
expect_eq "PUT on the main resource stores the label, ignores status" "200 1 {} 1" \
    "$code $(jq -r .metadata.labels.put "$work/body") $(jq -c .status "$work/body") $(jq -r .metadata.generation "$work/body")"
code=$(curl_code -X PATCH -H 'Content-Type: application/merge-patch+json' \
    -d '{"status":{"lastScheduleTime":"2024-01-02T03:04:05Z"}}' "$(cj_url wr st)")
expect_eq "PATCH on the main resource ignores status" "200 {}" "$code $(jq -c .status "$work/body")"
c "$(cj_url wr st)" | jq '.spec.schedule = "1 1 1 1 *" | .metadata.labels.via = "status"
    | .status = {"lastScheduleTime": "2024-01-02T03:04:05Z"}' >"$work/st-status.json"
code=$(curl_code -X PUT -H 'Content-Type: application/json' -d @"$work/st-status.json" "$(cj_url wr st)/status")
expect_eq "PUT /status stores status and metadata, keeps the spec and the generation" \
    "200 2024-01-02T03:04:05Z status 0 3 29 2 * 1" \
    "$code $(jq -r '"\(.status.lastScheduleTime) \(.metadata.labels.via) \(.spec.schedule) \(.metadata.generation)"' "$work/body")"
kc patch cronjob st -n wr --subresource=status --type=merge \
    -p '{"spec":{"suspend":false},"status":{"lastSuccessfulTime":"2024-01-02T03:05:05Z"}}' >/dev/null
expect_eq "kubectl patch --subresource=status changes status only" "2024-01-02T03:05:05Z true 1" \
    "$(get wr st '{.status.lastSuccessfulTime} {.spec.suspend} {.metadata.generation}')"
expect_eq "kubectl get --subresource=status answers the whole object" "st 0 3 29 2 * 2024-01-02T03:04:05Z" \
    "$(kc get cronjob st -n wr --subresource=status -o jsonpath='{.metadata.name} {.spec.schedule} {.status.lastScheduleTime}')"
kc create -n wr -f - >/dev/null <<'EOF'
{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev"},"involvedObject":{"kind":"CronJob","namespace":"wr","name":"st"},"reason":"R","message":"m","type":"Normal"}
EOF
code=$(curl_code "$api/api/v1/namespaces/wr/events/ev/status")
expect_eq "a type without /status: 404 there" "404" "$code"

# ---- updates without metadata.resourceVersion: unconditional where Kubernetes allows it ----
c "$(cj_url wr st)" | jq 'del(.metadata.resourceVersion) | .metadata.labels.norv = "1"' >"$work/norv.json"
code=$(curl_code -X PUT -H 'Content-Type: application/json' -d @"$work/norv.json" "$(cj_url wr st)")
expect_eq "a CronJob PUT without resourceVersion is unconditional" "200 1" \
    "$code $(jq -r .metadata.labels.norv "$work/body")"
kc create -f - >/dev/null <<'EOF'
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.e2e.example.com"},"spec":{"group":"e2e.example.com","scope":"Namespaced","names":{"plural":"things","singular":"thing","kind":"Thing","listKind":"ThingList"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}
EOF
crd_url=$api/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.e2e.example.com
c "$crd_url" | jq 'del(.metadata.resourceVersion) | .metadata.labels.norv = "1"' >"$work/crd.json"
code=$(curl_code -X PUT -H 'Content-Type: application/json' -d @"$work/crd.json" "$crd_url")
expect_eq "a CRD PUT without resourceVersion: 422, as for every CRD update" \
    "422 customresourcedefinitions.apiextensions.k8s.io \"things.e2e.example.com\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update" \
    "$code $(jq -r .message "$work/body")"
code=$(curl_code -X PUT -H 'Content-Type: application/json' -d @"$work/crd.json" "$crd_url/status")
expect_eq "and to its /status" "422" "$code"

# ---- deletecollection with a label selector ----
for n in d1 d2; do cj $n '"del":"yes"' | kc create -n wr -f - >/dev/null; done
cj d3 '"del":"no"' | kc create -n wr -f - >/dev/null
kc delete cronjobs -n wr -l del=yes >/dev/null
expect_eq "kubectl delete cronjobs -l del=yes deletes only the matches" "d3 " "$(names wr -l del)"
code=$(curl_code -X DELETE "$(cj_url wr)?labelSelector=del%3Dno")
expect_eq "deletecollection by label answers the deleted list" "200 d3" \
    "$code $(jq -r '[.items[].metadata.name] | join(" ")' "$work/body")"
expect_eq "and the others are still there" "ap fin p st " "$(names wr)"

# ---- namespace deletion removes its CronJobs and Events, then itself ----
kc create ns gone >/dev/null
for n in g1 g2; do cj $n | kc create -n gone -f - >/dev/null; done
kc create -n gone -f - >/dev/null <<'EOF'
{"apiVersion":"v1","kind":"Event","metadata":{"name":"gev"},"involvedObject":{"kind":"CronJob","namespace":"gone","name":"g1"},"reason":"R","message":"m","type":"Normal"}
EOF
check "kubectl delete ns returns once the namespace is gone" kc delete ns gone --timeout=20s
code=$(curl_code "$api/api/v1/namespaces/gone")
expect_eq "the namespace is gone" "404" "$code"
expect_eq "its CronJobs and Events are gone" "0 0" \
    "$(c "$(cj_url gone)" | jq '.items | length') $(c "$api/api/v1/namespaces/gone/events" | jq '.items | length')"

e2e_finish
