/*
 * pki: the CA and the serving certificate kapi makes for itself (kapi_pki_ensure), and
 * the key it signs ServiceAccount tokens with when none is given (kapi_pki_sa_key).
 *
 * Both keys are ECDSA P-256, both certificates SHA-256 signed X.509 v3 that OpenSSL
 * (curl) and Go's crypto/x509 (kubectl, client-go) accept: the CA has critical
 * basicConstraints CA:TRUE and keyUsage keyCertSign,cRLSign; the server certificate has
 * subjectAltNames (Go ignores the CN), extendedKeyUsage serverAuth, a random positive
 * 128-bit serial and an authorityKeyIdentifier.
 *
 * What is on disk is reused when it is usable: a CA whose key matches and that is valid for
 * another RENEW_DAYS; a server certificate likewise, signed by that CA and valid for the
 * extra address. Anything else is made again (a new CA means a new server certificate).
 * A key is written before its certificate and each file is replaced atomically, so a crash
 * at any point leaves files that are either usable or detected as unusable next time.
 *
 * The server certificate lives SERVER_DAYS (825, the most Apple platforms accept for a TLS
 * server certificate) and is renewed at start within RENEW_DAYS of its end.
 */
#include "auth/auth_int.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CA_DAYS (10 * 365 + 2)
#define SERVER_DAYS 825
#define RENEW_DAYS 30
#define SERIAL_BYTES 16

typedef struct pair {
    X509 *cert;
    EVP_PKEY *key;
} pair;

typedef struct ext {
    int nid;
    const char *value; /* in openssl.cnf syntax */
} ext;

static const ext ca_exts[] = {
    {NID_basic_constraints, "critical,CA:TRUE"},
    {NID_key_usage, "critical,keyCertSign,cRLSign"},
    {NID_subject_key_identifier, "hash"},
};

static const ext server_exts[] = {
    {NID_basic_constraints, "critical,CA:FALSE"},
    {NID_key_usage, "critical,digitalSignature"},
    {NID_ext_key_usage, "serverAuth"},
    {NID_subject_key_identifier, "hash"},
    {NID_authority_key_identifier, "keyid:always"},
};

static const struct {
    int type;
    const char *value;
} server_sans[] = {
    {GEN_IPADD, "127.0.0.1"},
    {GEN_IPADD, "::1"},
    {GEN_DNS, "localhost"},
    {GEN_DNS, "kapi"},
};

/* An error for a failed OpenSSL call, with OpenSSL's reason; clears OpenSSL's queue. */
static kapi_error *ssl_error(const char *what)
{
    char reason[256] = "unknown error";
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "%s: %s", what, reason);
}

/* Keeps OpenSSL from asking a terminal for the password of an encrypted key. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

/* Loads what it can of a pair; unreadable files leave NULL members. */
static void load_pair(pair *p, const char *cert_path, const char *key_path)
{
    BIO *b = BIO_new_file(cert_path, "r");
    p->cert = b ? PEM_read_bio_X509(b, NULL, no_password, NULL) : NULL;
    BIO_free(b);
    b = BIO_new_file(key_path, "r");
    p->key = b ? PEM_read_bio_PrivateKey(b, NULL, no_password, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
}

static void pair_dispose(pair *p)
{
    X509_free(p->cert);
    EVP_PKEY_free(p->key);
    p->cert = NULL;
    p->key = NULL;
}

/* Both halves loaded, matching, and valid for RENEW_DAYS more. */
static bool pair_fresh(const pair *p)
{
    time_t horizon = time(NULL) + (time_t)RENEW_DAYS * 86400;
    return p->cert && p->key && X509_check_private_key(p->cert, p->key) == 1 &&
           X509_cmp_time(X509_get0_notAfter(p->cert), &horizon) > 0;
}

/* The bytes of an IPv4 or IPv6 address written as text ("[::1]" too), or NULL. */
static ASN1_OCTET_STRING *parse_ip(const char *text)
{
    unsigned char bin[16];
    char buf[INET6_ADDRSTRLEN + 2];
    size_t n = text ? strlen(text) : 0;
    if (n < 2 || n >= sizeof(buf))
        return NULL;
    bool bracketed = text[0] == '[' && text[n - 1] == ']';
    snprintf(buf, sizeof(buf), "%.*s", (int)(bracketed ? n - 2 : n), text + bracketed);
    int len = inet_pton(AF_INET, buf, bin) == 1 ? 4 : inet_pton(AF_INET6, buf, bin) == 1 ? 16 : 0;
    ASN1_OCTET_STRING *ip = len ? ASN1_OCTET_STRING_new() : NULL;
    if (ip && !ASN1_OCTET_STRING_set(ip, bin, len)) {
        ASN1_OCTET_STRING_free(ip);
        ip = NULL;
    }
    return ip;
}

/* extra_ip as an address worth a SAN: it parses and is not unspecified (0.0.0.0, ::). */
static ASN1_OCTET_STRING *extra_address(const char *extra_ip)
{
    ASN1_OCTET_STRING *ip = parse_ip(extra_ip);
    bool unspecified = true;
    for (int i = 0; ip && i < ASN1_STRING_length(ip); i++)
        unspecified = unspecified && ASN1_STRING_get0_data(ip)[i] == 0;
    if (ip && unspecified) {
        ASN1_OCTET_STRING_free(ip);
        ip = NULL;
    }
    return ip;
}

static bool ca_usable(const pair *ca)
{
    return pair_fresh(ca) && X509_check_ca(ca->cert) == 1;
}

static bool server_usable(const pair *srv, const pair *ca, const ASN1_OCTET_STRING *extra)
{
    bool ok = pair_fresh(srv) && X509_check_issued(ca->cert, srv->cert) == X509_V_OK &&
              X509_verify(srv->cert, X509_get0_pubkey(ca->cert)) == 1 &&
              (!extra || X509_check_ip(srv->cert, ASN1_STRING_get0_data(extra),
                                       (size_t)ASN1_STRING_length(extra), 0) == 1);
    ERR_clear_error();
    return ok;
}

/* A certificate for KEY named CN, valid from an hour ago (clock skew) for DAYS days. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, int days)
{
    unsigned char serial[SERIAL_BYTES];
    X509 *x = X509_new();
    BIGNUM *bn = NULL;
    kapi_random_bytes(serial, sizeof(serial));
    serial[0] = (serial[0] & 0x7f) | 0x40; /* positive, never zero, always 16 bytes */
    bool ok = x && X509_set_version(x, X509_VERSION_3) &&
              (bn = BN_bin2bn(serial, sizeof(serial), NULL)) &&
              BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
              X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
              X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) &&
              X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName, MBSTRING_UTF8,
                                         (const unsigned char *)cn, -1, -1, 0) &&
              X509_set_pubkey(x, key);
    BN_free(bn);
    if (!ok) {
        X509_free(x);
        x = NULL;
    }
    return x;
}

