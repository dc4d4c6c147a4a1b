/* Unit tests for the pure parts of kapi-bench: percentiles, server URLs, kubeconfigs, the
 * report's JSON and table. The scenarios themselves run in `make bench-smoke`. */
#include "bench.h"
#include "test.h"

#include <math.h>
#include <stdio.h>

static kapi_bench_samples samples_of(const uint64_t *ms, size_t n)
{
    kapi_bench_samples s;
    kapi_bench_samples_init(&s);
    for (size_t i = 0; i < n; i++)
        kapi_bench_samples_add(&s, ms[i] * 1000000u);
    return s;
}

TEST(bench_percentile_nearest_rank)
{
    /* 1..100 ms in reverse: p50 is the 50th smallest, p99 the 99th, p100 the largest. */
    uint64_t ms[100];
    for (size_t i = 0; i < 100; i++)
        ms[i] = 100 - i;
    kapi_bench_samples s = samples_of(ms, 100);
    CHECK(kapi_bench_samples_percentile_ms(&s, 50) == 50);
    CHECK(kapi_bench_samples_percentile_ms(&s, 99) == 99);
    CHECK(kapi_bench_samples_percentile_ms(&s, 100) == 100);
    CHECK(kapi_bench_samples_percentile_ms(&s, 0.5) == 1);
    kapi_bench_samples_dispose(&s);
}

TEST(bench_percentile_few_samples)
{
    uint64_t ms[] = {7, 3, 5};
    kapi_bench_samples s = samples_of(ms, 3), none;
    CHECK(kapi_bench_samples_percentile_ms(&s, 50) == 5); /* rank ceil(1.5) = 2 */
    CHECK(kapi_bench_samples_percentile_ms(&s, 99) == 7);
    kapi_bench_samples_add(&s, 1000000); /* added after a sort: sorted again */
    CHECK(kapi_bench_samples_percentile_ms(&s, 25) == 1);
    kapi_bench_samples_init(&none);
    CHECK(kapi_bench_samples_percentile_ms(&none, 99) == 0);
    kapi_bench_samples_dispose(&s);
}

TEST(bench_server_url)
{
    kapi_bench_target t;
    kapi_buf err;
    kapi_buf_init(&err);
    kapi_bench_target_init(&t);
    CHECK(kapi_bench_target_set_server(&t, "https://127.0.0.1:6443", &err) == 0);
    CHECK_STR_EQ(t.host, "127.0.0.1");
    CHECK_STR_EQ(t.port, "6443");
    CHECK_STR_EQ(t.prefix, "");
    CHECK(kapi_bench_target_set_server(&t, "https://[::1]:8443/k8s/clusters/c-1/", &err) == 0);
    CHECK_STR_EQ(t.host, "::1");
    CHECK_STR_EQ(t.port, "8443");
    CHECK_STR_EQ(t.prefix, "/k8s/clusters/c-1");
    CHECK(kapi_bench_target_set_server(&t, "https://api.example.com", &err) == 0);
    CHECK_STR_EQ(t.host, "api.example.com");
    CHECK_STR_EQ(t.port, "443");
    CHECK(kapi_bench_target_set_server(&t, "http://127.0.0.1:8080", &err) < 0);
    CHECK(strstr(err.ptr, "only https://") != NULL);
    kapi_bench_target_dispose(&t);
    kapi_buf_dispose(&err);
}

/* What kapi writes (src/auth/kubeconfig.c): every string double-quoted. */
static const char kapi_kubeconfig[] =
    "apiVersion: v1\nkind: Config\nclusters:\n- name: kapi\n  cluster:\n"
    "    server: \"https://127.0.0.1:39123\"\n"
    "    certificate-authority-data: \"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\"\n"
    "users:\n- name: admin\n  user:\n    token: \"s3cr\\u0065t\"\n"
    "contexts:\n- name: kapi\n  context:\n    cluster: kapi\n    user: admin\n"
    "current-context: kapi\npreferences: {}\n";

TEST(bench_kubeconfig_kapi)
{
    kapi_bench_target t;
    kapi_buf err;
    kapi_buf_init(&err);
    kapi_bench_target_init(&t);
    CHECK(kapi_bench_kubeconfig_parse(&t, kapi_kubeconfig, sizeof(kapi_kubeconfig) - 1, "/x", NULL,
                                      &err) == 0);
    CHECK_STR_EQ(t.server, "https://127.0.0.1:39123");
    CHECK_STR_EQ(t.port, "39123");
    CHECK_STR_EQ(t.token, "s3cret");
    CHECK_STR_EQ(t.ca_pem.ptr, "-----BEGIN CERTIFICATE-----\n");
    CHECK(!t.insecure);
    kapi_bench_target_dispose(&t);
    kapi_buf_dispose(&err);
}

