/*
 * codec/protobuf: Kubernetes' protobuf encoding read into JSON values, and the wire format
 * (varints, tags, length-delimited fields) for messages written by hand.
 *
 * A protobuf body is the 4-byte magic "k8s\0" and a runtime.Unknown message (typeMeta,
 * raw, contentEncoding, contentType); raw holds the object's own message. The object's
 * message is transcoded field by field, both ways, with a message table (kapi_pb_message), which
 * src/schema derives from the type's schema and its x-kapi-protobuf field numbers: the
 * codec knows the wire format, not the types.
 *
 * Reading, a value field at its zero value is left out when it is omitempty, as Go's
 * JSON encoding of a typed object leaves it out, and a pointer field keeps its zero;
 * fields the table does not name are dropped, as Go's decoder drops them.
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
    KAPI_PB_MAP,               /* map<string, value>: repeated entries {key = 1, value = 2} */
    KAPI_PB_LIST,              /* a Go named slice type (ExtraValue): a message of its own
                                  holding the values of a JSON array as field 1, one each */
    KAPI_PB_TIME,              /* metav1.Time: RFC 3339 in JSON */
    KAPI_PB_MICROTIME,         /* metav1.MicroTime: RFC 3339 with microseconds */
    KAPI_PB_FIELDS_V1,         /* metav1.FieldsV1: its raw JSON bytes */
    KAPI_PB_INT_OR_STRING,     /* intstr.IntOrString {type = 1, intVal = 2, strVal = 3} */
    KAPI_PB_QUANTITY,          /* resource.Quantity {string = 1}: the string in JSON */
    KAPI_PB_RAW,               /* runtime.RawExtension, apiextensions JSON {raw = 1}: any JSON */
    KAPI_PB_SCHEMA_OR_ARRAY,   /* JSONSchemaPropsOrArray {schema = 1, jSONSchemas = 2} */
    KAPI_PB_SCHEMA_OR_BOOL,    /* JSONSchemaPropsOrBool {allows = 1, schema = 2} */
    KAPI_PB_SCHEMA_OR_STRINGS, /* JSONSchemaPropsOrStringArray {schema = 1, property = 2} */
    KAPI_PB_MESSAGE,           /* another message (kapi_pb_field.message) */
} kapi_pb_kind;

typedef struct kapi_pb_message kapi_pb_message;

/* One field of a message: its number, the JSON member it fills and its kind.
 *
 * How Go writes it, from the type model: a pointer field (pointer) is written only when
 * set, whatever its value, and a set zero is kept in JSON; a value field is always written,
 * its zero too, and reads back as absent in JSON when it is omitempty. Lists and maps
 * write their elements only. */
typedef struct kapi_pb_field kapi_pb_field;
struct kapi_pb_field {
    uint32_t number;
    const char *json;
    kapi_pb_kind kind;
    bool repeated;  /* a JSON array of the values */
    bool pointer;   /* written only when present in JSON */
    bool omitempty; /* a value field JSON leaves out at its zero */
    bool embedded;  /* a message whose members are the enclosing object's own (a Go struct
                       embedded inline: json is NULL) */
    const kapi_pb_message *message; /* KAPI_PB_MESSAGE, and the JSONSchemaProps of the
                                       KAPI_PB_SCHEMA_OR_* kinds */
    const kapi_pb_field *value;     /* KAPI_PB_MAP: its values (number 2); KAPI_PB_LIST:
                                       its elements (number 1) */
};

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

/* Writes the envelope of an object of apiVersion and kind whose message bytes are
 * raw[0..n): the magic, then runtime.Unknown {typeMeta, raw, contentEncoding "",
 * contentType ""}, as kube-apiserver writes it. */
void kapi_pb_envelope_write(kapi_buf *out, const char *api_version, const char *kind,
                            const char *raw, size_t n);

/* Appends obj as message m to out, field by field in number order, as Go's generated
 * marshallers write the typed object that Go's JSON decoder would make of obj: a value
 * field absent from obj is written at its zero, a pointer field only when present, map
 * entries in key order. False and *err_out (heap) when obj does not fit m (a member of
 * the wrong JSON type, a time that is not RFC 3339). */
bool kapi_pb_from_json(const kapi_pb_message *m, const json_t *obj, kapi_buf *out, char **err_out);

/* Appends one frame of a protobuf watch: its length (4 bytes, big-endian), then a
 * WatchEvent {type, object: RawExtension {raw: the enveloped object obj[0..n)}}. */
void kapi_pb_watch_frame(kapi_buf *out, const char *type, const char *obj, size_t n);

/* Appends field num holding obj as message m (its tag, length and bytes), as a list's
 * items are written; false and *err_out as kapi_pb_from_json. */
bool kapi_pb_put_message(kapi_buf *out, uint32_t num, const kapi_pb_message *m, const json_t *obj,
                         char **err_out);

/* ---- the wire format, for messages written by hand (src/etcd) ---- */

/* A reader over bytes it does not own: p advances towards end. */
typedef struct kapi_pb_reader {
    const unsigned char *p, *end;
} kapi_pb_reader;

/* One field as read: its number, wire type and value (a varint; fixed32 and fixed64 as
 * integers; for a length-delimited field its length in u and its bytes, pointing into the
 * reader's input). */
typedef struct kapi_pb_wire {
    uint32_t num, wire;
    uint64_t u;
    const unsigned char *bytes;
    size_t len;
} kapi_pb_wire;

/* Reads a varint; false when the input ends inside it or it is longer than ten bytes. */
bool kapi_pb_varint(kapi_pb_reader *r, uint64_t *out);
/* Reads the next field; false on malformed input (a bad tag, an unknown wire type, a
 * length past the end). */
bool kapi_pb_next_field(kapi_pb_reader *r, kapi_pb_wire *f);
/* Append a varint; a tag (field number and wire type); a length-delimited field. */
void kapi_pb_put_varint(kapi_buf *b, uint64_t v);
void kapi_pb_put_tag(kapi_buf *b, uint32_t num, uint32_t wire);
void kapi_pb_put_bytes(kapi_buf *b, uint32_t num, const void *p, size_t n);
/* Makes field num of the bytes appended from start on (a nested message written in
 * place): moves them to make room for the tag and length before them. */
void kapi_pb_close_delimited(kapi_buf *b, uint32_t num, size_t start);

#endif
