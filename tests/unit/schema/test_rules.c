/* Unit tests for x-kubernetes-validations (src/schema/rules.c): the cases of
 * tests/data/cel-rules.json, rules evaluated over custom resources and a CRD's rules
 * checked, with Kubernetes 1.26's wording. */
#include <jansson.h>

#include "schema/schema.h"
#include "test.h"

/* The causes of err as the case files write them, "field: message", a JSON array. */
static json_t *causes_of(const kapi_error *err)
{
    json_t *out = json_array();
    for (size_t i = 0; i < err->ncauses; i++)
        json_array_append_new(out,
                              json_sprintf("%s: %s", err->causes[i].field, err->causes[i].message));
    return out;
}

static void expect(const char *name, const json_t *want, const kapi_error *err)
{
    json_t *got = causes_of(err);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_INDENT(1)), *w = json_dumps(want, JSON_INDENT(1));
        test_fail(__FILE__, __LINE__, "%s:\n got: %s\nwant: %s", name, g, w);
    }
    json_decref(got);
}

static json_t *cases(const char *kind)
{
    json_error_t jerr;
    json_t *d = json_load_file("tests/data/cel-rules.json", 0, &jerr);
    if (!d)
        test_fail(__FILE__, __LINE__, "tests/data/cel-rules.json: %s", jerr.text);
    json_t *list = json_incref(json_object_get(d, kind));
    json_decref(d);
    return list;
}

TEST(schema_rules_validate)
{
    json_t *list = cases("validate");
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        kapi_schema_root *root = NULL;
        kapi_error *cerr = kapi_schema_compile(json_object_get(c, "schema"), &root);
        if (cerr)
            test_fail(__FILE__, __LINE__, "%s: %s", name, cerr->message);
        kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
        kapi_schema_rules_validate(kapi_schema_root_node(root), json_object_get(c, "object"),
                                   json_object_get(c, "old"), err);
        expect(name, json_object_get(c, "want"), err);
        kapi_error_free(err);
        kapi_schema_root_free(root);
    }
    CHECK(i > 10);
    json_decref(list);
}

TEST(schema_rules_crd_check)
{
    json_t *list = cases("crd");
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
        kapi_schema_crd_rules rules = kapi_schema_crd_rules_for(NULL);
        kapi_schema_crd_check(json_object_get(c, "schema"), "schema", &rules, err);
        expect(json_string_value(json_object_get(c, "name")), json_object_get(c, "want"), err);
        kapi_error_free(err);
    }
    CHECK(i > 4);
    json_decref(list);
}
