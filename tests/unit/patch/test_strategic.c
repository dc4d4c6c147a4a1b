/* Strategic merge patch: the apply half of apimachinery's patch_test.go cases
 * (../shared/testdata/strategic-merge-patch; see its README) through kapi_patch_strategic,
 * with the MergeItem schema compiled from the suite's schema/swagger-merge-item-v3.json by
 * the schema compiler (its #/components/schemas/ references read as #/definitions/):
 * original + twoWay gives twoWayResult (else modified), current + threeWay gives result,
 * an expectedError is an error containing it. Cases written for behaviour changed after
 * apimachinery 1.26 are skipped with their reason. Then kube-apiserver's answers for the
 * golden corpus's strategic merge patches of a CronJob, with the built-in schema. */
#include "codec/codec_test.h"
#include "codec/json.h"
#include "patch/patch.h"
#include "patch_test.h"
#include "registry/registry.h"
#include "test.h"

#define SMP "strategic-merge-patch/"

/* Apply checks kapi does not run: expectations of apimachinery after 1.26. File,
 * description, half ("twoWay" or "threeWay"), why. */
static const struct {
    const char *file, *description, *half, *why;
} after_126[] = {
    {"customStrategicMergePatchRawTestCases.json",
     "$deleteFromPrimitiveList should delete item from a list without merge patch strategy",
     "twoWay",
     "1.26 replaces a list that does not merge with the items to delete (apimachinery c35cb3c5, "
     "Kubernetes 1.28, deletes them)"},
    {"strategicMergePatchRawTestCases.json", "nested patch merge with empty list", "twoWay",
     "1.26 keeps a \"$patch\": \"delete\" item in a list the patch adds whole (apimachinery "
     "ff802006, Kubernetes 1.28, drops it)"},
};

static const char *skip_reason(const char *file, const char *description, const char *half)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(after_126); i++)
        if (strcmp(after_126[i].file, file) == 0 && strcmp(after_126[i].half, half) == 0 &&
            strcmp(after_126[i].description, description) == 0)
            return after_126[i].why;
    return NULL;
}

/* ---- the schemas ---- */

/* Rewrites every "$ref": "#/components/schemas/X" under v to "#/definitions/X". */
static void rewrite_refs(json_t *v)
{
    static const char prefix[] = "#/components/schemas/";
    const char *key;
    json_t *c;
    size_t i;
    if (json_is_array(v))
        json_array_foreach(v, i, c) rewrite_refs(c);
    if (!json_is_object(v))
        return;
    json_object_foreach(v, key, c)
    {
        const char *ref = strcmp(key, "$ref") == 0 ? json_string_value(c) : NULL;
        if (ref && strncmp(ref, prefix, sizeof(prefix) - 1) == 0) {
            char *def = kapi_xprintf("#/definitions/%s", ref + sizeof(prefix) - 1);
            json_string_set(c, def);
            free(def);
        }
        rewrite_refs(c);
    }
}

/* The OpenAPI v3 document's schemas compiled as a set. */
static kapi_schema_set *load_schemas(const char *file)
{
    json_t *doc = patch_test_load(file);
    json_t *defs = json_incref(json_object_get(json_object_get(doc, "components"), "schemas"));
    json_decref(doc);
    rewrite_refs(defs);
    kapi_schema_set *set = kapi_schema_set_new();
    kapi_error *err = kapi_schema_set_add(set, defs);
    if (!err)
        err = kapi_schema_set_compile(set);
    if (err)
        test_fail(__FILE__, __LINE__, "%s does not compile: %s", file, err->message);
    json_decref(defs);
    return set;
}

/* ---- running ---- */

typedef struct counts {
    int checks, passed, failed, skipped;
} counts;

/* A document of a case: its normalized form when the case has one; absent is {}. */
static json_t *doc_of(const json_t *c, const char *field)
{
    json_t *v = json_object_get(json_object_get(c, "sorted"), field);
    if (!v)
        v = json_object_get(c, field);
    return v ? json_deep_copy(v) : json_object();
}

