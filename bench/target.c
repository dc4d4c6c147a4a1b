/*
 * target: the server to measure and the credentials for it, from a kubeconfig or flags.
 *
 * A kubeconfig is read with libyaml's document loader (kapi links libyaml already), so
 * block or flow style, quoted or plain scalars all read the same. What is used: the
 * context (current-context unless named), its cluster's server, certificate-authority
 * or -data, insecure-skip-tls-verify, and its user's token or tokenFile and
 * client-certificate/-key (file or -data). exec and auth-provider plugins are not run:
 * the harness says so and asks for --token.
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

void kapi_bench_target_init(kapi_bench_target *t)
{
    *t = (kapi_bench_target){0};
    kapi_buf_init(&t->ca_pem);
    kapi_buf_init(&t->cert_pem);
    kapi_buf_init(&t->key_pem);
}

void kapi_bench_target_dispose(kapi_bench_target *t)
{
    free(t->server);
    free(t->host);
    free(t->port);
    free(t->prefix);
    free(t->token);
    kapi_buf_dispose(&t->ca_pem);
    kapi_buf_dispose(&t->cert_pem);
    kapi_buf_dispose(&t->key_pem);
    *t = (kapi_bench_target){0};
}

int kapi_bench_read_file(const char *path, kapi_buf *out, kapi_buf *err)
{
    char chunk[16384];
    size_t n;
    FILE *f = fopen(path, "rb");
    if (!f) {
        kapi_buf_printf(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        kapi_buf_put(out, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        kapi_buf_printf(err, "%s: read error", path);
        return -1;
    }
    return 0;
}

int kapi_bench_target_set_server(kapi_bench_target *t, const char *url, kapi_buf *err)
{
    static const char scheme[] = "https://";
    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0) {
        kapi_buf_printf(err, "server %s: only https:// servers are supported", url);
        return -1;
    }
    const char *host = url + sizeof(scheme) - 1, *end = host + strcspn(host, "/");
    const char *colon = NULL, *host_end = end;
    if (*host == '[') { /* [v6]:port */
        const char *close = memchr(host, ']', (size_t)(end - host));
        if (!close) {
            kapi_buf_printf(err, "server %s: unbalanced [", url);
            return -1;
        }
        colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
        host_end = close;
        host++;
    } else if ((colon = memchr(host, ':', (size_t)(end - host))) != NULL) {
        host_end = colon;
    }
    if (host_end == host) {
        kapi_buf_printf(err, "server %s: no host", url);
        return -1;
    }
    free(t->server);
    free(t->host);
    free(t->port);
    free(t->prefix);
    t->server = kapi_xstrdup(url);
    t->host = kapi_xstrndup(host, (size_t)(host_end - host));
    t->port = colon ? kapi_xstrndup(colon + 1, (size_t)(end - colon - 1)) : kapi_xstrdup("443");
    size_t plen = strlen(end);
    while (plen > 0 && end[plen - 1] == '/')
        plen--;
    t->prefix = kapi_xstrndup(end, plen);
    return 0;
}

/* ---- the YAML document ---- */

typedef struct kcfg {
    yaml_document_t doc;
    const char *base_dir;
    kapi_buf *err;
} kcfg;

static bool scalar_is(yaml_node_t *n, const char *s)
{
    return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
           memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

/* The value under key in a mapping, or NULL. */
static yaml_node_t *map_get(kcfg *k, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        if (scalar_is(yaml_document_get_node(&k->doc, p->key), key))
            return yaml_document_get_node(&k->doc, p->value);
    }
    return NULL;
}

/* A scalar under key as a heap string, or NULL when absent, empty or not a scalar. */
static char *map_str(kcfg *k, yaml_node_t *map, const char *key)
{
    yaml_node_t *n = map_get(k, map, key);
    if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0)
        return NULL;
    return kapi_xstrndup((const char *)n->data.scalar.value, n->data.scalar.length);
}

/* In the list under list_key (clusters, users, contexts), the `inner` mapping of the
 * entry whose name is name. */
static yaml_node_t *named(kcfg *k, const char *list_key, const char *name, const char *inner)
{
    yaml_node_t *seq = map_get(k, yaml_document_get_root_node(&k->doc), list_key);
    if (seq && seq->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top;
             i++) {
            yaml_node_t *entry = yaml_document_get_node(&k->doc, *i);
            if (scalar_is(map_get(k, entry, "name"), name))
                return map_get(k, entry, inner);
        }
    }
    kapi_buf_printf(k->err, "kubeconfig: no %s named \"%s\"", inner, name);
    return NULL;
}

