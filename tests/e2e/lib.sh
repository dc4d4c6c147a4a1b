# Helpers for the end-to-end tests: start and stop a kapi on loopback, check results,
# count them. Source it; call e2e_finish at the end.

E2E_PASSED=0
E2E_FAILED=0

# free_port [N]: N (default 1) distinct free TCP ports on 127.0.0.1, one per line. They
# are taken below the kernel's ephemeral range (32768 and up), so that no outgoing
# connection takes one before the server it is meant for binds it.
free_port() {
    python3 - "${1:-1}" <<'PY'
import random, socket, sys
want, ports = int(sys.argv[1]), []
while len(ports) < want:
    p = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    if p not in ports:
        ports.append(p)
print("\n".join(map(str, ports)))
PY
}

# start_etcd DIR N: an etcd cluster of N members (1 when left out) on free loopback
# ports, its data and logs in DIR; ETCD_SERVERS gets the client URLs (comma-separated),
# ETCD_PIDS[i] member i's pid, ETCD_ARGS[i] its command line (restart_etcd_member).
# Waits until every member answers. stop_etcd kills them.
start_etcd() {
    local dir=$1 n=${2:-1} cluster= i
    ETCD_SERVERS=
    ETCD_PIDS=()
    ETCD_ARGS=()
    local cports=() pports=() ports
    mapfile -t ports < <(free_port $((2 * n)))
    for ((i = 0; i < n; i++)); do
        cports[i]=${ports[2 * i]}
        pports[i]=${ports[2 * i + 1]}
        cluster+="${cluster:+,}m$i=http://127.0.0.1:${pports[i]}"
        ETCD_SERVERS+="${ETCD_SERVERS:+,}http://127.0.0.1:${cports[i]}"
    done
    for ((i = 0; i < n; i++)); do
        ETCD_ARGS[i]="--name m$i --data-dir $dir/m$i --listen-client-urls http://127.0.0.1:${cports[i]} --advertise-client-urls http://127.0.0.1:${cports[i]} --listen-peer-urls http://127.0.0.1:${pports[i]} --initial-advertise-peer-urls http://127.0.0.1:${pports[i]} --initial-cluster $cluster --initial-cluster-state new --heartbeat-interval 20 --election-timeout 200"
        mkdir -p "$dir"
        # shellcheck disable=SC2086
        etcd ${ETCD_ARGS[i]} >"$dir/m$i.log" 2>&1 &
        ETCD_PIDS[i]=$!
    done
    for _ in $(seq 1 100); do
        ETCDCTL_API=3 etcdctl --endpoints "$ETCD_SERVERS" endpoint health >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "etcd did not become healthy"
    return 1
}

# restart_etcd_member DIR I: starts member I again on its ports and data.
restart_etcd_member() {
    # shellcheck disable=SC2086
    etcd ${ETCD_ARGS[$2]} >>"$1/m$2.log" 2>&1 &
    ETCD_PIDS[$2]=$!
}

stop_etcd() {
    local p
    for p in "${ETCD_PIDS[@]:-}"; do
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    ETCD_PIDS=()
}

# start_kapi BIN DATA_DIR PORT [FLAGS...]: starts kapi in the background and waits for
# /readyz. With E2E_ETCD=1 (make e2e-etcd) and no --etcd-servers among the flags, the
# kapi runs on an etcd of its own (DATA_DIR.etcd), stopped with it. The cronjob
# controller is off unless FLAGS turn it on (--controllers=*): the CronJobs most scripts
# make are fixtures, which a minute boundary passing during a script must not change.
start_kapi() {
    sanitizer_check "$2.log"
    KAPI_LOG=$2.log
    local store=()
    if [ "${E2E_ETCD:-}" = 1 ] && [[ " ${*:4} " != *" --etcd-servers "* ]]; then
        start_etcd "$2.etcd" 1 || return 1
        KAPI_ETCD_PIDS=("${ETCD_PIDS[@]}")
        store=(--etcd-servers "$ETCD_SERVERS")
    fi
    "$1" --data-dir "$2" --secure-port "$3" --controllers='*,-cronjob' "${store[@]}" "${@:4}" \
        >"$2.log" 2>&1 &
    KAPI_PID=$!
    # Anonymous, or as the admin once there is one (a kapi run with --anonymous-auth=false)
    local auth=()
    [ -f "$2/admin-token" ] && auth=(-H "Authorization: Bearer $(cat "$2/admin-token")")
    for _ in $(seq 1 100); do
        if curl -sk "${auth[@]}" "https://127.0.0.1:$3/readyz" 2>/dev/null | grep -q ok; then
            return 0
        fi
        sleep 0.05
    done
    echo "kapi did not become ready; its log:"
    cat "$2.log"
    return 1
}