/* apply(doc, patch) against want, or against an error containing want_error. */
static bool check_apply(const kapi_schema *s, json_t *doc, const json_t *patch, const json_t *want,
                        const char *want_error, const char *where)
{
    kapi_error *err = kapi_patch_strategic(&doc, patch, s);
    bool ok;
    if (want_error)
        ok = err && strstr(err->message, want_error);
    else
        ok = !err && patch_test_same(doc, want, where);
    if (!ok && err)
        printf("  %s: %s\n", where, err->message);
    else if (!ok && want_error)
        printf("  %s: no error, expected one containing \"%s\"\n", where, want_error);
    kapi_error_free(err);
    json_decref(doc);
    return ok;
}

/* One half of a case, when the case has it. */
static void run_half(const kapi_schema *s, const char *file, const json_t *c, bool two_way,
                     counts *n)
{
    const char *desc = json_string_value(json_object_get(c, "description"));
    const char *half = two_way ? "twoWay" : "threeWay";
    const char *want_field =
        two_way ? (json_object_get(c, "twoWayResult") ? "twoWayResult" : "modified") : "result";
    const char *want_error = json_string_value(json_object_get(c, "expectedError"));
    if (!json_object_get(c, half) || (!want_error && !json_object_get(c, want_field)))
        return;
    n->checks++;
    if (skip_reason(file, desc, half)) {
        n->skipped++;
        return;
    }
    char *where = kapi_xprintf("%s \"%s\" %s", file, desc, half);
    json_t *patch = doc_of(c, half), *want = doc_of(c, want_field);
    bool ok = check_apply(s, doc_of(c, two_way ? "original" : "current"), patch, want,
                          two_way ? want_error : NULL, where);
    n->passed += ok;
    n->failed += !ok;
    json_decref(patch);
    json_decref(want);
    free(where);
}

static void run_file(const kapi_schema *s, const char *file, counts *n)
{
    char *rel = kapi_xprintf(SMP "cases/%s", file);
    json_t *cases = patch_test_load(rel), *c;
    size_t i;
    json_array_foreach(cases, i, c)
    {
        run_half(s, file, c, true, n);
        run_half(s, file, c, false, n);
    }
    json_decref(cases);
    free(rel);
}

