/* etcd/msg: etcd 3.4's messages (rpc.proto, kv.proto) encoded and decoded by hand. */
#include <string.h>

#include "codec/protobuf.h"
#include "etcd/etcd_int.h"

/* Wire types. */
enum { VARINT = 0, LEN = 2 };

/* ---- writing ---- */

/* Starts a gRPC message: room for its prefix; returns where the prefix goes. */
static size_t frame_open(kapi_buf *out)
{
    size_t at = out->len;
    kapi_buf_put(out, "\0\0\0\0\0", KAPI_ETCD__PREFIX);
    return at;
}

/* Fills the prefix of the message started at `at`: uncompressed, its length. */
static void frame_close(kapi_buf *out, size_t at)
{
    size_t n = out->len - at - KAPI_ETCD__PREFIX;
    unsigned char *p = (unsigned char *)out->ptr + at;
    p[0] = 0;
    p[1] = (unsigned char)(n >> 24);
    p[2] = (unsigned char)(n >> 16);
    p[3] = (unsigned char)(n >> 8);
    p[4] = (unsigned char)n;
}

/* proto3 leaves zero scalars and empty bytes out; a oneof member is written whatever its
 * value (put_int_always). */
static void put_int_always(kapi_buf *b, uint32_t num, int64_t v)
{
    kapi_pb_put_tag(b, num, VARINT);
    kapi_pb_put_varint(b, (uint64_t)v);
}

static void put_int(kapi_buf *b, uint32_t num, int64_t v)
{
    if (v != 0)
        put_int_always(b, num, v);
}

static void put_bool(kapi_buf *b, uint32_t num, bool v)
{
    put_int(b, num, v ? 1 : 0);
}

static void put_str(kapi_buf *b, uint32_t num, kapi_str s)
{
    if (s.len)
        kapi_pb_put_bytes(b, num, s.ptr, s.len);
}

/* RangeRequest {key 1, range_end 2, limit 3, revision 4, serializable 7, keys_only 8,
 * count_only 9}. */
static void range_fields(kapi_buf *b, const kapi_etcd_op *op)
{
    put_str(b, 1, op->key);
    put_str(b, 2, op->range_end);
    put_int(b, 3, op->limit);
    put_int(b, 4, op->revision);
    put_bool(b, 7, op->serializable);
    put_bool(b, 8, op->keys_only);
    put_bool(b, 9, op->count_only);
}

/* RequestOp {request_range 1 | request_put 2 | request_delete_range 3}: PutRequest {key 1,
 * value 2, prev_kv 4}, DeleteRangeRequest {key 1, range_end 2, prev_kv 3}. */
static void request_op(kapi_buf *b, uint32_t num, const kapi_etcd_op *op)
{
    size_t op_at = b->len, at = b->len;
    switch (op->type) {
    case KAPI_ETCD_RANGE:
        range_fields(b, op);
        break;
    case KAPI_ETCD_PUT:
        put_str(b, 1, op->key);
        put_str(b, 2, op->value);
        put_bool(b, 4, op->prev_kv);
        break;
    case KAPI_ETCD_DELETE:
        put_str(b, 1, op->key);
        put_str(b, 2, op->range_end);
        put_bool(b, 3, op->prev_kv);
        break;
    }
    kapi_pb_close_delimited(b, (uint32_t)op->type, at);
    kapi_pb_close_delimited(b, num, op_at);
}

/* Compare {result 1, target 2, key 3, version 4 | create_revision 5 | mod_revision 6 |
 * value 7}: the target's oneof member is always written. */
static void compare(kapi_buf *b, const kapi_etcd_compare *c)
{
    size_t at = b->len;
    put_int(b, 1, c->result);
    put_int(b, 2, c->target);
    put_str(b, 3, c->key);
    if (c->target == KAPI_ETCD_VALUE)
        kapi_pb_put_bytes(b, 7, c->value.ptr ? c->value.ptr : "", c->value.len);
    else
        put_int_always(b, 4 + (uint32_t)c->target, c->number);
    kapi_pb_close_delimited(b, 1, at);
}

void kapi_etcd__range_req(kapi_buf *out, const kapi_etcd_op *range)
{
    size_t at = frame_open(out);
    range_fields(out, range);
    frame_close(out, at);
}

