/* Unit tests for src/store: writes and their return codes, revision stamping, lists (latest
 * and at a past revision), recovery, the observer, group commit, crash consistency. */
#include "store/store_int.h"
#include "test.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static char *db_path(void)
{
    return kapi_xprintf("%s/store.db", test_tmpdir());
}

static kapi_store *open_store_with(kapi_store_observer obs, void *ctx,
                                   const kapi_store_backend_ops *ops)
{
    char *path = db_path();
    kapi_store_options opts = {.path = path, .observer = obs, .observer_ctx = ctx};
    kapi_store *st = NULL;
    kapi_error *err = kapi_store__open_with(&st, &opts, ops);
    if (err)
        test_fail(__FILE__, __LINE__, "open: %s", err->message);
    free(path);
    return st;
}

static kapi_store *open_store(void)
{
    char *path = db_path();
    kapi_store_options opts = {.path = path};
    kapi_store *st = NULL;
    kapi_error *err = kapi_store_open(&st, &opts);
    if (err)
        test_fail(__FILE__, __LINE__, "open: %s", err->message);
    free(path);
    return st;
}

/* A write of {"v":"<v>","rv":""} with rv_off inside the rv quotes. */
typedef struct doc {
    char buf[256];
    kapi_store_write w;
} doc;

static kapi_store_write *mkwrite(doc *d, kapi_store_op op, const char *key, const char *v,
                                 int64_t expect)
{
    snprintf(d->buf, sizeof(d->buf), "{\"v\":\"%s\",\"rv\":\"\"}", v ? v : "");
    d->w = (kapi_store_write){
        .op = op,
        .key = kapi_str_c(key),
        .expect_rev = expect,
        .value = kapi_str_c(d->buf),
        .rv_off = (size_t)(strstr(d->buf, "\"rv\":\"") - d->buf) + 6,
    };
    return &d->w;
}

/* Commits one write; returns the rc and the result's revision in *rev (0 if none). */
static kapi_store_rc commit(kapi_store *st, kapi_store_op op, const char *key, const char *v,
                            int64_t expect, int64_t *rev)
{
    doc d;
    kapi_store_rc rc = kapi_store_commit(st, mkwrite(&d, op, key, v, expect));
    if (rev)
        *rev = d.w.result ? d.w.result->rev : 0;
    kapi_obj_unref(d.w.result);
    kapi_obj_unref(d.w.current);
    return rc;
}

static char *expect_doc(const char *v, int64_t rev)
{
    return kapi_xprintf("{\"v\":\"%s\",\"rv\":\"%" PRId64 "\"}", v, rev);
}

/* Checks the bytes at key; v NULL: absent. */
static void check_get(kapi_store *st, const char *key, const char *v, int64_t rev)
{
    kapi_obj *o = NULL;
    kapi_store_rc rc = kapi_store_get(st, kapi_str_c(key), &o);
    if (!v) {
        CHECK_INT_EQ(rc, KAPI_STORE_NOT_FOUND);
        CHECK(o == NULL);
        return;
    }
    CHECK_INT_EQ(rc, KAPI_STORE_OK);
    char *want = expect_doc(v, rev);
    CHECK_STR_EQ(o->data, want);
    CHECK_INT_EQ(o->len, strlen(want));
    CHECK_INT_EQ(o->rev, rev);
    CHECK_STR_EQ(o->key, key);
    free(want);
    kapi_obj_unref(o);
}

/* Lists and renders the result as "key=v@rev,key=v@rev|remaining". */
static kapi_store_rc list_str(kapi_store *st, const char *prefix, int64_t rev,
                              const char *start_after, size_t limit, char **out)
{
    kapi_store_list_opts opts = {
        .prefix = kapi_str_c(prefix),
        .rev = rev,
        .start_after = kapi_str_c(start_after),
        .limit = limit,
    };
    kapi_store_list_result l;
    kapi_store_rc rc = kapi_store_list(st, &opts, &l);
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < l.n; i++) {
        char v[64] = "";
        sscanf(l.items[i]->data, "{\"v\":\"%63[^\"]", v);
        kapi_buf_printf(&b, "%s%s=%s@%" PRId64, i ? "," : "", l.items[i]->key, v, l.items[i]->rev);
    }
    kapi_buf_printf(&b, "|%zu", l.remaining);
    if (rc == KAPI_STORE_OK && rev)
        CHECK_INT_EQ(l.rev, rev);
    kapi_store_list_dispose(&l);
    *out = kapi_buf_detach(&b, NULL);
    kapi_buf_dispose(&b);
    return rc;
}

#define CHECK_LIST(st, prefix, rev, after, limit, want)                                            \
    do {                                                                                           \
        char *got_;                                                                                \
        CHECK_INT_EQ(list_str(st, prefix, rev, after, limit, &got_), KAPI_STORE_OK);               \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

/* ---- writes ---- */

TEST(store_create_get)
{
    kapi_store *st = open_store();
    CHECK_INT_EQ(kapi_store_revision(st), 0);
    doc d;
    CHECK_INT_EQ(kapi_store_commit(st, mkwrite(&d, KAPI_STORE_CREATE, "/g/r/ns/a", "x", 0)),
                 KAPI_STORE_OK);
    CHECK(d.w.result != NULL && d.w.current == NULL);
    CHECK_STR_EQ(d.w.result->data, "{\"v\":\"x\",\"rv\":\"1\"}");
    CHECK_INT_EQ(d.w.result->rev, 1);
    CHECK_INT_EQ(d.w.result->create_rev, 1);
    CHECK_INT_EQ(d.w.result->rv_len, 1);
    CHECK(memcmp(d.w.result->data + d.w.result->rv_off, "1\"", 2) == 0);
    kapi_obj_unref(d.w.result);
    CHECK_INT_EQ(kapi_store_revision(st), 1);
    check_get(st, "/g/r/ns/a", "x", 1);
    check_get(st, "/g/r/ns/b", NULL, 0);

    CHECK_INT_EQ(kapi_store_commit(st, mkwrite(&d, KAPI_STORE_CREATE, "/g/r/ns/a", "y", 0)),
                 KAPI_STORE_EXISTS);
    CHECK(d.w.result == NULL && d.w.current == NULL);
    CHECK_INT_EQ(kapi_store_revision(st), 1); /* failed writes take no revision */
    check_get(st, "/g/r/ns/a", "x", 1);
    kapi_store_free(st);
}

TEST(store_stamp_empty_value)
{
    kapi_store *st = open_store();
    kapi_store_write w = {.op = KAPI_STORE_CREATE, .key = KAPI_STR("/k")}; /* NULL value */
    CHECK_INT_EQ(kapi_store_commit(st, &w), KAPI_STORE_OK);
    CHECK_STR_EQ(w.result->data, "1");
    kapi_obj_unref(w.result);
    w = (kapi_store_write){.op = KAPI_STORE_CREATE,
                           .key = KAPI_STR("/j"),
                           .value = KAPI_STR("{\"rv\":\"\"}"),
                           .rv_off = 7};
    CHECK_INT_EQ(kapi_store_commit(st, &w), KAPI_STORE_OK);
    CHECK_STR_EQ(w.result->data, "{\"rv\":\"2\"}");
    kapi_obj_unref(w.result);
    kapi_store_free(st);
}

TEST(store_update_cas)
{
    kapi_store *st = open_store();
    int64_t rev = 0;
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/k/a", "x", 0, &rev), KAPI_STORE_NOT_FOUND);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/k/a", "x", 5, &rev), KAPI_STORE_NOT_FOUND);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/k/a", "x", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(rev, 1);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/k/b", "x", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/k/a", "y", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(rev, 3);

    doc d;
    CHECK_INT_EQ(kapi_store_commit(st, mkwrite(&d, KAPI_STORE_UPDATE, "/k/a", "z", 1)),
                 KAPI_STORE_CONFLICT);
    CHECK(d.w.result == NULL);
    CHECK(d.w.current != NULL);
    CHECK_INT_EQ(d.w.current->rev, 3);
    CHECK_STR_EQ(d.w.current->data, "{\"v\":\"y\",\"rv\":\"3\"}");
    kapi_obj_unref(d.w.current);

    CHECK_INT_EQ(kapi_store_commit(st, mkwrite(&d, KAPI_STORE_UPDATE, "/k/a", "z", 3)),
                 KAPI_STORE_OK);
    CHECK_INT_EQ(d.w.result->rev, 4);
    CHECK_INT_EQ(d.w.result->create_rev, 1);
    CHECK_STR_EQ(d.w.result->data, "{\"v\":\"z\",\"rv\":\"4\"}");
    CHECK(d.w.current == NULL);
    kapi_obj_unref(d.w.result);
    check_get(st, "/k/a", "z", 4);
    CHECK_INT_EQ(kapi_store_revision(st), 4);
    kapi_store_free(st);
}

