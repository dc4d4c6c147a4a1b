/*
 * auth: who is calling, and the credentials kapi makes for itself.
 *
 * - PKI: on first start kapi generates a CA and a serving certificate for 127.0.0.1 and
 *   localhost (plus the bind address) in its data dir, and reuses them afterwards.
 * - Tokens: the admin bearer token kapi generates (user "admin", group system:masters)
 *   and those of a --token-auth-file in kube-apiserver's CSV format
 *   (token,user,uid,"group1,group2").
 * - ServiceAccount tokens: JWTs kapi signs for the TokenRequest API and verifies, as
 *   kube-apiserver does (the section "ServiceAccount tokens" below, jwt.c).
 * - The kubeconfig kapi writes for kubectl.
 *
 * A kapi_auth is immutable after kapi_auth_new, so any thread may authenticate with it.
 * (Its one internal mutable part, the table of client-certificate users, is behind a
 * mutex; see kapi_auth_authenticate.)
 */
#ifndef KAPI_AUTH_H
#define KAPI_AUTH_H

#include "base/status.h"

/* An authenticated caller. Strings are owned by the kapi_auth that produced them and live
 * until kapi_auth_free, or (a ServiceAccount's) are in the arena the request lent
 * kapi_auth_authenticate; the caller frees nothing. */
typedef struct kapi_user {
    const char *name;
    const char *uid;
    const char *const *groups; /* NULL-terminated; always has "system:authenticated" */
} kapi_user;

/* Paths of the PKI files in a data dir; each is a heap string. */
typedef struct kapi_pki {
    char *ca_cert, *ca_key, *server_cert, *server_key;
} kapi_pki;

/* Makes sure DIR holds ca.crt, ca.key, server.crt, server.key, generating what is
 * missing (ECDSA P-256; the server certificate is signed by the CA and valid for
 * 127.0.0.1, ::1, localhost and extra_ip when it is an address). */
kapi_error *kapi_pki_ensure(kapi_pki *out, const char *dir, const char *extra_ip);
/* Frees the paths of a kapi_pki filled by kapi_pki_ensure. */
void kapi_pki_dispose(kapi_pki *pki);
/* Makes sure DIR holds sa.key, the key ServiceAccount tokens are signed with when
 * --service-account-signing-key-file is not given: an ECDSA P-256 key (ES256), made on
 * first start as the PKI's are (an RSA key, RS256 as kubeadm makes, would take a first
 * start hundreds of milliseconds to generate) and reused while it loads (an RSA key put
 * there by hand is kept too). *path gets its path (heap; NULL on error). */
kapi_error *kapi_pki_sa_key(char **path, const char *dir);
/* The UUID that names this kapi instance (in leader election), kept in DIR/instance-id:
 * made on first start as the PKI is (written whole or not at all), then read back; a
 * file that holds anything else is an error. */
kapi_error *kapi_pki_instance_id(char out[37], const char *dir);

/* ---- ServiceAccount tokens (jwt.c) ----
 *
 * Tokens are JWS compact serializations, signed RS256 with an RSA key or ES256, ES384 or
 * ES512 with an ECDSA key, with kube-apiserver's header (alg, kid: the base64url SHA-256
 * of the public key's DER SubjectPublicKeyInfo) and claims (aud, exp, iat, iss,
 * kubernetes.io, nbf, sub). A token is valid when its issuer is one of the issuers, its
 * signature verifies with one of the keys by an algorithm that key makes ("none" never
 * does), it shares an audience with the API's, and the time is within [nbf, exp] give or
 * take go-jose's minute of leeway. kapi_auth_authenticate then asks the store (through
 * kapi_sa_lookup) that the ServiceAccount still exists with the token's uid.
 *
 * A kapi_jwt is immutable after kapi_jwt_new: any thread may sign and verify with it. */

/* The flags of kube-apiserver that configure ServiceAccount tokens. */
typedef struct kapi_sa_config {
    /* --service-account-issuer: the first is written into tokens, all are accepted;
     * none: KAPI_SA_DEFAULT_ISSUER. */
    const char *const *issuers;
    size_t nissuers;
    /* --service-account-signing-key-file: a PEM private key (RSA or ECDSA); NULL: no
     * token is issued (TokenRequest answers 404) and only key_files verify. */
    const char *signing_key_file;
    /* --service-account-key-file: PEM files whose keys (public, private or in
     * certificates) verify tokens; none: the signing key's public half. */
    const char *const *key_files;
    size_t nkey_files;
    /* --api-audiences: what a token must be meant for; none: the issuers. */
    const char *const *audiences;
    size_t naudiences;
    int64_t max_expiration; /* --service-account-max-token-expiration, seconds; 0: none */
    const char *jwks_uri;   /* --service-account-jwks-uri; NULL: from the server address */
} kapi_sa_config;