/* A file's bytes, or the base64 -data beside it, into out; absent is fine. */
static int file_or_data(kcfg *k, yaml_node_t *map, const char *key, kapi_buf *out)
{
    char *data_key = kapi_xprintf("%s-data", key);
    char *data = map_str(k, map, data_key), *file = map_str(k, map, key);
    int rc = 0;
    if (data) {
        if (kapi_base64_decode(data, strlen(data), KAPI_BASE64_STD, out) >= 0) {
            kapi_buf_printf(k->err, "kubeconfig: %s is not base64", data_key);
            rc = -1;
        }
    } else if (file) {
        char *path = file[0] == '/' || !k->base_dir ? kapi_xstrdup(file)
                                                    : kapi_xprintf("%s/%s", k->base_dir, file);
        rc = kapi_bench_read_file(path, out, k->err);
        free(path);
    }
    free(data_key);
    free(data);
    free(file);
    return rc;
}

static int read_cluster(kcfg *k, yaml_node_t *cluster, kapi_bench_target *t)
{
    char *server = map_str(k, cluster, "server");
    char *insecure = map_str(k, cluster, "insecure-skip-tls-verify");
    int rc = -1;
    if (!server)
        kapi_buf_puts(k->err, "kubeconfig: the cluster has no server");
    else if (kapi_bench_target_set_server(t, server, k->err) == 0)
        rc = file_or_data(k, cluster, "certificate-authority", &t->ca_pem);
    t->insecure = insecure && strcmp(insecure, "true") == 0;
    free(server);
    free(insecure);
    return rc;
}

static int read_user(kcfg *k, yaml_node_t *user, kapi_bench_target *t)
{
    char *token_file = map_str(k, user, "tokenFile");
    int rc = 0;
    t->token = map_str(k, user, "token");
    if (!t->token && token_file) {
        kapi_buf b;
        kapi_buf_init(&b);
        rc = kapi_bench_read_file(token_file, &b, k->err);
        while (b.len > 0 && (b.ptr[b.len - 1] == '\n' || b.ptr[b.len - 1] == '\r'))
            b.ptr[--b.len] = '\0';
        t->token = kapi_buf_detach(&b, NULL);
    }
    if (rc == 0)
        rc = file_or_data(k, user, "client-certificate", &t->cert_pem);
    if (rc == 0)
        rc = file_or_data(k, user, "client-key", &t->key_pem);
    if (rc == 0 && !t->token && t->cert_pem.len == 0 &&
        (map_get(k, user, "exec") || map_get(k, user, "auth-provider"))) {
        kapi_buf_puts(k->err, "kubeconfig: exec and auth-provider credentials are not "
                              "supported; pass --token");
        rc = -1;
    }
    free(token_file);
    return rc;
}

static int read_config(kcfg *k, const char *context, kapi_bench_target *t)
{
    yaml_node_t *root = yaml_document_get_root_node(&k->doc);
    char *current = context ? kapi_xstrdup(context) : map_str(k, root, "current-context");
    char *cluster_name = NULL, *user_name = NULL;
    yaml_node_t *ctx, *cluster, *user = NULL;
    int rc = -1;
    if (!current) {
        kapi_buf_puts(k->err, "kubeconfig: no current-context");
        goto done;
    }
    if (!(ctx = named(k, "contexts", current, "context")))
        goto done;
    cluster_name = map_str(k, ctx, "cluster");
    user_name = map_str(k, ctx, "user");
    if (!cluster_name || !(cluster = named(k, "clusters", cluster_name, "cluster")))
        goto done;
    if (user_name && !(user = named(k, "users", user_name, "user")))
        goto done;
    rc = read_cluster(k, cluster, t);
    if (rc == 0 && user)
        rc = read_user(k, user, t);
done:
    if (rc < 0 && k->err->len == 0)
        kapi_buf_printf(k->err, "kubeconfig: context \"%s\" names no cluster", current);
    free(current);
    free(cluster_name);
    free(user_name);
    return rc;
}

int kapi_bench_kubeconfig_parse(kapi_bench_target *t, const char *text, size_t len,
                                const char *base_dir, const char *context, kapi_buf *err)
{
    yaml_parser_t parser;
    kcfg k = {.base_dir = base_dir, .err = err};
    int rc = -1;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &k.doc)) {
        kapi_buf_printf(err, "kubeconfig: line %zu: %s", parser.problem_mark.line + 1,
                        parser.problem ? parser.problem : "not YAML");
        yaml_parser_delete(&parser);
        return -1;
    }
    if (!yaml_document_get_root_node(&k.doc))
        kapi_buf_puts(err, "kubeconfig: empty");
    else
        rc = read_config(&k, context, t);
    yaml_document_delete(&k.doc);
    yaml_parser_delete(&parser);
    return rc;
}

int kapi_bench_kubeconfig_load(kapi_bench_target *t, const char *path, const char *context,
                               kapi_buf *err)
{
    kapi_buf text;
    kapi_buf_init(&text);
    int rc = kapi_bench_read_file(path, &text, err);
    if (rc == 0) {
        const char *slash = strrchr(path, '/');
        char *dir = slash ? kapi_xstrndup(path, (size_t)(slash - path)) : kapi_xstrdup(".");
        rc = kapi_bench_kubeconfig_parse(t, text.ptr, text.len, dir, context, err);
        free(dir);
    }
    kapi_buf_dispose(&text);
    return rc;
}
