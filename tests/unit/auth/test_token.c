/* Unit tests for src/auth/token.c, csv.c and cert.c: tokens, the token file, certificates. */
#include "auth_test.h"

#include <openssl/x509v3.h>
#include <pthread.h>

static kapi_auth *new_auth(const char *token_csv)
{
    kapi_auth *a = NULL;
    char *dir = tmp_path("data"), *file = NULL;
    if (token_csv) {
        file = tmp_path("tokens.csv");
        spit(file, token_csv);
    }
    CHECK_OK(kapi_auth_new(&a, &(kapi_auth_config){.dir = dir, .token_file = file}));
    free(dir);
    free(file);
    return a;
}

/* Whether u is in system:masters, the group of the admin and of cluster-admin clients. */
static bool is_master(const kapi_user *u)
{
    for (const char *const *g = u->groups; g && *g; g++)
        if (strcmp(*g, "system:masters") == 0)
            return true;
    return false;
}

/* The groups of U joined with ','. */
static char *groups_of(const kapi_user *u)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (const char *const *g = u->groups; *g; g++)
        kapi_buf_printf(&b, "%s%s", b.len ? "," : "", *g);
    return kapi_buf_detach(&b, NULL);
}

#define CHECK_USER(a, header, name_, uid_, groups_)                                                \
    do {                                                                                           \
        kapi_user u_;                                                                              \
        CHECK(kapi_auth_authenticate((a), (header), NULL, NULL, NULL, &u_));                       \
        char *g_ = groups_of(&u_);                                                                 \
        CHECK_STR_EQ(u_.name, name_);                                                              \
        CHECK_STR_EQ(u_.uid, uid_);                                                                \
        CHECK_STR_EQ(g_, groups_);                                                                 \
        free(g_);                                                                                  \
    } while (0)

TEST(auth_admin_token_generated_then_reused)
{
    kapi_auth *a = new_auth(NULL);
    const char *tok = kapi_auth_admin_token(a);
    CHECK_INT_EQ(strlen(tok), 64);
    CHECK_INT_EQ(strspn(tok, "0123456789abcdef"), 64);
    char *path = tmp_path("data/admin-token");
    CHECK_INT_EQ(file_mode(path), 0600);
    char *saved = test_slurp(path, NULL), *want = kapi_xprintf("%s\n", tok);
    CHECK_STR_EQ(saved, want);
    kapi_auth *b = new_auth(NULL);
    CHECK_STR_EQ(kapi_auth_admin_token(b), tok);
    kapi_auth_free(a);
    kapi_auth_free(b);
    free(saved);
    free(want);

    spit(path, "  my-token \r\n");
    a = new_auth(NULL);
    CHECK_STR_EQ(kapi_auth_admin_token(a), "my-token");
    CHECK_USER(a, "Bearer my-token", "admin", "admin", "system:masters,system:authenticated");
    kapi_auth_free(a);
    free(path);
}

TEST(auth_admin_token_empty_file_is_an_error)
{
    char *dir = tmp_path("data"), *path = tmp_path("data/admin-token");
    kapi_auth *a = (kapi_auth *)1;
    CHECK(mkdir(dir, 0700) == 0);
    spit(path, "\n");
    kapi_error *err = kapi_auth_new(&a, &(kapi_auth_config){.dir = dir});
    CHECK(err != NULL && a == NULL);
    CHECK_CONTAINS(err->message, "admin-token");
    kapi_error_free(err);
    free(dir);
    free(path);
}

