#!/usr/bin/env bash
# The memory figures of issue 12, each on a fresh kapi (an -O2 build: `make`), with the
# load of tests/e2e/limits.py; one JSON line per figure. About 3 minutes and 3,000 fds.
#   1. 1,000 watchers that never read (4 KB receive buffer) while 10,000 Events of 1 KB are
#      created: RSS idle, peak, and after they close
#      (and the same through the events.k8s.io/v1 view, whose events are converted)
#   2. 20 concurrent full lists of 20,000 Events of 2.5 KB (50 MB each): peak RSS
#   3. one Table list of those 20,000 Events: seconds and peak RSS
# Usage: bench/limits.sh [path/to/kapi]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/e2e/lib.sh"
ulimit -n 8192

# run CMD ARGS... [-- CMD ARGS...]: a fresh kapi, then each limits.py command on it.
run() {
    e2e_setup "${KAPI:-build/kapi}"
    start_kapi "$bin" "$data" "$port"
    while [ $# -gt 0 ]; do
        local args=()
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do
            args+=("$1")
            shift
        done
        [ $# -gt 0 ] && shift
        python3 "$here/../tests/e2e/limits.py" "https://127.0.0.1:$port" "$data" "$KAPI_PID" \
            "${args[@]}"
    done
    stop_kapi
    rm -rf "$work"
}

KAPI=${1:-build/kapi}
run watchers 1000 10000 1024
run watchers 1000 10000 1024 /apis/events.k8s.io/v1
run fill 20000 2500 -- lists 20 -- lists 1 "application/json;as=Table;v=v1;g=meta.k8s.io"