/* A copy of v with every object's members in byte order (Go's json.Marshal of a map). */
static json_t *sorted_copy(const json_t *v)
{
    json_t *out, *c;
    size_t i;
    if (json_is_array(v)) {
        out = json_array();
        json_array_foreach(v, i, c) json_array_append_new(out, sorted_copy(c));
        return out;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    json_t *keys = json_array();
    const char *key;
    json_object_foreach((json_t *)v, key, c) json_array_append_new(keys, json_string(key));
    out = json_object();
    while (json_array_size(keys)) {
        size_t min = 0;
        for (i = 1; i < json_array_size(keys); i++)
            if (strcmp(json_string_value(json_array_get(keys, i)),
                       json_string_value(json_array_get(keys, min))) < 0)
                min = i;
        key = json_string_value(json_array_get(keys, min));
        json_object_set_new(out, key, sorted_copy(json_object_get(v, key)));
        json_array_remove(keys, min);
    }
    json_decref(keys);
    return out;
}

/* apply(doc, patch), each a JSON text, must give exactly the text want (Go's bytes). */
static bool check_bytes(const kapi_schema *s, const char *doc, const char *patch, const char *want,
                        const char *where)
{
    char *msg = NULL;
    json_t *d = kapi_json_parse(doc, strlen(doc), &msg);
    json_t *p = kapi_json_parse(patch, strlen(patch), &msg);
    kapi_error *err = d && p ? kapi_patch_strategic(&d, p, s) : NULL;
    json_t *sorted = !err && d ? sorted_copy(d) : NULL;
    kapi_buf got;
    kapi_buf_init(&got);
    if (sorted)
        kapi_json_encode(&got, sorted);
    bool ok = sorted && strcmp(got.ptr, want) == 0;
    if (!ok)
        printf("  %s:\n    got  %s\n    want %s\n", where, err ? err->message : got.ptr, want);
    kapi_error_free(err);
    kapi_buf_dispose(&got);
    json_decref(sorted);
    json_decref(d);
    json_decref(p);
    free(msg);
    return ok;
}

/* TestUnknownField: the halves whose patch the suite gives. */
static void run_unknown_fields(const kapi_schema *s, counts *n)
{
    static const char *const halves[][4] = {
        {"original", "expectedTwoWay", "expectedTwoWayResult", "two-way"},
        {"current", "expectedThreeWay", "expectedThreeWayResult", "three-way"},
    };
    json_t *cases = patch_test_load(SMP "cases/TestUnknownField.json"), *c;
    size_t i;
    json_array_foreach(cases, i, c)
    {
        for (size_t h = 0; h < 2; h++) {
            const char *patch = json_string_value(json_object_get(c, halves[h][1]));
            if (!patch || !*patch)
                continue;
            char *where = kapi_xprintf("TestUnknownField \"%s\" %s",
                                       json_string_value(json_object_get(c, "name")), halves[h][3]);
            bool ok = check_bytes(s, json_string_value(json_object_get(c, halves[h][0])), patch,
                                  json_string_value(json_object_get(c, halves[h][2])), where);
            n->checks++;
            n->passed += ok;
            n->failed += !ok;
            free(where);
        }
    }
    json_decref(cases);
}

/* TestNumberConversion: the precisionItem schema; numbers must come out as Go writes them. */
static void run_number_conversion(counts *n)
{
    kapi_schema_set *set = load_schemas(SMP "schema/swagger-precision-item-v3.json");
    const kapi_schema *s = kapi_schema_set_get(set, "precisionItem");
    json_t *cases = patch_test_load(SMP "cases/TestNumberConversion.json"), *c;
    size_t i;
    CHECK(s != NULL);
    json_array_foreach(cases, i, c)
    {
        char *where = kapi_xprintf("TestNumberConversion \"%s\"",
                                   json_string_value(json_object_get(c, "name")));
        bool ok = check_bytes(s, json_string_value(json_object_get(c, "old")),
                              json_string_value(json_object_get(c, "expectedPatch")),
                              json_string_value(json_object_get(c, "expectedResult")), where);
        n->checks++;
        n->passed += ok;
        n->failed += !ok;
        free(where);
    }
    json_decref(cases);
    kapi_schema_set_free(set);
}

TEST(patch_strategic_suite)
{
    static const char *const files[] = {
        "customStrategicMergePatchTestCaseData.json", "customStrategicMergePatchRawTestCases.json",
        "createStrategicMergePatchTestCaseData.json", "strategicMergePatchRawTestCases.json",
        "replaceRawExtensionPatchTestCases.json",
    };
    kapi_schema_set *set = load_schemas(SMP "schema/swagger-merge-item-v3.json");
    const kapi_schema *s = kapi_schema_set_get(set, "mergeItem");
    counts total = {0};
    CHECK(s != NULL);
    for (size_t f = 0; f < KAPI_ARRAY_LEN(files); f++) {
        counts n = {0};
        run_file(s, files[f], &n);
        printf("  %s: %d apply checks, %d passed, %d failed, %d skipped\n", files[f], n.checks,
               n.passed, n.failed, n.skipped);
        total.checks += n.checks, total.passed += n.passed;
        total.failed += n.failed, total.skipped += n.skipped;
    }
    counts u = {0}, num = {0};
    run_unknown_fields(s, &u);
    run_number_conversion(&num);
    printf("  TestUnknownField: %d apply checks, %d passed, %d failed\n", u.checks, u.passed,
           u.failed);
    printf("  TestNumberConversion: %d apply checks, %d passed, %d failed\n", num.checks,
           num.passed, num.failed);
    printf("  strategic-merge-patch: %d apply checks, %d passed, %d failed, %d skipped\n",
           total.checks + u.checks + num.checks, total.passed + u.passed + num.passed,
           total.failed + u.failed + num.failed, total.skipped);
    kapi_schema_set_free(set);
    CHECK_INT_EQ(total.failed + u.failed + num.failed, 0);
}

/* Each skip names a case that is still there. */
TEST(patch_strategic_skips_are_current)
{
    for (size_t k = 0; k < KAPI_ARRAY_LEN(after_126); k++) {
        char *rel = kapi_xprintf(SMP "cases/%s", after_126[k].file);
        json_t *cases = patch_test_load(rel), *c;
        size_t i;
        bool found = false;
        json_array_foreach(cases, i, c) found |=
            strcmp(json_string_value(json_object_get(c, "description")),
                   after_126[k].description) == 0 &&
            json_object_get(c, after_126[k].half);
        CHECK(found);
        json_decref(cases);
        free(rel);
    }
}

/* The name, image and env of each container of a CronJob: what the golden strategic merge
 * patches change. */
static json_t *containers_of(const json_t *cronjob)
{
    json_t *list = kapi_json_path(cronjob, "spec.jobTemplate.spec.template.spec.containers");
    json_t *out = json_array(), *c;
    size_t i;
    json_array_foreach(list, i, c)
    {
        json_t *summary = json_object();
        json_object_set(summary, "name", json_object_get(c, "name"));
        json_object_set(summary, "image", json_object_get(c, "image"));
        if (json_object_get(c, "env"))
            json_object_set(summary, "env", json_object_get(c, "env"));
        json_array_append_new(out, summary);
    }
    return out;
}

/* The golden corpus's strategic merge patches of cj-web-2, in order, each applied to the
 * object the previous answer shows, with the CronJob schema of the built-in types:
 * containers merge by name (added, modified with env merged by name, deleted), then
 * $setElementOrder and a $patch: replace of the list. */
TEST(patch_strategic_golden_cronjob)
{
    static const char *const ids[] = {"cj-patch-smp-add", "cj-patch-smp-modify",
                                      "cj-patch-smp-delete", "cj-patch-smp-setorder",
                                      "cj-patch-smp-replace"};
    kapi_registry *reg = NULL;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_schema *s =
        kapi_schema_set_get(kapi_registry_schemas(reg), "io.k8s.api.batch.v1.CronJob");
    json_t *requests = codec_test_golden("requests.jsonl");
    json_t *responses = codec_test_golden("responses.jsonl");
    CHECK(s && requests && responses);
    json_t *doc = json_deep_copy(
        json_object_get(codec_test_golden_id(responses, "cj-patch-json-test-ok"), "body"));
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ids); i++) {
        const json_t *patch = json_object_get(codec_test_golden_id(requests, ids[i]), "body");
        const json_t *want = json_object_get(codec_test_golden_id(responses, ids[i]), "body");
        kapi_error *err = kapi_patch_strategic(&doc, patch, s);
        if (err)
            test_fail(__FILE__, __LINE__, "%s: %s", ids[i], err->message);
        json_t *got_c = containers_of(doc), *want_c = containers_of(want);
        CHECK(patch_test_same(got_c, want_c, ids[i]));
        json_decref(got_c);
        json_decref(want_c);
        json_decref(doc);
        doc = json_deep_copy(want);
    }

    const json_t *bad =
        json_object_get(codec_test_golden_id(requests, "cj-patch-smp-bad-directive"), "body");
    const json_t *answer =
        json_object_get(codec_test_golden_id(responses, "cj-patch-smp-bad-directive"), "body");
    kapi_error *err = kapi_patch_strategic(&doc, bad, s);
    CHECK(err != NULL);
    CHECK_INT_EQ(kapi_status_code(err->status), 500);
    CHECK_STR_EQ(kapi_status_reason(err->status), "");
    CHECK(!err->has_details);
    CHECK_STR_EQ(err->message, json_string_value(json_object_get(answer, "message")));
    kapi_error_free(err);
    json_decref(doc);
    json_decref(requests);
    json_decref(responses);
    kapi_registry_free(reg);
}

