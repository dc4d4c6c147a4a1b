/* Unit tests for CEL cost (src/cel/cost.c and the counting in src/cel/eval.c): the
 * estimates and the actual costs Kubernetes 1.26 gives rules over schemas, self typed by
 * the schema module as a CRD's rules are (tests/data/cel/README.md for the table), and the
 * limit stopping an expensive rule. */
#include <stdlib.h>
#include <string.h>

#include "cel/cel.h"
#include "schema/schema.h"
#include "test.h"

static bool lookup_self(void *ctx, const char *name, kapi_cel_value *out)
{
    if (strcmp(name, "self") != 0)
        return false;
    *out = *(const kapi_cel_value *)ctx;
    return true;
}

/* One row of the table: what rule over schema (and object, when given) gives, against
 * what the row says; a mismatch is appended to report. */
static void run_row(const json_t *row, kapi_buf *report)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_schema_root *root = NULL;
    kapi_error *err = kapi_schema_compile(json_object_get(row, "schema"), &root);
    if (err)
        test_fail(__FILE__, __LINE__, "schema: %s", err->message);
    kapi_cel_var self = {"self", kapi_schema_root_node(root)->cel_type};
    const char *rule = json_string_value(json_object_get(row, "rule"));
    kapi_cel_ast *ast = kapi_cel_parse(rule, strlen(rule));
    if (!kapi_cel_check(ast, &self, 1, NULL)) {
        kapi_buf_printf(report, "%s: does not check\n", rule);
        goto done;
    }
    const json_t *w = json_object_get(row, "estimate"); /* past INT64_MAX, a string */
    uint64_t want = json_is_string(w) ? strtoull(json_string_value(w), NULL, 10)
                                      : (uint64_t)json_integer_value(w);
    kapi_cel_cost est = kapi_cel_estimate_cost(ast);
    if (est.max != want)
        kapi_buf_printf(report, "%s: estimate %llu, want %llu\n", rule, (unsigned long long)est.max,
                        (unsigned long long)want);
    const json_t *object = json_object_get(row, "object");
    if (!object)
        goto done;
    kapi_cel_value v = kapi_cel_from_json(&a, object);
    kapi_cel_activation act = {lookup_self, &v};
    uint64_t cost;
    kapi_cel_value r = kapi_cel_eval_limited(ast, &act, &a, 0, &cost);
    want = (uint64_t)json_integer_value(json_object_get(row, "cost"));
    if (cost != want)
        kapi_buf_printf(report, "%s: cost %llu, want %llu\n", rule, (unsigned long long)cost,
                        (unsigned long long)want);
    bool valid = r.t == KAPI_CEL_T_BOOL && r.u.b;
    if (valid != json_is_true(json_object_get(row, "valid")))
        kapi_buf_printf(report, "%s: gives %s\n", rule,
                        r.t == KAPI_CEL_T_ERROR ? r.u.error
                        : valid                 ? "true"
                                                : "false");
done:
    kapi_cel_ast_free(ast);
    kapi_schema_root_free(root);
    kapi_arena_dispose(&a);
}

TEST(cel_cost_kubernetes_table)
{
    char *text = test_slurp("tests/data/cel/cost.jsonl", NULL);
    CHECK(text != NULL);
    kapi_buf report;
    kapi_buf_init(&report);
    int rows = 0;
    char *next;
    for (char *line = text; *line; line = next) {
        next = line + strcspn(line, "\n");
        if (*next)
            *next++ = 0;
        if (line[0] == '#' || line[0] == 0)
            continue;
        json_error_t je;
        json_t *row = json_loads(line, 0, &je);
        if (!row)
            test_fail(__FILE__, __LINE__, "%s: %s", je.text, line);
        run_row(row, &report);
        json_decref(row);
        rows++;
    }
    free(text);
    if (rows < 180)
        test_fail(__FILE__, __LINE__, "%d rows", rows);
    if (report.len)
        test_fail(__FILE__, __LINE__, "%d rows, mismatches:\n%s", rows, report.ptr);
    kapi_buf_dispose(&report);
}

/* A checked rule over self, a list of n ints of any size. */
typedef struct ints_rule {
    kapi_arena a;
    kapi_cel_ast *ast;
    kapi_cel_value self;
} ints_rule;

