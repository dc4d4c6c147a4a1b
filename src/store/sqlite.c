/*
 * sqlite: the embedded backend (docs/DESIGN.md, "The store").
 *
 * One table `log` holds a row per revision: (rev, key, op, create_rev, rv_off, value) with
 * value the stamped JSON bytes (for DELETE, the last state stamped with the deletion's
 * revision). An index on (key, rev, op) finds a key's latest row when a write is decided,
 * and serves compaction and history reads (it covers the search for each key's state at a
 * revision, so the table is read only for the rows returned, not for those merely
 * counted). Table `meta` records the compacted revision: history older than it is gone.
 * Table `marks` records when (wall clock) the store was at which revision, so that after a
 * restart the history window still ends where it would have.
 *
 * Table `meta` also records the key layout: 1 for keys written before the registry laid
 * them out as kube-apiserver does, moved to 2 at open by the rekeys the opener gives.
 *
 * Compaction to C leaves at most one row per key at or before C, the key's state at C, and
 * no DELETE row there: the rows at or before C are the state at C (what load streams), and
 * the rows after it are the changes since (what follow streams).
 *
 * Writes are decided here, inside the commit's transaction, against the log itself: a
 * write reads its key's latest row (the batch's earlier writes included, as the
 * transaction sees its own rows), and the revision counter is the log's. A commit hands
 * its rows to the follower after COMMIT, as the objects it made, so the cache shares them.
 *
 * Durability: WAL journal with synchronous=FULL, so a committed transaction has been
 * fsync'd (the write connection's VFS joins consecutive writes and relies on that sync:
 * gather.c). The committer thread owns the write connection; history reads use a pool of
 * read connections, each in its own read transaction (a WAL snapshot), so they see a
 * consistent log while writes and compactions go on.
 */
#include "store/store_int.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log.h"

#define BUSY_TIMEOUT_MS 5000

