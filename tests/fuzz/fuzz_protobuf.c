/*
 * fuzz_protobuf: protobuf bodies (codec/protobuf): the "k8s\0" envelope, and every message
 * of the registry's tables transcoded to JSON. The first byte picks the message (in the
 * tables' order, modulo their number); the rest is read both as an envelope and as that
 * message's bytes.
 */
#include "codec/protobuf.h"
#include "fuzz.h"

/* The names of the registry's messages, once. */
static const char **message_names(size_t *n)
{
    static const char **names;
    static size_t count;
    if (!names) {
        const json_t *msgs = kapi_registry_proto(fuzz_registry());
        const char *key;
        json_t *v;
        names = kapi_xcalloc(json_object_size(msgs) + 1, sizeof(*names));
        json_object_foreach((json_t *)msgs, key, v) names[count++] = key;
    }
    *n = count;
    return names;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n;
    const char **names = message_names(&n);
    if (size < 1 || size > FUZZ_MAX_INPUT || n == 0)
        return 0;
    const char *p = (const char *)data + 1;
    char *why = NULL;
    kapi_str av, kind, raw;
    if (!kapi_pb_envelope(p, size - 1, &av, &kind, &raw, &why)) {
        free(why);
        why = NULL;
    }
    json_t *v = kapi_pb_to_json(kapi_registry_proto(fuzz_registry()), names[data[0] % n], p,
                                size - 1, &why);
    if (v) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_json_encode(&b, v);
        kapi_buf_dispose(&b);
    }
    free(why);
    json_decref(v);
    return 0;
}
