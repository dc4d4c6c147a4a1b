/* The etcd client's unary calls against a real single-member etcd: puts, gets and ranges
 * (limit, revision, keys_only, count_only), the Txns the backend is made of (create if
 * absent, compare-and-swap on mod_revision, delete with prev_kv), compaction and its
 * errors, Maintenance/Status, and the size bounds. */
#include <string.h>

#include "etcd_fixture.h"
#include "test.h"

#define MS 1000000LL

static kapi_etcd_op range_of(const char *key)
{
    return (kapi_etcd_op){.type = KAPI_ETCD_RANGE, .key = kapi_str_c(key)};
}

static void check_kv(const kapi_etcd_kv *kv, const char *key, const char *value)
{
    CHECK(kapi_str_eqc(kv->key, key));
    CHECK(kapi_str_eqc(kv->value, value));
}

TEST(etcd_kv_put_get_range)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_etcd_response *r;
    kapi_error *err = NULL;

    int64_t r1 = etcd_put(c, "/p/a", "1");
    int64_t r2 = etcd_put(c, "/p/b", "2");
    etcd_put(c, "/p/c", "3");
    etcd_put(c, "/q/x", "other prefix");
    int64_t r5 = etcd_put(c, "/p/a", "1 again");
    CHECK_INT_EQ(r2, r1 + 1);
    CHECK_INT_EQ(r5, r1 + 4);

    /* one key: its value, revisions and version */
    kapi_etcd_op get = range_of("/p/a");
    CHECK_INT_EQ(kapi_etcd_range(c, &get, 0, &r, &err), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->revision, r5);
    CHECK_INT_EQ(r->nops, 1);
    CHECK_INT_EQ(r->ops[0].nkvs, 1);
    check_kv(&r->ops[0].kvs[0], "/p/a", "1 again");
    CHECK_INT_EQ(r->ops[0].kvs[0].create_revision, r1);
    CHECK_INT_EQ(r->ops[0].kvs[0].mod_revision, r5);
    CHECK_INT_EQ(r->ops[0].kvs[0].version, 2);
    kapi_etcd_response_free(r);

    /* a prefix with a limit: the first two in key order, more, and the count of all */
    kapi_buf end;
    kapi_buf_init(&end);
    kapi_etcd_prefix_end(&end, KAPI_STR("/p/"));
    CHECK_STR_EQ(end.ptr, "/p0");
    kapi_etcd_op list = {.type = KAPI_ETCD_RANGE,
                         .key = KAPI_STR("/p/"),
                         .range_end = {end.ptr, end.len},
                         .limit = 2};
    CHECK_INT_EQ(kapi_etcd_range(c, &list, 0, &r, &err), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].nkvs, 2);
    check_kv(&r->ops[0].kvs[0], "/p/a", "1 again");
    check_kv(&r->ops[0].kvs[1], "/p/b", "2");
    CHECK(r->ops[0].more);
    CHECK_INT_EQ(r->ops[0].count, 3);
    kapi_etcd_response_free(r);

    /* at an older revision: the state then */
    list.limit = 0;
    list.revision = r2;
    CHECK_INT_EQ(kapi_etcd_range(c, &list, 0, &r, &err), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].nkvs, 2);
    check_kv(&r->ops[0].kvs[0], "/p/a", "1");
    check_kv(&r->ops[0].kvs[1], "/p/b", "2");
    CHECK(!r->ops[0].more);
    kapi_etcd_response_free(r);

    /* keys only; count only */
    list.revision = 0;
    list.keys_only = true;
    CHECK_INT_EQ(kapi_etcd_range(c, &list, 0, &r, &err), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].nkvs, 3);
    check_kv(&r->ops[0].kvs[2], "/p/c", "");
    kapi_etcd_response_free(r);
    list.keys_only = false;
    list.count_only = true;
    CHECK_INT_EQ(kapi_etcd_range(c, &list, 0, &r, &err), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].nkvs, 0);
    CHECK_INT_EQ(r->ops[0].count, 3);
    CHECK_INT_EQ(r->revision, r5);
    kapi_etcd_response_free(r);

    /* every key: range_end "\0"; an absent key: no kvs */
    kapi_etcd_op all = {.type = KAPI_ETCD_RANGE, .key = {"\0", 1}, .range_end = {"\0", 1}};
    CHECK_INT_EQ(kapi_etcd_range(c, &all, 0, &r, &err), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].nkvs, 4);
    kapi_etcd_response_free(r);
    CHECK(etcd_get(c, "/absent", 0) == NULL);

    /* raw bytes: NUL and 0xff in keys and values */
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = {"/bin\0\xff", 6}, .value = {"\0v\xff", 3}};
    kapi_etcd_txn_req txn = {.success = &put, .nsuccess = 1};
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, &err), KAPI_ETCD_OK);
    kapi_etcd_response_free(r);
    kapi_etcd_op bin = {.type = KAPI_ETCD_RANGE, .key = {"/bin\0\xff", 6}};
    CHECK_INT_EQ(kapi_etcd_range(c, &bin, 0, &r, &err), KAPI_ETCD_OK);
    CHECK_INT_EQ(r->ops[0].nkvs, 1);
    CHECK(r->ops[0].kvs[0].value.len == 3 && memcmp(r->ops[0].kvs[0].value.ptr, "\0v\xff", 3) == 0);
    kapi_etcd_response_free(r);

    kapi_buf_dispose(&end);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* Create if absent: compare create_revision == 0; on failure, read the current value. */
