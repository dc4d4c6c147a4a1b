#!/usr/bin/env bash
# An informer written with a real client library (Debian's python3-kubernetes) keeps a
# list + watch copy of CronJobs through 1,000 random writes, a reconnect and a 410 that
# forces a re-list, and ends equal to the server's list (informer.py). kapi keeps 2 s of
# history here, so that falling behind is quick.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
python=/usr/bin/python3
if ! "$python" -c 'import kubernetes' 2>/dev/null; then
    fail "python3-kubernetes is installed (scripts/deps.sh test)"
    e2e_finish
    exit 1
fi
start_kapi "$bin" "$data" "$port" --watch-history 2 || exit 1
"$python" "$here/informer.py" "$data/kubeconfig" >"$work/out" 2>&1
rc=$?
while IFS= read -r line; do
    case $line in
    PASS\ *) pass "${line#PASS }" ;;
    FAIL\ *) fail "${line#FAIL }" ;;
    *) echo "$line" ;;
    esac
done <"$work/out"
[ "$rc" -eq 0 ] || [ "$E2E_FAILED" -gt 0 ] || fail "informer.py exited with $rc"
e2e_finish
