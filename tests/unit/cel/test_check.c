/* Unit tests for the CEL type checker (src/cel/check.c): the types cel-go v0.12 deduces
 * in Kubernetes 1.26's environment, and its errors in its display format, for the kinds
 * of rule a CRD carries (self of an object type, lists, maps, the libraries). */
#include <string.h>

#include "cel/cel.h"
#include "test.h"

/* The environment of the tests: self and oldSelf of an object type with a string a, an
 * int n, a list of strings l, a map of ints m and an object o with a string s. */
typedef struct env {
    kapi_arena a;
    kapi_cel_var vars[3];
} env;

static void env_init(env *e)
{
    kapi_arena_init(&e->a);
    kapi_cel_field *inner = kapi_arena_alloc(&e->a, sizeof(*inner));
    inner[0] = (kapi_cel_field){"s", kapi_cel_type_of(KAPI_CEL_TY_STRING)};
    kapi_cel_typ *o = kapi_arena_alloc(&e->a, sizeof(*o));
    *o = (kapi_cel_typ){
        .kind = KAPI_CEL_TY_OBJECT, .name = "selfType.o", .fields = inner, .nfields = 1};
    kapi_cel_field *f = kapi_arena_alloc(&e->a, 5 * sizeof(*f));
    f[0] = (kapi_cel_field){"a", kapi_cel_type_of(KAPI_CEL_TY_STRING)};
    f[1] = (kapi_cel_field){"n", kapi_cel_type_of(KAPI_CEL_TY_INT)};
    f[2] = (kapi_cel_field){"l", kapi_cel_type_list(&e->a, kapi_cel_type_of(KAPI_CEL_TY_STRING))};
    f[3] = (kapi_cel_field){"m", kapi_cel_type_map(&e->a, kapi_cel_type_of(KAPI_CEL_TY_STRING),
                                                   kapi_cel_type_of(KAPI_CEL_TY_INT))};
    f[4] = (kapi_cel_field){"o", o};
    kapi_cel_typ *self = kapi_arena_alloc(&e->a, sizeof(*self));
    *self =
        (kapi_cel_typ){.kind = KAPI_CEL_TY_OBJECT, .name = "selfType", .fields = f, .nfields = 5};
    e->vars[0] = (kapi_cel_var){"self", self};
    e->vars[1] = (kapi_cel_var){"oldSelf", self};
    e->vars[2] = (kapi_cel_var){"d", kapi_cel_type_of(KAPI_CEL_TY_DYN)};
}

/* The type src checks to, or its errors' display text. */
static char *checked(const char *src, bool *used)
{
    env e;
    env_init(&e);
    kapi_cel_ast *a = kapi_cel_parse(src, strlen(src));
    const kapi_cel_typ *t = kapi_cel_check(a, e.vars, 3, used);
    kapi_buf b;
    kapi_buf_init(&b);
    if (t)
        kapi_cel_type_format(&b, t);
    else
        kapi_cel_issues_text(&b, a, src, strlen(src));
    kapi_cel_ast_free(a);
    kapi_arena_dispose(&e.a);
    return kapi_buf_detach(&b, NULL);
}

static void expect(int line, const char *src, const char *want)
{
    char *got = checked(src, NULL);
    if (strcmp(got, want) != 0)
        test_fail(__FILE__, line, "%s:\n got: %s\nwant: %s", src, got, want);
    free(got);
}

#define CHECK_TYPE(src, want) expect(__LINE__, src, want)

