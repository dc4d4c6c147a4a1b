/* The official JSON-Schema-Test-Suite, draft 4 (../shared/testdata/json-schema-draft4; see
 * its README), run through kapi_schema_compile and kapi_schema_validate: every instance's
 * verdict must be the suite's (valid exactly when validation reports no cause), except the
 * cases below, which are skipped with their reason. $KAPI_TESTDATA overrides the
 * ../shared/testdata directory. */
#include <jansson.h>

#include "schema/schema.h"
#include "test.h"

/* Every file of the suite; the optional format files are run with format checks on (as
 * custom resources are). */
static const char *const files[] = {
    "additionalItems.json",
    "additionalProperties.json",
    "allOf.json",
    "anyOf.json",
    "default.json",
    "definitions.json",
    "dependencies.json",
    "enum.json",
    "format.json",
    "infinite-loop-detection.json",
    "items.json",
    "maxItems.json",
    "maxLength.json",
    "maxProperties.json",
    "maximum.json",
    "minItems.json",
    "minLength.json",
    "minProperties.json",
    "minimum.json",
    "multipleOf.json",
    "not.json",
    "oneOf.json",
    "pattern.json",
    "patternProperties.json",
    "properties.json",
    "ref.json",
    "refRemote.json",
    "required.json",
    "type.json",
    "uniqueItems.json",
    "optional/format/date-time.json",
    "optional/format/email.json",
    "optional/format/hostname.json",
    "optional/format/ipv4.json",
    "optional/format/ipv6.json",
    "optional/format/unknown.json",
    "optional/format/uri.json",
};

#define TYPE_NULL "type null is not allowed (nullable is)"

/* Cases whose schema a structural schema may not have (kapi_schema_compile rejects them,
 * as apiextensions does): the file and the case's description ("*": all of the file). */
static const struct {
    const char *file, *schema, *why;
} not_structural[] = {
    {"additionalItems.json", "*", "additionalItems (and tuple items) are not structural"},
    {"definitions.json", "*", "definitions and $ref are not structural"},
    {"dependencies.json", "*", "dependencies is not structural"},
    {"infinite-loop-detection.json", "*", "definitions and $ref are not structural"},
    {"patternProperties.json", "*", "patternProperties is not structural"},
    {"ref.json", "*", "$ref is not structural"},
    {"refRemote.json", "*", "$ref is not structural"},
    {"additionalProperties.json",
     "additionalProperties being false does not allow other properties",
     "patternProperties is not structural"},
    {"additionalProperties.json", "non-ASCII pattern with additionalProperties",
     "patternProperties is not structural"},
    {"items.json", "an array of schemas for items", "items must be one schema, not a tuple"},
    {"items.json", "items and subitems", "definitions, $ref and tuple items are not structural"},
    {"items.json", "array-form items with null instance elements",
     "items must be one schema, not a tuple"},
    {"items.json", "items with null instance elements", TYPE_NULL},
    {"properties.json", "properties with null valued instance properties", TYPE_NULL},
    {"additionalProperties.json", "additionalProperties with null valued instance properties",
     TYPE_NULL},
    {"allOf.json", "allOf with base schema", TYPE_NULL},
    {"allOf.json", "nested allOf, to check validation semantics", TYPE_NULL},
    {"anyOf.json", "nested anyOf, to check validation semantics", TYPE_NULL},
    {"oneOf.json", "nested oneOf, to check validation semantics", TYPE_NULL},
    {"not.json", "not multiple types", "type must be a single string"},
    {"properties.json", "properties, patternProperties, additionalProperties interaction",
     "patternProperties is not structural"},
    {"type.json", "null type matches only the null object", TYPE_NULL},
    {"type.json", "multiple types can be specified in an array", "type must be a single string"},
    {"type.json", "type as array with one item", "type must be a single string"},
    {"type.json", "type: array or object", "type must be a single string"},
    {"type.json", "type: array, object or null", "type must be a single string"},
    {"uniqueItems.json", "uniqueItems with an array of items", "items must be one schema"},
    {"uniqueItems.json", "uniqueItems with an array of items and additionalItems=false",
     "items must be one schema, additionalItems is not structural"},
    {"uniqueItems.json", "uniqueItems=false with an array of items", "items must be one schema"},
    {"uniqueItems.json", "uniqueItems=false with an array of items and additionalItems=false",
     "items must be one schema, additionalItems is not structural"},
};

/* A checked format with no type: kube-openapi's type validator takes the format for a
 * type, so a number, a boolean or an object (not an array, not null) is "in body must be
 * of type email: \"int64\"". */
#define FORMAT_IS_A_TYPE(file)                                                                     \
    {file, "*", "all string formats ignore integers", WHY_FORMAT},                                 \
        {file, "*", "all string formats ignore floats", WHY_FORMAT},                               \
        {file, "*", "all string formats ignore objects", WHY_FORMAT},                              \
    {                                                                                              \
        file, "*", "all string formats ignore booleans", WHY_FORMAT                                \
    }
