/*
 * codec/protobuf: Kubernetes' protobuf encoding read into JSON values.
 *
 * A protobuf body is the 4-byte magic "k8s\0" and a runtime.Unknown message (typeMeta,
 * raw, contentEncoding, contentType); raw holds the object's own message. The object's
 * message is transcoded field by field with message tables given as data:
 *
 *   {"io.k8s.api.core.v1.NamespaceSpec": {"1": {"json": "finalizers", "type": "string",
 *                                                "repeated": true}}, ...}
 *
 * Field types: string, bytes (base64 in JSON), bool, int32, int64, double, map (map of
 * string to string), Time and MicroTime (RFC 3339), fieldsV1 (raw JSON bytes), or the
 * name of another message. Scalars at their zero value are left out, as Go's JSON
 * encoding of a typed object leaves out omitempty fields.
 */
#ifndef KAPI_CODEC_PROTOBUF_H
#define KAPI_CODEC_PROTOBUF_H

#include <jansson.h>

#include "base/status.h"

/* The media type and the magic prefix of Kubernetes protobuf bodies. */
#define KAPI_PROTOBUF_MEDIA_TYPE "application/vnd.kubernetes.protobuf"

/* Reads the envelope: *api_version, *kind and *raw point into p. On malformed input
 * returns false and sets *err_out (heap). */
bool kapi_pb_envelope(const char *p, size_t n, kapi_str *api_version, kapi_str *kind, kapi_str *raw,
                      char **err_out);

/* Transcodes message `message` (a key of messages) in p[0..n) into a new JSON object;
 * NULL and *err_out (heap) when the bytes are malformed or the message is unknown. */
json_t *kapi_pb_to_json(const json_t *messages, const char *message, const char *p, size_t n,
                        char **err_out);

#endif
