/*
 * Unit tests for src/auth/jwt.c and the ServiceAccount part of token.c: tokens signed and
 * verified (RS256, ES256), each reason a token is refused, kube-apiserver's own token and
 * discovery documents (tests/data/auth), and the user a valid token authenticates as.
 */
#include "auth_test.h"

#include "base/base.h"

#define DATA "tests/data/auth/"
#define NOW 1795662300 /* a second after kube-token.jwt was issued */

static kapi_jwt *new_jwt(const char *signing_key, const char *key_file, const char *issuer)
{
    kapi_jwt *j = NULL;
    const char *issuers[] = {issuer}, *files[] = {key_file};
    kapi_sa_config c = {.issuers = issuers,
                        .nissuers = issuer ? 1 : 0,
                        .signing_key_file = signing_key,
                        .key_files = files,
                        .nkey_files = key_file ? 1 : 0};
    CHECK_OK(kapi_jwt_new(&j, &c));
    return j;
}

/* The claims of a token for ServiceAccount ns1/robot issued at now for an hour. */
static kapi_jwt_claims claims_at(int64_t now, const char *const *auds, size_t nauds)
{
    return (kapi_jwt_claims){.audiences = auds,
                             .naudiences = nauds,
                             .iat = now,
                             .nbf = now,
                             .exp = now + 3600,
                             .ns = "ns1",
                             .sa = {"robot", "0f6b0bb8-5b43-4c5e-a19e-2b1b2e1b3c4d"}};
}

static const char *const api_audience[] = {KAPI_SA_DEFAULT_ISSUER};

static kapi_jwt_rc verify(const kapi_jwt *j, const char *token, int64_t now)
{
    kapi_arena a;
    kapi_jwt_claims c;
    kapi_arena_init(&a);
    kapi_jwt_rc rc = kapi_jwt_verify(j, kapi_str_c(token), now, &a, &c);
    kapi_arena_dispose(&a);
    return rc;
}

/* The JSON of part i (0 header, 1 payload) of token, decoded; the caller frees it. */
static char *part(const char *token, int i)
{
    const char *p = token;
    for (int k = 0; k < i; k++)
        p = strchr(p, '.') + 1;
    kapi_buf b;
    kapi_buf_init(&b);
    CHECK(kapi_base64_decode(p, strcspn(p, "."), KAPI_BASE64_URL | KAPI_BASE64_RAW, &b) < 0);
    return kapi_buf_detach(&b, NULL);
}

/* A token of the given header and payload JSON with signature sig (base64url). */
static char *forge(const char *header, const char *payload, const char *sig)
{
    char *h = kapi_base64_encode(header, strlen(header), KAPI_BASE64_URL | KAPI_BASE64_RAW);
    char *p = kapi_base64_encode(payload, strlen(payload), KAPI_BASE64_URL | KAPI_BASE64_RAW);
    char *t = kapi_xprintf("%s.%s.%s", h, p, sig);
    free(h);
    free(p);
    return t;
}

TEST(jwt_rs256_round_trip)
{
    kapi_jwt *j = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, api_audience, 1), got;
    const char *tok = kapi_jwt_sign(j, &c, &a);
    CHECK(tok != NULL);
    char *header = part(tok, 0), *payload = part(tok, 1);
    CHECK(strncmp(header, "{\"alg\":\"RS256\",\"kid\":\"", 22) == 0);
    CHECK_STR_EQ(payload,
                 "{\"aud\":[\"https://kubernetes.default.svc.cluster.local\"],\"exp\":1795665900,"
                 "\"iat\":1795662300,\"iss\":\"https://kubernetes.default.svc.cluster.local\","
                 "\"kubernetes.io\":{\"namespace\":\"ns1\",\"serviceaccount\":{\"name\":\"robot\","
                 "\"uid\":\"0f6b0bb8-5b43-4c5e-a19e-2b1b2e1b3c4d\"}},\"nbf\":1795662300,"
                 "\"sub\":\"system:serviceaccount:ns1:robot\"}");
    CHECK_INT_EQ(kapi_jwt_verify(j, kapi_str_c(tok), NOW, &a, &got), KAPI_JWT_OK);
    CHECK_STR_EQ(got.ns, "ns1");
    CHECK_STR_EQ(got.sa.name, "robot");
    CHECK_STR_EQ(got.sa.uid, "0f6b0bb8-5b43-4c5e-a19e-2b1b2e1b3c4d");
    CHECK_STR_EQ(got.subject, "system:serviceaccount:ns1:robot");
    CHECK_STR_EQ(got.issuer, KAPI_SA_DEFAULT_ISSUER);
    CHECK(got.pod.name == NULL && got.secret.name == NULL);
    CHECK(kapi_jwt_verifies_own(j));
    free(header);
    free(payload);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
}

