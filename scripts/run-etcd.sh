#!/usr/bin/env bash
# make run ETCD=1: a single-member etcd in DATA_DIR/etcd on loopback, and kapi on it.
# Usage: scripts/run-etcd.sh KAPI DATA_DIR [KAPI FLAGS...]
# etcd listens on 127.0.0.1:${ETCD_PORT:-2379} (peers on the next port) and stops when
# kapi does.
set -euo pipefail
kapi=$1
data=$2
shift 2
port=${ETCD_PORT:-2379}
mkdir -p -m 700 "$data"
etcd --name kapi --data-dir "$data/etcd" \
    --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$((port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
    --initial-cluster "kapi=http://127.0.0.1:$((port + 1))" >"$data/etcd.log" 2>&1 &
etcd_pid=$!
trap 'kill $etcd_pid 2>/dev/null; wait $etcd_pid 2>/dev/null' EXIT
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    kill -0 $etcd_pid 2>/dev/null || { echo "etcd did not start; its log:"; cat "$data/etcd.log"; exit 1; }
    sleep 0.1
done
echo "etcd: http://127.0.0.1:$port (log: $data/etcd.log)"
"$kapi" --data-dir "$data" --etcd-servers "http://127.0.0.1:$port" "$@"
