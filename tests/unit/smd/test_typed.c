/* Unit tests for smd.h's types and typed walks: an object's field set, compare, merge,
 * removal, the apply body's check and reconcile, on the schema of
 * tests/data/smd/manager.json (list map, set, atomic list, granular and atomic maps,
 * unknown fields kept). Expected sets are what kube-apiserver 1.26 recorded for the same
 * objects. */
#include "codec/json.h"
#include "smd/smd.h"
#include "test.h"

typedef struct fixture {
    json_t *doc;
    kapi_schema_root *root;
    kapi_smd_types *ts;
    const kapi_smd_type *t;
    kapi_arena a;
} fixture;

static void setup(fixture *f)
{
    json_error_t je;
    f->doc = json_load_file("tests/data/smd/manager.json", 0, &je);
    CHECK(f->doc != NULL);
    CHECK(kapi_schema_compile(json_object_get(f->doc, "schema"), &f->root) == NULL);
    f->ts = kapi_smd_types_new();
    f->t = kapi_smd_type_of(f->ts, kapi_schema_root_node(f->root));
    kapi_arena_init(&f->a);
}

static void teardown(fixture *f)
{
    kapi_arena_dispose(&f->a);
    kapi_smd_types_free(f->ts);
    kapi_schema_root_free(f->root);
    json_decref(f->doc);
}

static json_t *parse(const char *s)
{
    json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
    CHECK(v != NULL);
    return v;
}

static void check_set(const kapi_smd_set *s, const char *want)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_smd_set_to_json(&b, s);
    CHECK_STR_EQ(b.ptr, want);
    kapi_buf_dispose(&b);
}

static void check_json(const json_t *v, const char *want)
{
    json_t *w = parse(want);
    if (!json_equal((json_t *)v, w)) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_json_encode(&b, v);
        CHECK_STR_EQ(b.ptr, want);
        kapi_buf_dispose(&b);
    }
    json_decref(w);
}

TEST(smd_to_set_as_kube_apiserver)
{
    fixture f;
    setup(&f);
    json_t *v = parse("{\"spec\":{\"color\":\"g\",\"ports\":[{\"name\":\"http\",\"port\":80}],"
                      "\"tags\":[\"a\",\"b\"],\"args\":[\"x\"],\"labels\":{\"k\":\"v\"},"
                      "\"selector\":{\"a\":\"b\"},\"extra\":{\"x\":{\"y\":1}},\"size\":null}}");
    check_set(kapi_smd_to_set(&f.a, f.t, v),
              "{\"f:spec\":{\"f:args\":{},\"f:color\":{},\"f:extra\":{\"f:x\":{\".\":{},"
              "\"f:y\":{}}},\"f:labels\":{\"f:k\":{}},\"f:ports\":{\"k:{\\\"name\\\":\\\"http\\\"}"
              "\":{\".\":{},\"f:name\":{},\"f:port\":{}}},\"f:selector\":{},\"f:size\":{},"
              "\"f:tags\":{\"v:\\\"a\\\"\":{},\"v:\\\"b\\\"\":{}}}}");
    json_decref(v);
    teardown(&f);
}

TEST(smd_compare_added_modified_removed)
{
    fixture f;
    setup(&f);
    json_t *l = parse("{\"spec\":{\"color\":\"g\",\"tags\":[\"a\"],\"ports\":[{\"name\":\"h\","
                      "\"port\":80}],\"selector\":{\"a\":\"b\"}}}");
    json_t *r =
        parse("{\"spec\":{\"color\":\"r\",\"tags\":[\"a\",\"b\"],\"selector\":{\"a\":\"c\"},"
              "\"labels\":{\"k\":\"v\"}},\"status\":{\"ready\":true}}");
    kapi_smd_comparison c;
    CHECK(kapi_smd_compare(&f.a, f.t, l, r, &c) == NULL);
    check_set(c.added,
              "{\"f:spec\":{\"f:labels\":{\".\":{},\"f:k\":{}},\"f:tags\":{\"v:\\\"b\\\"\":"
              "{}}},\"f:status\":{\".\":{},\"f:ready\":{}}}");
    check_set(c.modified, "{\"f:spec\":{\"f:color\":{},\"f:selector\":{}}}");
    check_set(c.removed,
              "{\"f:spec\":{\"f:ports\":{\".\":{},\"k:{\\\"name\\\":\\\"h\\\"}\":{\".\":{},"
              "\"f:name\":{},\"f:port\":{}}}}}");
    json_decref(l);
    json_decref(r);
    teardown(&f);
}

