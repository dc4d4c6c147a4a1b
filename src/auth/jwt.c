/*
 * jwt: ServiceAccount tokens (auth.h, "ServiceAccount tokens"), signed and verified as
 * kube-apiserver's serviceaccount package does with go-jose.
 *
 * A token is three base64url parts, header.payload.signature. kapi writes the header
 * {"alg","kid"} and the claims with every object's members sorted, as go-jose writes its
 * merged claims map. It reads members in any order, and the header and the signature
 * with or without the '=' padding go-jose strips before decoding them (the payload
 * without, as kube-apiserver's issuer check decodes it).
 *
 * Verification goes in kube-apiserver's order: the issuer, the signature with each key
 * in turn (the kid is not consulted; an algorithm the key does not make is refused,
 * "none" included, and so is any "crit" header, which go-jose does not support), the
 * types of the claims, an audience shared with the API's, then the times with go-jose's
 * leeway (an absent exp is long past). Whether the ServiceAccount still exists is the
 * caller's question (token.c).
 */
#include "auth/auth_int.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/json.h"

#define KID_LEN 43 /* a SHA-256 in unpadded base64url */

/* A key that verifies (or signs) tokens. */
typedef struct jwt_key {
    EVP_PKEY *pkey;
    bool rsa;
    int ec_bytes;    /* ECDSA: the size of a coordinate, 32, 48 or 66 */
    const char *alg; /* what it signs with: RS256, ES256, ES384 or ES512 */
    const char *crv; /* ECDSA: P-256, P-384 or P-521 */
    char kid[KID_LEN + 1];
} jwt_key;

struct kapi_jwt {
    char **issuers;
    size_t nissuers;
    char **audiences;
    size_t naudiences;
    jwt_key signer; /* signer.pkey NULL: no signing key */
    jwt_key *keys;
    size_t nkeys;
    int64_t max_expiration;
    char *jwks_uri; /* NULL: made from the server's address */
};

/* The algorithms a token may be signed with: what go-jose verifies with an RSA key, and
 * with an ECDSA key of the curve each needs. */
typedef struct sig_alg {
    const char *name;
    bool rsa, pss;
    int ec_bytes;
    const char *md;
} sig_alg;

static const sig_alg algs[] = {
    {"RS256", true, false, 0, "SHA256"},   {"RS384", true, false, 0, "SHA384"},
    {"RS512", true, false, 0, "SHA512"},   {"PS256", true, true, 0, "SHA256"},
    {"PS384", true, true, 0, "SHA384"},    {"PS512", true, true, 0, "SHA512"},
    {"ES256", false, false, 32, "SHA256"}, {"ES384", false, false, 48, "SHA384"},
    {"ES512", false, false, 66, "SHA512"},
};

/* The curves kube-apiserver signs with, by OpenSSL's group name. */
static const struct curve {
    const char *group, *crv, *alg;
    int bytes;
} curves[] = {
    {"prime256v1", "P-256", "ES256", 32},
    {"secp384r1", "P-384", "ES384", 48},
    {"secp521r1", "P-521", "ES512", 66},
};

/* ---- keys ---- */

static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

static char *b64url(const void *p, size_t n)
{
    return kapi_base64_encode(p, n, KAPI_BASE64_URL | KAPI_BASE64_RAW);
}

/* Fills k from pkey (taken); false, pkey freed, when it is neither RSA nor ECDSA on a
 * curve kube signs with. */
static bool key_init(jwt_key *k, EVP_PKEY *pkey)
{
    *k = (jwt_key){.pkey = pkey};
    if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_RSA) {
        k->rsa = true;
        k->alg = "RS256";
    } else if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC) {
        char group[64] = "";
        EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                       NULL);
        for (size_t i = 0; i < KAPI_ARRAY_LEN(curves); i++)
            if (strcmp(group, curves[i].group) == 0) {
                k->crv = curves[i].crv;
                k->alg = curves[i].alg;
                k->ec_bytes = curves[i].bytes;
            }
        /* Go marshals the point uncompressed, and the kid hashes that form. */
        EVP_PKEY_set_utf8_string_param(pkey, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
                                       "uncompressed");
    }
    unsigned char *der = NULL, md[32];
    int len = k->alg ? i2d_PUBKEY(pkey, &der) : -1;
    if (len <= 0 || !EVP_Digest(der, (size_t)len, md, NULL, EVP_sha256(), NULL)) {
        OPENSSL_free(der);
        EVP_PKEY_free(pkey);
        ERR_clear_error();
        k->pkey = NULL;
        return false;
    }
    OPENSSL_free(der);
    char *kid = b64url(md, sizeof(md));
    memcpy(k->kid, kid, KID_LEN + 1);
    free(kid);
    return true;
}

