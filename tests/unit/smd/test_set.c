/* smd/set: values, path elements, paths and field sets as structured-merge-diff v4.2.3
 * orders, combines, reads and writes them (tests/data/smd/README.md for the table). */
#include <stdlib.h>
#include <string.h>

#include "codec/codec_test.h"
#include "codec/json.h"
#include "smd/smd.h"
#include "test.h"

/* The value of a JSON text (integers stay integers), in a. */
static kapi_smd_value val(kapi_arena *a, const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!v)
        test_fail(__FILE__, __LINE__, "%s: %s", text, je.text);
    kapi_smd_value out = kapi_smd_value_of(a, v);
    json_decref(v);
    return out;
}

static kapi_smd_pe field(const char *name, size_t len)
{
    return (kapi_smd_pe){.kind = KAPI_SMD_PE_FIELD, .name = {name, len}};
}

static kapi_smd_pe fld(const char *name)
{
    return field(name, strlen(name));
}

static kapi_smd_pe idx(int64_t i)
{
    return (kapi_smd_pe){.kind = KAPI_SMD_PE_INDEX, .index = i};
}

static kapi_smd_pe value_pe(kapi_arena *a, const char *text)
{
    return (kapi_smd_pe){.kind = KAPI_SMD_PE_VALUE, .value = val(a, text)};
}

/* A key from a JSON object of its fields. */
static kapi_smd_pe key_pe(kapi_arena *a, const char *object)
{
    kapi_smd_value m = val(a, object);
    return (kapi_smd_pe){.kind = KAPI_SMD_PE_KEY, .keys = m.u.map.fields, .nkeys = m.u.map.n};
}

static int sign(int c)
{
    return c < 0 ? -1 : c > 0;
}

/* A set read from FieldsV1 text; the text must read. */
static kapi_smd_set *read_set(kapi_arena *a, const char *text)
{
    char *err = NULL;
    json_t *v = kapi_json_parse(text, strlen(text), &err);
    if (!v)
        test_fail(__FILE__, __LINE__, "%s: %s", text, err);
    kapi_smd_set *s = NULL;
    const char *why = NULL;
    bool ok = kapi_smd_set_from_json(a, v, &s, &why);
    json_decref(v);
    if (!ok)
        test_fail(__FILE__, __LINE__, "%s: %s", text, why);
    return s;
}

/* s as FieldsV1 bytes, in a. */
static const char *fields_of(kapi_arena *a, const kapi_smd_set *s)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_smd_set_to_json(&b, s);
    const char *out = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

static void add_path(kapi_smd_path p, void *ctx)
{
    kapi_buf *b = ctx;
    if (b->len)
        kapi_buf_putc(b, '\n');
    kapi_smd_path_format(b, p);
}

/* The paths of s in iteration order, one a line, in a. */
static const char *paths_of(kapi_arena *a, const kapi_smd_set *s)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_smd_set_iterate(s, add_path, &b);
    const char *out = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

/* Checks that kapi_json_encode of kapi_smd_set_to_jansson(s) is want, byte for byte. */
static void check_jansson(const kapi_smd_set *s, const char *want, size_t n)
{
    json_t *j = kapi_smd_set_to_jansson(s);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, j);
    json_decref(j);
    bool same = b.len == n && memcmp(b.ptr, want, n) == 0;
    if (!same)
        test_fail(__FILE__, __LINE__, "to_jansson encodes as %s, to_json wrote %s", b.ptr, want);
    kapi_buf_dispose(&b);
}

