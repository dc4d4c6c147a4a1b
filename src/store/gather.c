/*
 * gather: an SQLite VFS over the default one that joins consecutive writes (store_int.h).
 *
 * SQLite writes page by page. A commit writes each WAL frame as two pwrites (its 24-byte
 * header, then its page), and a checkpoint copies the WAL's pages into the database one
 * pwrite each: some 16 system calls per commit and a thousand per checkpoint, all on the
 * committer, the thread every write waits for. This VFS keeps the writes to the database
 * and WAL files that follow each other in a buffer and writes them in one call when
 * SQLite next syncs, reads, sizes, truncates, locks, maps or closes the file, writes
 * elsewhere in it, or fills the buffer.
 *
 * Nothing SQLite reads can be in a buffer: every read of the file flushes it first, and a
 * write becomes visible to other connections only after SQLite has synced the file (under
 * synchronous=FULL, the store's: a commit syncs the WAL before its frames enter the WAL
 * index, and a checkpoint syncs the database before it records the pages copied). So a
 * commit is as durable, and a reader sees the same bytes, as without it.
 */
#include "store/store_int.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* The unix VFS writes at most 128 KiB - 1 bytes in one call (it masks the count). */
#define GATHER_CAP (120 * 1024)

typedef struct gather_file {
    sqlite3_file base;
    sqlite3_file *real; /* the default VFS's file, right after this struct */
    bool gathers;       /* the database or its WAL */
    char *buf;
    size_t len, cap;
    sqlite3_int64 at; /* the file offset of buf[0] */
} gather_file;

static sqlite3_vfs gather_vfs;
static sqlite3_vfs *base_vfs;

static const sqlite3_io_methods *real_methods(gather_file *f)
{
    return f->real->pMethods;
}

/* Writes the buffer out; it is empty after, whatever the answer. */
static int flush(gather_file *f)
{
    if (!f->len)
        return SQLITE_OK;
    int rc = real_methods(f)->xWrite(f->real, f->buf, (int)f->len, f->at);
    f->len = 0;
    return rc;
}

static int g_close(sqlite3_file *file)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    int rc2 = real_methods(f)->xClose(f->real);
    free(f->buf);
    f->buf = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int g_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : real_methods(f)->xRead(f->real, p, n, off);
}

/* Whether the buffer can take n more bytes, grown when it must (to GATHER_CAP at most). */
static bool room_for(gather_file *f, size_t n)
{
    if (f->len + n <= f->cap)
        return true;
    if (f->len + n > GATHER_CAP)
        return false;
    size_t cap = f->cap ? f->cap : 32 * 1024;
    while (cap < f->len + n)
        cap *= 2;
    if (cap > GATHER_CAP)
        cap = GATHER_CAP;
    char *grown = realloc(f->buf, cap);
    if (!grown)
        return false;
    f->buf = grown;
    f->cap = cap;
    return true;
}

static int g_write(sqlite3_file *file, const void *p, int n, sqlite3_int64 off)
{
    gather_file *f = (gather_file *)file;
    if (!f->gathers)
        return real_methods(f)->xWrite(f->real, p, n, off);
    if (f->len && off != f->at + (sqlite3_int64)f->len) {
        int rc = flush(f);
        if (rc != SQLITE_OK)
            return rc;
    }
    if (!room_for(f, (size_t)n)) {
        int rc = flush(f);
        if (rc != SQLITE_OK || !room_for(f, (size_t)n))
            return rc != SQLITE_OK ? rc : real_methods(f)->xWrite(f->real, p, n, off);
    }
    if (!f->len)
        f->at = off;
    memcpy(f->buf + f->len, p, (size_t)n);
    f->len += (size_t)n;
    return SQLITE_OK;
}

static int g_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : real_methods(f)->xTruncate(f->real, size);
}

static int g_sync(sqlite3_file *file, int flags)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : real_methods(f)->xSync(f->real, flags);
}

static int g_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : real_methods(f)->xFileSize(f->real, size);
}

static int g_lock(sqlite3_file *file, int lock)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : real_methods(f)->xLock(f->real, lock);
}

static int g_unlock(sqlite3_file *file, int lock)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : real_methods(f)->xUnlock(f->real, lock);
}

static int g_check_reserved(sqlite3_file *file, int *out)
{
    gather_file *f = (gather_file *)file;
    return real_methods(f)->xCheckReservedLock(f->real, out);
}

static int g_file_control(sqlite3_file *file, int op, void *arg)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    if (rc != SQLITE_OK)
        return rc;
    rc = real_methods(f)->xFileControl(f->real, op, arg);
    if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK)
        *(char **)arg = sqlite3_mprintf("%s/%z", gather_vfs.zName, *(char **)arg);
    return rc;
}

static int g_sector_size(sqlite3_file *file)
{
    gather_file *f = (gather_file *)file;
    return real_methods(f)->xSectorSize(f->real);
}

static int g_device_characteristics(sqlite3_file *file)
{
    gather_file *f = (gather_file *)file;
    return real_methods(f)->xDeviceCharacteristics(f->real);
}