TEST(jwt_es256_round_trip)
{
    kapi_jwt *j = new_jwt(DATA "sa-ec.key", NULL, NULL);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, api_audience, 1);
    const char *tok = kapi_jwt_sign(j, &c, &a);
    char *header = part(tok, 0);
    CHECK(strncmp(header, "{\"alg\":\"ES256\",\"kid\":\"", 22) == 0);
    /* r and s of 32 bytes each: 86 base64url characters */
    CHECK_INT_EQ(strlen(strrchr(tok, '.') + 1), 86);
    CHECK_INT_EQ(verify(j, tok, NOW), KAPI_JWT_OK);
    /* the public key alone verifies too */
    kapi_jwt *pub = new_jwt(NULL, DATA "sa-ec.pub", NULL);
    CHECK(!kapi_jwt_can_sign(pub));
    CHECK_INT_EQ(verify(pub, tok, NOW), KAPI_JWT_OK);
    kapi_jwt_free(pub);
    free(header);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
}

/* exp and nbf with go-jose's minute of leeway; an absent exp is long past. */
TEST(jwt_expired_and_not_yet_valid)
{
    kapi_jwt *j = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, api_audience, 1);
    const char *tok = kapi_jwt_sign(j, &c, &a);
    CHECK_INT_EQ(verify(j, tok, NOW + 3600 + 60), KAPI_JWT_OK);
    CHECK_INT_EQ(verify(j, tok, NOW + 3600 + 61), KAPI_JWT_EXPIRED);
    CHECK_INT_EQ(verify(j, tok, NOW - 60), KAPI_JWT_OK);
    CHECK_INT_EQ(verify(j, tok, NOW - 61), KAPI_JWT_NOT_YET_VALID);
    c.exp = 0;
    CHECK_INT_EQ(verify(j, kapi_jwt_sign(j, &c, &a), NOW), KAPI_JWT_EXPIRED);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
}

/* A token must share an audience with the API's (--api-audiences, else the issuers); one
 * with none is read as meant for the API, as kube reads a legacy token. */
TEST(jwt_audiences)
{
    static const char *const other[] = {"vault"};
    static const char *const both[] = {"vault", KAPI_SA_DEFAULT_ISSUER};
    static const char *const mine[] = {"kapi-api"};
    kapi_jwt *j = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, other, 1);
    CHECK_INT_EQ(verify(j, kapi_jwt_sign(j, &c, &a), NOW), KAPI_JWT_AUDIENCE);
    c = claims_at(NOW, both, 2);
    CHECK_INT_EQ(verify(j, kapi_jwt_sign(j, &c, &a), NOW), KAPI_JWT_OK);
    c = claims_at(NOW, NULL, 0);
    CHECK_INT_EQ(verify(j, kapi_jwt_sign(j, &c, &a), NOW), KAPI_JWT_OK);
    /* --api-audiences replaces the issuer as the audience */
    kapi_jwt *k = NULL;
    kapi_sa_config cfg = {
        .signing_key_file = DATA "sa-rsa.key", .audiences = mine, .naudiences = 1};
    CHECK_OK(kapi_jwt_new(&k, &cfg));
    c = claims_at(NOW, api_audience, 1);
    CHECK_INT_EQ(verify(k, kapi_jwt_sign(k, &c, &a), NOW), KAPI_JWT_AUDIENCE);
    c = claims_at(NOW, mine, 1);
    CHECK_INT_EQ(verify(k, kapi_jwt_sign(k, &c, &a), NOW), KAPI_JWT_OK);
    size_t n;
    CHECK_STR_EQ(kapi_jwt_audiences(k, &n)[0], "kapi-api");
    kapi_jwt_free(k);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
}

