#!/usr/bin/env bash
# The ClusterCIDR allocator as a kubectl user meets it: Nodes get Pod CIDRs from the
# ClusterCIDR whose node selector picks them (IPv4, IPv6, both), ClusterCIDRs get the
# cluster-cidr-finalizer, 200 Nodes created at once get 200 distinct blocks, a Node no
# ClusterCIDR can serve gets the CIDRNotAvailable event, a deleted Node's block is given
# again, a ClusterCIDR in use waits for its last Node before it goes, and a restarted
# allocator finds the blocks taken and sends kube's event for a ClusterCIDR it cannot use;
# --cluster-cidr makes the default ClusterCIDR. The allocator runs with --allocate-node-cidrs, as
# kube-controller-manager's does.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
start_kapi "$bin" "$data" "$port" --allocate-node-cidrs || exit 1
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=10s "$@"; }

# until_eq NAME WANT CMD...: passes once CMD prints WANT (up to 10 s), else fails with
# its last output.
until_eq() {
    local name=$1 want=$2 got
    shift 2
    for _ in $(seq 1 100); do
        got=$("$@" 2>&1)
        [ "$got" = "$want" ] && break
        sleep 0.1
    done
    expect_eq "$name" "$want" "$got"
}
cidrs() { kc get node "$1" -o jsonpath='{.spec.podCIDR} {.spec.podCIDRs}'; }

kc apply -f - >/dev/null <<'Y'
apiVersion: networking.k8s.io/v1alpha1
kind: ClusterCIDR
metadata: {name: zone-a}
spec:
  perNodeHostBits: 8
  ipv4: 10.1.0.0/16
  ipv6: fd00:a::/112
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: zone, operator: In, values: [a]}]
---
apiVersion: networking.k8s.io/v1alpha1
kind: ClusterCIDR
metadata: {name: zone-b-v6}
spec:
  perNodeHostBits: 16
  ipv6: fd00:b::/96
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: zone, operator: In, values: [b]}]
    - matchFields: [{key: metadata.name, operator: In, values: [named]}]
---
apiVersion: networking.k8s.io/v1alpha1
kind: ClusterCIDR
metadata: {name: small}
spec:
  perNodeHostBits: 4
  ipv4: 10.9.0.0/27
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: pool, operator: In, values: [small]}]
Y
until_eq "ClusterCIDRs get the cluster-cidr-finalizer" \
    "networking.k8s.io/cluster-cidr-finalizer networking.k8s.io/cluster-cidr-finalizer networking.k8s.io/cluster-cidr-finalizer" \
    kc get clustercidrs -o 'jsonpath={.items[*].metadata.finalizers[*]}'

kc apply -f - >/dev/null <<'Y'
apiVersion: v1
kind: Node
metadata: {name: a1, labels: {zone: a}}
---
apiVersion: v1
kind: Node
metadata: {name: b1, labels: {zone: b}}
---
apiVersion: v1
kind: Node
metadata: {name: named}
Y
until_eq "a zone-a Node gets an IPv4 and an IPv6 block (dual-stack)" \
    '10.1.0.0/24 ["10.1.0.0/24","fd00:a::/120"]' cidrs a1
until_eq "a zone-b Node gets an IPv6 block" 'fd00:b::/112 ["fd00:b::/112"]' cidrs b1
until_eq "a Node picked by matchFields on its name gets a block" \
    'fd00:b::1:0/112 ["fd00:b::1:0/112"]' cidrs named
expect_eq "the Pod CIDR is immutable once set" \
    'The Node "a1" is invalid: spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid' \
    "$(kc patch node a1 --type=merge -p '{"spec":{"podCIDR":"10.1.9.0/24"}}' 2>&1 | sed 's/^Error from server (Invalid): //')"