static const char SCHEMA[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS log(rev INTEGER PRIMARY KEY, key BLOB NOT NULL,"
    " op INTEGER NOT NULL, create_rev INTEGER NOT NULL, rv_off INTEGER NOT NULL,"
    " value BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS log_key ON log(key, rev, op);"
    "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO meta VALUES('compacted', 0);"
    "INSERT OR IGNORE INTO meta SELECT 'layout', 1 WHERE EXISTS (SELECT 1 FROM log);"
    "INSERT OR IGNORE INTO meta VALUES('layout', 2);"
    "CREATE TABLE IF NOT EXISTS marks(rev INTEGER PRIMARY KEY, unix_ns INTEGER NOT NULL);";

static const char SQL_INSERT[] =
    "INSERT INTO log(rev, key, op, create_rev, rv_off, value) VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
static const char SQL_COMPACTED[] = "SELECT value FROM meta WHERE name = 'compacted'";
static const char SQL_LAST_REV[] = "SELECT max(rev) FROM log";
/* The state at the compacted revision ?1: each key's last row at or before it, unless a
 * DELETE (compaction leaves only those rows there; the query does not rely on it). */
static const char SQL_LOAD[] =
    "SELECT rev, key, op, create_rev, rv_off, value FROM log AS o WHERE rev <= ?1 AND op != 2"
    " AND NOT EXISTS (SELECT 1 FROM log AS n WHERE n.key = o.key AND n.rev > o.rev"
    " AND n.rev <= ?1)";
/* The row with max(rev) of each group supplies the bare column op (SQLite guarantees it). */
static const char SQL_HISTORY[] =
    "SELECT max(rev), op FROM log"
    " WHERE key >= ?1 AND key > ?2 AND key < ?3 AND rev <= ?4 GROUP BY key ORDER BY key";
static const char SQL_HISTORY_OPEN[] =
    "SELECT max(rev), op FROM log"
    " WHERE key >= ?1 AND key > ?2 AND rev <= ?4 GROUP BY key ORDER BY key";
static const char SQL_ROW[] =
    "SELECT rev, key, op, create_rev, rv_off, value FROM log WHERE rev = ?1";
static const char SQL_CHANGES[] =
    "SELECT rev, key, op, create_rev, rv_off, value FROM log WHERE rev > ?1 ORDER BY rev";
/* A key's latest row: (rev, op, create_rev). A CREATE needs only whether it is live,
 * which the index answers alone (SQL_LIVE does not open the table). */
static const char SQL_HEAD[] =
    "SELECT rev, op, create_rev FROM log WHERE key = ?1 ORDER BY rev DESC LIMIT 1";
static const char SQL_LIVE[] =
    "SELECT rev, op, 0 FROM log WHERE key = ?1 ORDER BY rev DESC LIMIT 1";

/* The write connection's statements of a commit, prepared once: parsing even BEGIN and
 * COMMIT again for every batch would cost more than deciding its writes. */
enum { STMT_INSERT, STMT_HEAD, STMT_LIVE, STMT_ROW, STMT_BEGIN, STMT_COMMIT, STMT_ROLLBACK, NSTMT };
static const char *const STMT_SQL[NSTMT] = {
    [STMT_INSERT] = SQL_INSERT,   [STMT_HEAD] = SQL_HEAD,           [STMT_LIVE] = SQL_LIVE,
    [STMT_ROW] = SQL_ROW,         [STMT_BEGIN] = "BEGIN IMMEDIATE", [STMT_COMMIT] = "COMMIT",
    [STMT_ROLLBACK] = "ROLLBACK",
};
static const char SQL_COMPACT_SUPERSEDED[] =
    "DELETE FROM log WHERE rev IN (SELECT o.rev FROM log AS n JOIN log AS o"
    " ON o.key = n.key AND o.rev < n.rev WHERE n.rev > ?1 AND n.rev <= ?2)";
static const char SQL_COMPACT_DELETED[] = "DELETE FROM log WHERE rev > ?1 AND rev <= ?2 AND op = 2";
static const char SQL_SET_COMPACTED[] = "UPDATE meta SET value = ?2 WHERE name = 'compacted'";
static const char SQL_DROP_MARKS[] = "DELETE FROM marks WHERE rev <= ?2";
static const char SQL_SAVE_MARK[] = "INSERT OR REPLACE INTO marks(rev, unix_ns) VALUES(?1, ?2)";
static const char SQL_MARKS[] = "SELECT rev, unix_ns FROM marks ORDER BY rev";

/* A read connection of the pool. */
typedef struct reader {
    sqlite3 *db;
    struct reader *next;
} reader;

typedef struct sqlite_backend {
    char *path;
    sqlite3 *db; /* the write connection: the committer's */
    sqlite3_stmt *stmt[NSTMT];
    int64_t compacted;
    int64_t rev; /* the last committed revision */
    kapi_store_follow_fn follow;
    void *follow_ctx;
    kapi_store_row *rows; /* a commit's rows, for the follower */
    size_t rows_cap;
    pthread_mutex_t pool_lock;
    reader *idle;
} sqlite_backend;

static void report(sqlite3 *db, const char *what)
{
    KAPI_LOG_ERROR("store: sqlite: %s: %s", what, sqlite3_errmsg(db));
}

/* Opens a connection; init (the schema) marks the write connection, which writes through
 * the gathering VFS (gather.c). */
static kapi_error *db_open(sqlite3 **out, const char *path, const char *init)
{
    kapi_error *err = NULL;
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    const char *vfs = init ? kapi_store__gather_vfs() : NULL;
    if (sqlite3_open_v2(path, &db, flags, vfs) != SQLITE_OK ||
        sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS) != SQLITE_OK ||
        (init && sqlite3_exec(db, init, NULL, NULL, NULL) != SQLITE_OK)) {
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: %s: %s", path,
                             db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        db = NULL;
    }
    *out = db;
    return err;
}

static int exec(sqlite3 *db, const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    report(db, sql);
    return -1;
}

/* Runs a one-value query; *out gets the integer (0 for NULL). */
static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *s = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        goto done;
    int step = sqlite3_step(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        goto done;
    *out = step == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    rc = 0;
done:
    if (rc)
        report(db, sql);
    sqlite3_finalize(s);
    return rc;
}

static void bind_str(sqlite3_stmt *s, int i, kapi_str v)
{
    /* A zero-length blob, not NULL, for the empty slice. */
    sqlite3_bind_blob(s, i, v.len ? v.ptr : "", (int)v.len, SQLITE_STATIC);
}

static kapi_str column_str(sqlite3_stmt *s, int i)
{
    const void *p = sqlite3_column_blob(s, i);
    return (kapi_str){p ? p : "", (size_t)sqlite3_column_bytes(s, i)};
}

static void column_row(sqlite3_stmt *s, kapi_store_row *row)
{
    row->obj = NULL;
    row->rev = sqlite3_column_int64(s, 0);
    row->key = column_str(s, 1);
    row->op = (kapi_store_op)sqlite3_column_int(s, 2);
    row->create_rev = sqlite3_column_int64(s, 3);
    row->rv_off = (uint32_t)sqlite3_column_int64(s, 4);
    row->value = column_str(s, 5);
}

/* Steps a row query to its end, handing every row to fn. */
static int stream(sqlite3_stmt *s, kapi_store_row_fn fn, void *ctx)
{
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        kapi_store_row row;
        column_row(s, &row);
        if (fn(ctx, &row) != 0)
            return 0;
    }
    return step == SQLITE_DONE ? 0 : -1;
}