static void add_key(kapi_jwt *j, EVP_PKEY *pkey)
{
    jwt_key k;
    if (!key_init(&k, pkey))
        return;
    j->keys = kapi_xrealloc(j->keys, (j->nkeys + 1) * sizeof(*j->keys));
    j->keys[j->nkeys++] = k;
}

/* The key a PEM block's DER holds: a private key (its public half verifies), a public
 * key, or a certificate's key, as keyutil.ParsePublicKeysPEM reads each block. */
static EVP_PKEY *block_key(const unsigned char *data, long len)
{
    const unsigned char *p = data;
    EVP_PKEY *k = d2i_AutoPrivateKey(NULL, &p, len);
    if (!k) {
        p = data;
        k = d2i_PUBKEY(NULL, &p, len);
    }
    if (!k) {
        p = data;
        X509 *x = d2i_X509(NULL, &p, len);
        k = x ? X509_get_pubkey(x) : NULL;
        X509_free(x);
    }
    ERR_clear_error();
    return k;
}

/* Adds the keys of every PEM block of path; other blocks are passed over. */
static kapi_error *load_key_file(kapi_jwt *j, const char *path)
{
    BIO *b = BIO_new_file(path, "r");
    char *name = NULL, *header = NULL;
    unsigned char *data = NULL;
    long len = 0;
    size_t before = j->nkeys;
    if (!b) {
        ERR_clear_error();
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "--service-account-key-file: cannot read \"%s\"", path);
    }
    while (PEM_read_bio(b, &name, &header, &data, &len) == 1) {
        EVP_PKEY *k = block_key(data, len);
        if (k)
            add_key(j, k);
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_free(data);
    }
    ERR_clear_error();
    BIO_free(b);
    if (j->nkeys == before)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "--service-account-key-file: \"%s\" holds no RSA or ECDSA key", path);
    return NULL;
}

static kapi_error *load_signing_key(kapi_jwt *j, const char *path)
{
    BIO *b = BIO_new_file(path, "r");
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_password, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    if (!k || !key_init(&j->signer, k))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "--service-account-signing-key-file: \"%s\" holds no RSA or "
                              "ECDSA (P-256, P-384, P-521) private key",
                              path);
    return NULL;
}

static char **copy_strings(const char *const *v, size_t n)
{
    char **out = kapi_xcalloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = kapi_xstrdup(v[i]);
    return out;
}

kapi_error *kapi_jwt_new(kapi_jwt **out, const kapi_sa_config *c)
{
    static const char *const default_issuer[] = {KAPI_SA_DEFAULT_ISSUER};
    kapi_jwt *j = kapi_xcalloc(1, sizeof(*j));
    kapi_error *err = NULL;
    bool own = c->nissuers > 0;
    j->nissuers = own ? c->nissuers : 1;
    j->issuers = copy_strings(own ? c->issuers : default_issuer, j->nissuers);
    own = c->naudiences > 0;
    j->naudiences = own ? c->naudiences : j->nissuers;
    j->audiences =
        copy_strings(own ? c->audiences : (const char *const *)j->issuers, j->naudiences);
    j->max_expiration = c->max_expiration;
    j->jwks_uri = c->jwks_uri ? kapi_xstrdup(c->jwks_uri) : NULL;
    if (c->signing_key_file)
        err = load_signing_key(j, c->signing_key_file);
    for (size_t i = 0; !err && i < c->nkey_files; i++)
        err = load_key_file(j, c->key_files[i]);
    if (!err && c->nkey_files == 0 && j->signer.pkey && EVP_PKEY_up_ref(j->signer.pkey))
        add_key(j, j->signer.pkey);
    if (err) {
        kapi_jwt_free(j);
        j = NULL;
    }
    *out = j;
    return err;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void kapi_jwt_free(kapi_jwt *j)
{
    if (!j)
        return;
    free_strings(j->issuers, j->nissuers);
    free_strings(j->audiences, j->naudiences);
    EVP_PKEY_free(j->signer.pkey);
    for (size_t i = 0; i < j->nkeys; i++)
        EVP_PKEY_free(j->keys[i].pkey);
    free(j->keys);
    free(j->jwks_uri);
    free(j);
}

bool kapi_jwt_can_sign(const kapi_jwt *j)
{
    return j->signer.pkey != NULL;
}

bool kapi_jwt_verifies_own(const kapi_jwt *j)
{
    for (size_t i = 0; j->signer.pkey && i < j->nkeys; i++)
        if (strcmp(j->keys[i].kid, j->signer.kid) == 0)
            return true;
    return false;
}

const char *const *kapi_jwt_audiences(const kapi_jwt *j, size_t *n)
{
    *n = j->naudiences;
    return (const char *const *)j->audiences;
}

int64_t kapi_jwt_max_expiration(const kapi_jwt *j)
{
    return j->max_expiration;
}

/* ---- signatures ---- */

/* A DER ECDSA signature as JWS writes it: r and s, each padded to n bytes. */
static bool ecdsa_to_raw(const unsigned char *der, size_t len, int n, kapi_buf *out)
{
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
    unsigned char raw[2 * 66];
    bool ok = sig && BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, n) == n &&
              BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + n, n) == n;
    if (ok)
        kapi_buf_put(out, raw, 2 * (size_t)n);
    ECDSA_SIG_free(sig);
    return ok;
}