/* Adds extensions from a table; ISSUER is X itself for a self-signed certificate. */
static bool add_exts(X509 *x, X509 *issuer, const ext *exts, size_t n)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    for (size_t i = 0; i < n; i++) {
        X509_EXTENSION *e = X509V3_EXT_nconf_nid(NULL, &ctx, exts[i].nid, exts[i].value);
        bool ok = e && X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
        if (!ok)
            return false;
    }
    return true;
}

static bool push_name(GENERAL_NAMES *names, GENERAL_NAME *g)
{
    if (g && sk_GENERAL_NAME_push(names, g) > 0)
        return true;
    GENERAL_NAME_free(g);
    return false;
}

/* The extra address as a name, unless it is one of the defaults already. */
static GENERAL_NAME *extra_name(const GENERAL_NAMES *names, const ASN1_OCTET_STRING *extra)
{
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        if (g->type == GEN_IPADD && ASN1_OCTET_STRING_cmp(g->d.iPAddress, extra) == 0)
            return NULL;
    }
    GENERAL_NAME *g = GENERAL_NAME_new();
    ASN1_OCTET_STRING *ip = ASN1_OCTET_STRING_dup(extra);
    if (g && ip) {
        GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
        return g;
    }
    GENERAL_NAME_free(g);
    ASN1_OCTET_STRING_free(ip);
    return NULL;
}

static bool add_sans(X509 *x, const ASN1_OCTET_STRING *extra)
{
    GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
    bool ok = names != NULL;
    for (size_t i = 0; ok && i < KAPI_ARRAY_LEN(server_sans); i++)
        ok = push_name(names, a2i_GENERAL_NAME(NULL, NULL, NULL, server_sans[i].type,
                                               server_sans[i].value, 0));
    GENERAL_NAME *g = ok && extra ? extra_name(names, extra) : NULL;
    ok = ok && (!g || push_name(names, g)) &&
         X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) == 1;
    GENERAL_NAMES_free(names);
    return ok;
}

static kapi_error *make_ca(pair *ca)
{
    pair_dispose(ca);
    ca->key = EVP_EC_gen("P-256");
    ca->cert = ca->key ? new_cert(ca->key, "kapi-ca", CA_DAYS) : NULL;
    bool ok = ca->cert && X509_set_issuer_name(ca->cert, X509_get_subject_name(ca->cert)) &&
              add_exts(ca->cert, ca->cert, ca_exts, KAPI_ARRAY_LEN(ca_exts)) &&
              X509_sign(ca->cert, ca->key, EVP_sha256()) > 0;
    return ok ? NULL : ssl_error("generating the CA certificate");
}

static kapi_error *make_server(pair *srv, const pair *ca, const ASN1_OCTET_STRING *extra)
{
    pair_dispose(srv);
    srv->key = EVP_EC_gen("P-256");
    srv->cert = srv->key ? new_cert(srv->key, "kapi", SERVER_DAYS) : NULL;
    bool ok = srv->cert && X509_set_issuer_name(srv->cert, X509_get_subject_name(ca->cert)) &&
              add_exts(srv->cert, ca->cert, server_exts, KAPI_ARRAY_LEN(server_exts)) &&
              add_sans(srv->cert, extra) && X509_sign(srv->cert, ca->key, EVP_sha256()) > 0;
    return ok ? NULL : ssl_error("generating the server certificate");
}