TEST(jwt_wrong_key_and_wrong_issuer)
{
    kapi_jwt *j = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    kapi_jwt *other = new_jwt(DATA "sa-rsa-other.key", NULL, NULL);
    kapi_jwt *ec = new_jwt(DATA "sa-ec.key", NULL, NULL);
    kapi_jwt *elsewhere = new_jwt(DATA "sa-rsa.key", NULL, "https://issuer.example.com");
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, api_audience, 1);
    CHECK_INT_EQ(verify(j, kapi_jwt_sign(other, &c, &a), NOW), KAPI_JWT_SIGNATURE);
    CHECK_INT_EQ(verify(j, kapi_jwt_sign(ec, &c, &a), NOW), KAPI_JWT_SIGNATURE);
    CHECK_INT_EQ(verify(j, kapi_jwt_sign(elsewhere, &c, &a), NOW), KAPI_JWT_ISSUER);
    /* several issuers: every one is accepted */
    const char *issuers[] = {KAPI_SA_DEFAULT_ISSUER, "https://issuer.example.com"};
    kapi_jwt *two = NULL;
    kapi_sa_config cfg = {.issuers = issuers, .nissuers = 2, .signing_key_file = DATA "sa-rsa.key"};
    CHECK_OK(kapi_jwt_new(&two, &cfg));
    CHECK_INT_EQ(verify(two, kapi_jwt_sign(elsewhere, &c, &a), NOW), KAPI_JWT_OK);
    CHECK_INT_EQ(verify(two, kapi_jwt_sign(j, &c, &a), NOW), KAPI_JWT_OK);
    kapi_jwt_free(two);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
    kapi_jwt_free(other);
    kapi_jwt_free(ec);
    kapi_jwt_free(elsewhere);
}

/* "alg":"none", an HMAC keyed with the public key, an alg the key does not make, a
 * "crit" header: all refused, whatever the claims. */
TEST(jwt_algorithms_refused)
{
    kapi_jwt *j = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, api_audience, 1);
    const char *good = kapi_jwt_sign(j, &c, &a);
    char *payload = part(good, 1);
    const char *sig = strrchr(good, '.') + 1;
    static const char *const headers[] = {
        "{\"alg\":\"none\"}",  "{\"alg\":\"HS256\"}",
        "{\"alg\":\"ES256\"}", "{\"alg\":\"RS256\",\"crit\":[\"exp\"],\"exp\":1}",
        "{\"kid\":\"x\"}",
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(headers); i++) {
        char *t = forge(headers[i], payload, i == 0 ? "" : sig);
        if (verify(j, t, NOW) != KAPI_JWT_SIGNATURE)
            test_fail(__FILE__, __LINE__, "header %s was not refused", headers[i]);
        free(t);
    }
    /* the same payload and signature under RS256 verify: only the header changed above */
    char *t = forge("{\"alg\":\"RS256\"}", payload, sig);
    CHECK_INT_EQ(verify(j, t, NOW), KAPI_JWT_SIGNATURE); /* the signed header had a kid */
    free(t);
    char *h = part(good, 0);
    t = forge(h, payload, sig);
    CHECK_INT_EQ(verify(j, t, NOW), KAPI_JWT_OK);
    free(t);
    free(h);
    free(payload);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
}