/* The DER form of a JWS ECDSA signature (r and s of n bytes each); NULL when it has
 * another length. The caller frees it with OPENSSL_free. */
static unsigned char *ecdsa_to_der(const unsigned char *raw, size_t len, int n, int *der_len)
{
    if (len != 2 * (size_t)n)
        return NULL;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, n, NULL), *s = BN_bin2bn(raw + n, n, NULL);
    unsigned char *der = NULL;
    if (sig && r && s && ECDSA_SIG_set0(sig, r, s)) {
        r = s = NULL;
        *der_len = i2d_ECDSA_SIG(sig, &der);
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return *der_len > 0 ? der : NULL;
}

/* Signs input with the signing key (SHA-256 for RSA, the curve's hash for ECDSA) and
 * appends the JWS signature to out. */
static bool sign(const jwt_key *k, kapi_str input, kapi_buf *out)
{
    const char *md = k->rsa || k->ec_bytes == 32 ? "SHA256"
                     : k->ec_bytes == 48         ? "SHA384"
                                                 : "SHA512";
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *sig = NULL;
    size_t len = 0;
    bool ok = ctx && EVP_DigestSignInit_ex(ctx, NULL, md, NULL, NULL, k->pkey, NULL) == 1 &&
              EVP_DigestSign(ctx, NULL, &len, (const unsigned char *)input.ptr, input.len) == 1 &&
              (sig = OPENSSL_malloc(len)) != NULL &&
              EVP_DigestSign(ctx, sig, &len, (const unsigned char *)input.ptr, input.len) == 1;
    if (ok && k->rsa)
        kapi_buf_put(out, sig, len);
    else if (ok)
        ok = ecdsa_to_raw(sig, len, k->ec_bytes, out);
    OPENSSL_free(sig);
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* True when key k verifies sig over input by algorithm a. */
static bool verify_with(const jwt_key *k, const sig_alg *a, kapi_str input,
                        const unsigned char *sig, size_t siglen)
{
    if (a->rsa != k->rsa || (!a->rsa && a->ec_bytes != k->ec_bytes))
        return false;
    unsigned char *der = NULL;
    int der_len = 0;
    if (!k->rsa && !(der = ecdsa_to_der(sig, siglen, k->ec_bytes, &der_len)))
        return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    bool ok = ctx && EVP_DigestVerifyInit_ex(ctx, &pctx, a->md, NULL, NULL, k->pkey, NULL) == 1;
    if (ok && a->pss)
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
             EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_AUTO) == 1;
    ok = ok && EVP_DigestVerify(ctx, der ? der : sig, der ? (size_t)der_len : siglen,
                                (const unsigned char *)input.ptr, input.len) == 1;
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    ERR_clear_error();
    return ok;
}

/* ---- writing a token ---- */

static void put_str(kapi_buf *b, const char *s)
{
    kapi_json_put_string(b, s, strlen(s));
}

