#!/usr/bin/env bash
# Custom resources as kubectl meets them: a CRD with two versions, the status and scale
# subresources; apply, get, -l, -w, patch, kubectl scale, /status writes, finalizers,
# delete -l, and the clean-up when a namespace or the CRD itself is deleted; then a richer
# schema (list-map and set arrays, int-or-string, an embedded resource, formats).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }
api=https://127.0.0.1:$port
c() { curl -s --cacert "$data/ca.crt" -H "Authorization: Bearer $(cat "$data/admin-token")" "$@"; }

cat >"$work/crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.e2e.example.com
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color]
            properties:
              color: {type: string, enum: [red, green, blue]}
              replicas: {type: integer, default: 1, minimum: 0}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              replicas: {type: integer}
              phase: {type: string}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
EOF
gadget() { # gadget NAME COLOR [LABEL]
    printf 'apiVersion: e2e.example.com/v1\nkind: Gadget\nmetadata:\n  name: %s\n' "$1"
    [ -n "${3:-}" ] && printf '  labels: {tier: %s}\n' "$3"
    printf 'spec:\n  color: %s\n' "$2"
}

check "apply the CRD" kc apply -f "$work/crd.yaml"
# Until the CRD controller's first pass, status.conditions is null (as in kube-apiserver),
# which kubectl wait refuses rather than waits on: retry it.
established() {
    for _ in $(seq 1 50); do
        kc wait --for=condition=Established --timeout=10s crd/gadgets.e2e.example.com && return 0
        sleep 0.1
    done
    return 1
}
check "the CRD becomes Established" established
kc create namespace ga >/dev/null
check "api-resources lists the short name" sh -c "kubectl api-resources | grep -q '^gadgets *gd *e2e.example.com/v1 *true *Gadget'"
explain=$(kc explain gadgets.spec 2>&1)
case $explain in *'color	<string> -required-'*'enum: red, green, blue'*'replicas	<integer>'*)
    pass "kubectl explain reads the Gadget's schema from /openapi/v3" ;;
*) fail "kubectl explain reads the Gadget's schema from /openapi/v3: $explain" ;; esac
# A second CRD of the group claiming the same kind: refused names, never served.
sed -e 's/gadgets.e2e/doohickeys.e2e/; s/plural: gadgets, singular: gadget/plural: doohickeys, singular: doohickey/; s/shortNames: \[gd\]/shortNames: [dh]/' \
    "$work/crd.yaml" >"$work/crd2.yaml"
kc apply -f "$work/crd2.yaml" >/dev/null
refused() {
    for _ in $(seq 1 50); do
        r=$(kc get crd doohickeys.e2e.example.com -o jsonpath='{.status.conditions[?(@.type=="NamesAccepted")].reason}')
        [ "$r" = ListKindConflict ] && return 0
        sleep 0.1
    done
    return 1
}
check "a CRD claiming a kind of its group gets NamesAccepted False" refused
expect_eq "and is not served" "1" "$(kc get doohickeys 2>&1 | grep -c "doesn't have a resource type")"
kc delete crd doohickeys.e2e.example.com >/dev/null
# A schema that is not structural is refused, the field named.
sed -e 's/gadgets.e2e/thingies.e2e/; s/plural: gadgets, singular: gadget, kind: Gadget, shortNames: \[gd\]/plural: thingies, singular: thingy, kind: Thingy/; s/phase: {type: string}/phase: {description: untyped}/' \
    "$work/crd.yaml" >"$work/crd3.yaml"
out=$(kc apply -f "$work/crd3.yaml" 2>&1)
case $out in *'spec.versions[0].schema.openAPIV3Schema.properties[status].properties[phase].type: Required value: must not be empty for specified object fields'*)
    pass "a non-structural schema is refused with the field named" ;;
*) fail "a non-structural schema is refused with the field named: $out" ;; esac
# More variants kube refuses, each named at its field: metadata restricted beyond name and
# generateName, a list-map of scalars, a default outside its enum.
variant() { # variant NAME SPEC_PROPERTIES(json)
    printf '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"variants.e2e.example.com"},"spec":{"group":"e2e.example.com","scope":"Namespaced","names":{"plural":"variants","kind":"Variant"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":%s}}}]}}' "$1"
}
P=spec.versions\\[0\\].schema.openAPIV3Schema.properties
refuses "metadata restricted beyond name" \
    "$P\\[metadata\\]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified" \
    kc create -f - <<<"$(variant '{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}}}')"
refuses "a list-map of scalars" \
    "$P\\[spec\\].properties\\[l\\].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map" \
    kc create -f - <<<"$(variant '{"spec":{"type":"object","properties":{"l":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"string"}}}}}')"