#define WHY_FORMAT "a checked format acts as a type for values that are not strings"
#define WHY_URI_PATH "Go's url.ParseRequestURI checks only the % escapes of a path"

/* Instances where Kubernetes (apiextensions-apiserver 1.26 over kube-openapi) answers
 * otherwise than the suite, and kapi answers as Kubernetes: file, case, test ("*": every
 * case), and why. */
static const struct {
    const char *file, *schema, *test, *why;
} kubernetes_differs[] = {
    {"enum.json", "heterogeneous enum-with-null validation", "null is valid",
     "kube-openapi never matches null against an enum (basicCommonValidator skips nil)"},
    {"enum.json", "enum with [0] does not match [false]", "[0.0] is valid",
     "values compare with reflect.DeepEqual: int64 0 in a list is not float64 0"},
    {"enum.json", "enum with [1] does not match [true]", "[1.0] is valid",
     "values compare with reflect.DeepEqual: int64 1 in a list is not float64 1"},
    {"multipleOf.json", "by number", "35 is not multiple of 1.5",
     "integer data is divided by int64(multipleOf), here 1"},
    {"multipleOf.json", "small multiple of large integer", "any integer is a multiple of 1e-8",
     "int64(1e-8) is 0: kube-apiserver divides by zero (a panic, answered 500); kapi uses the "
     "float64 rule, under which 1.2391239123e18 is not a JSON integer"},
    {"not.json", "forbid everything with empty schema", "null is invalid",
     "kube-openapi checks null against type and enum only: not never runs"},
    FORMAT_IS_A_TYPE("format.json"),
    FORMAT_IS_A_TYPE("optional/format/date-time.json"),
    {"optional/format/date-time.json", "*", "a valid date-time with a leap second, UTC",
     "strfmt.IsDateTime wants seconds <= 59"},
    {"optional/format/date-time.json", "*",
     "a valid date-time with a leap second, with minus offset",
     "strfmt.IsDateTime wants seconds <= 59"},
    {"optional/format/date-time.json", "*", "an invalid offset minute in date-time string",
     "strfmt.IsDateTime does not check the offset's range"},
    {"optional/format/date-time.json", "*", "an invalid offset in date-time string",
     "strfmt.IsDateTime does not check the offset's range"},
    FORMAT_IS_A_TYPE("optional/format/email.json"),
    {"optional/format/email.json", "*", "full \"From\" header is invalid",
     "Go's net/mail.ParseAddress takes a display name and a trailing comment"},
    FORMAT_IS_A_TYPE("optional/format/hostname.json"),
    {"optional/format/hostname.json", "*", "a valid punycoded IDN hostname",
     "strfmt's hostname pattern wants the last label to be letters only"},
    {"optional/format/hostname.json", "*", "single label with hyphen",
     "strfmt's hostname pattern allows a hyphen in a single label only after its first "
     "character"},
    {"optional/format/hostname.json", "*", "invalid non-ASCII KELVIN SIGN (U+212A)",
     "U+212A is a letter (\\p{L}) to strfmt's hostname pattern; IDNA rules are not checked"},
    FORMAT_IS_A_TYPE("optional/format/ipv4.json"),
    {"optional/format/ipv4.json", "*", "an IPv4-mapped IPv6 address is invalid",
     "k8s.io/utils' ParseIPSloppy parses it and it contains a dot"},
    FORMAT_IS_A_TYPE("optional/format/ipv6.json"),
    FORMAT_IS_A_TYPE("optional/format/uri.json"),
    {"optional/format/uri.json", "*", "an invalid protocol-relative URI Reference",
     "Go's url.ParseRequestURI takes an absolute path, which this is"},
    {"optional/format/uri.json", "*", "an invalid relative URI Reference",
     "Go's url.ParseRequestURI takes an absolute path"},
    {"optional/format/uri.json", "*", "unescaped non US-ASCII characters", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid backslash character", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid \" character", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid <> characters", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid {} characters", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid ^ character", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid ` character", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid SPACE character", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "invalid | character", WHY_URI_PATH},
    {"optional/format/uri.json", "*", "leading zero in an embedded IPv4 address is invalid",
     "Go's url.ParseRequestURI does not parse the address in [...]"},
    {"optional/format/uri.json", "*", "square brackets are not allowed in a path segment",
     WHY_URI_PATH},
};

static json_t *load_file(const char *name)
{
    const char *dir = getenv("KAPI_TESTDATA");
    char *path = dir ? kapi_xprintf("%s/json-schema-draft4/tests/%s", dir, name)
                     : kapi_xprintf("../shared/testdata/json-schema-draft4/tests/%s", name);
    json_error_t jerr;
    json_t *cases = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!cases)
        test_fail(__FILE__, __LINE__, "cannot load %s: %s", path, jerr.text);
    free(path);
    return cases;
}

