/*
 * fuzz_cel: CEL sources (src/cel), as a CRD's x-kubernetes-validations rule brings them:
 * lexed and parsed with macros expanded, the tree written out as text, or the errors
 * shown as cel-go shows them. No input may crash, trip a sanitizer or leak; a source
 * that parses has no errors, and one that does not has at least one.
 *
 * A source that parses is type-checked with a string variable s, its cost estimated, and
 * evaluated with s its own text under a cost limit, as a CRD's rule is: evaluation ends
 * within the limit, and a checked bool expression gives a bool or an error.
 *
 * The input is also a string a rule reads (when it is UTF-8, as CEL's strings are): the
 * variable s of one fixed expression that calls every function of the url library on it,
 * whose parser (Go's net/url) walks untrusted bytes. A string isURL refuses, url refuses.
 */
#include "cel/cel.h"
#include "codec/go.h"
#include "fuzz.h"

static const char url_calls[] =
    "[isURL(s), url(s) == url(s), url(s).getScheme(), url(s).getHost(), url(s).getHostname(), "
    "url(s).getPort(), url(s).getEscapedPath(), url(s).getQuery()]";

static bool input_var(void *ctx, const char *name, kapi_cel_value *out)
{
    if (strcmp(name, "s") != 0)
        return false;
    *out = (kapi_cel_value){.t = KAPI_CEL_T_STRING, .u.s = *(const kapi_str *)ctx};
    return true;
}

static void fuzz_url(const char *data, size_t size)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_str s = {kapi_arena_strndup(&a, data, size), size};
    kapi_cel_activation act = {input_var, &s};
    kapi_cel_ast *ast = kapi_cel_parse(url_calls, sizeof(url_calls) - 1);
    kapi_cel_value v = kapi_cel_eval(ast->root, &act, &a);
    if (v.t == KAPI_CEL_T_LIST && !v.u.list.v[0].u.b) /* isURL false, yet url() took it */
        abort();
    kapi_arena_dispose(&a);
    kapi_cel_ast_free(ast);
}

/* A small limit: a fuzzed expression stays quick, and still reaches every function. */
#define FUZZ_COST_LIMIT 20000

static void fuzz_eval(kapi_cel_ast *ast, const char *src, size_t size)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_cel_var s = {"s", kapi_cel_type_of(KAPI_CEL_TY_STRING)};
    const kapi_cel_typ *t = kapi_cel_check(ast, &s, 1, NULL);
    if (t)
        (void)kapi_cel_estimate_cost(ast);
    kapi_str text = {kapi_arena_strndup(&a, src, size), size};
    kapi_cel_activation act = {input_var, &text};
    uint64_t cost = 0;
    kapi_cel_value v = kapi_cel_eval_limited(ast, &act, &a, FUZZ_COST_LIMIT, &cost);
    if (t && t->kind == KAPI_CEL_TY_BOOL && v.t != KAPI_CEL_T_BOOL && v.t != KAPI_CEL_T_ERROR)
        abort();
    kapi_arena_dispose(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    const char *src = (const char *)data;
    kapi_cel_ast *a = kapi_cel_parse(src, size);
    kapi_buf b;
    kapi_buf_init(&b);
    if ((a->root != NULL) == (a->nissues != 0))
        abort();
    if (a->root)
        kapi_cel_debug(&b, a->root);
    else
        kapi_cel_issues_text(&b, a, src, size);
    kapi_buf_dispose(&b);
    bool utf8 = kapi_go_valid_utf8(src, size);
    if (a->root && utf8)
        fuzz_eval(a, src, size);
    kapi_cel_ast_free(a);
    if (utf8)
        fuzz_url(src, size);
    return 0;
}