TEST(smd_value_order)
{
    /* Ascending: numbers by value, strings bytewise, false before true, lists and maps
     * item by item with a prefix first, null last. */
    static const char *const order[] = {
        "-3",
        "1",
        "1.5",
        "2",
        "\"\"",
        "\"B\"",
        "\"a\"",
        "\"a\\u0000\"",
        "\"b\"",
        "false",
        "true",
        "[]",
        "[1]",
        "[1,2]",
        "[2]",
        "[\"a\"]",
        "{}",
        "{\"a\":1}",
        "{\"a\":1,\"b\":1}",
        "{\"a\":2}",
        "{\"b\":0}",
        "null",
    };
    kapi_arena a;
    kapi_arena_init(&a);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(order); i++) {
        kapi_smd_value x = val(&a, order[i]);
        for (size_t j = 0; j < KAPI_ARRAY_LEN(order); j++) {
            kapi_smd_value y = val(&a, order[j]);
            if (sign(kapi_smd_value_cmp(&x, &y)) != sign((int)i - (int)j))
                test_fail(__FILE__, __LINE__, "%s vs %s", order[i], order[j]);
        }
    }
    /* An integer and a float compare as float64s. */
    static const char *const same[][2] = {
        {"1", "1.0"},
        {"-0.0", "0"},
        {"9007199254740993", "9007199254740992.0"},
        {"[1,{\"a\":2}]", "[1.0,{\"a\":2.0}]"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(same); i++) {
        kapi_smd_value x = val(&a, same[i][0]), y = val(&a, same[i][1]);
        CHECK_INT_EQ(kapi_smd_value_cmp(&x, &y), 0);
        CHECK_INT_EQ(kapi_smd_value_cmp(&y, &x), 0);
    }
    kapi_smd_value big = val(&a, "9007199254740993"), less = val(&a, "9007199254740992");
    CHECK(kapi_smd_value_cmp(&big, &less) > 0);
    kapi_arena_dispose(&a);
}

TEST(smd_value_of_copies)
{
    kapi_arena a;
    kapi_arena_init(&a);
    json_t *j =
        json_loads("{\"b\":\"x\\u0000y\",\"a\":[1,2.5,true,null,{}]}", JSON_ALLOW_NUL, NULL);
    kapi_smd_value v = kapi_smd_value_of(&a, j);
    json_decref(j); /* the value holds copies: ASan would see a use after free */
    CHECK_INT_EQ(v.kind, KAPI_SMD_MAP);
    CHECK_INT_EQ(v.u.map.n, 2);
    CHECK(kapi_str_eqc(v.u.map.fields[0].name, "a"));
    CHECK(kapi_str_eq(v.u.map.fields[1].value.u.s, (kapi_str){"x\0y", 3}));
    const kapi_smd_value *items = v.u.map.fields[0].value.u.list.items;
    CHECK_INT_EQ(v.u.map.fields[0].value.u.list.n, 5);
    CHECK_INT_EQ(items[0].kind, KAPI_SMD_INT);
    CHECK_INT_EQ(items[1].kind, KAPI_SMD_FLOAT);
    CHECK_INT_EQ(items[2].kind, KAPI_SMD_BOOL);
    CHECK_INT_EQ(items[3].kind, KAPI_SMD_NULL);
    CHECK_INT_EQ(items[4].kind, KAPI_SMD_MAP);
    CHECK_INT_EQ(kapi_smd_value_of(&a, NULL).kind, KAPI_SMD_NULL);
    kapi_arena_dispose(&a);
}

static void check_json(kapi_smd_value v, const char *want)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_smd_value_json(&b, &v);
    CHECK_STR_EQ(b.ptr, want);
    kapi_buf_dispose(&b);
}

static kapi_smd_value num(double f)
{
    return (kapi_smd_value){.kind = KAPI_SMD_FLOAT, .u.f = f};
}

