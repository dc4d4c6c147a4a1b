#!/usr/bin/env bash
# Issue 21's operability, as an operator meets it: --help and --version, flag and config
# file errors that name what is wrong, --config with the command line over it, SIGHUP
# reloading the serving certificate and the token file under open connections, systemd's
# readiness notification, and the Debian package (make deb) extracted and run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
e2e_setup "$1"

# ---- Help, version, errors
help=$("$bin" --help)
expect_eq "--help exits 0" 0 $?
for g in Generic Etcd "Secure serving" Authentication Authorization Controllers Global; do
    check "--help has the group \"$g flags:\"" grep -qx "$g flags:" <<<"$help"
done
check "--help shows --secure-port with its kind and default" \
    grep -qE '^      --secure-port int +.*\(default 6443\)$' <<<"$help"
check "--help shows --request-timeout's Go duration default" \
    grep -qE '^      --request-timeout duration +.*\(default 1m0s\)$' <<<"$help"
check "--help shows --etcd-prefix's quoted default" grep -qF '(default "/registry")' <<<"$help"
check "-h is --help" test "$("$bin" -h)" = "$help"
# The README's table of flags is the same list (it says more of each).
for f in $(grep -oE '^ +(-[a-z], )?--[a-z0-9-]+' <<<"$help" | sed 's/.*--//'); do
    grep -qF -- "\`--$f\`" "$top/README.md" || missing+=" --$f"
done
expect_eq "the README's Command line table has every flag of --help" "" "${missing:-}"
ver=$("$bin" --version)
check "--version names kapi's version" grep -qE '^kapi [0-9]+\.[0-9]+\.[0-9]+' <<<"$ver"
check "--version names the Kubernetes version served" grep -qx 'Kubernetes: v1.26.0' <<<"$ver"
check "--version has the commit and build date" \
    grep -qE '^build date: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$' <<<"$ver"

out=$("$bin" --no-such-flag 2>&1)
expect_eq "an unknown flag fails, naming it" "1 Error: unknown flag: --no-such-flag" "$? $out"
out=$("$bin" --secure-port=seventy 2>&1)
expect_eq "a bad value fails, naming the flag and the value" \
    '1 Error: invalid argument "seventy" for "--secure-port" flag: not a number from 0 to 65535' \
    "$? $out"
out=$("$bin" --request-timeout 2>&1)
expect_eq "a flag without its value fails" "1 Error: flag needs an argument: --request-timeout" \
    "$? $out"
refuses "a bool takes no separate value (pflag)" 'unexpected argument "false"' \
    "$bin" --anonymous-auth false

# ---- The config file
mapfile -t ports < <(free_port 2)
cat >"$work/config.yaml" <<EOF
# a comment
data-dir: $work/cfgdata
secure-port: ${ports[0]}
anonymous-auth: true
controllers: ["*", -cronjob]
EOF
# ready PORT: /readyz answers ok on PORT.
ready() { curl -sk "https://127.0.0.1:$1/readyz" | grep -qx ok; }
# run_kapi LOG ARGS...: a kapi started with these arguments only, in the background
# (KAPI_PID and KAPI_LOG, so that stop_kapi and the exit trap stop and check it).
run_kapi() {
    local log=$1
    shift
    sanitizer_check "$log"
    "$bin" "$@" >"$log" 2>&1 &
    KAPI_PID=$!
    KAPI_LOG=$log
}
run_kapi "$work/cfg1.log" --config "$work/config.yaml"
check "--config sets the port" eventually ready "${ports[0]}"
check "... and the data dir" test -f "$work/cfgdata/kubeconfig"
stop_kapi
run_kapi "$work/cfg2.log" --config "$work/config.yaml" --secure-port "${ports[1]}"
check "a flag on the command line replaces the file's setting" eventually ready "${ports[1]}"
check "... and the file's port is not served" sh -c "! curl -sk https://127.0.0.1:${ports[0]}/readyz"
stop_kapi
printf 'secure-port: %s\nsecure-prot: 1\n' "${ports[0]}" >"$work/bad.yaml"
out=$("$bin" --config "$work/bad.yaml" 2>&1)
expect_eq "an unknown key fails, naming the key and the file" \
    "1 Error: config file $work/bad.yaml: unknown key \"secure-prot\"" "$? $out"
printf 'event-ttl: soon\n' >"$work/bad.yaml"
out=$("$bin" --config "$work/bad.yaml" 2>&1)
check "a bad value in the file fails, naming the key and the file" \
    grep -qF "config file $work/bad.yaml: key \"event-ttl\": invalid value \"soon\"" <<<"$out"

