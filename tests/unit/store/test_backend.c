/* The backend contract of store_int.h, driven directly through kapi_store_backend_ops:
 * commit with each outcome (created, exists, not found, conflicts on update and delete,
 * the batch's earlier writes seen by its later ones, nothing numbered when nothing
 * passes), follow from a revision (the changes committed before it, then each commit's),
 * and load after a reopen and a compaction. Every test runs over each backend of the
 * BACKENDS table, so that another backend (etcd) is checked by adding its row. */
#include "store/store_int.h"
#include "test.h"

#include <inttypes.h>

typedef struct backend_case {
    const char *name;
    const kapi_store_backend_ops *ops;
} backend_case;

static const backend_case BACKENDS[] = {
    {"sqlite", &kapi_store__sqlite_ops},
};

/* A backend under test, with what its follower was handed. */
typedef struct tb {
    const backend_case *bc;
    void *b;
    kapi_buf followed; /* "|" per call, then "C /k@rev;" per row */
    kapi_store__index state;
} tb;

static void tb_open(tb *t, const backend_case *bc)
{
    char *path = kapi_xprintf("%s/%s.db", test_tmpdir(), bc->name);
    kapi_store_options opts = {.path = path};
    t->bc = bc;
    kapi_error *err = bc->ops->open(&t->b, &opts);
    if (err)
        test_fail(__FILE__, __LINE__, "%s: open: %s", bc->name, err->message);
    kapi_buf_init(&t->followed);
    kapi_store__index_init(&t->state);
    free(path);
}

static void tb_close(tb *t)
{
    t->bc->ops->close(t->b);
    kapi_buf_dispose(&t->followed);
    kapi_store__index_dispose(&t->state);
}

/* Checks that a row's bytes hold its revision's digits at rv_off. */
static void check_stamped(const kapi_store_row *row)
{
    char digits[24];
    int nd = snprintf(digits, sizeof(digits), "%" PRId64, row->rev);
    CHECK(row->rv_off + (size_t)nd <= row->value.len);
    CHECK(memcmp(row->value.ptr + row->rv_off, digits, (size_t)nd) == 0);
}

/* Applies a row to the state kept as a cache would. */
static void keep(tb *t, const kapi_store_row *row)
{
    check_stamped(row);
    if (row->op == KAPI_STORE_DELETE)
        kapi_store__index_remove(&t->state, row->key);
    else
        kapi_store__index_put(&t->state, kapi_store__obj_load(row));
}

static void on_follow(void *ctx, const kapi_store_row *rows, size_t n, int64_t rev)
{
    static const char OPS[] = "CUD";
    tb *t = ctx;
    CHECK(n == 0 || rev == rows[n - 1].rev);
    kapi_buf_putc(&t->followed, '|');
    for (size_t i = 0; i < n; i++) {
        kapi_buf_printf(&t->followed, "%c %.*s@%" PRId64 "/%" PRId64 ";", OPS[rows[i].op],
                        (int)rows[i].key.len, rows[i].key.ptr, rows[i].rev, rows[i].create_rev);
        keep(t, &rows[i]);
    }
}

static int on_load(void *ctx, const kapi_store_row *row)
{
    keep(ctx, row);
    return 0;
}

static void tb_follow(tb *t, int64_t after)
{
    CHECK_INT_EQ(t->bc->ops->follow(t->b, after, on_follow, NULL, t), 0);
}

/* The kept state as "key=bytes,key=bytes". */
static char *state_str(tb *t)
{
    kapi_store_list_result l;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_store__index_list(&t->state, KAPI_STR(""), KAPI_STR(""), 0, &l);
    for (size_t i = 0; i < l.n; i++)
        kapi_buf_printf(&b, "%s%s=%s", i ? "," : "", l.items[i]->key, l.items[i]->data);
    kapi_store_list_dispose(&l);
    return kapi_buf_detach(&b, NULL);
}

/* One write of a batch: {"v":"<v>","rv":""} with the gap inside the rv quotes. */
typedef struct spec {
    kapi_store_op op;
    const char *key;
    const char *v;
    int64_t expect;
} spec;

static const char *const RC_NAMES[] = {"OK",   "NOT_FOUND", "EXISTS", "CONFLICT",
                                       "GONE", "TOO_NEW",   "IO"};

/* Renders a write's outcome: "OK@rev/create_rev bytes", "CONFLICT(current bytes)" or the
 * code's name; checks that the OUT members match the code. */
static void outcome(kapi_buf *b, const kapi_store_txn_write *t)
{
    kapi_buf_puts(b, RC_NAMES[-t->rc]);
    CHECK((t->rc == KAPI_STORE_OK) == (t->obj != NULL));
    CHECK((t->rc == KAPI_STORE_CONFLICT) == (t->current != NULL));
    if (t->obj)
        kapi_buf_printf(b, "@%" PRId64 "/%" PRId64 " %s", t->obj->rev, t->obj->create_rev,
                        t->obj->data);
    if (t->current)
        kapi_buf_printf(b, "(%s)", t->current->data);
    kapi_buf_putc(b, ';');
}