static void backend_close(void *p)
{
    sqlite_backend *b = p;
    if (!b)
        return;
    while (b->idle) {
        reader *r = b->idle;
        b->idle = r->next;
        sqlite3_close(r->db);
        free(r);
    }
    for (int i = 0; i < NSTMT; i++)
        sqlite3_finalize(b->stmt[i]);
    sqlite3_close(b->db);
    free(b->rows);
    pthread_mutex_destroy(&b->pool_lock);
    free(b->path);
    free(b);
}

/* One prefix move of the layout migration: renames each key starting with r->from. */
static int rekey(sqlite3 *db, const kapi_store_rekey *r)
{
    sqlite3_stmt *sel = NULL, *upd = NULL;
    int rc = -1, step;
    char *upper = kapi_xmalloc(r->from.len + 1);
    kapi_buf key;
    kapi_buf_init(&key);
    /* The keys from `from` up to, not including, `from` with its last byte raised. */
    memcpy(upper, r->from.ptr, r->from.len);
    upper[r->from.len - 1]++;
    if (sqlite3_prepare_v2(db, "SELECT rev, key FROM log WHERE key >= ?1 AND key < ?2", -1, &sel,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "UPDATE log SET key = ?2 WHERE rev = ?1", -1, &upd, NULL) !=
            SQLITE_OK)
        goto done;
    bind_str(sel, 1, r->from);
    bind_str(sel, 2, (kapi_str){upper, r->from.len});
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        kapi_str old = column_str(sel, 1);
        key.len = 0;
        kapi_buf_put(&key, r->to.ptr, r->to.len);
        kapi_buf_put(&key, old.ptr + r->from.len, old.len - r->from.len);
        sqlite3_bind_int64(upd, 1, sqlite3_column_int64(sel, 0));
        bind_str(upd, 2, (kapi_str){key.ptr, key.len});
        if (sqlite3_step(upd) != SQLITE_DONE)
            goto done;
        sqlite3_reset(upd);
    }
    rc = step == SQLITE_DONE ? 0 : -1;
done:
    if (rc)
        report(db, "moving keys to the new layout");
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    kapi_buf_dispose(&key);
    free(upper);
    return rc;
}

/* Moves the keys of layout 1 to layout 2 in one transaction, once. */
static int migrate_layout(sqlite3 *db, const kapi_store_options *opts)
{
    int64_t layout = 0;
    if (query_int(db, "SELECT value FROM meta WHERE name = 'layout'", &layout) != 0)
        return -1;
    if (layout >= 2)
        return 0;
    if (exec(db, "BEGIN IMMEDIATE") != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < opts->nrekeys && rc == 0; i++)
        if (opts->rekeys[i].from.len)
            rc = rekey(db, &opts->rekeys[i]);
    if (rc == 0)
        rc = exec(db, "UPDATE meta SET value = 2 WHERE name = 'layout'");
    return exec(db, rc == 0 ? "COMMIT" : "ROLLBACK") == 0 ? rc : -1;
}