TEST(store_delete)
{
    kapi_store *st = open_store();
    int64_t rev;
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/k/a", NULL, 0, &rev), KAPI_STORE_NOT_FOUND);
    for (int i = 0; i < 9; i++) /* revisions 1..9: the deletion's revision has two digits */
        CHECK_INT_EQ(commit(st, i ? KAPI_STORE_UPDATE : KAPI_STORE_CREATE, "/k/a", "x", 0, &rev),
                     KAPI_STORE_OK);
    CHECK_INT_EQ(rev, 9);

    doc d;
    CHECK_INT_EQ(kapi_store_commit(st, mkwrite(&d, KAPI_STORE_DELETE, "/k/a", NULL, 8)),
                 KAPI_STORE_CONFLICT);
    CHECK_INT_EQ(d.w.current->rev, 9);
    kapi_obj_unref(d.w.current);

    CHECK_INT_EQ(kapi_store_commit(st, mkwrite(&d, KAPI_STORE_DELETE, "/k/a", NULL, 9)),
                 KAPI_STORE_OK);
    kapi_obj *r = d.w.result;
    CHECK_STR_EQ(r->data, "{\"v\":\"x\",\"rv\":\"10\"}");
    CHECK_INT_EQ(r->len, strlen(r->data));
    CHECK_INT_EQ(r->rev, 10);
    CHECK_INT_EQ(r->create_rev, 1);
    CHECK_INT_EQ(r->rv_len, 2);
    CHECK(memcmp(r->data + r->rv_off, "10", 2) == 0);
    kapi_obj_unref(r);
    check_get(st, "/k/a", NULL, 0);
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/k/a", NULL, 0, &rev), KAPI_STORE_NOT_FOUND);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/k/a", "y", 0, &rev), KAPI_STORE_NOT_FOUND);

    CHECK_INT_EQ(kapi_store_commit(st, mkwrite(&d, KAPI_STORE_CREATE, "/k/a", "n", 0)),
                 KAPI_STORE_OK);
    CHECK_INT_EQ(d.w.result->create_rev, 11);
    kapi_obj_unref(d.w.result);
    kapi_store_free(st);
}

/* ---- lists ---- */

TEST(store_list_latest)
{
    kapi_store *st = open_store();
    const char *keys[] = {"/g/r/b/2", "/g/r/a/1", "/g/r/b/1",  "/g/r/a/2",
                          "/g/r/a/3", "/g/q/a/1", "/g/rr/a/1", "/h/x"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(keys); i++)
        CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, keys[i], "v", 0, NULL), KAPI_STORE_OK);

    CHECK_LIST(st, "/g/r/", 0, "", 0,
               "/g/r/a/1=v@2,/g/r/a/2=v@4,/g/r/a/3=v@5,/g/r/b/1=v@3,/g/r/b/2=v@1|0");
    CHECK_LIST(st, "/g/r/", 0, "", 2, "/g/r/a/1=v@2,/g/r/a/2=v@4|3");
    CHECK_LIST(st, "/g/r/", 0, "/g/r/a/2", 2, "/g/r/a/3=v@5,/g/r/b/1=v@3|1");
    CHECK_LIST(st, "/g/r/", 0, "/g/r/b/1", 2, "/g/r/b/2=v@1|0");
    CHECK_LIST(st, "/g/r/", 0, "/g/r/b/2", 2, "|0");
    CHECK_LIST(st, "/g/r/", 0, "/g/r/a/1x", 0,
               "/g/r/a/2=v@4,/g/r/a/3=v@5,/g/r/b/1=v@3,/g/r/b/2=v@1|0");
    CHECK_LIST(st, "/g/r/", 0, "/a", 1, "/g/r/a/1=v@2|4"); /* start_after before the prefix */
    CHECK_LIST(st, "/g/r/", 0, "/z", 1, "|0");             /* start_after past the prefix */
    CHECK_LIST(st, "/g/r/a/", 0, "", 1, "/g/r/a/1=v@2|2");
    CHECK_LIST(st, "/g/r/a/3", 0, "", 0, "/g/r/a/3=v@5|0"); /* a prefix that is a whole key */
    CHECK_LIST(st, "/nope/", 0, "", 0, "|0");
    CHECK_LIST(st, "", 0, "", 3, "/g/q/a/1=v@6,/g/r/a/1=v@2,/g/r/a/2=v@4|5");
    CHECK_LIST(st, "", 0, "/g/rr/a/1", 0, "/h/x=v@8|0");

    kapi_store_list_opts opts = {.prefix = KAPI_STR("/g/")};
    kapi_store_list_result l;
    CHECK_INT_EQ(kapi_store_list(st, &opts, &l), KAPI_STORE_OK);
    CHECK_INT_EQ(l.rev, 8);
    CHECK_INT_EQ(l.n, 7);
    kapi_store_list_dispose(&l);
    CHECK(l.items == NULL && l.n == 0);
    kapi_store_free(st);
}

