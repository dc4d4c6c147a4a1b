#!/usr/bin/env bash
# The type model as a kubectl user meets it: validation errors that name the field,
# field validation (strict fails, warn warns), defaults visible in -o yaml, kubectl
# explain for every served type, and ClusterCIDR's immutable spec.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }

# cronjob NAME SCHEDULE [SPEC-LINES...]: writes $work/NAME.yaml
cronjob() {
    local name=$1 schedule=$2
    shift 2
    {
        printf 'apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: %s\nspec:\n' "$name"
        printf '  schedule: "%s"\n' "$schedule"
        for line in "$@"; do printf '  %s\n' "$line"; done
        printf '  jobTemplate:\n    spec:\n      template:\n        spec:\n'
        printf '          restartPolicy: OnFailure\n          containers:\n'
        printf '          - name: main\n            image: busybox:1.36\n'
    } >"$work/$name.yaml"
}

# rejects NAME FILE PATTERN: kubectl create fails and its message matches PATTERN.
rejects() {
    local out
    if out=$(kc create -f "$2" 2>&1); then
        fail "$1" "was accepted"
    elif echo "$out" | grep -qE "$3"; then
        pass "$1"
    else
        fail "$1" "$out"
    fi
}

cronjob bad-schedule "61 * * * *"
rejects "a bad schedule is rejected naming spec.schedule" "$work/bad-schedule.yaml" \
    'spec.schedule: Invalid value: "61 \* \* \* \*": end of range \(61\) above maximum \(59\): 61'
cronjob bad-zone "0 3 * * *" "timeZone: Mars/Olympus"
rejects "an unknown time zone is rejected naming spec.timeZone" "$work/bad-zone.yaml" \
    'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'
cronjob bad-policy "0 3 * * *" "concurrencyPolicy: Sometimes"
rejects "an unknown concurrencyPolicy is rejected" "$work/bad-policy.yaml" \
    'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"'

cronjob strict "0 3 * * *" "bogus: 1"
rejects "kubectl create --validate=strict names the unknown field" "$work/strict.yaml" \
    'unknown field "spec.bogus"'
out=$(kc create --validate=strict -f "$work/strict.yaml" 2>&1)
if echo "$out" | grep -q 'unknown field "spec.bogus"'; then
    pass "--validate=strict fails on spec.bogus"
else
    fail "--validate=strict fails on spec.bogus" "$out"
fi
out=$(kc create --validate=warn -f "$work/strict.yaml" 2>&1)
if echo "$out" | grep -q 'Warning: unknown field "spec.bogus"' &&
    echo "$out" | grep -q 'cronjob.batch/strict created'; then
    pass "--validate=warn warns and creates"
else
    fail "--validate=warn warns and creates" "$out"
fi

# Repeated and unknown fields are reported in document order, each as its own warning.
body='{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"w","zzz":1,"name":"w"},"spec":{"bogus":1}}'
warnings=$(curl -s -D - -o /dev/null --cacert "$data/ca.crt" -H "Authorization: Bearer $(cat "$data/admin-token")" \
    -H 'Content-Type: application/json' -X POST "https://127.0.0.1:$port/api/v1/namespaces?dryRun=All" \
    -d "$body" | grep -i '^warning:' | tr -d '\r' | cut -d'"' -f2- | tr '\n' '|')
expect_eq "warnings for repeated and unknown fields, in document order" \
    'unknown field \"metadata.zzz\""|duplicate field \"metadata.name\""|unknown field \"spec.bogus\""|' "$warnings"

kc get cronjob strict -o yaml >"$work/strict.out.yaml" 2>&1
for want in "concurrencyPolicy: Allow" "successfulJobsHistoryLimit: 3" \
    "failedJobsHistoryLimit: 1" "suspend: false" "imagePullPolicy: IfNotPresent" \
    "terminationMessagePath: /dev/termination-log" "dnsPolicy: ClusterFirst" \
    "schedulerName: default-scheduler"; do
    check "kubectl get -o yaml shows the default $want" grep -q "$want" "$work/strict.out.yaml"
done

cronjob quantities "0 3 * * *"
cat >>"$work/quantities.yaml" <<'YAML'
            resources:
              requests: {cpu: 0.5, memory: "1000Mi"}
              limits: {cpu: "1.0001"}
YAML
check "kubectl create a CronJob with resource quantities" kc create -f "$work/quantities.yaml"
expect_eq "quantities come back canonical and rounded to milli" "500m 1000Mi 1001m" \
    "$(kc get cronjob quantities -o jsonpath='{range .spec.jobTemplate.spec.template.spec.containers[0].resources}{.requests.cpu} {.requests.memory} {.limits.cpu}{end}')"

for what in cronjob cronjob.spec.jobTemplate clustercidr.spec namespace event \
    customresourcedefinition.spec.versions; do
    out=$(kc explain "$what" 2>&1)
    if echo "$out" | grep -q "^DESCRIPTION:" && echo "$out" | grep -qE "^FIELDS:"; then
        pass "kubectl explain $what"
    else
        fail "kubectl explain $what" "$(echo "$out" | head -3)"
    fi
done

out=$(kc explain events --api-version=events.k8s.io/v1 2>&1)
if echo "$out" | grep -q "^GROUP: *events.k8s.io" && echo "$out" | grep -q "reportingController"; then
    pass "kubectl explain events --api-version=events.k8s.io/v1"
else
    fail "kubectl explain events --api-version=events.k8s.io/v1" "$(echo "$out" | head -3)"
fi

cat >"$work/cc.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1alpha1
kind: ClusterCIDR
metadata:
  name: pods
spec:
  perNodeHostBits: 8
  ipv4: 10.0.0.0/16
YAML
check "kubectl create a ClusterCIDR" kc create -f "$work/cc.yaml"
sed -i 's/perNodeHostBits: 8/perNodeHostBits: 6/' "$work/cc.yaml"
out=$(kc replace -f "$work/cc.yaml" 2>&1)
if echo "$out" | grep -q "field is immutable"; then
    pass "a ClusterCIDR's spec is immutable"
else
    fail "a ClusterCIDR's spec is immutable" "$out"
fi

# serviceAccount, the deprecated alias, names the account when serviceAccountName is not
# given, and repeats serviceAccountName when it is (kube's conversions keep them equal).
sa_cj() {
    printf '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"%s"},"spec":{"schedule":"* * * * *",' "$1"
    printf '"jobTemplate":{"spec":{"template":{"spec":{%s"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}}}' "$2"
}
sa_path='{.spec.jobTemplate.spec.template.spec.serviceAccountName} {.spec.jobTemplate.spec.template.spec.serviceAccount}'
expect_eq "serviceAccount alone names the account" "old old" \
    "$(sa_cj sa-alias '"serviceAccount":"old",' | kc create -f - -o jsonpath="$sa_path")"
expect_eq "serviceAccountName wins and the alias repeats it" "new new" \
    "$(sa_cj sa-both '"serviceAccount":"old","serviceAccountName":"new",' | kc create -f - -o jsonpath="$sa_path")"

e2e_finish