/* Writes the PEM a BIO holds to PATH. */
static kapi_error *save_bio(BIO *b, bool written, const char *path, mode_t mode)
{
    char *data = NULL;
    long len = written ? BIO_get_mem_data(b, &data) : -1;
    kapi_error *err =
        len < 0 ? ssl_error("encoding PEM") : kapi_auth__write_file(path, data, (size_t)len, mode);
    OPENSSL_cleanse(data, len > 0 ? (size_t)len : 0);
    BIO_free(b);
    return err;
}

/* The key first: a certificate on disk without its key is detected as unusable. */
static kapi_error *save_pair(const pair *p, const char *cert_path, const char *key_path)
{
    BIO *b = BIO_new(BIO_s_mem());
    bool written = b && PEM_write_bio_PrivateKey(b, p->key, NULL, NULL, 0, NULL, NULL);
    kapi_error *err = save_bio(b, written, key_path, 0600);
    if (err)
        return err;
    b = BIO_new(BIO_s_mem());
    written = b && PEM_write_bio_X509(b, p->cert);
    return save_bio(b, written, cert_path, 0600);
}

static kapi_error *ensure(const kapi_pki *paths, const char *extra_ip)
{
    pair ca = {0}, srv = {0};
    ASN1_OCTET_STRING *extra = extra_address(extra_ip);
    kapi_error *err = NULL;
    load_pair(&ca, paths->ca_cert, paths->ca_key);
    if (!ca_usable(&ca) && (err = make_ca(&ca)) == NULL)
        err = save_pair(&ca, paths->ca_cert, paths->ca_key);
    if (err)
        goto done;
    load_pair(&srv, paths->server_cert, paths->server_key);
    if (!server_usable(&srv, &ca, extra) && (err = make_server(&srv, &ca, extra)) == NULL)
        err = save_pair(&srv, paths->server_cert, paths->server_key);
done:
    ASN1_OCTET_STRING_free(extra);
    pair_dispose(&ca);
    pair_dispose(&srv);
    return err;
}

kapi_error *kapi_pki_ensure(kapi_pki *out, const char *dir, const char *extra_ip)
{
    out->ca_cert = kapi_xprintf("%s/ca.crt", dir);
    out->ca_key = kapi_xprintf("%s/ca.key", dir);
    out->server_cert = kapi_xprintf("%s/server.crt", dir);
    out->server_key = kapi_xprintf("%s/server.key", dir);
    kapi_error *err = kapi_auth__mkdir(dir);
    if (!err)
        err = ensure(out, extra_ip);
    if (err)
        kapi_pki_dispose(out);
    return err;
}

void kapi_pki_dispose(kapi_pki *pki)
{
    free(pki->ca_cert);
    free(pki->ca_key);
    free(pki->server_cert);
    free(pki->server_key);
    *pki = (kapi_pki){0};
}

/* True when path holds a private key tokens can be signed with (RSA or ECDSA). */
static bool sa_key_usable(const char *path)
{
    BIO *b = BIO_new_file(path, "r");
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_password, NULL) : NULL;
    int id = k ? EVP_PKEY_get_base_id(k) : EVP_PKEY_NONE;
    BIO_free(b);
    EVP_PKEY_free(k);
    ERR_clear_error();
    return id == EVP_PKEY_RSA || id == EVP_PKEY_EC;
}

kapi_error *kapi_pki_sa_key(char **path, const char *dir)
{
    char *p = kapi_xprintf("%s/sa.key", dir);
    kapi_error *err = kapi_auth__mkdir(dir);
    if (!err && !sa_key_usable(p)) {
        EVP_PKEY *k = EVP_EC_gen("P-256");
        BIO *b = BIO_new(BIO_s_mem());
        bool written = k && b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
        err = save_bio(b, written, p, 0600);
        EVP_PKEY_free(k);
    }
    if (err) {
        free(p);
        p = NULL;
    }
    *path = p;
    return err;
}

kapi_error *kapi_pki_instance_id(char out[37], const char *dir)
{
    char *p = kapi_xprintf("%s/instance-id", dir), line[38];
    kapi_buf b;
    bool exists = false;
    kapi_buf_init(&b);
    kapi_error *err = kapi_auth__mkdir(dir);
    if (!err)
        err = kapi_auth__read_file(p, &b, &exists);
    if (!err && exists && (b.len != 37 || b.ptr[36] != '\n'))
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "\"%s\": not a UUID", p);
    if (!err && exists)
        snprintf(out, 37, "%.36s", b.ptr);
    if (!err && !exists) {
        kapi_uuid_v4(out);
        snprintf(line, sizeof(line), "%s\n", out);
        err = kapi_auth__write_file(p, line, 37, 0600);
    }
    kapi_buf_dispose(&b);
    free(p);
    return err;
}
