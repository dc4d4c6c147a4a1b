#!/usr/bin/env bash
# The transport's yardstick (issue 15): GETs/s of one CronJob over HTTPS/1.1 keep-alive
# from kapi, against nginx serving the same bytes as a static file with the same
# certificate, both driven by wrk with 32 connections in one run that alternates them.
# Prints each round's figures and the ratio of the medians. Not part of make test: it
# installs nginx-light and wrk (Debian packages, for this benchmark only) when missing.
# Usage: bench/nginx.sh [build/kapi] [ROUNDS] [SECONDS]
set -eu
kapi=$(realpath "${1:-build/kapi}")
rounds=${2:-3}
secs=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/e2e/lib.sh"
for pkg in nginx-light:nginx wrk:wrk; do
    command -v "${pkg#*:}" >/dev/null || command -v "/usr/sbin/${pkg#*:}" >/dev/null ||
        { apt-get update -qq && apt-get install -y --no-install-recommends "${pkg%%:*}" >/dev/null; }
done
work=$(mktemp -d)
trap 'stop_kapi; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; rm -rf "$work"' EXIT
port=$(free_port)
start_kapi "$kapi" "$work/data" "$port" >/dev/null
token=$(cat "$work/data/admin-token")
path=/apis/batch/v1/namespaces/default/cronjobs/yardstick
KUBECONFIG=$work/data/kubeconfig kubectl create cronjob yardstick --image=busybox \
    --schedule='0 3 * * *' >/dev/null
mkdir -p "$work/www$(dirname "$path")"
curl -s --cacert "$work/data/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$port$path" -o "$work/www$path"

nport=$(free_port)
cat >"$work/nginx.conf" <<EOF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 100000000;
    default_type application/json;
    client_body_temp_path $work/tmp;
    server {
        listen 127.0.0.1:$nport ssl;
        ssl_certificate $work/data/server.crt;
        ssl_certificate_key $work/data/server.key;
        root $work/www;
    }
}
EOF
mkdir -p "$work/tmp"
/usr/sbin/nginx -c "$work/nginx.conf"

# rate URL: wrk's requests/s over $secs seconds.
rate() {
    wrk -t1 -c32 -d"${secs}s" -H "Authorization: Bearer $token" "$1" |
        awk '/^Requests\/sec/ {print $2}'
}
echo "bytes served: $(wc -c <"$work/www$path")"
: >"$work/kapi.txt"
: >"$work/nginx.txt"
for i in $(seq "$rounds"); do
    k=$(rate "https://127.0.0.1:$port$path")
    n=$(rate "https://127.0.0.1:$nport$path")
    echo "round $i: kapi $k/s, nginx $n/s"
    echo "$k" >>"$work/kapi.txt"
    echo "$n" >>"$work/nginx.txt"
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
mk=$(median "$work/kapi.txt")
mn=$(median "$work/nginx.txt")
echo "median: kapi $mk/s, nginx $mn/s, kapi/nginx $(awk -v a="$mk" -v b="$mn" 'BEGIN {printf "%.2f", a / b}')"
