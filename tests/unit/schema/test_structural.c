/*
 * kapi_schema_crd_check (schema/structural.c) against the causes kube-apiserver 1.26 gave
 * for the same openAPIV3Schemas (tests/data/crd-schemas.json, recorded from the reference
 * server): the same causes for every case (kube orders those of sibling properties by Go
 * map iteration, so they are compared as a set); then what the JSON file cannot show:
 * ValidateStructural's causes sorted by their text, the conversion error shown only alone,
 * and the rules a stored CRD relaxes on update.
 */
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"
#include "test.h"

static int text_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The causes of err as "field|reason|message" lines joined by "\n", sorted unless ordered. */
static char *causes_text(const kapi_error *err, bool ordered)
{
    char **v = kapi_xmalloc((err->ncauses + 1) * sizeof(*v));
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < err->ncauses; i++)
        v[i] = kapi_xprintf("%s|%s|%s", err->causes[i].field ? err->causes[i].field : "",
                            err->causes[i].reason, err->causes[i].message);
    if (!ordered)
        qsort(v, err->ncauses, sizeof(*v), text_cmp);
    for (size_t i = 0; i < err->ncauses; i++) {
        kapi_buf_printf(&b, "%s\n", v[i]);
        free(v[i]);
    }
    free(v);
    kapi_buf_putc(&b, '\0');
    return kapi_buf_detach(&b, NULL);
}

static char *want_text(const json_t *causes, bool ordered)
{
    kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "want");
    for (size_t i = 0; i < json_array_size(causes); i++) {
        const json_t *c = json_array_get(causes, i);
        kapi_error_add_cause(e, json_string_value(json_array_get(c, 1)),
                             json_string_value(json_array_get(c, 0)), "%s",
                             json_string_value(json_array_get(c, 2)));
    }
    char *t = causes_text(e, ordered);
    kapi_error_free(e);
    return t;
}

static kapi_error *check(const json_t *schema, const kapi_schema_crd_rules *r)
{
    kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "crd");
    kapi_schema_crd_check(schema, "spec.versions[0].schema.openAPIV3Schema", r, e);
    return e;
}

TEST(structural_as_kube_answers)
{
    json_error_t jerr;
    json_t *d = json_load_file("tests/data/crd-schemas.json", 0, &jerr);
    CHECK(d != NULL);
    kapi_schema_crd_rules all = kapi_schema_crd_rules_for(NULL);
    const json_t *cases = json_object_get(d, "cases");
    CHECK(json_array_size(cases) >= 35);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        bool ordered = json_is_true(json_object_get(c, "ordered"));
        kapi_error *e = check(json_object_get(c, "schema"), &all);
        char *got = causes_text(e, ordered),
             *want = want_text(json_object_get(c, "causes"), ordered);
        if (strcmp(got, want) != 0)
            test_fail(__FILE__, __LINE__, "case %s:\n got: %s\nwant: %s",
                      json_string_value(json_object_get(c, "name")), got, want);
        free(got);
        free(want);
        kapi_error_free(e);
    }
    json_decref(d);
}

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v)
        test_fail(__FILE__, __LINE__, "bad test JSON: %s", jerr.text);
    return v;
}

/* A schema is structural when it converts and ValidateStructural finds nothing; the
 * OpenAPI keyword rules and defaults do not count. */
TEST(structural_predicate)
{
    static const struct {
        const char *schema;
        bool structural;
    } cases[] = {
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}", true},
        {"{\"type\":\"object\",\"properties\":{\"a\":{}}}", false},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\","
         "\"x-kubernetes-preserve-unknown-fields\":false}}}",
         false},
        {"{\"type\":\"object\",\"$schema\":\"x\"}", false},
        {"{\"type\":\"object\",\"uniqueItems\":true}", true},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"default\":\"x\"}}}",
         true},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"x-kubernetes-int-or-string\":true}}}",
         true},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *s = parse(cases[i].schema);
        if (kapi_schema_crd_structural(s) != cases[i].structural)
            test_fail(__FILE__, __LINE__, "case %zu: structural should be %d", i,
                      cases[i].structural);
        json_decref(s);
    }
}

/* An update keeps what the stored CRD already had: a rule it broke is not enforced. */
TEST(structural_rules_relax_for_stored_schemas)
{
    json_t *old = parse("[{\"type\":\"object\",\"properties\":{\"a\":{},"
                        "\"s\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\","
                        "\"items\":{\"type\":\"object\"}},"
                        "\"m\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","
                        "\"x-kubernetes-list-map-keys\":[\"k\"],\"items\":{\"type\":\"object\","
                        "\"properties\":{\"k\":{\"type\":\"string\"}}}},"
                        "\"t\":{\"type\":\"text\"}}}]");
    kapi_schema_crd_rules r = kapi_schema_crd_rules_for(old);
    CHECK(!r.require_structural && !r.require_atomic_set_type && !r.require_map_list_keys &&
          !r.require_valid_type);
    kapi_error *e = check(json_array_get(old, 0), &r);
    CHECK_INT_EQ(e->ncauses, 0);
    kapi_error_free(e);
    kapi_schema_crd_rules all = kapi_schema_crd_rules_for(NULL);
    e = check(json_array_get(old, 0), &all);
    CHECK_INT_EQ(e->ncauses, 4);
    kapi_error_free(e);
    json_decref(old);
    old = parse("[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\","
                "\"properties\":{\"x\":{\"type\":\"string\"}},\"default\":{\"y\":1}}}}]");
    r = kapi_schema_crd_rules_for(old);
    CHECK(r.require_structural && !r.require_pruned_defaults);
    e = check(json_array_get(old, 0), &r);
    CHECK_INT_EQ(e->ncauses, 0);
    kapi_error_free(e);
    json_decref(old);
}
