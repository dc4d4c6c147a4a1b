/*
 * codec/json: JSON in and out, the way kube-apiserver writes it.
 *
 * Parsing goes through jansson (object member order is kept). Encoding is kapi's own so
 * that bytes match Go's encoding/json: compact, HTML characters escaped as \u003c \u003e
 * \u0026, U+2028/U+2029 escaped, floats in Go's shortest form. The encoder can report
 * where the digits of the top-level metadata.resourceVersion go, which is how the store
 * stamps revisions into stored bytes (store.h).
 *
 * Values returned as json_t * are new references the caller owns (json_decref).
 */
#ifndef KAPI_CODEC_JSON_H
#define KAPI_CODEC_JSON_H

#include <jansson.h>

#include "base/status.h"

/* Parses one JSON document of any type. On a syntax error returns NULL and writes a
 * message worded like Go's encoding/json ("unexpected end of JSON input", "invalid
 * character 'x' looking for beginning of value") into err_out (heap, caller frees). */
json_t *kapi_json_parse(const char *p, size_t n, char **err_out);

/* Appends the compact Go-style encoding of v. */
void kapi_json_encode(kapi_buf *b, const json_t *v);
/* Appends an object, leaving the value of metadata.resourceVersion as an empty string
 * and storing in *rv_off the offset (in b) between its quotes; the object must have
 * metadata.resourceVersion (any string value). */
void kapi_json_encode_stamped(kapi_buf *b, const json_t *obj, size_t *rv_off);
/* Appends s (n bytes) as a JSON string literal, quotes included. */
void kapi_json_put_string(kapi_buf *b, const char *s, size_t n);

/* The member at a dotted path ("metadata.name") if it exists, else NULL; borrowed. */
json_t *kapi_json_path(const json_t *v, const char *path);
/* The string at a dotted path, or NULL when absent or not a string; borrowed. */
const char *kapi_json_path_str(const json_t *v, const char *path);
/* The object at key in obj, created (empty) if absent or not an object; borrowed. */
json_t *kapi_json_object_ensure(json_t *obj, const char *key);

#endif
