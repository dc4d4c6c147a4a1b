#!/usr/bin/env bash
# Issue 20's controllers on two kapi instances sharing one etcd: only the instance holding
# the lease acts (the cronjob controller creates each Job once, the garbage collector
# collects), and when it is killed the other takes over and goes on from where the
# cluster is, without creating a Job twice. Both instances read the same controllers'
# test clock (a file each, written together, reread on SIGHUP).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
require_etcd
trap 'stop_kapi; stop_b; stop_etcd; rm -rf "$work"' EXIT
start_etcd "$work/etcd" 1 || exit 1
clock_a=$work/clock-a
clock_b=$work/clock-b
echo 0s | tee "$clock_a" >"$clock_b"
short=(--etcd-servers "$ETCD_SERVERS" --leader-elect-lease-duration=3s
    --leader-elect-renew-deadline=2s --leader-elect-retry-period=500ms)
data_b=$work/data-b
port_b=$(free_port)
start_kapi "$bin" "$data" "$port" "${short[@]}" --controllers='*' \
    --controllers-clock-file "$clock_a" || exit 1
start_b "$bin" "$data_b" "$port_b" "${short[@]}" --controllers-clock-file "$clock_b" ||
    exit 1
sed "s/127.0.0.1:$port/127.0.0.1:$port_b/" "$data/kubeconfig" >"$work/kubeconfig-b"
cur=$data/kubeconfig
kc() { kubectl --kubeconfig "$cur" --request-timeout=10s -n e2e "$@"; }
leads() { grep -c "] leading:" "$1"; }
# set_clock UNIX: both instances' controllers read UNIX (seconds) from now on.
set_clock() {
    echo "$(($1 - $(date +%s)))s" | tee "$clock_a" >"$clock_b"
    [ -n "${KAPI_PID:-}" ] && kill -HUP "$KAPI_PID" 2>/dev/null
    [ -n "$B_PID" ] && kill -HUP "$B_PID" 2>/dev/null
}
jobs_of() { kc get jobs -o jsonpath='{range .items[*]}{.metadata.name} {end}'; }
wait_jobs() { # wait_jobs EXPECTED
    for _ in $(seq 1 100); do [ "$(jobs_of)" = "$1" ] && break; sleep 0.1; done
    jobs_of
}

check "A leads" eventually grep -q "] leading:" "$data.log"
kubectl --kubeconfig "$cur" create namespace e2e >/dev/null
kc create -f - >/dev/null <<'J'
{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "every"},
 "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec":
   {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
J
c=$(date -d "$(kc get cronjob every -o jsonpath='{.metadata.creationTimestamp}')" +%s)
m=$(((c / 60 + 1) * 60))
set_clock $((m + 1))
expect_eq "the leader creates the first minute's Job" "every-$((m / 60)) " \
    "$(wait_jobs "every-$((m / 60)) ")"
expect_eq "only A leads" "1 0" "$(leads "$data.log") $(leads "$data_b.log")"

kill -KILL "$KAPI_PID"
wait "$KAPI_PID" 2>/dev/null
KAPI_PID=
cur=$work/kubeconfig-b
check "B leads once A's lease expired" eventually grep -q "] leading:" "$data_b.log"
set_clock $((m + 61))
expect_eq "B creates the next minute's Job, and not the first again" \
    "every-$((m / 60)) every-$((m / 60 + 1)) " \
    "$(wait_jobs "every-$((m / 60)) every-$((m / 60 + 1)) ")"
expect_eq "no Job was refused as existing" "0" \
    "$(kc get events -o jsonpath='{range .items[*]}{.reason} {end}' | grep -o FailedCreate | wc -l)"
check "B's garbage collector takes the Jobs with their CronJob" \
    kc delete cronjob every --cascade=foreground --timeout=20s
expect_eq "the Jobs are gone" "" "$(wait_jobs "")"
e2e_finish
