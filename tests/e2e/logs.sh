#!/usr/bin/env bash
# kapi's logs as an operator of kube-apiserver reads them: klog's text lines on stderr
# (start-up lines at -v=0, one "HTTP" line per request at -v=2, none below), the JSON
# lines of --logging-format=json, the Audit-ID header, and --audit-log-path's
# audit.k8s.io/v1 Events that say who deleted an object; bad flag values are refused.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_setup "$1"
export KUBECONFIG=$data/kubeconfig
kc() { kubectl --request-timeout=10s "$@"; }
echo 'alice-token,alice,uid-alice,dev' >"$work/tokens"
audit=$work/audit.log
klog='^[IWE][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +[0-9]+ [a-z_]+\.c:[0-9]+\] '
uuid='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

start_kapi "$bin" "$data" "$port" -v=2 --token-auth-file "$work/tokens" \
    --audit-log-path "$audit" || exit 1
check "the version, in klog's format" grep -qE "${klog}Version: .* \(Kubernetes v1\.26\.0\)" "$KAPI_LOG"
check "the flags given" grep -qE "${klog}FLAG: --v=\"2\"\$" "$KAPI_LOG"
check "the data dir and the store" sh -c "grep -qE '${klog}data dir: $data\$' '$KAPI_LOG' &&
    grep -qE '${klog}store: ' '$KAPI_LOG'"
check "the listening address" grep -qE "${klog}Serving securely on 127\.0\.0\.1:$port\$" "$KAPI_LOG"

admin=$(cat "$data/admin-token")
id=$(curl -sk -o /dev/null -D - -A logs-e2e/1 -H "Authorization: Bearer $admin" \
    "https://127.0.0.1:$port/api/v1/namespaces/default?pretty=1" |
    tr -d '\r' | sed -n 's/^[Aa]udit-[Ii][Dd]: //p')
check "every answer has an Audit-ID header, a UUID" sh -c "echo '$id' | grep -qxE '$uuid'"
line="${klog}\"HTTP\" verb=\"GET\" URI=\"/api/v1/namespaces/default\\?pretty=1\" latency=\"[0-9.]+(ns|µs|ms|s)\" userAgent=\"logs-e2e/1\" audit-ID=\"$id\" srcIP=\"127\.0\.0\.1:[0-9]+\" user=\"admin\" resp=200\$"
check "-v=2: the request's line, as kube's httplog writes it" eventually grep -qE "$line" "$KAPI_LOG"
id=$(curl -sk -o /dev/null -D - -H 'Audit-ID: given-by-client' \
    "https://127.0.0.1:$port/api/v1/namespaces" | tr -d '\r' | sed -n 's/^[Aa]udit-[Ii][Dd]: //p')
expect_eq "a client's Audit-ID is kept" "given-by-client" "$id"
check "a refused request's line has its code and user" eventually grep -qE \
    "\"HTTP\" verb=\"LIST\" URI=\"/api/v1/namespaces\" .*audit-ID=\"given-by-client\" .*user=\"system:anonymous\" resp=403\$" \
    "$KAPI_LOG"

# Who deleted the CronJob: alice, through her token.
kc create clusterrolebinding alice --clusterrole=cluster-admin --user=alice >/dev/null
kc --token=alice-token -n default create cronjob cj --image=busybox \
    --schedule='*/5 * * * *' >/dev/null
kc --token=alice-token -n default delete cronjob cj >/dev/null
kc -n default get cronjob cj --as=bob >/dev/null 2>&1
stop_kapi
# audit_check NAME PYTHON: PYTHON, with events the audit file's ResponseComplete Events and
# received its RequestReceived ones (every line must parse), evaluates true.
audit_check() {
    check "$1" python3 - "$audit" "$2" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
received = [e for e in events if e["stage"] == "RequestReceived"]
events = [e for e in events if e["stage"] == "ResponseComplete"]
ok = eval(sys.argv[2])
print(ok)
sys.exit(0 if ok else 1)
PY
}
audit_check "every audit line is an audit.k8s.io/v1 Event at the Metadata level" \
    'events and all(e["kind"] == "Event" and e["apiVersion"] == "audit.k8s.io/v1" and e["level"] == "Metadata" for e in events + received)'
