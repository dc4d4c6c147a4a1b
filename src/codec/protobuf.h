/*
 * codec/protobuf: Kubernetes' protobuf encoding read into JSON values.
 *
 * A protobuf body is the 4-byte magic "k8s\0" and a runtime.Unknown message (typeMeta,
 * raw, contentEncoding, contentType); raw holds the object's own message. The object's
 * message is transcoded field by field with a message table (kapi_pb_message), which
 * src/schema derives from the type's schema and its x-kapi-protobuf field numbers: the
 * codec knows the wire format, not the types.
 *
 * Scalars at their zero value are left out, as Go's JSON encoding of a typed object
 * leaves out omitempty fields; fields the table does not name are dropped, as Go's
 * decoder drops them.
 */
#ifndef KAPI_CODEC_PROTOBUF_H
#define KAPI_CODEC_PROTOBUF_H

#include <jansson.h>

#include "base/status.h"

/* The media type and the magic prefix of Kubernetes protobuf bodies. */
#define KAPI_PROTOBUF_MEDIA_TYPE "application/vnd.kubernetes.protobuf"

/* What a field's value is, and so which wire type it takes and how it reads as JSON. */
typedef enum kapi_pb_kind {
    KAPI_PB_STRING,
    KAPI_PB_BYTES, /* base64 in JSON */
    KAPI_PB_BOOL,
    KAPI_PB_INT32,
    KAPI_PB_INT64,
    KAPI_PB_DOUBLE,
    KAPI_PB_MAP,       /* map<string, string> */
    KAPI_PB_TIME,      /* metav1.Time: RFC 3339 in JSON */
    KAPI_PB_MICROTIME, /* metav1.MicroTime: RFC 3339 with microseconds */
    KAPI_PB_FIELDS_V1, /* metav1.FieldsV1: its raw JSON bytes */
    KAPI_PB_MESSAGE,   /* another message (kapi_pb_field.message) */
} kapi_pb_kind;

typedef struct kapi_pb_message kapi_pb_message;

/* One field of a message: its number, the JSON member it fills and its kind. */
typedef struct kapi_pb_field {
    uint32_t number;
    const char *json;
    kapi_pb_kind kind;
    bool repeated;                  /* a JSON array of the values */
    const kapi_pb_message *message; /* KAPI_PB_MESSAGE */
} kapi_pb_field;

/* A message: its name (its schema definition's) and its fields in ascending number
 * order. Tables are immutable once built; any thread may read them. */
struct kapi_pb_message {
    const char *name;
    const kapi_pb_field *fields;
    size_t nfields;
};

/* Reads the envelope: *api_version, *kind and *raw point into p. On malformed input
 * returns false and sets *err_out (heap). */
bool kapi_pb_envelope(const char *p, size_t n, kapi_str *api_version, kapi_str *kind, kapi_str *raw,
                      char **err_out);

/* Transcodes the bytes p[0..n) of message m into a new JSON object; NULL and *err_out
 * (heap) when the bytes are malformed or do not fit m's fields. */
json_t *kapi_pb_to_json(const kapi_pb_message *m, const char *p, size_t n, char **err_out);

#endif
