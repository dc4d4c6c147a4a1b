#!/usr/bin/env bash
# x-kubernetes-validations as kubectl meets them: a CRD whose rules sit on the root, on a
# nested object, inside a list and a map, with escaped names and a transition rule;
# violating objects refused with the rule's message at its field; CRDs with a bad rule
# or a too expensive one refused, naming the rule.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
e2e_start "$1"
kc() { kubectl --request-timeout=10s "$@"; }

cat >"$work/crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: rulers.e2e.example.com
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: rulers, singular: ruler, kind: Ruler}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - {rule: "self.metadata.name.startsWith('r-')", message: "names start with r-"}
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.minReplicas <= self.maxReplicas", message: "minReplicas must not exceed maxReplicas"}
            - {rule: "!has(self.max__dash__surge) || self.max__dash__surge < 5"}
            properties:
              minReplicas: {type: integer, default: 0}
              maxReplicas: {type: integer, default: 10}
              max-surge: {type: integer}
              owner:
                type: string
                x-kubernetes-validations:
                - {rule: "self == oldSelf", message: "owner is immutable"}
              hosts:
                type: array
                maxItems: 10
                items:
                  type: string
                  maxLength: 64
                  x-kubernetes-validations:
                  - {rule: "self.matches('^[a-z.]+$')", message: "hosts are lower-case names"}
              limits:
                type: object
                maxProperties: 10
                additionalProperties:
                  type: integer
                  x-kubernetes-validations:
                  - {rule: "self >= 0", message: "limits are not negative"}
EOF
check "a CRD with rules is created" kc apply -f "$work/crd.yaml"
eventually kc get rulers || fail "the rulers are served"
ruler() { # ruler NAME SPEC
    printf 'apiVersion: e2e.example.com/v1\nkind: Ruler\nmetadata:\n  name: %s\nspec: %s\n' "$1" "$2"
}
check "a valid object is created" kc apply -f - <<<"$(ruler r-ok '{minReplicas: 1, maxReplicas: 3, owner: a, hosts: [a.example], limits: {cpu: 2}}')"
refuses "a root rule" 'Invalid value: "object": names start with r-' \
    kc apply -f - <<<"$(ruler bad '{}')"
refuses "a nested object's rule, with its message and field" \
    'spec: Invalid value: "object": minReplicas must not exceed maxReplicas' \
    kc apply -f - <<<"$(ruler r-a '{minReplicas: 5, maxReplicas: 2}')"
refuses "an escaped name, and a rule without message" \
    'spec: Invalid value: "object": failed rule: !has\(self.max__dash__surge\) \|\| self.max__dash__surge < 5' \
    kc apply -f - <<<"$(ruler r-b '{max-surge: 7}')"
refuses "a rule inside a list" 'spec.hosts\[1\]: Invalid value: "string": hosts are lower-case names' \
    kc apply -f - <<<"$(ruler r-c '{hosts: [ok, NOT-OK]}')"
refuses "a rule inside a map" 'spec.limits\[mem\]: Invalid value: "integer": limits are not negative' \
    kc apply -f - <<<"$(ruler r-d '{limits: {mem: -1}}')"
refuses "a transition rule on update" 'spec.owner: Invalid value: "string": owner is immutable' \
    kc patch ruler r-ok --type=merge -p '{"spec":{"owner":"b"}}'
check "an update that keeps the old value" kc patch ruler r-ok --type=merge -p '{"spec":{"maxReplicas":4}}'
refuses "the rules run after the schema's own errors are gone" \
    'some validation rules were not checked because the object was invalid' \
    kc apply -f - <<<"$(ruler r-e '{hosts: [a, b, c, d, e, f, g, h, i, j, k]}')"

bad_crd() { # bad_crd RULE [PROPERTIES]
    local props=${2:-"{a: {type: string}}"}
    cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: badrules.e2e.example.com}
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: badrules, kind: BadRule}
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
            x-kubernetes-validations: [{rule: "$1"}]
            properties: $props
EOF
}
refuses "a CRD whose rule names an undefined field" \
    "x-kubernetes-validations\[0\].rule: Invalid value: .*compilation failed: ERROR: <input>:1:5: undefined field 'nope'" \
    kc apply -f - <<<"$(bad_crd "self.nope == 'x'")"
refuses "a CRD whose rule does not parse" \
    "x-kubernetes-validations\[0\].rule: Invalid value: .*compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>'" \
    kc apply -f - <<<"$(bad_crd "self.a ==")"
refuses "a CRD whose rule is not a bool" "cel expression must evaluate to a bool" \
    kc apply -f - <<<"$(bad_crd "self.a")"
refuses "a CRD whose rule is too expensive" \
    "x-kubernetes-validations\[0\].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" \
    kc apply -f - <<<"$(bad_crd "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != '')))" "{l: {type: array, items: {type: string}}}")"

e2e_finish
