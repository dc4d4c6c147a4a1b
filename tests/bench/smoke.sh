#!/usr/bin/env bash
# The benchmark harness at a hundredth of its size against a kapi it starts: it must run
# every scenario without an error and write every figure. Times are not checked.
# Usage: tests/bench/smoke.sh build/kapi-bench build/kapi; ends with "N passed, N failed".
set -u
bench=$1
kapi=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {
    if [ "$2" = ok ]; then
        echo "PASS $1"
        passed=$((passed + 1))
    else
        echo "FAIL $1${3:+: $3}"
        failed=$((failed + 1))
    fi
}

if "$bench" --kapi "$kapi" --smoke --json "$work/out.json" >"$work/table.md" 2>"$work/log"; then
    check bench-smoke-run ok
else
    check bench-smoke-run no "$(grep -v -e '== ' -e 'CPU' "$work/log" | tr '\n' ' ')"
fi

# The keys issue 6 names (and issue 18's CRD figures), every one a number.
for key in create_per_s create_p99_ms get_per_s get_p99_ms get_rbac_per_s get_pb_per_s \
    get_h2_per_s patch_per_s apply_per_s list_10k_ms watch_p99_ms watch_lost watch_pb_p99_ms \
    watch_pb_lost watch_h2_p99_ms watch_h2_lost rss_idle_mb rss_per_json_byte start_empty_ms \
    start_100k_ms crd_first_ms crd_last_ms crd_median_ms crd_rss_kb; do
    if jq -e --arg k "$key" '.[$k] | type == "number"' "$work/out.json" >/dev/null 2>&1; then
        check "bench-smoke-json-$key" ok
    else
        check "bench-smoke-json-$key" no "missing from $(head -c 300 "$work/out.json" 2>/dev/null)"
    fi
done
if [ "$(jq '.watch_lost + .watch_pb_lost + .watch_h2_lost' "$work/out.json" 2>/dev/null)" = 0 ]; then
    check bench-smoke-watch-none-lost ok
else
    check bench-smoke-watch-none-lost no
fi
rows=$(grep -c '^| ' "$work/table.md")
if [ "$rows" -ge 14 ] && grep -q '^| scenario | figure | value | target |$' "$work/table.md"; then
    check bench-smoke-table ok
else
    check bench-smoke-table no "$(head -5 "$work/table.md" | tr '\n' ' ')"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
