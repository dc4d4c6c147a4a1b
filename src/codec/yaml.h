/*
 * codec/yaml: YAML request bodies in, YAML answers out, as kube-apiserver 1.26 does them.
 *
 * kube-apiserver reads an application/yaml body with sigs.k8s.io/yaml's YAMLToJSON, which
 * is gopkg.in/yaml.v2 (v2.4.0) decoding into interface{} followed by encoding/json; it
 * writes YAML with JSONToYAML, the same library the other way. kapi parses with libyaml
 * (go-yaml v2 is a port of it: same scanner, same messages, same marks) and reproduces
 * go-yaml's decoding and encoding rules on top:
 *
 *   - YAML 1.1 scalars: y/yes/on/true and n/no/off/false in their three spellings are
 *     booleans, ~/null/empty is null, 0x 0o 0b and leading-zero octal integers, "_"
 *     between digits, .inf/.nan; quoted scalars are strings; timestamps stay strings;
 *     explicit tags (!!str, !!int, !!float, !!binary, ...) are honoured;
 *   - the first document only (later documents are not even read), a stream of comments
 *     only is JSON null; anchors, aliases and << merge keys; aliases expanded with go-yaml's
 *     guard against exponential expansion ("document contains excessive aliasing");
 *   - mapping keys that are not strings become strings (1, 1.5, true) as sigs.k8s.io/yaml
 *     does; a null key is an error; so is (kapi's own limit) a key holding U+0000, which
 *     jansson could not read back from the store;
 *   - numbers go through encoding/json: an integral float below 2^63 becomes an integer
 *     (replicas: 3.0 is 3), integers above int64 become reals, .inf/.nan are an error;
 *   - a repeated key: the last value wins; each repeat is reported in go-yaml's strict
 *     words (what kube-apiserver warns or fails with);
 *   - object members keep document order (kube-apiserver's own order is a Go map's; the
 *     caller orders members as it does for a JSON body).
 *
 * Nesting deeper than KAPI_YAML_MAX_DEPTH is refused: jansson reads no deeper, and stored
 * objects must parse again.
 */
#ifndef KAPI_CODEC_YAML_H
#define KAPI_CODEC_YAML_H

#include "codec/json.h"

#define KAPI_YAML_MEDIA_TYPE "application/yaml"
/* Deepest nesting of collections accepted in a YAML body (jansson's parsing depth). */
#define KAPI_YAML_MAX_DEPTH 2048

/* Reads the YAML body data[0..len) into *out (a new reference, JSON null for an empty
 * body). Each repeated mapping key is appended to dups (when non-NULL) as go-yaml's strict
 * mode words it, `line 7: key "schedule" already set in map` (line of the repeated key's
 * value), in the order go-yaml finds them; at most 1000 are kept.
 *
 * On failure returns a BadRequest error whose message is the converter's, as
 * kube-apiserver puts it after "the object provided is unrecognized (must be of type X): ":
 *   yaml: line 3: mapping values are not allowed in this context
 *   yaml: line 2: found character that cannot start any token      (a tab)
 *   yaml: line 4: did not find expected key
 *   yaml: unknown anchor 'x' referenced
 *   Unsupported map key of type: <nil>, key: <nil>, value: "x"
 *   json: unsupported value: NaN
 * and sets *out to NULL; dups may then hold entries, which the caller disposes of. */
kapi_error *kapi_yaml_parse(const char *data, size_t len, json_t **out, kapi_dups *dups);

/* Appends the text of the strict-decoding error for YAML duplicates, as go-yaml's
 * TypeError says it: "yaml: unmarshal errors:\n  line 7: key \"a\" already set in map"
 * (one line per entry). With fieldValidation=Warn kube-apiserver sends each entry's
 * message as its own warning instead. */
void kapi_yaml_strict_message(kapi_buf *b, const kapi_dups *dups);

/* Appends v as kube-apiserver writes an application/yaml answer (JSONToYAML: go-yaml v2
 * Marshal of the JSON value): keys in go-yaml's order (digit runs by value), two-space
 * indentation with sequences at their key's indentation, {} and [] when empty, strings
 * double-quoted when they would read back as another type ("true", "1", "", "2024-01-01",
 * "1:20") or hold unprintable characters, single-quoted when plain would misparse
 * ("- x", "a: b", "#x", " x"), as |- / | blocks when they hold a newline, long plain and
 * quoted strings folded at 80 columns; integers as integers (an integral real too, below
 * 2^63), other reals in Go's shortest %g form ("1.5", "1e-07", "1.2345675e+06"). v must
 * come from jansson (valid UTF-8), which makes this infallible. */
void kapi_yaml_encode(kapi_buf *b, const json_t *v);

#endif
