/*
 * fuzz_jwt: ServiceAccount tokens (src/auth/jwt.c), as a bearer token reaches them.
 *
 * The first byte picks what the rest is:
 *   even  a token: verified (kapi_jwt_verify: read, then checked) and authenticated with
 *         (kapi_auth_authenticate, a ServiceAccount lookup that finds every account);
 *   odd   a header and a payload, split at the first newline, made into a token signed
 *         ES256 with the target's key, so that the claims past the signature are read too.
 * The answers are not checked, only that no input crashes, trips a sanitizer or leaks.
 */
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "fuzz.h"

#define KEY "tests/data/auth/sa-ec.key"

static char auth_dir[64];

static void remove_auth_dir(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/admin-token", auth_dir);
    unlink(path);
    rmdir(auth_dir);
}

/* The authenticator over the test key, and the key itself; made once. */
static kapi_auth *fuzz_auth(EVP_PKEY **key)
{
    static kapi_auth *auth;
    static EVP_PKEY *pkey;
    if (!auth) {
        snprintf(auth_dir, sizeof(auth_dir), "/tmp/kapi-fuzz-jwt-XXXXXX");
        if (!mkdtemp(auth_dir))
            fuzz_setup_failed("mkdtemp", NULL);
        atexit(remove_auth_dir);
        kapi_auth_config c = {.dir = auth_dir, .sa = {.signing_key_file = KEY}};
        kapi_error *err = kapi_auth_new(&auth, &c);
        if (err)
            fuzz_setup_failed("auth", err);
        FILE *f = fopen(KEY, "r");
        pkey = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
        if (f)
            fclose(f);
        if (!pkey)
            fuzz_setup_failed("key", NULL);
    }
    *key = pkey;
    return auth;
}

static bool any_account(void *ctx, kapi_str ns, kapi_str name, kapi_arena *a, const char **uid,
                        int64_t *deleted)
{
    (void)ctx, (void)ns, (void)name;
    *uid = kapi_arena_strdup(a, "0f6b0bb8-5b43-4c5e-a19e-2b1b2e1b3c4d");
    *deleted = 0;
    return true;
}

static void token(kapi_auth *auth, const char *tok, size_t len)
{
    const kapi_jwt *j = kapi_auth_jwt(auth);
    kapi_arena a;
    kapi_jwt_claims c;
    kapi_sa_lookup sa = {any_account, NULL};
    kapi_user u;
    kapi_arena_init(&a);
    kapi_jwt_verify(j, (kapi_str){tok, len}, 1795662300, &a, &c);
    char *header = kapi_xprintf("Bearer %.*s", (int)len, tok);
    kapi_auth_authenticate(auth, header, NULL, &sa, &a, &u);
    free(header);
    kapi_arena_dispose(&a);
}

static void put_b64(kapi_buf *b, const void *p, size_t n)
{
    char *s = kapi_base64_encode(p, n, KAPI_BASE64_URL | KAPI_BASE64_RAW);
    kapi_buf_puts(b, s);
    free(s);
}

/* header.payload, signed ES256 with key. */
static void signed_token(kapi_auth *auth, EVP_PKEY *key, const char *hdr, size_t hn,
                         const char *payload, size_t pn)
{
    kapi_buf t;
    kapi_buf_init(&t);
    put_b64(&t, hdr, hn);
    kapi_buf_putc(&t, '.');
    put_b64(&t, payload, pn);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char der[128], raw[64];
    size_t len = sizeof(der);
    if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
        EVP_DigestSign(ctx, der, &len, (const unsigned char *)t.ptr, t.len) == 1) {
        const unsigned char *p = der;
        ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
        if (sig && BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, 32) == 32 &&
            BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + 32, 32) == 32) {
            kapi_buf_putc(&t, '.');
            put_b64(&t, raw, sizeof(raw));
            token(auth, t.ptr, t.len);
        }
        ECDSA_SIG_free(sig);
    }
    EVP_MD_CTX_free(ctx);
    kapi_buf_dispose(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    EVP_PKEY *key;
    kapi_auth *auth = fuzz_auth(&key);
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    if (data[0] % 2 == 0) {
        token(auth, text, n);
        return 0;
    }
    const char *nl = memchr(text, '\n', n);
    size_t hn = nl ? (size_t)(nl - text) : n;
    signed_token(auth, key, text, hn, nl ? nl + 1 : "", nl ? n - hn - 1 : 0);
    return 0;
}