/* Pages through a big list and checks order, count and remaining against the keys made. */
TEST(store_list_paging_many)
{
    kapi_store__index ix;
    kapi_store__index_init(&ix);
    enum { N = 20000 };
    char key[64];
    srand(7);
    for (int i = 0; i < N; i++) { /* random order, some replaced, every third removed */
        int k = rand() % N;
        snprintf(key, sizeof(key), "/g/r/ns%d/obj%05d", k % 3, k);
        kapi_store__index_put(
            &ix, kapi_store__obj_new(kapi_str_c(key), i + 1, i + 1, KAPI_STR(""), KAPI_STR("")));
    }
    for (int k = 0; k < N; k += 3) {
        snprintf(key, sizeof(key), "/g/r/ns%d/obj%05d", k % 3, k);
        kapi_store__index_remove(&ix, kapi_str_c(key));
    }
    /* the expected count under ns1: present keys k with k % 3 == 1 */
    size_t total = kapi_store__index_count(&ix), want = 0;
    for (int k = 1; k < N; k += 3) {
        snprintf(key, sizeof(key), "/g/r/ns1/obj%05d", k);
        want += kapi_store__index_get(&ix, kapi_str_c(key)) != NULL;
    }
    CHECK(want > 1000);
    size_t seen = 0;
    char last[64] = "";
    for (;;) {
        kapi_store_list_result l;
        kapi_store__index_list(&ix, KAPI_STR("/g/r/ns1/"), kapi_str_c(last), 333, &l);
        for (size_t i = 0; i < l.n; i++) {
            CHECK(strncmp(l.items[i]->key, "/g/r/ns1/", 9) == 0);
            CHECK(strcmp(l.items[i]->key, last) > 0);
            snprintf(last, sizeof(last), "%s", l.items[i]->key);
        }
        seen += l.n;
        CHECK_INT_EQ(l.remaining, want - seen);
        size_t n = l.n;
        kapi_store_list_dispose(&l);
        if (n < 333)
            break;
    }
    CHECK_INT_EQ(seen, want);
    kapi_store_list_result all;
    kapi_store__index_list(&ix, KAPI_STR(""), KAPI_STR(""), 0, &all);
    CHECK_INT_EQ(all.n, total);
    for (size_t i = 1; i < all.n; i++)
        CHECK(strcmp(all.items[i - 1]->key, all.items[i]->key) < 0);
    kapi_store_list_dispose(&all);
    kapi_store__index_dispose(&ix);
}

TEST(store_list_history)
{
    kapi_store *st = open_store();
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/p/a", "a1", 0, NULL), KAPI_STORE_OK); /* 1 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/p/b", "b1", 0, NULL), KAPI_STORE_OK); /* 2 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/p/c", "c1", 0, NULL), KAPI_STORE_OK); /* 3 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/p/b", "b2", 0, NULL), KAPI_STORE_OK); /* 4 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/p/a", NULL, 0, NULL), KAPI_STORE_OK); /* 5 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/p/d", "d1", 0, NULL), KAPI_STORE_OK); /* 6 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/q/x", "x1", 0, NULL), KAPI_STORE_OK); /* 7 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/p/c", "c2", 0, NULL), KAPI_STORE_OK); /* 8 */

    CHECK_LIST(st, "/p/", 1, "", 0, "/p/a=a1@1|0");
    CHECK_LIST(st, "/p/", 3, "", 0, "/p/a=a1@1,/p/b=b1@2,/p/c=c1@3|0");
    CHECK_LIST(st, "/p/", 4, "", 0, "/p/a=a1@1,/p/b=b2@4,/p/c=c1@3|0");
    CHECK_LIST(st, "/p/", 5, "", 0, "/p/b=b2@4,/p/c=c1@3|0");
    CHECK_LIST(st, "/p/", 7, "", 0, "/p/b=b2@4,/p/c=c1@3,/p/d=d1@6|0");
    CHECK_LIST(st, "/p/", 7, "", 1, "/p/b=b2@4|2");
    CHECK_LIST(st, "/p/", 7, "/p/b", 1, "/p/c=c1@3|1");
    CHECK_LIST(st, "/p/", 7, "/p/c", 5, "/p/d=d1@6|0");
    CHECK_LIST(st, "", 7, "/p/d", 0, "/q/x=x1@7|0");
    CHECK_LIST(st, "/p/", 8, "", 0, "/p/b=b2@4,/p/c=c2@8,/p/d=d1@6|0"); /* current: memory */

    /* history rows carry the stamped bytes, byte for byte */
    kapi_store_list_opts opts = {.prefix = KAPI_STR("/p/b"), .rev = 3};
    kapi_store_list_result l;
    CHECK_INT_EQ(kapi_store_list(st, &opts, &l), KAPI_STORE_OK);
    CHECK_INT_EQ(l.n, 1);
    CHECK_STR_EQ(l.items[0]->data, "{\"v\":\"b1\",\"rv\":\"2\"}");
    CHECK_INT_EQ(l.items[0]->rv_len, 1);
    CHECK(l.items[0]->data[l.items[0]->rv_off] == '2');
    kapi_store_list_dispose(&l);

    char *s;
    CHECK_INT_EQ(list_str(st, "/p/", 9, "", 0, &s), KAPI_STORE_TOO_NEW);
    free(s);
    CHECK_INT_EQ(kapi_store__compact(st, 5), 0);
    kapi_store_stats stats;
    kapi_store__stats(st, &stats);
    CHECK_INT_EQ(stats.compacted, 5);
    CHECK_INT_EQ(list_str(st, "/p/", 4, "", 0, &s), KAPI_STORE_GONE);
    free(s);
    CHECK_INT_EQ(list_str(st, "/p/", 1, "", 0, &s), KAPI_STORE_GONE);
    free(s);
    CHECK_LIST(st, "/p/", 5, "", 0, "/p/b=b2@4,/p/c=c1@3|0");
    CHECK_LIST(st, "/p/", 7, "", 0, "/p/b=b2@4,/p/c=c1@3,/p/d=d1@6|0");
    CHECK_LIST(st, "/p/", 0, "", 0, "/p/b=b2@4,/p/c=c2@8,/p/d=d1@6|0");
    kapi_store_free(st);
}

/* The window: with history_seconds = 1, revisions older than a second are compacted by
 * the store itself. */
