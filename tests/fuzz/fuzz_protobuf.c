/*
 * fuzz_protobuf: protobuf bodies (codec/protobuf): the "k8s\0" envelope, and every message
 * of the registry's types transcoded to JSON. The first byte picks the message (in the
 * order messages_of lists them, modulo their number); the rest is read both as an
 * envelope and as that message's bytes.
 */
#include "codec/protobuf.h"
#include "fuzz.h"

/* Adds m and the messages its fields reach, depth first in field order, once each. */
static void add_message(const kapi_pb_message *m, const kapi_pb_message ***v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i] == m)
            return;
    *v = kapi_xrealloc(*v, (*n + 1) * sizeof(**v));
    (*v)[(*n)++] = m;
    for (size_t i = 0; i < m->nfields; i++)
        if (m->fields[i].kind == KAPI_PB_MESSAGE)
            add_message(m->fields[i].message, v, n);
}

/* Every message of the registry's types, once: each type's own message (in registry
 * order), then the ones it reaches. */
static const kapi_pb_message **messages_of(size_t *n)
{
    static const kapi_pb_message **msgs;
    static size_t count;
    static bool listed;
    const kapi_registry *reg = fuzz_registry();
    for (size_t i = 0; !listed && i < kapi_registry_count(reg); i++)
        if (kapi_registry_at(reg, i)->protobuf)
            add_message(kapi_registry_at(reg, i)->protobuf, &msgs, &count);
    listed = true;
    *n = count;
    return msgs;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n;
    const kapi_pb_message **msgs = messages_of(&n);
    if (size < 1 || size > FUZZ_MAX_INPUT || n == 0)
        return 0;
    const char *p = (const char *)data + 1;
    char *why = NULL;
    kapi_str av, kind, raw;
    if (!kapi_pb_envelope(p, size - 1, &av, &kind, &raw, &why)) {
        free(why);
        why = NULL;
    }
    json_t *v = kapi_pb_to_json(msgs[data[0] % n], p, size - 1, &why);
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
