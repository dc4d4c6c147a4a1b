#!/usr/bin/env bash
# Leader election of kapi's controllers on the Lease kube-system/kube-controller-manager,
# as one kapi on its own data dir meets it with --leader-elect (on by default with etcd
# only; two kapi processes cannot share a SQLite data dir, and
# tests/unit/controllers/test_leader.c runs two electors over one store): the lease
# held at start as kube-controller-manager holds it, released by a clean stop, renewed at
# once after kill -9, left alone with --leader-elect=false; another holder stops the
# controllers until its lease expires; bad durations are refused.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=10s "$@"; }
short=(--leader-elect --leader-elect-lease-duration=3s --leader-elect-renew-deadline=2s
    --leader-elect-retry-period=500ms)
lease() {
    kc -n kube-system get lease kube-controller-manager \
        -o go-template='{{.spec.holderIdentity}} {{.spec.leaseDurationSeconds}} {{.spec.leaseTransitions}}'
}
# expect_lease NAME WANT: the lease's holder, duration and transitions are WANT within 5 s
# (the elector writes on its own thread, as kapi starts serving).
expect_lease() {
    local got
    for _ in $(seq 1 50); do
        got=$(lease)
        [ "$got" = "$2" ] && break
        sleep 0.1
    done
    expect_eq "$1" "$2" "$got"
}
# has_default_sa NS: the serviceaccounts controller made NS's default ServiceAccount.
has_default_sa() { kc -n "$1" get serviceaccount default >/dev/null 2>&1; }

start_kapi "$bin" "$data" "$port" --leader-elect || exit 1
id="$(hostname)_$(cat "$data/instance-id")"
expect_lease "a fresh kapi holds the lease as <hostname>_<uuid>, 15 s, no transition yet" \
    "$id 15 0"
check "acquireTime and renewTime are MicroTimes" sh -c \
    "kubectl -n kube-system get lease kube-controller-manager -o go-template='{{.spec.acquireTime}} {{.spec.renewTime}}' |
     grep -qE '^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z ?){2}\$'"
check "written by kube-controller-manager" sh -c \
    "kubectl -n kube-system get lease kube-controller-manager --show-managed-fields \
     -o go-template='{{range .metadata.managedFields}}{{.manager}} {{end}}' | grep -qx 'kube-controller-manager '"
expect_eq "kubectl get leases -n kube-system" "kube-controller-manager $id" \
    "$(kc -n kube-system get leases --no-headers | awk '{print $1, $2}')"
kc create namespace one >/dev/null
check "the leader's controllers run (a new namespace's default ServiceAccount)" \
    eventually has_default_sa one

# A clean stop releases the lease: the next start takes it over at once, one transition.
stop_kapi
start_kapi "$bin" "$data" "$port" "${short[@]}" || exit 1
expect_lease "released at stop, taken at start: one transition" "$id 3 1"

# kill -9 leaves the lease held; this instance's identity is kept in its data dir, so a
# restart renews it at once (kube-controller-manager would wait 15 s for it to expire).
kill -9 "$KAPI_PID"
wait "$KAPI_PID" 2>/dev/null
KAPI_PID=
# (With E2E_ETCD=1 the killed kapi's etcd goes on: the restart is on it.)
store=()
[ -n "${KAPI_ETCD_PIDS[*]:-}" ] && store=(--etcd-servers "$ETCD_SERVERS")
start_kapi "$bin" "$data" "$port" --leader-elect "${store[@]}" || exit 1
expect_lease "renewed at once after kill -9, no transition" "$id 15 1"
kc create namespace two >/dev/null
check "the controllers run at once after kill -9" eventually has_default_sa two

# --leader-elect=false: the lease is left as it is (released by the stop) and the
# controllers run.
stop_kapi
start_kapi "$bin" "$data" "$port" --leader-elect=false || exit 1
sleep 1
expect_eq "--leader-elect=false leaves the released lease alone" " 1 1" "$(lease)"
kc create namespace three >/dev/null
check "--leader-elect=false runs the controllers" eventually has_default_sa three

# Another holder: kapi stops its controllers at its next renewal and takes the lease back
# once the other's has expired (3 s after it last saw it change).
stop_kapi
start_kapi "$bin" "$data" "$port" "${short[@]}" || exit 1
expect_lease "taken again" "$id 3 2"
kc -n kube-system patch lease kube-controller-manager --type=merge -p \
    "{\"spec\":{\"holderIdentity\":\"other_1\",\"renewTime\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)\",\"leaseTransitions\":3}}" \
    >/dev/null
check "kapi stops leading when another holds the lease" \
    eventually grep -q "not leading: the controllers stopped" "$KAPI_LOG"
kc create namespace four >/dev/null
sleep 1
check "no controller runs while another holds the lease" sh -c "! kubectl -n four get sa default"
check "the lease is taken back once the other's expired, and the controllers run again" \
    eventually has_default_sa four
expect_lease "held again, one more transition" "$id 3 4"
stop_kapi

# Durations are checked together, as client-go checks them.
for bad in "--leader-elect-lease-duration=5s:leaseDuration must be greater than renewDeadline" \
    "--leader-elect-retry-period=9s:renewDeadline must be greater than retryPeriod*JitterFactor" \
    "--leader-elect-retry-period=0s:must be greater than zero"; do
    out=$("$bin" --data-dir "$work/never" --leader-elect "${bad%%:*}" 2>&1)
    rc=$?
    expect_eq "$bad" "1 yes" "$rc $(grep -qF -- "${bad#*:}" <<<"$out" && echo yes)"
done
# Without the flag: elected on etcd, not on SQLite.
start_kapi "$bin" "$data" "$port" || exit 1
if [ -n "${KAPI_ETCD_PIDS[*]:-}" ]; then
    check "on etcd, the controllers are elected by default" \
        eventually grep -q "leader election on lease" "$KAPI_LOG"
else
    check "on SQLite, the controllers run without an election by default" \
        sh -c "! grep -q 'leader election on lease' '$KAPI_LOG'"
fi
e2e_finish
