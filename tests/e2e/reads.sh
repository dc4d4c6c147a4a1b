#!/usr/bin/env bash
# Reads as clients meet them (issue 4): kubectl watch, chunked lists, label and field
# selectors, -A and kubectl wait; with curl, pages at one revision under concurrent
# writes, watches from a list's resourceVersion, bookmarks, selector transitions, the
# timeoutSeconds end, and the 400/422/504/410 answers with their Status bodies.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }

# (Re)points the curl helpers at the kapi whose data dir is $1.
use_kapi() {
    data=$1
    api=https://127.0.0.1:$port
    auth=(-H "Authorization: Bearer $(cat "$data/admin-token")")
}
use_kapi "$data"
c() { curl -s --cacert "$data/ca.crt" "${auth[@]}" "$@"; }
# curl_code ARGS...: the body into $work/body, the status code on stdout.
curl_code() { c -o "$work/body" -w '%{http_code}' "$@"; }
cj_url() { echo "$api/apis/batch/v1/namespaces/$1/cronjobs${2:+/$2}"; }

# cj NAME [LABELS-JSON-MEMBERS]: a suspended CronJob that never fires, as JSON.
cj() {
    printf '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"%s","labels":{%s}},' \
        "$1" "${2:-}"
    printf '"spec":{"suspend":true,"schedule":"0 3 29 2 *","jobTemplate":{"spec":{"template":'
    printf '{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"main","image":"busybox"}]}}}}}}'
}
# create NS NAME [LABELS]: POSTs the CronJob; prints its resourceVersion.
create() { cj "$2" "${3:-}" | c -X POST -H 'Content-Type: application/json' -d @- "$(cj_url "$1")" |
    jq -r .metadata.resourceVersion; }
