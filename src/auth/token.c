/*
 * token: the kapi_auth itself: the admin token, the users of a --token-auth-file, and
 * authentication of a request by bearer token (static or ServiceAccount) or client
 * certificate.
 *
 * Tokens are kept as SHA-256 digests in an array sorted by digest: a lookup hashes the
 * presented token, finds the one candidate by binary search and confirms it with
 * CRYPTO_memcmp. The search's timing depends only on digests, which tell an attacker
 * nothing about the tokens.
 *
 * The table is replaced whole when the token file is read again (SIGHUP): requests load
 * the current one without a lock, and a replaced table stays, unused, until
 * kapi_auth_free, since a request may still hold its users' strings.
 */
#include "auth/auth_int.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DIGEST_LEN 32
#define ADMIN_TOKEN_BYTES 32

typedef struct token_entry {
    unsigned char digest[DIGEST_LEN];
    size_t seq; /* order of appearance: of two equal tokens the later one wins */
    kapi_user user;
} token_entry;

/* The known tokens: the admin's and the token file's. */
typedef struct token_table {
    kapi_arena arena; /* the token users' strings and group lists */
    token_entry *tokens;
    size_t ntokens, tokens_cap;
    struct token_table *replaced; /* the table this one replaced */
} token_table;

struct kapi_auth {
    kapi_arena arena; /* the admin token */
    const char *admin_token;
    char *token_file; /* --token-auth-file, or NULL */
    _Atomic(token_table *) table;
    kapi_auth__certs *certs;
    kapi_jwt *jwt;  /* ServiceAccount tokens */
    EVP_MD *sha256; /* fetched once: EVP_sha256() looks the digest up again on every use */
};

static const char *const admin_groups[] = {"system:masters", "system:authenticated", NULL};
static const kapi_user admin_user = {"admin", "admin", admin_groups};

const char *const *kapi_auth__groups(kapi_arena *a, const char **names, size_t n)
{
    const char **groups = kapi_arena_alloc(a, (n + 2) * sizeof(*groups));
    bool listed = false;
    for (size_t i = 0; i < n; i++) {
        groups[i] = names[i];
        listed = listed || strcmp(names[i], "system:authenticated") == 0;
    }
    if (!listed)
        groups[n++] = "system:authenticated";
    groups[n] = NULL;
    return groups;
}

static void digest(const kapi_auth *a, const char *token, size_t len, unsigned char out[DIGEST_LEN])
{
    if (!EVP_Digest(token, len, out, NULL, a->sha256, NULL))
        abort(); /* only on allocation failure, which aborts everywhere in kapi */
}

static void add_token(const kapi_auth *a, token_table *t, const char *token, size_t len,
                      kapi_user user)
{
    if (t->ntokens == t->tokens_cap) {
        t->tokens_cap = t->tokens_cap ? t->tokens_cap * 2 : 16;
        t->tokens = kapi_xrealloc(t->tokens, t->tokens_cap * sizeof(*t->tokens));
    }
    token_entry *e = &t->tokens[t->ntokens];
    digest(a, token, len, e->digest);
    e->seq = t->ntokens++;
    e->user = user;
}

static int entry_cmp(const void *x, const void *y)
{
    const token_entry *a = x, *b = y;
    int c = memcmp(a->digest, b->digest, DIGEST_LEN);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/* Sorts the tokens by digest and keeps the last of each run of equal tokens. */
static void index_tokens(token_table *t)
{
    size_t n = 0;
    qsort(t->tokens, t->ntokens, sizeof(*t->tokens), entry_cmp);
    for (size_t i = 0; i < t->ntokens; i++) {
        bool last = i + 1 == t->ntokens ||
                    memcmp(t->tokens[i].digest, t->tokens[i + 1].digest, DIGEST_LEN) != 0;
        if (last)
            t->tokens[n++] = t->tokens[i];
    }
    t->ntokens = n;
}

static const kapi_user *find_token(const kapi_auth *a, kapi_str token)
{
    unsigned char d[DIGEST_LEN];
    const token_table *t = atomic_load_explicit(&a->table, memory_order_acquire);
    size_t lo = 0, hi = t->ntokens;
    digest(a, token.ptr, token.len, d);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(t->tokens[mid].digest, d, DIGEST_LEN) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->ntokens && CRYPTO_memcmp(t->tokens[lo].digest, d, DIGEST_LEN) == 0)
        return &t->tokens[lo].user;
    return NULL;
}

/* Splits a groups column on ',' into arena strings; empty names are dropped. */
static const char *const *split_groups(kapi_arena *arena, const kapi_buf *col)
{
    const char **names = kapi_xcalloc(col->len / 2 + 1, sizeof(*names));
    size_t n = 0;
    kapi_str rest = {col->ptr, col->len}, head;
    while (rest.len) {
        kapi_str_cut(&rest, ',', &head);
        if (head.len)
            names[n++] = kapi_arena_strndup(arena, head.ptr, head.len);
    }
    const char *const *groups = kapi_auth__groups(arena, names, n);
    free(names);
    return groups;
}