static kapi_error *backend_open(void **out, const kapi_store_options *opts)
{
    kapi_error *err = NULL;
    sqlite_backend *b = kapi_xcalloc(1, sizeof(*b));
    b->path = kapi_xstrdup(opts->path);
    pthread_mutex_init(&b->pool_lock, NULL);
    if ((err = db_open(&b->db, b->path, SCHEMA)) != NULL)
        goto done;
    if (migrate_layout(b->db, opts) != 0) {
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                             "store: %s: cannot move the keys to the new layout", b->path);
        goto done;
    }
    for (int i = 0; i < NSTMT && !err; i++) {
        if (sqlite3_prepare_v3(b->db, STMT_SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &b->stmt[i],
                               NULL) != SQLITE_OK)
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: %s: %s", b->path,
                                 sqlite3_errmsg(b->db));
    }
    if (err)
        goto done;
    if (query_int(b->db, SQL_COMPACTED, &b->compacted) != 0 ||
        query_int(b->db, SQL_LAST_REV, &b->rev) != 0)
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: %s: %s", b->path,
                             sqlite3_errmsg(b->db));
    /* Compaction drops DELETE rows: the last revision may be one no row holds now. */
    if (b->rev < b->compacted)
        b->rev = b->compacted;
done:
    if (err) {
        backend_close(b);
        b = NULL;
    }
    *out = b;
    return err;
}

static kapi_error *backend_load(void *p, kapi_store_row_fn fn, void *ctx, int64_t *base_rev,
                                int64_t *compacted_rev)
{
    sqlite_backend *b = p;
    sqlite3_stmt *s = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(b->db, SQL_LOAD, -1, &s, NULL) != SQLITE_OK)
        goto done;
    sqlite3_bind_int64(s, 1, b->compacted);
    rc = stream(s, fn, ctx);
done:
    sqlite3_finalize(s);
    if (rc)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "store: %s: load: %s", b->path,
                              sqlite3_errmsg(b->db));
    *base_rev = *compacted_rev = b->compacted;
    return NULL;
}

/* Hands one streamed row to the follower. */
static int follow_row(void *ctx, const kapi_store_row *row)
{
    sqlite_backend *b = ctx;
    b->follow(b->follow_ctx, row, 1, row->rev);
    return 0;
}

/* SQLite is its own data's one writer: it never loses a change, so never resets. */
static int backend_follow(void *p, int64_t after, kapi_store_follow_fn fn,
                          kapi_store_reset_fn reset, void *ctx)
{
    (void)reset;
    sqlite_backend *b = p;
    sqlite3_stmt *s = NULL;
    int rc = -1;
    b->follow = fn;
    b->follow_ctx = ctx;
    if (sqlite3_prepare_v2(b->db, SQL_CHANGES, -1, &s, NULL) != SQLITE_OK)
        goto done;
    sqlite3_bind_int64(s, 1, after);
    rc = stream(s, follow_row, b);
done:
    if (rc) {
        report(b->db, "follow");
        b->follow = NULL;
    }
    sqlite3_finalize(s);
    return rc;
}

/* Runs one of the prepared statements that return no row (its parameters bound). */
static int run(sqlite_backend *b, int i)
{
    int step = sqlite3_step(b->stmt[i]);
    sqlite3_reset(b->stmt[i]);
    if (step == SQLITE_DONE)
        return 0;
    report(b->db, STMT_SQL[i]);
    return -1;
}

static int insert_row(sqlite_backend *b, const kapi_store_row *row)
{
    sqlite3_stmt *s = b->stmt[STMT_INSERT];
    sqlite3_bind_int64(s, 1, row->rev);
    bind_str(s, 2, row->key);
    sqlite3_bind_int(s, 3, (int)row->op);
    sqlite3_bind_int64(s, 4, row->create_rev);
    sqlite3_bind_int64(s, 5, row->rv_off);
    bind_str(s, 6, row->value);
    return run(b, STMT_INSERT);
}

/* ---- deciding a write ---- */

/* A key's latest row, as the commit's transaction sees it. */
typedef struct head {
    bool live; /* the key has a row and it is not a DELETE */
    int64_t rev, create_rev;
} head;

