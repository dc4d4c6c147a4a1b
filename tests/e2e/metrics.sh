#!/usr/bin/env bash
# /metrics (issue 21), as a Prometheus operator meets it: authorized like kube-apiserver's
# (anonymous and an ordinary user get 403, a member of system:monitoring 200), parsed by
# a strict reader (metrics_check.py: the format line by line, then prometheus_client's
# parsers), text or OpenMetrics as Accept asks; its counters move as requests are made, its
# histograms stay consistent, its gauges follow the watchers and the stored objects.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
cat >"$work/tokens.csv" <<'EOF'
prom-token,prom,2001,"system:monitoring"
alice-token,alice,2002,
EOF
start_kapi "$bin" "$data" "$port" --token-auth-file "$work/tokens.csv" || exit 1
export KUBECONFIG=$data/kubeconfig
api=https://127.0.0.1:$port
checker() { /usr/bin/python3 "$here/metrics_check.py" "$@"; }
# scrape FILE [CURL-ARGS...]: /metrics as prom into FILE; the status code on stdout.
scrape() {
    curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer prom-token" -o "$1" \
        -D "$1.headers" -w '%{http_code}' "${@:2}" "$api/metrics"
}
# metric FILE NAME [LABEL=VALUE...]: the sum of the matching samples.
metric() { checker sum "$@"; }
content_type() { tr -d '\r' <"$1.headers" | sed -n 's/^[Cc]ontent-[Tt]ype: //p'; }

# ---- who may read it ----
code=$(curl -s --cacert "$data/ca.crt" -o "$work/anon" -w '%{http_code}' "$api/metrics")
expect_eq "anonymous gets 403" 403 "$code"
expect_eq "with kube's Status message" \
    'forbidden: User "system:anonymous" cannot get path "/metrics"' \
    "$(jq -r .message "$work/anon")"
code=$(curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer alice-token" -o /dev/null \
    -w '%{http_code}' "$api/metrics")
expect_eq "a user outside system:monitoring gets 403" 403 "$code"
expect_eq "a user in system:monitoring gets 200" 200 "$(scrape "$work/m0")"
expect_eq "in the text format 0.0.4" "text/plain; version=0.0.4; charset=utf-8" \
    "$(content_type "$work/m0")"
check "the text exposition passes the strict reader" checker check text "$work/m0"
expect_eq "the admin (system:masters) reads it too" 200 \
    "$(curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer $(cat "$data/admin-token" 2>/dev/null)" \
        -o /dev/null -w '%{http_code}' "$api/metrics")"

# ---- counters move ----
# (kapi serves no ConfigMaps: CronJobs, whose controller is off here, are the objects)
post=(apiserver_request_total verb=POST group=batch version=v1 resource=cronjobs subresource=
      scope=resource component=apiserver code=201 dry_run=)
cj() { kubectl create cronjob "$1" --image=busybox --schedule='*/5 * * * *' "${@:2}"; }
before=$(metric "$work/m0" "${post[@]}")
for i in 1 2 3; do cj "cj$i" >/dev/null; done
cj dry --dry-run=server >/dev/null
kubectl get cronjob cj1 >/dev/null
kubectl get cronjob cj2 >/dev/null
kubectl get cronjob missing >/dev/null 2>&1
kubectl get cronjobs -n default >/dev/null
scrape "$work/m1" >/dev/null
check "after the writes, the exposition passes the strict reader" checker check text "$work/m1"
expect_eq "3 CronJobs created: POST cronjobs code=201 rose by 3" 3 \
    "$(($(metric "$work/m1" "${post[@]}") - before))"
expect_eq "the dry-run create is counted as dry_run=All" 1 \
    "$(metric "$work/m1" apiserver_request_total verb=POST resource=cronjobs dry_run=All code=201)"
expect_eq "2 GETs of a CronJob by name: verb GET, scope resource, code 200" 2 \
    "$(metric "$work/m1" apiserver_request_total verb=GET resource=cronjobs scope=resource code=200)"
expect_eq "a GET of a missing one: code 404" 1 \
    "$(metric "$work/m1" apiserver_request_total verb=GET resource=cronjobs code=404)"
expect_eq "a list in a namespace: verb LIST, scope namespace" 1 \
    "$(metric "$work/m1" apiserver_request_total verb=LIST resource=cronjobs scope=namespace code=200)"
expect_eq "the latency histogram counted the 3 creates" 3 \
    "$(metric "$work/m1" apiserver_request_duration_seconds_count verb=POST resource=cronjobs dry_run=)"
expect_eq "and the response sizes the 3 GETs" 3 \
    "$(metric "$work/m1" apiserver_response_sizes_count verb=GET resource=cronjobs)"
expect_eq "a server-side apply is verb APPLY" 1 "$(
    printf 'apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: applied\nspec:\n  schedule: "0 3 * * *"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers: [{name: main, image: busybox}]\n' |
        kubectl apply --server-side -f - >/dev/null
    scrape "$work/m2" >/dev/null
    metric "$work/m2" apiserver_request_total verb=APPLY resource=cronjobs code=201)"
curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer prom-token" -o /dev/null \
    "$api/api/v1/namespaces/default/configmaps/x%0Ay"
curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer prom-token" -o /dev/null \
    "$api/apis/no.such.group/v1/things/\"quoted\""