refuses "a default outside its enum" \
    "$P\\[spec\\].properties\\[a\\].default: Unsupported value: \"z\": supported values: \"x\", \"y\"" \
    kc create -f - <<<"$(variant '{"spec":{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"default":"z"}}}}')"

kc get gadgets -n ga -w --output-watch-events -o json >"$work/watch.json" 2>/dev/null &
watcher=$!
sleep 0.5
check "kubectl apply creates a Gadget" sh -c "$(declare -f gadget); gadget g1 red front | kubectl apply -n ga -f -"
expect_eq "defaults are applied" "1" "$(kc get gadget g1 -n ga -o jsonpath='{.spec.replicas}')"
out=$(gadget bad purple | kc apply -n ga -f - 2>&1)
case $out in *'spec.color: Unsupported value: "purple": supported values: "red", "green", "blue"'*)
    pass "the schema refuses a bad enum value" ;;
*) fail "the schema refuses a bad enum value" "$out" ;; esac
gadget g2 green back | kc apply -n ga -f - >/dev/null
gadget g3 blue back | kc apply -n ga -f - >/dev/null
expect_eq "get -l tier=back" "g2 g3" "$(kc get gd -n ga -l tier=back -o jsonpath='{.items[*].metadata.name}')"
expect_eq "get -A by short name" "3" "$(kc get gd -A --no-headers | wc -l | tr -d ' ')"

check "patch --type=merge" kc patch gadget g1 -n ga --type=merge -p '{"spec":{"color":"green"}}'
check "patch --type=json" kc patch gadget g1 -n ga --type=json \
    -p '[{"op":"replace","path":"/spec/color","value":"blue"}]'
out=$(kc patch gadget g1 -n ga -p '{"spec":{"color":"red"}}' 2>&1)
case $out in *"the body of the request was in an unknown format"*) pass "strategic merge patch is refused" ;;
*) fail "strategic merge patch is refused" "$out" ;; esac
expect_eq "the generation counts spec changes" "3" "$(kc get gadget g1 -n ga -o jsonpath='{.metadata.generation}')"
check "kubectl label" kc label gadget g1 -n ga extra=yes
expect_eq "a label leaves the generation" "3" "$(kc get gadget g1 -n ga -o jsonpath='{.metadata.generation}')"

check "a write to the main resource ignores status" kc patch gadget g1 -n ga --type=merge \
    -p '{"status":{"phase":"Ready"}}'
expect_eq "so status stays empty" "" "$(kc get gadget g1 -n ga -o jsonpath='{.status.phase}')"
check "a write to /status sets it" kc patch gadget g1 -n ga --subresource=status --type=merge \
    -p '{"status":{"phase":"Ready","replicas":2},"spec":{"color":"red"}}'
expect_eq "status set, spec untouched by /status" "Ready blue" \
    "$(kc get gadget g1 -n ga -o jsonpath='{.status.phase} {.spec.color}')"

check "kubectl scale" kc scale gadget g1 -n ga --replicas=4
expect_eq "scale writes spec.replicas" "4" "$(kc get gadget g1 -n ga -o jsonpath='{.spec.replicas}')"
expect_eq "the Scale reads status.replicas" "Scale 4 2" \
    "$(c "$api/apis/e2e.example.com/v1/namespaces/ga/gadgets/g1/scale" | jq -r '"\(.kind) \(.spec.replicas) \(.status.replicas)"')"
out=$(kc scale gadget g1 -n ga --replicas=-1 2>&1)
case $out in *"should be a non-negative integer"*|*"must be greater than or equal to 0"*) pass "a negative scale is refused" ;;
*) fail "a negative scale is refused" "$out" ;; esac

warn=$(kc get gadgets.v1beta1.e2e.example.com -n ga 2>&1 >/dev/null)
case $warn in *"e2e.example.com/v1beta1 Gadget is deprecated; use e2e.example.com/v1 Gadget"*)
    pass "the deprecated version warns" ;;
*) fail "the deprecated version warns" "$warn" ;; esac
expect_eq "read through v1beta1" "e2e.example.com/v1beta1 blue" \
    "$(kc get gadgets.v1beta1.e2e.example.com g1 -n ga -o jsonpath='{.apiVersion} {.spec.color}' 2>/dev/null)"

check "a Gadget with a finalizer" kc patch gadget g2 -n ga --type=merge \
    -p '{"metadata":{"finalizers":["e2e.example.com/hold"]}}'
kc delete gadget g2 -n ga --wait=false >/dev/null
expect_eq "delete leaves it terminating" "true" \
    "$(kc get gadget g2 -n ga -o json | jq '.metadata.deletionTimestamp != null')"