audit_check "a RequestReceived Event, without responseStatus, before each authenticated request's ResponseComplete" \
    'sorted(e["auditID"] for e in received) == sorted(e["auditID"] for e in events if e["responseStatus"]["code"] != 401) and not any("responseStatus" in e or "annotations" in e for e in received)'
who='[e for e in events if e["verb"] == "delete" and e.get("objectRef", {}).get("name") == "cj"]'
audit_check "who deleted cronjob cj: alice, with her uid and groups" \
    "[e['user'] for e in $who] == [{'username': 'alice', 'uid': 'uid-alice', 'groups': ['dev', 'system:authenticated']}]"
audit_check "the delete's objectRef, code, source and URI" \
    "[(e['objectRef'], e['responseStatus'], e['sourceIPs'], e['requestURI']) for e in $who] == [({'resource': 'cronjobs', 'namespace': 'default', 'name': 'cj', 'apiGroup': 'batch', 'apiVersion': 'v1'}, {'metadata': {}, 'code': 200}, ['127.0.0.1'], '/apis/batch/v1/namespaces/default/cronjobs/cj?timeout=10s')]"
audit_check "the delete's authorization annotations" \
    "[e['annotations'] for e in $who] == [{'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': 'RBAC: allowed by ClusterRoleBinding \"alice\" of ClusterRole \"cluster-admin\" to User \"alice\"'}]"
audit_check "the create is alice's, with the verb create" \
    'any(e["verb"] == "create" and e["user"]["username"] == "alice" and e["objectRef"]["resource"] == "cronjobs" and e["responseStatus"]["code"] == 201 for e in events)'
audit_check "an impersonated request: the admin as user, bob as impersonatedUser, a 403 Forbidden" \
    'any(e["user"]["username"] == "admin" and e.get("impersonatedUser", {}).get("username") == "bob" and e["responseStatus"]["code"] == 403 and e["responseStatus"]["reason"] == "Forbidden" and e["annotations"]["authorization.k8s.io/decision"] == "forbid" for e in events)'
audit_check "timestamps are RFC 3339 with microseconds" \
    'all(__import__("re").fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", e[k]) for e in events for k in ("requestReceivedTimestamp", "stageTimestamp"))'
audit_check "a non-resource request: the verb is the method, no objectRef" \
    'any(e["requestURI"] == "/api/v1/namespaces/default?pretty=1" for e in events) and any(e["requestURI"].startswith("/version") and e["verb"] == "get" and "objectRef" not in e for e in events)'

# Default verbosity: start-up lines, no request lines.
start_kapi "$bin" "$data" "$port" || exit 1
kc get namespaces >/dev/null
stop_kapi
check "-v=0: no request lines" sh -c "! grep -q '\"HTTP\"' '$data.log.checked'"
check "-v=0: the start-up lines" grep -qE "${klog}Serving securely on" "$data.log.checked"

# JSON: every line of stderr is one object with ts, caller, msg and v.
start_kapi "$bin" "$data" "$port" --logging-format=json --v=2 || exit 1
kc get namespaces -A >/dev/null
curl -sk -A 'quote"agent' "https://127.0.0.1:$port/healthz" >/dev/null
sleep 0.2
stop_kapi
check "--logging-format=json: each line is a JSON object with ts, caller, msg and v" \
    python3 - "$data.log.checked" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if not l.startswith(("kapi: serving on", "export KUBECONFIG="))]
assert lines
for l in lines:
    o = json.loads(l)
    assert isinstance(o["ts"], float) and o["ts"] > 1.6e12, l
    assert o["caller"].count(".c:") == 1 and isinstance(o["msg"], str) and o["v"] in (0, 2), l
PY
check "--logging-format=json: the request lines with their fields" \
    python3 - "$data.log.checked" <<'PY'