TEST(smd_value_json)
{
    /* json-iterator 1.1.12's WriteFloat64: 'f' in [1e-6, 1e21), else 'e' with the two
     * exponent digits strconv writes (encoding/json would write 1e-7). */
    check_json(num(1e-7), "1e-07");
    check_json(num(-2.5e-7), "-2.5e-07");
    check_json(num(1e21), "1e+21");
    check_json(num(1.7976931348623157e308), "1.7976931348623157e+308");
    check_json(num(5e-324), "5e-324");
    check_json(num(1e20), "100000000000000000000");
    check_json(num(1152921504606846976.0), "1152921504606847000");
    check_json(num(1.5e-5), "0.000015");
    check_json(num(1e-6), "0.000001");
    check_json(num(1e6), "1000000");
    check_json(num(1.5), "1.5");
    check_json(num(-0.0), "-0");
    check_json(num(0), "0");
    kapi_arena a;
    kapi_arena_init(&a);
    check_json(val(&a, "-9223372036854775808"), "-9223372036854775808");
    check_json(val(&a, "\"<a&b>\\u2028\\u0000\""), "\"\\u003ca\\u0026b\\u003e\\u2028\\u0000\"");
    check_json(val(&a, "{\"b\":1,\"<\":[true,null,1.0],\"a\":{}}"),
               "{\"\\u003c\":[true,null,1],\"a\":{},\"b\":1}");
    kapi_arena_dispose(&a);
}

TEST(smd_pe_order)
{
    kapi_arena a;
    kapi_arena_init(&a);
    /* Ascending: fields (bytewise, a prefix first), keys (field by field, name then value,
     * a prefix first), values, indexes. */
    kapi_smd_pe order[] = {
        field("", 0),
        fld("B"),
        fld("a"),
        field("a\0", 2),
        fld("b"),
        key_pe(&a, "{\"a\":1}"),
        key_pe(&a, "{\"a\":1,\"b\":1}"),
        key_pe(&a, "{\"a\":\"1\"}"),
        key_pe(&a, "{\"b\":0}"),
        value_pe(&a, "1"),
        value_pe(&a, "\"a\""),
        value_pe(&a, "true"),
        value_pe(&a, "null"),
        idx(-1),
        idx(0),
        idx(10),
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(order); i++) {
        for (size_t j = 0; j < KAPI_ARRAY_LEN(order); j++) {
            if (sign(kapi_smd_pe_cmp(&order[i], &order[j])) != sign((int)i - (int)j))
                test_fail(__FILE__, __LINE__, "elements %zu and %zu", i, j);
        }
    }
    kapi_smd_pe k80 = key_pe(&a, "{\"p\":80}"), k80f = key_pe(&a, "{\"p\":80.0}");
    CHECK_INT_EQ(kapi_smd_pe_cmp(&k80, &k80f), 0);
    kapi_arena_dispose(&a);
}

static void check_path(const kapi_smd_pe *pe, size_t n, const char *want, size_t want_len)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_smd_path_format(&b, (kapi_smd_path){pe, n});
    if (b.len != want_len || memcmp(b.ptr, want, want_len) != 0)
        test_fail(__FILE__, __LINE__, "path %s, want %s", b.ptr, want);
    kapi_buf_dispose(&b);
}

/* want is a literal or an array: it may hold NUL bytes. */
#define CHECK_PATH(pe, n, want) check_path(pe, n, want, sizeof(want) - 1)

TEST(smd_path_format)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_smd_pe conflict[] = {fld("spec"), fld("containers"), key_pe(&a, "{\"name\":\"main\"}"),
                              fld("image")};
    CHECK_PATH(conflict, 4, ".spec.containers[name=\"main\"].image");
    kapi_smd_pe mixed[] = {fld("metadata"), fld("finalizers"), value_pe(&a, "\"x\""), idx(3)};
    CHECK_PATH(mixed, 4, ".metadata.finalizers[=\"x\"][3]");
    /* Values as value.ToString: floats with %v, strings with %q, null, lists, maps as
     * name=value with nothing between (Go's map order is random; here it is by name). */
    kapi_smd_pe values[] = {
        key_pe(&a, "{\"a\":1.5,\"b\":true,\"c\":null,\"d\":1000000.0,\"e\":-7}"),
        value_pe(&a, "\"q\\\"\\n\\u00e9\\u0001\""),
        value_pe(&a, "[1,\"x\",[]]"),
        value_pe(&a, "{\"b\":1,\"a\":\"x\"}"),
    };
    const char want[] =
        "[a=1.5,b=true,c=null,d=1e+06,e=-7][=\"q\\\"\\n\xc3\xa9\\x01\"][=[1,\"x\",[]]]"
        "[=a=\"x\"b=1]";
    CHECK_PATH(values, 4, want);
    /* Names go in as they are; a string that is not UTF-8 is quoted as %q quotes it. */
    kapi_smd_pe raw[] = {field("a\0b", 3), key_pe(&a, "{\"n=\":\"v\"}")};
    raw[1].keys = &(kapi_smd_field){{"n\0", 2}, {.kind = KAPI_SMD_STRING, .u.s = {"\xff", 1}}};
    CHECK_PATH(raw, 2, ".a\0b[n\0=\"\\xff\"]");
    kapi_arena_dispose(&a);
}