/* apimachinery's errors with the statuses kube-apiserver gives them: 400 for the malformed
 * directives it names, the generic 422 for lists of lists, the message as a reasonless 500
 * otherwise. */
TEST(patch_strategic_errors)
{
    static const struct {
        const char *patch;
        int code;
        const char *message;
    } cases[] = {
        {"{'$retainKeys':'name'}", 400, "invalid patch format of retainKeys"},
        {"{'$retainKeys':['name'],'value':'x'}", 400, "invalid patch format of retainKeys"},
        {"{'$deleteFromPrimitiveListX':[1]}", 400, "invalid patch format of primitive list"},
        {"{'$setElementOrder':[1]}", 400, "invalid patch format of setElementOrder list"},
        {"{'nonMergingList':[[1]]}", 200, NULL},
        {"{'retainKeysMergingList':[[1]]}", 422,
         "the server rejected our request due to an error in our request"},
        {"{'mergingList':[{'value':'b'}]}", 500,
         "map: map[value:b] does not contain declared merge key: name"},
        {"{'mergingList':[{'$patch':'merge'}]}", 500,
         "merging lists cannot yet be specified in the patch"},
        {"{'mergingList':[{'name':'a','$patch':null}]}", 500,
         "unknown patch type: %!s(<nil>) in map: map[$patch:<nil> name:a]"},
        {"{'simpleMap':{'$patch':1}}", 500,
         "unknown patch type: %!s(int64=1) in map: map[$patch:1]"},
        {"{'mergingIntList':[{'x':1.5}]}", 500,
         "list element types are not identical: [[1 2] [map[x:1.5]]]"},
        {"{'$setElementOrder/mergingList':'x'}", 500,
         "expected a []interface {}, but received a string"},
        {"{'$setElementOrder/mergingList':null}", 500,
         "expected a []interface {}, but received a %!s(<nil>)"},
        {"{'$setElementOrder/mergingList':[{'name':'b'}],'mergingList':[{'name':'a'}]}", 500,
         "The order in patch list:\n[map[name:a]]\n doesn't match $setElementOrder list:\n"
         "[map[name:b]]\n"},
    };
    kapi_schema_set *set = load_schemas(SMP "schema/swagger-merge-item-v3.json");
    const kapi_schema *s = kapi_schema_set_get(set, "mergeItem");
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *doc = patch_test_json("{'name':'n','value':'v','mergingList':[{'name':'a'}],"
                                      "'mergingIntList':[1,2],'simpleMap':{'k':'v'},"
                                      "'retainKeysMergingList':[]}");
        json_t *before = json_deep_copy(doc), *patch = patch_test_json(cases[i].patch);
        kapi_error *err = kapi_patch_strategic(&doc, patch, s);
        if (!cases[i].message) {
            CHECK(err == NULL);
        } else {
            CHECK(err != NULL);
            CHECK_INT_EQ(kapi_status_code(err->status), cases[i].code);
            CHECK_STR_EQ(err->message, cases[i].message);
            CHECK(err->has_details == (cases[i].code == 422));
            CHECK(json_equal(doc, before));
        }
        kapi_error_free(err);
        json_decref(doc);
        json_decref(before);
        json_decref(patch);
    }
    kapi_schema_set_free(set);
}