# replace NS NAME [LABELS]: PUTs the CronJob over the stored one; prints the new resourceVersion.
replace() {
    local rv
    rv=$(c "$(cj_url "$1" "$2")" | jq -r .metadata.resourceVersion)
    cj "$2" "${3:-}" | jq -c --arg rv "$rv" '.metadata.resourceVersion = $rv' |
        c -X PUT -H 'Content-Type: application/json' -d @- "$(cj_url "$1" "$2")" |
        jq -r .metadata.resourceVersion
}
delete() { c -X DELETE "$(cj_url "$1" "$2")" >/dev/null; }
list_rv() { c "$(cj_url "$1")" | jq -r .metadata.resourceVersion; }
# events FILE: one "TYPE name" line per watch event.
events() { jq -r '"\(.type) \(.object.metadata.name)"' "$1" | tr '\n' ';'; }
status_of() { jq -r '"\(.code) \(.reason) \(.message)"' "$work/body"; }
# jq_true NAME FILE FILTER [JQ-ARGS...]: passes when FILTER's last result on FILE is true.
jq_true() { check "$1" jq -e "${@:4}" "$3" "$2"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

for ns in kw ck sel pg wf lw bm wt; do kc create ns "$ns" >/dev/null; done

# ---- kubectl get -w sees the ADDED, MODIFIED and DELETED of another kubectl's writes ----
create kw pre >/dev/null
kubectl get cronjobs -n kw -w --output-watch-events -o json >"$work/kw.json" 2>"$work/kw.err" &
kw_pid=$!
for _ in $(seq 1 100); do grep -q '"pre"' "$work/kw.json" && break; sleep 0.05; done
cj one '"v":"1"' | kc create -n kw -f - >/dev/null
kc get cronjob one -n kw -o json | jq '.metadata.labels.v = "2"' | kc replace -f - >/dev/null
kc delete cronjob one -n kw >/dev/null
for _ in $(seq 1 100); do grep -q '"DELETED"' "$work/kw.json" && break; sleep 0.05; done
kill "$kw_pid" 2>/dev/null
wait "$kw_pid" 2>/dev/null
expect_eq "kubectl get -w --output-watch-events sees create, replace, delete in order" \
    "ADDED pre;ADDED one;MODIFIED one;DELETED one;" "$(events "$work/kw.json")"
expect_eq "the MODIFIED event carries the replaced label" "2" \
    "$(jq -rs '.[] | select(.type == "MODIFIED") | .object.metadata.labels.v' "$work/kw.json")"

# ---- chunked lists ----
for i in 1 2 3 4 5 6 7; do create ck "c$i" >/dev/null; done
kc get cronjobs -n ck --chunk-size=2 -o name -v=6 >"$work/ck.out" 2>"$work/ck.log"
expect_eq "kubectl get --chunk-size=2 returns all 7" \
    "$(printf 'cronjob.batch/c%s\n' 1 2 3 4 5 6 7)" "$(cat "$work/ck.out")"
pages=$(grep -c 'cronjobs?[^ ]*limit=2[^ ]* 200' "$work/ck.log")
continued=$(grep -c 'cronjobs?continue=[^ ]*limit=2[^ ]* 200' "$work/ck.log")
expect_eq "kubectl fetched 4 pages of 2, 3 of them with continue" "4 3" "$pages $continued"
c "$(cj_url ck)?limit=2" >"$work/p1.json"
# page FILE: "items-count remainingItemCount has-continue" of a list page.
page() {
    jq -r '"\(.items | length) \(.metadata.remainingItemCount) \(.metadata.continue != null)"' "$1"
}
expect_eq "limit=2: 2 items, remainingItemCount 5, a continue token" "2 5 true" "$(page "$work/p1.json")"
c "$(cj_url ck)?limit=2&continue=$(jq -r .metadata.continue "$work/p1.json")" >"$work/p2.json"
expect_eq "the next page: c3 c4, remainingItemCount 3" "c3 c4 2 3 true" \
    "$(jq -r '[.items[].metadata.name] | join(" ")' "$work/p2.json") $(page "$work/p2.json")"
c "$(cj_url ck)?limit=2&resourceVersion=0" >"$work/rv0.json"
expect_eq "limit with resourceVersion=0 is served whole, as from the watch cache" "7 null false" \
    "$(page "$work/rv0.json")"

# ---- label selectors with every operator, field selectors, -A ----
create sel s1 '"app":"web","tier":"front"' >/dev/null
create sel s2 '"app":"web","tier":"back"' >/dev/null
create sel s3 '"app":"db","tier":"back"' >/dev/null
create sel s4 '"app":"cache"' >/dev/null
create sel s5 >/dev/null
selected() { kc get cronjobs -n sel -o name "$@" | sed 's|cronjob.batch/||' | tr '\n' ' '; }
expect_eq "-l app=web" "s1 s2 " "$(selected -l app=web)"
expect_eq "-l app==web" "s1 s2 " "$(selected -l app==web)"
expect_eq "-l app!=web (includes objects without the label)" "s3 s4 s5 " "$(selected -l 'app!=web')"
expect_eq "-l 'app in (web,cache)'" "s1 s2 s4 " "$(selected -l 'app in (web,cache)')"
expect_eq "-l 'app notin (web,cache)'" "s3 s5 " "$(selected -l 'app notin (web,cache)')"
expect_eq "-l tier (exists)" "s1 s2 s3 " "$(selected -l tier)"
expect_eq "-l '!tier' (does not exist)" "s4 s5 " "$(selected -l '!tier')"
expect_eq "-l app=web,tier=back (AND)" "s2 " "$(selected -l app=web,tier=back)"
expect_eq "--field-selector metadata.name=s3" "s3 " "$(selected --field-selector metadata.name=s3)"
expect_eq "--field-selector metadata.name!=s3" "s1 s2 s4 s5 " \
    "$(selected --field-selector 'metadata.name!=s3')"
expect_eq "--field-selector metadata.namespace=sel" "s1 s2 s3 s4 s5 " \
    "$(selected --field-selector metadata.namespace=sel)"
expect_eq "--field-selector and -l together" "s1 " \
    "$(selected -l app=web --field-selector 'metadata.name!=s2')"
allns() {
    kc get cronjobs -A "$@" -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {end}'
}
expect_eq "-A lists every namespace" \
    "ck/c1 ck/c2 ck/c3 ck/c4 ck/c5 ck/c6 ck/c7 kw/pre sel/s1 sel/s2 sel/s3 sel/s4 sel/s5 " "$(allns)"
expect_eq "-A --field-selector metadata.namespace=kw" "kw/pre " \
    "$(allns --field-selector metadata.namespace=kw)"
expect_eq "-A --field-selector metadata.namespace!=ck -l app=web" "sel/s1 sel/s2 " \
    "$(allns --field-selector 'metadata.namespace!=ck' -l app=web)"

# ---- kubectl wait --for=delete returns once another process deletes the object ----
create wt gone >/dev/null
kc get cronjob gone -n wt >/dev/null
kubectl wait --for=delete cronjob/gone -n wt --timeout=20s >"$work/wait.out" 2>&1 &
wait_pid=$!
sleep 1
check "kubectl wait --for=delete is still waiting before the delete" kill -0 "$wait_pid"
t0=$(now_ms)
kc delete cronjob gone -n wt >/dev/null &
del_pid=$!
wait "$wait_pid"
wait_rc=$?
wait_ms=$(($(now_ms) - t0))
expect_eq "kubectl wait --for=delete succeeds" "0" "$wait_rc"
check "kubectl wait returned within 3 s of the delete (${wait_ms} ms)" test "$wait_ms" -lt 3000
wait "$del_pid"

# ---- a 3-page list at one revision while creates go on between pages ----
for i in 1 2 3 4 5 6; do create pg "p$i" >/dev/null; done
# creates N: in the background, creates names that sort among the listed ones.
creates() {
    (for i in 1 2 3 4 5 6; do create pg "p$i-$1" >/dev/null; done) &
    creates_pid=$!
}
next_page() { c "$(cj_url pg)?limit=2&continue=$(jq -r .metadata.continue "$work/pg$1.json")"; }
# Each batch runs while the next page is read and is done before the one after.
c "$(cj_url pg)?limit=2" >"$work/pg1.json"
creates a
next_page 1 >"$work/pg2.json"
wait "$creates_pid"
creates b
next_page 2 >"$work/pg3.json"
wait "$creates_pid"
joined() { jq -r "$1" "$work"/pg[123].json | tr '\n' ' '; }
expect_eq "3 pages hold every object exactly once, none created meanwhile" "p1 p2 p3 p4 p5 p6 " \
    "$(joined '.items[].metadata.name')"
pg_rv=$(jq -r .metadata.resourceVersion "$work/pg1.json")
expect_eq "every page carries the first page's resourceVersion" "$pg_rv $pg_rv $pg_rv " \
    "$(joined .metadata.resourceVersion)"
expect_eq "remainingItemCount 4, 2; the last page has neither it nor continue" \
    "2 4 true;2 2 true;2 null false;" "$(for i in 1 2 3; do page "$work/pg$i.json"; done | tr '\n' ';')"
expect_eq "the creates between pages did happen" "18" "$(c "$(cj_url pg)" | jq '.items | length')"

# ---- timed watches, side by side: from a list's rv, by label, bookmarks, the 504 ----
# timed NAME CURL-ARGS...: runs curl, then writes "exit-code elapsed-ms" to NAME.rc.
timed() {
    local out=$1 t
    shift
    t=$(now_ms)
    c -N "$@" >"$out"
    echo "$? $(($(now_ms) - t))" >"$out.rc"
}
timed_pids=()
bg_timed() {
    timed "$@" &
    timed_pids+=($!)
}
create wf old >/dev/null
wf_rv=$(list_rv wf)
create lw before '"app":"web"' >/dev/null
lw_rv=$(list_rv lw)
create bm here >/dev/null
far=$(($(list_rv bm) + 100000))
w=$work
# Two of the wf writes happen before the watch starts and two after: same events either way.
r1=$(create wf w1)
r2=$(replace wf w1 '"v":"2"')
bg_timed "$w/wf" "$(cj_url wf)?watch=1&resourceVersion=$wf_rv&timeoutSeconds=3"
bg_timed "$w/item" \
    "$api/apis/batch/v1/watch/namespaces/wf/cronjobs/w1?resourceVersion=$wf_rv&timeoutSeconds=3"
bg_timed "$w/lw" \
    "$(cj_url lw)?watch=true&labelSelector=app%3Dweb&resourceVersion=$lw_rv&timeoutSeconds=3"
bg_timed "$w/bm1" "$(cj_url bm)?watch=1&timeoutSeconds=3&allowWatchBookmarks=true"
bg_timed "$w/bm0" "$(cj_url bm)?watch=1&timeoutSeconds=3"
bg_timed "$w/504" -D "$w/504.h" "$(cj_url bm)?resourceVersion=$far"
sleep 0.3
r3=$(create wf w2)
delete wf w1
l1=$(create lw l1 '"app":"web"')
l1b=$(replace lw l1 '"app":"db"')
create lw l2 '"app":"db"' >/dev/null
l2=$(replace lw l2 '"app":"web"')
l2b=$(replace lw l2 '"app":"web","x":"1"')
delete lw l2
wait "${timed_pids[@]}"

expect_eq "a watch from a list's resourceVersion sees exactly the later changes, in order" \
    "ADDED w1;MODIFIED w1;ADDED w2;DELETED w1;" "$(events "$w/wf")"
expect_eq "their resourceVersions are the writes'" "$r1 $r2 $r3" \
    "$(jq -rs 'map(select(.type != "DELETED") | .object.metadata.resourceVersion) | join(" ")' "$w/wf")"
jq_true "resourceVersions increase, all after the list's" "$w/wf" \
    '[$list] + map(.object.metadata.resourceVersion | tonumber) | . == unique' -s --argjson list "$wf_rv"
expect_eq "the /watch/ path form of one item sees only that item" \
    "ADDED w1;MODIFIED w1;DELETED w1;" "$(events "$w/item")"
expect_eq "a label-selector watch: stops matching = DELETED, starts matching = ADDED" \
    "ADDED l1;DELETED l1;ADDED l2;MODIFIED l2;DELETED l2;" "$(events "$w/lw")"
expect_eq "the DELETED of a non-match is the last matching state at the change's revision" \
    "web $l1b" "$(jq -rs '.[1].object.metadata | "\(.labels.app) \(.resourceVersion)"' "$w/lw")"
expect_eq "ADDED and MODIFIED on matching again carry the writes' revisions" "$l1 $l2 $l2b" \
    "$(jq -rs '[.[0], .[2], .[3]] | map(.object.metadata.resourceVersion) | join(" ")' "$w/lw")"
expect_eq "allowWatchBookmarks=true: BOOKMARKs arrive" "ADDED here;BOOKMARK" \
    "$(events "$w/bm1" | cut -d';' -f1-2 | sed 's/ null//')"
jq_true "a BOOKMARK is a CronJob that carries a resourceVersion" "$w/bm1" \
    'select(.type == "BOOKMARK") | .object | .kind == "CronJob" and .apiVersion == "batch/v1"
     and (.metadata.resourceVersion | test("^[0-9]+$"))' 
expect_eq "without allowWatchBookmarks: no BOOKMARK" "ADDED here;" "$(events "$w/bm0")"
for f in bm0 bm1 wf; do
    read -r rc ms <"$w/$f.rc"
    check "timeoutSeconds=3 ends the $f stream cleanly in 3-4 s (curl $rc, $ms ms)" \
        test "$rc" = 0 -a "$ms" -ge 2900 -a "$ms" -le 4000
done
read -r rc ms <"$w/504.rc"
cp "$w/504" "$work/body"
jq_true "resourceVersion far ahead: 504 Timeout 'Too large resource version: $far, current: N'" \
    "$work/body" '.code == 504 and .reason == "Timeout"
     and (.message | test("^Timeout: Too large resource version: \($far), current: [0-9]+$"))' \
    --arg far "$far"
retry=$(grep -i '^retry-after' "$w/504.h" | tr -d '\r' | tr '[:upper:]' '[:lower:]')
expect_eq "the 504 names the cause and says when to retry" "ResourceVersionTooLarge 1 retry-after: 1" \
    "$(jq -r '"\(.details.causes[0].reason) \(.details.retryAfterSeconds)"' "$work/body") $retry"
check "the 504 came after waiting ~3 s (${ms} ms)" test "$ms" -ge 2900 -a "$ms" -le 4500

# ---- bad requests ----
code=$(curl_code "$(cj_url sel)?labelSelector=a%20b")
expect_eq "bad label selector: 400" \
    "400 400 BadRequest unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt" \
    "$code $(status_of)"
code=$(curl_code "$(cj_url sel)?fieldSelector=spec.schedule%3Dx")
msg='"spec.schedule" is not a known field selector: only "metadata.name", "metadata.namespace"'
expect_eq "unsupported field selector: 400" "400 400 BadRequest $msg" "$code $(status_of)"
code=$(curl_code "$(cj_url sel)?limit=2&continue=garbage")
msg="invalid continue token: continue key is not valid: "
msg+="invalid character '\\u0081' looking for beginning of value"
expect_eq "malformed continue token: 400" "400 400 BadRequest $msg" "$code $(status_of)"
token=$(jq -r .metadata.continue "$work/p1.json")
code=$(curl_code "$(cj_url ck)?limit=2&continue=$token&resourceVersion=5")
expect_eq "continue with a resourceVersion: 400" \
    "400 400 BadRequest specifying resource version is not allowed when using continue" \
    "$code $(status_of)"
code=$(curl_code "$(cj_url ck)?limit=2&continue=$token&resourceVersion=0")
expect_eq "continue with resourceVersion=0 is allowed" "200 c3" \
    "$code $(jq -r '.items[0].metadata.name' "$work/body")"
code=$(curl_code "$(cj_url ck)?resourceVersionMatch=NotOlderThan")
msg='ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
msg+='resourceVersionMatch is forbidden unless resourceVersion is provided'
expect_eq "resourceVersionMatch without resourceVersion: 422 Invalid" "422 422 Invalid $msg" \
    "$code $(status_of)"
expect_eq "the 422 cause names resourceVersionMatch" "FieldValueForbidden resourceVersionMatch" \
    "$(jq -r '.details.causes[] | "\(.reason) \(.field)"' "$work/body")"

# ---- the history window: a kapi that keeps 1 s of changes ----
stop_kapi
data2=$work/data2
start_kapi "$bin" "$data2" "$port" --watch-history 1 || exit 1
use_kapi "$data2"
kc() { kubectl --kubeconfig "$data2/kubeconfig" --request-timeout=10s "$@"; }
kc create ns h >/dev/null
for i in 1 2 3; do create h "h$i" >/dev/null; done
c "$(cj_url h)?limit=1" >"$work/h1.json"
old_rv=$(jq -r .metadata.resourceVersion "$work/h1.json")
create h h4 >/dev/null
sleep 2.5
create h h5 >/dev/null
code=$(c -N --max-time 5 -o "$work/old" -w '%{http_code}' "$(cj_url h)?watch=1&resourceVersion=1")
expect_eq "a watch from rv 1, older than the history: 200 with one ERROR event" "200 ERROR 1" \
    "$code $(jq -r .type "$work/old") $(wc -l <"$work/old")"
jq_true "the ERROR is a Status 410 Expired 'too old resource version: 1 (N)'" "$work/old" \
    '.object | .kind == "Status" and .code == 410 and .reason == "Expired"
     and (.message | test("^too old resource version: 1 \\([0-9]+\\)$"))' 
code=$(curl_code "$(cj_url h)?resourceVersion=$old_rv&resourceVersionMatch=Exact")
expect_eq "a list at an exact rv that has left the window: 410 Expired" \
    "410 410 Expired The resourceVersion for the provided list is too old." "$code $(status_of)"
code=$(curl_code "$(cj_url h)?limit=1&continue=$(jq -r .metadata.continue "$work/h1.json")")
expect_eq "a continue token whose revision has left the window: 410 Expired" "410 410 Expired" \
    "$code $(jq -r '"\(.code) \(.reason)"' "$work/body")"
check "its message says the continue parameter is too old" grep -q \
    'The provided continue parameter is too old to display a consistent list result' "$work/body"
fresh=$(jq -r '.metadata.continue // ""' "$work/body")
check "the 410 carries a fresh continue token" test -n "$fresh"
code=$(curl_code "$(cj_url h)?continue=$fresh")
expect_eq "the fresh token continues after h1, at the latest revision" "200 h2 h3 h4 h5" \
    "$code $(jq -r '[.items[].metadata.name] | join(" ")' "$work/body")"

# A restart keeps the history the log holds (tests/e2e/integrity.sh resumes watches across
# one); what left the window before it stays gone after it.
latest=$(list_rv h)
sleep 1.5 # the window (1 s) passes over every change
stop_kapi
start_kapi "$bin" "$data2" "$port" --watch-history 1 || exit 1
c -N --max-time 5 "$(cj_url h)?watch=1&resourceVersion=$((latest - 1))" >"$work/body"
expect_eq "after a restart, a watch from a revision that had left the window gets the 410 ERROR" \
    "ERROR 410" "$(jq -r '"\(.type) \(.object.code)"' "$work/body")"
code=$(c -N --max-time 5 -o "$work/body" -w '%{http_code}' \
    "$(cj_url h)?watch=1&resourceVersion=$latest&timeoutSeconds=1")
if [ "${E2E_ETCD:-}" != 1 ]; then
    expect_eq "after a restart, a watch from the current revision streams (no events)" "200 0" \
        "$code $(wc -c <"$work/body")"
else
    # On etcd the history starts with the instance (as kube-apiserver's watch cache does),
    # after the elected controllers' first lease write: the client re-lists.
    expect_eq "on etcd, after a restart, a watch from before it gets the 410 ERROR" \
        "200 ERROR 410" "$code $(jq -r '"\(.type) \(.object.code)"' "$work/body")"
fi
e2e_finish