TEST(store_history_window)
{
    char *path = db_path();
    kapi_store_options opts = {.path = path, .history_seconds = 1};
    kapi_store *st = NULL;
    CHECK(kapi_store_open(&st, &opts) == NULL);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/w/a", "1", 0, NULL), KAPI_STORE_OK); /* 1 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/w/a", "2", 0, NULL), KAPI_STORE_OK); /* 2 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/w/b", "1", 0, NULL), KAPI_STORE_OK); /* 3 */
    CHECK_LIST(st, "/w/", 1, "", 0, "/w/a=1@1|0");
    kapi_store_stats stats = {0};
    for (int i = 0; i < 40 && stats.compacted < 3; i++) { /* the idle tick compacts */
        usleep(100 * 1000);
        kapi_store__stats(st, &stats);
    }
    CHECK_INT_EQ(stats.compacted, 3);
    char *s;
    CHECK_INT_EQ(list_str(st, "/w/", 2, "", 0, &s), KAPI_STORE_GONE);
    free(s);
    CHECK_LIST(st, "/w/", 3, "", 0, "/w/a=2@2,/w/b=1@3|0");
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/w/b", NULL, 0, NULL), KAPI_STORE_OK); /* 4 */
    CHECK_LIST(st, "/w/", 3, "", 0, "/w/a=2@2,/w/b=1@3|0");
    kapi_store_free(st);
    free(path);
}

/* ---- recovery ---- */

TEST(store_recovery)
{
    kapi_store *st = open_store();
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/r/a", "a1", 0, NULL), KAPI_STORE_OK); /* 1 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/r/b", "b1", 0, NULL), KAPI_STORE_OK); /* 2 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/r/a", "a2", 0, NULL), KAPI_STORE_OK); /* 3 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/r/b", NULL, 0, NULL), KAPI_STORE_OK); /* 4 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/r/c", "c1", 0, NULL), KAPI_STORE_OK); /* 5 */
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/r/c", NULL, 0, NULL), KAPI_STORE_OK); /* 6 */
    kapi_store_free(st);

    st = open_store();
    CHECK_INT_EQ(kapi_store_revision(st), 6); /* the last write was a delete */
    check_get(st, "/r/a", "a2", 3);
    check_get(st, "/r/b", NULL, 0);
    check_get(st, "/r/c", NULL, 0);
    kapi_obj *o;
    CHECK_INT_EQ(kapi_store_get(st, KAPI_STR("/r/a"), &o), KAPI_STORE_OK);
    CHECK_INT_EQ(o->create_rev, 1);
    CHECK_INT_EQ(o->rv_len, 1);
    CHECK(o->data[o->rv_off] == '3');
    kapi_obj_unref(o);
    CHECK_LIST(st, "/r/", 2, "", 0, "/r/a=a1@1,/r/b=b1@2|0");
    int64_t rev;
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/r/d", "d1", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(rev, 7);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/r/a", "a3", 3, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(rev, 8);
    /* compact everything, including the tombstones: deleted keys stay deleted */
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/r/d", NULL, 0, NULL), KAPI_STORE_OK); /* 9 */
    CHECK_INT_EQ(kapi_store__compact(st, 9), 0);
    kapi_store_free(st);

    st = open_store();
    CHECK_INT_EQ(kapi_store_revision(st), 9);
    check_get(st, "/r/a", "a3", 8);
    check_get(st, "/r/b", NULL, 0);
    check_get(st, "/r/d", NULL, 0);
    char *s;
    CHECK_INT_EQ(list_str(st, "/r/", 8, "", 0, &s), KAPI_STORE_GONE); /* compaction is kept */
    free(s);
    CHECK_LIST(st, "/r/", 0, "", 0, "/r/a=a3@8|0");
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/r/b", "b2", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(rev, 10);
    kapi_store_free(st);
}

/* Data written under the key layout before kube-apiserver's is moved once, at open. */
static kapi_store *open_rekeyed(const kapi_store_rekey *rk, size_t n)
{
    char *path = db_path();
    kapi_store_options opts = {.path = path, .rekeys = rk, .nrekeys = n};
    kapi_store *st = NULL;
    kapi_error *err = kapi_store_open(&st, &opts);
    if (err)
        test_fail(__FILE__, __LINE__, "open: %s", err->message);
    free(path);
    return st;
}

TEST(store_layout_migration)
{
    static const kapi_store_rekey rk[] = {
        {KAPI_STR("//events/"), KAPI_STR("/events/")},
        {KAPI_STR("/batch/cronjobs/"), KAPI_STR("/cronjobs/")},
    };
    kapi_store *st = open_store();
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "//events/ns/a", "a1", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/batch/cronjobs/ns/b", "b1", 0, NULL),
                 KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/example.com/ws/ns/c", "c1", 0, NULL),
                 KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "//events/ns/a", "a2", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/batch/cronjobsx/ns/d", "d1", 0, NULL),
                 KAPI_STORE_OK);
    kapi_store_free(st);
    /* What a database written before the move says. */
    char *path = db_path();
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "UPDATE meta SET value = 1 WHERE name = 'layout'", NULL, NULL, NULL) ==
          SQLITE_OK);
    sqlite3_close(db);
    free(path);

    for (int round = 0; round < 2; round++) {
        st = open_rekeyed(rk, 2); /* the second open moves nothing again */
        check_get(st, "/events/ns/a", "a2", 4);
        check_get(st, "//events/ns/a", NULL, 0);
        check_get(st, "/cronjobs/ns/b", "b1", 2);
        check_get(st, "/batch/cronjobs/ns/b", NULL, 0);
        check_get(st, "/example.com/ws/ns/c", "c1", 3);
        check_get(st, "/batch/cronjobsx/ns/d", "d1", 5); /* a longer name is not the prefix */
        CHECK_LIST(st, "/events/", 3, "", 0, "/events/ns/a=a1@1|0"); /* the history moved too */
        kapi_store_free(st);
    }
}

/* ---- keys are byte strings ---- */

#define NUL_KEY(lit) ((kapi_str){(lit), sizeof(lit) - 1})

static kapi_store_rc commit_str(kapi_store *st, kapi_store_op op, kapi_str key, const char *v)
{
    doc d;
    kapi_store_write *w = mkwrite(&d, op, "", v, 0);
    w->key = key;
    kapi_store_rc rc = kapi_store_commit(st, w);
    kapi_obj_unref(d.w.result);
    kapi_obj_unref(d.w.current);
    return rc;
}

/* The "v" of the object at key, or "-" when absent. */
static char *get_str(kapi_store *st, kapi_str key)
{
    kapi_obj *o = NULL;
    char v[64] = "-";
    if (kapi_store_get(st, key, &o) == KAPI_STORE_OK) {
        CHECK(kapi_str_eq(kapi_obj_key(o), key));
        sscanf(o->data, "{\"v\":\"%63[^\"]", v);
    }
    kapi_obj_unref(o);
    return kapi_xstrdup(v);
}

