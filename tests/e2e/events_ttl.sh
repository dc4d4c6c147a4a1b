#!/usr/bin/env bash
# Events expire --event-ttl after their last write, whichever API wrote them, as
# kube-apiserver's leases make them go; a watcher sees the deletion; an Event written
# again lives on; other objects stay.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
start_kapi "$bin" "$data" "$port" --event-ttl 3s || exit 1
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=10s "$@"; }
event() { # event API NAME
    if [ "$1" = core ]; then
        printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"%s"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"default"},"reason":"Seen","message":"m","type":"Normal"}' "$2"
    else
        printf '{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"%s"},"eventTime":"2024-01-01T00:00:00.000000Z","reportingController":"e2e","reportingInstance":"e2e-1","action":"Test","reason":"Seen","regarding":{"kind":"ConfigMap","name":"x","namespace":"default"},"type":"Normal"}' "$2"
    fi
}
check "a core/v1 Event is created" kc create -f - <<<"$(event core e-core)"
check "an events.k8s.io/v1 Event is created" kc create -f - <<<"$(event new e-new)"
check "a Namespace is created" kc create namespace keep
kc get events --watch-only -o name >"$work/watch.txt" 2>&1 &
watcher=$!
sleep 1.5
check "an Event written again" kc label event e-core again=yes
sleep 2.5 # 4 s: e-new is past its 3 s, e-core was written 2.5 s ago
expect_eq "the Event not written again is gone" "" \
    "$(kc get events e-new -o name --ignore-not-found 2>&1)"
expect_eq "the Event written again stays" "event/e-core" \
    "$(kc get events e-core -o name --ignore-not-found 2>&1)"
sleep 2
expect_eq "then it goes too" "" "$(kc get events e-core -o name --ignore-not-found 2>&1)"
expect_eq "other objects stay" "namespace/keep" "$(kc get namespace keep -o name 2>&1)"
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
check "a watcher saw the deletions" grep -q "e-new" "$work/watch.txt"
e2e_finish