/* The rule of each op: what the key's state lets through. */
static kapi_store_rc judge(const kapi_store_write *w, const head *h)
{
    if (w->op == KAPI_STORE_CREATE)
        return h->live ? KAPI_STORE_EXISTS : KAPI_STORE_OK;
    if (!h->live)
        return KAPI_STORE_NOT_FOUND;
    if (w->expect_rev != 0 && w->expect_rev != h->rev)
        return KAPI_STORE_CONFLICT;
    return KAPI_STORE_OK;
}

/* The row at revision rev as an object into *out. Returns 0, or -1 when the database
 * failed or has no such row. */
static int row_obj(sqlite_backend *b, int64_t rev, kapi_obj **out)
{
    sqlite3_stmt *s = b->stmt[STMT_ROW];
    sqlite3_bind_int64(s, 1, rev);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        kapi_store_row row;
        column_row(s, &row);
        *out = kapi_store__obj_load(&row);
    }
    sqlite3_reset(s);
    if (step == SQLITE_ROW)
        return 0;
    report(b->db, "read row");
    return -1;
}

/* The row of a passing write, made of its object. */
static kapi_store_row obj_row(const kapi_store_txn_write *t)
{
    const kapi_obj *o = t->obj;
    return (kapi_store_row){
        .rev = o->rev,
        .create_rev = o->create_rev,
        .op = t->w->op,
        .key = kapi_obj_key(o),
        .value = {o->data, o->len},
        .rv_off = o->rv_off,
        .obj = t->obj,
    };
}

/* The bytes a CREATE or UPDATE writes, stamped with revision rev. */
static kapi_obj *stamped(const kapi_store_write *w, int64_t rev, int64_t create_rev)
{
    const char *v = w->value.ptr ? w->value.ptr : "";
    kapi_str before = {v, w->rv_off}, after = {v + w->rv_off, w->value.len - w->rv_off};
    return kapi_store__obj_new(w->key, rev, create_rev, before, after);
}

/* Writes the row of a write that passed, at revision rev: the written bytes stamped, or
 * for DELETE the key's last state (its row at h->rev) stamped; t->obj gets the object.
 * Returns 0, or -1 when the database failed. */
static int write_row(sqlite_backend *b, kapi_store_txn_write *t, const head *h, int64_t rev)
{
    const kapi_store_write *w = t->w;
    if (w->op == KAPI_STORE_DELETE) {
        kapi_obj *last = NULL;
        if (row_obj(b, h->rev, &last) != 0)
            return -1;
        t->obj = kapi_obj_restamp(last, rev);
        kapi_obj_unref(last);
    } else {
        t->obj = stamped(w, rev, w->op == KAPI_STORE_CREATE ? rev : h->create_rev);
    }
    kapi_store_row row = obj_row(t);
    return insert_row(b, &row);
}

/* Reads the latest row of w's key into *h (for a CREATE, without its create_rev).
 * Returns 0, or -1 when the database failed. */
static int read_head(sqlite_backend *b, const kapi_store_write *w, head *h)
{
    sqlite3_stmt *s = b->stmt[w->op == KAPI_STORE_CREATE ? STMT_LIVE : STMT_HEAD];
    bind_str(s, 1, w->key);
    int step = sqlite3_step(s);
    *h = (head){0};
    if (step == SQLITE_ROW) {
        h->rev = sqlite3_column_int64(s, 0);
        h->live = sqlite3_column_int(s, 1) != KAPI_STORE_DELETE;
        h->create_rev = sqlite3_column_int64(s, 2);
    }
    sqlite3_reset(s);
    if (step == SQLITE_ROW || step == SQLITE_DONE)
        return 0;
    report(b->db, "read head");
    return -1;
}

/* Decides t against the log (the key's latest row, judged) and, when it passes, writes
 * its row at revision rev. Returns 0, or -1 when the database failed. */
static int decide(sqlite_backend *b, kapi_store_txn_write *t, int64_t rev)
{
    head h;
    if (read_head(b, t->w, &h) != 0)
        return -1;
    t->rc = judge(t->w, &h);
    if (t->rc == KAPI_STORE_OK)
        return write_row(b, t, &h, rev);
    if (t->rc == KAPI_STORE_CONFLICT)
        return row_obj(b, h.rev, &t->current);
    return 0;
}

