#!/usr/bin/env bash
# End-to-end: kapi's memory stays bounded whatever its clients do (issue 12): watchers
# that never read while Events stream in, concurrent big lists, a big Table list; and a
# watch with a negative timeoutSeconds ends at once. kapi's RSS is read from /proc.
# Usage: tests/e2e/limits_memory.sh path/to/kapi
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

ulimit -n 4096 2>/dev/null
e2e_start "$1"
url=https://127.0.0.1:$port
limits() { python3 "$here/limits.py" "$url" "$data" "$KAPI_PID" "$@"; }
# within NAME VALUE MAX: passes when VALUE <= MAX (both numbers).
within() {
    if awk -v v="$2" -v m="$3" 'BEGIN { exit !(v <= m) }'; then
        pass "$1 ($2 <= $3)"
    else
        fail "$1" "$2 > $3"
    fi
}
# rss_within NAME VALUE MAX: within, for a figure of RSS; skipped against an ASan server
# (make e2e-asan sets E2E_SANITIZED), whose RSS is not kapi's own.
rss_within() {
    if [ -n "${E2E_SANITIZED:-}" ]; then
        echo "SKIP $1 (ASan server)"
    else
        within "$@"
    fi
}

# 30 watchers with a 4 KB receive buffer that never read, while 8,000 Events of 1 KB are
# created (8 MB to each watcher). Each may hold a bounded queue of references to the
# shared events and one batch; before, each held an encrypted copy of all it was sent.
w=$(limits watchers 30 8000 1024) || { fail "watchers" "$w"; e2e_finish; exit 1; }
idle=$(jq .idle_mb <<<"$w")
rss_within "peak RSS with 30 watchers that never read (MB)" "$(jq .peak_mb <<<"$w")" \
    "$(awk -v i="$idle" 'BEGIN { print i + 45 }')"
rss_within "RSS after they close (MB)" "$(jq .after_close_mb <<<"$w")" \
    "$(awk -v i="$idle" 'BEGIN { print i + 30 }')"
# A watcher that stopped reading is ended as kube-apiserver ends an unresponsive one: when
# it reads again it finds events and then the end of the stream, no ERROR event.
expect_eq "a watcher that stopped reading finds its stream ended" "clean end" \
    "$(jq -r .late_reader_end <<<"$w")"
check "it got events before the end" test "$(jq .late_reader_events <<<"$w")" -gt 0

# 10 concurrent lists of the 8 MB of Events, then one Table list of them: made as the
# clients take them, never whole.
l=$(limits lists 10) || { fail "lists" "$l"; e2e_finish; exit 1; }
rss_within "peak RSS growth, 10 concurrent lists of 8 MB (MB)" \
    "$(jq '(.peak_mb - .idle_mb) * 10 | round / 10' <<<"$l")" 40
t=$(limits lists 1 "application/json;as=Table;v=v1;g=meta.k8s.io") || { fail "table" "$t"; e2e_finish; exit 1; }
rss_within "peak RSS growth, a Table of 8,000 Events (MB)" "$(jq '(.peak_mb - .idle_mb) * 10 | round / 10' <<<"$t")" 30
within "seconds for the Table of 8,000 Events" "$(jq .max_s <<<"$t")" 5

# timeoutSeconds below zero: kube-apiserver's watch timer has fired already.
auth=(-H "Authorization: Bearer $(cat "$data/admin-token")")
out=$(curl -s --max-time 5 --cacert "$data/ca.crt" "${auth[@]}" -o "$work/neg" \
    -w '%{http_code} %{size_download}' "$url/api/v1/namespaces/limits/events?watch=1&timeoutSeconds=-5")
expect_eq "watch?timeoutSeconds=-5 ends at once, empty" "200 0" "$out"

e2e_finish
