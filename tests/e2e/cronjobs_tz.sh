#!/usr/bin/env bash
# A CronJob whose time zone becomes unknown (kube-controller-manager's UnknownTimeZone):
# the zone comes from the directory ZONEINFO names, as Go's time package reads it; kapi
# restarted after the zone file went gets the event and creates no Job, and `kubectl
# describe cronjob` shows it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
export ZONEINFO=$work/zoneinfo
mkdir -p "$ZONEINFO/Test"
cp /usr/share/zoneinfo/Europe/Paris "$ZONEINFO/Test/Zone"
clock=$work/clock
echo 0s >"$clock"
start_kapi "$bin" "$data" "$port" --controllers='*' --controllers-clock-file "$clock" || exit 1
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=10s "$@"; }
check "a CronJob in a zone only ZONEINFO has" kc create -f - <<'J'
{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "zoned"},
 "spec": {"schedule": "* * * * *", "timeZone": "Test/Zone", "jobTemplate": {"spec":
   {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
J
stop_kapi
rm "$ZONEINFO/Test/Zone"
start_kapi "$bin" "$data" "$port" --controllers='*' --controllers-clock-file "$clock" || exit 1
echo 120s >"$clock"
kill -HUP "$KAPI_PID"
events() { kc get events -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'; }
check "the controller records UnknownTimeZone" eventually bash -c "$(declare -f kc events); events | grep -q UnknownTimeZone"
expect_eq "with kube's message" 'UnknownTimeZone: invalid timeZone: "Test/Zone": unknown time zone Test/Zone' \
    "$(events | grep UnknownTimeZone | head -1)"
expect_eq "and creates no Job" "" "$(kc get jobs -o name)"
check "kubectl describe cronjob shows the event" bash -c "kubectl describe cronjob zoned | grep -q 'UnknownTimeZone.*cronjob-controller.*invalid timeZone'"
e2e_finish