/* A failed transaction: nothing of it happened, so no write keeps an outcome. */
static void undo(kapi_store_txn_write *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        kapi_obj_unref(t[i].obj);
        kapi_obj_unref(t[i].current);
        t[i].obj = t[i].current = NULL;
        t[i].rc = KAPI_STORE_IO;
    }
}

static int backend_commit(void *p, kapi_store_txn_write *t, size_t n)
{
    sqlite_backend *b = p;
    size_t nrows = 0;
    if (n > b->rows_cap) {
        b->rows_cap = n;
        b->rows = kapi_xrealloc(b->rows, n * sizeof(*b->rows));
    }
    if (run(b, STMT_BEGIN) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (decide(b, &t[i], b->rev + 1 + (int64_t)nrows) != 0)
            goto fail;
        if (t[i].obj)
            b->rows[nrows++] = obj_row(&t[i]);
    }
    if (run(b, STMT_COMMIT) != 0)
        goto fail;
    b->rev += (int64_t)nrows;
    if (nrows && b->follow)
        b->follow(b->follow_ctx, b->rows, nrows, b->rev);
    return 0;
fail:
    if (!sqlite3_get_autocommit(b->db))
        run(b, STMT_ROLLBACK);
    undo(t, n);
    return -1;
}

static reader *reader_take(sqlite_backend *b)
{
    pthread_mutex_lock(&b->pool_lock);
    reader *r = b->idle;
    if (r)
        b->idle = r->next;
    pthread_mutex_unlock(&b->pool_lock);
    if (r)
        return r;
    r = kapi_xcalloc(1, sizeof(*r));
    kapi_error *err = db_open(&r->db, b->path, NULL);
    if (err) {
        KAPI_LOG_ERROR("%s", err->message);
        kapi_error_free(err);
        free(r);
        return NULL;
    }
    return r;
}

static void reader_give(sqlite_backend *b, reader *r)
{
    pthread_mutex_lock(&b->pool_lock);
    r->next = b->idle;
    b->idle = r;
    pthread_mutex_unlock(&b->pool_lock);
}

/* The smallest key above every key that starts with prefix, into buf (its length into
 * *len); false when there is none. Keys are byte strings: a NUL is a byte like any other. */
static bool prefix_end(kapi_str prefix, char *buf, size_t *len)
{
    size_t n = prefix.len;
    if (n)
        memcpy(buf, prefix.ptr, n);
    while (n > 0 && (unsigned char)buf[n - 1] == 0xff)
        n--;
    *len = n;
    if (n == 0)
        return false;
    buf[n - 1] = (char)((unsigned char)buf[n - 1] + 1);
    return true;
}

/* Hands the row at rev to fn. */
static int emit_row(sqlite3_stmt *row, int64_t rev, kapi_store_row_fn fn, void *ctx)
{
    sqlite3_bind_int64(row, 1, rev);
    int rc = sqlite3_step(row) == SQLITE_ROW ? 0 : -1;
    if (rc == 0) {
        kapi_store_row r;
        column_row(row, &r);
        fn(ctx, &r);
    }
    sqlite3_reset(row);
    return rc;
}

/* Walks each key's state at the revision: live ones are returned up to the limit, then
 * counted. */
static int walk_history(sqlite3_stmt *keys, sqlite3_stmt *row, size_t limit, kapi_store_row_fn fn,
                        void *ctx, size_t *remaining)
{
    size_t n = 0;
    int step;
    while ((step = sqlite3_step(keys)) == SQLITE_ROW) {
        if (sqlite3_column_int(keys, 1) == KAPI_STORE_DELETE)
            continue;
        if (limit && n == limit) {
            (*remaining)++;
            continue;
        }
        if (emit_row(row, sqlite3_column_int64(keys, 0), fn, ctx) != 0)
            return -1;
        n++;
    }
    return step == SQLITE_DONE ? 0 : -1;
}

