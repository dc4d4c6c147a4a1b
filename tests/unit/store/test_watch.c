/* The store's watch hub: replay from a past revision, live changes, prefixes, stopping,
 * the history floor and progress notes. */
#include "store/store_int.h"
#include "test.h"

#include <inttypes.h>
#include <unistd.h>

typedef struct wlog {
    kapi_buf b;
    int stop_after; /* > 0: return false after this many calls */
    int calls;
} wlog;

static bool record(void *ctx, const kapi_store_event *ev)
{
    wlog *l = ctx;
    static const char *const names[] = {"PUT", "DEL", "PROGRESS"};
    kapi_buf_printf(&l->b, "%s ", names[ev->type]);
    for (size_t i = 0; ev->obj && i < ev->obj->key_len; i++) { /* a NUL shows as \0 */
        if (ev->obj->key[i])
            kapi_buf_putc(&l->b, ev->obj->key[i]);
        else
            kapi_buf_puts(&l->b, "\\0");
    }
    kapi_buf_printf(&l->b, "%s@%" PRId64 "%s;", ev->obj ? "" : "-", ev->rev,
                    ev->prev ? "+prev" : "");
    return !(l->stop_after && ++l->calls >= l->stop_after);
}

static kapi_store *open_tmp(int64_t history_seconds)
{
    char *path = kapi_xprintf("%s/w.db", test_tmpdir());
    kapi_store_options opts = {.path = path, .history_seconds = history_seconds};
    kapi_store *st = NULL;
    kapi_error *err = kapi_store_open(&st, &opts);
    if (err)
        test_fail(__FILE__, __LINE__, "open: %s", err->message);
    free(path);
    return st;
}

static void put(kapi_store *st, kapi_store_op op, const char *key)
{
    static const char v[] = "{\"rv\":\"\"}";
    kapi_store_write w = {.op = op, .key = kapi_str_c(key), .value = kapi_str_c(v), .rv_off = 7};
    if (kapi_store_commit(st, &w) != KAPI_STORE_OK)
        test_fail(__FILE__, __LINE__, "commit %s failed", key);
    kapi_obj_unref(w.result);
}

TEST(store_watch_replay_then_live)
{
    kapi_store *st = open_tmp(0);
    put(st, KAPI_STORE_CREATE, "/w/a"); /* 1 */
    put(st, KAPI_STORE_CREATE, "/x/a"); /* 2 */
    put(st, KAPI_STORE_UPDATE, "/w/a"); /* 3 */
    wlog l = {0};
    kapi_buf_init(&l.b);
    kapi_store_watch *w = NULL;
    int64_t oldest = -1;
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 1, record, &l, &w, &oldest),
                 KAPI_STORE_OK);
    CHECK_STR_EQ(l.b.ptr, "PUT /w/a@3+prev;");
    put(st, KAPI_STORE_CREATE, "/w/b"); /* 4 */
    put(st, KAPI_STORE_DELETE, "/w/a"); /* 5 */
    put(st, KAPI_STORE_CREATE, "/x/b"); /* 6 */
    kapi_store_watch_progress(st, w);
    kapi_store_watch_stop(st, w);
    put(st, KAPI_STORE_CREATE, "/w/c"); /* not seen: stopped */
    CHECK_STR_EQ(l.b.ptr, "PUT /w/a@3+prev;PUT /w/b@4;DEL /w/a@5+prev;PROGRESS -@6;");
    kapi_buf_dispose(&l.b);
    kapi_store_free(st);
}