/* kube-apiserver's own default for a local cluster (kubeadm's and local-up-cluster's). */
#define KAPI_SA_DEFAULT_ISSUER "https://kubernetes.default.svc.cluster.local"
/* go-jose's leeway, in seconds, around a token's nbf and exp, and after a deletion. */
#define KAPI_JWT_LEEWAY 60
/* The longest token kapi reads as a JWT: a longer bearer token is refused unread. */
#define KAPI_JWT_MAX_LEN ((size_t)64 << 10)

typedef struct kapi_jwt kapi_jwt;

/* A reference in the kubernetes.io claim: a name and a uid (NULL name: absent). */
typedef struct kapi_jwt_ref {
    const char *name, *uid;
} kapi_jwt_ref;

/* The claims of a ServiceAccount token, as kapi signs them or has read them. Strings are
 * in the arena of the call that filled them (or the caller's, to sign). */
typedef struct kapi_jwt_claims {
    const char *issuer, *subject; /* read only: signing writes the first issuer and
                                   * system:serviceaccount:<ns>:<name> */
    const char *const *audiences;
    size_t naudiences;
    int64_t iat, nbf, exp; /* Unix seconds */
    bool has_iat, has_nbf, has_exp;
    const char *ns;           /* kubernetes.io.namespace */
    kapi_jwt_ref sa;          /* kubernetes.io.serviceaccount */
    kapi_jwt_ref pod, secret; /* the object the token is bound to, if any */
    int64_t warnafter;        /* kubernetes.io.warnafter; 0: none */
} kapi_jwt_claims;

/* Why a token does not verify (tests and logs; every one is a 401 to the client). */
typedef enum kapi_jwt_rc {
    KAPI_JWT_OK,
    KAPI_JWT_MALFORMED, /* not three base64url parts of JSON objects, or claims of the wrong
                         * types */
    KAPI_JWT_ISSUER,    /* an issuer kapi does not accept */
    KAPI_JWT_SIGNATURE, /* no key verifies it (an unknown or refused alg, a "crit" header) */
    KAPI_JWT_AUDIENCE,  /* meant for none of the API's audiences */
    KAPI_JWT_EXPIRED,
    KAPI_JWT_NOT_YET_VALID,
} kapi_jwt_rc;

/* Loads the keys of c (*out NULL and an error naming the file when one is unreadable,
 * holds no RSA or ECDSA key, or the signing key is neither). */
kapi_error *kapi_jwt_new(kapi_jwt **out, const kapi_sa_config *c);
void kapi_jwt_free(kapi_jwt *j);
/* True when j has a signing key (tokens can be issued). */
bool kapi_jwt_can_sign(const kapi_jwt *j);
/* True when the signing key's public half is among the verifying keys (a token kapi
 * issues authenticates). */
bool kapi_jwt_verifies_own(const kapi_jwt *j);
/* The API's audiences (borrowed; *n their number): what a TokenRequest gets by default. */
const char *const *kapi_jwt_audiences(const kapi_jwt *j, size_t *n);
/* --service-account-max-token-expiration in seconds, 0 when none. */
int64_t kapi_jwt_max_expiration(const kapi_jwt *j);
/* Signs c (its issuer and subject are made, not read) into a compact token in arena a. */
const char *kapi_jwt_sign(const kapi_jwt *j, const kapi_jwt_claims *c, kapi_arena *a);
/* Verifies token at now (Unix seconds) as above; *out gets its claims (in a) when it is
 * KAPI_JWT_OK. */
kapi_jwt_rc kapi_jwt_verify(const kapi_jwt *j, kapi_str token, int64_t now, kapi_arena *a,
                            kapi_jwt_claims *out);
/* The OpenID discovery documents of /.well-known/openid-configuration and
 * /openid/v1/jwks, as kube-apiserver writes them; external_address (host:port) makes the
 * jwks_uri unless --service-account-jwks-uri gave one. False when discovery is off, as
 * kube-apiserver turns it off: the issuer is not an https URL without query and
 * fragment. */
