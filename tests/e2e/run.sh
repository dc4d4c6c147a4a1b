#!/usr/bin/env bash
# Runs every end-to-end test against the kapi binary given; ends with "N passed, N failed".
# E2E_SKIP: script names not to run (space-separated).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-build/kapi}
passed=0
failed=0
for t in "$here"/*.sh; do
    case $(basename "$t") in lib.sh | run.sh) continue ;; esac
    case " ${E2E_SKIP:-} " in *" $(basename "$t") "*) continue ;; esac
    echo "== $(basename "$t")"
    out=$(bash "$t" "$bin" 2>&1)
    echo "$out"
    line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
    if [ -z "$line" ]; then
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
