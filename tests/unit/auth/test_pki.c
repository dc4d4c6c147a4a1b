/* Unit tests for src/auth/pki.c: generation, reuse, repair, verification, a TLS handshake. */
#include "auth_test.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <unistd.h>

static const char *pki_files[] = {"ca.crt", "ca.key", "server.crt", "server.key"};

/* The four files of DIR, concatenated: equal strings mean nothing was rewritten. */
static char *pki_bytes(const char *dir)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(pki_files); i++) {
        char *path = kapi_xprintf("%s/%s", dir, pki_files[i]);
        char *data = test_slurp(path, NULL);
        kapi_buf_puts(&b, data ? data : "(missing)");
        free(data);
        free(path);
    }
    return kapi_buf_detach(&b, NULL);
}

static char *ensure(const char *extra_ip)
{
    kapi_pki pki;
    char *dir = tmp_path("data/pki");
    CHECK_OK(kapi_pki_ensure(&pki, dir, extra_ip));
    kapi_pki_dispose(&pki);
    return dir;
}

TEST(auth_pki_generate_then_reuse)
{
    kapi_pki pki;
    char *dir = tmp_path("data/pki");
    CHECK_OK(kapi_pki_ensure(&pki, dir, NULL));
    char *want = kapi_xprintf("%s/server.key", dir);
    CHECK_STR_EQ(pki.server_key, want);
    CHECK_INT_EQ(file_mode(dir), 0700);
    CHECK_INT_EQ(file_mode(pki.ca_key), 0600);
    CHECK_INT_EQ(file_mode(pki.server_key), 0600);
    CHECK_INT_EQ(file_mode(pki.ca_cert), 0600);
    char *first = pki_bytes(dir);
    CHECK(strstr(first, "(missing)") == NULL);
    kapi_pki_dispose(&pki);
    CHECK(pki.ca_cert == NULL);

    CHECK_OK(kapi_pki_ensure(&pki, dir, NULL));
    char *second = pki_bytes(dir);
    CHECK_STR_EQ(first, second);
    kapi_pki_dispose(&pki);
    free(first);
    free(second);
    free(want);
    free(dir);
}

static int verify_server(const char *dir, const char *ip, const char *host)
{
    char *ca_path = kapi_xprintf("%s/ca.crt", dir), *srv_path = kapi_xprintf("%s/server.crt", dir);
    X509 *ca = load_cert(ca_path), *srv = load_cert(srv_path);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    CHECK(ca && srv && store && ctx);
    X509_STORE_add_cert(store, ca);
    CHECK(X509_STORE_CTX_init(ctx, store, srv, NULL) == 1);
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (ip)
        X509_VERIFY_PARAM_set1_ip_asc(param, ip);
    if (host)
        X509_VERIFY_PARAM_set1_host(param, host, 0);
    int ok = X509_verify_cert(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(ca);
    X509_free(srv);
    free(ca_path);
    free(srv_path);
    ERR_clear_error();
    return ok;
}

/* 1 when extension NID of X is critical, 0 when not, -1 when absent. */
static int ext_critical(X509 *x, int nid)
{
    int i = X509_get_ext_by_NID(x, nid, -1);
    return i < 0 ? -1 : X509_EXTENSION_get_critical(X509_get_ext(x, i));
}

TEST(auth_pki_server_cert_verifies_with_sans)
{
    char *dir = ensure("10.1.2.3");
    CHECK_INT_EQ(verify_server(dir, "127.0.0.1", NULL), 1);
    CHECK_INT_EQ(verify_server(dir, "::1", NULL), 1);
    CHECK_INT_EQ(verify_server(dir, "10.1.2.3", NULL), 1);
    CHECK_INT_EQ(verify_server(dir, NULL, "localhost"), 1);
    CHECK_INT_EQ(verify_server(dir, NULL, "kapi"), 1);
    CHECK(verify_server(dir, "10.9.9.9", NULL) != 1);
    CHECK(verify_server(dir, NULL, "example.com") != 1);

    char *path = kapi_xprintf("%s/ca.crt", dir);
    X509 *ca = load_cert(path);
    free(path);
    path = kapi_xprintf("%s/server.crt", dir);
    X509 *srv = load_cert(path);
    CHECK(X509_check_ca(ca) == 1 && X509_check_ca(srv) == 0);
    CHECK(ext_critical(ca, NID_basic_constraints) == 1 && ext_critical(ca, NID_key_usage) == 1);
    CHECK(ext_critical(srv, NID_key_usage) == 1 && ext_critical(srv, NID_ext_key_usage) == 0);
    CHECK((X509_get_key_usage(ca) & (KU_KEY_CERT_SIGN | KU_CRL_SIGN)) ==
          (KU_KEY_CERT_SIGN | KU_CRL_SIGN));
    CHECK(X509_get_key_usage(srv) == KU_DIGITAL_SIGNATURE);
    CHECK(X509_get_extended_key_usage(srv) == XKU_SSL_SERVER);
    CHECK(X509_get0_subject_key_id(ca) != NULL && X509_get0_authority_key_id(srv) != NULL);
    CHECK(ASN1_OCTET_STRING_cmp(X509_get0_subject_key_id(ca), X509_get0_authority_key_id(srv)) ==
          0);
    CHECK(EVP_PKEY_is_a(X509_get0_pubkey(srv), "EC"));
    char curve[32] = "";
    EVP_PKEY_get_utf8_string_param(X509_get0_pubkey(srv), "group", curve, sizeof(curve), NULL);
    CHECK_STR_EQ(curve, "prime256v1");
    char cn[64] = "";
    X509_NAME_get_text_by_NID(X509_get_subject_name(srv), NID_commonName, cn, sizeof(cn));
    CHECK_STR_EQ(cn, "kapi");
    X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, cn, sizeof(cn));
    CHECK_STR_EQ(cn, "kapi-ca");
    X509_free(ca);
    X509_free(srv);
    free(path);
    free(dir);
}