import json, sys
http = [o for o in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")) if o["msg"] == "HTTP"]
assert any(o["URI"].startswith("/api/v1/namespaces?limit=500") and o["verb"] == "LIST" and o["resp"] == 200 and o["user"] == "admin" for o in http), http
assert any(o["URI"] == "/healthz" and o["userAgent"] == 'quote"agent' and o["v"] == 2 for o in http), http
assert all(set(o) >= {"latency", "audit-ID", "srcIP", "verb", "URI", "userAgent", "resp"} for o in http)
PY

# A policy: reads and health checks not logged, the rest at Metadata.
cat >"$work/policy.yaml" <<'EOF2'
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version"]
- level: None
  verbs: [get, list, watch]
- level: Metadata
  resources:
  - group: batch
    resources: ["cronjobs"]
EOF2
rm -f "$audit"
start_kapi "$bin" "$data" "$port" --audit-log-path "$audit" \
    --audit-policy-file "$work/policy.yaml" || exit 1
kc -n default create cronjob cj2 --image=busybox --schedule='*/5 * * * *' >/dev/null
kc -n default get cronjob cj2 >/dev/null
kc create namespace logs-ns >/dev/null
kc -n default delete cronjob cj2 >/dev/null
stop_kapi
audit_check "--audit-policy-file: the CronJob's create and delete only, by its rules" \
    '[(e["verb"], e["objectRef"]["name"]) for e in events] == [("create", "cj2"), ("delete", "cj2")]'
echo 'apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Loud' >"$work/bad.yaml"
refuses "a policy with an unknown level stops the start, naming the field" \
    "audit-policy-file $work/bad.yaml: rules.level: Unsupported value" \
    "$bin" --data-dir "$data" --secure-port "$port" --audit-log-path "$audit" \
    --audit-policy-file "$work/bad.yaml"

# "-": the Events on stdout, each line whole.
start_kapi "$bin" "$data" "$port" --audit-log-path - || exit 1
kc get namespaces >/dev/null
stop_kapi
check "--audit-log-path -: the Events on stdout" python3 - "$data.log.checked" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert any(e["stage"] == "ResponseComplete" and e["requestURI"].startswith("/api/v1/namespaces") for e in events)
PY

# Rotation: past 1 MiB the file becomes audit-<time>.log, one such kept.
rm -f "$audit"
start_kapi "$bin" "$data" "$port" --audit-log-path "$audit" --audit-log-maxsize 1 \
    --audit-log-maxbackup 1 || exit 1
for i in $(seq 1 3000); do
    printf 'url = "https://127.0.0.1:%s/version?n=%s"\noutput = "/dev/null"\n' "$port" "$i"
done >"$work/urls"
curl -sk -K "$work/urls"
stop_kapi
backups=$(ls "$work" | grep -cE '^audit-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}\.[0-9]{3}\.log$')
expect_eq "--audit-log-maxsize 1 --audit-log-maxbackup 1: one backup, by lumberjack's name" 1 "$backups"
check "each file at most 1 MiB, of whole Events, the last request in the current one" \
    python3 - "$audit" "$work"/audit-*.log <<'PY'
import json, os, sys
for f in sys.argv[1:]:
    assert os.path.getsize(f) <= 1 << 20, f
    events = [json.loads(l) for l in open(f)]
last = [json.loads(l) for l in open(sys.argv[1])][-1]
assert last["requestURI"] == "/version?n=3000", last
PY

refuses "an unknown --logging-format is refused, named" \
    'invalid argument "xml" for "--logging-format" flag: supported values: "json", "text"' \
    "$bin" --data-dir "$data" --secure-port "$port" --logging-format=xml
refuses "-v takes a number" 'invalid argument "two" for "--v" flag' \
    "$bin" --data-dir "$data" --secure-port "$port" -v two
refuses "an audit log that cannot be opened stops the start" \
    "audit-log-path $work/none/audit.log: No such file or directory" \
    "$bin" --data-dir "$data" --secure-port "$port" --audit-log-path "$work/none/audit.log"
e2e_finish