TEST(smd_set_insert_sorted_dedup)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_smd_set *s = kapi_smd_set_new(&a);
    char name[] = "spec";
    kapi_smd_pe paths[][2] = {
        {fld("b")},
        {fld("a")},
        {field(name, 4), fld("replicas")},
        {idx(3)},
        {value_pe(&a, "\"x\"")},
        {fld("a")},
        {field(name, 4)},
        {field(name, 4), fld("paused")},
        {idx(1)},
        {key_pe(&a, "{\"name\":\"main\"}")},
    };
    const size_t lens[] = {1, 1, 2, 1, 1, 1, 1, 2, 1, 1};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(paths); i++)
        kapi_smd_set_insert(&a, s, (kapi_smd_path){paths[i], lens[i]});
    kapi_smd_set_insert(&a, s, (kapi_smd_path){NULL, 0}); /* the whole object: nothing */
    CHECK_INT_EQ(s->nmembers, 7);
    CHECK_STR_EQ(
        paths_of(&a, s),
        ".a\n.b\n.spec\n[name=\"main\"]\n[=\"x\"]\n[1]\n[3]\n.spec.paused\n.spec.replicas");
    /* The step is copied; the bytes of its name are not. */
    CHECK(s->children[0].pe.name.ptr == name);
    /* Capacity doubles. */
    kapi_smd_set *many = kapi_smd_set_new(&a);
    for (int64_t i = 99; i >= 0; i--) {
        kapi_smd_pe pe = idx(i);
        kapi_smd_set_insert(&a, many, (kapi_smd_path){&pe, 1});
    }
    CHECK_INT_EQ(many->nmembers, 100);
    CHECK_INT_EQ(many->members_cap, 128);
    for (size_t i = 0; i < many->nmembers; i++)
        CHECK_INT_EQ(many->members[i].index, (int64_t)i);
    kapi_arena_dispose(&a);
}

TEST(smd_set_has_child_empty)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_smd_set *s = read_set(&a, "{\"f:a\":{\".\":{},\"f:b\":{}},\"f:c\":{\"f:d\":{}}}");
    kapi_smd_pe a_b[] = {fld("a"), fld("b"), fld("z")}, c_d[] = {fld("c"), fld("d")};
    kapi_smd_pe x = fld("x");
    CHECK(kapi_smd_set_has(s, (kapi_smd_path){a_b, 1}));
    CHECK(kapi_smd_set_has(s, (kapi_smd_path){a_b, 2}));
    CHECK(!kapi_smd_set_has(s, (kapi_smd_path){a_b, 3}));
    CHECK(!kapi_smd_set_has(s, (kapi_smd_path){c_d, 1})); /* a parent, not a member */
    CHECK(kapi_smd_set_has(s, (kapi_smd_path){c_d, 2}));
    CHECK(!kapi_smd_set_has(s, (kapi_smd_path){&x, 1}));
    CHECK(!kapi_smd_set_has(s, (kapi_smd_path){a_b, 0}));
    CHECK_STR_EQ(fields_of(&a, kapi_smd_set_child(s, &c_d[0])), "{\"f:d\":{}}");
    const kapi_smd_set *none = kapi_smd_set_child(s, &x);
    CHECK(kapi_smd_set_empty(none) && none->nmembers == 0 && none->nchildren == 0);
    CHECK(kapi_smd_set_empty(kapi_smd_set_new(&a)));
    CHECK(!kapi_smd_set_empty(s));
    CHECK(kapi_smd_set_equal(s,
                             read_set(&a, "{\"f:c\":{\"f:d\":{}},\"f:a\":{\"f:b\":{},\".\":{}}}")));
    CHECK(!kapi_smd_set_equal(s, read_set(&a, "{\"f:a\":{\"f:b\":{}},\"f:c\":{\"f:d\":{}}}")));
    CHECK(!kapi_smd_set_equal(s, read_set(&a, "{\"f:a\":{\".\":{},\"f:b\":{}},\"f:c\":{}}")));
    kapi_arena_dispose(&a);
}

