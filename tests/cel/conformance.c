/*
 * cel-conformance: the cel-spec conformance suite run on kapi's CEL (src/cel).
 *
 *     build/cel-conformance DIR
 *
 * reads every *.json of DIR (the suite converted to JSON: ../shared/testdata/cel/json,
 * whose README gives the format), evaluates each test and compares its result with the
 * expected value, or checks that it fails when the test expects an error; a test of the
 * type checker (type_deduction) compares the type kapi_cel_check deduces. It prints the
 * failures, one line per file ("basic.json: 43 passed, 0 failed, 0 skipped"), the skipped
 * tests counted by reason, and "N passed, N failed, N skipped"; it exits 0 only when no
 * test failed and every file could be read.
 *
 * A test is skipped, with its reason, when it needs what Kubernetes 1.26's CEL (cel-go
 * v0.12 and its libraries) does not have: protobuf messages and enums, the suite's own
 * declarations, newer syntax and libraries. Whole files of such things are skipped at once.
 */
#include <glob.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cel/cel.h"

/* The files skipped whole, and why. Every other file is run. */
static const struct {
    const char *file, *why;
} whole_files[] = {
    {"proto2", "protobuf messages"},
    {"proto2_ext", "protobuf messages"},
    {"proto3", "protobuf messages"},
    {"enums", "protobuf enums"},
    {"wrappers", "protobuf wrapper types"},
    {"dynamic", "protobuf wrappers, Any, Struct and Value"},
    {"namespace", "containers (namespaced message names)"},
    {"unknowns", "unknown values"},
    {"macros2", "two-variable comprehensions (newer than Kubernetes 1.26's CEL)"},
    {"optionals", "optional types (newer than Kubernetes 1.26's CEL)"},
    {"block_ext", "cel.block (newer than Kubernetes 1.26's CEL)"},
    {"bindings_ext", "cel.bind (newer than Kubernetes 1.26's CEL)"},
    {"encoders_ext", "the base64 library (newer than Kubernetes 1.26's CEL)"},
    {"math_ext", "the math library (newer than Kubernetes 1.26's CEL)"},
    {"network_ext", "the ip and cidr library (newer than Kubernetes 1.26's CEL)"},
};

/* Where 1.26's cel-go (v0.12) answers otherwise than the suite's newer one: the test's
 * file/section/name. */
static const char *const older_answers[] = {
    /* v0.12's lastIndexOf of an empty string is "index out of range: -1", not -1 */
    "string_ext/last_index_of/empty_string",
    /* v0.12's getMilliseconds of a duration is the whole duration in milliseconds (Go's
     * Duration.Milliseconds), not the milliseconds past the second */
    "timestamps/duration_converters/get_milliseconds", NULL};

/* The parse tests whose expectation in the converted suite keeps a textproto escape
 * undecoded (\u, \U and \? are no textproto escapes, so the converter left them as
 * text): the families of string escapes that are not raw, and unescaped punctuation. */
static const char *const undecoded_families[] = {"single_quoted_lower_u",
                                                 "double_quoted_lower_u",
                                                 "single_quoted_upper_u",
                                                 "double_quoted_upper_u",
                                                 "mixed_case_hex_",
                                                 "unassigned_code_point_",
                                                 "quoted_unescaped_punctuation",
                                                 NULL};

/* ---- the suite's values ---- */

static bool suite_value(kapi_arena *a, const json_t *j, kapi_cel_value *out);

static bool suite_list(kapi_arena *a, const json_t *arr, kapi_cel_value *out)
{
    size_t n = json_array_size(arr);
    kapi_cel_value *v = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        if (!suite_value(a, json_array_get(arr, i), &v[i]))
            return false;
    *out = (kapi_cel_value){.t = KAPI_CEL_T_LIST, .u.list = {v, n}};
    return true;
}