TEST(auth_bearer_header_forms)
{
    kapi_auth *a = new_auth(NULL);
    const char *tok = kapi_auth_admin_token(a);
    static const struct {
        const char *fmt;
        bool ok;
    } cases[] = {
        {"Bearer %s", true},     {"bearer %s", true}, {"BEARER  %s", true},  {"Bearer\t%s ", true},
        {"Basic %s", false},     {"Bearer%s", false}, {"Bearer %sx", false}, {"Bearer x%s", false},
        {"Bearer ", false},      {"Bearer", false},   {"%s", false},         {"", false},
        {"Bearer %.63s", false},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        char *h = kapi_xprintf(cases[i].fmt, tok);
        kapi_user u = {0};
        if (kapi_auth_authenticate(a, h, NULL, NULL, NULL, &u) != cases[i].ok)
            test_fail(__FILE__, __LINE__, "header \"%s\": want %d", cases[i].fmt, cases[i].ok);
        if (cases[i].ok && !is_master(&u))
            test_fail(__FILE__, __LINE__, "header \"%s\": not admin", cases[i].fmt);
        free(h);
    }
    kapi_user u;
    CHECK(!kapi_auth_authenticate(a, NULL, NULL, NULL, NULL, &u));
    CHECK(!kapi_auth_authenticate(a, "Bearer wrong-token", NULL, NULL, NULL, &u));
    char *h = kapi_xprintf("Bearer %s", tok);
    CHECK_USER(a, h, "admin", "admin", "system:masters,system:authenticated");
    free(h);
    kapi_auth_free(a);
}

static const char token_csv[] = "\xef\xbb\xbf# kapi tokens\n"
                                "tok1,alice,uid-a,\"dev,ops\"\n"
                                "\n"
                                "   \n"
                                "tok2,bob,uid-b\r\n"
                                "\"tok,3\",\"carol \"\"c\"\"\",uid-c,\"g1\"\n"
                                "tok4,dave,uid-d,\"system:authenticated,x\"\n"
                                "tok1,alice2,uid-a2,late\n"
                                "tok5,eve,uid-e,\"a,,b\",ignored,columns\n"
                                "tok6,frank,,\"multi\nline\"\n"
                                "tok7,gina,uid-g,system:masters\r\n"
                                "tok8,hal,uid-h\r";

TEST(auth_token_file_users)
{
    kapi_auth *a = new_auth(token_csv);
    CHECK_USER(a, "Bearer tok1", "alice2", "uid-a2", "late,system:authenticated");
    CHECK_USER(a, "Bearer tok2", "bob", "uid-b", "system:authenticated");
    CHECK_USER(a, "Bearer tok,3", "carol \"c\"", "uid-c", "g1,system:authenticated");
    CHECK_USER(a, "Bearer tok4", "dave", "uid-d", "system:authenticated,x");
    CHECK_USER(a, "Bearer tok5", "eve", "uid-e", "a,b,system:authenticated");
    CHECK_USER(a, "Bearer tok6", "frank", "", "multi\nline,system:authenticated");
    CHECK_USER(a, "Bearer tok7", "gina", "uid-g", "system:masters,system:authenticated");
    CHECK_USER(a, "Bearer tok8", "hal", "uid-h", "system:authenticated");
    kapi_user u;
    CHECK(kapi_auth_authenticate(a, "Bearer tok7", NULL, NULL, NULL, &u) && is_master(&u));
    CHECK(kapi_auth_authenticate(a, "Bearer tok2", NULL, NULL, NULL, &u) && !is_master(&u));
    CHECK(!kapi_auth_authenticate(a, "Bearer tok", NULL, NULL, NULL, &u));
    CHECK(!kapi_auth_authenticate(a, "Bearer \"tok,3\"", NULL, NULL, NULL, &u));
    /* The admin token still works beside the file's. */
    char *h = kapi_xprintf("Bearer %s", kapi_auth_admin_token(a));
    CHECK_USER(a, h, "admin", "admin", "system:masters,system:authenticated");
    free(h);
    kapi_auth_free(a);
}

