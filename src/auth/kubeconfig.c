/*
 * kubeconfig: the file kapi writes so that kubectl works at once (kapi_kubeconfig_write).
 *
 * YAML with every string double-quoted and escaped, so no server URL or token can change
 * the document's structure. The CA goes in as certificate-authority-data (base64 PEM),
 * so the file works wherever it is copied.
 */
#include "auth/auth_int.h"

#include <openssl/evp.h>
#include <stdlib.h>

/* S as a YAML double-quoted scalar (JSON escapes are valid YAML). */
static void put_quoted(kapi_buf *b, const char *s)
{
    kapi_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            kapi_buf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            kapi_buf_printf(b, "\\u%04x", *p);
        else
            kapi_buf_putc(b, (char)*p);
    }
    kapi_buf_putc(b, '"');
}

/* The base64 of a file's bytes, as a heap string. */
static kapi_error *file_base64(const char *path, char **out)
{
    kapi_buf pem;
    kapi_buf_init(&pem);
    kapi_error *err = kapi_auth__read_file(path, &pem, NULL);
    if (!err && pem.len == 0)
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "CA certificate file \"%s\" is empty", path);
    if (!err) {
        *out = kapi_xmalloc(4 * ((pem.len + 2) / 3) + 1);
        EVP_EncodeBlock((unsigned char *)*out, (const unsigned char *)pem.ptr, (int)pem.len);
    }
    kapi_buf_dispose(&pem);
    return err;
}

static void put_config(kapi_buf *b, const char *server_url, const char *ca_data, const char *token)
{
    kapi_buf_puts(b, "apiVersion: v1\nkind: Config\nclusters:\n- name: kapi\n  cluster:\n"
                     "    server: ");
    put_quoted(b, server_url);
    kapi_buf_puts(b, "\n    certificate-authority-data: ");
    put_quoted(b, ca_data);
    kapi_buf_puts(b, "\nusers:\n- name: admin\n  user:\n    token: ");
    put_quoted(b, token);
    kapi_buf_puts(b, "\ncontexts:\n- name: kapi\n  context:\n    cluster: kapi\n"
                     "    user: admin\ncurrent-context: kapi\npreferences: {}\n");
}

kapi_error *kapi_kubeconfig_write(const char *path, const char *server_url,
                                  const char *ca_cert_file, const char *token)
{
    char *ca_data = NULL;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_error *err = file_base64(ca_cert_file, &ca_data);
    if (!err) {
        put_config(&b, server_url, ca_data, token);
        err = kapi_auth__write_file(path, b.ptr, b.len, 0600);
    }
    OPENSSL_cleanse(b.ptr, b.len); /* it holds the admin token */
    kapi_buf_dispose(&b);
    free(ca_data);
    return err;
}
