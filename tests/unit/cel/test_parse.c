/* Unit tests for the CEL parser (src/cel): the trees cel-go v0.12 builds (operators,
 * balanced chains, literals, macros expanded) in kapi_cel_debug's text, the errors in
 * cel-go's display format, and every expression of the cel-spec conformance suite
 * (../shared/testdata/cel, or $KAPI_TESTDATA/cel) that Kubernetes 1.26's CEL can write. */
#include <glob.h>
#include <jansson.h>
#include <string.h>

#include "cel/cel.h"
#include "test.h"

/* The tree's text, or the errors' display text when src does not parse. */
static char *parsed(const char *src, size_t len)
{
    kapi_cel_ast *a = kapi_cel_parse(src, len);
    kapi_buf b;
    kapi_buf_init(&b);
    if (a->root)
        kapi_cel_debug(&b, a->root);
    else
        kapi_cel_issues_text(&b, a, src, len);
    kapi_cel_ast_free(a);
    return kapi_buf_detach(&b, NULL);
}

static void check(int line, const char *src, const char *want)
{
    char *got = parsed(src, strlen(src));
    if (strcmp(got, want) != 0)
        test_fail(__FILE__, line, "%s:\n got: %s\nwant: %s", src, got, want);
    free(got);
}

#define CHECK_PARSE(src, want) check(__LINE__, src, want)

TEST(cel_parse_operators)
{
    CHECK_PARSE("a + b * c - d", "_-_(_+_(a, _*_(b, c)), d)");
    CHECK_PARSE("a / b % c", "_%_(_/_(a, b), c)");
    CHECK_PARSE("a < b == c", "_==_(_<_(a, b), c)");
    CHECK_PARSE("x in [1, 2,]", "@in(x, [1, 2])");
    /* one chain of && is balanced, as cel-go balances it */
    CHECK_PARSE("a && b && c && d", "_&&_(_&&_(a, b), _&&_(c, d))");
    CHECK_PARSE("a || b || c", "_||_(_||_(a, b), c)");
    CHECK_PARSE("a || b && c", "_||_(a, _&&_(b, c))");
    CHECK_PARSE("a ? b : c ? d : e", "_?_:_(a, b, _?_:_(c, d, e))");
    /* a sign before a number is the literal's; pairs of ! and - cancel */
    CHECK_PARSE("-1", "-1");
    CHECK_PARSE("--1", "1");
    CHECK_PARSE("---1", "-_(1)");
    CHECK_PARSE("-x", "-_(x)");
    CHECK_PARSE("!!x", "x");
    CHECK_PARSE("!x", "!_(x)");
    CHECK_PARSE("a - -1", "_-_(a, -1)");
}

TEST(cel_parse_members)
{
    CHECK_PARSE("a.b.c", "a.b.c");
    CHECK_PARSE("a[0].b", "_[_](a, 0).b");
    CHECK_PARSE("a.f(1).g()", "a.f(1).g()");
    CHECK_PARSE(".x", ".x");
    CHECK_PARSE("a.while", "a.while");
    CHECK_PARSE("pkg.Msg{f: 1, g: 2,}", "pkg.Msg{f: 1, g: 2}");
    CHECK_PARSE("{'a': 1, 2: [3]}", "{\"a\": 1, 2: [3]}");
    CHECK_PARSE("// a comment\n f(x) // another", "f(x)");
}

TEST(cel_parse_literals)
{
    CHECK_PARSE("9223372036854775807", "9223372036854775807");
    CHECK_PARSE("-9223372036854775808", "-9223372036854775808");
    CHECK_PARSE("0x10 + -0x10 + 0xFFu + 18446744073709551615u",
                "_+_(_+_(_+_(16, -16), 255u), 18446744073709551615u)");
    CHECK_PARSE("[1.5, .5, 1e3, 2.5e-3, -0.0]", "[1.5, 0.5, 1000, 0.0025, -0]");
    CHECK_PARSE("[true, false, null]", "[true, false, null]");
    CHECK_PARSE("'a\\tb\\u00e9\\x41\\101\\`'", "\"a\\tbéAA`\"");
    CHECK_PARSE("r'\\n' + R\"\\t\"", "_+_(\"\\\\n\", \"\\\\t\")");
    CHECK_PARSE("'''x\ny''' + \"\"\"a\"b\"\"\"", "_+_(\"x\\ny\", \"a\\\"b\")");
    CHECK_PARSE("b'\\xff\\377a' + b'\\u00e9'.size()",
                "ERROR: <input>:1:16: unable to unescape string\n"
                " | b'\\xff\\377a' + b'\\u00e9'.size()\n"
                " | ...............^");
    CHECK_PARSE("b'\\xff\\377a'", "b\"\\xff\\xffa\"");
    CHECK_PARSE("'\\ud800'", "\"\xef\xbf\xbd\"");
}

