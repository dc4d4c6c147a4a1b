/*
 * cel: issue 19's figures. In the harness, kapi's CEL alone (when the harness runs the
 * kapi under test): evaluations per second of two
 * rules as a CRD carries them, each checked once and evaluated again and again over one
 * value (the bounds rule over three integers, and an all() over a list of 1,000 strings).
 * Against the server: creates/s of a custom resource whose CRD has five rules beside one
 * whose CRD has none, in the same run, with the server's CPU per create of each and their
 * ratio (issue 19's target: at most 2).
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cel/cel.h"

#define GROUP "cel.kapi-bench.example.com"
#define LIST_ITEMS 1000

/* ---- evaluations in the harness ---- */

static bool self_var(void *ctx, const char *name, kapi_cel_value *out)
{
    if (strcmp(name, "self") != 0)
        return false;
    *out = *(const kapi_cel_value *)ctx;
    return true;
}

/* Evaluations per second of rule over self (of type t) for about seconds; -1 when it does
 * not check or does not hold. */
static double evals_per_s(const char *rule, const kapi_cel_typ *t, kapi_cel_value self,
                          double seconds)
{
    kapi_cel_ast *ast = kapi_cel_parse(rule, strlen(rule));
    kapi_cel_var var = {"self", t};
    double rate = -1;
    if (!kapi_cel_check(ast, &var, 1, NULL)) {
        fprintf(stderr, "kapi-bench: %s: does not check\n", rule);
        goto done;
    }
    kapi_cel_activation act = {self_var, &self};
    size_t n = 0;
    double t0 = (double)kapi_time_mono_ns() / 1e9, t1 = t0;
    while (t1 - t0 < seconds) {
        for (int k = 0; k < 64; k++, n++) {
            kapi_arena a;
            kapi_arena_init(&a);
            kapi_cel_value v = kapi_cel_eval_limited(ast, &act, &a, 1000000, NULL);
            bool holds = v.t == KAPI_CEL_T_BOOL && v.u.b;
            kapi_arena_dispose(&a);
            if (!holds) {
                fprintf(stderr, "kapi-bench: %s: does not hold\n", rule);
                goto done;
            }
        }
        t1 = (double)kapi_time_mono_ns() / 1e9;
    }
    rate = (double)n / (t1 - t0);
done:
    kapi_cel_ast_free(ast);
    return rate;
}

static int evaluations(kapi_bench_run *r, double seconds)
{
    kapi_arena a;
    kapi_arena_init(&a);
    static const char *const names[] = {"minReplicas", "replicas", "maxReplicas"};
    kapi_cel_field fields[3];
    kapi_cel_value keys[3], vals[3];
    for (int i = 0; i < 3; i++) {
        fields[i] = (kapi_cel_field){names[i], kapi_cel_type_of(KAPI_CEL_TY_INT)};
        keys[i] = (kapi_cel_value){.t = KAPI_CEL_T_STRING, .u.s = kapi_str_c(names[i])};
        vals[i] = (kapi_cel_value){.t = KAPI_CEL_T_INT, .u.i = 1 + i};
    }
    kapi_cel_typ spec = {
        .kind = KAPI_CEL_TY_OBJECT, .name = "spec", .fields = fields, .nfields = 3};
    kapi_cel_value obj = {.t = KAPI_CEL_T_MAP, .u.map = {keys, vals, 3}};
    double bounds = evals_per_s("self.minReplicas <= self.replicas && self.replicas <= "
                                "self.maxReplicas",
                                &spec, obj, seconds);

    kapi_cel_typ item = {.kind = KAPI_CEL_TY_STRING, .max_elements = 64};
    kapi_cel_typ list = {.kind = KAPI_CEL_TY_LIST, .elem = &item, .max_elements = LIST_ITEMS};
    kapi_cel_value *items = kapi_arena_alloc(&a, LIST_ITEMS * sizeof(*items));
    for (size_t i = 0; i < LIST_ITEMS; i++) {
        const char *s = kapi_arena_printf(&a, "item-%04zu", i);
        items[i] = (kapi_cel_value){.t = KAPI_CEL_T_STRING, .u.s = kapi_str_c(s)};
    }
    kapi_cel_value l = {.t = KAPI_CEL_T_LIST, .u.list = {.v = items, .n = LIST_ITEMS}};
    double over_list =
        evals_per_s("self.all(x, x.startsWith('item-') && x.size() <= 64)", &list, l, seconds);
    kapi_arena_dispose(&a);
    if (bounds < 0 || over_list < 0)
        return -1;
    kapi_bench_report_add(r->report, "cel", "evaluations/s of the bounds rule (in the harness)",
                          "cel_bounds_evals_per_s", bounds, 0);
    kapi_bench_report_add(r->report, "cel",
                          "evaluations/s of an all() over 1,000 items (in the harness)",
                          "cel_list_evals_per_s", over_list, 0);
    return 0;
}

/* ---- creates against the server ---- */

