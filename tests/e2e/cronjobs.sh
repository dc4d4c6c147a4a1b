#!/usr/bin/env bash
# CronJobs that run: the cronjob controller (kube-controller-manager 1.26's v2) on the
# controllers' test clock. The clock file holds an offset from the system clock; kapi
# reads it again on SIGHUP, and the controllers make a pass at once. Jobs are finished
# by patching their /status, as a runner of Jobs does (kapi runs no Pods).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
clock=$work/clock
echo 0s >"$clock"
start_kapi "$bin" "$data" "$port" --controllers='*' --controllers-clock-file "$clock" || exit 1
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=10s -n e2e "$@"; }
kubectl create namespace e2e >/dev/null

# set_clock UNIX: the controllers' clock reads UNIX (seconds) from now on.
set_clock() {
    echo "$(($1 - $(date +%s)))s" >"$clock"
    kill -HUP "$KAPI_PID"
}
# The first minute boundary after the CronJob name's creation.
first_minute() {
    local c
    c=$(date -d "$(kc get cronjob "$1" -o jsonpath='{.metadata.creationTimestamp}')" +%s)
    echo $(((c / 60 + 1) * 60))
}
# mk NAME [SPEC [SCHEDULE]]: a CronJob (every minute unless SCHEDULE; busybox), SPEC's
# members added to its spec; the
# clock is set back to the system's first, so that its first run is the next minute.
mk() {
    echo 0s >"$clock"
    kill -HUP "$KAPI_PID"
    kc create -f - >/dev/null <<J
{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "$1"},
 "spec": {"schedule": "${3:-* * * * *}", "jobTemplate": {"spec": {"template": {"spec":
   {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}${2:-}}}
J
}
jobs_of() { kc get jobs -o jsonpath="{range .items[?(@.metadata.ownerReferences[0].name==\"$1\")]}{.metadata.name} {end}"; }
# finish JOB TYPE START END: reports the Job finished (Complete or Failed).
finish() {
    kc patch job "$1" --subresource=status --type=merge -p "{\"status\":{\"startTime\":\"$3\",\"completionTime\":\"$4\",\"conditions\":[{\"type\":\"$2\",\"status\":\"True\",\"lastProbeTime\":\"$4\",\"lastTransitionTime\":\"$4\"}]}}" >/dev/null
}
wait_jobs() { # wait_jobs CRONJOB EXPECTED
    for _ in $(seq 1 50); do [ "$(jobs_of "$1")" = "$2" ] && break; sleep 0.1; done
    jobs_of "$1"
}

# ---- every minute, on time ----
mk every
m=$(first_minute every)
set_clock $((m - 2))
sleep 1
expect_eq "nothing before the first schedule time" "" "$(jobs_of every)"
set_clock $((m + 1))
expect_eq "the Job of the first minute, named by its minutes since the epoch" \
    "every-$((m / 60)) " "$(wait_jobs every "every-$((m / 60)) ")"
set_clock $((m + 61))
expect_eq "and the next minute's" "every-$((m / 60)) every-$((m / 60 + 1)) " \
    "$(wait_jobs every "every-$((m / 60)) every-$((m / 60 + 1)) ")"
j=every-$((m / 60))
expect_eq "the Job: owner reference, labels and spec from the template" \
    "CronJob every true true busybox" \
    "$(kc get job "$j" -o jsonpath='{.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller} {.metadata.ownerReferences[0].blockOwnerDeletion} {.spec.template.spec.containers[0].image}')"
expect_eq "status: active and lastScheduleTime" \
    "2 $(date -u -d @$((m + 60)) +%Y-%m-%dT%H:%M:%SZ)" \
    "$(kc get cronjob every -o jsonpath='{.status.active[*].name}' | wc -w) $(kc get cronjob every -o jsonpath='{.status.lastScheduleTime}')"
expect_eq "events: SuccessfulCreate from cronjob-controller" \
    "cronjob-controller SuccessfulCreate Created job $j" \
    "$(kc get events --field-selector involvedObject.name=every -o jsonpath='{range .items[*]}{.source.component} {.reason} {.message}{"\n"}{end}' | grep -m1 "Created job $j")"
expect_eq "kubectl describe cronjob shows the events" "Normal SuccessfulCreate" \
    "$(kc describe cronjob every | grep -m1 SuccessfulCreate | awk '{print $1, $2}')"
check "kubectl create job --from=cronjob/every" kc create job manual --from=cronjob/every
kc delete cronjob every >/dev/null

# ---- in its time zone: 09:30 in Kolkata is 04:00 UTC ----
mk tz ', "timeZone": "Asia/Kolkata"' '30 9 * * *'
c=$(date -d "$(kc get cronjob tz -o jsonpath='{.metadata.creationTimestamp}')" +%s)
t=$(((c - 14400) / 86400 * 86400 + 86400 + 14400))
[ $((t - 86400)) -gt "$c" ] && t=$((t - 86400))
set_clock $((t - 60))
sleep 1
expect_eq "no Job before 09:30 in Kolkata" "" "$(jobs_of tz)"
set_clock $((t + 1))
expect_eq "a Job at 09:30 in Kolkata (04:00 UTC)" "tz-$((t / 60)) " "$(wait_jobs tz "tz-$((t / 60)) ")"
kc delete cronjob tz >/dev/null

# ---- Forbid skips while a Job is active ----
mk forbid ', "concurrencyPolicy": "Forbid"'
m=$(first_minute forbid)
set_clock $((m + 1))
wait_jobs forbid "forbid-$((m / 60)) " >/dev/null
set_clock $((m + 61))
sleep 1
expect_eq "Forbid: no second Job while the first is active" "forbid-$((m / 60)) " "$(jobs_of forbid)"
expect_eq "Forbid: the JobAlreadyActive event" "Normal JobAlreadyActive" \
    "$(kc describe cronjob forbid | grep -m1 JobAlreadyActive | awk '{print $1, $2}')"
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
finish "forbid-$((m / 60))" Complete "$now" "$now"
expect_eq "Forbid: once it finished, the missed minute runs" \
    "forbid-$((m / 60)) forbid-$((m / 60 + 1)) " \
    "$(wait_jobs forbid "forbid-$((m / 60)) forbid-$((m / 60 + 1)) ")"
expect_eq "SawCompletedJob" "Normal SawCompletedJob Saw completed job: forbid-$((m / 60)), status: Complete" \
    "$(kc get events --field-selector involvedObject.name=forbid,reason=SawCompletedJob -o jsonpath='{.items[0].type} {.items[0].reason} {.items[0].message}')"
kc delete cronjob forbid >/dev/null

# ---- Replace replaces the active Job ----
mk replace ', "concurrencyPolicy": "Replace"'
m=$(first_minute replace)
set_clock $((m + 1))
wait_jobs replace "replace-$((m / 60)) " >/dev/null
set_clock $((m + 61))
expect_eq "Replace: the active Job is deleted, the next created" "replace-$((m / 60 + 1)) " \
    "$(wait_jobs replace "replace-$((m / 60 + 1)) ")"
expect_eq "Replace: SuccessfulDelete" "Deleted job replace-$((m / 60))" \
    "$(kc get events --field-selector involvedObject.name=replace,reason=SuccessfulDelete -o jsonpath='{.items[0].message}')"
kc delete cronjob replace >/dev/null

# ---- history limits: the oldest finished Jobs go ----
mk hist ', "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1'
m=$(first_minute hist)
for i in 0 1 2; do
    set_clock $((m + 60 * i + 1))
    wait_jobs hist "$(for k in $(seq 0 $i); do printf 'hist-%s ' $((m / 60 + k)); done)" >/dev/null
done
finish "hist-$((m / 60))" Complete 2024-01-01T00:00:00Z 2024-01-01T00:01:00Z
finish "hist-$((m / 60 + 1))" Complete 2024-01-01T00:02:00Z 2024-01-01T00:03:00Z
finish "hist-$((m / 60 + 2))" Failed 2024-01-01T00:04:00Z 2024-01-01T00:05:00Z
expect_eq "successfulJobsHistoryLimit 1: the older Complete Job is deleted" \
    "hist-$((m / 60 + 1)) hist-$((m / 60 + 2)) " \
    "$(wait_jobs hist "hist-$((m / 60 + 1)) hist-$((m / 60 + 2)) ")"
expect_eq "lastSuccessfulTime is the latest completion" "2024-01-01T00:05:00Z" \
    "$(kc get cronjob hist -o jsonpath='{.status.lastSuccessfulTime}')"
kc delete cronjob hist >/dev/null

# ---- suspend stops creation ----
mk susp ', "suspend": true'
m=$(first_minute susp)
set_clock $((m + 1))
sleep 1
expect_eq "suspended: no Job" "" "$(jobs_of susp)"
kc patch cronjob susp --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
expect_eq "resumed: the missed minute runs" "susp-$((m / 60)) " "$(wait_jobs susp "susp-$((m / 60)) ")"

# ---- a change the controller does nothing for: annotations ----
# kube syncs a CronJob at each change; kapi skips one whose spec, status and identity are
# as its last sync found them when that sync did nothing, so the test is what still runs:
# the Job on time, and the warning a sync records, at every change, as kube records it.
mk quiet
m=$(first_minute quiet)
kc annotate cronjob quiet note=1 >/dev/null
kc annotate cronjob quiet note=2 --overwrite >/dev/null
set_clock $((m + 1))
expect_eq "annotated: the Job still runs on time" "quiet-$((m / 60)) " \
    "$(wait_jobs quiet "quiet-$((m / 60)) ")"
mk tzs '' 'CRON_TZ=UTC 0 0 1 1 *' 2>/dev/null
warnings() {
    kc get events --field-selector involvedObject.name=tzs,reason=UnsupportedSchedule -o name |
        wc -l
}
wait_warnings() {
    for _ in $(seq 1 50); do [ "$(warnings)" -ge "$1" ] && break; sleep 0.1; done
    warnings
}
expect_eq "a TZ in the schedule is warned of" 1 "$(wait_warnings 1)"
kc annotate cronjob tzs note=1 >/dev/null 2>&1
expect_eq "and again after an annotation, as kube's sync warns" 2 "$(wait_warnings 2)"

echo "$E2E_PASSED passed, $E2E_FAILED failed"
[ "$E2E_FAILED" = 0 ]