# e2e_setup BIN: sets bin, a scratch dir work (removed at exit, when kapi is stopped),
# data and a free port for the script's kapi.
e2e_setup() {
    bin=$(realpath "$1")
    work=$(mktemp -d)
    trap 'stop_kapi; rm -rf "$work"' EXIT
    data=$work/data
    port=$(free_port)
}

# e2e_start BIN: e2e_setup, then a fresh kapi on it, with KUBECONFIG pointing at it.
e2e_start() {
    e2e_setup "$1"
    start_kapi "$bin" "$data" "$port" || exit 1
    export KUBECONFIG=$data/kubeconfig
}

# sanitizer_check LOG: a server built with ASan and UBSan (make e2e-asan) writes what they
# find to its log; any report there fails the script, with its first lines. make e2e-asan
# also sets E2E_SANITIZED=1: such a server's RSS is not kapi's own (shadow memory, the
# quarantine that keeps freed blocks), so a script skips its checks of RSS when it is set.
sanitizer_check() {
    local report
    [ -f "$1" ] || return 0
    report=$(grep -m1 -A12 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$1") || return 0
    fail "sanitizer report in $(basename "$1")" "$(echo "$report" | tr '\n' ' ' | cut -c1-1500)"
}

stop_kapi() {
    if [ -n "${KAPI_PID:-}" ]; then
        kill -TERM "$KAPI_PID" 2>/dev/null
        wait "$KAPI_PID" 2>/dev/null
        KAPI_PID=
        sanitizer_check "$KAPI_LOG"
        mv "$KAPI_LOG" "$KAPI_LOG.checked" 2>/dev/null
    fi
    local p
    for p in "${KAPI_ETCD_PIDS[@]:-}"; do
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    KAPI_ETCD_PIDS=()
}

# A second instance beside start_kapi's (start_kapi and stop_kapi are the first's):
# start_b BIN DATA PORT ARGS... starts it, its output appended to DATA.log, and waits until
# it is ready; B_PID is its pid. stop_b stops it and checks its log as stop_kapi does.
B_PID=
B_LOG=
start_b() {
    B_LOG=$2.log
    "$1" --data-dir "$2" --secure-port "$3" "${@:4}" >>"$B_LOG" 2>&1 &
    B_PID=$!
    for _ in $(seq 1 100); do
        curl -sk "https://127.0.0.1:$3/readyz" 2>/dev/null | grep -q ok && return 0
        sleep 0.05
    done
    echo "instance B did not become ready; its log:"
    cat "$B_LOG"
    return 1
}
stop_b() {
    [ -n "$B_PID" ] || return 0
    kill -TERM "$B_PID" 2>/dev/null
    wait "$B_PID" 2>/dev/null
    B_PID=
    sanitizer_check "$B_LOG"
}

pass() {
    echo "PASS $1"
    E2E_PASSED=$((E2E_PASSED + 1))
}

fail() {
    echo "FAIL $1${2:+: $2}"
    E2E_FAILED=$((E2E_FAILED + 1))
}

# check NAME COMMAND...: passes when the command succeeds.
check() {
    local name=$1
    shift
    local out
    if out=$("$@" 2>&1); then
        pass "$name"
    else
        fail "$name" "$(echo "$out" | tail -3 | tr '\n' ' ')"
    fi
}

# eventually COMMAND...: polls up to 5 s for the command to succeed.
eventually() {
    for _ in $(seq 1 50); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}

# expect_eq NAME EXPECTED ACTUAL
expect_eq() {
    if [ "$2" = "$3" ]; then
        pass "$1"
    else
        fail "$1" "expected '$2', got '$3'"
    fi
}

# refuses NAME PATTERN COMMAND...: the command fails and its output, its lines joined by
# spaces (kubectl lists several causes one a line, each after "* "), matches PATTERN.
refuses() {
    local name=$1 pattern=$2 out
    shift 2
    if out=$("$@" 2>&1); then
        fail "$name" "was accepted"
    elif echo "$out" | tr '\n' ' ' | grep -qE -- "$pattern"; then
        pass "$name"
    else
        fail "$name" "$out"
    fi
}

# require_etcd: ends the test with one failure unless etcd and etcdctl are installed.
require_etcd() {
    if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
        fail "etcd and etcdctl are installed (scripts/deps.sh test)"
        e2e_finish
        exit 1
    fi
}

e2e_finish() {
    stop_kapi
    echo "$E2E_PASSED passed, $E2E_FAILED failed"
    [ "$E2E_FAILED" -eq 0 ]
}