# 200 Nodes created at once, 20 requests in flight, get 200 distinct blocks.
python3 - "https://127.0.0.1:$port" "$(cat "$data/admin-token" 2>/dev/null)" <<'PY'
import concurrent.futures, json, ssl, sys, urllib.request
server, token = sys.argv[1], sys.argv[2]
ctx = ssl._create_unverified_context()
def create(i):
    body = json.dumps({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": "c%03d" % i, "labels": {"zone": "a"}}}).encode()
    req = urllib.request.Request(server + "/api/v1/nodes", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    urllib.request.urlopen(req, context=ctx).read()
with concurrent.futures.ThreadPoolExecutor(20) as ex:
    list(ex.map(create, range(200)))
PY
blocks() { kc get nodes -l zone=a -o jsonpath='{range .items[*]}{.spec.podCIDRs[0]}{"\n"}{end}' | grep -c .; }
distinct() { kc get nodes -l zone=a -o jsonpath='{range .items[*]}{.spec.podCIDRs[0]}{"\n"}{.spec.podCIDRs[1]}{"\n"}{end}' | grep . | sort -u | wc -l; }
until_eq "201 zone-a Nodes, each with blocks" 201 blocks
expect_eq "their 402 blocks are distinct" 402 "$(distinct)"

# "small" holds two /28s: a third Node gets none and the event.
for n in s1 s2 s3; do
    kc create -f - >/dev/null <<Y
apiVersion: v1
kind: Node
metadata: {name: $n, labels: {pool: small}}
Y
    sleep 0.3
done
until_eq "the first two Nodes fill the ClusterCIDR" '10.9.0.0/28 10.9.0.16/28' \
    kc get nodes s1 s2 -o 'jsonpath={.items[*].spec.podCIDR}'
expect_eq "the third gets none" "" "$(cidrs s3 | tr -d ' ')"
until_eq "a full ClusterCIDR gives the CIDRNotAvailable event" \
    "Normal CIDRNotAvailable Node s3 status is now: CIDRNotAvailable multiCIDRRangeAllocator" \
    kc get events -n default --field-selector involvedObject.name=s3 \
    -o 'jsonpath={.items[0].type} {.items[0].reason} {.items[0].message} {.items[0].source.component}'
kc create -f - >/dev/null <<'Y'
apiVersion: v1
kind: Node
metadata: {name: nomatch, labels: {pool: none}}
Y
until_eq "a Node no ClusterCIDR matches gets the event too" "CIDRNotAvailable" \
    kc get events -n default --field-selector involvedObject.name=nomatch -o 'jsonpath={.items[0].reason}'
kc delete node s1 >/dev/null
until_eq "deleting a Node frees its block for the Node waiting" '10.9.0.0/28 ["10.9.0.0/28"]' \
    cidrs s3

# A ClusterCIDR in use waits for its Nodes.
kc delete clustercidr small --wait=false >/dev/null
sleep 0.5
expect_eq "a ClusterCIDR in use is kept by its finalizer" \
    "networking.k8s.io/cluster-cidr-finalizer true" \
    "$(kc get clustercidr small -o jsonpath='{.metadata.finalizers[0]} {.metadata.deletionTimestamp}' | sed 's/ 20.*/ true/')"
kc delete node s2 >/dev/null
kc create -f - >/dev/null <<'Y'
apiVersion: v1
kind: Node
metadata: {name: s4, labels: {pool: small}}
Y
sleep 0.5
expect_eq "a ClusterCIDR being deleted gives no new blocks, even free ones" "" \
    "$(cidrs s4 | tr -d ' ')"
expect_eq "still there while a Node has a block from it" "small" \
    "$(kc get clustercidr small -o jsonpath='{.metadata.name}')"
kc delete node s3 >/dev/null
until_eq "gone once its last Node is" "" \
    kc get clustercidr --ignore-not-found -o 'jsonpath={.items[?(@.metadata.name=="small")].metadata.name}'

# An IPv6 range cut into more than 2^16 blocks is valid but cannot be used; at the
# allocator's start it gets kube's event.
kc apply -f - >/dev/null <<'Y'
apiVersion: networking.k8s.io/v1alpha1
kind: ClusterCIDR
metadata: {name: too-wide}
spec: {perNodeHostBits: 4, ipv6: "fd00:b::/48"}
Y

# After a restart the allocator finds the taken blocks on the Nodes.
stop_kapi
start_kapi "$bin" "$data" "$port" --allocate-node-cidrs || exit 1
until_eq "a ClusterCIDR that cannot be cut gets kube's event at the start" \
    "Warning|InvalidClusterCIDR encountered while regenerating ClusterCIDR during bootstrap.|invalid ClusterCIDR: unable to create IPv6 cidrSet: Creation of New CIDR Set failed for fd00:b::/48. PerNodeMaskSize 124 is too big for CIDR Mask 48, Maximum difference allowed is 16" \
    kc get events -n default --field-selector involvedObject.name=too-wide \
    -o 'jsonpath={.items[0].type}|{.items[0].reason}|{.items[0].message}'
expect_eq "and no finalizer" "" \
    "$(kc get clustercidr too-wide -o 'jsonpath={.metadata.finalizers}')"
kc create -f - >/dev/null <<'Y'
apiVersion: v1
kind: Node
metadata: {name: after-restart, labels: {zone: a}}
Y
until_eq "after a restart a new Node gets blocks" 202 blocks
expect_eq "none of them taken before" 404 "$(distinct)"

# kube-controller-manager's --cluster-cidr: the default ClusterCIDR, made at the start,
# serves a Node no other picks; flags kube refuses stop kapi with its words.
data_b=$work/data-b
port_b=$(free_port)
trap 'stop_kapi; stop_b; rm -rf "$work"' EXIT
start_b "$bin" "$data_b" "$port_b" --allocate-node-cidrs --cluster-cidr 10.60.0.0/16 \
    --node-cidr-mask-size 26 || exit 1
kb() { kubectl --kubeconfig "$data_b/kubeconfig" --request-timeout=10s "$@"; }
kb create -f - >/dev/null <<'Y'
apiVersion: v1
kind: Node
metadata: {name: plain}
Y
until_eq "a Node gets a block of the default ClusterCIDR" "10.60.0.0/26" \
    kb get node plain -o 'jsonpath={.spec.podCIDR}'
expect_eq "which --cluster-cidr made" "10.60.0.0/16 6 networking.k8s.io/cluster-cidr-finalizer" \
    "$(kb get clustercidr default-cluster-cidr \
        -o 'jsonpath={.spec.ipv4} {.spec.perNodeHostBits} {.metadata.finalizers[0]}')"
stop_b
out=$("$bin" --data-dir "$work/data-c" --allocate-node-cidrs \
    --cluster-cidr 10.0.0.0/16,fd00::/48 --node-cidr-mask-size 24 2>&1)
check "a mask size for both families of a dual-stack --cluster-cidr is refused" \
    test "$?:$out" = "1:Error: --cluster-cidr: usage of --node-cidr-mask-size is not allowed with dual-stack clusters"

e2e_finish
