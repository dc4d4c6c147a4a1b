#!/usr/bin/env bash
# Issue 17's figures: kapi on etcd against kube-apiserver 1.26 on the same etcd, with kapi
# on SQLite beside them, in one run that alternates the servers, ROUNDS times; medians.
# The reference server (../shared/reference-server, built) gives the etcd and the
# kube-apiserver: each round starts both (a fresh etcd), measures kube-apiserver, stops it
# and measures a kapi on that etcd (its own --etcd-prefix), stops everything, then
# measures a kapi on SQLite. CPU per request counts the server and etcd (--cpu-pid).
# Usage: bench/etcd-ratio.sh [SCENARIOS] [ROUNDS]        e.g. bench/etcd-ratio.sh create,get 2
# Env:   ANCHOR_DIR (default $HOME/anchor), KAPI (build/kapi), BENCH (build/kapi-bench),
#        REFERENCE (../shared/reference-server)
set -euo pipefail
SCEN=${1:-create,get,watch}
ROUNDS=${2:-2}
A=${ANCHOR_DIR:-$HOME/anchor}
KAPI=$(realpath "${KAPI:-build/kapi}")
BENCH=${BENCH:-build/kapi-bench}
REF=${REFERENCE:-../shared/reference-server}
[ -x "$A/bin/kube-apiserver" ] || { echo "no reference server in $A ($REF/README.md)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'ANCHOR_DIR=$A "$REF/stop.sh" >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
pid_of() { awk -v n="$1" '$1 == n { print $2 }' "$A/run/pids"; }
etcd_url=http://127.0.0.1:${ANCHOR_ETCD_PORT:-22379}
for i in $(seq 1 "$ROUNDS"); do
    ANCHOR_DIR=$A "$REF/start.sh" >/dev/null
    etcd=$(pid_of etcd)
    kube=$(pid_of kube-apiserver)
    "$BENCH" --only "$SCEN" --kubeconfig "$A/run/admin.kubeconfig" --cpu-pid "$kube" \
        --cpu-pid "$etcd" --json "$OUT/kube$i.json" >/dev/null
    kill -TERM "$kube"
    while kill -0 "$kube" 2>/dev/null; do sleep 0.1; done
    "$BENCH" --only "$SCEN" --kapi "$KAPI" --kapi-flag=--etcd-servers=$etcd_url \
        --kapi-flag=--etcd-prefix=/kapi-$i --cpu-pid "$etcd" --json "$OUT/etcd$i.json" >/dev/null
    ANCHOR_DIR=$A "$REF/stop.sh" >/dev/null
    "$BENCH" --only "$SCEN" --kapi "$KAPI" --json "$OUT/sqlite$i.json" >/dev/null
    echo "round $i of $ROUNDS done" >&2
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, statistics as st
d, n = sys.argv[1], int(sys.argv[2])
load = lambda name: [json.load(open(f'{d}/{name}{i}.json')) for i in range(1, n + 1)]
kube, etcd, sqlite = load('kube'), load('etcd'), load('sqlite')
print('| figure | kube-apiserver on etcd | kapi on etcd | kapi on etcd / kube | kapi on SQLite |')
print('|---|--:|--:|--:|--:|')
for k in sorted(set(kube[0]) & set(etcd[0])):
    a = [x.get(k) for x in kube]
    b = [x.get(k) for x in etcd]
    c = [x.get(k) for x in sqlite]
    if not all(isinstance(v, (int, float)) for v in a + b):
        continue
    r = st.median(y / x for x, y in zip(a, b)) if all(a) else float('nan')
    cs = st.median(c) if all(isinstance(v, (int, float)) for v in c) else float('nan')
    print(f'| {k} | {st.median(a):g} | {st.median(b):g} | {r:.2f} | {cs:g} |')
PY