TEST(jwt_tampered_payload)
{
    kapi_jwt *j = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, api_audience, 1);
    const char *good = kapi_jwt_sign(j, &c, &a);
    char *h = part(good, 0), *p = part(good, 1);
    char *robot = strstr(p, "\"robot\"");
    memcpy(robot, "\"admin\"", 7);
    char *t = forge(h, p, strrchr(good, '.') + 1);
    CHECK_INT_EQ(verify(j, t, NOW), KAPI_JWT_SIGNATURE);
    free(t);
    /* one character of the signature changed */
    t = kapi_xstrdup(good);
    char *last = t + strlen(t) - 5;
    *last = *last == 'A' ? 'B' : 'A';
    CHECK_INT_EQ(verify(j, t, NOW), KAPI_JWT_SIGNATURE);
    free(t);
    free(h);
    free(p);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
}

TEST(jwt_malformed)
{
    kapi_jwt *j = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_jwt_claims c = claims_at(NOW, api_audience, 1);
    const char *good = kapi_jwt_sign(j, &c, &a);
    char *h = part(good, 0);
    const char *sig = strrchr(good, '.') + 1;
    char *dot = kapi_xprintf("%s.", good), *padded = NULL;
    static const char *const cases[] = {"", "a.b", "a.b.c.d", "..", "e30.e30.!!", "e30.bnVsbA.AA"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++)
        CHECK_INT_EQ(verify(j, cases[i], NOW), KAPI_JWT_MALFORMED);
    CHECK_INT_EQ(verify(j, dot, NOW), KAPI_JWT_MALFORMED);
    /* claims of the wrong types */
    static const char *const payloads[] = {
        "{\"iss\":\"https://kubernetes.default.svc.cluster.local\",\"exp\":\"1\"}",
        "{\"iss\":\"https://kubernetes.default.svc.cluster.local\",\"aud\":[1]}",
        "{\"iss\":\"https://kubernetes.default.svc.cluster.local\",\"kubernetes.io\":[]}",
        "{\"iss\":\"https://kubernetes.default.svc.cluster.local\",\"sub\":{}}",
        "[]",
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(payloads); i++) {
        char *t = forge(h, payloads[i], sig);
        if (verify(j, t, NOW) != KAPI_JWT_MALFORMED)
            test_fail(__FILE__, __LINE__, "payload %s was read", payloads[i]);
        free(t);
    }
    /* go-jose strips '=' from the header and the signature: still the same token */
    char *first = strchr(good, '.');
    padded = kapi_xprintf("%.*s==%.*s==", (int)(first - good), good, (int)strlen(first), first);
    CHECK_INT_EQ(verify(j, padded, NOW), KAPI_JWT_OK);
    free(padded);
    free(dot);
    free(h);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
}

/* A token kube-apiserver issued verifies with its public key, and its kid is the one
 * kapi computes. */
TEST(jwt_kube_token_verifies)
{
    char *tok = test_slurp(DATA "kube-token.jwt", NULL);
    CHECK(tok != NULL);
    tok[strcspn(tok, "\n")] = '\0';
    kapi_jwt *j = new_jwt(NULL, DATA "kube-sa.pub", NULL);
    kapi_arena a;
    kapi_jwt_claims c;
    kapi_arena_init(&a);
    CHECK_INT_EQ(kapi_jwt_verify(j, kapi_str_c(tok), NOW, &a, &c), KAPI_JWT_OK);
    CHECK_STR_EQ(c.ns, "saref-rec");
    CHECK_STR_EQ(c.sa.name, "robot");
    CHECK_STR_EQ(c.sa.uid, "fca1f056-dc52-431e-b230-bd0b1cf6ad9f");
    CHECK_INT_EQ(c.naudiences, 2);
    CHECK_STR_EQ(c.audiences[1], "kapi-test");
    char *h = part(tok, 0);
    CHECK_STR_EQ(h, "{\"alg\":\"RS256\",\"kid\":\"ToFO2ziJsyy6ziLCNgPS0RqXpvoHYgn7Svvpckfc6aM\"}");
    /* with kapi's own key instead, kube's token is refused */
    kapi_jwt *mine = new_jwt(DATA "sa-rsa.key", NULL, NULL);
    CHECK_INT_EQ(verify(mine, tok, NOW), KAPI_JWT_SIGNATURE);
    kapi_jwt_free(mine);
    free(h);
    kapi_arena_dispose(&a);
    kapi_jwt_free(j);
    free(tok);
}

