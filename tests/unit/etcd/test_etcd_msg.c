/* The etcd client's messages, without etcd: requests as bytes (field numbers of etcd
 * 3.4's rpc.proto, oneof members written even at zero), responses decoded from bytes,
 * malformed ones refused, and prefix range ends. */
#include <string.h>

#include "etcd/etcd_int.h"
#include "test.h"

#define CHECK_BYTES(buf, lit)                                                                      \
    do {                                                                                           \
        if ((buf).len != sizeof(lit) - 1 || memcmp((buf).ptr, lit, sizeof(lit) - 1) != 0)          \
            test_fail(__FILE__, __LINE__, "bytes differ (%zu, want %zu)", (buf).len,               \
                      sizeof(lit) - 1);                                                            \
    } while (0)

static void check_end(const char *prefix, size_t n, const char *want, size_t wn)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_etcd_prefix_end(&b, (kapi_str){prefix, n});
    CHECK(b.len == wn && memcmp(b.ptr, want, wn) == 0);
    kapi_buf_dispose(&b);
}

TEST(etcd_msg_prefix_end)
{
    check_end("/registry/pods/", 15, "/registry/pods0", 15);
    check_end("a\xff", 2, "b", 1);
    check_end("\xff\xff", 2, "\0", 1);
    check_end("", 0, "\0", 1);
}

TEST(etcd_msg_requests)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_etcd_op range = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("k"), .limit = 2};
    kapi_etcd__range_req(&b, &range);
    CHECK_BYTES(b, "\0\0\0\0\x05\x0a\x01k\x18\x02");

    /* create_revision == 0: the oneof member is written although it is zero */
    kapi_buf_clear(&b);
    kapi_etcd_compare absent = {.key = KAPI_STR("k"), .target = KAPI_ETCD_CREATE};
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = KAPI_STR("k"), .value = KAPI_STR("v")};
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("k")};
    kapi_etcd_txn_req txn = {.compare = &absent,
                             .ncompare = 1,
                             .success = &put,
                             .nsuccess = 1,
                             .failure = &get,
                             .nfailure = 1};
    kapi_etcd__txn_req(&b, &txn);
    CHECK_BYTES(b, "\0\0\0\0\x1a"
                   "\x0a\x07\x10\x01\x1a\x01k\x28\x00"  /* compare {target CREATE, key, 5: 0} */
                   "\x12\x08\x12\x06\x0a\x01k\x12\x01v" /* success {request_put {k, v}} */
                   "\x1a\x05\x0a\x03\x0a\x01k");        /* failure {request_range {k}} */

    kapi_buf_clear(&b);
    kapi_etcd__watch_progress_req(&b);
    CHECK_BYTES(b, "\0\0\0\0\x02\x1a\x00");

    kapi_buf_clear(&b);
    kapi_etcd_watch_options w = {.key = KAPI_STR("a"),
                                 .range_end = KAPI_STR("b"),
                                 .start_revision = 300,
                                 .prev_kv = true,
                                 .progress_notify = true};
    kapi_etcd__watch_create_req(&b, &w);
    CHECK_BYTES(b, "\0\0\0\0\x0f\x0a\x0d\x0a\x01\x61\x12\x01\x62\x18\xac\x02\x20\x01\x30\x01");
    kapi_buf_dispose(&b);
}

/* RangeResponse {header {revision 7}, kvs {key "a", create 5, mod 7, version 2, value
 * "1"}, more true, count 3}. */
static const char RANGE[] = "\x0a\x02\x18\x07"
                            "\x12\x0c\x0a\x01\x61\x10\x05\x18\x07\x20\x02\x2a\x01\x31"
                            "\x18\x01\x20\x03";

TEST(etcd_msg_range_response)
{
    kapi_etcd_response r = {0};
    kapi_arena_init(&r.arena);
    CHECK(kapi_etcd__range_resp(&r, RANGE, sizeof(RANGE) - 1));
    CHECK_INT_EQ(r.revision, 7);
    CHECK_INT_EQ(r.nops, 1);
    CHECK_INT_EQ(r.ops[0].nkvs, 1);
    CHECK(kapi_str_eqc(r.ops[0].kvs[0].key, "a"));
    CHECK(kapi_str_eqc(r.ops[0].kvs[0].value, "1"));
    CHECK_INT_EQ(r.ops[0].kvs[0].create_revision, 5);
    CHECK_INT_EQ(r.ops[0].kvs[0].mod_revision, 7);
    CHECK_INT_EQ(r.ops[0].kvs[0].version, 2);
    CHECK(r.ops[0].more);
    CHECK_INT_EQ(r.ops[0].count, 3);
    kapi_arena_dispose(&r.arena);

    /* every truncation is refused, none read past its end */
    for (size_t n = 1; n < sizeof(RANGE) - 1; n++) {
        char *cut = kapi_xmalloc(n);
        memcpy(cut, RANGE, n);
        kapi_etcd_response t = {0};
        kapi_arena_init(&t.arena);
        bool ok = kapi_etcd__range_resp(&t, cut, n);
        /* a cut between top-level fields is a shorter valid message */
        CHECK(!ok || n == 4 || n == 18 || n == 20);
        kapi_arena_dispose(&t.arena);
        free(cut);
    }
}

TEST(etcd_msg_malformed)
{
    kapi_etcd_response r = {0};
    kapi_etcd_watch_response w = {0};
    kapi_etcd__watch_meta meta;
    kapi_arena_init(&r.arena);
    kapi_arena_init(&w.arena);
    /* kvs as a varint */
    CHECK(!kapi_etcd__range_resp(&r, "\x10\x01", 2));
    /* a length past the end */
    CHECK(!kapi_etcd__range_resp(&r, "\x12\x05\x0a", 3));
    /* field number 0 */
    CHECK(!kapi_etcd__range_resp(&r, "\x00\x01", 2));
    /* a nested Txn answer, never asked for */
    CHECK(!kapi_etcd__txn_resp(&r, "\x1a\x02\x22\x00", 4));
    /* a ResponseOp with two answers */
    CHECK(!kapi_etcd__txn_resp(&r, "\x1a\x04\x0a\x00\x12\x00", 6));
    /* an event of an unknown type */
    CHECK(!kapi_etcd__watch_resp(&w, &meta, "\x5a\x02\x08\x05", 4));
    /* unknown fields are skipped */
    CHECK(kapi_etcd__watch_resp(&w, &meta, "\x78\x01\x18\x01\x20\x01\x28\x09\x32\x01x", 11));
    CHECK(w.created && meta.canceled);
    CHECK_INT_EQ(meta.compact_revision, 9);
    CHECK(kapi_str_eqc(meta.cancel_reason, "x"));
    kapi_arena_dispose(&r.arena);
    kapi_arena_dispose(&w.arena);
}
