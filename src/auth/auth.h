/*
 * auth: who is calling, and the credentials kapi makes for itself.
 *
 * - PKI: on first start kapi generates a CA and a serving certificate for 127.0.0.1 and
 *   localhost (plus the bind address) in its data dir, and reuses them afterwards.
 * - Tokens: the admin bearer token kapi generates (user "admin", group system:masters)
 *   and those of a --token-auth-file in kube-apiserver's CSV format
 *   (token,user,uid,"group1,group2").
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
 * until kapi_auth_free; the caller frees nothing. */
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

/* The authenticator: known tokens and the users of client certificates seen so far. */
typedef struct kapi_auth kapi_auth;

/* Loads the admin token from DIR/admin-token, generating it on first start, and the
 * tokens of token_file when not NULL (a malformed file is an error naming the line). */
kapi_error *kapi_auth_new(kapi_auth **out, const char *dir, const char *token_file);
/* Frees A and every kapi_user string it handed out; NULL is fine. */
void kapi_auth_free(kapi_auth *a);
/* The admin token (borrowed). */
const char *kapi_auth_admin_token(const kapi_auth *a);

/* Authenticates a request from its Authorization header value (may be NULL) and its
 * verified client certificate (an X509 *, may be NULL). Returns false when the caller
 * presented no valid credentials. As in kube-apiserver a certificate with a subject CN
 * comes first (user CN, groups its Os, uid ""), then "Bearer <token>". A certificate
 * user is made once per distinct CN and Os and kept until kapi_auth_free. */
bool kapi_auth_authenticate(const kapi_auth *a, const char *authorization, void *peer_cert,
                            kapi_user *out);

/* Writes a kubeconfig (cluster "kapi", user "admin", context "kapi") for server_url
 * with the CA certificate's PEM embedded and the bearer token, mode 0600. */
kapi_error *kapi_kubeconfig_write(const char *path, const char *server_url,
                                  const char *ca_cert_file, const char *token);

#endif