/* A list under prefix as "v,v|remaining" (each item's key checked to start with it). */
static char *list_values(kapi_store *st, kapi_str prefix, int64_t rev, kapi_str after, size_t limit)
{
    kapi_store_list_opts q = {.prefix = prefix, .rev = rev, .start_after = after, .limit = limit};
    kapi_store_list_result l;
    kapi_buf b;
    kapi_buf_init(&b);
    if (kapi_store_list(st, &q, &l) != KAPI_STORE_OK)
        kapi_buf_puts(&b, "error");
    for (size_t i = 0; i < l.n; i++) {
        char v[64] = "";
        sscanf(l.items[i]->data, "{\"v\":\"%63[^\"]", v);
        CHECK(l.items[i]->key_len >= prefix.len &&
              memcmp(l.items[i]->key, prefix.ptr, prefix.len) == 0);
        kapi_buf_printf(&b, "%s%s", i ? "," : "", v);
    }
    kapi_buf_printf(&b, "|%zu", l.remaining);
    kapi_store_list_dispose(&l);
    return kapi_buf_detach(&b, NULL);
}

typedef struct seen_values {
    kapi_buf b;
} seen_values;

static bool watch_values(void *ctx, const kapi_store_event *ev)
{
    seen_values *s = ctx;
    char v[64] = "";
    sscanf(ev->obj->data, "{\"v\":\"%63[^\"]", v);
    kapi_buf_printf(&s->b, "%s %s@%" PRId64 ";", ev->type == KAPI_STORE_EVENT_PUT ? "PUT" : "DEL",
                    v, ev->rev);
    return true;
}

static char *watch_str(kapi_store *st, kapi_str prefix, int64_t from)
{
    seen_values s;
    kapi_buf_init(&s.b);
    kapi_store_watch *w = NULL;
    int64_t oldest;
    if (kapi_store_watch_start(st, prefix, from, watch_values, &s, &w, &oldest) != KAPI_STORE_OK)
        kapi_buf_puts(&s.b, "gone");
    else
        kapi_store_watch_stop(st, w);
    return kapi_buf_detach(&s.b, NULL);
}

#define CHECK_OWNED_STR(expr, want)                                                                \
    do {                                                                                           \
        char *got_ = (expr);                                                                       \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

/* Two keys that differ only after a NUL are two keys: in get, list (latest and history,
 * prefixes and start_after), watch and delete, and after the store is reopened. */
TEST(store_keys_with_nul)
{
    const kapi_str a = NUL_KEY("/e/ns/a"), anul = NUL_KEY("/e/ns/a\0"), ab = NUL_KEY("/e/ns/a\0b"),
                   ac = NUL_KEY("/e/ns/a\0c"), dir = NUL_KEY("/e/ns/");
    kapi_store *st = open_store();
    CHECK_INT_EQ(commit_str(st, KAPI_STORE_CREATE, a, "A"), KAPI_STORE_OK);   /* 1 */
    CHECK_INT_EQ(commit_str(st, KAPI_STORE_CREATE, ab, "AB"), KAPI_STORE_OK); /* 2 */
    CHECK_INT_EQ(commit_str(st, KAPI_STORE_CREATE, ab, "x"), KAPI_STORE_EXISTS);
    CHECK_INT_EQ(commit_str(st, KAPI_STORE_UPDATE, ac, "x"), KAPI_STORE_NOT_FOUND);
    CHECK_OWNED_STR(get_str(st, a), "A");
    CHECK_OWNED_STR(get_str(st, ab), "AB");
    CHECK_OWNED_STR(get_str(st, anul), "-");
    CHECK_OWNED_STR(list_values(st, dir, 0, KAPI_STR_NULL, 0), "A,AB|0");
    CHECK_OWNED_STR(list_values(st, anul, 0, KAPI_STR_NULL, 0), "AB|0");
    CHECK_OWNED_STR(list_values(st, ab, 0, KAPI_STR_NULL, 0), "AB|0");
    CHECK_OWNED_STR(list_values(st, dir, 0, a, 0), "AB|0");
    CHECK_OWNED_STR(list_values(st, dir, 0, KAPI_STR_NULL, 1), "A|1");
    CHECK_OWNED_STR(watch_str(st, anul, 0), "PUT AB@2;");
    CHECK_INT_EQ(commit_str(st, KAPI_STORE_DELETE, ab, NULL), KAPI_STORE_OK); /* 3 */
    CHECK_OWNED_STR(get_str(st, a), "A");
    CHECK_OWNED_STR(get_str(st, ab), "-");
    CHECK_OWNED_STR(list_values(st, anul, 2, KAPI_STR_NULL, 0), "AB|0"); /* from the log */
    CHECK_OWNED_STR(list_values(st, dir, 2, a, 0), "AB|0");
    CHECK_OWNED_STR(list_values(st, a, 2, KAPI_STR_NULL, 0), "A,AB|0");
    kapi_store_free(st);

    st = open_store();
    CHECK_OWNED_STR(get_str(st, a), "A");
    CHECK_OWNED_STR(get_str(st, ab), "-");
    CHECK_INT_EQ(commit_str(st, KAPI_STORE_CREATE, ac, "AC"), KAPI_STORE_OK); /* 4 */
    CHECK_OWNED_STR(list_values(st, dir, 0, KAPI_STR_NULL, 0), "A,AC|0");
    CHECK_OWNED_STR(list_values(st, ab, 2, KAPI_STR_NULL, 0), "AB|0");
    CHECK_OWNED_STR(watch_str(st, anul, 0), "PUT AB@2;DEL AB@3;PUT AC@4;");
    CHECK_OWNED_STR(watch_str(st, ab, 0), "PUT AB@2;DEL AB@3;");
    kapi_store_free(st);
}

/* ---- the observer ---- */

typedef struct seen {
    kapi_buf log;
    int64_t last_rev;
    bool in_order;
} seen;

static void observe(void *ctx, const kapi_store_event *ev)
{
    seen *s = ctx;
    if (ev->rev != s->last_rev + 1 || ev->obj->rev != ev->rev)
        s->in_order = false;
    s->last_rev = ev->rev;
    kapi_buf_printf(&s->log, "%s %s@%" PRId64 " prev=%" PRId64 "%s;",
                    ev->type == KAPI_STORE_EVENT_PUT ? "PUT" : "DEL", ev->obj->key, ev->rev,
                    ev->prev ? ev->prev->rev : 0, strstr(ev->obj->data, "\"rv\":\"") ? "" : "!");
}

TEST(store_observer)
{
    seen s = {.in_order = true};
    kapi_buf_init(&s.log);
    kapi_store *st = open_store_with(observe, &s, &kapi_store__sqlite_ops);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/o/a", "1", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/o/a", "1", 0, NULL), KAPI_STORE_EXISTS);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/o/a", "2", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/o/b", "1", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/o/a", NULL, 0, NULL), KAPI_STORE_OK);
    kapi_store_free(st);
    CHECK(s.in_order);
    CHECK_STR_EQ(s.log.ptr, "PUT /o/a@1 prev=0;PUT /o/a@2 prev=1;PUT /o/b@3 prev=0;"
                            "DEL /o/a@4 prev=2;");
    kapi_buf_dispose(&s.log);
}