/* A set with member b and the empty child a, which no reader or insert makes but Go's
 * operations still treat by their own rules. */
static kapi_smd_set *with_empty_child(kapi_arena *a, const char *child)
{
    kapi_smd_set *s = kapi_smd_set_new(a);
    kapi_smd_pe b = fld("b");
    kapi_smd_set_insert(a, s, (kapi_smd_path){&b, 1});
    s->children = kapi_arena_alloc(a, sizeof(*s->children));
    s->children[0] = (kapi_smd_child){fld(child), kapi_smd_set_new(a)};
    s->nchildren = s->children_cap = 1;
    return s;
}

TEST(smd_set_empty_children)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_smd_set *x = with_empty_child(&a, "a"), *y = with_empty_child(&a, "c");
    kapi_smd_set *plain = read_set(&a, "{\"f:b\":{}}"), *member_a = read_set(&a, "{\"f:a\":{}}");
    CHECK_STR_EQ(fields_of(&a, x), "{\"f:a\":{},\"f:b\":{}}");
    CHECK(!kapi_smd_set_equal(x, plain)); /* Equals compares the trees */
    /* Union keeps both sides' empty children; Intersection drops an empty result. */
    CHECK_INT_EQ(kapi_smd_set_union(&a, x, y)->nchildren, 2);
    CHECK_INT_EQ(kapi_smd_set_union(&a, x, x)->nchildren, 1);
    CHECK_INT_EQ(kapi_smd_set_intersection(&a, x, x)->nchildren, 0);
    /* Difference keeps x's child that y has no child for, even empty, even when y has it
     * as a member; it drops a difference that comes out empty. RecursiveDifference drops
     * the child below y's member. */
    CHECK_INT_EQ(kapi_smd_set_difference(&a, x, y)->nchildren, 1);
    CHECK_INT_EQ(kapi_smd_set_difference(&a, x, member_a)->nchildren, 1);
    CHECK_INT_EQ(kapi_smd_set_difference(&a, x, x)->nchildren, 0);
    CHECK_INT_EQ(kapi_smd_set_recursive_difference(&a, x, member_a)->nchildren, 0);
    CHECK_INT_EQ(kapi_smd_set_recursive_difference(&a, x, y)->nchildren, 1);
    /* A member whose child set is empty is written as a leaf, without ".". */
    kapi_smd_pe pa = fld("a");
    kapi_smd_set_insert(&a, x, (kapi_smd_path){&pa, 1});
    CHECK_STR_EQ(fields_of(&a, x), "{\"f:a\":{},\"f:b\":{}}");
    CHECK(kapi_smd_set_empty(with_empty_child(&a, "a")->children[0].set));
    kapi_arena_dispose(&a);
}

TEST(smd_set_iterate_order)
{
    kapi_arena a;
    kapi_arena_init(&a);
    /* A node's members first, then each child's paths in order (preorder). */
    kapi_smd_set *s =
        read_set(&a, "{\"f:b\":{\".\":{},\"f:c\":{\"f:d\":{}}},\"f:a\":{\"f:z\":{}},\"i:0\":{}}");
    CHECK_STR_EQ(paths_of(&a, s), ".b\n[0]\n.a.z\n.b.c.d");
    kapi_arena_dispose(&a);
}