/* TxnRequest {compare 1, success 2, failure 3}. */
void kapi_etcd__txn_req(kapi_buf *out, const kapi_etcd_txn_req *txn)
{
    size_t at = frame_open(out);
    for (size_t i = 0; i < txn->ncompare; i++)
        compare(out, &txn->compare[i]);
    for (size_t i = 0; i < txn->nsuccess; i++)
        request_op(out, 2, &txn->success[i]);
    for (size_t i = 0; i < txn->nfailure; i++)
        request_op(out, 3, &txn->failure[i]);
    frame_close(out, at);
}

/* CompactionRequest {revision 1, physical 2}. */
void kapi_etcd__compact_req(kapi_buf *out, int64_t revision, bool physical)
{
    size_t at = frame_open(out);
    put_int(out, 1, revision);
    put_bool(out, 2, physical);
    frame_close(out, at);
}

/* StatusRequest {}. */
void kapi_etcd__status_req(kapi_buf *out)
{
    frame_close(out, frame_open(out));
}

/* WatchRequest {create_request 1: WatchCreateRequest {key 1, range_end 2, start_revision
 * 3, progress_notify 4, prev_kv 6}}. */
void kapi_etcd__watch_create_req(kapi_buf *out, const kapi_etcd_watch_options *o)
{
    size_t at = frame_open(out), create = out->len;
    put_str(out, 1, o->key);
    put_str(out, 2, o->range_end);
    put_int(out, 3, o->start_revision);
    put_bool(out, 4, o->progress_notify);
    put_bool(out, 6, o->prev_kv);
    kapi_pb_close_delimited(out, 1, create);
    frame_close(out, at);
}

/* WatchRequest {progress_request 3: WatchProgressRequest {}}. */
void kapi_etcd__watch_progress_req(kapi_buf *out)
{
    size_t at = frame_open(out);
    kapi_pb_put_bytes(out, 3, "", 0);
    frame_close(out, at);
}

/* ---- reading ---- */

static kapi_pb_reader reader_of(const void *p, size_t n)
{
    const unsigned char *u = p;
    return (kapi_pb_reader){u, u + n};
}

/* The next field; *ok goes false on malformed input, and the walk stops. */
static bool next(kapi_pb_reader *r, kapi_pb_wire *f, bool *ok)
{
    if (r->p == r->end)
        return false;
    if (!kapi_pb_next_field(r, f))
        *ok = false;
    return *ok;
}

static kapi_str bytes_of(const kapi_pb_wire *f)
{
    return (kapi_str){(const char *)f->bytes, f->len};
}

/* A known field must come with its own wire type. */
static bool int_field(const kapi_pb_wire *f, int64_t *v)
{
    *v = (int64_t)f->u;
    return f->wire == VARINT;
}

static bool bool_field(const kapi_pb_wire *f, bool *v)
{
    *v = f->u != 0;
    return f->wire == VARINT;
}

static bool str_field(const kapi_pb_wire *f, kapi_str *v)
{
    *v = bytes_of(f);
    return f->wire == LEN;
}

/* ResponseHeader {cluster_id 1, member_id 2, revision 3, raft_term 4}: its revision. */
static bool header(const kapi_pb_wire *f, int64_t *revision)
{
    kapi_pb_reader r = reader_of(f->bytes, f->len);
    kapi_pb_wire g;
    bool ok = f->wire == LEN;
    while (ok && next(&r, &g, &ok))
        if (g.num == 3)
            ok = int_field(&g, revision);
    return ok;
}

/* mvccpb.KeyValue {key 1, create_revision 2, mod_revision 3, version 4, value 5, lease 6}. */
static bool key_value(const kapi_pb_wire *f, kapi_etcd_kv *kv)
{
    kapi_pb_reader r = reader_of(f->bytes, f->len);
    kapi_pb_wire g;
    bool ok = f->wire == LEN;
    memset(kv, 0, sizeof(*kv));
    while (ok && next(&r, &g, &ok)) {
        switch (g.num) {
        case 1:
            ok = str_field(&g, &kv->key);
            break;
        case 2:
            ok = int_field(&g, &kv->create_revision);
            break;
        case 3:
            ok = int_field(&g, &kv->mod_revision);
            break;
        case 4:
            ok = int_field(&g, &kv->version);
            break;
        case 5:
            ok = str_field(&g, &kv->value);
            break;
        case 6:
            ok = int_field(&g, &kv->lease);
            break;
        }
    }
    return ok;
}

/* How many times field num occurs in p[0..n) (so that arrays are allocated once); false
 * on malformed input. */
static bool count(const unsigned char *p, size_t n, uint32_t num, size_t *out)
{
    kapi_pb_reader r = reader_of(p, n);
    kapi_pb_wire f;
    bool ok = true;
    *out = 0;
    while (next(&r, &f, &ok))
        *out += f.num == num;
    return ok;
}