TEST(auth_token_file_errors)
{
    static const struct {
        const char *csv, *want;
    } cases[] = {
        {"tok,user\n", "must have at least 3 columns (token, user name, user uid): line 1"},
        {"# c\n\nt,u,i\nbad\n",
         "must have at least 3 columns (token, user name, user uid): line 4"},
        {"t,u,i\n,u,i\n", ": line 2: empty token"},
        {"t,,i\n", ": line 1: empty user name"},
        {"t,u\"x,i\n", ": line 1: bare \" in non-quoted field"},
        {"t,u,i\n\"t2,u,i\n", ": line 2: extraneous or missing \" in quoted field"},
        {"\"t\"x,u,i\n", ": line 1: extraneous or missing \" in quoted field"},
        {"a,\"b\nc\",d\ne\n", "columns (token, user name, user uid): line 3"},
    };
    char *dir = tmp_path("data"), *file = tmp_path("tokens.csv");
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_auth *a = NULL;
        spit(file, cases[i].csv);
        kapi_error *err = kapi_auth_new(&a, &(kapi_auth_config){.dir = dir, .token_file = file});
        if (!err)
            test_fail(__FILE__, __LINE__, "case %zu: no error", i);
        CHECK(a == NULL);
        CHECK_INT_EQ(err->status, KAPI_STATUS_BAD_REQUEST);
        char *prefix = kapi_xprintf("token file \"%s\"", file);
        CHECK_CONTAINS(err->message, prefix);
        CHECK_CONTAINS(err->message, cases[i].want);
        free(prefix);
        kapi_error_free(err);
    }
    kapi_auth *a = NULL;
    char *missing = tmp_path("nope.csv");
    kapi_error *err = kapi_auth_new(&a, &(kapi_auth_config){.dir = dir, .token_file = missing});
    CHECK(err != NULL);
    CHECK_CONTAINS(err->message, "nope.csv");
    kapi_error_free(err);
    free(missing);
    free(dir);
    free(file);
}

/* A client certificate from the CA of a fresh PKI, with subject CN and the Os given. */
static X509 *issue_client_cert(const char *cn, const char *const *orgs)
{
    kapi_pki pki;
    char *dir = tmp_path("data");
    CHECK_OK(kapi_pki_ensure(&pki, dir, NULL));
    X509 *ca = load_cert(pki.ca_cert);
    EVP_PKEY *ca_key = load_key(pki.ca_key), *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name = X509_get_subject_name(x);
    CHECK(ca && ca_key && key && x);
    X509_set_version(x, X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 42);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    for (; orgs && *orgs; orgs++)
        X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)*orgs, -1, -1,
                                   0);
    if (cn)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(ca));
    X509_set_pubkey(x, key);
    CHECK(X509_sign(x, ca_key, EVP_sha256()) > 0);
    X509_free(ca);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(key);
    kapi_pki_dispose(&pki);
    free(dir);
    return x;
}

TEST(auth_client_certificate)
{
    static const char *const orgs[] = {"devs", "system:masters", NULL};
    kapi_auth *a = new_auth(NULL);
    X509 *cert = issue_client_cert("jane", orgs);
    kapi_user u, v;
    CHECK(kapi_auth_authenticate(a, NULL, cert, NULL, NULL, &u));
    char *g = groups_of(&u);
    CHECK_STR_EQ(u.name, "jane");
    CHECK_STR_EQ(u.uid, "");
    CHECK_STR_EQ(g, "devs,system:masters,system:authenticated");
    CHECK(is_master(&u));
    /* The same identity again is the same interned user. */
    CHECK(kapi_auth_authenticate(a, "Bearer nonsense", cert, NULL, NULL, &v));
    CHECK(v.name == u.name && v.groups == u.groups);
    /* A certificate comes first, as in kube-apiserver. */
    char *h = kapi_xprintf("Bearer %s", kapi_auth_admin_token(a));
    CHECK(kapi_auth_authenticate(a, h, cert, NULL, NULL, &v) && strcmp(v.name, "jane") == 0);
    X509_free(cert);

    /* No CN: not a certificate user; a token can still authenticate. */
    cert = issue_client_cert(NULL, orgs);
    CHECK(!kapi_auth_authenticate(a, NULL, cert, NULL, NULL, &v));
    CHECK(kapi_auth_authenticate(a, h, cert, NULL, NULL, &v) && strcmp(v.name, "admin") == 0);
    X509_free(cert);

    cert = issue_client_cert("ci-bot", NULL);
    CHECK(kapi_auth_authenticate(a, NULL, cert, NULL, NULL, &v));
    CHECK_STR_EQ(v.name, "ci-bot");
    CHECK(v.groups[0] && strcmp(v.groups[0], "system:authenticated") == 0 && !v.groups[1]);
    CHECK(!is_master(&v));
    X509_free(cert);
    free(g);
    free(h);
    kapi_auth_free(a);
}

