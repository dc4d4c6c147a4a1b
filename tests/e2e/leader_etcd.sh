#!/usr/bin/env bash
# Leader election between two kapi instances on one etcd (issue 17): the controllers run
# in the instance holding the Lease kube-system/kube-controller-manager and nowhere else;
# a clean stop hands them over at once; a killed leader is replaced within the lease
# duration, not before it expired. Short durations (3 s lease, 2 s renew deadline,
# 500 ms retry period) keep it quick.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
require_etcd
trap 'stop_kapi; stop_b; stop_etcd; rm -rf "$work"' EXIT
start_etcd "$work/etcd" 1 || exit 1
short=(--etcd-servers "$ETCD_SERVERS" --leader-elect-lease-duration=3s
    --leader-elect-renew-deadline=2s --leader-elect-retry-period=500ms)
data_b=$work/data-b
port_b=$(free_port)

start_kapi "$bin" "$data" "$port" "${short[@]}" || exit 1
start_b "$bin" "$data_b" "$port_b" "${short[@]}" || exit 1
# The same kubeconfig (one identity), pointed at B; kc talks to the instance in $cur.
sed "s/127.0.0.1:$port/127.0.0.1:$port_b/" "$data/kubeconfig" >"$work/kubeconfig-b"
cur=$data/kubeconfig
kc() { kubectl --kubeconfig "$cur" --request-timeout=10s "$@"; }
id_a="$(hostname)_$(cat "$data/instance-id")"
id_b="$(hostname)_$(cat "$data_b/instance-id")"
holder() {
    kc -n kube-system get lease kube-controller-manager \
        -o go-template='{{.spec.holderIdentity}} {{.spec.leaseTransitions}}'
}
holder_is() { [ "$(holder)" = "$1" ]; }
has_default_sa() { kc -n "$1" get serviceaccount default >/dev/null 2>&1; }
# leads LOG: how many times the instance of LOG began leading.
leads() { grep -c "] leading:" "$1"; }

check "two instances, distinct identities" test "$id_a" != "$id_b"
check "A, started first, holds the lease" eventually holder_is "$id_a 0"
sleep 1
expect_eq "only A runs the controllers" "1 0" "$(leads "$data.log") $(leads "$data_b.log")"
kc create namespace one >/dev/null
check "A's controllers serve the cluster (a new namespace's default ServiceAccount)" \
    eventually has_default_sa one

# A clean stop releases the lease: B takes over within its retry period.
stopped=$(date +%s%N)
stop_kapi
cur=$work/kubeconfig-b
check "B holds the lease once A stopped, one transition" eventually holder_is "$id_b 1"
took=$((($(date +%s%N) - stopped) / 1000000))
check "B took over at once (${took} ms, the lease is 3 s)" test "$took" -lt 2500
check "B runs the controllers" eventually grep -q "] leading:" "$data_b.log"
kc create namespace two >/dev/null
check "B's controllers serve the cluster" eventually has_default_sa two

# A back: B keeps the lease. B killed: A takes over once B's lease expired.
start_kapi "$bin" "$data" "$port" "${short[@]}" || exit 1
sleep 1
expect_eq "A, back, waits: B still leads" "$id_b 1 0" "$(holder) $(leads "$data.log")"
kill -KILL "$B_PID"
wait "$B_PID" 2>/dev/null
B_PID=
killed=$(date +%s%N)
cur=$data/kubeconfig
for _ in $(seq 1 100); do
    holder_is "$id_a 2" && break
    sleep 0.1
done
took=$((($(date +%s%N) - killed) / 1000000))
expect_eq "A holds the lease after B was killed, one more transition" "$id_a 2" "$(holder)"
check "not before B's lease expired (${took} ms, the lease is 3 s)" test "$took" -ge 2000
check "within the lease and two retries (${took} ms)" test "$took" -lt 6000
kc create namespace three >/dev/null
check "A's controllers serve the cluster again" eventually has_default_sa three
e2e_finish