static bool matches(const char *pattern, const char *s)
{
    return pattern && (strcmp(pattern, "*") == 0 || strcmp(pattern, s) == 0);
}

static const char *case_skipped(const char *file, const char *desc)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(not_structural); i++)
        if (strcmp(not_structural[i].file, file) == 0 && matches(not_structural[i].schema, desc))
            return not_structural[i].why;
    return NULL;
}

static const char *test_skipped(const char *file, const char *desc, const char *test)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(kubernetes_differs); i++)
        if (strcmp(kubernetes_differs[i].file, file) == 0 &&
            matches(kubernetes_differs[i].schema, desc) &&
            matches(kubernetes_differs[i].test, test))
            return kubernetes_differs[i].why;
    return NULL;
}

typedef struct counts {
    int total, checked, not_structural, differs, failed;
} counts;

/* Runs one instance; returns false (after printing why) when kapi disagrees. */
static bool run_instance(const kapi_schema *s, const json_t *t, const char *where)
{
    bool want = json_is_true(json_object_get(t, "valid"));
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    kapi_schema_validate(s, json_object_get(t, "data"), "", err);
    bool got = err->ncauses == 0;
    if (got != want)
        printf("  draft4 disagrees: %s: want %s, got %s%s%s\n", where, want ? "valid" : "invalid",
               got ? "valid" : "invalid", got ? "" : ": ", got ? "" : err->causes[0].message);
    kapi_error_free(err);
    return got == want;
}

static void run_case(const char *file, const json_t *c, counts *n)
{
    const char *desc = json_string_value(json_object_get(c, "description"));
    json_t *tests = json_object_get(c, "tests"), *t;
    size_t i;
    n->total += (int)json_array_size(tests);
    if (case_skipped(file, desc)) {
        n->not_structural += (int)json_array_size(tests);
        return;
    }
    kapi_schema_root *root = NULL;
    kapi_error *err = kapi_schema_compile(json_object_get(c, "schema"), &root);
    if (err) {
        printf("  draft4: %s / %s: does not compile: %s\n", file, desc, err->message);
        kapi_error_free(err);
        n->failed += (int)json_array_size(tests);
        return;
    }
    json_array_foreach(tests, i, t)
    {
        const char *test = json_string_value(json_object_get(t, "description"));
        if (test_skipped(file, desc, test)) {
            n->differs++;
            continue;
        }
        char *where = kapi_xprintf("%s / %s / %s", file, desc, test);
        n->checked++;
        n->failed += !run_instance(kapi_schema_root_node(root), t, where);
        free(where);
    }
    kapi_schema_root_free(root);
}

TEST(schema_draft4_suite)
{
    counts n = {0};
    for (size_t f = 0; f < KAPI_ARRAY_LEN(files); f++) {
        json_t *cases = load_file(files[f]), *c;
        size_t i;
        json_array_foreach(cases, i, c) run_case(files[f], c, &n);
        json_decref(cases);
    }
    printf("  draft4: %d of %d instances checked, %d disagree; %d skipped: %d not structural, %d "
           "where Kubernetes differs\n",
           n.checked, n.total, n.failed, n.not_structural + n.differs, n.not_structural, n.differs);
    CHECK_INT_EQ(n.failed, 0);
}

/* Every skipped case and instance must still exist in the suite: a stale entry would hide
 * nothing, but it would mislead. */
TEST(schema_draft4_skips_are_current)
{
    for (size_t k = 0; k < KAPI_ARRAY_LEN(not_structural); k++) {
        bool found = false;
        json_t *cases = load_file(not_structural[k].file), *c;
        size_t i;
        json_array_foreach(cases, i, c) found |=
            matches(not_structural[k].schema, json_string_value(json_object_get(c, "description")));
        json_decref(cases);
        if (!found)
            test_fail(__FILE__, __LINE__, "no case \"%s\" in %s", not_structural[k].schema,
                      not_structural[k].file);
    }
    for (size_t k = 0; k < KAPI_ARRAY_LEN(kubernetes_differs); k++) {
        bool found = false;
        json_t *cases = load_file(kubernetes_differs[k].file), *c, *t;
        size_t i, j;
        json_array_foreach(cases, i, c)
        {
            if (!matches(kubernetes_differs[k].schema,
                         json_string_value(json_object_get(c, "description"))))
                continue;
            json_array_foreach(json_object_get(c, "tests"), j, t) found |= matches(
                kubernetes_differs[k].test, json_string_value(json_object_get(t, "description")));
        }
        json_decref(cases);
        if (!found)
            test_fail(__FILE__, __LINE__, "no test \"%s\" / \"%s\" in %s",
                      kubernetes_differs[k].schema, kubernetes_differs[k].test,
                      kubernetes_differs[k].file);
    }
}