TEST(store_watch_ahead_and_false)
{
    kapi_store *st = open_tmp(0);
    wlog l = {.stop_after = 2};
    kapi_buf_init(&l.b);
    kapi_store_watch *w = NULL;
    int64_t oldest;
    /* from a revision the store has not reached: changes up to it are skipped */
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 2, record, &l, &w, &oldest),
                 KAPI_STORE_OK);
    kapi_store_watch_progress(st, w);   /* progress never says less than the start */
    put(st, KAPI_STORE_CREATE, "/w/a"); /* 1 */
    put(st, KAPI_STORE_CREATE, "/w/b"); /* 2 */
    put(st, KAPI_STORE_CREATE, "/w/c"); /* 3: the second call, which stops the watch */
    put(st, KAPI_STORE_CREATE, "/w/d"); /* 4 */
    kapi_store_watch_stop(st, w);
    CHECK_STR_EQ(l.b.ptr, "PROGRESS -@2;PUT /w/c@3;");
    kapi_buf_dispose(&l.b);
    kapi_store_free(st);
}

/* The bytes of the object a watch event carries, as a string. */
static bool record_bytes(void *ctx, const kapi_store_event *ev)
{
    wlog *l = ctx;
    kapi_buf_printf(&l->b, "%.*s<%.*s;", (int)ev->obj->len, ev->obj->data,
                    ev->prev ? (int)ev->prev->len : 0, ev->prev ? ev->prev->data : "");
    return true;
}

static void put_value(kapi_store *st, kapi_store_op op, const char *key, const char *v)
{
    kapi_store_write w = {.op = op, .key = kapi_str_c(key), .value = kapi_str_c(v), .rv_off = 1};
    if (kapi_store_commit(st, &w) != KAPI_STORE_OK)
        test_fail(__FILE__, __LINE__, "commit %s failed", key);
    kapi_obj_unref(w.result);
}

TEST(store_watch_history_survives_reopen)
{
    kapi_store *st = open_tmp(0);
    put_value(st, KAPI_STORE_CREATE, "/w/a", "[,\"a1\"]"); /* 1 */
    put_value(st, KAPI_STORE_CREATE, "/w/b", "[,\"b1\"]"); /* 2 */
    put_value(st, KAPI_STORE_UPDATE, "/w/a", "[,\"a2\"]"); /* 3 */
    put_value(st, KAPI_STORE_CREATE, "/x/a", "[,\"x1\"]"); /* 4 */
    put_value(st, KAPI_STORE_DELETE, "/w/b", "");          /* 5 */
    put_value(st, KAPI_STORE_UPDATE, "/w/a", "[,\"a3\"]"); /* 6 */
    CHECK_INT_EQ(kapi_store__compact(st, 1), 0);           /* the window starts after 1 */
    kapi_store_free(st);

    /* every change after the compacted revision comes back, with its previous state */
    st = open_tmp(0);
    wlog l = {0};
    kapi_buf_init(&l.b);
    kapi_store_watch *w = NULL;
    int64_t oldest = -1;
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 1, record, &l, &w, &oldest),
                 KAPI_STORE_OK);
    CHECK_STR_EQ(l.b.ptr, "PUT /w/b@2;PUT /w/a@3+prev;DEL /w/b@5+prev;PUT /w/a@6+prev;");
    put(st, KAPI_STORE_CREATE, "/w/c"); /* 7: live ones follow */
    kapi_store_watch_stop(st, w);
    CHECK_STR_EQ(l.b.ptr, "PUT /w/b@2;PUT /w/a@3+prev;DEL /w/b@5+prev;PUT /w/a@6+prev;PUT /w/c@7;");

    /* the bytes: each change's state and the one before it (from before the window too) */
    kapi_buf_clear(&l.b);
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/a"), 1, record_bytes, &l, &w, &oldest),
                 KAPI_STORE_OK);
    kapi_store_watch_stop(st, w);
    CHECK_STR_EQ(l.b.ptr, "[3,\"a2\"]<[1,\"a1\"];[6,\"a3\"]<[3,\"a2\"];");
    kapi_buf_clear(&l.b);
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/b"), 2, record_bytes, &l, &w, &oldest),
                 KAPI_STORE_OK);
    kapi_store_watch_stop(st, w);
    CHECK_STR_EQ(l.b.ptr, "[5,\"b1\"]<[2,\"b1\"];");

    /* before the compacted revision: gone, and the oldest start is named */
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 0, record, &l, &w, &oldest),
                 KAPI_STORE_GONE);
    CHECK_INT_EQ(oldest, 1);
    kapi_buf_dispose(&l.b);
    kapi_store_free(st);
}