/* Commits the specs as one batch; returns the outcomes, one a line. */
static char *commit_specs(tb *t, const spec *specs, size_t n)
{
    kapi_store_write *w = kapi_xcalloc(n, sizeof(*w));
    kapi_store_txn_write *tx = kapi_xcalloc(n, sizeof(*tx));
    char **bufs = kapi_xcalloc(n, sizeof(*bufs));
    kapi_buf out;
    kapi_buf_init(&out);
    for (size_t i = 0; i < n; i++) {
        bufs[i] = kapi_xprintf("{\"v\":\"%s\",\"rv\":\"\"}", specs[i].v ? specs[i].v : "");
        w[i] = (kapi_store_write){
            .op = specs[i].op,
            .key = kapi_str_c(specs[i].key),
            .expect_rev = specs[i].expect,
            .value = kapi_str_c(bufs[i]),
            .rv_off = strlen(bufs[i]) - 2,
        };
        tx[i].w = &w[i];
    }
    CHECK_INT_EQ(t->bc->ops->commit(t->b, tx, n), 0);
    for (size_t i = 0; i < n; i++) {
        outcome(&out, &tx[i]);
        kapi_buf_putc(&out, '\n');
        kapi_obj_unref(tx[i].obj);
        kapi_obj_unref(tx[i].current);
        free(bufs[i]);
    }
    free(bufs);
    free(tx);
    free(w);
    return kapi_buf_detach(&out, NULL);
}

