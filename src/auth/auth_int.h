/*
 * auth_int: what the files of src/auth share and nobody else sees.
 *
 * - Files: every file auth writes (keys, certificates, the admin token, the kubeconfig)
 *   goes to a temporary file in the same directory, is fsync'd, then renamed over its
 *   name, so a crash leaves either the old file or the new one, never half of one.
 * - Certificate users: a kapi_user's strings must outlive the request, so the user of each
 *   distinct certificate identity (CN and Os) is made once, kept in a table behind a mutex
 *   and freed with the kapi_auth.
 * - CSV: a reader of kube-apiserver's token file format (RFC 4180 quoting, '#' comments,
 *   blank lines skipped), one record at a time.
 */
#ifndef KAPI_AUTH_INT_H
#define KAPI_AUTH_INT_H

#include "auth/auth.h"

#include <sys/types.h>

/* Creates DIR (and missing parents) with mode 0700; an existing directory is fine. */
kapi_error *kapi_auth__mkdir(const char *dir);
/* Replaces PATH with DATA atomically (temp file, fsync, rename), with permission MODE. */
kapi_error *kapi_auth__write_file(const char *path, const void *data, size_t len, mode_t mode);
/* Reads all of PATH into OUT. When EXISTS is not NULL a missing file is not an error:
 * *exists says whether it was there. */
kapi_error *kapi_auth__read_file(const char *path, kapi_buf *out, bool *exists);

/* Makes DIR/admin-token (a new random token) unless it is there. */
kapi_error *kapi_auth__ensure_admin_token(const char *dir);

/* The columns of a record the token file uses; later columns are read and dropped. */
#define KAPI_AUTH__CSV_KEEP 4

/* A CSV reader over a buffer it does not own. */
typedef struct kapi_auth__csv {
    const char *p, *end;
    int line;                             /* line of the next unread byte, from 1 */
    int record_line;                      /* line where the last record read started */
    size_t nfields;                       /* columns of the last record, all of them */
    kapi_buf fields[KAPI_AUTH__CSV_KEEP]; /* the first columns of the last record */
} kapi_auth__csv;

void kapi_auth__csv_init(kapi_auth__csv *r, const char *data, size_t len);
void kapi_auth__csv_dispose(kapi_auth__csv *r);
/* Reads the next record: 1 when one was read, 0 at the end of the data, -1 on a syntax
 * error, described by *why (a static string), in the record starting at r->record_line. */
int kapi_auth__csv_next(kapi_auth__csv *r, const char **why);

/* A group list for a user in arena A: the pointers of NAMES (strings that live as long as
 * A) then "system:authenticated" unless listed, NULL-terminated. */
const char *const *kapi_auth__groups(kapi_arena *a, const char **names, size_t n);

/* The users of client certificates, interned: the one mutable part of a kapi_auth. */
typedef struct kapi_auth__certs kapi_auth__certs;

kapi_auth__certs *kapi_auth__certs_new(void);
void kapi_auth__certs_free(kapi_auth__certs *c);
/* The user of a verified certificate (an X509 *): subject CN, the O entries as groups,
 * no uid. False when the subject has no usable CN. Thread-safe. */
bool kapi_auth__certs_user(kapi_auth__certs *c, void *cert, kapi_user *out);

#endif