# ---- SIGHUP and NOTIFY_SOCKET, on one kapi with its own certificate and token file
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=e2e-ca \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
# cert NAME: a serving certificate for 127.0.0.1 with subject CN=NAME, signed by the CA.
cert() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
        -keyout "$work/$1.key" -out "$work/$1.csr" 2>/dev/null
    openssl x509 -req -in "$work/$1.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
        -CAcreateserial -days 2 -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') \
        -out "$work/$1.crt" 2>/dev/null
}
cert kapi-one
cert kapi-two
cp "$work/kapi-one.crt" "$work/tls.crt"
cp "$work/kapi-one.key" "$work/tls.key"
echo 'token-one,alice,1,system:masters' >"$work/tokens.csv"

# The notify socket: a datagram socket in the abstract namespace, as systemd's may be;
# every message it gets goes to notify.out, one a line, until STOPPING=1.
sock="kapi-e2e-$$-$RANDOM"
python3 - "$sock" "$work/notify.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + sys.argv[1])
s.settimeout(60)
open(sys.argv[2] + ".bound", "w").close()
with open(sys.argv[2], "w") as out:
    while True:
        msg = s.recv(4096).decode()
        out.write(msg.replace("\n", " ") + "\n")
        out.flush()
        if "STOPPING=1" in msg:
            break
PY
notify_pid=$!
eventually test -f "$work/notify.out.bound"
# Only kapi gets NOTIFY_SOCKET (an etcd that start_kapi starts would notify too).
printf '#!/bin/sh\nNOTIFY_SOCKET=@%s exec "%s" "$@"\n' "$sock" "$bin" >"$work/kapi-notify"
chmod +x "$work/kapi-notify"
start_kapi "$work/kapi-notify" "$data" "$port" --tls-cert-file "$work/tls.crt" \
    --tls-private-key-file "$work/tls.key" --token-auth-file "$work/tokens.csv" || exit 1
check "READY=1 reaches NOTIFY_SOCKET once kapi serves" eventually grep -qx 'READY=1' "$work/notify.out"

api=https://127.0.0.1:$port
# token_code TOKEN: the status of a namespace list with that bearer token.
token_code() {
    curl -s -o /dev/null -w '%{http_code}' --cacert "$work/ca.crt" -H "Authorization: Bearer $1" \
        "$api/api/v1/namespaces"
}
expect_eq "the token file's token is accepted" 200 "$(token_code token-one)"
# /version: kube's version.Info, with this build's commit and date, as --version says them.
commit=$(sed -n 's/^git commit: \([0-9a-f]*\) .*/\1/p' <<<"$ver")
date=$(sed -n 's/^build date: //p' <<<"$ver")
expect_eq "/version has kube's fields, the build's commit and date" \
    "1 26 v1.26.0+kapi $commit $date" \
    "$(curl -s --cacert "$work/ca.crt" "$api/version" |
        jq -r '"\(.major) \(.minor) \(.gitVersion) \(.gitCommit) \(.buildDate)"')"

# A watch open across the reload, and one connection opened before it and used after it.
curl -sN --cacert "$work/ca.crt" -H "Authorization: Bearer token-one" \
    "$api/api/v1/namespaces?watch=1&resourceVersion=0" >"$work/watch.out" &
watch_pid=$!
check "a watch is open before the reload" eventually grep -q '"name":"default"' "$work/watch.out"
python3 - "$port" "$work" "$KAPI_PID" >"$work/reload.out" 2>&1 <<'PY'
import os, shutil, signal, socket, ssl, sys, time
port, work, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(cafile=work + "/ca.crt")

def connect():
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")

def cn(conn):
    return dict(x[0] for x in conn.getpeercert()["subject"])["commonName"]

def healthz(conn):
    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while b"\r\n\r\nok" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return "closed"
        data += chunk
    return data.split(b" ")[1].decode()

old = connect()
print("old before:", cn(old), healthz(old))
for name in ("crt", "key"):
    shutil.copy(f"{work}/kapi-two.{name}", f"{work}/tls.{name}.new")
    os.replace(f"{work}/tls.{name}.new", f"{work}/tls.{name}")
with open(work + "/tokens.csv.new", "w") as f:
    f.write("token-two,bob,2,system:masters\n")
os.replace(work + "/tokens.csv.new", work + "/tokens.csv")
os.kill(pid, signal.SIGHUP)
new = None
for _ in range(100):
    new = cn(connect())
    if new == "kapi-two":
        break
    time.sleep(0.05)