/* The number of subjectAltNames of DIR's server certificate. */
static int san_count(const char *dir)
{
    char *path = kapi_xprintf("%s/server.crt", dir);
    X509 *srv = load_cert(path);
    GENERAL_NAMES *names = X509_get_ext_d2i(srv, NID_subject_alt_name, NULL, NULL);
    int n = names ? sk_GENERAL_NAME_num(names) : -1;
    GENERAL_NAMES_free(names);
    X509_free(srv);
    free(path);
    return n;
}

TEST(auth_pki_extra_ip_rules)
{
    static const struct {
        const char *extra;
        int sans;
    } cases[] = {
        {NULL, 4},         {"0.0.0.0", 4}, {"::", 4},       {"127.0.0.1", 4}, {"::1", 4},
        {"kapi.local", 4}, {"1.2.3", 4},   {"10.0.0.7", 5}, {"[fd00::1]", 5}, {"fd00::2", 5},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        char *dir = ensure(cases[i].extra);
        if (san_count(dir) != cases[i].sans)
            test_fail(__FILE__, __LINE__, "extra %s: %d SANs", cases[i].extra, san_count(dir));
        free(dir);
    }
    char *dir = ensure(NULL);
    CHECK(verify_server(dir, "fd00::2", NULL) == 1); /* reused: still covers the last extra */
    free(dir);
}

/* Replaces one file of the PKI, as a crash or a person might. */
static void clobber(const char *dir, const char *name, const char *data)
{
    char *path = kapi_xprintf("%s/%s", dir, name);
    if (data)
        spit(path, data);
    else
        unlink(path);
    free(path);
}

static char *read_pki_file(const char *dir, const char *name)
{
    char *path = kapi_xprintf("%s/%s", dir, name);
    char *data = test_slurp(path, NULL);
    free(path);
    return data;
}