TEST(smd_merge_keeps_smd_item_order)
{
    fixture f;
    setup(&f);
    json_t *l =
        parse("{\"spec\":{\"ports\":[{\"name\":\"a\",\"port\":1},{\"name\":\"b\",\"port\":2}],"
              "\"args\":[\"x\",\"y\"],\"tags\":[\"p\",\"q\"],\"selector\":{\"a\":\"1\"}}}");
    json_t *r =
        parse("{\"spec\":{\"ports\":[{\"name\":\"c\",\"port\":3},{\"name\":\"a\",\"port\":9}],"
              "\"args\":[\"z\"],\"tags\":[\"r\",\"p\"],\"selector\":{\"b\":\"2\"}}}");
    json_t *out = NULL;
    CHECK(kapi_smd_merge(&f.a, f.t, l, r, &out) == NULL);
    /* list map and set items merged in SMD's order, atomic list and map replaced */
    check_json(out, "{\"spec\":{\"ports\":[{\"name\":\"c\",\"port\":3},{\"name\":\"a\",\"port\":9},"
                    "{\"name\":\"b\",\"port\":2}],\"args\":[\"z\"],\"tags\":[\"r\",\"p\",\"q\"],"
                    "\"selector\":{\"b\":\"2\"}}}");
    json_decref(out);
    json_decref(l);
    json_decref(r);
    teardown(&f);
}

TEST(smd_remove_items_and_fields)
{
    fixture f;
    setup(&f);
    json_t *v = parse("{\"spec\":{\"color\":\"g\",\"ports\":[{\"name\":\"a\",\"port\":1},"
                      "{\"name\":\"b\",\"port\":2}],\"tags\":[\"p\",\"q\"]}}");
    kapi_smd_set *s = NULL;
    const char *why = NULL;
    json_t *fields =
        parse("{\"f:spec\":{\"f:color\":{},\"f:ports\":{\"k:{\\\"name\\\":\\\"b\\\"}\":"
              "{}},\"f:tags\":{\"v:\\\"p\\\"\":{}}}}");
    CHECK(kapi_smd_set_from_json(&f.a, fields, &s, &why));
    json_t *out = kapi_smd_remove(&f.a, f.t, v, s);
    check_json(out, "{\"spec\":{\"ports\":[{\"name\":\"a\",\"port\":1}],\"tags\":[\"q\"]}}");
    json_decref(out);
    json_decref(fields);
    json_decref(v);
    teardown(&f);
}

TEST(smd_validate_apply_bodies)
{
    static const struct {
        const char *body, *errors;
    } cases[] = {
        {"{\"spec\":{\"color\":\"g\"}}", NULL},
        {"{\"spec\":{\"bogus\":1}}", ".spec.bogus: field not declared in schema"},
        {"{\"spec\":{\"extra\":{\"anything\":[1]}}}", NULL},
        {"{\"spec\":{\"color\":1}}",
         ".spec.color: expected string, got &value.valueUnstructured{Value:1}"},
        {"{\"spec\":{\"replicas\":\"3\"}}",
         ".spec.replicas: expected numeric (int or float), got string"},
        {"{\"status\":{\"ready\":\"yes\"}}", ".status.ready: expected boolean, got &{yes}"},
        {"{\"spec\":{\"ports\":[{\"port\":1}]}}",
         ".spec.ports: element 0: associative list with keys has an element that omits key field "
         "\"name\" (and doesn't have default value)"},
        {"{\"spec\":{\"ports\":[{\"name\":\"a\"},{\"name\":\"a\"}]}}",
         ".spec.ports: duplicate entries for key [name=\"a\"]"},
        {"{\"spec\":{\"tags\":[{}]}}",
         ".spec.tags: element 0: associative list without keys has an element that's a map type"},
        {"{\"spec\":{\"color\":1,\"size\":2}}",
         "errors:\n  .spec.color: expected string, got &value.valueUnstructured{Value:1}\n  "
         ".spec.size: expected string, got &value.valueUnstructured{Value:2}"},
    };
    fixture f;
    setup(&f);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *v = parse(cases[i].body);
        const char *got = kapi_smd_validate(&f.a, f.t, v);
        if (cases[i].errors)
            CHECK_STR_EQ(got, cases[i].errors);
        else
            CHECK(got == NULL);
        json_decref(v);
    }
    teardown(&f);
}

TEST(smd_reconcile_collapses_atomic)
{
    fixture f;
    setup(&f);
    kapi_smd_set *s = NULL;
    const char *why = NULL;
    /* owned items of what the schema now says is an atomic list and an atomic map */
    json_t *fields = parse("{\"f:spec\":{\"f:args\":{\"i:0\":{}},\"f:selector\":{\"f:a\":{}},"
                           "\"f:color\":{}}}");
    CHECK(kapi_smd_set_from_json(&f.a, fields, &s, &why));
    check_set(kapi_smd_reconcile(&f.a, f.t, s),
              "{\"f:spec\":{\"f:args\":{},\"f:color\":{},\"f:selector\":{}}}");
    json_t *fine = parse("{\"f:spec\":{\"f:tags\":{\"v:\\\"a\\\"\":{}}}}");
    kapi_smd_set *t = NULL;
    CHECK(kapi_smd_set_from_json(&f.a, fine, &t, &why));
    CHECK(kapi_smd_reconcile(&f.a, f.t, t) == t);
    json_decref(fine);
    json_decref(fields);
    teardown(&f);
}

/* The set Updater.Update gives a manager new to the object, by SMD's rule:
 * ((empty ∪ modified) ∪ added) \ removed, then without the ignored fields, from a
 * comparison that had them taken out already. */