static bool suite_map(kapi_arena *a, const json_t *arr, kapi_cel_value *out)
{
    size_t n = json_array_size(arr);
    kapi_cel_value *k = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*k));
    kapi_cel_value *v = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(arr, i);
        if (!suite_value(a, json_object_get(e, "key"), &k[i]) ||
            !suite_value(a, json_object_get(e, "value"), &v[i]))
            return false;
    }
    *out = (kapi_cel_value){.t = KAPI_CEL_T_MAP, .u.map = {k, v, n}};
    return true;
}

static bool text_var(void *ctx, const char *name, kapi_cel_value *out)
{
    if (strcmp(name, "text") != 0)
        return false;
    *out = *(const kapi_cel_value *)ctx;
    return true;
}

/* A google.protobuf.Duration or Timestamp in the proto3 JSON mapping ({"@type": ...,
 * "value": "1.5s"}): what duration(value) or timestamp(value) gives, for the JSON forms
 * are the strings these functions read. False for any other message. */
static bool well_known(kapi_arena *a, const json_t *obj, kapi_cel_value *out)
{
    const char *type = json_string_value(json_object_get(obj, "@type"));
    const char *slash = type ? strrchr(type, '/') : NULL;
    const char *src = !slash                                             ? NULL
                      : strcmp(slash, "/google.protobuf.Duration") == 0  ? "duration(text)"
                      : strcmp(slash, "/google.protobuf.Timestamp") == 0 ? "timestamp(text)"
                                                                         : NULL;
    const json_t *v = json_object_get(obj, "value");
    if (!src || !json_is_string(v))
        return false;
    kapi_cel_value text = {
        .t = KAPI_CEL_T_STRING,
        .u.s = {kapi_arena_strdup(a, json_string_value(v)), json_string_length(v)}};
    kapi_cel_activation act = {text_var, &text};
    kapi_cel_ast *ast = kapi_cel_parse(src, strlen(src));
    *out = kapi_cel_eval(ast->root, &act, a);
    kapi_cel_ast_free(ast);
    return out->t != KAPI_CEL_T_ERROR;
}

/* A VALUE of the suite's JSON (see its README); false for the kinds kapi's CEL does not
 * have (messages other than Duration and Timestamp, enums). */
static bool suite_value(kapi_arena *a, const json_t *j, kapi_cel_value *out)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)j, k, v)
    {
        if (strcmp(k, "null") == 0) {
            *out = (kapi_cel_value){.t = KAPI_CEL_T_NULL};
        } else if (strcmp(k, "bool") == 0) {
            *out = (kapi_cel_value){.t = KAPI_CEL_T_BOOL, .u.b = json_is_true(v)};
        } else if (strcmp(k, "int64") == 0) {
            *out = (kapi_cel_value){.t = KAPI_CEL_T_INT,
                                    .u.i = strtoll(json_string_value(v), NULL, 10)};
        } else if (strcmp(k, "uint64") == 0) {
            *out = (kapi_cel_value){.t = KAPI_CEL_T_UINT,
                                    .u.u = strtoull(json_string_value(v), NULL, 10)};
        } else if (strcmp(k, "double") == 0) {
            const char *s = json_string_value(v);
            double d = !s                           ? json_number_value(v)
                       : strcmp(s, "NaN") == 0      ? NAN
                       : strcmp(s, "Infinity") == 0 ? INFINITY
                                                    : -INFINITY;
            *out = (kapi_cel_value){.t = KAPI_CEL_T_DOUBLE, .u.d = d};
        } else if (strcmp(k, "string") == 0) {
            *out = (kapi_cel_value){.t = KAPI_CEL_T_STRING,
                                    .u.s = {json_string_value(v), json_string_length(v)}};
        } else if (strcmp(k, "bytes") == 0) {
            kapi_buf b;
            kapi_buf_init(&b);
            kapi_base64_decode(json_string_value(v), json_string_length(v), KAPI_BASE64_STD, &b);
            *out = (kapi_cel_value){.t = KAPI_CEL_T_BYTES,
                                    .u.s = {kapi_arena_strndup(a, b.ptr, b.len), b.len}};
            kapi_buf_dispose(&b);
        } else if (strcmp(k, "list") == 0) {
            return suite_list(a, v, out);
        } else if (strcmp(k, "map") == 0) {
            return suite_map(a, v, out);
        } else if (strcmp(k, "type") == 0) {
            *out = (kapi_cel_value){.t = KAPI_CEL_T_TYPE, .u.type = json_string_value(v)};
        } else if (strcmp(k, "object") == 0) {
            return well_known(a, v, out);
        } else {
            return false;
        }
        return true;
    }
    return false;
}

