/*
 * cert: the users of client certificates (see auth_int.h).
 *
 * As kube-apiserver does: the user name is the subject's common name (the last CN when
 * there are several, as Go reads it), the groups are its organizations (O) in order, and
 * there is no uid. The certificate was verified by the TLS layer; this only reads it.
 *
 * A kapi_user's strings must outlive the request, so each distinct identity is made once
 * and kept until the kapi_auth is freed. The table grows with the number of distinct
 * identities that trusted CAs have issued and clients have used, not with requests.
 */
#include "auth/auth_int.h"

#include <openssl/x509.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct cert_user {
    uint64_t hash;
    const char *key; /* "CN\0O1\0O2\0", in the arena */
    size_t key_len;
    kapi_user user;
} cert_user;

struct kapi_auth__certs {
    pthread_mutex_t lock; /* guards everything below */
    kapi_arena arena;
    cert_user *users;
    size_t n, cap;
};

kapi_auth__certs *kapi_auth__certs_new(void)
{
    kapi_auth__certs *c = kapi_xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    kapi_arena_init(&c->arena);
    return c;
}

void kapi_auth__certs_free(kapi_auth__certs *c)
{
    pthread_mutex_destroy(&c->lock);
    kapi_arena_dispose(&c->arena);
    free(c->users);
    free(c);
}

/* Appends entry I of NAME as UTF-8 and a NUL to KEY; false when it is empty or holds a
 * NUL (the key could not be split back). */
static bool put_entry(const X509_NAME *name, int i, kapi_buf *key)
{
    const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    unsigned char *utf8 = NULL;
    int len = ASN1_STRING_to_UTF8(&utf8, s);
    bool ok = len > 0 && memchr(utf8, '\0', (size_t)len) == NULL;
    if (ok) {
        kapi_buf_put(key, utf8, (size_t)len);
        kapi_buf_putc(key, '\0');
    }
    OPENSSL_free(utf8);
    return ok;
}

/* The identity of a certificate as a key: CN, then each O, each NUL-terminated. */
static bool identity_key(X509 *cert, kapi_buf *key)
{
    const X509_NAME *name = X509_get_subject_name(cert);
    int cn = -1;
    for (int i = -1; (i = X509_NAME_get_index_by_NID(name, NID_commonName, i)) >= 0;)
        cn = i;
    if (cn < 0 || !put_entry(name, cn, key))
        return false;
    /* An empty or unreadable organization is no group, but the user is still the CN. */
    for (int i = -1; (i = X509_NAME_get_index_by_NID(name, NID_organizationName, i)) >= 0;)
        put_entry(name, i, key);
    return true;
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h;
}

static const cert_user *find(const kapi_auth__certs *c, uint64_t hash, const kapi_buf *key)
{
    for (size_t i = 0; i < c->n; i++) {
        const cert_user *u = &c->users[i];
        if (u->hash == hash && u->key_len == key->len && memcmp(u->key, key->ptr, key->len) == 0)
            return u;
    }
    return NULL;
}

/* Makes the user of KEY; its strings point into one arena copy of the key. */
static const cert_user *add(kapi_auth__certs *c, uint64_t hash, const kapi_buf *key)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->users = kapi_xrealloc(c->users, c->cap * sizeof(*c->users));
    }
    cert_user *u = &c->users[c->n++];
    char *copy = kapi_arena_alloc(&c->arena, key->len + 1);
    memcpy(copy, key->ptr, key->len);
    const char **names = kapi_xcalloc(key->len, sizeof(*names));
    size_t n = 0;
    for (size_t off = strlen(copy) + 1; off < key->len; off += strlen(copy + off) + 1)
        names[n++] = copy + off;
    *u = (cert_user){hash, copy, key->len, {copy, "", kapi_auth__groups(&c->arena, names, n)}};
    free(names);
    return u;
}

bool kapi_auth__certs_user(kapi_auth__certs *c, void *cert, kapi_user *out)
{
    kapi_buf key;
    kapi_buf_init(&key);
    bool ok = identity_key(cert, &key);
    if (ok) {
        uint64_t hash = fnv1a(key.ptr, key.len);
        pthread_mutex_lock(&c->lock);
        const cert_user *u = find(c, hash, &key);
        *out = (u ? u : add(c, hash, &key))->user;
        pthread_mutex_unlock(&c->lock);
    }
    kapi_buf_dispose(&key);
    return ok;
}