/* The repeated KeyValue field num of a message into op->kvs. */
static bool kvs_of(kapi_arena *a, const kapi_pb_wire *m, uint32_t num, kapi_etcd_op_result *op)
{
    kapi_pb_reader r = reader_of(m->bytes, m->len);
    kapi_pb_wire f;
    bool ok = true;
    size_t n;
    if (!count(m->bytes, m->len, num, &n))
        return false;
    op->kvs = n ? kapi_arena_alloc(a, n * sizeof(*op->kvs)) : NULL;
    while (next(&r, &f, &ok))
        if (f.num == num)
            ok = key_value(&f, &op->kvs[op->nkvs++]);
    return ok;
}

/* RangeResponse {header 1, kvs 2, more 3, count 4}; PutResponse {header 1, prev_kv 2};
 * DeleteRangeResponse {header 1, deleted 2, prev_kvs 3}: their scalars (the kvs are read
 * by kvs_of). */
static bool op_scalars(const kapi_pb_wire *m, kapi_etcd_op_result *op, int64_t *revision)
{
    kapi_pb_reader r = reader_of(m->bytes, m->len);
    kapi_pb_wire f;
    bool ok = true;
    while (ok && next(&r, &f, &ok)) {
        if (f.num == 1)
            ok = header(&f, revision);
        else if (op->type == KAPI_ETCD_RANGE && f.num == 3)
            ok = bool_field(&f, &op->more);
        else if (op->type == KAPI_ETCD_RANGE && f.num == 4)
            ok = int_field(&f, &op->count);
        else if (op->type == KAPI_ETCD_DELETE && f.num == 2)
            ok = int_field(&f, &op->count);
    }
    return ok;
}

/* The kvs field of each response type, by kapi_etcd_op_type. */
static const uint32_t kvs_field[] = {
    [KAPI_ETCD_RANGE] = 2, [KAPI_ETCD_PUT] = 2, [KAPI_ETCD_DELETE] = 3};

/* A response of type t (a whole message m) into op. */
static bool op_result(kapi_arena *a, const kapi_pb_wire *m, kapi_etcd_op_type t,
                      kapi_etcd_op_result *op, int64_t *revision)
{
    op->type = t;
    return m->wire == LEN && op_scalars(m, op, revision) && kvs_of(a, m, kvs_field[t], op);
}

bool kapi_etcd__range_resp(kapi_etcd_response *r, const char *p, size_t n)
{
    kapi_pb_wire m = {.wire = LEN, .bytes = (const unsigned char *)p, .len = n};
    r->nops = 1;
    r->ops = kapi_arena_alloc(&r->arena, sizeof(*r->ops));
    return op_result(&r->arena, &m, KAPI_ETCD_RANGE, r->ops, &r->revision);
}

/* ResponseOp {response_range 1 | response_put 2 | response_delete_range 3 |
 * response_txn 4}: a nested Txn is never asked for, so it is malformed here. */
static bool response_op(kapi_arena *a, const kapi_pb_wire *f, kapi_etcd_op_result *op)
{
    kapi_pb_reader r = reader_of(f->bytes, f->len);
    kapi_pb_wire g;
    bool ok = f->wire == LEN, seen = false;
    int64_t ignored = 0;
    while (ok && next(&r, &g, &ok)) {
        if (g.num < KAPI_ETCD_RANGE || g.num > KAPI_ETCD_DELETE || seen)
            return false;
        seen = true;
        memset(op, 0, sizeof(*op));
        ok = op_result(a, &g, (kapi_etcd_op_type)g.num, op, &ignored);
    }
    return ok && seen;
}

/* TxnResponse {header 1, succeeded 2, responses 3}. */
bool kapi_etcd__txn_resp(kapi_etcd_response *r, const char *p, size_t n)
{
    kapi_pb_reader rd = reader_of(p, n);
    kapi_pb_wire f;
    bool ok = true;
    size_t nops;
    if (!count(rd.p, n, 3, &nops))
        return false;
    r->ops = nops ? kapi_arena_alloc(&r->arena, nops * sizeof(*r->ops)) : NULL;
    while (ok && next(&rd, &f, &ok)) {
        if (f.num == 1)
            ok = header(&f, &r->revision);
        else if (f.num == 2)
            ok = bool_field(&f, &r->succeeded);
        else if (f.num == 3)
            ok = response_op(&r->arena, &f, &r->ops[r->nops++]);
    }
    return ok;
}