/* The CRD of kind <Kind>, its spec with five fields, and with the five rules when ruled. */
static void crd_body(kapi_buf *b, const char *plural, const char *kind, bool ruled)
{
    kapi_buf_printf(
        b,
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"%s." GROUP "\"},\"spec\":{\"group\":\"" GROUP "\","
        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"%s\",\"kind\":\"%s\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":"
        "{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
        "%s\"properties\":{\"minReplicas\":{\"type\":\"integer\"},\"replicas\":{\"type\":"
        "\"integer\"},\"maxReplicas\":{\"type\":\"integer\"},\"name\":{\"type\":\"string\","
        "\"maxLength\":63},\"tags\":{\"type\":\"array\",\"maxItems\":16,\"items\":{\"type\":"
        "\"string\",\"maxLength\":32}}}}}}}}]}}",
        plural, plural, kind,
        ruled ? "\"x-kubernetes-validations\":["
                "{\"rule\":\"self.minReplicas <= self.replicas && self.replicas <= "
                "self.maxReplicas\",\"message\":\"replicas out of bounds\"},"
                "{\"rule\":\"self.name.matches('^[a-z][a-z0-9-]*$')\"},"
                "{\"rule\":\"self.tags.all(t, t.size() > 0)\"},"
                "{\"rule\":\"!has(self.maxReplicas) || self.maxReplicas <= 100\"},"
                "{\"rule\":\"self.name.startsWith('w-') || self.tags.exists(t, t == 'free')\"}],"
              : "");
}

typedef struct creator {
    kapi_buf path, body;
    const char *kind;
} creator;

static void send_create(kapi_bench_batch *b, kapi_bench_conn *c, size_t i)
{
    creator *cr = b->ctx;
    kapi_buf_clear(&cr->body);
    kapi_buf_printf(&cr->body,
                    "{\"apiVersion\":\"" GROUP "/v1\",\"kind\":\"%s\",\"metadata\":{\"name\":"
                    "\"w-%07zu\"},\"spec\":{\"minReplicas\":1,\"replicas\":%zu,\"maxReplicas\":10,"
                    "\"name\":\"w-%zu\",\"tags\":[\"a\",\"b\",\"free\"]}}",
                    cr->kind, i, 1 + i % 9, i);
    kapi_bench_conn_send(c, "POST", cr->path.ptr, "application/json", cr->body.ptr, cr->body.len);
}

/* Creates n objects of kind (plural) in the run's namespace; the server's CPU per create,
 * or -1 (unknown: 0). */
static int creates(kapi_bench_run *r, const char *plural, const char *kind, size_t n,
                   const char *what, const char *keys[4], double *cpu_us)
{
    creator cr = {.kind = kind};
    kapi_buf_init(&cr.path);
    kapi_buf_init(&cr.body);
    kapi_buf_printf(&cr.path, "/apis/" GROUP "/v1/namespaces/%s/%s", r->ns, plural);
    kapi_bench_batch b;
    kapi_bench_batch_init(&b);
    b.total = n;
    b.conns = r->size.conns;
    b.send = send_create;
    b.ctx = &cr;
    int rc = kapi_bench__run_batch(r, &b, what);
    if (rc == 0)
        kapi_bench__add_rates(r, &b, "cel", what, keys);
    *cpu_us = 1e6 * b.server_cpu / (double)b.total;
    kapi_bench_batch_dispose(&b);
    kapi_buf_dispose(&cr.path);
    kapi_buf_dispose(&cr.body);
    return rc;
}

static int install(kapi_bench_run *r, const char *plural, const char *kind, bool ruled)
{
    kapi_buf body;
    kapi_buf_init(&body);
    crd_body(&body, plural, kind, ruled);
    char *path = kapi_xprintf("/apis/" GROUP "/v1/namespaces/%s/%s?limit=1", r->ns, plural);
    double took = kapi_bench__install_crd(r, body.ptr, path);
    free(path);
    kapi_buf_dispose(&body);
    return took < 0 ? -1 : 0;
}

static void uninstall(kapi_bench_run *r, const char *plural)
{
    char *path =
        kapi_xprintf("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s." GROUP, plural);
    kapi_bench_request(r->client, "DELETE", path, NULL, NULL, NULL);
    free(path);
}

int kapi_bench_scenario_cel(kapi_bench_run *r)
{
    static const char *plain_keys[4] = {"cel_none_create_per_s", "cel_none_create_p50_ms",
                                        "cel_none_create_p99_ms", "cel_none_create_cpu_us"};
    static const char *ruled_keys[4] = {"cel_five_create_per_s", "cel_five_create_p50_ms",
                                        "cel_five_create_p99_ms", "cel_five_create_cpu_us"};
    size_t n = r->size.creates / 4 < 50 ? 50 : r->size.creates / 4;
    double plain_cpu = 0, ruled_cpu = 0;
    /* kapi's own CEL: against another server the figures would not be that server's */
    int rc = r->server ? evaluations(r, r->size.creates >= 2000 ? 1.0 : 0.1) : 0;
    if (rc == 0 && install(r, "plainwidgets", "PlainWidget", false) == 0 &&
        install(r, "ruledwidgets", "RuledWidget", true) == 0) {
        rc = creates(r, "plainwidgets", "PlainWidget", n, "custom resources (no rules) created",
                     plain_keys, &plain_cpu);
        if (rc == 0)
            rc = creates(r, "ruledwidgets", "RuledWidget", n,
                         "custom resources (five rules) created", ruled_keys, &ruled_cpu);
    } else {
        rc = -1;
    }
    if (rc == 0 && plain_cpu > 0)
        kapi_bench_report_add(r->report, "cel", "server CPU per create, five rules / none",
                              "cel_five_over_none_cpu", ruled_cpu / plain_cpu, 2);
    uninstall(r, "plainwidgets");
    uninstall(r, "ruledwidgets");
    return rc;
}
