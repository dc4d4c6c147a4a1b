#!/usr/bin/env bash
# Replays the golden corpus (recorded kube-apiserver 1.26 answers) against a fresh kapi.
# The areas done so far (tests/golden/areas.txt, one --only prefix or id per line) must
# pass; deliberate differences are listed in tests/golden/exceptions.txt. The features
# that later issues build are skipped. Ends with the replay's "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/kapi}")
corpus=${2:-../shared/testdata/golden}
. "$here/../e2e/lib.sh"
work=$(mktemp -d)
trap 'stop_kapi; rm -rf "$work"' EXIT
port=$(free_port)
start_kapi "$bin" "$work/data" "$port" || exit 1
only=()
while read -r area; do
    case $area in '' | '#'*) continue ;; esac
    only+=(--only "$area")
done <"$here/areas.txt"
python3 "$corpus/replay.py" --server "https://127.0.0.1:$port" --token "$(cat "$work/data/admin-token")" \
    --cacert "$work/data/ca.crt" --exceptions "$here/exceptions.txt" \
    --skip ssa --skip cel --skip pb --skip rbac --ignore-field managedFields --max-wait 5 "${only[@]}"