TEST(store_watch_floor)
{
    kapi_store *st = open_tmp(1);
    put(st, KAPI_STORE_CREATE, "/w/a"); /* 1 */
    put(st, KAPI_STORE_CREATE, "/w/b"); /* 2 */
    kapi_store_free(st);
    /* a reopened store keeps the changes of its window: a watch may start before it */
    st = open_tmp(1);
    wlog l = {0};
    kapi_buf_init(&l.b);
    kapi_store_watch *w = NULL;
    int64_t oldest = -1;
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 1, record, &l, &w, &oldest),
                 KAPI_STORE_OK);
    kapi_store_watch_stop(st, w);
    CHECK_STR_EQ(l.b.ptr, "PUT /w/b@2;");
    kapi_buf_clear(&l.b);
    put(st, KAPI_STORE_CREATE, "/w/c"); /* 3 */
    /* once the window has passed, the change leaves and the floor rises */
    kapi_store_stats stats = {0};
    for (int i = 0; i < 40 && stats.compacted < 3; i++) {
        usleep(100 * 1000);
        kapi_store__stats(st, &stats);
    }
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 2, record, &l, &w, &oldest),
                 KAPI_STORE_GONE);
    CHECK_INT_EQ(oldest, 3);
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 3, record, &l, &w, &oldest),
                 KAPI_STORE_OK);
    kapi_store_watch_stop(st, w);
    CHECK_STR_EQ(l.b.ptr, "");
    kapi_buf_dispose(&l.b);
    kapi_store_free(st);
}

/* The window is measured in real time across restarts: what left it while the store was
 * closed is gone at the next open, and a restart does not make old changes young again. */
TEST(store_watch_window_spans_restarts)
{
    kapi_store *st = open_tmp(1);
    put(st, KAPI_STORE_CREATE, "/w/a"); /* 1 */
    put(st, KAPI_STORE_CREATE, "/w/b"); /* 2 */
    kapi_store_free(st);
    usleep(1200 * 1000);
    st = open_tmp(1);
    kapi_store_stats stats = {0};
    kapi_store__stats(st, &stats);
    CHECK_INT_EQ(stats.compacted, 2);
    wlog l = {0};
    kapi_buf_init(&l.b);
    kapi_store_watch *w = NULL;
    int64_t oldest = -1;
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 1, record, &l, &w, &oldest),
                 KAPI_STORE_GONE);
    CHECK_INT_EQ(oldest, 2);
    put(st, KAPI_STORE_CREATE, "/w/c"); /* 3 */
    kapi_store_free(st);
    /* reopened at once, 3 is still in the window, and leaves it on time */
    st = open_tmp(1);
    CHECK_INT_EQ(kapi_store_watch_start(st, KAPI_STR("/w/"), 2, record, &l, &w, &oldest),
                 KAPI_STORE_OK);
    kapi_store_watch_stop(st, w);
    CHECK_STR_EQ(l.b.ptr, "PUT /w/c@3;");
    kapi_store_free(st);
    usleep(1200 * 1000);
    st = open_tmp(1);
    kapi_store__stats(st, &stats);
    CHECK_INT_EQ(stats.compacted, 3);
    kapi_buf_dispose(&l.b);
    kapi_store_free(st);
}

TEST(store_wait_revision)
{
    kapi_store *st = open_tmp(0);
    CHECK(kapi_store_wait_revision(st, 0, 10));
    CHECK(!kapi_store_wait_revision(st, 1, 50));
    put(st, KAPI_STORE_CREATE, "/w/a");
    CHECK(kapi_store_wait_revision(st, 1, 10));
    kapi_store_free(st);
}
