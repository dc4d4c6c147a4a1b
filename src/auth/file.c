/* file: the directory and atomic-file helpers of src/auth (see auth_int.h). */
#include "auth/auth_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

kapi_error *kapi_auth__mkdir(const char *dir)
{
    char *path = kapi_xstrdup(dir);
    kapi_error *err = NULL;
    /* Each prefix ending before a '/', then the whole path. */
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "creating directory \"%s\": %s", path,
                                 strerror(errno));
            goto done;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "\"%s\" is not a directory", dir);
done:
    free(path);
    return err;
}

/* Makes a rename in the directory of PATH durable. Best effort: an error changes nothing
 * the caller could act on. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? kapi_xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : kapi_xstrdup(".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

kapi_error *kapi_auth__write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    char *tmp = kapi_xprintf("%s.tmp-XXXXXX", path);
    kapi_error *err = NULL;
    int fd = mkstemp(tmp); /* created 0600, so a key is never readable by others */
    bool ok = fd >= 0 && fchmod(fd, mode) == 0 && kapi_write_all(fd, data, len) && fsync(fd) == 0;
    int saved = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (ok) {
        sync_parent(path);
    } else {
        err =
            kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "writing \"%s\": %s", path, strerror(saved));
        if (fd >= 0)
            unlink(tmp);
    }
    free(tmp);
    return err;
}

kapi_error *kapi_auth__read_file(const char *path, kapi_buf *out, bool *exists)
{
    char chunk[4096];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (exists)
        *exists = fd >= 0 || errno != ENOENT;
    if (fd < 0 && exists && !*exists)
        return NULL;
    if (fd < 0)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "reading \"%s\": %s", path, strerror(errno));
    while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        kapi_buf_put(out, chunk, (size_t)n);
    }
    int saved = errno;
    close(fd);
    if (n < 0)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "reading \"%s\": %s", path, strerror(saved));
    return NULL;
}