bool kapi_jwt_openid_config(const kapi_jwt *j, const char *external_address, kapi_buf *out);
bool kapi_jwt_jwks(const kapi_jwt *j, kapi_buf *out);

/* ---- the authenticator ---- */

/* The authenticator: known tokens, ServiceAccount tokens and the users of client
 * certificates seen so far. */
typedef struct kapi_auth kapi_auth;

/* Offers mine (a JSON object) to the place instances share; *theirs gets what is there:
 * mine when it was the first offer, else the first one. */
typedef kapi_error *(*kapi_auth_share_fn)(void *ctx, kapi_str mine, kapi_buf *theirs);
/* Instances of one cluster share their identity: the files names[0..n) of DIR (the CA,
 * the serving certificate and key, admin-token, sa.key: those not given by flags) are
 * offered through share, and those of the first instance to offer replace this one's.
 * Makes the admin token first when DIR has none, so that it is shared too. */
kapi_error *kapi_auth_share_identity(const char *dir, const char *const *names, size_t n,
                                     kapi_auth_share_fn share, void *ctx);

/* What kapi_auth_new needs. */
typedef struct kapi_auth_config {
    const char *dir;        /* the data dir: the admin token is kept in it */
    const char *token_file; /* --token-auth-file, or NULL */
    kapi_sa_config sa;      /* ServiceAccount tokens */
} kapi_auth_config;

/* Loads the admin token from DIR/admin-token, generating it on first start, the tokens of
 * token_file when not NULL (a malformed file is an error naming the line), and the
 * ServiceAccount token keys. */
kapi_error *kapi_auth_new(kapi_auth **out, const kapi_auth_config *c);
/* Reads the token file again (SIGHUP): requests authenticated from now on see its tokens
 * (and the admin's); on failure (an error naming the file and line) the tokens stay as
 * they were. One caller at a time; requests may run meanwhile. The replaced table is
 * kept until kapi_auth_free (the users handed out point into it). */
kapi_error *kapi_auth_reload_tokens(kapi_auth *a);
/* Frees A and every kapi_user string it handed out; NULL is fine. */
void kapi_auth_free(kapi_auth *a);
/* The admin token (borrowed). */
const char *kapi_auth_admin_token(const kapi_auth *a);

/* The ServiceAccount tokens' signer and verifier (borrowed; never NULL). */
const kapi_jwt *kapi_auth_jwt(const kapi_auth *a);

/* What verifying a ServiceAccount token asks of the store, which auth cannot see: the
 * ServiceAccount ns/name as stored now. get fills *uid (in arena a) and *deleted (the Unix
 * time of its deletionTimestamp, 0 when none) and answers whether it exists. */
typedef struct kapi_sa_lookup {
    bool (*get)(void *ctx, kapi_str ns, kapi_str name, kapi_arena *a, const char **uid,
                int64_t *deleted);
    void *ctx;
} kapi_sa_lookup;

/* Authenticates a request from its Authorization header value (may be NULL) and its
 * verified client certificate (an X509 *, may be NULL). Returns false when the caller
 * presented no valid credentials. As in kube-apiserver a certificate with a subject CN
 * comes first (user CN, groups its Os, uid ""), then "Bearer <token>": a static token,
 * else a ServiceAccount token (user system:serviceaccount:<ns>:<name>, uid the
 * ServiceAccount's, groups system:serviceaccounts and system:serviceaccounts:<ns>), valid
 * only while sa says its ServiceAccount exists with the token's uid (and was not deleted
 * more than a minute ago). A certificate user is made once per distinct CN and Os and
 * kept until kapi_auth_free; a ServiceAccount user is made in arena a. */
bool kapi_auth_authenticate(const kapi_auth *a, const char *authorization, void *peer_cert,
                            const kapi_sa_lookup *sa, kapi_arena *arena, kapi_user *out);

/* Whether an Authorization header carries a bearer token at all ("Bearer" and a
 * non-empty token): one that kapi_auth_authenticate refuses is then a 401, where a
 * request without one may be anonymous. */
bool kapi_auth_bearer_present(const char *authorization);

/* kube's anonymous user: system:anonymous in the group system:unauthenticated. */
extern const kapi_user kapi_auth_anonymous;

/* Writes a kubeconfig (cluster "kapi", user "admin", context "kapi") for server_url
 * with the CA certificate's PEM embedded and the bearer token, mode 0600. */
kapi_error *kapi_kubeconfig_write(const char *path, const char *server_url,
                                  const char *ca_cert_file, const char *token);

#endif
