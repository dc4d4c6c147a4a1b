/*
 * codec internals: the pieces of Go's standard library and of gopkg.in/yaml.v2 that the
 * JSON and YAML codecs need in order to say and decide things exactly as kube-apiserver
 * does (strconv's quoting, number parsing and float formatting, YAML 1.1 scalar
 * resolution, go-yaml's key order). Nothing here allocates except through kapi_buf.
 */
#ifndef KAPI_CODEC_INT_H
#define KAPI_CODEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/base.h"
#include "codec/go.h"

/* ---- Go's strconv and unicode/utf8 (gostr.c) ---- */

/* Appends s with each byte that is not part of valid UTF-8 replaced by U+FFFD, as
 * encoding/json does when it writes a Go string. */
void kapi_codec__put_utf8(kapi_buf *b, const char *s, size_t n);
/* strconv.ParseInt(s, 0, 64) and strconv.ParseUint(s, 0, 64): base prefixes 0x 0o 0b and a
 * leading 0 for octal; false on any syntax or range error. */
bool kapi_codec__parse_int(const char *s, size_t n, int64_t *out);
bool kapi_codec__parse_uint(const char *s, size_t n, uint64_t *out);
/* strconv.ParseFloat(s, 64) for decimal text (underscores between digits allowed as in
 * Go); false on a syntax error or an overflow to infinity. */
bool kapi_codec__parse_float(const char *s, size_t n, double *out);

/* ---- JSON's fast path (json_parse.c) ---- */

/* The value json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL) returns for the JSON text
 * p[0..n), built without jansson's reader (a new reference), or NULL when this reader is
 * not certain of it: any input jansson refuses, and some it accepts. kapi_json_parse then
 * asks jansson. *repeats (repeats may be NULL) tells whether an object of the text repeats
 * a key, which is when kapi_json_duplicates finds one; false when NULL is returned. Never
 * reads past p + n. */
json_t *kapi_codec__json_parse(const char *p, size_t n, bool *repeats);
/* The byte a one-letter JSON escape (the letter after the backslash) stands for, or -1. */
int kapi_codec__json_escape(unsigned char c);
/* The value of the four hexadecimal digits at p[0..4) of a \u escape, or -1. */
int32_t kapi_codec__hex4(const char *p);

/* ---- gopkg.in/yaml.v2 (yaml_resolve.c) ---- */

/* What a plain scalar resolves to (go-yaml's resolve with tag ""). */
typedef enum kapi_yaml__kind {
    KAPI_YAML_STR,
    KAPI_YAML_NULL,
    KAPI_YAML_BOOL,
    KAPI_YAML_INT,   /* fits int64 */
    KAPI_YAML_UINT,  /* above INT64_MAX */
    KAPI_YAML_FLOAT, /* includes .inf and .nan */
    KAPI_YAML_TIMESTAMP,
    KAPI_YAML_MERGE,
} kapi_yaml__kind;

typedef struct kapi_yaml__value {
    kapi_yaml__kind kind;
    bool b;
    int64_t i;
    uint64_t u;
    double f;
} kapi_yaml__value;

/* Resolves scalar text the way go-yaml v2 resolves an untagged plain scalar (YAML 1.1:
 * y/yes/on/true..., ~/null, 0x/0o/0b and leading-zero octal ints, underscores, .inf/.nan,
 * timestamps). allow_timestamp is false when the scalar carried an explicit tag other than
 * !!timestamp. */
kapi_yaml__kind kapi_yaml__resolve(const char *s, size_t n, bool allow_timestamp,
                                   kapi_yaml__value *out);
/* go-yaml's isBase60Float: "1:20" and the like, quoted on output for old parsers. */
bool kapi_yaml__base60(const char *s, size_t n);
/* go-yaml's map key order for two string keys (sorter.go): runs of digits compare as
 * numbers and letters sort after other characters. Returns <0, 0 or >0. */
int kapi_yaml__key_cmp(const char *a, size_t an, const char *b, size_t bn);

#endif
