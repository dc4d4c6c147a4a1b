#!/usr/bin/env bash
# Two kapi instances serving one cluster on a three-member etcd (Debian's etcd-server), as
# a user runs them: one identity (one kubeconfig works on both), a write on one is read,
# listed and watched on the other, a continue token made on one pages on the other, the
# keys are kube-apiserver's for etcdctl; one etcd member killed under a write load loses
# no acknowledged write and the clients go on; a namespace deleted through one is emptied
# once, by the elected controllers; an informer (Debian's Python client) on B
# converges through 410s while the writes go through A and etcd is compacted every 3 s;
# one kapi killed leaves the other's clients unaffected.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
require_etcd
trap 'stop_kapi; stop_b; stop_etcd; rm -rf "$work"' EXIT
start_etcd "$work/etcd" 3 || exit 1
servers=$ETCD_SERVERS
etcd_pids=("${ETCD_PIDS[@]}")
start_kapi "$bin" "$data" "$port" --etcd-servers "$servers" --etcd-compaction-interval 3s || exit 1
data_b=$work/data-b
port_b=$(free_port)
start_b "$bin" "$data_b" "$port_b" --etcd-servers "$servers" --watch-history 2 || exit 1
A=$data/kubeconfig
# The same kubeconfig, pointed at instance B.
sed "s/127.0.0.1:$port/127.0.0.1:$port_b/" "$A" >"$work/kubeconfig-b"
B=$work/kubeconfig-b
ka() { kubectl --kubeconfig "$A" "$@"; }
kb() { kubectl --kubeconfig "$B" "$@"; }

check "both instances have one identity (CA, admin token, signing key)" \
    cmp -s <(cat "$data"/{ca.crt,admin-token,sa.key}) <(cat "$data_b"/{ca.crt,admin-token,sa.key})
check "A's kubeconfig works against B" kb get ns default

# Writes on A, reads on B.
ka create namespace shop >/dev/null
ka create cronjob nightly -n shop --image=busybox --schedule='0 1 * * *' >/dev/null
expect_eq "B reads the CronJob A created, at once" "0 1 * * *" \
    "$(kb get cronjob nightly -n shop -o jsonpath='{.spec.schedule}')"
rv_a=$(ka get cronjob nightly -n shop -o jsonpath='{.metadata.resourceVersion}')
expect_eq "the resourceVersion is the same on both (etcd's revision)" "$rv_a" \
    "$(kb get cronjob nightly -n shop -o jsonpath='{.metadata.resourceVersion}')"
kb patch cronjob nightly -n shop --type merge -p '{"spec":{"schedule":"0 2 * * *"}}' >/dev/null
expect_eq "A reads B's patch" "0 2 * * *" "$(ka get cronjob nightly -n shop -o jsonpath='{.spec.schedule}')"
check "etcdctl finds the CronJob at kube-apiserver's key" \
    bash -c "ETCDCTL_API=3 etcdctl --endpoints '$servers' get /registry/cronjobs/shop/nightly --print-value-only | grep -q '\"schedule\":\"0 2 \* \* \*\"'"

# A watch on B sees what A writes.
kb get cronjobs -n shop --watch-only -o name >"$work/watch" 2>&1 &
watch_pid=$!
sleep 1
for i in 1 2 3; do ka create cronjob "w$i" -n shop --image=busybox --schedule='* * * * *' >/dev/null; done
watched() { [ "$(grep -c '^cronjob' "$work/watch")" -ge 3 ]; }
check "a watch on B receives A's three creates" eventually watched
kill "$watch_pid" 2>/dev/null
expect_eq "the watch saw them in order" "cronjob.batch/w1 cronjob.batch/w2 cronjob.batch/w3" \
    "$(grep '^cronjob' "$work/watch" | tr '\n' ' ' | sed 's/ $//')"

