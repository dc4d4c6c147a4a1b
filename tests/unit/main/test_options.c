/* Unit tests for src/main/options: the command line as pflag reads it, the config file
 * and its precedence, the help from the table. */
#include <stdarg.h>

#include "main/main.h"
#include "test.h"

/* Parses the NULL-terminated arguments (copied: values are modified in place) into *o;
 * the copies are kept in args until args_free. */
typedef struct args {
    char *v[32];
    int n;
} args;

static int parse(kapi_options *o, args *a, ...)
{
    va_list ap;
    va_start(ap, a);
    a->n = 0;
    a->v[a->n++] = strdup("kapi");
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;)
        a->v[a->n++] = strdup(s);
    va_end(ap);
    a->v[a->n] = NULL;
    return kapi_options_parse(o, a->n, a->v);
}

static void args_free(args *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->v[i]);
}

static const char *write_config(const char *text)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/config.yaml", test_tmpdir());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* The defaults come from the table, through the setters. */
TEST(options_defaults)
{
    kapi_options o;
    args a;
    CHECK_INT_EQ(parse(&o, &a, NULL), -1);
    CHECK_STR_EQ(o.data_dir, "kapi-data");
    CHECK_STR_EQ(o.bind_address, "127.0.0.1");
    CHECK_INT_EQ(o.port, 6443);
    CHECK_INT_EQ(o.request_timeout_ms, 60000);
    CHECK_INT_EQ(o.event_ttl_ms, 3600000);
    CHECK(o.anonymous && !o.leader_elect && o.etcd.servers == NULL);
    CHECK_STR_EQ(o.etcd.prefix, "/registry");
    CHECK_INT_EQ(o.etcd.compaction_interval_s, 300);
    CHECK_INT_EQ(o.history_seconds, 300);
    CHECK_INT_EQ(o.max_inflight, 400);
    CHECK_INT_EQ(o.max_mutating_inflight, 200);
    CHECK_INT_EQ(o.http2_max_streams, 1000);
    CHECK_INT_EQ(o.lease_ms, 15000);
    CHECK_INT_EQ(o.renew_ms, 10000);
    CHECK_INT_EQ(o.retry_ms, 2000);
    CHECK_INT_EQ(o.nauthz_modes, 1);
    CHECK_INT_EQ(o.authz_modes[0], KAPI_AUTHZ_RBAC);
    CHECK_INT_EQ(o.controllers.n, 1);
    CHECK_STR_EQ(o.controllers.v[0], "*");
    kapi_options_dispose(&o);
    args_free(&a);
}

TEST(options_pflag_forms)
{
    kapi_options o;
    args a;
    CHECK_INT_EQ(parse(&o, &a, "--secure-port=7000", "--data-dir", "/d", "--anonymous-auth=false",
                       "--allocate-node-cidrs", "--api-audiences=a,b", "--api-audiences", "c",
                       "--service-account-key-file", "k1", "--service-account-key-file=k2",
                       "--request-timeout", "1m30s", NULL),
                 -1);
    CHECK_INT_EQ(o.port, 7000);
    CHECK_STR_EQ(o.data_dir, "/d");
    CHECK(!o.anonymous && o.allocate_node_cidrs);
    CHECK_INT_EQ(o.api_audiences.n, 3);
    CHECK_STR_EQ(o.api_audiences.v[2], "c");
    CHECK_INT_EQ(o.sa_key_files.n, 2);
    CHECK_STR_EQ(o.sa_key_files.v[1], "k2");
    CHECK_INT_EQ(o.request_timeout_ms, 90000);
    kapi_options_dispose(&o);
    args_free(&a);
}

