/* etcd/kv: the unary RPCs (KV/Range, KV/Txn, KV/Compact, Maintenance/Status). */
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_int.h"

typedef bool (*decode_fn)(kapi_etcd_response *r, const char *p, size_t n);

void kapi_etcd_response_free(kapi_etcd_response *r)
{
    if (!r)
        return;
    kapi_arena_dispose(&r->arena);
    free(r->bytes);
    free(r);
}

/* A call whose answer decodes into a kapi_etcd_response. */
static kapi_etcd_rc unary(kapi_etcd_client *c, const char *path, kapi_buf *req, int64_t deadline,
                          decode_fn decode, kapi_etcd_response **out, kapi_error **err)
{
    char *body;
    size_t len;
    *out = NULL;
    kapi_etcd_rc rc = kapi_etcd__call(c, path, req, deadline, &body, &len, err);
    if (rc != KAPI_ETCD_OK)
        return rc;
    kapi_etcd_response *r = kapi_xcalloc(1, sizeof(*r));
    kapi_arena_init(&r->arena);
    r->bytes = body;
    if (!decode(r, body + KAPI_ETCD__PREFIX, len)) {
        kapi_etcd__error(err, KAPI_ETCD_PROTOCOL, kapi_etcd_client_endpoint(c),
                         "a malformed answer to %s", path);
        kapi_etcd_response_free(r);
        return KAPI_ETCD_PROTOCOL;
    }
    *out = r;
    return KAPI_ETCD_OK;
}

kapi_etcd_rc kapi_etcd_range(kapi_etcd_client *c, const kapi_etcd_op *range, int64_t deadline,
                             kapi_etcd_response **out, kapi_error **err)
{
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_etcd__range_req(&req, range);
    return unary(c, "/etcdserverpb.KV/Range", &req, deadline, kapi_etcd__range_resp, out, err);
}

kapi_etcd_rc kapi_etcd_txn(kapi_etcd_client *c, const kapi_etcd_txn_req *txn, int64_t deadline,
                           kapi_etcd_response **out, kapi_error **err)
{
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_etcd__txn_req(&req, txn);
    return unary(c, "/etcdserverpb.KV/Txn", &req, deadline, kapi_etcd__txn_resp, out, err);
}

/* A CompactionResponse: its header only. */
static bool compact_resp(kapi_etcd_response *r, const char *p, size_t n)
{
    return kapi_etcd__header_resp(&r->revision, p, n);
}

kapi_etcd_rc kapi_etcd_compact(kapi_etcd_client *c, int64_t revision, bool physical,
                               int64_t deadline, kapi_error **err)
{
    kapi_etcd_response *r;
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_etcd__compact_req(&req, revision, physical);
    kapi_etcd_rc rc = unary(c, "/etcdserverpb.KV/Compact", &req, deadline, compact_resp, &r, err);
    kapi_etcd_response_free(r);
    return rc;
}

kapi_etcd_rc kapi_etcd_status_get(kapi_etcd_client *c, int64_t deadline, kapi_etcd_status *out,
                                  kapi_error **err)
{
    char *body;
    size_t len;
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_etcd__status_req(&req);
    kapi_etcd_rc rc =
        kapi_etcd__call(c, "/etcdserverpb.Maintenance/Status", &req, deadline, &body, &len, err);
    if (rc != KAPI_ETCD_OK)
        return rc;
    if (!kapi_etcd__status_resp(out, body + KAPI_ETCD__PREFIX, len)) {
        kapi_etcd__error(err, KAPI_ETCD_PROTOCOL, kapi_etcd_client_endpoint(c),
                         "a malformed answer to Maintenance/Status");
        rc = KAPI_ETCD_PROTOCOL;
    }
    free(body);
    return rc;
}

void kapi_etcd_prefix_end(kapi_buf *out, kapi_str prefix)
{
    size_t n = prefix.len;
    while (n > 0 && (unsigned char)prefix.ptr[n - 1] == 0xff)
        n--;
    if (n == 0) {
        kapi_buf_putc(out, '\0');
        return;
    }
    kapi_buf_put(out, prefix.ptr, n - 1);
    kapi_buf_putc(out, (char)((unsigned char)prefix.ptr[n - 1] + 1));
}