typedef struct bindings {
    kapi_arena *a;
    const json_t *json;
} bindings;

static bool lookup(void *ctx, const char *name, kapi_cel_value *out)
{
    bindings *b = ctx;
    const json_t *v = json_object_get(b->json, name);
    return v && suite_value(b->a, json_object_get(v, "value"), out);
}

/* ---- the tests ---- */

/* True when expr names a protobuf message type: TestAllTypes, or a google.protobuf name
 * other than the Duration and Timestamp types' (wrappers, Value, Any). */
static bool names_messages(const char *expr)
{
    if (strstr(expr, "TestAllTypes"))
        return true;
    for (const char *p = expr; (p = strstr(p, "google.protobuf.")); p++) {
        const char *name = p + strlen("google.protobuf.");
        if (strncmp(name, "Duration", 8) && strncmp(name, "Timestamp", 9))
            return true;
    }
    return false;
}

/* A type of the suite (a google.api.expr Type in JSON) as cel-go formats it into b;
 * false when kapi's CEL has no such type (messages, wrappers, abstract types). */
static bool suite_type(kapi_buf *b, const json_t *t)
{
    static const struct {
        const char *suite, *cel;
    } prims[] = {{"INT64", "int"}, {"UINT64", "uint"},   {"DOUBLE", "double"},
                 {"BOOL", "bool"}, {"STRING", "string"}, {"BYTES", "bytes"}};
    const char *p = json_string_value(json_object_get(t, "primitive"));
    const char *wk = json_string_value(json_object_get(t, "well_known"));
    const json_t *list = json_object_get(t, "list_type"), *map = json_object_get(t, "map_type");
    for (size_t i = 0; p && i < KAPI_ARRAY_LEN(prims); i++)
        if (strcmp(p, prims[i].suite) == 0) {
            kapi_buf_puts(b, prims[i].cel);
            return true;
        }
    if (json_object_get(t, "null") || json_object_get(t, "dyn")) {
        kapi_buf_puts(b, json_object_get(t, "dyn") ? "dyn" : "null");
        return true;
    }
    if (wk && (strcmp(wk, "DURATION") == 0 || strcmp(wk, "TIMESTAMP") == 0)) {
        kapi_buf_puts(b, wk[0] == 'D' ? "duration" : "timestamp");
        return true;
    }
    if (list) {
        kapi_buf_puts(b, "list(");
        bool ok = suite_type(b, json_object_get(list, "elem_type"));
        kapi_buf_putc(b, ')');
        return ok;
    }
    if (map) {
        kapi_buf_puts(b, "map(");
        bool ok = suite_type(b, json_object_get(map, "key_type"));
        kapi_buf_puts(b, ", ");
        ok = ok && suite_type(b, json_object_get(map, "value_type"));
        kapi_buf_putc(b, ')');
        return ok;
    }
    return false;
}

/* Why a test of the checker's deduced type is not run, or NULL. */
static const char *not_checked(const json_t *t)
{
    const json_t *env = json_object_get(t, "type_env");
    const char *expr = json_string_value(json_object_get(t, "expr"));
    if (json_array_size(env))
        return "declarations of the suite's own (messages, functions)";
    if (strstr(expr, "optional."))
        return "optional types (newer than Kubernetes 1.26's CEL)";
    kapi_buf b;
    kapi_buf_init(&b);
    bool ok = suite_type(&b, json_object_get(json_object_get(t, "typed_result"), "deduced_type"));
    kapi_buf_dispose(&b);
    return ok && !names_messages(expr) ? NULL : "protobuf messages";
}