kc patch gadget g2 -n ga --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null
check "removing the finalizer removes it" kc wait --for=delete gadget/g2 -n ga --timeout=5s
check "delete -l" kc delete gadgets -n ga -l tier=back
expect_eq "only the matches went" "g1" "$(kc get gd -n ga -o jsonpath='{.items[*].metadata.name}')"

kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
expect_eq "the watch saw every change" "ADDED ADDED ADDED DELETED DELETED" \
    "$(jq -r 'select(.type != "MODIFIED") | .type' "$work/watch.json" | tr '\n' ' ' | sed 's/ $//')"

check "deleting the namespace" kc delete namespace ga --timeout=10s
expect_eq "removes its Gadgets" "0" "$(kc get gd -A --no-headers 2>/dev/null | wc -l | tr -d ' ')"

kc create namespace gb >/dev/null
gadget g4 red | kc apply -n gb -f - >/dev/null
check "deleting the CRD" kc delete crd gadgets.e2e.example.com --timeout=10s
expect_eq "removes its Gadgets and the endpoint" "404" \
    "$(c -o /dev/null -w '%{http_code}' "$api/apis/e2e.example.com/v1/namespaces/gb/gadgets/g4")"

# A richer schema, as operators write them: list-map and set arrays, int-or-string, an
# embedded resource, formats, nested defaults.
cat >"$work/kits.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kits.e2e.example.com
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: kits, singular: kit, kind: Kit}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              mode: {type: string, enum: [fast, safe], default: safe}
              port: {x-kubernetes-int-or-string: true}
              since: {type: string, format: date-time}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name, protocol]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    protocol: {type: string, default: TCP}
                    number: {type: integer, minimum: 1, maximum: 65535}
              limits:
                type: object
                properties:
                  cpu: {type: object, properties: {max: {type: integer, default: 2}}}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
EOF
check "a CRD with a richer schema" kc apply -f "$work/kits.yaml"
check "is established" kc wait --for=condition=Established crd/kits.e2e.example.com --timeout=10s
kit() { printf 'apiVersion: e2e.example.com/v1\nkind: Kit\nmetadata: {name: %s}\nspec: %s\n' "$1" "$2"; }
kit k1 '{port: http, since: "2024-01-02T03:04:05Z", tags: [a, b], ports: [{name: web, number: 80}, {name: web, protocol: UDP, number: 80}], limits: {cpu: {}}, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {k: v}}}' |
    check "a Kit using every part" kc apply -f -
expect_eq "its defaults, nested and in list items" "safe TCP 2 ConfigMap http" \
    "$(kc get kit k1 -o jsonpath='{.spec.mode} {.spec.ports[0].protocol} {.spec.limits.cpu.max} {.spec.template.kind} {.spec.port}')"
kit k2 '{port: 8080}' | check "an int-or-string given an integer" kc apply -f -
refuses "an int-or-string given a list" \
    'spec.port: Invalid value: "array": spec.port in body must be of type integer,string: "array"' \
    kc apply -f - <<<"$(kit k3 '{port: [1]}')"
refuses "a set with a repeated item" 'spec.tags\[1\]: Duplicate value: "a"' \
    kc apply -f - <<<"$(kit k4 '{tags: [a, a]}')"
refuses "a list-map with a repeated key (its default filled in)" \
    'spec.ports\[1\]: Duplicate value: map\[string\]interface \{\}\{"name":"web", "protocol":"TCP"\}' \
    kc apply -f - <<<"$(kit k5 '{ports: [{name: web}, {name: web, protocol: TCP}]}')"
refuses "a list-map item without its key" 'spec.ports\[0\].name: Required value' \
    kc apply -f - <<<"$(kit k6 '{ports: [{number: 5}]}')"
refuses "a bad date-time" \
    'spec.since: Invalid value: "yesterday": spec.since in body must be of type date-time: "yesterday"' \
    kc apply -f - <<<"$(kit k7 '{since: yesterday}')"
refuses "an embedded resource without kind" 'spec.template.kind: Required value: must not be empty' \
    kc apply -f - <<<"$(kit k8 '{template: {apiVersion: v1, metadata: {name: x}}}')"
refuses "an embedded resource's metadata is ObjectMeta" \
    "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'" \
    kc apply -f - <<<"$(kit k9 '{template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "a/b"}}}')"
explain=$(kc explain kits.spec.ports 2>&1)
case $explain in *'name	<string> -required-'*'protocol	<string>'*) pass "kubectl explain a list-map's items" ;;
*) fail "kubectl explain a list-map's items" "$explain" ;; esac

e2e_finish