cj nowhere -n no-such-namespace >/dev/null 2>&1
scrape "$work/m3" >/dev/null
expect_eq "admission: the create into a missing namespace is a rejected admit step" 1 \
    "$(metric "$work/m3" apiserver_admission_step_admission_duration_seconds_count type=admit \
        operation=CREATE rejected=true)"
check "and the creates before it admitted ones" \
    test "$(metric "$work/m3" apiserver_admission_step_admission_duration_seconds_count \
        type=admit operation=CREATE rejected=false)" -ge 4
check "client strings do not become labels" \
    sh -c "! grep -E 'no.such.group|things|quoted|x\\\\n' '$work/m3'"
check "a nonResourceURL is counted under its path: the 2 scrapes before" \
    test "$(metric "$work/m1" apiserver_request_total verb=GET subresource=/metrics code=200)" = 2
expect_eq "and the 2 refusals" 2 \
    "$(metric "$work/m1" apiserver_request_total verb=GET subresource=/metrics code=403)"

# ---- gauges ----
expect_eq "apiserver_storage_objects counts the CronJobs" \
    "$(kubectl get cronjobs -A --no-headers | wc -l)" \
    "$(metric "$work/m3" apiserver_storage_objects resource=cronjobs.batch)"
expect_eq "and the namespaces" "$(kubectl get namespaces --no-headers | wc -l)" \
    "$(metric "$work/m3" apiserver_storage_objects resource=namespaces)"
check "the scrape itself is a readOnly request in flight" \
    test "$(metric "$work/m3" apiserver_current_inflight_requests request_kind=readOnly)" -ge 1
check "the store's latency is recorded (etcd_request_duration_seconds, commit)" \
    test "$(metric "$work/m3" etcd_request_duration_seconds_count operation=commit)" -ge 4
watchers() {
    scrape "$work/w" >/dev/null
    metric "$work/w" apiserver_registered_watchers group=batch version=v1 kind=CronJob
}
base_watchers=$(watchers)
kubectl get cronjobs -w --output-watch-events >"$work/watch.out" 2>&1 &
watch_pid=$!
watchers_are() { test "$(watchers)" = "$1"; }
check "a watch is a registered watcher" eventually watchers_are $((base_watchers + 1))
check "and a long-running request" \
    test "$(metric "$work/w" apiserver_longrunning_requests verb=WATCH resource=cronjobs)" -ge 1
events_before=$(metric "$work/w" apiserver_watch_events_total group=batch version=v1 kind=CronJob)
cj cj4 >/dev/null
check "the watcher gets the event" eventually grep -q 'ADDED.*cj4' "$work/watch.out"
scrape "$work/m4" >/dev/null
check "apiserver_watch_events_total counts it" \
    test "$(metric "$work/m4" apiserver_watch_events_total group=batch version=v1 kind=CronJob)" -gt \
    "$events_before"
kill "$watch_pid" 2>/dev/null
wait "$watch_pid" 2>/dev/null
check "the watcher is gone from the gauge once its client is" \
    eventually watchers_are "$base_watchers"

# ---- the process ----
check "process_resident_memory_bytes is there" \
    test "$(metric "$work/m4" process_resident_memory_bytes)" -gt 1000000
check "process_open_fds and process_max_fds" \
    test "$(metric "$work/m4" process_open_fds)" -gt 3 -a "$(metric "$work/m4" process_max_fds)" -gt 3
start=$(metric "$work/m4" process_start_time_seconds | cut -d. -f1)
check "process_start_time_seconds is within the last 10 minutes" \
    test "$start" -le "$(date +%s)" -a "$start" -gt $(($(date +%s) - 600))
check "kapi_threads counts the threads" test "$(metric "$work/m4" kapi_threads)" -gt 2
check "process_cpu_seconds_total is a counter" grep -q '^# TYPE process_cpu_seconds_total counter$' "$work/m4"

# ---- the Grafana dashboard reads only what kapi serves ----
missing=$(jq -r '.panels[].targets[]?.expr' "$here/../../deploy/grafana/kapi-dashboard.json" |
    grep -oE '\b(apiserver|etcd|process|kapi)_[a-z_]+' | sort -u |
    while read -r name; do grep -q "^$name[{ ]" "$work/m4" || echo "$name"; done)
expect_eq "every metric of deploy/grafana/kapi-dashboard.json is served" "" "$missing"

# ---- OpenMetrics ----
expect_eq "Accept: application/openmetrics-text gets 200" 200 \
    "$(scrape "$work/om" -H 'Accept: application/openmetrics-text; version=1.0.0; charset=utf-8,text/plain;version=0.0.4;q=0.5,*/*;q=0.1')"
expect_eq "as OpenMetrics 1.0.0" "application/openmetrics-text; version=1.0.0; charset=utf-8" \
    "$(content_type "$work/om")"
check "the OpenMetrics exposition passes the strict reader" checker check openmetrics "$work/om"
check "its counter families drop _total" grep -q '^# TYPE apiserver_request counter$' "$work/om"
expect_eq "it ends with # EOF" "# EOF" "$(tail -1 "$work/om")"
expect_eq "an unknown OpenMetrics version gets the text format" \
    "text/plain; version=0.0.4; charset=utf-8" \
    "$(scrape "$work/om2" -H 'Accept: application/openmetrics-text; version=9.9.9' >/dev/null
       content_type "$work/om2")"
e2e_finish
