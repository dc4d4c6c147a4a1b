/* Unit tests for src/auth/kubeconfig.c: content, mode, and (when installed) kubectl's view. */
#include "auth_test.h"

#include <unistd.h>

/* Runs kubectl to read one jsonpath of a kubeconfig; NULL when kubectl is absent. */
static char *kubectl_view(const char *kubeconfig, const char *jsonpath)
{
    if (access("/usr/bin/kubectl", X_OK) != 0)
        return NULL;
    char *cmd = kapi_xprintf("/usr/bin/kubectl --kubeconfig '%s' config view --raw "
                             "-o jsonpath='%s' 2>&1",
                             kubeconfig, jsonpath);
    FILE *p = popen(cmd, "r");
    kapi_buf b;
    char chunk[4096];
    size_t n;
    kapi_buf_init(&b);
    while (p && (n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        kapi_buf_put(&b, chunk, n);
    CHECK(p && pclose(p) == 0);
    free(cmd);
    return kapi_buf_detach(&b, NULL);
}

static char *base64(const char *s)
{
    size_t n = strlen(s);
    char *out = kapi_xmalloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

TEST(auth_kubeconfig_content)
{
    char *ca = tmp_path("ca.crt"), *path = tmp_path("kubeconfig");
    const char *pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    spit(ca, pem);
    CHECK_OK(kapi_kubeconfig_write(path, "https://127.0.0.1:6443", ca, "0123abcd"));
    CHECK_INT_EQ(file_mode(path), 0600);
    char *text = test_slurp(path, NULL), *b64 = base64(pem);
    char *want = kapi_xprintf("certificate-authority-data: \"%s\"\n", b64);
    CHECK_CONTAINS(text, "apiVersion: v1\nkind: Config\n");
    CHECK_CONTAINS(text, "server: \"https://127.0.0.1:6443\"\n");
    CHECK_CONTAINS(text, "token: \"0123abcd\"\n");
    CHECK_CONTAINS(text, want);
    CHECK_CONTAINS(text, "current-context: kapi\n");

    char *server = kubectl_view(path, "{.clusters[0].cluster.server}");
    if (server) {
        char *token = kubectl_view(path, "{.users[0].user.token}");
        char *data = kubectl_view(path, "{.clusters[0].cluster.certificate-authority-data}");
        char *ctx = kubectl_view(path, "{.current-context}/{.contexts[0].context.user}");
        CHECK_STR_EQ(server, "https://127.0.0.1:6443");
        CHECK_STR_EQ(token, "0123abcd");
        CHECK_STR_EQ(data, b64);
        CHECK_STR_EQ(ctx, "kapi/admin");
        free(token), free(data), free(ctx);
    }
    free(server), free(text), free(b64), free(want), free(ca), free(path);
}

TEST(auth_kubeconfig_quotes_strings)
{
    char *ca = tmp_path("ca.crt"), *path = tmp_path("kubeconfig");
    spit(ca, "pem");
    /* Characters that would break plain or naive quoted YAML come back unchanged. */
    CHECK_OK(kapi_kubeconfig_write(path, "https://h:1/a#b: c", ca, "to\"k\\en: x"));
    char *text = test_slurp(path, NULL);
    CHECK_CONTAINS(text, "token: \"to\\\"k\\\\en: x\"\n");
    char *server = kubectl_view(path, "{.clusters[0].cluster.server}");
    if (server) {
        char *token = kubectl_view(path, "{.users[0].user.token}");
        CHECK_STR_EQ(server, "https://h:1/a#b: c");
        CHECK_STR_EQ(token, "to\"k\\en: x");
        free(token);
    }
    free(server), free(text), free(ca), free(path);
}

TEST(auth_kubeconfig_missing_ca_is_an_error)
{
    char *ca = tmp_path("nope.crt"), *path = tmp_path("kubeconfig");
    kapi_error *err = kapi_kubeconfig_write(path, "https://127.0.0.1:6443", ca, "t");
    CHECK(err != NULL);
    CHECK_CONTAINS(err->message, "nope.crt");
    CHECK(access(path, F_OK) != 0);
    kapi_error_free(err);
    free(ca), free(path);
}