static kapi_error *add_record(const kapi_auth *a, token_table *t, const char *path,
                              const kapi_auth__csv *r)
{
    const kapi_buf *f = r->fields;
    if (r->nfields < 3)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "token file \"%s\" must have at least 3 columns (token, user "
                              "name, user uid): line %d",
                              path, r->record_line);
    if (f[0].len == 0 || f[1].len == 0)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "token file \"%s\": line %d: empty %s", path,
                              r->record_line, f[0].len ? "user name" : "token");
    kapi_user u = {
        .name = kapi_arena_strndup(&t->arena, f[1].ptr, f[1].len),
        .uid = kapi_arena_strndup(&t->arena, f[2].ptr, f[2].len),
        .groups = split_groups(&t->arena, &f[3]),
    };
    add_token(a, t, f[0].ptr, f[0].len, u);
    return NULL;
}

static kapi_error *load_token_file(const kapi_auth *a, token_table *t, const char *path)
{
    kapi_buf data;
    kapi_auth__csv r;
    const char *why = NULL;
    int rc = 0;
    kapi_buf_init(&data);
    kapi_error *err = kapi_auth__read_file(path, &data, NULL);
    kapi_auth__csv_init(&r, data.ptr, data.len);
    while (!err && (rc = kapi_auth__csv_next(&r, &why)) > 0)
        err = add_record(a, t, path, &r);
    if (rc < 0)
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "token file \"%s\": line %d: %s", path,
                             r.record_line, why);
    kapi_auth__csv_dispose(&r);
    kapi_buf_dispose(&data);
    return err;
}

/* A new admin token: ADMIN_TOKEN_BYTES random bytes in lowercase hex and a newline in
 * hex (2 * ADMIN_TOKEN_BYTES + 2 bytes: a NUL follows), saved to PATH. */
static kapi_error *make_admin_token(char *hex, const char *path)
{
    unsigned char raw[ADMIN_TOKEN_BYTES];
    kapi_random_bytes(raw, sizeof(raw));
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    OPENSSL_cleanse(raw, sizeof(raw));
    hex[2 * sizeof(raw)] = '\n';
    hex[2 * sizeof(raw) + 1] = '\0';
    return kapi_auth__write_file(path, hex, 2 * sizeof(raw) + 1, 0600);
}

/* DIR/admin-token's bytes into *b (PATH), made first when missing. */
static kapi_error *admin_token_bytes(const char *dir, const char *path, kapi_buf *b)
{
    bool exists = false;
    kapi_error *err = kapi_auth__mkdir(dir);
    if (!err)
        err = kapi_auth__read_file(path, b, &exists);
    if (!err && !exists) {
        char hex[2 * ADMIN_TOKEN_BYTES + 2];
        err = make_admin_token(hex, path);
        kapi_buf_put(b, hex, 2 * ADMIN_TOKEN_BYTES + 1);
        OPENSSL_cleanse(hex, sizeof(hex));
    }
    return err;
}

kapi_error *kapi_auth__ensure_admin_token(const char *dir)
{
    char *path = kapi_xprintf("%s/admin-token", dir);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_error *err = admin_token_bytes(dir, path, &b);
    OPENSSL_cleanse(b.ptr, b.len);
    kapi_buf_dispose(&b);
    free(path);
    return err;
}

/* The admin token saved in PATH, without surrounding blanks. */
static kapi_error *parse_admin_token(kapi_auth *a, const char *path, const kapi_buf *b)
{
    const char *blanks = " \t\r\n";
    size_t start = strspn(b->ptr, blanks), end = b->len;
    while (end > start && strchr(blanks, b->ptr[end - 1]))
        end--;
    if (end == start || memchr(b->ptr + start, '\0', end - start))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "admin token file \"%s\" is empty or malformed; delete it to make "
                              "a new token",
                              path);
    a->admin_token = kapi_arena_strndup(&a->arena, b->ptr + start, end - start);
    return NULL;
}

static kapi_error *load_admin_token(kapi_auth *a, const char *dir)
{
    char *path = kapi_xprintf("%s/admin-token", dir);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_error *err = admin_token_bytes(dir, path, &b);
    if (!err)
        err = parse_admin_token(a, path, &b);
    OPENSSL_cleanse(b.ptr, b.len);
    kapi_buf_dispose(&b);
    free(path);
    return err;
}

static void table_free(token_table *t)
{
    while (t) {
        token_table *next = t->replaced;
        free(t->tokens);
        kapi_arena_dispose(&t->arena);
        free(t);
        t = next;
    }
}

/* A table of the token file's tokens and the admin's, the file's first: an admin token
 * copied into the file stays the admin's. */
static kapi_error *table_new(const kapi_auth *a, token_table **out)
{
    token_table *t = kapi_xcalloc(1, sizeof(*t));
    kapi_error *err = NULL;
    kapi_arena_init(&t->arena);
    if (a->token_file)
        err = load_token_file(a, t, a->token_file);
    if (err) {
        table_free(t);
        t = NULL;
    } else {
        add_token(a, t, a->admin_token, strlen(a->admin_token), admin_user);
        index_tokens(t);
    }
    *out = t;
    return err;
}