/* ---- group commit ---- */

typedef struct worker {
    kapi_store *st;
    int id, n;
    int64_t *revs;
    int failures;
} worker;

static void *create_many(void *arg)
{
    worker *w = arg;
    char key[64];
    for (int i = 0; i < w->n; i++) {
        snprintf(key, sizeof(key), "/c/t%d/k%04d", w->id, i);
        if (commit(w->st, KAPI_STORE_CREATE, key, "v", 0, &w->revs[i]) != KAPI_STORE_OK)
            w->failures++;
    }
    return NULL;
}

/* Reads while the writers write: lists stay sorted and never go back in revision. */
typedef struct reading {
    kapi_store *st;
    atomic_int stop;
    int bad, lists;
} reading;

static bool list_ok(kapi_store *st, int64_t rev, int64_t *seen_rev)
{
    kapi_store_list_opts opts = {.prefix = KAPI_STR("/c/t1/"), .limit = 50, .rev = rev};
    kapi_store_list_result l;
    kapi_store_rc rc = kapi_store_list(st, &opts, &l);
    bool ok = rc == KAPI_STORE_OK && (rev || l.rev >= *seen_rev);
    for (size_t i = 1; ok && i < l.n; i++)
        ok = strcmp(l.items[i - 1]->key, l.items[i]->key) < 0 && l.items[i]->rev <= l.rev;
    if (!rev)
        *seen_rev = l.rev;
    kapi_store_list_dispose(&l);
    return ok;
}

static void *read_many(void *arg)
{
    reading *r = arg;
    int64_t seen_rev = 0;
    while (!atomic_load(&r->stop)) {
        kapi_obj *o = NULL;
        if (kapi_store_get(r->st, KAPI_STR("/c/t0/k0000"), &o) == KAPI_STORE_OK)
            kapi_obj_unref(o);
        if (!list_ok(r->st, 0, &seen_rev))
            r->bad++;
        if (seen_rev > 2 && !list_ok(r->st, seen_rev / 2, &seen_rev))
            r->bad++;
        r->lists++;
    }
    return NULL;
}