TEST(cel_parse_macros)
{
    CHECK_PARSE("has(a.b)", "a.b~test-only~");
    CHECK_PARSE("x.all(y, y > 0)",
                "__comprehension__(y, x, __result__, true, @not_strictly_false(__result__), "
                "_&&_(__result__, _>_(y, 0)), __result__)");
    CHECK_PARSE("x.exists(y, y)",
                "__comprehension__(y, x, __result__, false, "
                "@not_strictly_false(!_(__result__)), _||_(__result__, y), __result__)");
    CHECK_PARSE("x.exists_one(y, y)",
                "__comprehension__(y, x, __result__, 0, true, _?_:_(y, _+_(__result__, 1), "
                "__result__), _==_(__result__, 1))");
    CHECK_PARSE("x.map(y, y * 2)", "__comprehension__(y, x, __result__, [], true, "
                                   "_+_(__result__, [_*_(y, 2)]), __result__)");
    CHECK_PARSE("x.map(y, y > 1, y)",
                "__comprehension__(y, x, __result__, [], true, _?_:_(_>_(y, 1), "
                "_+_(__result__, [y]), __result__), __result__)");
    CHECK_PARSE("x.filter(y, y < 2)",
                "__comprehension__(y, x, __result__, [], true, _?_:_(_<_(y, 2), "
                "_+_(__result__, [y]), __result__), __result__)");
    /* not the macros' shapes: plain calls */
    CHECK_PARSE("has(a, b)", "has(a, b)");
    CHECK_PARSE("all(x, y)", "all(x, y)");
    CHECK_PARSE("x.map(y)", "x.map(y)");
}

/* The ids cel-go gives: in its visitor's order, the macro's nodes after their parts. */
TEST(cel_parse_ids)
{
    const char *src = "a + f(b)";
    kapi_cel_ast *a = kapi_cel_parse(src, strlen(src));
    CHECK(a->root != NULL);
    CHECK(a->root->id == 2); /* a is 1, the + 2, f's call 3, b 4 */
    CHECK(a->root->u.call.args[0]->id == 1);
    CHECK(a->root->u.call.args[1]->id == 3);
    CHECK(a->root->u.call.args[1]->u.call.args[0]->id == 4);
    CHECK(a->next_id == 5);
    kapi_cel_ast_free(a);
    src = "{1: 2}";
    a = kapi_cel_parse(src, strlen(src));
    CHECK(a->root->id == 1 && a->root->u.map.entries[0].id == 2); /* the ':' before the key */
    CHECK(a->root->u.map.entries[0].key->id == 3);
    kapi_cel_ast_free(a);
}

TEST(cel_parse_errors)
{
    CHECK_PARSE("1 +", "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting "
                       "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
                       "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
                       " | 1 +\n"
                       " | ...^");
    CHECK_PARSE("(a", "ERROR: <input>:1:3: Syntax error: missing ')' at '<EOF>'\n | (a\n | ..^");
    CHECK_PARSE("a b c", "ERROR: <input>:1:3: Syntax error: mismatched input 'b' expecting <EOF>\n"
                         " | a b c\n | ..^");
    CHECK_PARSE("1 # 2", "ERROR: <input>:1:3: Syntax error: token recognition error at: '#'\n"
                         " | 1 # 2\n | ..^\n"
                         "ERROR: <input>:1:5: Syntax error: extraneous input '2' expecting <EOF>\n"
                         " | 1 # 2\n | ....^");
    CHECK_PARSE("while", "ERROR: <input>:1:1: reserved identifier: while\n | while\n | ^");
    CHECK_PARSE("9223372036854775808",
                "ERROR: <input>:1:1: invalid int literal\n | 9223372036854775808\n | ^");
    CHECK_PARSE("18446744073709551616u",
                "ERROR: <input>:1:1: invalid uint literal\n | 18446744073709551616u\n | ^");
    CHECK_PARSE("1e400", "ERROR: <input>:1:1: invalid double literal\n | 1e400\n | ^");
    CHECK_PARSE("x.all(1, y)",
                "ERROR: <input>:1:7: argument must be a simple name\n | x.all(1, y)\n | ......^");
    CHECK_PARSE("x.map(1, y)",
                "ERROR: <input>:1:6: argument is not an identifier\n | x.map(1, y)\n | .....^");
    CHECK_PARSE("has(a)",
                "ERROR: <input>:1:4: invalid argument to has() macro\n | has(a)\n | ...^");
    /* errors sort by position; a reserved call's arguments are not looked into */
    CHECK_PARSE("while(if) + if",
                "ERROR: <input>:1:1: reserved identifier: while\n | while(if) + if\n | ^\n"
                "ERROR: <input>:1:13: reserved identifier: if\n | while(if) + if\n"
                " | ............^");
    CHECK_PARSE("'abc", "ERROR: <input>:1:1: Syntax error: token recognition error at: ''abc'\n"
                        " | 'abc\n | ^\n"
                        "ERROR: <input>:1:5: Syntax error: mismatched input '<EOF>' expecting "
                        "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
                        "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 'abc\n | ....^");
    /* columns count code points; a wide character gets a wide dot */
    CHECK_PARSE("'日本' + @", "ERROR: <input>:1:8: Syntax error: token recognition error at: '@'\n"
                              " | '日本' + @\n | .．．....^\n"
                              "ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' "
                              "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
                              "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
                              " | '日本' + @\n | .．．.....^");
}

