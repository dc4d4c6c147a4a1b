/*
 * identity: kapi instances serving one cluster share who they are (issue 17). What each
 * would otherwise generate on its first start in its data dir (the CA, the serving
 * certificate, the admin token, the ServiceAccount signing key) is offered to a shared
 * place, the store; the first instance's offer wins, and every instance writes what won
 * over its own files before it reads them, so that one kubeconfig, one admin token and
 * one ServiceAccount token work against every instance.
 */
#include "auth/auth_int.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kapi_error *kapi_auth_share_identity(const char *dir, const char *const *names, size_t n,
                                     kapi_auth_share_fn share, void *ctx)
{
    kapi_error *err = kapi_auth__ensure_admin_token(dir);
    json_t *mine = json_object();
    kapi_buf b, theirs;
    kapi_buf_init(&b);
    kapi_buf_init(&theirs);
    for (size_t i = 0; i < n && !err; i++) {
        char *path = kapi_xprintf("%s/%s", dir, names[i]);
        bool exists = false;
        b.len = 0;
        err = kapi_auth__read_file(path, &b, &exists);
        if (!err && exists)
            json_object_set_new(mine, names[i], json_stringn(b.ptr, b.len));
        free(path);
    }
    char *offer = err ? NULL : json_dumps(mine, JSON_COMPACT | JSON_SORT_KEYS);
    if (!err)
        err = share(ctx, kapi_str_c(offer), &theirs);
    json_t *won = err ? NULL : json_loadb(theirs.ptr, theirs.len, 0, NULL);
    if (!err && !json_is_object(won))
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                             "the shared identity in the store is not kapi's; remove it to "
                             "share this instance's");
    for (size_t i = 0; i < n && !err; i++) {
        json_t *v = json_object_get(won, names[i]), *own = json_object_get(mine, names[i]);
        if (!json_is_string(v) || json_equal(v, own))
            continue;
        char *path = kapi_xprintf("%s/%s", dir, names[i]);
        err = kapi_auth__write_file(path, json_string_value(v), json_string_length(v), 0600);
        free(path);
    }
    if (offer)
        OPENSSL_cleanse(offer, strlen(offer));
    free(offer);
    OPENSSL_cleanse(b.ptr, b.len);
    OPENSSL_cleanse(theirs.ptr, theirs.len);
    kapi_buf_dispose(&b);
    kapi_buf_dispose(&theirs);
    json_decref(mine);
    json_decref(won);
    return err;
}