/* The discovery documents for kube's key are kube's bytes. */
TEST(jwt_openid_documents_as_kube)
{
    kapi_jwt *j = new_jwt(NULL, DATA "kube-sa.pub", NULL);
    kapi_buf cfg, keys;
    kapi_buf_init(&cfg);
    kapi_buf_init(&keys);
    CHECK(kapi_jwt_openid_config(j, "192.0.2.1:16443", &cfg));
    CHECK(kapi_jwt_jwks(j, &keys));
    char *kube_cfg = test_slurp(DATA "kube-openid-configuration.json", NULL);
    char *kube_keys = test_slurp(DATA "kube-jwks.json", NULL);
    CHECK_STR_EQ(cfg.ptr, kube_cfg);
    CHECK_STR_EQ(keys.ptr, kube_keys);
    free(kube_cfg);
    free(kube_keys);
    kapi_jwt_free(j);
    /* an ECDSA key: crv and x, y padded to the curve's size; both algs listed, sorted */
    const char *files[] = {DATA "sa-ec.pub", DATA "kube-sa.pub"};
    kapi_sa_config c = {.key_files = files, .nkey_files = 2};
    CHECK_OK(kapi_jwt_new(&j, &c));
    kapi_buf_clear(&cfg);
    kapi_buf_clear(&keys);
    CHECK(kapi_jwt_openid_config(j, "h:1", &cfg));
    CHECK_CONTAINS(cfg.ptr, "\"id_token_signing_alg_values_supported\":[\"ES256\",\"RS256\"]}");
    CHECK(kapi_jwt_jwks(j, &keys));
    static const char ec_first[] = "{\"keys\":[{\"use\":\"sig\",\"kty\":\"EC\",\"kid\":\"";
    CHECK(strncmp(keys.ptr, ec_first, sizeof(ec_first) - 1) == 0);
    CHECK_CONTAINS(keys.ptr, "\"crv\":\"P-256\",\"alg\":\"ES256\",\"x\":\"");
    kapi_jwt_free(j);
    /* an issuer that is no https URL turns discovery off, as in kube */
    j = new_jwt(NULL, DATA "kube-sa.pub", "kapi");
    CHECK(!kapi_jwt_openid_config(j, "h:1", &cfg));
    CHECK(!kapi_jwt_jwks(j, &keys));
    kapi_jwt_free(j);
    kapi_buf_dispose(&cfg);
    kapi_buf_dispose(&keys);
}

