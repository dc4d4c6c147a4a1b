#!/usr/bin/env bash
# Replays the golden corpus (recorded kube-apiserver 1.26 answers) against a fresh kapi,
# managedFields and server-side apply compared, skipping the features later issues build
# (CEL). Every id in tests/golden/passing.txt must
# pass (deliberate differences are listed in tests/golden/exceptions.txt); the whole-
# corpus count is printed for information. Then kapi's own corpora recorded from
# kube-apiserver 1.26 (README in each), each on a fresh kapi of its own: tests/golden/fields
# (field manager and server-side apply) and tests/golden/rbac (the RBAC types): every id
# must pass or be listed in its exceptions.
# Ends with "N passed, N failed" over the ids that must pass.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/kapi}")
corpus=${2:-../shared/testdata/golden}
. "$here/../e2e/lib.sh"
work=$(mktemp -d)
trap 'stop_kapi; rm -rf "$work"' EXIT
port=$(free_port)
start_kapi "$bin" "$work/data" "$port" || exit 1
python3 "$corpus/replay.py" --server "https://127.0.0.1:$port" \
    --token "$(cat "$work/data/admin-token")" --cacert "$work/data/ca.crt" \
    --exceptions "$here/exceptions.txt" \
    --max-wait 5 >"$work/replay.txt" 2>&1
echo "whole corpus: $(tail -1 "$work/replay.txt")"
passed=0
failed=0
while read -r id; do
    case $id in '' | '#'*) continue ;; esac
    if grep -qE "^(PASS|KNOWN) $id(:|$)" "$work/replay.txt"; then
        passed=$((passed + 1))
    else
        echo "FAIL $(grep -E "^FAIL $id(:|$)" "$work/replay.txt" || echo "$id: not replayed")"
        failed=$((failed + 1))
    fi
done <"$here/passing.txt"
for own in fields rbac; do
    stop_kapi
    start_kapi "$bin" "$work/data-$own" "$port" || exit 1
    python3 "$corpus/replay.py" --server "https://127.0.0.1:$port" \
        --token "$(cat "$work/data-$own/admin-token")" --cacert "$work/data-$own/ca.crt" \
        --requests "$here/$own/requests.jsonl" --responses "$here/$own/responses.jsonl" \
        --exceptions "$here/$own/exceptions.txt" >"$work/$own.txt" 2>&1
    while read -r line; do
        case $line in
        PASS* | KNOWN*) passed=$((passed + 1)) ;;
        FAIL*)
            echo "$line"
            failed=$((failed + 1))
            ;;
        esac
    done <"$work/$own.txt"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