/* One "in" row of the table: out, paths, the jansson form and the fixpoint. */
static void check_read_row(kapi_arena *a, const json_t *row)
{
    const char *in = json_string_value(json_object_get(row, "in"));
    const char *out = json_string_value(json_object_get(row, "out"));
    kapi_smd_set *s = read_set(a, in);
    const char *got = fields_of(a, s);
    if (strcmp(got, out) != 0)
        test_fail(__FILE__, __LINE__, "%s\n  wrote %s\n  want  %s", in, got, out);
    check_jansson(s, out, strlen(out));
    kapi_smd_set *again = read_set(a, out);
    CHECK(kapi_smd_set_equal(s, again));
    CHECK_STR_EQ(fields_of(a, again), out);
}

/* The table's paths, one a line. */
static const char *want_paths(kapi_arena *a, const json_t *row)
{
    kapi_buf b;
    kapi_buf_init(&b);
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(row, "paths"), i, p)
    {
        if (i)
            kapi_buf_putc(&b, '\n');
        kapi_buf_put(&b, json_string_value(p), json_string_length(p));
    }
    const char *out = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

static void has_path(kapi_smd_path p, void *ctx)
{
    if (!kapi_smd_set_has(ctx, p))
        test_fail(__FILE__, __LINE__, "a path iterated is not in the set");
}

static void check_error_row(kapi_arena *a, const json_t *row)
{
    const char *in = json_string_value(json_object_get(row, "in"));
    const json_t *want = json_object_get(row, "error");
    json_t *v = kapi_json_parse(in, strlen(in), NULL);
    kapi_smd_set *s = NULL;
    const char *why = NULL;
    CHECK(v != NULL);
    if (kapi_smd_set_from_json(a, v, &s, &why))
        test_fail(__FILE__, __LINE__, "%s reads", in);
    CHECK(s == NULL && why != NULL);
    if (json_is_string(want))
        CHECK_STR_EQ(why, json_string_value(want));
    CHECK(!kapi_smd_set_from_json(a, v, &s, NULL)); /* why may be NULL */
    json_decref(v);
}

typedef kapi_smd_set *(*set_op)(kapi_arena *, const kapi_smd_set *, const kapi_smd_set *);

static const struct {
    const char *name;
    set_op fn;
} ops[] = {
    {"union", kapi_smd_set_union},
    {"intersection", kapi_smd_set_intersection},
    {"difference", kapi_smd_set_difference},
    {"recursive_difference", kapi_smd_set_recursive_difference},
};

static const kapi_smd_set *op_row(kapi_arena *a, const json_t *row)
{
    const char *name = json_string_value(json_object_get(row, "op"));
    const char *tx = json_string_value(json_object_get(row, "x"));
    const char *ty = json_string_value(json_object_get(row, "y"));
    const char *out = json_string_value(json_object_get(row, "out"));
    kapi_smd_set *x = read_set(a, tx), *y = read_set(a, ty);
    const char *before_x = fields_of(a, x), *before_y = fields_of(a, y);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ops); i++) {
        if (strcmp(ops[i].name, name) != 0)
            continue;
        kapi_smd_set *s = ops[i].fn(a, x, y);
        const char *got = fields_of(a, s);
        if (strcmp(got, out) != 0)
            test_fail(__FILE__, __LINE__, "%s %s %s\n  wrote %s\n  want  %s", tx, name, ty, got,
                      out);
        check_jansson(s, out, strlen(out));
        CHECK_STR_EQ(fields_of(a, x), before_x);
        CHECK_STR_EQ(fields_of(a, y), before_y);
        return s;
    }
    test_fail(__FILE__, __LINE__, "unknown op %s", name);
}

TEST(smd_fieldsv1_table)
{
    json_t *rows = codec_test_cases("tests/data/smd/fieldsv1.jsonl");
    size_t i, nread = 0, nerror = 0, nop = 0;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        kapi_arena a;
        kapi_arena_init(&a);
        const kapi_smd_set *s = NULL;
        if (json_object_get(row, "error")) {
            check_error_row(&a, row);
            nerror++;
        } else if (json_object_get(row, "op")) {
            s = op_row(&a, row);
            nop++;
        } else {
            check_read_row(&a, row);
            s = read_set(&a, json_string_value(json_object_get(row, "in")));
            nread++;
        }
        if (s) {
            CHECK_STR_EQ(paths_of(&a, s), want_paths(&a, row));
            kapi_smd_set_iterate(s, has_path, (void *)s);
        }
        kapi_arena_dispose(&a);
    }
    CHECK(nread >= 20 && nerror >= 20 && nop >= 30);
    json_decref(rows);
}