static kapi_store_rc read_snapshot(sqlite3 *db, const kapi_store_list_opts *q, kapi_store_row_fn fn,
                                   void *ctx, size_t *remaining)
{
    kapi_store_rc rc = KAPI_STORE_IO;
    sqlite3_stmt *keys = NULL, *row = NULL;
    char *end = kapi_xmalloc(q->prefix.len + 1);
    size_t end_len;
    bool bounded = prefix_end(q->prefix, end, &end_len);
    int64_t compacted = 0;
    if (query_int(db, SQL_COMPACTED, &compacted) != 0)
        goto done;
    if (q->rev < compacted) {
        rc = KAPI_STORE_GONE;
        goto done;
    }
    const char *sql = bounded ? SQL_HISTORY : SQL_HISTORY_OPEN;
    if (sqlite3_prepare_v2(db, sql, -1, &keys, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, SQL_ROW, -1, &row, NULL) != SQLITE_OK)
        goto done;
    bind_str(keys, 1, q->prefix);
    bind_str(keys, 2, q->start_after);
    if (bounded)
        sqlite3_bind_blob(keys, 3, end, (int)end_len, SQLITE_STATIC);
    sqlite3_bind_int64(keys, 4, q->rev);
    if (walk_history(keys, row, q->limit, fn, ctx, remaining) == 0)
        rc = KAPI_STORE_OK;
done:
    if (rc == KAPI_STORE_IO)
        report(db, "history");
    sqlite3_finalize(keys);
    sqlite3_finalize(row);
    free(end);
    return rc;
}

static kapi_store_rc backend_read_history(void *p, const kapi_store_list_opts *q,
                                          kapi_store_row_fn fn, void *ctx, size_t *remaining)
{
    sqlite_backend *b = p;
    reader *r = reader_take(b);
    if (!r)
        return KAPI_STORE_IO;
    kapi_store_rc rc = KAPI_STORE_IO;
    *remaining = 0;
    /* One read transaction: the compacted revision and the rows come from one snapshot. */
    if (exec(r->db, "BEGIN") == 0) {
        rc = read_snapshot(r->db, q, fn, ctx, remaining);
        exec(r->db, "COMMIT");
    }
    reader_give(b, r);
    return rc;
}

static int bind_exec(sqlite3 *db, const char *sql, int64_t from, int64_t to)
{
    sqlite3_stmt *s = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        goto done;
    sqlite3_bind_int64(s, 1, from);
    sqlite3_bind_int64(s, 2, to);
    if (sqlite3_step(s) == SQLITE_DONE)
        rc = 0;
done:
    if (rc)
        report(db, sql);
    sqlite3_finalize(s);
    return rc;
}

static int backend_compact(void *p, int64_t rev)
{
    sqlite_backend *b = p;
    if (rev <= b->compacted)
        return 0;
    if (exec(b->db, "BEGIN IMMEDIATE") != 0)
        return -1;
    if (bind_exec(b->db, SQL_COMPACT_SUPERSEDED, b->compacted, rev) != 0 ||
        bind_exec(b->db, SQL_COMPACT_DELETED, b->compacted, rev) != 0 ||
        bind_exec(b->db, SQL_SET_COMPACTED, b->compacted, rev) != 0 ||
        bind_exec(b->db, SQL_DROP_MARKS, b->compacted, rev) != 0 || exec(b->db, "COMMIT") != 0) {
        if (!sqlite3_get_autocommit(b->db))
            exec(b->db, "ROLLBACK");
        return -1;
    }
    b->compacted = rev;
    return 0;
}

static int backend_save_mark(void *p, int64_t rev, int64_t unix_ns)
{
    sqlite_backend *b = p;
    return bind_exec(b->db, SQL_SAVE_MARK, rev, unix_ns);
}

static int backend_load_marks(void *p, kapi_store_mark_fn fn, void *ctx)
{
    sqlite_backend *b = p;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(b->db, SQL_MARKS, -1, &s, NULL) == SQLITE_OK ? 0 : -1;
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW)
        fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1));
    if (rc == 0 && step != SQLITE_DONE)
        rc = -1;
    if (rc)
        report(b->db, SQL_MARKS);
    sqlite3_finalize(s);
    return rc;
}

const kapi_store_backend_ops kapi_store__sqlite_ops = {
    .name = "sqlite",
    .open = backend_open,
    .load = backend_load,
    .commit = backend_commit,
    .follow = backend_follow,
    .read_history = backend_read_history,
    .compact = backend_compact,
    .save_mark = backend_save_mark,
    .load_marks = backend_load_marks,
    .close = backend_close,
};