/* {"name":...,"uid":...}, each member omitted when empty (go-jose's omitempty). */
static void put_ref(kapi_buf *b, const kapi_jwt_ref *r)
{
    bool name = r->name && *r->name, uid = r->uid && *r->uid;
    kapi_buf_putc(b, '{');
    if (name) {
        kapi_buf_puts(b, "\"name\":");
        put_str(b, r->name);
    }
    if (uid) {
        kapi_buf_puts(b, name ? ",\"uid\":" : "\"uid\":");
        put_str(b, r->uid);
    }
    kapi_buf_putc(b, '}');
}

/* The kubernetes.io claim, its members sorted. */
static void put_private(kapi_buf *b, const kapi_jwt_claims *c)
{
    const char *sep = "";
    kapi_buf_putc(b, '{');
    if (c->ns && *c->ns) {
        kapi_buf_puts(b, "\"namespace\":");
        put_str(b, c->ns);
        sep = ",";
    }
    if (c->pod.name) {
        kapi_buf_printf(b, "%s\"pod\":", sep);
        put_ref(b, &c->pod);
        sep = ",";
    } else if (c->secret.name) {
        kapi_buf_printf(b, "%s\"secret\":", sep);
        put_ref(b, &c->secret);
        sep = ",";
    }
    kapi_buf_printf(b, "%s\"serviceaccount\":", sep);
    put_ref(b, &c->sa);
    if (c->warnafter)
        kapi_buf_printf(b, ",\"warnafter\":%lld", (long long)c->warnafter);
    kapi_buf_putc(b, '}');
}

/* The claims as go-jose writes them: aud, exp, iat, iss, kubernetes.io, nbf, sub. */
static void put_claims(kapi_buf *b, const kapi_jwt *j, const kapi_jwt_claims *c)
{
    kapi_buf_putc(b, '{');
    if (c->naudiences) {
        kapi_buf_puts(b, "\"aud\":[");
        for (size_t i = 0; i < c->naudiences; i++) {
            if (i)
                kapi_buf_putc(b, ',');
            put_str(b, c->audiences[i]);
        }
        kapi_buf_puts(b, "],");
    }
    kapi_buf_printf(b, "\"exp\":%lld,\"iat\":%lld,\"iss\":", (long long)c->exp, (long long)c->iat);
    put_str(b, j->issuers[0]);
    kapi_buf_puts(b, ",\"kubernetes.io\":");
    put_private(b, c);
    kapi_buf_printf(b, ",\"nbf\":%lld,\"sub\":", (long long)c->nbf);
    char *sub = kapi_xprintf("system:serviceaccount:%s:%s", c->ns ? c->ns : "",
                             c->sa.name ? c->sa.name : "");
    put_str(b, sub);
    free(sub);
    kapi_buf_putc(b, '}');
}

static void put_b64url(kapi_buf *b, const void *p, size_t n)
{
    char *s = b64url(p, n);
    kapi_buf_puts(b, s);
    free(s);
}

const char *kapi_jwt_sign(const kapi_jwt *j, const kapi_jwt_claims *c, kapi_arena *a)
{
    kapi_buf part, tok, sig;
    const char *out = NULL;
    kapi_buf_init(&part);
    kapi_buf_init(&tok);
    kapi_buf_init(&sig);
    kapi_buf_printf(&part, "{\"alg\":\"%s\",\"kid\":\"%s\"}", j->signer.alg, j->signer.kid);
    put_b64url(&tok, part.ptr, part.len);
    kapi_buf_clear(&part);
    put_claims(&part, j, c);
    kapi_buf_putc(&tok, '.');
    put_b64url(&tok, part.ptr, part.len);
    if (j->signer.pkey && sign(&j->signer, (kapi_str){tok.ptr, tok.len}, &sig)) {
        kapi_buf_putc(&tok, '.');
        put_b64url(&tok, sig.ptr, sig.len);
        out = kapi_arena_strndup(a, tok.ptr, tok.len);
    }
    kapi_buf_dispose(&part);
    kapi_buf_dispose(&tok);
    kapi_buf_dispose(&sig);
    return out;
}

/* ---- reading a token ---- */

/* A token taken apart: what its signature covers, the signature, and the header's facts. */
typedef struct parsed {
    kapi_str signing_input; /* header.payload as go-jose signs and checks it: both parts
                             * decoded and encoded again (canonical, unpadded); in the arena */
    unsigned char *sig;     /* in the arena */
    size_t siglen;
    const char *alg; /* NULL when the header has none */
    bool crit;       /* the header names critical extensions */
    kapi_jwt_claims claims;
} parsed;