/* The 400s for a body kube-apiserver cannot decode into a map, a null patch that changes
 * nothing, and a list whose field is not in the schema (replaced whole). */
TEST(patch_strategic_decode_and_unknown)
{
    json_t *out = NULL;
    kapi_error *err = kapi_patch_parse(&out, KAPI_PATCH_STRATEGIC, "[1]", 3, false);
    CHECK_STR_EQ(err->message,
                 "json: cannot unmarshal array into Go value of type map[string]interface {}");
    kapi_error_free(err);
    err = kapi_patch_parse(&out, KAPI_PATCH_STRATEGIC, "{\"a\":]}", 7, true);
    CHECK_STR_EQ(err->message, "invalid character ']' looking for beginning of value");
    CHECK_INT_EQ(kapi_status_code(err->status), 400);
    kapi_error_free(err);

    kapi_registry *reg = NULL;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_schema *s =
        kapi_schema_set_get(kapi_registry_schemas(reg), "io.k8s.api.batch.v1.CronJob");
    json_t *doc = patch_test_json("{'metadata':{'finalizers':[],'x':{'l':[1,2],'m':{'a':1}}}}");
    json_t *null_patch = json_null();
    CHECK(kapi_patch_strategic(&doc, null_patch, s) == NULL);
    json_decref(null_patch);
    json_t *patch = patch_test_json("{'metadata':{'finalizers':[{'a':1}]}}");
    err = kapi_patch_strategic(&doc, patch, s);
    CHECK_STR_EQ(err->message, "cannot merge lists without merge key for string");
    kapi_error_free(err);
    json_decref(patch);
    patch = patch_test_json("{'metadata':{'finalizers':['a','b','a'],'x':{'l':[3],'m':{'b':2,"
                            "'a':null}}}}");
    json_t *want = patch_test_json("{'metadata':{'finalizers':['a','b'],'x':{'l':[3],"
                                   "'m':{'b':2}}}}");
    CHECK(kapi_patch_strategic(&doc, patch, s) == NULL);
    CHECK(patch_test_same(doc, want, "unknown field"));
    json_decref(want);
    json_decref(patch);
    json_decref(doc);
    kapi_registry_free(reg);
}
