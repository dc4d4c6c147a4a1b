#!/usr/bin/env bash
# Installs the Debian packages kapi needs, only those that are missing.
# Usage: scripts/deps.sh build|test [etcd|deb]   (etcd: also etcd-server, for make run
# ETCD=1; deb: also dpkg-dev, whose dpkg-shlibdeps make deb uses)
set -euo pipefail
build=(gcc g++ make pkg-config libuv1-dev libhttp-parser-dev libssl-dev libjansson-dev libsqlite3-dev libyaml-dev libre2-dev libmimalloc-dev libnghttp2-dev libcurl4-openssl-dev tzdata xxd)
test=(dpkg-dev curl jq python3 openssl python3-kubernetes python3-cryptography python3-httpx python3-h2 python3-prometheus-client nghttp2-client clang clang-format libclang-rt-14-dev etcd-server etcd-client)
want=("${build[@]}")
[ "${1:-build}" = test ] && want+=("${test[@]}")
[ "${2:-}" = etcd ] && want+=(etcd-server)
[ "${2:-}" = deb ] && want+=(dpkg-dev)
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${1:-build}" = test ] && ! command -v kubectl >/dev/null 2>&1; then
    missing+=(kubernetes-client)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