bool kapi_etcd__header_resp(int64_t *revision, const char *p, size_t n)
{
    kapi_pb_reader r = reader_of(p, n);
    kapi_pb_wire f;
    bool ok = true;
    while (ok && next(&r, &f, &ok))
        if (f.num == 1)
            ok = header(&f, revision);
    return ok;
}

/* StatusResponse {header 1, version 2, dbSize 3, leader 4, raftIndex 5, raftTerm 6,
 * isLearner 10}; the header's member_id (2) too. */
static bool status_field(kapi_etcd_status *s, const kapi_pb_wire *f)
{
    int64_t v = 0;
    kapi_str str;
    bool ok = f->num == 2 ? str_field(f, &str) : int_field(f, &v);
    if (!ok)
        return false;
    switch (f->num) {
    case 2:
        snprintf(s->version, sizeof(s->version), "%.*s", KAPI_STR_FMT(str));
        break;
    case 3:
        s->db_size = v;
        break;
    case 4:
        s->leader = (uint64_t)v;
        break;
    case 5:
        s->raft_index = (uint64_t)v;
        break;
    case 6:
        s->raft_term = (uint64_t)v;
        break;
    case 10:
        s->is_learner = v != 0;
        break;
    }
    return true;
}

static bool member_id(const kapi_pb_wire *f, uint64_t *id)
{
    kapi_pb_reader r = reader_of(f->bytes, f->len);
    kapi_pb_wire g;
    bool ok = true;
    while (ok && next(&r, &g, &ok))
        if (g.num == 2)
            ok = g.wire == VARINT && (*id = g.u, true);
    return ok;
}

bool kapi_etcd__status_resp(kapi_etcd_status *s, const char *p, size_t n)
{
    kapi_pb_reader r = reader_of(p, n);
    kapi_pb_wire f;
    bool ok = true;
    memset(s, 0, sizeof(*s));
    while (ok && next(&r, &f, &ok)) {
        if (f.num == 1)
            ok = header(&f, &s->revision) && member_id(&f, &s->member_id);
        else if ((f.num >= 2 && f.num <= 6) || f.num == 10)
            ok = status_field(s, &f);
    }
    return ok;
}

/* mvccpb.Event {type 1, kv 2, prev_kv 3}. */
static bool event(const kapi_pb_wire *f, kapi_etcd_event *ev)
{
    kapi_pb_reader r = reader_of(f->bytes, f->len);
    kapi_pb_wire g;
    bool ok = f->wire == LEN;
    int64_t type = 0;
    while (ok && next(&r, &g, &ok)) {
        if (g.num == 1)
            ok = int_field(&g, &type) &&
                 (type == KAPI_ETCD_EVENT_PUT || type == KAPI_ETCD_EVENT_DELETE);
        else if (g.num == 2)
            ok = key_value(&g, &ev->kv);
        else if (g.num == 3)
            ok = key_value(&g, &ev->prev_kv) && (ev->has_prev = true);
    }
    ev->type = (kapi_etcd_event_type)type;
    return ok;
}

/* WatchResponse {header 1, watch_id 2, created 3, canceled 4, compact_revision 5,
 * cancel_reason 6, fragment 7, events 11}: the members besides events. */
static bool watch_field(kapi_etcd_watch_response *r, kapi_etcd__watch_meta *m,
                        const kapi_pb_wire *f)
{
    switch (f->num) {
    case 1:
        return header(f, &r->revision);
    case 2:
        return int_field(f, &m->watch_id);
    case 3:
        return bool_field(f, &r->created);
    case 4:
        return bool_field(f, &m->canceled);
    case 5:
        return int_field(f, &m->compact_revision);
    case 6:
        return str_field(f, &m->cancel_reason);
    }
    return true;
}

bool kapi_etcd__watch_resp(kapi_etcd_watch_response *r, kapi_etcd__watch_meta *meta, const char *p,
                           size_t n)
{
    kapi_pb_reader rd = reader_of(p, n);
    kapi_pb_wire f;
    bool ok = true;
    size_t nev;
    memset(meta, 0, sizeof(*meta));
    if (!count(rd.p, n, 11, &nev))
        return false;
    r->events = nev ? kapi_arena_alloc(&r->arena, nev * sizeof(*r->events)) : NULL;
    while (ok && next(&rd, &f, &ok)) {
        if (f.num == 11)
            ok = event(&f, &r->events[r->nevents++]);
        else
            ok = watch_field(r, meta, &f);
    }
    return ok;
}