kapi_error *kapi_auth_new(kapi_auth **out, const kapi_auth_config *c)
{
    kapi_auth *a = kapi_xcalloc(1, sizeof(*a));
    token_table *t = NULL;
    kapi_error *err = NULL;
    kapi_arena_init(&a->arena);
    a->certs = kapi_auth__certs_new();
    a->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (!a->sha256)
        abort(); /* the default provider always has it */
    a->token_file = c->token_file ? kapi_xstrdup(c->token_file) : NULL;
    err = load_admin_token(a, c->dir);
    if (!err)
        err = table_new(a, &t);
    atomic_init(&a->table, t);
    if (!err)
        err = kapi_jwt_new(&a->jwt, &c->sa);
    if (err) {
        kapi_auth_free(a);
        a = NULL;
    }
    *out = a;
    return err;
}

kapi_error *kapi_auth_reload_tokens(kapi_auth *a)
{
    token_table *t;
    kapi_error *err = table_new(a, &t);
    if (err)
        return err;
    t->replaced = atomic_load_explicit(&a->table, memory_order_relaxed);
    atomic_store_explicit(&a->table, t, memory_order_release);
    return NULL;
}

void kapi_auth_free(kapi_auth *a)
{
    if (!a)
        return;
    if (a->certs)
        kapi_auth__certs_free(a->certs);
    EVP_MD_free(a->sha256);
    kapi_jwt_free(a->jwt);
    table_free(atomic_load_explicit(&a->table, memory_order_relaxed));
    free(a->token_file);
    kapi_arena_dispose(&a->arena);
    free(a);
}

const char *kapi_auth_admin_token(const kapi_auth *a)
{
    return a->admin_token;
}

const kapi_jwt *kapi_auth_jwt(const kapi_auth *a)
{
    return a->jwt;
}

/* The token of "Bearer <token>": scheme in any case, then one or more blanks. */
static bool bearer_token(const char *header, kapi_str *out)
{
    if (!header || strncasecmp(header, "bearer", 6) != 0)
        return false;
    const char *p = header + 6, *end;
    if (*p != ' ' && *p != '\t')
        return false;
    p += strspn(p, " \t");
    end = p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *out = (kapi_str){p, (size_t)(end - p)};
    return out->len > 0;
}

/* The ServiceAccount of verified claims c as sa finds it now: there, with the claims' uid,
 * not deleted more than the leeway ago. A token bound to a Pod or a Secret names an object
 * kapi does not serve, which kube-apiserver would not find: it is invalid. */
static bool sa_current(const kapi_sa_lookup *sa, const kapi_jwt_claims *c, int64_t now,
                       kapi_arena *arena)
{
    const char *uid = NULL;
    int64_t deleted = 0;
    if (!c->ns || !*c->ns || !c->sa.name || !*c->sa.name || c->pod.name || c->secret.name ||
        !sa->get(sa->ctx, kapi_str_c(c->ns), kapi_str_c(c->sa.name), arena, &uid, &deleted))
        return false;
    return (!deleted || deleted >= now - KAPI_JWT_LEEWAY) && uid && c->sa.uid &&
           strcmp(uid, c->sa.uid) == 0;
}

/* The user of a ServiceAccount token, made in arena. */
static bool sa_user(const kapi_auth *a, kapi_str token, const kapi_sa_lookup *sa, kapi_arena *arena,
                    kapi_user *out)
{
    kapi_jwt_claims c;
    int64_t now = kapi_time_now_ns() / 1000000000;
    if (!sa || !arena || kapi_jwt_verify(a->jwt, token, now, arena, &c) != KAPI_JWT_OK ||
        !sa_current(sa, &c, now, arena))
        return false;
    const char *groups[] = {"system:serviceaccounts",
                            kapi_arena_printf(arena, "system:serviceaccounts:%s", c.ns)};
    *out = (kapi_user){
        .name = kapi_arena_printf(arena, "system:serviceaccount:%s:%s", c.ns, c.sa.name),
        .uid = c.sa.uid,
        .groups = kapi_auth__groups(arena, groups, KAPI_ARRAY_LEN(groups)),
    };
    return true;
}

bool kapi_auth_bearer_present(const char *authorization)
{
    kapi_str token;
    return bearer_token(authorization, &token);
}

static const char *const unauthenticated[] = {"system:unauthenticated", NULL};
const kapi_user kapi_auth_anonymous = {"system:anonymous", "", unauthenticated};

bool kapi_auth_authenticate(const kapi_auth *a, const char *authorization, void *peer_cert,
                            const kapi_sa_lookup *sa, kapi_arena *arena, kapi_user *out)
{
    kapi_str token;
    const kapi_user *u;
    /* kube-apiserver's order: a verified client certificate first, then a bearer token:
     * the token file's, then a ServiceAccount's. */
    if (peer_cert && kapi_auth__certs_user(a->certs, peer_cert, out))
        return true;
    if (!bearer_token(authorization, &token))
        return false;
    if ((u = find_token(a, token)) == NULL)
        return sa_user(a, token, sa, arena, out);
    *out = *u;
    return true;
}
