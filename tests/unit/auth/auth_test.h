/* auth_test: helpers the src/auth unit tests share. */
#ifndef KAPI_AUTH_TEST_H
#define KAPI_AUTH_TEST_H

#include "auth/auth.h"
#include "test.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        kapi_error *e_ = (expr);                                                                   \
        if (e_)                                                                                    \
            test_fail(__FILE__, __LINE__, "%s: %s", #expr, e_->message);                           \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        if (!h_ || !strstr(h_, n_))                                                                \
            test_fail(__FILE__, __LINE__, "\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)",    \
                      n_);                                                                         \
    } while (0)

static inline void spit(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    fputs(data, f);
    fclose(f);
}

static inline int file_mode(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* A path in the test's scratch directory; the caller frees it. */
static inline char *tmp_path(const char *name)
{
    return kapi_xprintf("%s/%s", test_tmpdir(), name);
}

static inline X509 *load_cert(const char *path)
{
    FILE *f = fopen(path, "r");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    return x;
}

static inline EVP_PKEY *load_key(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    return k;
}

#endif
