#!/usr/bin/env bash
# Runs kapi's libFuzzer targets one after the other (make fuzz, make fuzz-smoke).
# Usage: tests/fuzz/run.sh [--replay] OUTDIR SECONDS TARGET...
#   each TARGET (build/fuzz/fuzz_x) fuzzes for SECONDS over a working corpus in
#   OUTDIR/corpus/fuzz_x, seeded from tests/fuzz/corpus/fuzz_x (the committed seeds are
#   only read); --replay first runs every committed seed on its own, so that a seed that
#   crashes (a regression) fails by name. A crash, leak, timeout or sanitizer report is
#   written to OUTDIR/artifacts/ and fails the run. Ends with "N passed, N failed" and the
#   executions of each target.
set -uo pipefail
replay=0
[ "${1:-}" = --replay ] && { replay=1; shift; }
out=$1 seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
max_len=65536
pass=0 fail=0
mkdir -p "$out/artifacts"
for t in "$@"; do
    name=$(basename "$t")
    seeds="$here/corpus/$name"
    work="$out/corpus/$name"
    mkdir -p "$work" "$seeds"
    log="$out/$name.log"
    ok=1
    if [ $replay = 1 ] && [ -n "$(ls -A "$seeds")" ]; then
        "$t" -runs=0 -max_len=$max_len -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$out/artifacts/$name-" "$seeds"/* >"$log.replay" 2>&1 || ok=0
    fi
    if [ $ok = 1 ]; then
        "$t" -max_total_time="$seconds" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" \
            "$work" "$seeds" >"$log" 2>&1 || ok=0
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null | tail -1)
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        echo "PASS $name (${execs:-0} executions in ${seconds}s)"
    else
        fail=$((fail + 1))
        echo "FAIL $name: see $log (and $log.replay when replaying)"
        grep -h -m3 -E 'ERROR: |runtime error:|SUMMARY' "$log.replay" "$log" 2>/dev/null | sed 's/^/    /'
    fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
