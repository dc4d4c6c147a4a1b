/* JSON patch: the RFC 6902 suite (../shared/testdata/json-patch: tests.json and
 * spec_tests.json) through kapi_patch_json, where a case that expects an error only has to
 * fail; the cases where evanphx/json-patch v4 (kube-apiserver's library) answers otherwise
 * than the RFC are skipped with their reason. Then evanphx's messages and kube-apiserver's
 * answers, word for word (the golden corpus's cj-patch-json-* ids). */
#include "patch/patch_int.h"
#include "patch_test.h"
#include "test.h"

#define ROOT_ADD "evanphx v4 cannot add at the root: the path \"\" leads to no container"

/* Cases where evanphx v4 departs from the RFC, each named by its comment (or error). */
static const struct {
    const char *file;
    size_t index;
    const char *text, *why;
} evanphx_differs[] = {
    {"tests.json", 11, "replace object document with array document?", ROOT_ADD},
    {"tests.json", 12, "replace array document with object document?", ROOT_ADD},
    {"tests.json", 19, "Out of bounds (lower)",
     "evanphx counts a negative index from the end (SupportNegativeIndices): -1 appends"},
    {"tests.json", 63, "replacing the root of the document is possible with add", ROOT_ADD},
    {"tests.json", 77, "missing 'value' parameter to add", "evanphx adds null for a missing value"},
    {"tests.json", 78, "missing 'value' parameter to replace",
     "evanphx replaces with null for a missing value"},
    {"tests.json", 82, "missing from location to copy",
     "evanphx reads a missing member as nil and copies null"},
    {"tests.json", 87, "test with bad array number that has leading zeros",
     "evanphx reads indices with strconv.Atoi, which takes leading zeros"},
    {"tests.json", 88, "test with bad array number that has leading zeros",
     "evanphx reads indices with strconv.Atoi, which takes leading zeros"},
};

static const char *skip_reason(const char *file, size_t index)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(evanphx_differs); i++)
        if (strcmp(evanphx_differs[i].file, file) == 0 && evanphx_differs[i].index == index)
            return evanphx_differs[i].why;
    return NULL;
}

typedef struct counts {
    int total, passed, disabled, differs, failed;
} counts;

/* One record: an expected error must be an error; an expected document must come out. */
static bool run_record(const json_t *r, const char *where)
{
    json_t *doc = json_deep_copy(json_object_get(r, "doc"));
    kapi_error *err = kapi_patch_json(&doc, json_object_get(r, "patch"));
    bool ok;
    if (json_object_get(r, "error"))
        ok = err != NULL;
    else if (err)
        ok = false, printf("  %s: %s\n", where, err->message);
    else
        ok = !json_object_get(r, "expected") ||
             patch_test_same(doc, json_object_get(r, "expected"), where);
    if (!ok && json_object_get(r, "error"))
        printf("  %s: succeeded, expected an error\n", where);
    kapi_error_free(err);
    json_decref(doc);
    return ok;
}

static void run_file(const char *file, counts *n)
{
    char *rel = kapi_xprintf("json-patch/%s", file);
    json_t *records = patch_test_load(rel), *r;
    size_t i;
    json_array_foreach(records, i, r)
    {
        n->total++;
        if (json_is_true(json_object_get(r, "disabled")) || !json_object_get(r, "doc")) {
            n->disabled++;
            continue;
        }
        if (skip_reason(file, i)) {
            n->differs++;
            continue;
        }
        char *where = kapi_xprintf("%s[%zu]", file, i);
        if (run_record(r, where))
            n->passed++;
        else
            n->failed++;
        free(where);
    }
    json_decref(records);
    free(rel);
}

TEST(patch_json_suite)
{
    counts n = {0};
    run_file("tests.json", &n);
    run_file("spec_tests.json", &n);
    printf("  json-patch: %d of %d passed, %d failed; skipped %d disabled, %d where evanphx v4 "
           "differs\n",
           n.passed, n.total, n.failed, n.disabled, n.differs);
    CHECK_INT_EQ(n.failed, 0);
}

