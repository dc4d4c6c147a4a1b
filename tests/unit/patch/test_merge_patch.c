/* Merge patch: the RFC 7396 cases (../shared/testdata/json-merge-patch: Appendix A and the
 * two examples of the RFC's body) through kapi_patch_merge, less the two where
 * evanphx/json-patch's MergePatch, and so kube-apiserver, refuses the patch; then the
 * library's own behaviour and kube-apiserver's answers. */
#include "patch/patch.h"
#include "patch_test.h"
#include "test.h"

#define NOT_OBJECT                                                                                 \
    "evanphx's MergePatch answers a patch that is neither an object nor an array "                 \
    "with ErrBadJSONPatch (kube-apiserver: 400 \"Invalid JSON Patch\")"

/* Cases where evanphx departs from the RFC: file, index, and why. */
static const struct {
    const char *file;
    size_t index;
    const char *why;
} evanphx_differs[] = {
    {"rfc7396-appendix-a.json", 10, NOT_OBJECT " (here null)"},
    {"rfc7396-appendix-a.json", 11, NOT_OBJECT " (here a string)"},
};

static const char *skip_reason(const char *file, size_t index)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(evanphx_differs); i++)
        if (strcmp(evanphx_differs[i].file, file) == 0 && evanphx_differs[i].index == index)
            return evanphx_differs[i].why;
    return NULL;
}

static void run_file(const char *file, int *passed, int *failed, int *skipped)
{
    char *rel = kapi_xprintf("json-merge-patch/%s", file);
    json_t *cases = patch_test_load(rel), *c;
    size_t i;
    json_array_foreach(cases, i, c)
    {
        if (skip_reason(file, i)) {
            (*skipped)++;
            continue;
        }
        char *where = kapi_xprintf("%s[%zu]", file, i);
        json_t *doc = json_deep_copy(json_object_get(c, "original"));
        kapi_error *err = kapi_patch_merge(&doc, json_object_get(c, "patch"));
        bool ok = !err && patch_test_same(doc, json_object_get(c, "result"), where);
        if (err)
            printf("  %s: %s\n", where, err->message);
        *passed += ok;
        *failed += !ok;
        kapi_error_free(err);
        json_decref(doc);
        free(where);
    }
    json_decref(cases);
    free(rel);
}

TEST(patch_merge_suite)
{
    int passed = 0, failed = 0, skipped = 0;
    run_file("rfc7396-appendix-a.json", &passed, &failed, &skipped);
    run_file("rfc7396-body-examples.json", &passed, &failed, &skipped);
    printf("  json-merge-patch: %d passed, %d failed, %d skipped where evanphx differs\n", passed,
           failed, skipped);
    CHECK_INT_EQ(failed, 0);
    CHECK_INT_EQ(passed, 15);
}

TEST(patch_merge_skips_are_current)
{
    for (size_t k = 0; k < KAPI_ARRAY_LEN(evanphx_differs); k++) {
        char *rel = kapi_xprintf("json-merge-patch/%s", evanphx_differs[k].file);
        json_t *cases = patch_test_load(rel);
        json_t *patch = json_object_get(json_array_get(cases, evanphx_differs[k].index), "patch");
        CHECK(patch && !json_is_object(patch) && !json_is_array(patch));
        json_decref(cases);
        free(rel);
    }
}

/* evanphx's null pruning: values added whole lose their nulls (in lists' objects too); a
 * list or a scalar that replaces an object keeps them. */
