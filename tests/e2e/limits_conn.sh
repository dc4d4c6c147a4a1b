#!/usr/bin/env bash
# Connection limits end to end (issue 12): the 429 past --max-requests-inflight and
# --max-mutating-requests-inflight (watches not counted), the 504 of --request-timeout and
# of ?timeout= and the 400 of a bad one, the slow-header close (kube's 32 s
# ReadHeaderTimeout: it runs in the background while the rest is checked), a trickled body,
# more than 1,024 headers, Go's 501 for `Transfer-Encoding: gzip, chunked`, and the TLS 1.2
# cipher suites.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
start_kapi "$bin" "$data" "$port" -v=2 --max-requests-inflight 2 --max-mutating-requests-inflight 1 \
    --request-timeout 5s || exit 1
api=https://127.0.0.1:$port
auth=(-H "Authorization: Bearer $(cat "$data/admin-token")")
c() { curl -s --cacert "$data/ca.crt" "${auth[@]}" "$@"; }
# curl_code ARGS...: the body into $work/body, the status code on stdout.
curl_code() { c -o "$work/body" -w '%{http_code}' "$@"; }
status_of() { jq -r '"\(.code) \(.reason) \(.message)"' "$work/body"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# A list that waits 3 s for a revision not reached yet: a request held in flight.
held_list="$api/api/v1/namespaces?resourceVersion=99999999"

# raw.py MODE: TLS to kapi with Python's ssl module, for what curl cannot send.
#   send:    the request on stdin as is; prints the whole answer, up to the server's close
#   trickle: a request line, then one header line a second; prints the seconds until the
#            server closed and the bytes it answered
cat >"$work/raw.py" <<'EOF'
import socket, ssl, sys, time
mode, port, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
if mode == "send":
    s.sendall(sys.stdin.buffer.read())
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    sys.stdout.write(out.decode("latin-1"))
else:
    t0 = time.time()
    s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
    s.settimeout(1)
    got = b""
    for i in range(45):
        try:
            b = s.recv(65536)
            if not b:
                break
            got += b
        except socket.timeout:
            pass
        except (ConnectionError, ssl.SSLError):
            break
        try:
            s.sendall(b"X-Slow-%d: 1\r\n" % i)
        except (ConnectionError, ssl.SSLError):
            break
    print("%d %d" % (round(time.time() - t0), len(got)))
EOF
raw() { python3 "$work/raw.py" "$1" "$port" "$data/ca.crt"; }

# ---- slow headers: started first, checked last ----
raw trickle >"$work/trickle" 2>&1 &
trickle_pid=$!

# ---- max in flight: two held reads fill --max-requests-inflight 2 ----
c -o /dev/null "$held_list" &
held1=$!
c -o /dev/null "$held_list" &
held2=$!
sleep 0.5
code=$(c -D "$work/headers" -o "$work/body" -w '%{http_code}' "$api/api/v1/namespaces")
expect_eq "read past --max-requests-inflight: 429" 429 "$code"
expect_eq "429 Status" "429 TooManyRequests Too many requests, please try again later." \
    "$(status_of)"
expect_eq "429 retryAfterSeconds" 1 "$(jq -r .details.retryAfterSeconds "$work/body")"
expect_eq "429 Retry-After: 1" "retry-after: 1" \
    "$(grep -i '^retry-after' "$work/headers" | tr -d '\r' | tr '[:upper:]' '[:lower:]')"
# Mutating requests have their own limit; watches are not counted at all.
code=$(curl_code -X POST -H 'Content-Type: application/json' \
    -d '{"metadata":{"name":"limits"}}' "$api/api/v1/namespaces")
expect_eq "write while reads are full: 201" 201 "$code"
code=$(curl_code --max-time 1 "$api/api/v1/namespaces?watch=1")
expect_eq "watch while reads are full: streams (cut by curl)" 200 "$code"
wait "$held1" "$held2"
code=$(curl_code "$api/api/v1/namespaces")
expect_eq "read after the held ones: 200" 200 "$code"
# The refused read is counted as kube-apiserver counts what its max-in-flight filter
# drops, and logged at -v=2.
series() { c "$api/metrics" | grep "^$1{" | grep 'code="429"' | grep 'resource="namespaces"' |
    grep 'verb="LIST"' | awk '{print $2}'; }
expect_eq "the 429 in apiserver_request_total" 1 "$(series apiserver_request_total)"
expect_eq "and in apiserver_request_terminations_total" 1 \
    "$(series apiserver_request_terminations_total)"
check "and its request line" grep -qE '"HTTP" verb="LIST" URI="/api/v1/namespaces".* resp=429$' \
    "$KAPI_LOG"

# ---- request deadlines ----
t0=$(now_ms)
code=$(c -D "$work/headers" -o "$work/body" -w '%{http_code}' "$held_list&timeout=1s")
took=$(($(now_ms) - t0))
expect_eq "?timeout=1s on a held list: 504" 504 "$code"
check "504 within ~1 s (${took} ms)" test "$took" -ge 900 -a "$took" -lt 2500
expect_eq "504 is kube's timeout filter's body" \
    '{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}' \
    "$(cat "$work/body")"
expect_eq "504 Content-Type as Go sniffs it" "content-type: text/plain; charset=utf-8" \
    "$(grep -i '^content-type' "$work/headers" | tr -d '\r' | tr '[:upper:]' '[:lower:]')"
code=$(curl_code "$api/api/v1/namespaces?timeout=10")
expect_eq "bad timeout: 400" "400 BadRequest invalid timeout specified in the request URL - time: missing unit in duration \"10\"" \
    "$(status_of)"
code=$(curl_code "$api/api/v1/namespaces?timeout=1m")
expect_eq "timeout longer than --request-timeout: capped, served" 200 "$code"
# --request-timeout 5s: a body trickled at 10 bytes a second is answered 504 at 5 s (over
# HTTP/1.1: over h2 the 504 is followed by RST_STREAM NO_ERROR, as Go's server sends it,
# which curl reports as a failed transfer).
t0=$(now_ms)
code=$(head -c 200 /dev/zero | tr '\0' ' ' | c --http1.1 -o "$work/body" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --limit-rate 10 -d @- "$api/api/v1/namespaces")
took=$(($(now_ms) - t0))
expect_eq "trickled body: 504 at --request-timeout" 504 "$code"
check "trickled body cut at ~5 s (${took} ms)" test "$took" -ge 4500 -a "$took" -lt 8000
# kube's timeout filter counts what it ends in apiserver_request_terminations_total.
terminated() { c "$api/metrics" | grep '^apiserver_request_terminations_total{' |
    grep 'code="504"' | grep 'resource="namespaces"' | grep "verb=\"$1\"" | awk '{print $2}'; }
expect_eq "the trickled POST's 504 in apiserver_request_terminations_total" 1 "$(terminated POST)"
check "the held LIST's 504 too" test "$(terminated LIST)" -ge 1

# ---- headers: more than 1,024 served; Go's 501 for a coding it does not know ----
hdrs=()
for i in $(seq 1 2000); do hdrs+=(-H "X-Many-$i: v"); done
code=$(curl_code "${hdrs[@]}" "$api/api/v1/namespaces/default")
expect_eq "2,000 headers: 200" 200 "$code"
answer=$(printf 'POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n' | raw send)
expect_eq "Transfer-Encoding: gzip, chunked: Go's 501" \
    "$(printf 'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nUnsupported transfer encoding')" \
    "$answer"

# ---- TLS 1.2: Go's AEAD suites only ----
tls12() {
    openssl s_client -connect "127.0.0.1:$port" -tls1_2 -cipher "$1" </dev/null 2>&1 |
        grep -o 'Cipher is [^ ]*' | head -1
}
expect_eq "TLS 1.2 CBC suite refused" "Cipher is (NONE)" "$(tls12 'ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA')"
expect_eq "TLS 1.2 RSA key exchange refused" "Cipher is (NONE)" "$(tls12 'AES128-GCM-SHA256')"
expect_eq "TLS 1.2 ECDHE AES-GCM agreed" "Cipher is ECDHE-ECDSA-AES128-GCM-SHA256" \
    "$(tls12 'ECDHE-ECDSA-AES128-GCM-SHA256')"
expect_eq "TLS 1.2 ECDHE ChaCha20 agreed" "Cipher is ECDHE-ECDSA-CHACHA20-POLY1305" \
    "$(tls12 'ECDHE-ECDSA-CHACHA20-POLY1305')"

# ---- the slow headers: closed, unanswered, 32 s after their first byte ----
wait "$trickle_pid"
read -r secs bytes <"$work/trickle"
check "slow headers closed at 32 s (${secs} s)" test "$secs" -ge 31 -a "$secs" -le 35
expect_eq "slow headers get no answer" 0 "$bytes"

e2e_finish