static int g_shm_map(sqlite3_file *file, int pg, int pgsz, int extend, void volatile **out)
{
    gather_file *f = (gather_file *)file;
    return real_methods(f)->xShmMap(f->real, pg, pgsz, extend, out);
}

static int g_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
    gather_file *f = (gather_file *)file;
    return real_methods(f)->xShmLock(f->real, offset, n, flags);
}

static void g_shm_barrier(sqlite3_file *file)
{
    gather_file *f = (gather_file *)file;
    real_methods(f)->xShmBarrier(f->real);
}

static int g_shm_unmap(sqlite3_file *file, int del)
{
    gather_file *f = (gather_file *)file;
    return real_methods(f)->xShmUnmap(f->real, del);
}

static int g_fetch(sqlite3_file *file, sqlite3_int64 off, int n, void **out)
{
    gather_file *f = (gather_file *)file;
    int rc = flush(f);
    return rc != SQLITE_OK ? rc : real_methods(f)->xFetch(f->real, off, n, out);
}

static int g_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
    gather_file *f = (gather_file *)file;
    return real_methods(f)->xUnfetch(f->real, off, p);
}

static const sqlite3_io_methods gather_methods = {
    .iVersion = 3,
    .xClose = g_close,
    .xRead = g_read,
    .xWrite = g_write,
    .xTruncate = g_truncate,
    .xSync = g_sync,
    .xFileSize = g_file_size,
    .xLock = g_lock,
    .xUnlock = g_unlock,
    .xCheckReservedLock = g_check_reserved,
    .xFileControl = g_file_control,
    .xSectorSize = g_sector_size,
    .xDeviceCharacteristics = g_device_characteristics,
    .xShmMap = g_shm_map,
    .xShmLock = g_shm_lock,
    .xShmBarrier = g_shm_barrier,
    .xShmUnmap = g_shm_unmap,
    .xFetch = g_fetch,
    .xUnfetch = g_unfetch,
};

static int g_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    (void)vfs;
    gather_file *f = (gather_file *)file;
    memset(f, 0, sizeof(*f));
    f->real = (sqlite3_file *)(f + 1);
    int rc = base_vfs->xOpen(base_vfs, name, f->real, flags, out_flags);
    if (rc != SQLITE_OK || !f->real->pMethods)
        return rc; /* base.pMethods stays NULL: SQLite closes nothing */
    f->gathers = (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)) != 0;
    f->base.pMethods = &gather_methods;
    return SQLITE_OK;
}

static int g_delete(sqlite3_vfs *v, const char *name, int sync_dir)
{
    (void)v;
    return base_vfs->xDelete(base_vfs, name, sync_dir);
}

static int g_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return base_vfs->xAccess(base_vfs, name, flags, out);
}

static int g_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return base_vfs->xFullPathname(base_vfs, name, n, out);
}

static void *g_dl_open(sqlite3_vfs *v, const char *name)
{
    (void)v;
    return base_vfs->xDlOpen(base_vfs, name);
}

static void g_dl_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    base_vfs->xDlError(base_vfs, n, out);
}

static void (*g_dl_sym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
    (void)v;
    return base_vfs->xDlSym(base_vfs, h, sym);
}

static void g_dl_close(sqlite3_vfs *v, void *h)
{
    (void)v;
    base_vfs->xDlClose(base_vfs, h);
}

static int g_randomness(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return base_vfs->xRandomness(base_vfs, n, out);
}

static int g_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return base_vfs->xSleep(base_vfs, us);
}

static int g_current_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return base_vfs->xCurrentTime(base_vfs, out);
}

static int g_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return base_vfs->xGetLastError ? base_vfs->xGetLastError(base_vfs, n, out) : 0;
}

static int g_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return base_vfs->xCurrentTimeInt64(base_vfs, out);
}

static pthread_once_t gather_once = PTHREAD_ONCE_INIT;
static bool gather_ok;

static void gather_register(void)
{
    base_vfs = sqlite3_vfs_find(NULL);
    if (!base_vfs || base_vfs->iVersion < 2 || !base_vfs->xCurrentTimeInt64)
        return;
    gather_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(gather_file) + base_vfs->szOsFile,
        .mxPathname = base_vfs->mxPathname,
        .zName = "kapi-gather",
        .xOpen = g_open,
        .xDelete = g_delete,
        .xAccess = g_access,
        .xFullPathname = g_full_pathname,
        .xDlOpen = g_dl_open,
        .xDlError = g_dl_error,
        .xDlSym = g_dl_sym,
        .xDlClose = g_dl_close,
        .xRandomness = g_randomness,
        .xSleep = g_sleep,
        .xCurrentTime = g_current_time,
        .xGetLastError = g_last_error,
        .xCurrentTimeInt64 = g_current_time_int64,
    };
    gather_ok = sqlite3_vfs_register(&gather_vfs, 0) == SQLITE_OK;
}

const char *kapi_store__gather_vfs(void)
{
    pthread_once(&gather_once, gather_register);
    return gather_ok ? gather_vfs.zName : NULL;
}