TEST(patch_merge_nulls)
{
    static const struct {
        const char *doc, *patch, *want;
    } cases[] = {
        {"{}", "{'a':[{'x':null,'y':1},null]}", "{'a':[{'y':1},null]}"},
        {"{'a':'s'}", "{'a':{'x':null,'y':{'z':null}}}", "{'a':{'y':{}}}"},
        {"{'a':{'b':1}}", "{'a':[{'x':null}]}", "{'a':[{'x':null}]}"},
        {"{'a':null}", "{'a':{'x':null,'y':2}}", "{'a':{'y':2}}"},
        {"{'a':1}", "[{'x':null},null]", "[{},null]"},
        {"['x']", "{'a':null,'b':{'c':null}}", "{'b':{}}"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *doc = patch_test_json(cases[i].doc), *patch = patch_test_json(cases[i].patch);
        json_t *want = patch_test_json(cases[i].want);
        CHECK(kapi_patch_merge(&doc, patch) == NULL);
        CHECK(patch_test_same(doc, want, cases[i].patch));
        json_decref(doc);
        json_decref(patch);
        json_decref(want);
    }
}

static void check_error(kapi_error *err, int code, const char *reason, const char *message)
{
    CHECK(err != NULL);
    CHECK_INT_EQ(kapi_status_code(err->status), code);
    CHECK_STR_EQ(kapi_status_reason(err->status), reason);
    CHECK_STR_EQ(err->message, message);
    kapi_error_free(err);
}

/* kube-apiserver's 400s for a merge patch it cannot use, by fieldValidation. */
TEST(patch_merge_kube_answers)
{
    json_t *doc = patch_test_json("{'a':1}"), *patch = json_null(), *out = NULL;
    check_error(kapi_patch_merge(&doc, patch), 400, "BadRequest", "Invalid JSON Patch");
    json_decref(patch);
    patch = json_string("x");
    check_error(kapi_patch_merge(&doc, patch), 400, "BadRequest", "Invalid JSON Patch");
    json_decref(patch);
    json_t *null_doc = json_null();
    patch = patch_test_json("{}");
    check_error(kapi_patch_merge(&null_doc, patch), 500, "", "Invalid JSON Document");
    json_decref(null_doc);
    json_decref(patch);

    check_error(kapi_patch_parse(&out, KAPI_PATCH_MERGE, "[1]", 3, true), 400, "BadRequest",
                "error decoding patch: json: cannot unmarshal array into Go value of type "
                "map[string]interface {}");
    check_error(kapi_patch_parse(&out, KAPI_PATCH_MERGE, "{", 1, true), 400, "BadRequest",
                "error decoding patch: unexpected end of JSON input");
    check_error(kapi_patch_parse(&out, KAPI_PATCH_MERGE, "{", 1, false), 400, "BadRequest",
                "Invalid JSON Patch");
    CHECK(kapi_patch_parse(&out, KAPI_PATCH_MERGE, "[1]", 3, false) == NULL);
    CHECK(kapi_patch_merge(&doc, out) == NULL);
    CHECK(json_is_array(doc));
    json_decref(out);
    json_decref(doc);
}

/* golden ns-patch-merge, cj-patch-merge-list: labels merge, a list is replaced whole. */
TEST(patch_merge_golden)
{
    json_t *doc = patch_test_json(
        "{'metadata':{'name':'cj','labels':{'app':'web'}},'spec':{'schedule':'* * * * *',"
        "'jobTemplate':{'spec':{'template':{'spec':{'containers':[{'name':'main','image':'a'}]}}}}}"
        "}");
    json_t *patch = patch_test_json(
        "{'metadata':{'labels':{'tier':'backend'}},'spec':{'jobTemplate':{'spec':{'template':"
        "{'spec':{'containers':[{'name':'c','image':'busybox'},{'name':'d','image':'nginx'}]}}}}}"
        "}");
    json_t *want = patch_test_json(
        "{'metadata':{'name':'cj','labels':{'app':'web','tier':'backend'}},'spec':{'schedule':"
        "'* * * * *','jobTemplate':{'spec':{'template':{'spec':{'containers':[{'name':'c',"
        "'image':'busybox'},{'name':'d','image':'nginx'}]}}}}}}");
    CHECK(kapi_patch_merge(&doc, patch) == NULL);
    CHECK(patch_test_same(doc, want, "cj-patch-merge-list"));
    json_decref(doc);
    json_decref(patch);
    json_decref(want);
}
