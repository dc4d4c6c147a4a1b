/*
 * codec/go: the pieces of Go's standard library whose output kube-apiserver's answers
 * show, in one place, so that every message kapi words as Go would is made by the same
 * code: unicode/utf8's decoding and unicode.IsPrint, strconv's float formatting, fmt's
 * printing of the values encoding/json decodes (%v of a field error's value, %#v),
 * encoding/json's Marshal of them and its name for a JSON value's kind.
 *
 * A JSON value stands for the Go value encoding/json decodes it into without a type:
 * integers int64, other numbers float64, objects map[string]interface {}, arrays
 * []interface {}, null nil. The printers append to a kapi_buf and keep no reference.
 * Go's %q is kapi_go_quote; fmt's %v and %s of a decoded patch are kapi_go_put_fmt.
 */
#ifndef KAPI_CODEC_GO_H
#define KAPI_CODEC_GO_H

#include <jansson.h>
#include <stdint.h>

#include "base/base.h"

/* The rune at s[0..n) and its width, as Go's utf8.DecodeRune (and a range over a string)
 * reads it: -1 with width 1 for a byte that does not start a valid sequence (overlong
 * forms and surrogates included; Go reads it as U+FFFD). n > 0. */
int32_t kapi_go_rune(const char *s, size_t n, size_t *width);
/* Appends the UTF-8 encoding of r, as Go's utf8.AppendRune: U+FFFD for a surrogate or
 * anything outside 0..U+10FFFF. */
void kapi_go_put_rune(kapi_buf *b, int32_t r);
/* True when s (n bytes) is valid UTF-8 in Go's sense (utf8.Valid). */
bool kapi_go_valid_utf8(const char *s, size_t n);

/* unicode.IsPrint: exact for ASCII and Latin-1 and for the format, separator and private
 * use characters one meets in text; other unassigned code points count as printable. */
bool kapi_go_is_print(int32_t r);

/* strconv.FormatFloat(x, 'g', -1, bits) with bits 32 or 64, which is also fmt's %v of a
 * float: "1e+06", "0.1", "+Inf". */
void kapi_go_format_float(char out[40], double x, int bits);

/* A field error's bad value as field.Error prints it: numbers and booleans with %v,
 * strings quoted (%q), null as "null" (quoted), objects and arrays with %#v. NULL is
 * null. */
void kapi_go_value(kapi_buf *b, const json_t *v);
/* The Go map type a decoded object stands for: encoding/json decodes an object into a
 * map[string]interface {}, go-yaml v2 a mapping into a map[interface {}]interface {}. */
typedef enum kapi_go_map { KAPI_GO_JSON_MAP, KAPI_GO_YAML_MAP } kapi_go_map;
/* %#v: map[string]interface {}{"a":1, "b":[]interface {}{"x"}} (keys sorted; the map
 * type as map says), interface {}(nil) inside a map or a slice and <nil> at the top,
 * scalars as kapi_go_value prints them. */
void kapi_go_sharp_v(kapi_buf *b, const json_t *v, kapi_go_map map);
/* encoding/json's Marshal: keys sorted, Go's float format, HTML characters escaped. */
void kapi_go_json(kapi_buf *b, const json_t *v);

/* fmt's %T of the value: map[string]interface {}, []interface {}, string, int64, float64,
 * bool, or <nil> for null (and NULL). */
const char *kapi_go_type_name(const json_t *v);

/* The kind encoding/json names in an UnmarshalTypeError ("cannot unmarshal <kind> into
 * Go value of type T"): object, array, string, number, bool or null (also for NULL). */
const char *kapi_go_json_kind(const json_t *v);

/* Go's time.ParseDuration of s (flags, kube-apiserver's timeout parameter, @every, CEL)
 * into *out nanoseconds: NULL, or Go's error text ("time: invalid duration \"x\"") as a
 * heap string. */
char *kapi_go_parse_duration(kapi_str s, int64_t *out);
/* Appends ns as Go's time.Duration.String writes it: "0s", "850ns", "1.5µs", "1.234ms",
 * "2.5s", "1h2m3s". */
void kapi_go_format_duration(kapi_buf *b, int64_t ns);
/* s quoted as Go's time package quotes it in its errors (heap): " and \ escaped, bytes
 * outside printable ASCII as \xNN. */
char *kapi_go_time_quote(kapi_str s);

/* A time as Go's time.Parse reads an RFC 3339 one: Unix seconds, nanoseconds, and the
 * offset from UTC it was written with (seconds east; 0 for "Z"). */
typedef struct kapi_go_time {
    int64_t secs;
    int32_t nsec;
    int32_t offset;
} kapi_go_time;
/* Go's time.Parse(time.RFC3339, s), or with micro metav1.MicroTime's layout
 * "2006-01-02T15:04:05.000000Z07:00", into *out: NULL, or Go's error text as a heap string
 * (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`,
 * `parsing time "x": month out of range`). Without micro a fraction of any length is
 * read, its first nine digits kept, as Go reads it. */
char *kapi_go_parse_time(const char *s, bool micro, kapi_go_time *out);
/* Appends t as Go's Time.Format(time.RFC3339Nano) writes it in the zone of t's offset:
 * "2009-02-13T23:31:30.5+01:00", "Z" for offset 0, no fraction when nsec is 0. */
void kapi_go_format_time(kapi_buf *b, const kapi_go_time *t);

/* Appends s (n bytes) quoted as Go's strconv.Quote does: the %q of kube-apiserver's
 * messages (`unknown field "spec.x"`). Bytes that are not UTF-8 come out as \xNN. */
void kapi_go_quote(kapi_buf *b, const char *s, size_t n);

/* Appends v as Go's fmt prints the value encoding/json decodes it into, as kube-apiserver's
 * messages print a decoded patch: with verb 'v', map[a:1 b:[x y]] (keys sorted), <nil>,
 * strings bare, floats in %v's shortest form; with verb 's', the same except that a number
 * or a boolean is %!s(int64=1), %!s(float64=1.5) or %!s(bool=true) and a top-level null is
 * %!s(<nil>). Integers print as int64 (kube-apiserver decodes patches keeping integers). */
void kapi_go_put_fmt(kapi_buf *b, const json_t *v, char verb);

#endif