static void ints_rule_init(ints_rule *r, const char *rule, size_t n)
{
    kapi_arena_init(&r->a);
    kapi_cel_typ *list = kapi_arena_alloc(&r->a, sizeof(*list));
    *list = (kapi_cel_typ){.kind = KAPI_CEL_TY_LIST,
                           .elem = kapi_cel_type_of(KAPI_CEL_TY_INT),
                           .max_elements = UINT64_MAX};
    kapi_cel_var self = {"self", list};
    r->ast = kapi_cel_parse(rule, strlen(rule));
    CHECK(kapi_cel_check(r->ast, &self, 1, NULL) != NULL);
    kapi_cel_value *v = kapi_arena_alloc(&r->a, n * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = (kapi_cel_value){.t = KAPI_CEL_T_INT, .u.i = (int64_t)i};
    r->self = (kapi_cel_value){.t = KAPI_CEL_T_LIST, .u.list = {v, n}};
}

static kapi_cel_value ints_rule_eval(ints_rule *r, uint64_t limit, uint64_t *cost)
{
    kapi_cel_activation act = {lookup_self, &r->self};
    return kapi_cel_eval_limited(r->ast, &act, &r->a, limit, cost);
}

static void ints_rule_dispose(ints_rule *r)
{
    kapi_cel_ast_free(r->ast);
    kapi_arena_dispose(&r->a);
}

TEST(cel_cost_limit_stops_expensive_rule)
{
    /* 1000^3 iterations unlimited; Kubernetes' per-call limit stops it after ~1e6 */
    ints_rule r;
    ints_rule_init(&r, "self.all(x, self.all(y, self.all(z, x + y + z >= 0))) || true", 1000);
    kapi_cel_cost est = kapi_cel_estimate_cost(r.ast);
    CHECK(est.max == UINT64_MAX);
    uint64_t cost;
    kapi_cel_value v = ints_rule_eval(&r, 1000000, &cost);
    CHECK(v.t == KAPI_CEL_T_ERROR);
    CHECK_STR_EQ(v.u.error, KAPI_CEL_COST_LIMIT_EXCEEDED);
    CHECK(cost > 1000000 && cost < 1000100);
    ints_rule_dispose(&r);
}

TEST(cel_cost_limit_boundary)
{
    ints_rule r;
    ints_rule_init(&r, "self.all(x, x >= 0)", 10);
    uint64_t cost, limited;
    kapi_cel_value v = ints_rule_eval(&r, 0, &cost);
    CHECK(v.t == KAPI_CEL_T_BOOL && v.u.b);
    /* range 1, then per item the condition 2 and the step 1 + 2, then the result 1 */
    CHECK_INT_EQ(cost, 1 + 10 * 5 + 1);
    v = ints_rule_eval(&r, cost, &limited); /* exceeding is passing the limit */
    CHECK(v.t == KAPI_CEL_T_BOOL && v.u.b);
    CHECK_INT_EQ(limited, cost);
    v = ints_rule_eval(&r, cost - 1, &limited);
    CHECK(v.t == KAPI_CEL_T_ERROR);
    CHECK_STR_EQ(v.u.error, KAPI_CEL_COST_LIMIT_EXCEEDED);
    ints_rule_dispose(&r);
}

TEST(cel_cost_saturates)
{
    ints_rule r;
    ints_rule_init(&r,
                   "self.all(a, self.all(b, self.all(c, self.all(d, self.all(e, "
                   "self.map(f, [f, f]).all(g, g.size() > 0 && g[0] in self))))))",
                   1);
    kapi_cel_cost est = kapi_cel_estimate_cost(r.ast);
    CHECK(est.min == 2);
    CHECK(est.max == UINT64_MAX);
    ints_rule_dispose(&r);
}

TEST(cel_cost_unchecked)
{
    /* parse-only: calls have no resolved overload, so cost 1, == and != by size */
    const char *src = "'abc' + 'def' == 'abcdef' && int";
    kapi_cel_ast *ast = kapi_cel_parse(src, strlen(src));
    kapi_arena a;
    kapi_arena_init(&a);
    uint64_t cost;
    kapi_cel_value v = kapi_cel_eval_limited(ast, NULL, &a, 0, &cost);
    CHECK(v.t == KAPI_CEL_T_ERROR); /* int is a type, && wants a bool */
    CHECK_INT_EQ(cost, 1 + 1 + 1);  /* +, ==, and int as a variable */
    kapi_arena_dispose(&a);
    kapi_cel_ast_free(ast);
}