print("new after:", new)
print("old after:", cn(old), healthz(old))
PY
expect_eq "SIGHUP: an open connection works on, with the old certificate" \
    "old before: kapi-one 200|new after: kapi-two|old after: kapi-one 200" \
    "$(paste -sd'|' "$work/reload.out")"
check "SIGHUP: the reload is logged" grep -q 'SIGHUP: serving certificate reloaded' "$KAPI_LOG"
check "SIGHUP: the kubeconfig trusts the new certificate" \
    kubectl --kubeconfig "$data/kubeconfig" get ns default
kubectl --kubeconfig "$data/kubeconfig" create ns after-reload >/dev/null
check "SIGHUP: the watch opened before it goes on, and sees a namespace made after it" \
    eventually grep -q '"name":"after-reload"' "$work/watch.out"
kill "$watch_pid" 2>/dev/null
wait "$watch_pid" 2>/dev/null
check "SIGHUP: the new token file's token is accepted" eventually test "$(token_code token-two)" = 200
expect_eq "SIGHUP: the old file's token is not" 401 "$(token_code token-one)"
check "SIGHUP: systemd is told of the reload and of readiness after it" \
    grep -qE '^RELOADING=1 MONOTONIC_USEC=[0-9]+$' "$work/notify.out"

# A bad file: logged, and the old certificate and tokens stay.
echo garbage >"$work/tls.crt"
echo 'only-two,columns' >"$work/tokens.csv"
kill -HUP "$KAPI_PID"
check "SIGHUP with a bad certificate logs why and keeps the old one" \
    eventually grep -q 'serving certificate not reloaded, the old one stays' "$KAPI_LOG"
check "... and a bad token file too, naming its line" \
    eventually grep -qE 'token file not reloaded, the old one stays: .*line 1' "$KAPI_LOG"
subject=$(openssl s_client -connect "127.0.0.1:$port" </dev/null 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null)
expect_eq "... new connections still get the last good certificate" "subject=CN = kapi-two" \
    "$subject"
expect_eq "... and the last good tokens still work" 200 "$(token_code token-two)"
stop_kapi
wait "$notify_pid"
expect_eq "NOTIFY_SOCKET: READY=1, the reloads, then STOPPING=1 at shutdown" \
    "READY=1 RELOADING=1 READY=1 RELOADING=1 READY=1 STOPPING=1" \
    "$(sed 's/ MONOTONIC_USEC=[0-9]*//' "$work/notify.out" | paste -sd' ')"

# ---- The Debian package, of the binary under test
deb=$(make -s --no-print-directory -C "$top" deb DEB_BIN="$bin" BUILD="$work/debbuild" 2>"$work/deb.err" | tail -1)
check "make deb builds a package" test -f "$deb"
root=$work/root
mkdir "$root"
check "dpkg -x extracts it into a fresh root" dpkg -x "$deb" "$root"
control=$(dpkg-deb -f "$deb" Package Depends)
check "its control names its library dependencies" grep -qE '^Depends: .*libc6 .*libuv1' <<<"$control"
check "and libcurl4, which the webhook client loads at its first call" grep -qE '^Depends: .*libcurl4' <<<"$control"
for f in usr/bin/kapi usr/share/man/man1/kapi.1.gz lib/systemd/system/kapi.service \
    etc/kapi/config.yaml; do
    check "it holds /$f" test -f "$root/$f"
done
man_has() { zcat "$root/usr/share/man/man1/kapi.1.gz" | grep -qF "$1"; }
check "the man page lists the flags" man_has '\fB\-\-secure\-port\fR \fIint\fR'
check "the packaged binary runs: --version" "$root/usr/bin/kapi" --version
debport=$(free_port)
start_kapi "$root/usr/bin/kapi" "$work/debdata" "$debport" --config "$root/etc/kapi/config.yaml" ||
    exit 1
expect_eq "the packaged binary, with the packaged config, serves /healthz" ok \
    "$(curl -s --cacert "$work/debdata/ca.crt" "https://127.0.0.1:$debport/healthz")"
stop_kapi
if command -v systemd-analyze >/dev/null; then
    sed "s|/usr/bin/kapi|$root/usr/bin/kapi|" "$root/lib/systemd/system/kapi.service" \
        >"$work/kapi.service"
    check "the unit passes systemd-analyze verify" systemd-analyze verify --man=no \
        "$work/kapi.service"
else
    echo "SKIP systemd-analyze verify: systemd-analyze is not installed"
fi
e2e_finish
