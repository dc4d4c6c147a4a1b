/* The gathering VFS (store/gather.c): what is written through it is what SQLite wrote,
 * across commits, checkpoints into the database and transactions larger than its buffer;
 * another connection on the default VFS sees each commit as soon as it returns; the files
 * pass SQLite's integrity check when opened without it. */
#include "store/store_int.h"
#include "test.h"

#include <sqlite3.h>

#define ROW_BYTES 1100

static sqlite3 *open_db(const char *path, const char *vfs)
{
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    CHECK(sqlite3_open_v2(path, &db, flags, vfs) == SQLITE_OK);
    return db;
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    CHECK(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(s) == SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Inserts n rows in one transaction; row i's bytes are all 'a' + i % 26. */
static void insert_rows(sqlite3 *db, sqlite3_stmt *ins, int64_t first, int n)
{
    char row[ROW_BYTES];
    CHECK(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    for (int64_t i = first; i < first + n; i++) {
        memset(row, 'a' + (int)(i % 26), sizeof(row));
        sqlite3_bind_int64(ins, 1, i);
        sqlite3_bind_blob(ins, 2, row, sizeof(row), SQLITE_TRANSIENT);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
    }
    CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
}

TEST(store_gather_writes_what_sqlite_wrote)
{
    const char *vfs = kapi_store__gather_vfs();
    CHECK(vfs != NULL);
    char *path = kapi_xprintf("%s/g.db", test_tmpdir());
    sqlite3 *db = open_db(path, vfs);
    CHECK(sqlite3_exec(db,
                       "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                       "CREATE TABLE t(i INTEGER PRIMARY KEY, b BLOB NOT NULL);",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3 *reader = open_db(path, NULL);
    sqlite3_stmt *ins = NULL;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1, ?2)", -1, &ins, NULL) == SQLITE_OK);
    int64_t rows = 0;
    /* Small commits, some 4,000 WAL frames: four automatic checkpoints copy the pages
     * into the database on the way. */
    for (int c = 0; c < 1000; c++, rows += 5) {
        insert_rows(db, ins, rows, 5);
        if (c % 100 == 0)
            CHECK_INT_EQ(one_int(reader, "SELECT count(*) FROM t"), rows + 5);
    }
    /* One commit of some 2 MB: its frames fill the buffer many times over. */
    insert_rows(db, ins, rows, 2000);
    rows += 2000;
    CHECK_INT_EQ(one_int(reader, "SELECT count(*) FROM t"), rows);
    int log = 0, copied = 0;
    CHECK(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &copied) ==
          SQLITE_OK);
    sqlite3_finalize(ins);
    CHECK(sqlite3_close(reader) == SQLITE_OK);
    CHECK(sqlite3_close(db) == SQLITE_OK);

    db = open_db(path, NULL);
    sqlite3_stmt *s = NULL;
    CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(s) == SQLITE_ROW);
    CHECK_STR_EQ((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    CHECK_INT_EQ(one_int(db, "SELECT count(*) FROM t"), rows);
    CHECK_INT_EQ(one_int(db, "SELECT sum(length(b)) FROM t"), rows * ROW_BYTES);
    /* Each row still holds its own letter. */
    CHECK_INT_EQ(one_int(db, "SELECT count(*) FROM t WHERE"
                             " unicode(CAST(substr(b, 1, 1) AS TEXT)) != 97 + i % 26 OR"
                             " unicode(CAST(substr(b, 1100, 1) AS TEXT)) != 97 + i % 26"),
                 0);
    CHECK(sqlite3_close(db) == SQLITE_OK);
    free(path);
}
