/*
 * fuzz_etcd: the etcd client's decoders of what etcd answers (src/etcd/msg.c): a
 * RangeResponse, TxnResponse, WatchResponse, StatusResponse or a bare ResponseHeader
 * message, picked by the first byte; the rest is the message. Malformed bytes must be
 * refused, never read past; what decodes must point only inside the input.
 */
#include "etcd/etcd_int.h"
#include "fuzz.h"

typedef struct span {
    const char *p;
    size_t n;
} span;

static void inside(span in, kapi_str s)
{
    if (s.len && (s.ptr < in.p || s.ptr + s.len > in.p + in.n)) {
        fprintf(stderr, "a decoded slice points outside the input\n");
        abort();
    }
}

/* Every slice of a kv is inside the input; its bytes are read (for ASan). */
static unsigned touch_kv(span in, const kapi_etcd_kv *kv)
{
    unsigned sum = 0;
    inside(in, kv->key);
    inside(in, kv->value);
    for (size_t i = 0; i < kv->key.len; i++)
        sum += (unsigned char)kv->key.ptr[i];
    for (size_t i = 0; i < kv->value.len; i++)
        sum += (unsigned char)kv->value.ptr[i];
    return sum;
}

static unsigned touch_response(span in, const kapi_etcd_response *r)
{
    unsigned sum = 0;
    for (size_t i = 0; i < r->nops; i++)
        for (size_t j = 0; j < r->ops[i].nkvs; j++)
            sum += touch_kv(in, &r->ops[i].kvs[j]);
    return sum;
}

static void kv_response(span in, bool txn)
{
    kapi_etcd_response r = {0};
    kapi_arena_init(&r.arena);
    bool ok = txn ? kapi_etcd__txn_resp(&r, in.p, in.n) : kapi_etcd__range_resp(&r, in.p, in.n);
    if (ok)
        (void)touch_response(in, &r);
    kapi_arena_dispose(&r.arena);
}

static void watch_response(span in)
{
    kapi_etcd_watch_response r = {0};
    kapi_etcd__watch_meta meta;
    kapi_arena_init(&r.arena);
    if (kapi_etcd__watch_resp(&r, &meta, in.p, in.n)) {
        inside(in, meta.cancel_reason);
        for (size_t i = 0; i < r.nevents; i++) {
            (void)touch_kv(in, &r.events[i].kv);
            (void)touch_kv(in, &r.events[i].prev_kv);
        }
    }
    kapi_arena_dispose(&r.arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    /* a copy of exactly the message's size, so that ASan sees any read past it */
    char *copy = kapi_xmalloc(size - 1 ? size - 1 : 1);
    memcpy(copy, data + 1, size - 1);
    span in = {copy, size - 1};
    kapi_etcd_status st;
    int64_t rev;
    switch (data[0] % 5) {
    case 0:
        kv_response(in, false);
        break;
    case 1:
        kv_response(in, true);
        break;
    case 2:
        watch_response(in);
        break;
    case 3:
        (void)kapi_etcd__status_resp(&st, in.p, in.n);
        break;
    case 4:
        (void)kapi_etcd__header_resp(&rev, in.p, in.n);
        break;
    }
    free(copy);
    return 0;
}