static kapi_smd_set *new_manager_set(kapi_arena *a, const kapi_smd_type *t, const json_t *l,
                                     const json_t *r, const kapi_smd_set *ignored)
{
    kapi_smd_comparison c;
    if (kapi_smd_compare(a, t, l, r, &c))
        return NULL;
    if (ignored && !kapi_smd_set_empty(ignored)) {
        c.added = kapi_smd_set_recursive_difference(a, c.added, ignored);
        c.modified = kapi_smd_set_recursive_difference(a, c.modified, ignored);
        c.removed = kapi_smd_set_recursive_difference(a, c.removed, ignored);
    }
    kapi_smd_set *s = kapi_smd_set_union(a, kapi_smd_set_new(a), c.modified);
    s = kapi_smd_set_difference(a, kapi_smd_set_union(a, s, c.added), c.removed);
    return ignored ? kapi_smd_set_recursive_difference(a, s, ignored) : s;
}

TEST(smd_update_new_manager_as_smd_rule)
{
    /* list maps, sets, atomic lists and maps, empty maps and lists, nulls, unknown fields
     * (spec.extra), a value whose kind changes, and bodies the compare refuses */
    static const char *const objects[] = {
        "{}",
        "{\"spec\":{}}",
        "{\"spec\":null}",
        "{\"spec\":{\"color\":\"g\",\"size\":null,\"replicas\":3}}",
        "{\"spec\":{\"color\":\"r\",\"replicas\":3.0}}",
        "{\"spec\":{\"ports\":[{\"name\":\"a\",\"port\":1},{\"name\":\"b\"}]}}",
        "{\"spec\":{\"ports\":[{\"name\":\"b\",\"port\":2,\"protocol\":\"TCP\"}]}}",
        "{\"spec\":{\"ports\":[]}}",
        "{\"spec\":{\"ports\":[{\"name\":\"a\"},{\"name\":\"a\"}]}}",
        "{\"spec\":{\"tags\":[\"a\",\"b\"],\"args\":[\"x\"]}}",
        "{\"spec\":{\"tags\":[\"b\",\"c\"],\"args\":[\"x\",\"y\"]}}",
        "{\"spec\":{\"tags\":[{}]}}",
        "{\"spec\":{\"labels\":{\"k\":\"v\",\"l\":\"w\"},\"selector\":{\"a\":\"b\"}}}",
        "{\"spec\":{\"labels\":{},\"selector\":{}}}",
        "{\"spec\":{\"labels\":{\"k\":\"x\"},\"selector\":{\"a\":\"c\"}}}",
        "{\"spec\":{\"extra\":{\"x\":{\"y\":1},\"z\":[1,{\"q\":2}],\"n\":null,\"e\":{}}}}",
        "{\"spec\":{\"extra\":{\"x\":\"now a string\",\"z\":{\"w\":1},\"e\":[]}}}",
        "{\"spec\":{\"bogus\":1}}",
        "{\"spec\":{\"color\":1}}",
        "{\"status\":{\"ready\":true},\"spec\":{\"color\":\"g\"}}",
        "{\"status\":{\"ready\":false}}",
    };
    fixture f;
    setup(&f);
    kapi_smd_set *ignoring[] = {NULL, kapi_smd_set_new(&f.a), kapi_smd_set_new(&f.a)};
    kapi_smd_pe status = {.kind = KAPI_SMD_PE_FIELD, .name = KAPI_STR("status")};
    kapi_smd_set_insert(&f.a, ignoring[2], (kapi_smd_path){&status, 1});
    json_t *values[KAPI_ARRAY_LEN(objects) + 1] = {NULL};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(objects); i++)
        values[i + 1] = parse(objects[i]);
    for (size_t g = 0; g < KAPI_ARRAY_LEN(ignoring); g++) {
        kapi_smd_updater u = {.version = "v1", .view = {f.t, ignoring[g]}};
        for (size_t i = 0; i < KAPI_ARRAY_LEN(values); i++) {
            for (size_t j = 1; j < KAPI_ARRAY_LEN(values); j++) {
                kapi_smd_set *want =
                    new_manager_set(&f.a, f.t, values[i], values[j], u.view.ignored);
                kapi_smd_managers ms = {0};
                const char *errs = kapi_smd_update(&f.a, &u, values[i], values[j], &ms, "m");
                CHECK_INT_EQ(errs != NULL, want == NULL);
                if (!want)
                    continue;
                kapi_smd_manager *m = kapi_smd_managers_get(&ms, "m");
                CHECK_INT_EQ(m != NULL, !kapi_smd_set_empty(want));
                if (!m)
                    continue;
                kapi_buf w, h;
                kapi_buf_init(&w);
                kapi_buf_init(&h);
                kapi_smd_set_to_json(&w, want);
                kapi_smd_set_to_json(&h, m->set);
                CHECK_STR_EQ(h.ptr, w.ptr);
                CHECK(kapi_smd_set_equal(m->set, want));
                kapi_buf_dispose(&w);
                kapi_buf_dispose(&h);
            }
        }
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(values); i++)
        json_decref(values[i]);
    teardown(&f);
}