/* kubectl's style: plain scalars, several entries, files relative to the kubeconfig. */
TEST(bench_kubeconfig_files_and_contexts)
{
    char *dir = kapi_xprintf("%s", test_tmpdir()), *ca = kapi_xprintf("%s/ca.pem", dir);
    char *tok = kapi_xprintf("%s/token", dir);
    FILE *f = fopen(ca, "w");
    fputs("PEM", f);
    fclose(f);
    f = fopen(tok, "w");
    fputs("from-file\n", f);
    fclose(f);
    static const char text[] =
        "apiVersion: v1\nclusters:\n"
        "- cluster: {server: 'https://a.example:443', insecure-skip-tls-verify: true}\n"
        "  name: a\n"
        "- cluster:\n    certificate-authority: ca.pem\n    server: https://b.example:6443\n"
        "  name: b\n"
        "contexts:\n- context: {cluster: a, user: u1}\n  name: ctx-a\n"
        "- context:\n    cluster: b\n    user: u2\n  name: ctx-b\n"
        "current-context: ctx-a\n"
        "users:\n- name: u1\n  user:\n    exec:\n      command: gcloud\n"
        "- name: u2\n  user:\n    tokenFile: TOKEN\n";
    char *doc = kapi_xstrdup(text), *at = strstr(doc, "TOKEN");
    char *full = kapi_xprintf("%.*s%s%s", (int)(at - doc), doc, tok, at + 5);
    kapi_bench_target t;
    kapi_buf err;
    kapi_buf_init(&err);
    kapi_bench_target_init(&t);
    /* the current context's user runs a plugin: not supported, and said so */
    CHECK(kapi_bench_kubeconfig_parse(&t, full, strlen(full), dir, NULL, &err) < 0);
    CHECK(strstr(err.ptr, "--token") != NULL);
    kapi_bench_target_dispose(&t);
    kapi_bench_target_init(&t);
    kapi_buf_clear(&err);
    CHECK(kapi_bench_kubeconfig_parse(&t, full, strlen(full), dir, "ctx-b", &err) == 0);
    CHECK_STR_EQ(t.host, "b.example");
    CHECK_STR_EQ(t.ca_pem.ptr, "PEM");
    CHECK_STR_EQ(t.token, "from-file");
    kapi_bench_target_dispose(&t);
    kapi_bench_target_init(&t);
    CHECK(kapi_bench_kubeconfig_parse(&t, full, strlen(full), dir, "nope", &err) < 0);
    CHECK(strstr(err.ptr, "no context named \"nope\"") != NULL);
    kapi_bench_target_dispose(&t);
    kapi_buf_dispose(&err);
    free(dir);
    free(ca);
    free(tok);
    free(doc);
    free(full);
}

TEST(bench_kubeconfig_bad)
{
    kapi_bench_target t;
    kapi_buf err;
    kapi_buf_init(&err);
    kapi_bench_target_init(&t);
    CHECK(kapi_bench_kubeconfig_parse(&t, "a: [", 4, NULL, NULL, &err) < 0);
    CHECK(strstr(err.ptr, "kubeconfig: line") != NULL);
    kapi_buf_clear(&err);
    CHECK(kapi_bench_kubeconfig_parse(&t, "clusters: []\n", 13, NULL, NULL, &err) < 0);
    CHECK_STR_EQ(err.ptr, "kubeconfig: no current-context");
    kapi_bench_target_dispose(&t);
    kapi_buf_dispose(&err);
}

TEST(bench_report)
{
    kapi_bench_report r;
    kapi_buf out;
    double v = 0;
    kapi_bench_report_init(&r);
    kapi_buf_init(&out);
    kapi_bench_report_add(&r, "create", "Events created/s", "create_per_s", 15234.6, 0);
    kapi_bench_report_add(&r, "list", "ms per full list", "list_10k_ms", 61.25, 1);
    kapi_bench_report_add(&r, "x", "nothing measured", "x_per_s", INFINITY, 0);
    CHECK(kapi_bench_report_get(&r, "list_10k_ms", &v) && v == 61.25);
    CHECK(!kapi_bench_report_get(&r, "nope", &v));
    kapi_bench_report_json(&r, &out);
    CHECK_STR_EQ(out.ptr,
                 "{\n  \"create_per_s\": 15235,\n  \"list_10k_ms\": 61.2,\n  \"x_per_s\": 0\n}\n");
    kapi_buf_clear(&out);
    kapi_bench_report_markdown(&r, &out);
    CHECK(strstr(out.ptr, "| create | Events created/s | 15235 | ≥ 15000 met |\n") != NULL);
    CHECK(strstr(out.ptr, "| list | ms per full list | 61.2 | ≤ 50 **missed** |\n") != NULL);
    kapi_bench_report_dispose(&r);
    kapi_buf_dispose(&out);
}

TEST(bench_sizes)
{
    kapi_bench_sizes full, smoke;
    kapi_bench_sizes_scale(&full, 1);
    kapi_bench_sizes_scale(&smoke, 0.01);
    CHECK_INT_EQ(full.creates, 20000);
    CHECK_INT_EQ(full.gets, 100000);
    CHECK_INT_EQ(full.list_objects, 10000);
    CHECK_INT_EQ(full.list_page, 500);
    CHECK_INT_EQ(full.watchers, 1000);
    CHECK_INT_EQ(full.h2_streams, 8); /* get-h2: 32 in flight over 4 connections */
    CHECK_INT_EQ(full.memory_events, 100000);
    CHECK_INT_EQ(smoke.creates, 200);
    CHECK_INT_EQ(smoke.watchers, 10);
    CHECK_INT_EQ(smoke.list_page, 25);
    CHECK_INT_EQ(smoke.conns, 32);
    CHECK_INT_EQ(smoke.h2_streams, 8);
}

TEST(bench_event_size)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_bench__event_body(&b, "kapi-bench-abcde", "e-0000001", 1);
    CHECK_INT_EQ(b.len, 600);
    CHECK(b.ptr[b.len - 1] == '}');
    kapi_buf_dispose(&b);
}
