/*
 * fuzz_protobuf: protobuf bodies (codec/protobuf): the "k8s\0" envelope, and every message
 * kapi reads or writes transcoded to JSON and back. The first byte picks the message (in
 * the order messages_of lists them, modulo their number); the rest is read both as an
 * envelope and as that message's bytes. What reads must write, and writing what that
 * writing reads back must give the same bytes again.
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
    for (size_t i = 0; i < m->nfields; i++) {
        const kapi_pb_field *f =
            m->fields[i].kind == KAPI_PB_MAP ? m->fields[i].value : &m->fields[i];
        if (f->message)
            add_message(f->message, v, n);
    }
}

/* Every message kapi reads or writes, once, each followed by the ones it reaches: each
 * stored type's own and its List's (in registry order), the meta kinds, then the
 * reviews' (which have no List; last, so that a seed's first byte still names the
 * message it named before they came). */
static const kapi_pb_message **messages_of(size_t *n)
{
    static const char *const metas[][2] = {{"v1", "Status"},
                                           {"meta.k8s.io/v1", "PartialObjectMetadataList"},
                                           {"autoscaling/v1", "Scale"},
                                           {"meta.k8s.io/v1", "DeleteOptions"}};
    static const kapi_pb_message **msgs;
    static size_t count;
    static bool listed;
    const kapi_registry *reg = fuzz_registry();
    for (size_t i = 0; !listed && i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (t->persisted) {
            add_message(t->protobuf, &msgs, &count);
            add_message(t->protobuf_list, &msgs, &count);
        }
    }
    for (size_t i = 0; !listed && i < KAPI_ARRAY_LEN(metas); i++)
        add_message(kapi_registry_pb_message(reg, metas[i][0], metas[i][1]), &msgs, &count);
    for (size_t i = 0; !listed && i < kapi_registry_count(reg); i++)
        if (!kapi_registry_at(reg, i)->persisted)
            add_message(kapi_registry_at(reg, i)->protobuf, &msgs, &count);
    listed = true;
    *n = count;
    return msgs;
}

static void broken(const char *fmt, const char *name, const char *why)
{
    fprintf(stderr, fmt, name, why ? why : "");
    fputc('\n', stderr);
    abort();
}

/* v written as m, read back and written again: the two writings are the same bytes. */
static void round_trip(const kapi_pb_message *m, const json_t *v)
{
    kapi_buf once, twice;
    char *why = NULL;
    kapi_buf_init(&once);
    kapi_buf_init(&twice);
    if (!kapi_pb_from_json(m, v, &once, &why))
        broken("%s: what was read does not write: %s", m->name, why);
    json_t *again = kapi_pb_to_json(m, once.ptr, once.len, &why);
    if (!again)
        broken("%s: what was written does not read: %s", m->name, why);
    if (!kapi_pb_from_json(m, again, &twice, &why))
        broken("%s: what was read back does not write: %s", m->name, why);
    if (once.len != twice.len || memcmp(once.ptr, twice.ptr, once.len) != 0)
        broken("%s: written twice, the bytes differ%s", m->name, NULL);
    json_decref(again);
    kapi_buf_dispose(&once);
    kapi_buf_dispose(&twice);
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
    const kapi_pb_message *m = msgs[data[0] % n];
    json_t *v = kapi_pb_to_json(m, p, size - 1, &why);
    if (v) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_json_encode(&b, v);
        kapi_buf_dispose(&b);
        round_trip(m, v);
    }
    free(why);
    json_decref(v);
    return 0;
}