/* Decodes one part; strip drops trailing '=' first, as go-jose does for the header and
 * the signature. */
static bool decode_part(kapi_str s, bool strip, kapi_buf *out)
{
    while (strip && s.len && s.ptr[s.len - 1] == '=')
        s.len--;
    return kapi_base64_decode(s.ptr, s.len, KAPI_BASE64_URL | KAPI_BASE64_RAW, out) < 0;
}

/* A JSON object from a decoded part, or NULL. */
static json_t *json_part(const kapi_buf *b)
{
    json_t *v = kapi_json_parse(b->ptr, b->len, NULL);
    if (json_is_object(v))
        return v;
    json_decref(v);
    return NULL;
}

/* Go's decoding of a string member: absent or null leaves it unset (NULL); any other type
 * fails. A string holding a NUL fails too: no name or issuer holds one. */
static bool read_string(kapi_arena *a, const json_t *obj, const char *key, const char **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
        return false;
    *out = kapi_arena_strndup(a, json_string_value(v), json_string_length(v));
    return true;
}

/* go-jose's NumericDate: any JSON number, its fraction dropped. */
static bool read_date(const json_t *obj, const char *key, int64_t *out, bool *has)
{
    const json_t *v = json_object_get(obj, key);
    *out = 0;
    *has = false;
    if (!v || json_is_null(v))
        return true;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        *out = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
    } else {
        return false;
    }
    *has = true;
    return true;
}

/* go-jose's Audience: one string or an array of strings. */
static bool read_audiences(kapi_arena *a, const json_t *obj, kapi_jwt_claims *c)
{
    const json_t *v = json_object_get(obj, "aud");
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    const char **auds = kapi_arena_alloc(a, (n + 1) * sizeof(*auds));
    c->audiences = auds;
    c->naudiences = 0;
    if (!v || json_is_null(v))
        return true;
    if (json_is_string(v))
        return read_string(a, obj, "aud", &auds[c->naudiences++]);
    for (size_t i = 0; json_is_array(v) && i < n; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s) || memchr(json_string_value(s), '\0', json_string_length(s)))
            return false;
        auds[c->naudiences++] = kapi_arena_strndup(a, json_string_value(s), json_string_length(s));
    }
    return json_is_array(v);
}

/* A {name, uid} reference; absent or null leaves it unset. */
static bool read_ref(kapi_arena *a, const json_t *obj, const char *key, kapi_jwt_ref *r)
{
    const json_t *v = json_object_get(obj, key);
    *r = (kapi_jwt_ref){NULL, NULL};
    if (!v || json_is_null(v))
        return true;
    if (!json_is_object(v) || !read_string(a, v, "name", &r->name) ||
        !read_string(a, v, "uid", &r->uid))
        return false;
    r->name = r->name ? r->name : "";
    r->uid = r->uid ? r->uid : "";
    return true;
}

/* The kubernetes.io claim. */
static bool read_private(kapi_arena *a, const json_t *claims, kapi_jwt_claims *c)
{
    const json_t *k = json_object_get(claims, "kubernetes.io");
    bool has_warn;
    if (!k || json_is_null(k))
        return true;
    return json_is_object(k) && read_string(a, k, "namespace", &c->ns) &&
           read_ref(a, k, "serviceaccount", &c->sa) && read_ref(a, k, "pod", &c->pod) &&
           read_ref(a, k, "secret", &c->secret) &&
           read_date(k, "warnafter", &c->warnafter, &has_warn);
}

static bool read_claims(kapi_arena *a, const json_t *v, kapi_jwt_claims *c)
{
    memset(c, 0, sizeof(*c));
    return read_string(a, v, "iss", &c->issuer) && read_string(a, v, "sub", &c->subject) &&
           read_audiences(a, v, c) && read_date(v, "exp", &c->exp, &c->has_exp) &&
           read_date(v, "nbf", &c->nbf, &c->has_nbf) && read_date(v, "iat", &c->iat, &c->has_iat) &&
           read_private(a, v, c);
}

/* The header's alg and whether it has "crit"; a kid that is not a string fails. */
static bool read_header(kapi_arena *a, const json_t *h, parsed *p)
{
    const char *kid;
    p->crit = json_object_get(h, "crit") != NULL;
    return read_string(a, h, "alg", &p->alg) && read_string(a, h, "kid", &kid);
}