/* Why test t of file is not run, or NULL. */
static const char *not_run(kapi_arena *a, const char *file, const json_t *t)
{
    const char *expr = json_string_value(json_object_get(t, "expr"));
    const char *name = json_string_value(json_object_get(t, "name"));
    const char *k;
    json_t *b;
    kapi_cel_value v;
    json_object_foreach(json_object_get(t, "bindings"), k, b)
    {
        if (!suite_value(a, json_object_get(b, "value"), &v))
            return "protobuf messages";
    }
    if (json_object_get(t, "typed_result"))
        return not_checked(t);
    if (json_object_get(t, "container") || names_messages(expr))
        return "protobuf messages";
    const json_t *want = json_object_get(t, "value");
    if (want && !suite_value(a, want, &v))
        return "protobuf messages";
    if (strchr(expr, '`'))
        return "quoted field names (newer than Kubernetes 1.26's CEL)";
    if (strstr(expr, ".format(") || strstr(expr, "quote(") || strstr(expr, "reverse("))
        return "strings functions newer than Kubernetes 1.26's library";
    const char *id = kapi_arena_printf(a, "%s/%s/%s", file,
                                       json_string_value(json_object_get(t, "section")), name);
    if (kapi_cstr_in(id, older_answers))
        return "answered otherwise by Kubernetes 1.26's cel-go";
    if (strcmp(file, "parse") == 0 && !strstr(name, "raw_"))
        for (size_t i = 0; undecoded_families[i]; i++)
            if (strstr(name, undecoded_families[i]))
                return "an escape the converted suite left undecoded";
    return NULL;
}

/* Runs a test of the checker: the type it deduces for t's expression against the
 * suite's. NULL when they agree, else why not (in arena a). */
static const char *run_check(kapi_arena *a, const json_t *t, kapi_cel_ast *ast)
{
    const kapi_cel_typ *got = kapi_cel_check(ast, NULL, 0, NULL);
    kapi_buf want, text;
    kapi_buf_init(&want);
    kapi_buf_init(&text);
    suite_type(&want, json_object_get(json_object_get(t, "typed_result"), "deduced_type"));
    if (got)
        kapi_cel_type_format(&text, got);
    const char *why = !got ? "does not check"
                      : strcmp(text.ptr, want.ptr) != 0
                          ? kapi_arena_printf(a, "checks to %s, not %s", text.ptr, want.ptr)
                          : NULL;
    kapi_buf_dispose(&want);
    kapi_buf_dispose(&text);
    kapi_cel_ast_free(ast);
    return why;
}

/* Runs test t: NULL when it passes, else why not (in arena a). */
static const char *run_test(kapi_arena *a, const json_t *t)
{
    const json_t *e = json_object_get(t, "expr");
    kapi_cel_ast *ast = kapi_cel_parse(json_string_value(e), json_string_length(e));
    if (!ast->root) {
        const char *why = kapi_arena_printf(a, "does not parse: %s", ast->issues[0].message);
        kapi_cel_ast_free(ast);
        return why;
    }
    if (json_object_get(t, "typed_result"))
        return run_check(a, t, ast);
    bindings b = {a, json_object_get(t, "bindings")};
    kapi_cel_activation act = {lookup, &b};
    kapi_cel_value got = kapi_cel_eval(ast->root, &act, a), want;
    bool ok; /* got may point into the tree (a literal's text): free it after */
    if (json_object_get(t, "eval_error"))
        ok = got.t == KAPI_CEL_T_ERROR;
    else if (!suite_value(a, json_object_get(t, "value"), &want))
        ok = false;
    else if (want.t == KAPI_CEL_T_DOUBLE && isnan(want.u.d))
        ok = got.t == KAPI_CEL_T_DOUBLE && isnan(got.u.d);
    else
        ok = got.t == want.t && kapi_cel_equal(&got, &want);
    const char *why = ok ? NULL
                         : kapi_arena_printf(a, "got a %s%s%s", kapi_cel_type_name(&got),
                                             got.t == KAPI_CEL_T_ERROR ? ": " : "",
                                             got.t == KAPI_CEL_T_ERROR ? got.u.error : "");
    kapi_cel_ast_free(ast);
    return why;
}