TEST(smd_fieldsv1_names_jansson_cannot_read)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_smd_set *s = kapi_smd_set_new(&a);
    /* A NUL byte in a name, bytes that are not UTF-8 (written as U+FFFD, as encoding/json
     * writes a Go string; they sort after every ASCII byte), and both in a key field's name
     * and value. */
    kapi_smd_pe key = key_pe(&a, "{\"n\":\"v\"}");
    key.keys = &(kapi_smd_field){{"n\0<", 3}, {.kind = KAPI_SMD_STRING, .u.s = {"\xfe", 1}}};
    kapi_smd_pe paths[][2] = {{field("a\0b", 3)}, {field("\xff<", 2)}, {fld("spec"), key}};
    const size_t lens[] = {1, 1, 2};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(paths); i++)
        kapi_smd_set_insert(&a, s, (kapi_smd_path){paths[i], lens[i]});
    const char want[] = "{\"f:a\\u0000b\":{},"
                        "\"f:spec\":{\"k:{\\\"n\\\\u0000\\u003c\\\":\\\"\\\\ufffd\\\"}\":{}},"
                        "\"f:\\ufffd\\u003c\":{}}";
    CHECK_STR_EQ(fields_of(&a, s), want);
    check_jansson(s, want, sizeof(want) - 1);
    kapi_arena_dispose(&a);
}

TEST(smd_fieldsv1_not_an_object)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_smd_set *s = NULL;
    const char *why = NULL;
    CHECK(kapi_smd_set_from_json(&a, NULL, &s, &why) && kapi_smd_set_empty(s));
    json_t *v = json_null();
    CHECK(kapi_smd_set_from_json(&a, v, &s, &why) && kapi_smd_set_empty(s));
    v = json_array();
    CHECK(!kapi_smd_set_from_json(&a, v, &s, &why));
    CHECK_STR_EQ(why, "FieldsV1 is not a JSON object");
    json_decref(v);
    kapi_arena_dispose(&a);
}

/* Checks every managedFields[].fieldsV1 in v; returns how many. */
static size_t check_managed_fields(const json_t *v)
{
    size_t n = 0, i;
    const char *key;
    const json_t *m, *e;
    json_array_foreach(v, i, m) n += check_managed_fields(m);
    json_object_foreach((json_t *)v, key, m)
    {
        if (strcmp(key, "managedFields") != 0) {
            n += check_managed_fields(m);
            continue;
        }
        json_array_foreach(m, i, e)
        {
            const json_t *fields = json_object_get(e, "fieldsV1");
            if (!json_is_object(fields))
                continue;
            kapi_arena a;
            kapi_arena_init(&a);
            kapi_buf want;
            kapi_buf_init(&want);
            kapi_json_encode(&want, fields);
            kapi_smd_set *s = read_set(&a, want.ptr);
            CHECK_STR_EQ(fields_of(&a, s), want.ptr);
            check_jansson(s, want.ptr, want.len);
            kapi_buf_dispose(&want);
            kapi_arena_dispose(&a);
            n++;
        }
    }
    return n;
}

/* The FieldsV1 kube-apiserver 1.26 answered in the golden corpus, written again byte for
 * byte. */
TEST(smd_fieldsv1_golden)
{
    json_t *rows = codec_test_golden("responses.jsonl");
    size_t i, seen = 0;
    const json_t *row;
    if (!rows)
        test_fail(__FILE__, __LINE__, "golden corpus not found");
    json_array_foreach(rows, i, row) seen += check_managed_fields(json_object_get(row, "body"));
    CHECK(seen >= 300);
    json_decref(rows);
}