static int cmp_rev(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

TEST(store_concurrent_creates)
{
    enum { THREADS = 8, EACH = 500 };
    seen s = {.in_order = true};
    kapi_buf_init(&s.log);
    kapi_store *st = open_store_with(observe, &s, &kapi_store__sqlite_ops);
    static int64_t revs[THREADS * EACH];
    pthread_t th[THREADS], reader;
    worker w[THREADS];
    reading r = {.st = st};
    pthread_create(&reader, NULL, read_many, &r);
    for (int t = 0; t < THREADS; t++) {
        w[t] = (worker){.st = st, .id = t, .n = EACH, .revs = revs + t * EACH};
        pthread_create(&th[t], NULL, create_many, &w[t]);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK_INT_EQ(w[t].failures, 0);
    }
    atomic_store(&r.stop, 1);
    pthread_join(reader, NULL);
    CHECK_INT_EQ(r.bad, 0);
    CHECK(r.lists > 0);
    qsort(revs, THREADS * EACH, sizeof(revs[0]), cmp_rev);
    for (int i = 0; i < THREADS * EACH; i++)
        CHECK_INT_EQ(revs[i], i + 1);
    CHECK_INT_EQ(kapi_store_revision(st), THREADS * EACH);
    kapi_store_stats stats;
    kapi_store__stats(st, &stats);
    CHECK_INT_EQ(stats.writes, THREADS * EACH);
    CHECK(stats.transactions < THREADS * EACH); /* batches formed */
    printf("  %d writes in %" PRId64 " transactions\n", THREADS * EACH, stats.transactions);
    CHECK(s.in_order);
    CHECK_INT_EQ(s.last_rev, THREADS * EACH);
    kapi_store_list_opts opts = {.prefix = KAPI_STR("/c/")};
    kapi_store_list_result l;
    CHECK_INT_EQ(kapi_store_list(st, &opts, &l), KAPI_STORE_OK);
    CHECK_INT_EQ(l.n, THREADS * EACH);
    kapi_store_list_dispose(&l);
    kapi_store_free(st);
    kapi_buf_dispose(&s.log);
}

/* An observer that holds the committer on its first event, so that the writes queued
 * meanwhile form one batch. */
typedef struct gate {
    int events;
} gate;

static void hold_first(void *ctx, const kapi_store_event *ev)
{
    gate *g = ctx;
    (void)ev;
    if (g->events++ == 0)
        usleep(300 * 1000);
}

typedef struct queued {
    kapi_store *st;
    doc d;
    kapi_store_rc rc;
} queued;

static void *commit_queued(void *arg)
{
    queued *q = arg;
    q->rc = kapi_store_commit(q->st, &q->d.w);
    return NULL;
}

/* Starts writes one after the other (each queued before the next) behind a held batch. */
static void run_behind_gate(kapi_store *st, queued *q, size_t n)
{
    pthread_t first, th[16];
    queued opener = {.st = st};
    mkwrite(&opener.d, KAPI_STORE_CREATE, "/gate", "g", 0);
    pthread_create(&first, NULL, commit_queued, &opener);
    usleep(50 * 1000);
    for (size_t i = 0; i < n; i++) {
        q[i].st = st;
        pthread_create(&th[i], NULL, commit_queued, &q[i]);
        usleep(20 * 1000);
    }
    pthread_join(first, NULL);
    CHECK_INT_EQ(opener.rc, KAPI_STORE_OK);
    kapi_obj_unref(opener.d.w.result);
    for (size_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

TEST(store_batch_sees_itself)
{
    gate g = {0};
    kapi_store *st = open_store_with(hold_first, &g, &kapi_store__sqlite_ops);
    queued q[6];
    memset(q, 0, sizeof(q));
    mkwrite(&q[0].d, KAPI_STORE_CREATE, "/b/k", "1", 0);
    mkwrite(&q[1].d, KAPI_STORE_UPDATE, "/b/k", "2", 2); /* sees the create at 2 */
    mkwrite(&q[2].d, KAPI_STORE_UPDATE, "/b/k", "x", 2); /* conflict with the update at 3 */
    mkwrite(&q[3].d, KAPI_STORE_DELETE, "/b/k", NULL, 3);
    mkwrite(&q[4].d, KAPI_STORE_UPDATE, "/b/k", "y", 0); /* deleted within the batch */
    mkwrite(&q[5].d, KAPI_STORE_CREATE, "/b/k", "3", 0);
    run_behind_gate(st, q, 6);
    kapi_store_stats stats;
    kapi_store__stats(st, &stats);
    CHECK_INT_EQ(stats.transactions, 2);
    CHECK_INT_EQ(q[0].rc, KAPI_STORE_OK);
    CHECK_INT_EQ(q[0].d.w.result->rev, 2);
    CHECK_INT_EQ(q[1].rc, KAPI_STORE_OK);
    CHECK_INT_EQ(q[1].d.w.result->rev, 3);
    CHECK_INT_EQ(q[1].d.w.result->create_rev, 2);
    CHECK_INT_EQ(q[2].rc, KAPI_STORE_CONFLICT);
    CHECK_INT_EQ(q[2].d.w.current->rev, 3);
    CHECK_INT_EQ(q[3].rc, KAPI_STORE_OK);
    CHECK_STR_EQ(q[3].d.w.result->data, "{\"v\":\"2\",\"rv\":\"4\"}");
    CHECK_INT_EQ(q[4].rc, KAPI_STORE_NOT_FOUND);
    CHECK_INT_EQ(q[5].rc, KAPI_STORE_OK);
    CHECK_INT_EQ(q[5].d.w.result->rev, 5);
    CHECK_INT_EQ(q[5].d.w.result->create_rev, 5);
    for (int i = 0; i < 6; i++) {
        kapi_obj_unref(q[i].d.w.result);
        kapi_obj_unref(q[i].d.w.current);
    }
    check_get(st, "/b/k", "3", 5);
    CHECK_LIST(st, "/b/", 3, "", 0, "/b/k=2@3|0");
    CHECK_LIST(st, "/b/", 4, "", 0, "|0");
    kapi_store_free(st);
}

/* A backend that fails commits on demand: the plug-in point in use. */
static kapi_store_backend_ops failing_ops;
static atomic_int fail_appends;

static int failing_commit(void *b, kapi_store_txn_write *writes, size_t n)
{
    if (atomic_load(&fail_appends))
        return -1;
    return kapi_store__sqlite_ops.commit(b, writes, n);
}

static void hold_then_fail(void *ctx, const kapi_store_event *ev)
{
    atomic_store(&fail_appends, 1);
    hold_first(ctx, ev);
}

TEST(store_backend_failure)
{
    failing_ops = kapi_store__sqlite_ops;
    failing_ops.commit = failing_commit;
    gate g = {0};
    kapi_store *st = open_store_with(hold_then_fail, &g, &failing_ops);
    queued q[4];
    memset(q, 0, sizeof(q));
    mkwrite(&q[0].d, KAPI_STORE_CREATE, "/f/b", "1", 0);
    mkwrite(&q[1].d, KAPI_STORE_UPDATE, "/gate", "2", 99); /* would conflict */
    mkwrite(&q[2].d, KAPI_STORE_UPDATE, "/gate", "2", 0);
    mkwrite(&q[3].d, KAPI_STORE_CREATE, "/gate", "2", 0); /* would exist */
    run_behind_gate(st, q, 4); /* the gate's write succeeds, then appends fail */
    for (int i = 0; i < 4; i++) {
        CHECK_INT_EQ(q[i].rc, KAPI_STORE_IO);
        CHECK(q[i].d.w.result == NULL && q[i].d.w.current == NULL);
    }
    kapi_store_stats stats;
    kapi_store__stats(st, &stats);
    CHECK_INT_EQ(stats.transactions, 2);
    CHECK_INT_EQ(stats.writes, 1);
    CHECK_INT_EQ(kapi_store_revision(st), 1);
    check_get(st, "/gate", "g", 1);
    check_get(st, "/f/b", NULL, 0);
    CHECK_LIST(st, "", 0, "", 0, "/gate=g@1|0");
    atomic_store(&fail_appends, 0);
    int64_t rev;
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/f/b", "1", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(rev, 2); /* the failed revisions were not used up */
    kapi_store_free(st);
    st = open_store();
    check_get(st, "/f/b", "1", 2);
    check_get(st, "/gate", "g", 1);
    kapi_store_free(st);
}

/* A backend whose follow stream hands every call's rows twice (as a stream resumed after a
 * break may): the cache applies each change once. */
static kapi_store_backend_ops twice_ops;
static kapi_store_follow_fn twice_fn;

static void follow_twice(void *ctx, const kapi_store_row *rows, size_t n, int64_t rev)
{
    twice_fn(ctx, rows, n, rev);
    twice_fn(ctx, rows, n, rev);
}

static int twice_follow(void *b, int64_t after, kapi_store_follow_fn fn, kapi_store_reset_fn reset,
                        void *ctx)
{
    twice_fn = fn;
    return kapi_store__sqlite_ops.follow(b, after, follow_twice, reset, ctx);
}

TEST(store_follow_applies_once)
{
    twice_ops = kapi_store__sqlite_ops;
    twice_ops.follow = twice_follow;
    seen s = {.in_order = true};
    kapi_buf_init(&s.log);
    kapi_store *st = open_store_with(observe, &s, &twice_ops);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/o/a", "1", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/o/a", "2", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/o/a", NULL, 0, NULL), KAPI_STORE_OK);
    CHECK_OWNED_STR(watch_str(st, KAPI_STR("/o/"), 0), "PUT 1@1;PUT 2@2;DEL 2@3;");
    kapi_store_free(st);
    CHECK(s.in_order);
    CHECK_STR_EQ(s.log.ptr, "PUT /o/a@1 prev=0;PUT /o/a@2 prev=1;DEL /o/a@3 prev=2;");
    kapi_buf_dispose(&s.log);

    st = open_store_with(NULL, NULL, &twice_ops); /* the replay at open, twice too */
    CHECK_INT_EQ(kapi_store_revision(st), 3);
    CHECK_OWNED_STR(watch_str(st, KAPI_STR("/o/"), 0), "PUT 1@1;PUT 2@2;DEL 2@3;");
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/o/a", "3", 0, NULL), KAPI_STORE_OK);
    CHECK_OWNED_STR(watch_str(st, KAPI_STR("/o/"), 2), "DEL 2@3;PUT 3@4;");
    kapi_store_free(st);
}

/* ---- crash consistency ---- */

static void crash_child(int fd)
{
    kapi_store *st = open_store();
    char key[64];
    for (uint32_t i = 0;; i++) {
        snprintf(key, sizeof(key), "/crash/k%06u", i);
        if (commit(st, KAPI_STORE_CREATE, key, "v", 0, NULL) != KAPI_STORE_OK)
            _exit(3);
        if (write(fd, &i, sizeof(i)) != sizeof(i))
            _exit(4);
    }
}

TEST(store_crash_consistency)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        crash_child(fds[1]);
    }
    close(fds[1]);
    uint32_t acked = 0, got;
    int n = 0;
    while (n < 300 && read(fds[0], &got, sizeof(got)) == sizeof(got)) {
        acked = got;
        n++;
    }
    CHECK_INT_EQ(n, 300);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    while (read(fds[0], &got, sizeof(got)) == sizeof(got)) /* acknowledged before the kill */
        acked = got;
    close(fds[0]);
    CHECK(WIFSIGNALED(status));

    kapi_store *st = open_store();
    char key[64];
    for (uint32_t i = 0; i <= acked; i++) {
        snprintf(key, sizeof(key), "/crash/k%06u", i);
        kapi_obj *o = NULL;
        CHECK_INT_EQ(kapi_store_get(st, kapi_str_c(key), &o), KAPI_STORE_OK);
        CHECK_INT_EQ(o->rev, i + 1);
        kapi_obj_unref(o);
    }
    CHECK(kapi_store_revision(st) >= (int64_t)acked + 1);
    int64_t rev;
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/after", "v", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(rev, kapi_store_revision(st));
    kapi_store_free(st);
}

TEST(store_obj_restamp)
{
    kapi_store *st = open_store();
    kapi_store_write w = {.op = KAPI_STORE_CREATE, .key = KAPI_STR("/g/r/n/a")};
    w.value = KAPI_STR("{\"metadata\":{\"resourceVersion\":\"\"},\"x\":1}");
    w.rv_off = 32;
    CHECK_INT_EQ(kapi_store_commit(st, &w), KAPI_STORE_OK);
    kapi_obj *o = kapi_obj_restamp(w.result, 12345);
    CHECK_STR_EQ(o->data, "{\"metadata\":{\"resourceVersion\":\"12345\"},\"x\":1}");
    CHECK_STR_EQ(o->key, "/g/r/n/a");
    CHECK_INT_EQ(o->rev, 12345);
    CHECK_INT_EQ(o->create_rev, w.result->create_rev);
    CHECK_INT_EQ(o->rv_off, 32);
    CHECK_INT_EQ(o->rv_len, 5);
    kapi_obj_unref(o);
    kapi_obj_unref(w.result);
    kapi_store_free(st);
}

/* An object's derived form is set once: the first reader's stays, a later one is freed
 * (LeakSanitizer checks both are freed), and a restamped object starts without one. */
TEST(store_obj_form_set_once)
{
    kapi_store *st = open_store();
    kapi_store_write w = {.op = KAPI_STORE_CREATE, .key = KAPI_STR("/g/r/n/f")};
    w.value = KAPI_STR("{\"metadata\":{\"resourceVersion\":\"\"}}");
    w.rv_off = 32;
    CHECK_INT_EQ(kapi_store_commit(st, &w), KAPI_STORE_OK);
    CHECK(kapi_obj_form_get(w.result) == NULL);
    kapi_obj_form *a = kapi_xmalloc(sizeof(*a) + 1), *b = kapi_xmalloc(sizeof(*b) + 1);
    a->len = b->len = 1;
    a->data[0] = 'a';
    b->data[0] = 'b';
    CHECK(kapi_obj_form_put(w.result, a) == a);
    CHECK(kapi_obj_form_put(w.result, b) == a);
    CHECK(kapi_obj_form_get(w.result)->data[0] == 'a');
    kapi_obj *o = kapi_obj_restamp(w.result, 777);
    CHECK(kapi_obj_form_get(o) == NULL);
    kapi_obj_unref(o);
    kapi_obj_unref(w.result);
    kapi_store_free(st);
}

/* ---- expiry ---- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to 3 s for key to be gone. */
static void wait_gone(kapi_store *st, const char *key)
{
    for (int i = 0; i < 300; i++) {
        kapi_obj *o = NULL;
        if (kapi_store_get(st, kapi_str_c(key), &o) == KAPI_STORE_NOT_FOUND)
            return;
        kapi_obj_unref(o);
        sleep_ms(10);
    }
    test_fail(__FILE__, __LINE__, "%s did not expire", key);
}

/* The expirer's count, once it reaches want or 3 s have passed: a deletion is visible
 * before its commit returns to the expirer, which counts it then. */
static size_t expired_reaching(kapi_store_expirer *x, size_t want)
{
    for (int i = 0; i < 300 && kapi_store_expired(x) < want; i++)
        sleep_ms(10);
    return kapi_store_expired(x);
}

/* Keys under the prefix go a ttl after their last write, those already there a ttl after
 * the start; a write in between gives its key the whole ttl again; other keys stay. */
TEST(store_expire_after_last_write)
{
    kapi_store *st = open_store();
    int64_t rev, other;
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/events/ns/old", "o", 0, NULL), KAPI_STORE_OK);
    kapi_store_expirer *x = kapi_store_expire_start(st, kapi_str_c("/events/"), 1000);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/events/ns/a", "a", 0, NULL), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/events/ns/b", "b", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/other/ns/c", "c", 0, &other), KAPI_STORE_OK);
    sleep_ms(600);
    CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/events/ns/b", "b2", rev, &rev), KAPI_STORE_OK);
    wait_gone(st, "/events/ns/a");
    wait_gone(st, "/events/ns/old");
    check_get(st, "/events/ns/b", "b2", rev); /* written again at 600 ms: due at 1600 */
    wait_gone(st, "/events/ns/b");
    check_get(st, "/other/ns/c", "c", other);
    CHECK_INT_EQ(expired_reaching(x, 3), 3);
    kapi_store_expire_stop(x);
    kapi_store_free(st);
}

/* A key written over and over holds a bounded number of deadlines, and still expires
 * once, a ttl after its last write; a deleted key leaves nothing to expire. */
TEST(store_expire_bounded_by_live_keys)
{
    kapi_store *st = open_store();
    int64_t rev;
    kapi_store_expirer *x = kapi_store_expire_start(st, kapi_str_c("/events/"), 500);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/events/ns/hot", "0", 0, &rev), KAPI_STORE_OK);
    for (int i = 0; i < 1000; i++)
        CHECK_INT_EQ(commit(st, KAPI_STORE_UPDATE, "/events/ns/hot", "n", rev, &rev),
                     KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_CREATE, "/events/ns/gone", "g", 0, &rev), KAPI_STORE_OK);
    CHECK_INT_EQ(commit(st, KAPI_STORE_DELETE, "/events/ns/gone", NULL, rev, NULL), KAPI_STORE_OK);
    sleep_ms(200); /* the watch has delivered the writes */
    size_t pending = kapi_store_expire_pending(x);
    CHECK(pending >= 1 && pending <= 2 * 2 + 64);
    wait_gone(st, "/events/ns/hot");
    sleep_ms(100);
    CHECK_INT_EQ(kapi_store_expired(x), 1);
    kapi_store_expire_stop(x);
    kapi_store_free(st);
}