TEST(options_errors)
{
    static const char *const bad[][3] = {
        {"--no-such-flag", NULL},
        {"--secure-port", "70000"},
        {"--secure-port", NULL},
        {"--anonymous-auth=maybe", NULL},
        {"--anonymous-auth", "false"}, /* a bool takes no separate value: "false" is stray */
        {"--authorization-mode=RBAC,Webhook", NULL},
        {"--controllers=*,-nosuch", NULL},
        {"--tls-cert-file=c", NULL},
        {"-x", NULL},
        {"-h=maybe", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        kapi_options o;
        args a;
        CHECK_INT_EQ(parse(&o, &a, bad[i][0], bad[i][1], NULL), 1);
        kapi_options_dispose(&o);
        args_free(&a);
    }
}

TEST(options_help_and_version_exit_zero)
{
    kapi_options o;
    args a;
    CHECK(freopen("/dev/null", "w", stdout) != NULL);
    CHECK_INT_EQ(parse(&o, &a, "--secure-port=x", "-h", NULL), 0);
    kapi_options_dispose(&o);
    args_free(&a);
    CHECK_INT_EQ(parse(&o, &a, "--version", NULL), 0);
    kapi_options_dispose(&o);
    args_free(&a);
}

TEST(options_config_file)
{
    kapi_options o;
    args a;
    const char *path = write_config("secure-port: 7001\n"
                                    "bind-address: 0.0.0.0\n"
                                    "anonymous-auth: false\n"
                                    "request-timeout: 30s\n"
                                    "service-account-issuer: [https://a, https://b]\n"
                                    "authorization-mode: [AlwaysAllow, RBAC]\n");
    CHECK_INT_EQ(parse(&o, &a, "--config", path, "--bind-address=127.0.0.2", NULL), -1);
    CHECK_INT_EQ(o.port, 7001);
    CHECK_STR_EQ(o.bind_address, "127.0.0.2"); /* the command line wins */
    CHECK(!o.anonymous);
    CHECK_INT_EQ(o.request_timeout_ms, 30000);
    CHECK_INT_EQ(o.sa_issuers.n, 2);
    CHECK_STR_EQ(o.sa_issuers.v[1], "https://b");
    CHECK_INT_EQ(o.nauthz_modes, 2);
    CHECK_INT_EQ(o.authz_modes[0], KAPI_AUTHZ_ALWAYS_ALLOW);
    kapi_options_dispose(&o);
    args_free(&a);
}

TEST(options_config_repeated_flag_replaced)
{
    kapi_options o;
    args a;
    const char *path = write_config("service-account-key-file: [f1, f2]\n");
    CHECK_INT_EQ(parse(&o, &a, "--service-account-key-file=f3", "--config", path, NULL), -1);
    CHECK_INT_EQ(o.sa_key_files.n, 1);
    CHECK_STR_EQ(o.sa_key_files.v[0], "f3");
    kapi_options_dispose(&o);
    args_free(&a);
}

TEST(options_config_errors)
{
    static const char *const bad[] = {
        "no-such-key: 1\n",
        "secure-port: high\n",
        "secure-port: {a: 1}\n",
        "config: other.yaml\n",
        "- a list\n",
        "secure-port: [1, {a: 2}]\n",
        "a: b: c\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        kapi_options o;
        args a;
        CHECK_INT_EQ(parse(&o, &a, "--config", write_config(bad[i]), NULL), 1);
        kapi_options_dispose(&o);
        args_free(&a);
    }
    kapi_options o;
    args a;
    CHECK_INT_EQ(parse(&o, &a, "--config", "/nonexistent/kapi.yaml", NULL), 1);
    kapi_options_dispose(&o);
    args_free(&a);
}

TEST(options_help_lists_groups_wrapped)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kapi_options_help(f, 80);
    fclose(f);
    CHECK(strstr(text, "Etcd flags:\n") != NULL);
    CHECK(strstr(text, "Secure serving flags:\n") != NULL);
    CHECK(strstr(text, "      --secure-port int") != NULL);
    CHECK(strstr(text, "(default 6443)") != NULL);
    for (char *line = text, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        CHECK(end != NULL);
        /* no line past 80 columns but one word too long to break, alone on its line */
        const char *word = line + strspn(line, " ");
        CHECK(end - line <= 80 || memchr(word, ' ', (size_t)(end - word)) == NULL);
    }
    free(text);
}