# A continue token made on A pages on B.
token=$(cat "$data/admin-token")
page1=$(curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$port/apis/batch/v1/namespaces/shop/cronjobs?limit=2")
cont=$(echo "$page1" | jq -r .metadata.continue)
page2=$(curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$port_b/apis/batch/v1/namespaces/shop/cronjobs?limit=2&continue=$cont")
expect_eq "the continue token from A pages on B" "w2 w3" "$(echo "$page2" | jq -r '[.items[].metadata.name] | join(" ")')"

# A namespace deleted through B is emptied once, by the controllers of the instance that
# holds the lease: a watch sees each of its CronJobs deleted once.
ka create namespace gone >/dev/null
for i in $(seq 1 15); do
    ka create cronjob "g$i" -n gone --image=busybox --schedule='* * * * *' >/dev/null
done
ka get cronjobs -n gone --watch-only --output-watch-events --no-headers >"$work/gone" 2>&1 &
gone_watch=$!
sleep 1
kb delete namespace gone --wait=false >/dev/null
ns_gone() { ! kb get namespace gone >/dev/null 2>&1; }
check "the namespace deleted through B is emptied and removed" eventually ns_gone
sleep 0.5
kill "$gone_watch" 2>/dev/null
expect_eq "each of its 15 CronJobs is deleted once" "15 15" \
    "$(grep -c '^DELETED' "$work/gone") $(awk '$1 == "DELETED" { print $2 }' "$work/gone" | sort -u | wc -l)"
expect_eq "one instance runs the controllers" 1 \
    "$(cat "$data.log" "$data_b.log" | grep -c '] leading:')"

# Patches of one object from both instances at once: kube's retry on a lost race, with
# the state read anew on the instance, loses none.
patch_from() { # PORT PREFIX
    for i in $(seq 1 25); do
        curl -s -o /dev/null -w '%{http_code}\n' --cacert "$data/ca.crt" \
            -H "Authorization: Bearer $token" -H 'Content-Type: application/merge-patch+json' \
            -X PATCH "https://127.0.0.1:$1/apis/batch/v1/namespaces/shop/cronjobs/nightly" \
            -d '{"metadata":{"labels":{"'"$2$i"'":"x"}}}'
    done
}
patch_from "$port" a >"$work/patch-a" &
patch_from "$port_b" b >"$work/patch-b"
wait $!
expect_eq "every patch from both instances at once was accepted" 50 \
    "$(cat "$work/patch-a" "$work/patch-b" | grep -c '^200$')"
expect_eq "and none was lost" 50 \
    "$(ka get cronjob nightly -n shop -o json | jq '[.metadata.labels | keys[] | select(test("^[ab][0-9]+$"))] | length')"

# Kill an etcd member under a write load: every acknowledged write is there afterwards.
ka create namespace load >/dev/null
(
    for i in $(seq 1 120); do
        curl -s -o /dev/null -w '%{http_code} '"$i"'\n' --cacert "$data/ca.crt" \
            -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -X POST \
            "https://127.0.0.1:$port/api/v1/namespaces/load/events" \
            -d '{"metadata":{"name":"e'"$i"'"},"involvedObject":{"namespace":"load"},"reason":"R","message":"m"}'
    done >"$work/acks"
) &
load_pid=$!
sleep 0.5
{ kill -KILL "${etcd_pids[0]}" && wait "${etcd_pids[0]}"; } 2>/dev/null
wait "$load_pid"
acked=$(awk '$1 == 201 { print "e" $2 }' "$work/acks" | sort)
stored=$(kb get events -n load -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
missing=$(comm -23 <(echo "$acked") <(echo "$stored"))
expect_eq "no acknowledged write is lost after an etcd member is killed" "" "$missing"
check "most writes were acknowledged while a member was down" \
    test "$(echo "$acked" | grep -c .)" -ge 100
check "A still writes with a member down" ka create namespace after-kill
check "B reads it" kb get namespace after-kill

# An informer on B, the writes through A: it converges through 410s (B's history window,
# etcd's compaction).
/usr/bin/python3 "$here/informer.py" "$B" "$A" >"$work/informer" 2>&1
while IFS= read -r line; do
    case $line in
    PASS\ *) pass "informer on B, writes on A: ${line#PASS }" ;;
    FAIL\ *) fail "informer on B, writes on A: ${line#FAIL }" ;;
    esac
done <"$work/informer"
check "etcd has been compacted meanwhile" \
    bash -c "ETCDCTL_API=3 etcdctl --endpoints '$servers' get / --rev=2 2>&1 | grep -q compacted"

# Kill instance A: B's clients are unaffected.
kill -KILL "$KAPI_PID"
wait "$KAPI_PID" 2>/dev/null
KAPI_PID=
check "B writes with A gone" kb create namespace without-a
check "B lists with A gone" kb get cronjobs -n shop
e2e_finish