/* What a signature covers, made from the decoded header and payload as go-jose makes it
 * (so a padded or otherwise unusual encoding of the same bytes verifies the same). */
static kapi_str signing_input(kapi_arena *a, const kapi_buf *hdr, const kapi_buf *payload)
{
    kapi_buf b;
    kapi_buf_init(&b);
    put_b64url(&b, hdr->ptr, hdr->len);
    kapi_buf_putc(&b, '.');
    put_b64url(&b, payload->ptr, payload->len);
    kapi_str s = {kapi_arena_strndup(a, b.ptr, b.len), b.len};
    kapi_buf_dispose(&b);
    return s;
}

static kapi_jwt_rc parse(kapi_str token, kapi_arena *a, parsed *p)
{
    kapi_str parts[3], rest = token;
    kapi_buf hdr, payload, sig;
    json_t *h = NULL, *claims = NULL;
    kapi_jwt_rc rc = KAPI_JWT_MALFORMED;
    size_t dots = 0;
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < token.len && token.len <= KAPI_JWT_MAX_LEN; i++)
        dots += token.ptr[i] == '.';
    if (dots != 2)
        return rc;
    kapi_str_cut(&rest, '.', &parts[0]);
    kapi_str_cut(&rest, '.', &parts[1]);
    parts[2] = rest;
    kapi_buf_init(&hdr);
    kapi_buf_init(&payload);
    kapi_buf_init(&sig);
    if (decode_part(parts[0], true, &hdr) && decode_part(parts[1], false, &payload) &&
        decode_part(parts[2], true, &sig) && (h = json_part(&hdr)) &&
        (claims = json_part(&payload)) && read_header(a, h, p) &&
        read_claims(a, claims, &p->claims)) {
        p->signing_input = signing_input(a, &hdr, &payload);
        p->sig = kapi_arena_alloc(a, sig.len + 1);
        memcpy(p->sig, sig.ptr, sig.len);
        p->siglen = sig.len;
        rc = KAPI_JWT_OK;
    }
    json_decref(h);
    json_decref(claims);
    kapi_buf_dispose(&hdr);
    kapi_buf_dispose(&payload);
    kapi_buf_dispose(&sig);
    return rc;
}