TEST(auth_pki_reissue_and_repair)
{
    char *dir = ensure(NULL);
    char *ca = read_pki_file(dir, "ca.crt"), *srv = read_pki_file(dir, "server.crt");

    /* A new bind address: same CA, a new server certificate covering it. */
    free(ensure("192.168.7.9"));
    char *ca2 = read_pki_file(dir, "ca.crt"), *srv2 = read_pki_file(dir, "server.crt");
    CHECK_STR_EQ(ca, ca2);
    CHECK(strcmp(srv, srv2) != 0);
    CHECK(verify_server(dir, "192.168.7.9", NULL) == 1);

    /* A lost server key: same CA, new server pair. */
    clobber(dir, "server.key", NULL);
    free(ensure(NULL));
    char *ca3 = read_pki_file(dir, "ca.crt");
    CHECK_STR_EQ(ca, ca3);
    CHECK(verify_server(dir, "127.0.0.1", NULL) == 1);

    /* A garbled CA key: everything new, and consistent. */
    clobber(dir, "ca.key", "garbage\n");
    free(ensure(NULL));
    char *ca4 = read_pki_file(dir, "ca.crt");
    CHECK(strcmp(ca, ca4) != 0);
    CHECK(verify_server(dir, "127.0.0.1", NULL) == 1);

    free(ca), free(ca2), free(ca3), free(ca4), free(srv), free(srv2);
    free(dir);
}

TEST(auth_pki_error_when_dir_unusable)
{
    kapi_pki pki;
    char *file = tmp_path("plainfile");
    spit(file, "x");
    char *dir = kapi_xprintf("%s/sub", file);
    kapi_error *err = kapi_pki_ensure(&pki, dir, NULL);
    CHECK(err != NULL);
    CHECK_CONTAINS(err->message, "plainfile");
    CHECK(pki.ca_cert == NULL);
    kapi_error_free(err);
    free(dir);
    free(file);
}

/* The instance id: a UUID made once (0600) and read back at every start; a file that
 * holds anything else is refused, not replaced. */
TEST(auth_pki_instance_id)
{
    char first[37], again[37];
    char *dir = tmp_path("inst"), *file = kapi_xprintf("%s/instance-id", dir);
    CHECK_OK(kapi_pki_instance_id(first, dir));
    CHECK_INT_EQ(strlen(first), 36);
    CHECK(first[8] == '-' && first[14] == '4');
    CHECK_INT_EQ(file_mode(file), 0600);
    CHECK_OK(kapi_pki_instance_id(again, dir));
    CHECK_STR_EQ(again, first);
    spit(file, "not a uuid\n");
    kapi_error *err = kapi_pki_instance_id(again, dir);
    CHECK(err != NULL);
    CHECK_CONTAINS(err->message, "not a UUID");
    kapi_error_free(err);
    free(file);
    free(dir);
}

/* Drives a client and a server SSL over a BIO pair until both finish the handshake. */
static bool handshake(SSL *client, SSL *server)
{
    bool c_done = false, s_done = false;
    for (int i = 0; i < 100 && !(c_done && s_done); i++) {
        int rc = SSL_do_handshake(client);
        if (rc <= 0 && SSL_get_error(client, rc) != SSL_ERROR_WANT_READ)
            return false;
        c_done = rc == 1;
        rc = SSL_do_handshake(server);
        if (rc <= 0 && SSL_get_error(server, rc) != SSL_ERROR_WANT_READ)
            return false;
        s_done = rc == 1;
    }
    return c_done && s_done;
}

TEST(auth_pki_tls_handshake_verifies)
{
    kapi_pki pki;
    char *dir = tmp_path("pki");
    CHECK_OK(kapi_pki_ensure(&pki, dir, NULL));
    SSL_CTX *sctx = SSL_CTX_new(TLS_server_method()), *cctx = SSL_CTX_new(TLS_client_method());
    CHECK(SSL_CTX_use_certificate_chain_file(sctx, pki.server_cert) == 1);
    CHECK(SSL_CTX_use_PrivateKey_file(sctx, pki.server_key, SSL_FILETYPE_PEM) == 1);
    CHECK(SSL_CTX_load_verify_locations(cctx, pki.ca_cert, NULL) == 1);
    SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
    X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(cctx), X509_V_FLAG_X509_STRICT);
    SSL *c = SSL_new(cctx), *s = SSL_new(sctx);
    CHECK(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c), "127.0.0.1") == 1);
    BIO *cb, *sb;
    CHECK(BIO_new_bio_pair(&cb, 0, &sb, 0) == 1);
    SSL_set_bio(c, cb, cb);
    SSL_set_bio(s, sb, sb);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    CHECK(handshake(c, s));
    CHECK_INT_EQ(SSL_get_verify_result(c), X509_V_OK);
    SSL_free(c);
    SSL_free(s);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
    kapi_pki_dispose(&pki);
    free(dir);
}