static kapi_etcd_rc create(kapi_etcd_client *c, const char *key, const char *value,
                           kapi_etcd_response **r)
{
    kapi_etcd_compare absent = {.key = kapi_str_c(key), .target = KAPI_ETCD_CREATE};
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = kapi_str_c(key), .value = kapi_str_c(value)};
    kapi_etcd_op get = range_of(key);
    kapi_etcd_txn_req txn = {.compare = &absent,
                             .ncompare = 1,
                             .success = &put,
                             .nsuccess = 1,
                             .failure = &get,
                             .nfailure = 1};
    return kapi_etcd_txn(c, &txn, 0, r, NULL);
}

TEST(etcd_txn_create_if_absent)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_etcd_response *r;

    CHECK_INT_EQ(create(c, "/k", "first", &r), KAPI_ETCD_OK);
    CHECK(r->succeeded);
    int64_t rev = r->revision;
    CHECK_INT_EQ(r->nops, 1);
    CHECK_INT_EQ(r->ops[0].type, KAPI_ETCD_PUT);
    CHECK_INT_EQ(r->ops[0].nkvs, 0); /* no prev_kv asked */
    kapi_etcd_response_free(r);

    /* the second create fails, and its failure branch reads what is there */
    CHECK_INT_EQ(create(c, "/k", "second", &r), KAPI_ETCD_OK);
    CHECK(!r->succeeded);
    CHECK_INT_EQ(r->revision, rev); /* nothing written */
    CHECK_INT_EQ(r->nops, 1);
    CHECK_INT_EQ(r->ops[0].type, KAPI_ETCD_RANGE);
    CHECK_INT_EQ(r->ops[0].nkvs, 1);
    check_kv(&r->ops[0].kvs[0], "/k", "first");
    CHECK_INT_EQ(r->ops[0].kvs[0].mod_revision, rev);
    kapi_etcd_response_free(r);

    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* Update = compare mod_revision == expected; delete with prev_kv hands back the last
 * state. */