static bool listed(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* True when some key of j verifies p's signature. */
static bool signed_by_a_key(const kapi_jwt *j, const parsed *p)
{
    const sig_alg *a = NULL;
    for (size_t i = 0; p->alg && i < KAPI_ARRAY_LEN(algs); i++)
        if (strcmp(p->alg, algs[i].name) == 0)
            a = &algs[i];
    for (size_t i = 0; a && !p->crit && i < j->nkeys; i++)
        if (verify_with(&j->keys[i], a, p->signing_input, p->sig, p->siglen))
            return true;
    return false;
}

/* An audience of the token that the API has; a token without any is meant for the API's
 * own, as kube-apiserver reads a legacy token. */
static bool audience_shared(const kapi_jwt *j, const kapi_jwt_claims *c)
{
    for (size_t i = 0; i < c->naudiences; i++)
        if (listed(j->audiences, j->naudiences, c->audiences[i]))
            return true;
    return c->naudiences == 0 && j->naudiences > 0;
}

kapi_jwt_rc kapi_jwt_verify(const kapi_jwt *j, kapi_str token, int64_t now, kapi_arena *a,
                            kapi_jwt_claims *out)
{
    parsed p;
    kapi_jwt_rc rc = parse(token, a, &p);
    if (rc == KAPI_JWT_OK && !listed(j->issuers, j->nissuers, p.claims.issuer))
        rc = KAPI_JWT_ISSUER;
    if (rc == KAPI_JWT_OK && !signed_by_a_key(j, &p))
        rc = KAPI_JWT_SIGNATURE;
    if (rc == KAPI_JWT_OK && !audience_shared(j, &p.claims))
        rc = KAPI_JWT_AUDIENCE;
    if (rc == KAPI_JWT_OK && p.claims.has_nbf && now + KAPI_JWT_LEEWAY < p.claims.nbf)
        rc = KAPI_JWT_NOT_YET_VALID;
    if (rc == KAPI_JWT_OK && now - KAPI_JWT_LEEWAY > p.claims.exp)
        rc = KAPI_JWT_EXPIRED;
    *out = p.claims;
    return rc;
}

/* ---- OpenID discovery ---- */

/* Go's url.Parse of the issuer as NewOpenIDMetadata checks it: https, no query, no
 * fragment (and nothing url.Parse refuses: controls and spaces). */
static bool discovery_issuer(const char *iss)
{
    const char *q = strchr(iss, '?'), *f = strchr(iss, '#');
    for (const char *c = iss; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            return false;
    return strncasecmp(iss, "https://", 8) == 0 && (!q || q[1] == '\0' || q[1] == '#') &&
           (!f || f[1] == '\0');
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

bool kapi_jwt_openid_config(const kapi_jwt *j, const char *external_address, kapi_buf *out)
{
    if (!discovery_issuer(j->issuers[0]) || j->nkeys == 0)
        return false;
    kapi_buf_puts(out, "{\"issuer\":");
    put_str(out, j->issuers[0]);
    kapi_buf_puts(out, ",\"jwks_uri\":");
    if (j->jwks_uri) {
        put_str(out, j->jwks_uri);
    } else {
        char *uri = kapi_xprintf("https://%s/openid/v1/jwks", external_address);
        put_str(out, uri);
        free(uri);
    }
    kapi_buf_puts(out, ",\"response_types_supported\":[\"id_token\"],"
                       "\"subject_types_supported\":[\"public\"],"
                       "\"id_token_signing_alg_values_supported\":[");
    const char **names = kapi_xcalloc(j->nkeys, sizeof(*names));
    for (size_t i = 0; i < j->nkeys; i++)
        names[i] = j->keys[i].alg;
    qsort(names, j->nkeys, sizeof(*names), cmp_str);
    for (size_t i = 0; i < j->nkeys; i++)
        if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
            kapi_buf_printf(out, "%s\"%s\"", i ? "," : "", names[i]);
    free(names);
    kapi_buf_puts(out, "]}");
    return true;
}

/* A member holding a big number in unpadded base64url, its bytes padded to pad (0: as
 * few as hold it). */
static bool put_bn(kapi_buf *b, const char *member, const EVP_PKEY *k, const char *param, int pad)
{
    BIGNUM *bn = NULL;
    if (!EVP_PKEY_get_bn_param(k, param, &bn))
        return false;
    int n = pad ? pad : BN_num_bytes(bn);
    unsigned char *bytes = kapi_xmalloc((size_t)n + 1);
    bool ok = BN_bn2binpad(bn, bytes, n) == n;
    if (ok) {
        kapi_buf_printf(b, ",\"%s\":\"", member);
        put_b64url(b, bytes, (size_t)n);
        kapi_buf_putc(b, '"');
    }
    free(bytes);
    BN_free(bn);
    return ok;
}

/* One key as go-jose writes a public JSONWebKey: use, kty, kid, crv, alg, then x and y
 * or n and e. */
static bool put_jwk(kapi_buf *b, const jwt_key *k)
{
    kapi_buf_printf(b, "{\"use\":\"sig\",\"kty\":\"%s\",\"kid\":\"%s\"", k->rsa ? "RSA" : "EC",
                    k->kid);
    if (!k->rsa)
        kapi_buf_printf(b, ",\"crv\":\"%s\"", k->crv);
    kapi_buf_printf(b, ",\"alg\":\"%s\"", k->alg);
    bool ok = k->rsa ? put_bn(b, "n", k->pkey, OSSL_PKEY_PARAM_RSA_N, 0) &&
                           put_bn(b, "e", k->pkey, OSSL_PKEY_PARAM_RSA_E, 0)
                     : put_bn(b, "x", k->pkey, OSSL_PKEY_PARAM_EC_PUB_X, k->ec_bytes) &&
                           put_bn(b, "y", k->pkey, OSSL_PKEY_PARAM_EC_PUB_Y, k->ec_bytes);
    kapi_buf_putc(b, '}');
    return ok;
}

bool kapi_jwt_jwks(const kapi_jwt *j, kapi_buf *out)
{
    if (!discovery_issuer(j->issuers[0]) || j->nkeys == 0)
        return false;
    kapi_buf_puts(out, "{\"keys\":[");
    bool ok = true;
    for (size_t i = 0; ok && i < j->nkeys; i++) {
        if (i)
            kapi_buf_putc(out, ',');
        ok = put_jwk(out, &j->keys[i]);
    }
    kapi_buf_puts(out, "]}");
    ERR_clear_error();
    return ok;
}