#define CHECK_OWNED(expr, want)                                                                    \
    do {                                                                                           \
        char *got_ = (expr);                                                                       \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

#define C KAPI_STORE_CREATE
#define U KAPI_STORE_UPDATE
#define D KAPI_STORE_DELETE

/* Every outcome of a write, decided by the backend, in one batch after a first one: the
 * later writes of a batch see the earlier ones, and only the writes that pass take
 * revisions, consecutive and in batch order. */
TEST(store_backend_commit_outcomes)
{
    for (size_t c = 0; c < KAPI_ARRAY_LEN(BACKENDS); c++) {
        tb t;
        tb_open(&t, &BACKENDS[c]);
        tb_follow(&t, 0);
        static const spec first[] = {{C, "/a", "a1", 0}, {C, "/b", "b1", 0}};
        CHECK_OWNED(commit_specs(&t, first, 2), "OK@1/1 {\"v\":\"a1\",\"rv\":\"1\"};\n"
                                                "OK@2/2 {\"v\":\"b1\",\"rv\":\"2\"};\n");
        static const spec second[] = {
            {C, "/a", "x", 0},  /* the key is live */
            {U, "/c", "x", 0},  /* no such key */
            {D, "/c", NULL, 0}, /* no such key */
            {U, "/a", "x", 2},  /* /a is at 1 */
            {U, "/a", "a2", 1}, /* compare-and-swap passes: 3 */
            {D, "/b", NULL, 1}, /* /b is at 2 */
            {D, "/b", NULL, 2}, /* 4: the last state stamped with the deletion's revision */
            {U, "/b", "x", 0},  /* deleted by the write before */
            {C, "/b", "b2", 0}, /* created again: 5 */
            {U, "/a", "a3", 0}, /* unconditional: 6 */
        };
        CHECK_OWNED(commit_specs(&t, second, KAPI_ARRAY_LEN(second)),
                    "EXISTS;\nNOT_FOUND;\nNOT_FOUND;\n"
                    "CONFLICT({\"v\":\"a1\",\"rv\":\"1\"});\n"
                    "OK@3/1 {\"v\":\"a2\",\"rv\":\"3\"};\n"
                    "CONFLICT({\"v\":\"b1\",\"rv\":\"2\"});\n"
                    "OK@4/2 {\"v\":\"b1\",\"rv\":\"4\"};\n"
                    "NOT_FOUND;\n"
                    "OK@5/5 {\"v\":\"b2\",\"rv\":\"5\"};\n"
                    "OK@6/1 {\"v\":\"a3\",\"rv\":\"6\"};\n");
        /* each commit's rows in one call, in revision order */
        CHECK_STR_EQ(t.followed.ptr, "|C /a@1/1;C /b@2/2;|U /a@3/1;D /b@4/2;C /b@5/5;U /a@6/1;");
        CHECK_OWNED(state_str(&t), "/a={\"v\":\"a3\",\"rv\":\"6\"},/b={\"v\":\"b2\",\"rv\":\"5\"}");
        tb_close(&t);
    }
}

/* A batch in which nothing passes commits nothing: the follower hears nothing and the
 * next write takes the next revision. */
TEST(store_backend_commit_nothing_passes)
{
    for (size_t c = 0; c < KAPI_ARRAY_LEN(BACKENDS); c++) {
        tb t;
        tb_open(&t, &BACKENDS[c]);
        tb_follow(&t, 0);
        static const spec one[] = {{C, "/a", "a1", 0}};
        CHECK_OWNED(commit_specs(&t, one, 1), "OK@1/1 {\"v\":\"a1\",\"rv\":\"1\"};\n");
        static const spec none[] = {{C, "/a", "x", 0}, {U, "/a", "x", 7}, {D, "/z", NULL, 0}};
        CHECK_OWNED(commit_specs(&t, none, 3),
                    "EXISTS;\nCONFLICT({\"v\":\"a1\",\"rv\":\"1\"});\nNOT_FOUND;\n");
        static const spec next[] = {{D, "/a", NULL, 1}};
        CHECK_OWNED(commit_specs(&t, next, 1), "OK@2/1 {\"v\":\"a1\",\"rv\":\"2\"};\n");
        CHECK_STR_EQ(t.followed.ptr, "|C /a@1/1;|D /a@2/1;");
        CHECK_OWNED(state_str(&t), "");
        tb_close(&t);
    }
}

/* Writes revisions 1..6 through a first opening of the backend. */
static void write_history(const backend_case *bc)
{
    tb t;
    tb_open(&t, bc);
    static const spec w[] = {
        {C, "/a", "a1", 0}, {C, "/b", "b1", 0}, {U, "/a", "a2", 0},
        {D, "/b", NULL, 0}, {C, "/c", "c1", 0}, {U, "/c", "c2", 5},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(w); i++)
        free(commit_specs(&t, &w[i], 1));
    tb_close(&t);
}

/* follow from a revision: the changes committed after it (bytes and all), each once and
 * in order, then the next commit's. */
TEST(store_backend_follow_from)
{
    for (size_t c = 0; c < KAPI_ARRAY_LEN(BACKENDS); c++) {
        write_history(&BACKENDS[c]);
        tb t;
        tb_open(&t, &BACKENDS[c]);
        tb_follow(&t, 3);
        CHECK_STR_EQ(t.followed.ptr, "|D /b@4/2;|C /c@5/5;|U /c@6/5;");
        CHECK_OWNED(state_str(&t), "/c={\"v\":\"c2\",\"rv\":\"6\"}");
        static const spec more[] = {{U, "/a", "a3", 3}};
        CHECK_OWNED(commit_specs(&t, more, 1), "OK@7/1 {\"v\":\"a3\",\"rv\":\"7\"};\n");
        CHECK_STR_EQ(t.followed.ptr, "|D /b@4/2;|C /c@5/5;|U /c@6/5;|U /a@7/1;");
        tb_close(&t);

        tb_open(&t, &BACKENDS[c]);
        tb_follow(&t, 7);
        CHECK_STR_EQ(t.followed.ptr, "");
        tb_close(&t);
    }
}

/* load then follow from its base revision give the latest state, also after a
 * compaction; reads older than the compacted revision are gone. */
TEST(store_backend_load_after_compact)
{
    for (size_t c = 0; c < KAPI_ARRAY_LEN(BACKENDS); c++) {
        const kapi_store_backend_ops *ops = BACKENDS[c].ops;
        write_history(&BACKENDS[c]);
        tb t;
        tb_open(&t, &BACKENDS[c]);
        CHECK_INT_EQ(ops->compact(t.b, 4), 0);
        tb_close(&t);

        tb_open(&t, &BACKENDS[c]);
        int64_t base = -1, compacted = -1;
        kapi_error *err = ops->load(t.b, on_load, &t, &base, &compacted);
        CHECK(err == NULL);
        CHECK_INT_EQ(compacted, 4);
        CHECK(base >= compacted && base <= 6);
        tb_follow(&t, base);
        CHECK_OWNED(state_str(&t), "/a={\"v\":\"a2\",\"rv\":\"3\"},/c={\"v\":\"c2\",\"rv\":\"6\"}");

        kapi_store_list_opts q = {.prefix = KAPI_STR("/"), .rev = 3};
        size_t remaining = 0;
        CHECK_INT_EQ(ops->read_history(t.b, &q, on_load, &t, &remaining), KAPI_STORE_GONE);
        static const spec w[] = {{C, "/b", "b2", 0}, {U, "/c", "x", 5}};
        CHECK_OWNED(
            commit_specs(&t, w, 2),
            "OK@7/7 {\"v\":\"b2\",\"rv\":\"7\"};\nCONFLICT({\"v\":\"c2\",\"rv\":\"6\"});\n");
        tb_close(&t);
    }
}