TEST(cel_parse_limits)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (int i = 0; i < 300; i++)
        kapi_buf_putc(&b, '(');
    kapi_buf_putc(&b, '1');
    for (int i = 0; i < 300; i++)
        kapi_buf_putc(&b, ')');
    char *got = parsed(b.ptr, b.len);
    CHECK_STR_EQ(got, "ERROR: <input>:-1:0: expression recursion limit exceeded: 250");
    free(got);
    /* chains count too: each index makes the tree deeper */
    kapi_buf_clear(&b);
    kapi_buf_putc(&b, 'x');
    for (int i = 0; i < 300; i++)
        kapi_buf_puts(&b, "[0]");
    got = parsed(b.ptr, b.len);
    CHECK_STR_EQ(got, "ERROR: <input>:-1:0: expression recursion limit exceeded: 250");
    free(got);
    kapi_buf_clear(&b);
    for (size_t i = 0; i < KAPI_CEL_MAX_SOURCE + 1; i++)
        kapi_buf_putc(&b, ' ');
    got = parsed(b.ptr, b.len);
    CHECK_STR_EQ(got, "ERROR: <input>:-1:0: expression code point size exceeds limit: size: "
                      "100001, limit 100000");
    free(got);
    kapi_buf_dispose(&b);
}

/* The files and expressions of the suite Kubernetes 1.26's cel-go cannot parse: optional
 * syntax (?. and [?) and cel.block are newer, and so are `quoted` field names. */
static bool newer_than_126(const char *file, const char *expr)
{
    return strcmp(file, "optionals.json") == 0 || strcmp(file, "block_ext.json") == 0 ||
           strchr(expr, '`') != NULL;
}

TEST(cel_parse_conformance_expressions)
{
    const char *dir = getenv("KAPI_TESTDATA");
    char *path =
        dir ? kapi_xprintf("%s/cel/json", dir) : kapi_xstrdup("../shared/testdata/cel/json");
    char *pattern = kapi_xprintf("%s/*.json", path);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc < 25)
        test_fail(__FILE__, __LINE__, "no conformance files at %s", pattern);
    free(pattern);
    size_t parsed_ok = 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        const char *file = g.gl_pathv[f], *base = strrchr(file, '/') + 1;
        json_error_t jerr;
        json_t *d = json_load_file(file, JSON_ALLOW_NUL, &jerr);
        if (!d)
            test_fail(__FILE__, __LINE__, "cannot load %s: %s", file, jerr.text);
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(d, "tests"), i, t)
        {
            const json_t *e = json_object_get(t, "expr");
            const char *src = json_string_value(e);
            if (newer_than_126(base, src))
                continue;
            char *got = parsed(src, json_string_length(e));
            if (strncmp(got, "ERROR", 5) == 0)
                test_fail(__FILE__, __LINE__, "%s %s: %s\n%s", base,
                          json_string_value(json_object_get(t, "name")), src, got);
            free(got);
            parsed_ok++;
        }
        json_decref(d);
    }
    globfree(&g);
    free(path);
    if (parsed_ok < 2000) /* the suite holds about 2,300 such expressions */
        test_fail(__FILE__, __LINE__, "only %zu expressions parsed", parsed_ok);
}