TEST(cel_check_types)
{
    CHECK_TYPE("1 + 2", "int");
    CHECK_TYPE("self.a", "string");
    CHECK_TYPE("self.a.size() > 0 && self.n < 10", "bool");
    CHECK_TYPE("self.l", "list(string)");
    CHECK_TYPE("self.l[0]", "string");
    CHECK_TYPE("self.m['x']", "int");
    CHECK_TYPE("self.m.x", "int");
    CHECK_TYPE("self.o.s", "string");
    CHECK_TYPE("has(self.o)", "bool");
    CHECK_TYPE("self.l.all(x, x.startsWith('a'))", "bool");
    CHECK_TYPE("self.l.map(x, x.size())", "list(int)");
    CHECK_TYPE("self.m.filter(k, self.m[k] > 1)", "list(string)");
    CHECK_TYPE("self.l.exists_one(x, x == 'a')", "bool");
    CHECK_TYPE("[]", "list(dyn)");
    CHECK_TYPE("{}", "map(dyn, dyn)");
    CHECK_TYPE("[1, 2][0]", "int");
    CHECK_TYPE("{'a': [1]}", "map(string, list(int))");
    CHECK_TYPE("self.l + []", "list(string)");
    CHECK_TYPE("d.x.y", "dyn");
    CHECK_TYPE("d + 1", "int");
    CHECK_TYPE("d == 1", "bool");
    CHECK_TYPE("true ? self.a : 'b'", "string");
    CHECK_TYPE("type(1)", "type(int)");
    CHECK_TYPE("int", "type(int)");
    CHECK_TYPE("dyn(1)", "dyn");
    CHECK_TYPE("self == oldSelf", "bool");
    CHECK_TYPE("null", "null");
    CHECK_TYPE("duration('1s') + duration('2s')", "duration");
    CHECK_TYPE("timestamp('2020-01-01T00:00:00Z').getFullYear()", "int");
    /* the Kubernetes libraries */
    CHECK_TYPE("self.a.split(',').join('-')", "string");
    CHECK_TYPE("self.l.indexOf('a')", "int");
    CHECK_TYPE("self.a.indexOf('a')", "int");
    CHECK_TYPE("[1, 2].sum()", "int");
    CHECK_TYPE("[1.0].max()", "double");
    CHECK_TYPE("self.a.findAll('[a-z]+', 2)", "list(string)");
    CHECK_TYPE("url(self.a).getQuery()", "map(string, list(string))");
    CHECK_TYPE("isURL(self.a)", "bool");
}

TEST(cel_check_errors)
{
    CHECK_TYPE("self.nope == 'x'", "ERROR: <input>:1:5: undefined field 'nope'\n"
                                   " | self.nope == 'x'\n"
                                   " | ....^");
    CHECK_TYPE("self.a + 1", "ERROR: <input>:1:8: found no matching overload for '_+_' "
                             "applied to '(string, int)'\n"
                             " | self.a + 1\n"
                             " | .......^");
    CHECK_TYPE("self.n.size()", "ERROR: <input>:1:12: found no matching overload for 'size' "
                                "applied to 'int.()'\n"
                                " | self.n.size()\n"
                                " | ...........^");
    CHECK_TYPE("nope", "ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n"
                       " | nope\n"
                       " | ^");
    CHECK_TYPE("self.a.nope()",
               "ERROR: <input>:1:12: undeclared reference to 'nope' (in container '')\n"
               " | self.a.nope()\n"
               " | ...........^");
    CHECK_TYPE("[1, 'a']", "ERROR: <input>:1:5: expected type 'int' but found 'string'\n"
                           " | [1, 'a']\n"
                           " | ....^");
    CHECK_TYPE("self.n.x", "ERROR: <input>:1:7: type 'int' does not support field selection\n"
                           " | self.n.x\n"
                           " | ......^");
    CHECK_TYPE("self.n.all(x, x)",
               "ERROR: <input>:1:5: expression of type 'int' cannot be range of a comprehension "
               "(must be list, map, or dynamic)\n"
               " | self.n.all(x, x)\n"
               " | ....^");
    /* cross-type numeric comparisons are off in Kubernetes 1.26's environment */
    CHECK_TYPE("1 < 1.5", "ERROR: <input>:1:3: found no matching overload for '_<_' applied to "
                          "'(int, double)'\n"
                          " | 1 < 1.5\n"
                          " | ..^");
    CHECK_TYPE("1 == 1u", "ERROR: <input>:1:3: found no matching overload for '_==_' applied to "
                          "'(int, uint)'\n"
                          " | 1 == 1u\n"
                          " | ..^");
    CHECK_TYPE("Msg{a: 1}", "ERROR: <input>:1:4: undeclared reference to 'Msg' (in container '')\n"
                            " | Msg{a: 1}\n"
                            " | ...^");
}

TEST(cel_check_used_variables)
{
    bool used[3] = {false, false, false};
    free(checked("self.a == oldSelf.a", used));
    CHECK(used[0] && used[1] && !used[2]);
    bool only[3] = {false, false, false};
    /* a comprehension's variable named like a declared one hides it */
    free(checked("self.l.all(oldSelf, oldSelf != '')", only));
    CHECK(only[0] && !only[1]);
}