/* ---- the runner ---- */

typedef struct counts {
    size_t passed, failed, skipped;
} counts;

/* The skip reasons met, each with its count, in the order met. */
typedef struct reasons {
    const char *why[64];
    size_t n[64], len;
} reasons;

static void count_reason(reasons *r, const char *why, size_t n)
{
    size_t i = 0;
    while (i < r->len && strcmp(r->why[i], why) != 0)
        i++;
    if (i == r->len && r->len < KAPI_ARRAY_LEN(r->why))
        r->why[r->len++] = why;
    if (i < r->len)
        r->n[i] += n;
}

/* The reason file (its name without .json) is skipped whole, or NULL. */
static const char *whole_file(const char *file)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(whole_files); i++)
        if (strcmp(whole_files[i].file, file) == 0)
            return whole_files[i].why;
    return NULL;
}

/* Runs the tests of file (name without .json) in d into *c, printing the failures. */
static void run_file(const char *file, const json_t *d, counts *c, reasons *r, kapi_arena *a)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(d, "tests"), i, t)
    {
        const char *why = not_run(a, file, t);
        if (why) {
            c->skipped++;
            count_reason(r, why, 1);
            continue;
        }
        if (!(why = run_test(a, t))) {
            c->passed++;
            continue;
        }
        c->failed++;
        printf("FAIL %s/%s/%s: %s\n    %s\n", file,
               json_string_value(json_object_get(t, "section")),
               json_string_value(json_object_get(t, "name")),
               json_string_value(json_object_get(t, "expr")), why);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (the suite's JSON files)\n", argv[0]);
        return 2;
    }
    char *pattern = kapi_xprintf("%s/*.json", argv[1]);
    glob_t g;
    bool broken = glob(pattern, 0, NULL, &g) != 0;
    free(pattern);
    counts all = {0};
    reasons r = {0};
    kapi_arena a;
    kapi_arena_init(&a);
    for (size_t f = 0; !broken && f < g.gl_pathc; f++) {
        const char *base = strrchr(g.gl_pathv[f], '/') + 1;
        const char *file = kapi_arena_strndup(&a, base, strlen(base) - strlen(".json"));
        json_error_t jerr;
        json_t *d = json_load_file(g.gl_pathv[f], JSON_ALLOW_NUL, &jerr);
        if (!d) {
            printf("%s: cannot read: %s\n", base, jerr.text);
            broken = true;
            break;
        }
        counts c = {0};
        const char *why = whole_file(file);
        if (why) {
            c.skipped = json_array_size(json_object_get(d, "tests"));
            count_reason(&r, kapi_arena_printf(&a, "whole file: %s", why), c.skipped);
        } else {
            run_file(file, d, &c, &r, &a);
        }
        json_decref(d);
        printf("%s: %zu passed, %zu failed, %zu skipped%s%s%s\n", base, c.passed, c.failed,
               c.skipped, why ? " (" : "", why ? why : "", why ? ")" : "");
        all.passed += c.passed, all.failed += c.failed, all.skipped += c.skipped;
    }
    if (g.gl_pathc == 0)
        printf("%s: no suite files\n", argv[1]);
    printf("skipped, by reason:\n");
    for (size_t i = 0; i < r.len; i++)
        if (r.n[i])
            printf("%6zu  %s\n", r.n[i], r.why[i]);
    printf("%zu passed, %zu failed, %zu skipped\n", all.passed, all.failed, all.skipped);
    bool ok = !broken && g.gl_pathc > 0 && all.failed == 0;
    globfree(&g);
    kapi_arena_dispose(&a);
    return ok ? 0 : 1;
}