typedef struct race {
    kapi_auth *a;
    X509 *certs[4];
    const char *names[4];
    bool ok;
} race;

static void *race_main(void *arg)
{
    race *r = arg;
    r->ok = true;
    for (int i = 0; i < 2000; i++) {
        kapi_user u;
        int k = i % 4;
        if (!kapi_auth_authenticate(r->a, NULL, r->certs[k], NULL, NULL, &u) ||
            strcmp(u.name, r->names[k]))
            r->ok = false;
    }
    return NULL;
}

TEST(auth_client_certificate_threads)
{
    static const char *const names[] = {"u0", "u1", "u2", "u3"};
    race r[4];
    pthread_t t[4];
    kapi_auth *a = new_auth(NULL);
    X509 *certs[4];
    for (int k = 0; k < 4; k++)
        certs[k] = issue_client_cert(names[k], NULL);
    for (int i = 0; i < 4; i++) {
        r[i] = (race){.a = a};
        memcpy(r[i].certs, certs, sizeof(certs));
        memcpy(r[i].names, names, sizeof(names));
        CHECK(pthread_create(&t[i], NULL, race_main, &r[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(r[i].ok);
    }
    for (int k = 0; k < 4; k++)
        X509_free(certs[k]);
    kapi_auth_free(a);
}

TEST(auth_user_is_master)
{
    static const char *const masters[] = {"x", "system:masters", NULL};
    static const char *const plain[] = {"system:authenticated", "system:master", NULL};
    kapi_user m = {"m", "", masters}, p = {"p", "", plain};
    CHECK(is_master(&m));
    CHECK(!is_master(&p));
}

TEST(auth_token_file_reloaded)
{
    kapi_auth *a = new_auth("old,alice,1,\n");
    kapi_user u;
    char *file = tmp_path("tokens.csv"), *admin = NULL;
    CHECK_USER(a, "Bearer old", "alice", "1", "system:authenticated");
    spit(file, "new,bob,2,dev\n");
    CHECK_OK(kapi_auth_reload_tokens(a));
    CHECK(!kapi_auth_authenticate(a, "Bearer old", NULL, NULL, NULL, &u));
    CHECK_USER(a, "Bearer new", "bob", "2", "dev,system:authenticated");
    admin = kapi_xprintf("Bearer %s", kapi_auth_admin_token(a));
    CHECK(kapi_auth_authenticate(a, admin, NULL, NULL, NULL, &u) && is_master(&u));
    /* A bad file is refused, naming its line; the tokens stay as they were. */
    spit(file, "new,bob,2,dev\nshort,carol\n");
    kapi_error *err = kapi_auth_reload_tokens(a);
    CHECK(err != NULL);
    CHECK_CONTAINS(err->message, "line 2");
    kapi_error_free(err);
    CHECK_USER(a, "Bearer new", "bob", "2", "dev,system:authenticated");
    CHECK(kapi_auth_authenticate(a, admin, NULL, NULL, NULL, &u) && is_master(&u));
    free(admin);
    free(file);
    kapi_auth_free(a);
}