TEST(jwt_key_files)
{
    kapi_jwt *j = NULL;
    char *bad = tmp_path("bad.pem"), *missing = tmp_path("missing.pem");
    spit(bad, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
    const char *files[] = {bad};
    kapi_sa_config c = {.key_files = files, .nkey_files = 1};
    kapi_error *err = kapi_jwt_new(&j, &c);
    CHECK(err && !j);
    CHECK_CONTAINS(err->message, "holds no RSA or ECDSA key");
    kapi_error_free(err);
    c = (kapi_sa_config){.signing_key_file = missing};
    err = kapi_jwt_new(&j, &c);
    CHECK(err && !j);
    kapi_error_free(err);
    /* a verifying key file without the signing key's public half */
    files[0] = DATA "sa-ec.pub";
    c = (kapi_sa_config){
        .signing_key_file = DATA "sa-rsa.key", .key_files = files, .nkey_files = 1};
    CHECK_OK(kapi_jwt_new(&j, &c));
    CHECK(!kapi_jwt_verifies_own(j));
    kapi_jwt_free(j);
    free(bad);
    free(missing);
}

/* ---- kapi_auth_authenticate ---- */

typedef struct fake_sa {
    const char *uid; /* NULL: no such ServiceAccount */
    int64_t deleted;
} fake_sa;

static bool fake_get(void *ctx, kapi_str ns, kapi_str name, kapi_arena *a, const char **uid,
                     int64_t *deleted)
{
    const fake_sa *f = ctx;
    if (!f->uid || !kapi_str_eqc(ns, "ns1") || !kapi_str_eqc(name, "robot"))
        return false;
    *uid = kapi_arena_strdup(a, f->uid);
    *deleted = f->deleted;
    return true;
}

TEST(auth_serviceaccount_token_user)
{
    kapi_auth *a = NULL;
    char *dir = tmp_path("data");
    kapi_auth_config cfg = {.dir = dir, .sa = {.signing_key_file = DATA "sa-rsa.key"}};
    CHECK_OK(kapi_auth_new(&a, &cfg));
    kapi_arena arena;
    kapi_arena_init(&arena);
    int64_t now = kapi_time_now_ns() / 1000000000;
    kapi_jwt_claims c = claims_at(now, api_audience, 1);
    char *h = kapi_xprintf("Bearer %s", kapi_jwt_sign(kapi_auth_jwt(a), &c, &arena));
    fake_sa sa = {"0f6b0bb8-5b43-4c5e-a19e-2b1b2e1b3c4d", 0};
    kapi_sa_lookup lookup = {fake_get, &sa};
    kapi_user u;
    CHECK(kapi_auth_authenticate(a, h, NULL, &lookup, &arena, &u));
    CHECK_STR_EQ(u.name, "system:serviceaccount:ns1:robot");
    CHECK_STR_EQ(u.uid, "0f6b0bb8-5b43-4c5e-a19e-2b1b2e1b3c4d");
    CHECK_STR_EQ(u.groups[0], "system:serviceaccounts");
    CHECK_STR_EQ(u.groups[1], "system:serviceaccounts:ns1");
    CHECK_STR_EQ(u.groups[2], "system:authenticated");
    CHECK(u.groups[3] == NULL);
    /* deleted less than the leeway ago: still valid; longer: not */
    sa.deleted = now - 30;
    CHECK(kapi_auth_authenticate(a, h, NULL, &lookup, &arena, &u));
    sa.deleted = now - 120;
    CHECK(!kapi_auth_authenticate(a, h, NULL, &lookup, &arena, &u));
    /* made again under the same name: another uid */
    sa = (fake_sa){"another-uid", 0};
    CHECK(!kapi_auth_authenticate(a, h, NULL, &lookup, &arena, &u));
    /* gone */
    sa.uid = NULL;
    CHECK(!kapi_auth_authenticate(a, h, NULL, &lookup, &arena, &u));
    /* bound to a Pod, which kapi does not serve */
    sa.uid = "0f6b0bb8-5b43-4c5e-a19e-2b1b2e1b3c4d";
    c.pod = (kapi_jwt_ref){"web-0", "pod-uid"};
    char *bound = kapi_xprintf("Bearer %s", kapi_jwt_sign(kapi_auth_jwt(a), &c, &arena));
    CHECK(!kapi_auth_authenticate(a, bound, NULL, &lookup, &arena, &u));
    /* without a lookup, a ServiceAccount token authenticates nobody */
    CHECK(!kapi_auth_authenticate(a, h, NULL, NULL, NULL, &u));
    free(bound);
    free(h);
    free(dir);
    kapi_arena_dispose(&arena);
    kapi_auth_free(a);
}

/* sa.key is made on first start and kept afterwards. */
TEST(pki_sa_key_generated_then_reused)
{
    char *dir = tmp_path("data"), *path = NULL, *again = NULL;
    CHECK_OK(kapi_pki_sa_key(&path, dir));
    CHECK_INT_EQ(file_mode(path), 0600);
    EVP_PKEY *k = load_key(path);
    CHECK(k && EVP_PKEY_get_base_id(k) == EVP_PKEY_EC && EVP_PKEY_get_bits(k) == 256);
    char *first = test_slurp(path, NULL);
    CHECK_OK(kapi_pki_sa_key(&again, dir));
    char *second = test_slurp(again, NULL);
    CHECK_STR_EQ(first, second);
    EVP_PKEY_free(k);
    free(first);
    free(second);
    free(path);
    free(again);
    free(dir);
}