/* Each skip names a record that is still there, by its comment or error. */
TEST(patch_json_skips_are_current)
{
    for (size_t k = 0; k < KAPI_ARRAY_LEN(evanphx_differs); k++) {
        char *rel = kapi_xprintf("json-patch/%s", evanphx_differs[k].file);
        json_t *records = patch_test_load(rel);
        json_t *r = json_array_get(records, evanphx_differs[k].index);
        const char *comment = json_string_value(json_object_get(r, "comment"));
        const char *error = json_string_value(json_object_get(r, "error"));
        const char *text = comment ? comment : error;
        CHECK_STR_EQ(text, evanphx_differs[k].text);
        json_decref(records);
        free(rel);
    }
}

/* evanphx's message for applying patch to doc (both test literals), or "" on success. */
static char *why(const char *doc, const char *patch)
{
    json_t *d = patch_test_json(doc), *p = patch_test_json(patch);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_patch__json_apply(&d, p, &b);
    json_decref(d);
    json_decref(p);
    return kapi_buf_detach(&b, NULL);
}

#define CHECK_WHY(doc, patch, want)                                                                \
    do {                                                                                           \
        char *got_ = why(doc, patch);                                                              \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

TEST(patch_json_evanphx_messages)
{
    const char *cj = "{'spec':{'schedule':'* * * * *','list':['a','b']}}";
    CHECK_WHY(cj, "[{'op':'test','path':'/spec/schedule','value':'nope'}]",
              "testing value /spec/schedule failed: test failed");
    CHECK_WHY(cj, "[{'op':'remove','path':'/spec/nothing'}]",
              "error in remove for path: '/spec/nothing': Unable to remove nonexistent key: "
              "nothing: missing value");
    CHECK_WHY(cj, "[{'op':'add','path':'/spec/x/y','value':1}]",
              "add operation does not apply: doc is missing path: \"/spec/x/y\": missing value");
    CHECK_WHY(cj, "[{'op':'remove','path':'/spec/x/y'}]",
              "remove operation does not apply: doc is missing path: \"/spec/x/y\": missing value");
    CHECK_WHY(cj, "[{'op':'replace','path':'/spec/x/y','value':1}]",
              "replace operation does not apply: doc is missing path: /spec/x/y: missing value");
    CHECK_WHY(cj, "[{'op':'replace','path':'/spec/list/2','value':1}]",
              "replace operation does not apply: doc is missing key: /spec/list/2: missing value");
    CHECK_WHY(cj, "[{'op':'test','path':'/spec/x/y','value':1}]",
              "test operation does not apply: is missing path: /spec/x/y: missing value");
    CHECK_WHY(cj, "[{'op':'add','path':'/spec/list/5','value':1}]",
              "error in add for path: '/spec/list/5': Unable to access invalid index: 5: invalid "
              "index referenced");
    CHECK_WHY(cj, "[{'op':'add','path':'/spec/list/x','value':1}]",
              "error in add for path: '/spec/list/x': value was not a proper array index: 'x': "
              "strconv.Atoi: parsing \"x\": invalid syntax");
    CHECK_WHY(cj, "[{'op':'remove','path':'/spec/list/99999999999999999999'}]",
              "error in remove for path: '/spec/list/99999999999999999999': strconv.Atoi: parsing "
              "\"99999999999999999999\": value out of range");
    CHECK_WHY(cj, "[{'op':'move','from':'/spec/x','path':'/spec/y'}]",
              "error in move for path: 'x': Unable to remove nonexistent key: x: missing value");
    CHECK_WHY(cj, "[{'op':'copy','from':'/spec/x/y','path':'/spec/y'}]",
              "copy operation does not apply: doc is missing from path: /spec/x/y: missing value");
    CHECK_WHY(cj, "[{'op':'move','from':'/spec','path':'/spec/inner'}]",
              "move operation does not apply: doc is missing destination path: /spec/inner: "
              "missing value");
    CHECK_WHY(cj, "[{'op':'add','value':1}]", "add operation failed to decode path: missing value");
    CHECK_WHY(cj, "[{'op':'replace','path':1,'value':1}]",
              "replace operation failed to decode path: json: cannot unmarshal number into Go "
              "value of type string");
    CHECK_WHY(cj, "[{'op':'move','path':'/a'}]",
              "move operation failed to decode from: operation, missing from field: missing value");
    CHECK_WHY(cj, "[{'op':'test','value':1}]",
              "test operation failed to decode path: operation missing path field: missing value");
    CHECK_WHY(cj, "[{'op':'spam','path':'/a'}]", "Unexpected kind: spam");
    CHECK_WHY(cj, "[{'path':'/a'}]", "Unexpected kind: unknown");
}

/* The quirks patch.h promises, each as evanphx v4 behaves. */
TEST(patch_json_evanphx_quirks)
{
    static const struct {
        const char *doc, *patch, *want;
    } cases[] = {
        {"{'a':{'b':1}}", "[{'op':'add','path':'x/c','value':2}]", "{'a':{'b':1},'c':2}"},
        {"{'a':[1,2,3]}", "[{'op':'remove','path':'/a/-1'}]", "{'a':[1,2]}"},
        {"{'a':[1,2,3]}", "[{'op':'add','path':'/a/+1','value':9}]", "{'a':[1,9,2,3]}"},
        {"{'a':1}", "[{'op':'replace','path':'/b','value':2}]", "{'a':1,'b':2}"},
        {"{'a':1}", "[{'op':'copy','from':'/x','path':'/b'}]", "{'a':1,'b':null}"},
        {"{'a':1}", "[{'op':'add','path':'/b'}]", "{'a':1,'b':null}"},
        {"{'a':1}", "[{'op':'test','path':'/x','value':null}]", "{'a':1}"},
        {"{'a':1}", "[{'op':'replace','path':'','value':5}]", "{'a':1}"},
        {"{'a':1}", "[{'op':'replace','path':'','value':[1]}]", "[1]"},
        {"{'~1':{'/':1}}", "[{'op':'move','from':'/~01/~1','path':'/~0'}]", "{'~1':{},'~':1}"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *doc = patch_test_json(cases[i].doc), *patch = patch_test_json(cases[i].patch);
        json_t *want = patch_test_json(cases[i].want);
        kapi_error *err = kapi_patch_json(&doc, patch);
        CHECK(err == NULL);
        CHECK(patch_test_same(doc, want, cases[i].patch));
        json_decref(doc);
        json_decref(patch);
        json_decref(want);
    }
}

/* kube-apiserver's answers: a failed operation is a 422 with the generic message and empty
 * details (golden cj-patch-json-test-fail, cj-patch-json-remove-missing); a patch that is
 * not a list is a 400 (cj-patch-json-not-array with the default fieldValidation). */
TEST(patch_json_kube_answers)
{
    json_t *doc = patch_test_json("{'spec':{'schedule':'x'}}");
    json_t *patch = patch_test_json("[{'op':'add','path':'/spec/a','value':1},"
                                    "{'op':'test','path':'/spec/schedule','value':'nope'}]");
    kapi_error *err = kapi_patch_json(&doc, patch);
    CHECK(err != NULL);
    CHECK_INT_EQ(kapi_status_code(err->status), 422);
    CHECK_STR_EQ(kapi_status_reason(err->status), "Invalid");
    CHECK_STR_EQ(err->message, "the server rejected our request due to an error in our request");
    CHECK(err->has_details && !err->name && !err->kind && err->ncauses == 0);
    kapi_error_free(err); /* the document is of no use now: the caller drops it */
    json_decref(patch);

    const char *body = "{\"op\": \"add\"}";
    json_t *parsed = NULL;
    err = kapi_patch_parse(&parsed, KAPI_PATCH_JSON, body, strlen(body), true);
    CHECK(err != NULL && parsed == NULL);
    CHECK_INT_EQ(kapi_status_code(err->status), 400);
    CHECK_STR_EQ(err->message, "error decoding patch: json: cannot unmarshal object into Go value "
                               "of type []handlers.jsonPatchOp");
    kapi_error_free(err);

    CHECK(kapi_patch_parse(&parsed, KAPI_PATCH_JSON, body, strlen(body), false) == NULL);
    err = kapi_patch_json(&doc, parsed);
    CHECK_STR_EQ(err->message,
                 "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
    kapi_error_free(err);
    json_decref(parsed);
    json_decref(doc);
}

TEST(patch_json_decode_errors)
{
    static const struct {
        const char *body;
        bool strict;
        const char *want;
    } cases[] = {
        {"[{\"op\": 1}]", true,
         "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op "
         "of type string"},
        {"[1]", true,
         "error decoding patch: json: cannot unmarshal number into Go value of type "
         "handlers.jsonPatchOp"},
        {"[", true, "error decoding patch: unexpected end of JSON input"},
        {"]1", false, "invalid character ']' looking for beginning of value"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *out = NULL;
        kapi_error *err = kapi_patch_parse(&out, KAPI_PATCH_JSON, cases[i].body,
                                           strlen(cases[i].body), cases[i].strict);
        CHECK(err != NULL);
        CHECK_STR_EQ(err->message, cases[i].want);
        kapi_error_free(err);
    }
    json_t *doc = patch_test_json("{}"), *patch = patch_test_json("[{'op':'add'},2]");
    kapi_error *err = kapi_patch_json(&doc, patch);
    CHECK_STR_EQ(err->message, "json: cannot unmarshal number into Go value of type "
                               "jsonpatch.Operation");
    kapi_error_free(err);
    json_decref(patch);
    json_decref(doc);
}

/* The limits: 10000 operations (413), 3 MiB of copies, KAPI_PATCH_MAX_DEPTH levels. */
TEST(patch_json_limits)
{
    json_t *doc = patch_test_json("{'a':'x'}"), *patch = json_array();
    for (int i = 0; i < 10001; i++)
        json_array_append_new(patch, patch_test_json("{'op':'test','path':'/a','value':'x'}"));
    kapi_error *err = kapi_patch_json(&doc, patch);
    CHECK_INT_EQ(kapi_status_code(err->status), 413);
    CHECK_STR_EQ(err->message, "Request entity too large: The allowed maximum operations in a "
                               "JSON patch is 10000, got 10001");
    kapi_error_free(err);
    json_decref(patch);

    char *big = kapi_xmalloc(1024 * 1024 + 1);
    memset(big, 'x', 1024 * 1024);
    big[1024 * 1024] = '\0';
    json_object_set_new(doc, "big", json_string(big));
    free(big);
    patch = json_array();
    for (int i = 0; i < 4; i++)
        json_array_append_new(patch, patch_test_json("{'op':'copy','from':'/big','path':'/c'}"));
    kapi_buf b;
    kapi_buf_init(&b);
    CHECK(!kapi_patch__json_apply(&doc, patch, &b));
    CHECK_STR_EQ(b.ptr, "Unable to complete the copy, the accumulated size increase of copy is "
                        "3145734, exceeding the limit 3145728");
    kapi_buf_dispose(&b);
    json_decref(patch);

    /* {'a':{'a':...}} 2047 deep, then copied into itself: too deep. */
    json_t *deep = json_object();
    for (int i = 0; i < 2046; i++) {
        json_t *up = json_object();
        json_object_set_new(up, "a", deep);
        deep = up;
    }
    json_decref(doc);
    doc = json_object();
    json_object_set_new(doc, "a", deep);
    patch = patch_test_json("[{'op':'copy','from':'/a','path':'/a/b'}]");
    err = kapi_patch_json(&doc, patch);
    CHECK(err != NULL);
    kapi_error_free(err);
    json_decref(patch);
    patch = patch_test_json("[{'op':'copy','from':'/a/a','path':'/b'}]");
    CHECK(kapi_patch_json(&doc, patch) == NULL);
    json_decref(patch);
    json_decref(doc);
}