TEST(etcd_txn_compare_and_swap)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_etcd_response *r;
    int64_t rev = etcd_put(c, "/k", "v1");

    kapi_etcd_compare at = {.key = KAPI_STR("/k"), .target = KAPI_ETCD_MOD, .number = rev};
    kapi_etcd_op put = {
        .type = KAPI_ETCD_PUT, .key = KAPI_STR("/k"), .value = KAPI_STR("v2"), .prev_kv = true};
    kapi_etcd_op get = range_of("/k");
    kapi_etcd_txn_req txn = {.compare = &at,
                             .ncompare = 1,
                             .success = &put,
                             .nsuccess = 1,
                             .failure = &get,
                             .nfailure = 1};
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, NULL), KAPI_ETCD_OK);
    CHECK(r->succeeded);
    CHECK_INT_EQ(r->revision, rev + 1);
    CHECK_INT_EQ(r->ops[0].nkvs, 1); /* prev_kv */
    check_kv(&r->ops[0].kvs[0], "/k", "v1");
    kapi_etcd_response_free(r);

    /* the same compare again: the revision moved on, so it fails with the current state */
    put.value = KAPI_STR("lost update");
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, NULL), KAPI_ETCD_OK);
    CHECK(!r->succeeded);
    check_kv(&r->ops[0].kvs[0], "/k", "v2");
    CHECK_INT_EQ(r->ops[0].kvs[0].mod_revision, rev + 1);
    kapi_etcd_response_free(r);

    /* delete at the right revision, with prev_kv */
    at.number = rev + 1;
    kapi_etcd_op del = {.type = KAPI_ETCD_DELETE, .key = KAPI_STR("/k"), .prev_kv = true};
    txn.success = &del;
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, NULL), KAPI_ETCD_OK);
    CHECK(r->succeeded);
    CHECK_INT_EQ(r->revision, rev + 2);
    CHECK_INT_EQ(r->ops[0].type, KAPI_ETCD_DELETE);
    CHECK_INT_EQ(r->ops[0].count, 1);
    CHECK_INT_EQ(r->ops[0].nkvs, 1);
    check_kv(&r->ops[0].kvs[0], "/k", "v2");
    kapi_etcd_response_free(r);
    CHECK(etcd_get(c, "/k", 0) == NULL);

    /* on an absent key, mod_revision is 0: the compare fails, the range finds nothing */
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, NULL), KAPI_ETCD_OK);
    CHECK(!r->succeeded);
    CHECK_INT_EQ(r->ops[0].nkvs, 0);
    kapi_etcd_response_free(r);

    /* two writes to one key in one Txn: etcd refuses the call */
    kapi_etcd_op twice[] = {put, put};
    kapi_etcd_txn_req dup = {.success = twice, .nsuccess = 2};
    kapi_error *err = NULL;
    CHECK_INT_EQ(kapi_etcd_txn(c, &dup, 0, &r, &err), KAPI_ETCD_REFUSED);
    CHECK(r == NULL);
    CHECK(strstr(err->message, "duplicate key") != NULL);
    CHECK_INT_EQ(err->status, KAPI_STATUS_INTERNAL_ERROR);
    kapi_error_free(err);

    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

TEST(etcd_compact)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    kapi_error *err = NULL;
    kapi_etcd_response *r;
    int64_t r1 = etcd_put(c, "/k", "1");
    int64_t r2 = etcd_put(c, "/k", "2");
    int64_t r3 = etcd_put(c, "/k", "3");

    CHECK_INT_EQ(kapi_etcd_compact(c, r2, true, 0, &err), KAPI_ETCD_OK);
    /* r2 is still readable, r1 is gone: COMPACTED, a 410 */
    char *v = etcd_get(c, "/k", r2);
    CHECK_STR_EQ(v, "2");
    free(v);
    kapi_etcd_op old = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("/k"), .revision = r1};
    CHECK_INT_EQ(kapi_etcd_range(c, &old, 0, &r, &err), KAPI_ETCD_COMPACTED);
    CHECK(r == NULL);
    CHECK_INT_EQ(err->status, KAPI_STATUS_GONE);
    CHECK(strstr(err->message, "required revision has been compacted") != NULL);
    CHECK(strstr(err->message, f.m[0].url) != NULL);
    kapi_error_free(err);

    /* compacting again at or below: COMPACTED; past the current revision: FUTURE_REV */
    CHECK_INT_EQ(kapi_etcd_compact(c, r2, false, 0, NULL), KAPI_ETCD_COMPACTED);
    CHECK_INT_EQ(kapi_etcd_compact(c, r3 + 10, false, 0, NULL), KAPI_ETCD_FUTURE_REV);
    old.revision = r3 + 10;
    CHECK_INT_EQ(kapi_etcd_range(c, &old, 0, &r, NULL), KAPI_ETCD_FUTURE_REV);

    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

