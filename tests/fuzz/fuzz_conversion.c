/*
 * fuzz_conversion: conversion webhook answers (registry/conversion.c), as a webhook that
 * is broken or hostile could send them. The first byte picks the HTTP status (200, or an
 * error status), whether the body is text, and whether a v1 or a v1beta1 review was sent;
 * the rest is the body, read as the answer to a review of two objects. Whatever it holds,
 * the objects must stay valid, and every error must render as a Status.
 */
#include "fuzz.h"
#include "registry/registry_int.h"

static const char *const objects[] = {
    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\","
    "\"namespace\":\"default\",\"uid\":\"u1\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"size\":\"5\"}}",
    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w2\","
    "\"namespace\":\"default\",\"uid\":\"u2\"}}",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const long statuses[] = {200, 200, 200, 200, 201, 400, 403, 500, 503, 302};
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    json_t *objs[2];
    bool done[2] = {false, false};
    size_t sent[2] = {0, 1};
    for (size_t i = 0; i < 2; i++)
        objs[i] = json_loads(objects[i], 0, NULL);
    kapi_conversion_call call = {.gv = "example.com/v2",
                                 .version = data[0] & 0x80 ? "v1beta1" : "v1",
                                 .uid = "4dc5ba39-c98c-4526-b604-c66370aa697f",
                                 .sent = sent,
                                 .nsent = 2};
    kapi_webhook_answer a = {.status = statuses[(data[0] & 0x7f) % KAPI_ARRAY_LEN(statuses)],
                             .text = data[0] & 0x40};
    kapi_buf_init(&a.body);
    kapi_buf_put(&a.body, data + 1, size - 1);
    kapi_error *err = kapi_registry__conversion_answer(&call, &a, objs, done);
    if (err) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_api__status_json(&b, err);
        json_t *v = kapi_json_parse(b.ptr, b.len, NULL);
        if (!v || done[0] || done[1])
            abort();
        json_decref(v);
        kapi_buf_dispose(&b);
        kapi_error_free(err);
    }
    for (size_t i = 0; i < 2; i++) {
        if (!json_is_object(objs[i]))
            abort();
        json_decref(objs[i]);
    }
    kapi_buf_dispose(&a.body);
    return 0;
}