TEST(etcd_status)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_client *c = etcd_fixture_client(&f, f.servers);
    int64_t rev = etcd_put(c, "/k", "v");
    kapi_etcd_status st;
    CHECK_INT_EQ(kapi_etcd_status_get(c, 0, &st, NULL), KAPI_ETCD_OK);
    CHECK(strncmp(st.version, "3.", 2) == 0);
    CHECK_INT_EQ(st.revision, rev);
    CHECK(st.member_id != 0);
    CHECK(st.leader == st.member_id); /* a single member leads itself */
    CHECK(st.raft_term >= 1);
    CHECK(st.db_size > 0);
    CHECK(!st.is_learner);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* A request over max_send_bytes is refused before it goes; an answer over
 * max_recv_bytes ends its call, and the client goes on. */
TEST(etcd_size_bounds)
{
    etcd_fixture f = {0};
    etcd_fixture_start(&f);
    kapi_etcd_options o = {.servers = f.servers, .max_send_bytes = 4096, .max_recv_bytes = 4096};
    kapi_etcd_client *c;
    CHECK(kapi_etcd_client_new(&c, &o) == NULL);
    kapi_etcd_response *r;
    kapi_error *err = NULL;
    char *big = kapi_xcalloc(1, 5001);
    memset(big, 'x', 5000);

    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = KAPI_STR("/big"), .value = kapi_str_c(big)};
    kapi_etcd_txn_req txn = {.success = &put, .nsuccess = 1};
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, &err), KAPI_ETCD_TOO_LARGE);
    CHECK_INT_EQ(err->status, KAPI_STATUS_REQUEST_ENTITY_TOO_LARGE);
    kapi_error_free(err);
    err = NULL;

    put.value.len = 3000;
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, NULL), KAPI_ETCD_OK);
    kapi_etcd_response_free(r);
    put.key = KAPI_STR("/big2");
    CHECK_INT_EQ(kapi_etcd_txn(c, &txn, 0, &r, NULL), KAPI_ETCD_OK);
    kapi_etcd_response_free(r);
    kapi_etcd_op all = {
        .type = KAPI_ETCD_RANGE, .key = KAPI_STR("/big"), .range_end = KAPI_STR("/bih")};
    CHECK_INT_EQ(kapi_etcd_range(c, &all, 0, &r, &err), KAPI_ETCD_TOO_LARGE);
    CHECK(strstr(err->message, "answer message over 4096 bytes") != NULL);
    kapi_error_free(err);
    /* the connection is fine: a small read goes through */
    char *v = etcd_get(c, "/big2", 0);
    CHECK(v && strlen(v) == 3000);
    free(v);

    free(big);
    kapi_etcd_client_free(c);
    etcd_fixture_stop(&f);
}

/* Malformed endpoint lists and TLS files are refused by kapi_etcd_client_new. */
TEST(etcd_client_options)
{
    static const char *const bad[] = {
        "", "127.0.0.1:2379", "ftp://x:1", "http://:2379", "http://host:port", "http://a:1,,"};
    kapi_etcd_client *c;
    kapi_error *err;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(bad); i++) {
        kapi_etcd_options o = {.servers = bad[i]};
        err = kapi_etcd_client_new(&c, &o);
        if (!err)
            test_fail(__FILE__, __LINE__, "\"%s\" was taken", bad[i]);
        CHECK_INT_EQ(err->status, KAPI_STATUS_BAD_REQUEST);
        kapi_error_free(err);
    }
    kapi_etcd_options tls = {.servers = "https://127.0.0.1:1", .ca_file = "/nonexistent/ca.crt"};
    err = kapi_etcd_client_new(&c, &tls);
    CHECK(err && strstr(err->message, "CA file") != NULL);
    kapi_error_free(err);
    tls.ca_file = NULL;
    tls.cert_file = "/nonexistent/c.crt";
    err = kapi_etcd_client_new(&c, &tls);
    CHECK(err && strstr(err->message, "needs its key") != NULL);
    kapi_error_free(err);

    kapi_etcd_options ok = {.servers = " http://127.0.0.1:1/ , https://[::1] "};
    CHECK(kapi_etcd_client_new(&c, &ok) == NULL);
    CHECK_STR_EQ(kapi_etcd_client_endpoint(c), "http://127.0.0.1:1");
    kapi_etcd_client_free(c);
}
