/*
 * Unit tests for the list verb (api/list.c) over an api_env server: limit and continue
 * (the token's contents, the snapshot a later page reads), the resourceVersion and
 * resourceVersionMatch rules and their errors, label and field selectors, the Table and
 * PartialObjectMetadataList forms, a list too big for one buffer streamed in chunks, and
 * the 410s of reads at a revision that has left the history window.
 */
#include <unistd.h>

#include "api_call.h"
#include "test.h"

#define CRONJOBS "/apis/batch/v1/namespaces/default/cronjobs"

static void env_start(api_env *e)
{
    api_env_start(e);
    CHECK(kapi_namespace_ensure(e->api, "default") == NULL);
}

/* Creates the CronJob name (metadata extra as api_cronjob's) and returns its revision. */
static long long create(api_env *e, const char *name, const char *meta_extra)
{
    api_answer a;
    char *body = api_cronjob(name, meta_extra);
    CHECK_INT_EQ(api_call(e, "POST", CRONJOBS, "", body, &a), 201);
    long long rev = atoll(api_str(&a, "metadata.resourceVersion"));
    api_answer_dispose(&a);
    free(body);
    return rev;
}

/* The names of a list's items, comma-separated, into out. */
static const char *names(const api_answer *a, char *out, size_t size)
{
    size_t i, n = 0;
    json_t *item;
    out[0] = '\0';
    json_array_foreach(json_object_get(a->json, "items"), i, item)
    {
        n += (size_t)snprintf(out + n, size - n, "%s%s", i ? "," : "",
                              kapi_json_path_str(item, "metadata.name"));
    }
    return out;
}

/* GETs path and checks the status and the names of the items. */
static void check_list(api_env *e, const char *path, int status, const char *want)
{
    api_answer a;
    char got[256];
    CHECK_INT_EQ(api_call(e, "GET", path, "", NULL, &a), status);
    CHECK_STR_EQ(names(&a, got, sizeof(got)), want);
    api_answer_dispose(&a);
}

/* GETs path and checks the Status error: code, reason and message. */
static void check_error(api_env *e, const char *path, int status, const char *reason,
                        const char *message)
{
    api_answer a;
    CHECK_INT_EQ(api_call(e, "GET", path, "", NULL, &a), status);
    CHECK_STR_EQ(api_str(&a, "kind"), "Status");
    CHECK_INT_EQ(api_int(&a, "code"), status);
    if (reason)
        CHECK_STR_EQ(api_str(&a, "reason"), reason);
    else
        CHECK(json_object_get(a.json, "reason") == NULL);
    CHECK_STR_EQ(api_str(&a, "message"), message);
    api_answer_dispose(&a);
}

TEST(api_list_pages_continue_at_their_snapshot)
{
    api_env e = {0};
    api_answer a;
    char path[512], got[256];
    env_start(&e);
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "c%d", i);
        create(&e, name, "");
    }
    long long rev = kapi_store_revision(e.store);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?limit=2", "", NULL, &a), 200);
    CHECK_STR_EQ(api_str(&a, "kind"), "CronJobList");
    CHECK_STR_EQ(names(&a, got, sizeof(got)), "c0,c1");
    CHECK_INT_EQ(atoll(api_str(&a, "metadata.resourceVersion")), rev);
    CHECK_INT_EQ(api_int(&a, "metadata.remainingItemCount"), 3);
    /* the token is kube-apiserver's: the revision and the key after which to go on */
    char *token = kapi_xstrdup(api_str(&a, "metadata.continue"));
    kapi_buf raw;
    kapi_buf_init(&raw);
    CHECK(kapi_base64_decode(token, strlen(token), KAPI_BASE64_URL | KAPI_BASE64_RAW, &raw) < 0);
    char want[128];
    snprintf(want, sizeof(want), "{\"v\":\"meta.k8s.io/v1\",\"rv\":%lld,\"start\":\"c1\\u0000\"}",
             rev);
    CHECK_STR_EQ(raw.ptr, want);
    kapi_buf_dispose(&raw);
    snprintf(path, sizeof(path), CRONJOBS "?limit=2&continue=%s", token);
    api_answer_dispose(&a);

    /* a write after the first page is not seen by the later ones */
    create(&e, "c5", "");
    CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 200);
    CHECK_STR_EQ(names(&a, got, sizeof(got)), "c2,c3");
    CHECK_INT_EQ(atoll(api_str(&a, "metadata.resourceVersion")), rev);
    CHECK_INT_EQ(api_int(&a, "metadata.remainingItemCount"), 1);
    snprintf(path, sizeof(path), CRONJOBS "?limit=2&continue=%s", api_str(&a, "metadata.continue"));
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 200);
    CHECK_STR_EQ(names(&a, got, sizeof(got)), "c4");
    CHECK(kapi_json_path(a.json, "metadata.continue") == NULL);
    CHECK(kapi_json_path(a.json, "metadata.remainingItemCount") == NULL);
    api_answer_dispose(&a);

    /* the continue token carries the revision: no other may be named */
    snprintf(path, sizeof(path), CRONJOBS "?limit=2&continue=%s&resourceVersion=%lld", token, rev);
    check_error(&e, path, 400, "BadRequest",
                "specifying resource version is not allowed when using continue");
    check_error(&e, CRONJOBS "?limit=2&continue=garbage", 400, "BadRequest",
                "invalid continue token: continue key is not valid: invalid character '\\u0081' "
                "looking for beginning of value");
    free(token);
    api_env_stop(&e);
}

TEST(api_list_resource_version_rules)
{
    api_env e = {0};
    api_answer a;
    char path[256];
    env_start(&e);
    long long first = create(&e, "a", "");
    create(&e, "b", "");
    long long latest = kapi_store_revision(e.store);

    /* Exact: the state at that revision, whatever came after */
    snprintf(path, sizeof(path), CRONJOBS "?resourceVersion=%lld&resourceVersionMatch=Exact",
             first);
    CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 200);
    CHECK_INT_EQ(atoll(api_str(&a, "metadata.resourceVersion")), first);
    CHECK_INT_EQ(json_array_size(json_object_get(a.json, "items")), 1);
    api_answer_dispose(&a);
    /* NotOlderThan: the latest state */
    snprintf(path, sizeof(path), CRONJOBS "?resourceVersion=%lld&resourceVersionMatch=NotOlderThan",
             first);
    CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 200);
    CHECK_INT_EQ(atoll(api_str(&a, "metadata.resourceVersion")), latest);
    CHECK_INT_EQ(json_array_size(json_object_get(a.json, "items")), 2);
    api_answer_dispose(&a);
    /* a resourceVersion with a limit and no match is exact */
    snprintf(path, sizeof(path), CRONJOBS "?resourceVersion=%lld&limit=5", first);
    check_list(&e, path, 200, "a");
    /* "0": any state, served whole whatever the limit */
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?resourceVersion=0&limit=1", "", NULL, &a), 200);
    CHECK_INT_EQ(json_array_size(json_object_get(a.json, "items")), 2);
    CHECK(kapi_json_path(a.json, "metadata.continue") == NULL);
    api_answer_dispose(&a);

    check_error(&e, CRONJOBS "?resourceVersionMatch=NotOlderThan", 422, "Invalid",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                "resourceVersionMatch is forbidden unless resourceVersion is provided");
    check_error(&e, CRONJOBS "?resourceVersion=0&resourceVersionMatch=Exact", 422, "Invalid",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
    check_error(&e, CRONJOBS "?resourceVersion=1&resourceVersionMatch=Bogus", 422, "Invalid",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: "
                "\"Bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\"");
    CHECK_INT_EQ(
        api_call(&e, "GET", CRONJOBS "?resourceVersion=1&resourceVersionMatch=Bogus", "", NULL, &a),
        422);
    CHECK_STR_EQ(api_str(&a, "details.kind"), "ListOptions");
    CHECK_STR_EQ(api_str(&a, "details.group"), "meta.k8s.io");
    json_t *cause = json_array_get(kapi_json_path(a.json, "details.causes"), 0);
    CHECK_STR_EQ(kapi_json_path_str(cause, "reason"), "FieldValueNotSupported");
    CHECK_STR_EQ(kapi_json_path_str(cause, "field"), "resourceVersionMatch");
    api_answer_dispose(&a);
    check_error(&e, CRONJOBS "?resourceVersion=abc", 400, "BadRequest",
                "invalid resource version: resourceVersion: Invalid value: \"abc\": "
                "strconv.ParseUint: parsing \"abc\": invalid syntax");
    check_error(&e, CRONJOBS "?resourceVersion=-1", 400, "BadRequest",
                "invalid resource version: resourceVersion: Invalid value: \"-1\": "
                "strconv.ParseUint: parsing \"-1\": invalid syntax");
    check_error(&e, CRONJOBS "?resourceVersion=99999999999999999999", 400, "BadRequest",
                "invalid resource version: resourceVersion: Invalid value: "
                "\"99999999999999999999\": strconv.ParseUint: parsing \"99999999999999999999\": "
                "value out of range");
    check_error(&e, CRONJOBS "?limit=x", 400, "BadRequest",
                "strconv.ParseInt: parsing \"x\": invalid syntax");
    check_list(&e, CRONJOBS "?limit=-3", 200, "a,b"); /* a negative limit is no limit */
    api_env_stop(&e);
}

TEST(api_list_selectors)
{
    api_env e = {0};
    api_answer a;
    char got[256];
    env_start(&e);
    create(&e, "a", "\"labels\":{\"app\":\"web\",\"tier\":\"front\"}");
    create(&e, "b", "\"labels\":{\"app\":\"db\"}");
    create(&e, "c", "\"labels\":{\"app\":\"web\"}");
    create(&e, "d", "");
    check_list(&e, CRONJOBS "?labelSelector=app%3Dweb", 200, "a,c");
    check_list(&e, CRONJOBS "?labelSelector=app%20in%20(web,db),tier!%3Dfront", 200, "b,c");
    check_list(&e, CRONJOBS "?labelSelector=!app", 200, "d");
    check_list(&e, CRONJOBS "?labelSelector=app", 200, "a,b,c");
    check_list(&e, CRONJOBS "?fieldSelector=metadata.name%3Db", 200, "b");
    check_list(&e, CRONJOBS "?fieldSelector=metadata.name!%3Db&labelSelector=app%3Dweb", 200,
               "a,c");
    check_list(&e, "/apis/batch/v1/cronjobs?fieldSelector=metadata.namespace%3Ddefault", 200,
               "a,b,c,d");
    check_list(&e, "/apis/batch/v1/cronjobs?fieldSelector=metadata.namespace%3Dother", 200, "");
    /* a filtered page: a continue token, no remainingItemCount */
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?labelSelector=app%3Dweb&limit=1", "", NULL, &a),
                 200);
    CHECK_STR_EQ(names(&a, got, sizeof(got)), "a");
    CHECK(api_str(&a, "metadata.continue") != NULL);
    CHECK(kapi_json_path(a.json, "metadata.remainingItemCount") == NULL);
    api_answer_dispose(&a);
    check_error(&e, CRONJOBS "?labelSelector=a%20b", 400, "BadRequest",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
    check_error(&e, CRONJOBS "?fieldSelector=spec.schedule%3Dx", 400, "BadRequest",
                "\"spec.schedule\" is not a known field selector: only \"metadata.name\", "
                "\"metadata.namespace\"");
    check_error(&e, "/api/v1/namespaces?fieldSelector=spec.foo%3Dbar", 400, "BadRequest",
                "field label not supported: spec.foo");
    api_env_stop(&e);
}

#define AS_TABLE "Accept: application/json;as=Table;g=meta.k8s.io;v=v1\r\n"
#define AS_METADATA "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1\r\n"

TEST(api_list_table_and_metadata_forms)
{
    api_env e = {0};
    api_answer a;
    env_start(&e);
    create(&e, "a", "\"labels\":{\"app\":\"web\"}");
    create(&e, "b", "\"labels\":{\"app\":\"db\"}");
    create(&e, "c", "\"labels\":{\"app\":\"web\"}");
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?labelSelector=app%3Dweb", AS_TABLE, NULL, &a), 200);
    CHECK_STR_EQ(api_str(&a, "kind"), "Table");
    CHECK_STR_EQ(api_str(&a, "apiVersion"), "meta.k8s.io/v1");
    /* kube-apiserver names the form in the body only */
    CHECK_STR_EQ(resp_header(&(http_resp){.head = a.head}, "content-type"), "application/json");
    json_t *cols = json_object_get(a.json, "columnDefinitions");
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(cols, 0), "name"), "Name");
    CHECK_STR_EQ(kapi_json_path_str(json_array_get(cols, 1), "name"), "Schedule");
    json_t *rows = json_object_get(a.json, "rows");
    CHECK_INT_EQ(json_array_size(rows), 2);
    json_t *row = json_array_get(rows, 1);
    CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(row, "cells"), 0)), "c");
    CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(row, "cells"), 1)), "0 3 29 2 *");
    /* the default includeObject is metadata: a PartialObjectMetadata per row */
    CHECK_STR_EQ(kapi_json_path_str(row, "object.kind"), "PartialObjectMetadata");
    CHECK_STR_EQ(kapi_json_path_str(row, "object.metadata.name"), "c");
    CHECK(kapi_json_path(row, "object.spec") == NULL);
    api_answer_dispose(&a);

    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?limit=2", AS_METADATA, NULL, &a), 200);
    CHECK_STR_EQ(api_str(&a, "kind"), "PartialObjectMetadataList");
    CHECK_STR_EQ(api_str(&a, "apiVersion"), "meta.k8s.io/v1");
    CHECK(api_str(&a, "metadata.continue") != NULL);
    CHECK_INT_EQ(api_int(&a, "metadata.remainingItemCount"), 1);
    json_t *items = json_object_get(a.json, "items");
    CHECK_INT_EQ(json_array_size(items), 2);
    json_t *item = json_array_get(items, 1);
    CHECK_STR_EQ(kapi_json_path_str(item, "kind"), "PartialObjectMetadata");
    CHECK_STR_EQ(kapi_json_path_str(item, "apiVersion"), "meta.k8s.io/v1");
    CHECK_STR_EQ(kapi_json_path_str(item, "metadata.name"), "b");
    CHECK_STR_EQ(kapi_json_path_str(item, "metadata.labels.app"), "db");
    CHECK(json_object_get(item, "spec") == NULL);
    api_answer_dispose(&a);
    api_env_stop(&e);
}

/* A list bigger than the api's 1 MiB buffer goes out chunked, part by part; its items are
 * those of the pages of a paged list, each small enough to go whole. */
TEST(api_list_streamed_equals_paged)
{
    enum { N = 12, PAGE = 4 };
    api_env e = {0};
    api_answer whole, page, table;
    char *note = kapi_xmalloc(150 << 10);
    char path[512];
    memset(note, 'x', (150 << 10) - 1);
    note[(150 << 10) - 1] = '\0';
    env_start(&e);
    for (int i = 0; i < N; i++) {
        char name[8];
        snprintf(name, sizeof(name), "c%02d", i);
        char *extra = kapi_xprintf("\"annotations\":{\"note\":\"%d%s\"}", i, note);
        create(&e, name, extra);
        free(extra);
    }
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS, "", NULL, &whole), 200);
    CHECK(whole.body.len > (1u << 20));
    CHECK_STR_EQ(resp_header(&(http_resp){.head = whole.head}, "transfer-encoding"), "chunked");
    json_t *items = json_object_get(whole.json, "items");
    CHECK_INT_EQ(json_array_size(items), N);
    snprintf(path, sizeof(path), CRONJOBS "?limit=%d", PAGE);
    for (int p = 0; p < N / PAGE; p++) {
        CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &page), 200);
        CHECK(resp_header(&(http_resp){.head = page.head}, "content-length") != NULL);
        json_t *got = json_object_get(page.json, "items");
        CHECK_INT_EQ(json_array_size(got), PAGE);
        for (int i = 0; i < PAGE; i++)
            CHECK(json_equal(json_array_get(got, (size_t)i),
                             json_array_get(items, (size_t)(p * PAGE + i))));
        const char *token = api_str(&page, "metadata.continue");
        if (token)
            snprintf(path, sizeof(path), CRONJOBS "?limit=%d&continue=%s", PAGE, token);
        api_answer_dispose(&page);
    }
    /* the Table of the whole list, with the objects, streamed the same way */
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?includeObject=Object", AS_TABLE, NULL, &table),
                 200);
    CHECK_STR_EQ(resp_header(&(http_resp){.head = table.head}, "transfer-encoding"), "chunked");
    json_t *rows = json_object_get(table.json, "rows");
    CHECK_INT_EQ(json_array_size(rows), N);
    for (int i = 0; i < N; i++) {
        json_t *obj = kapi_json_path(json_array_get(rows, (size_t)i), "object");
        json_t *item = json_array_get(items, (size_t)i);
        CHECK(json_equal(json_object_get(obj, "metadata"), json_object_get(item, "metadata")));
        CHECK(json_equal(json_object_get(obj, "spec"), json_object_get(item, "spec")));
    }
    api_answer_dispose(&table);
    api_answer_dispose(&whole);
    free(note);
    api_env_stop(&e);
}

/* With a one-second history window, a list at a revision that has left it answers 410,
 * a continue token at one answers 410 with a fresh token at the latest revision, and a
 * watch from one ends with an ERROR event. */
TEST(api_list_watch_expired_revision)
{
    api_env e = {.history_seconds = 1};
    api_answer a;
    char path[512];
    env_start(&e);
    long long old = create(&e, "a", "");
    create(&e, "b", "");
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?limit=1", "", NULL, &a), 200);
    char *token = kapi_xstrdup(api_str(&a, "metadata.continue"));
    api_answer_dispose(&a);
    create(&e, "c", ""); /* the token's revision is now history */
    usleep(1500 * 1000);
    create(&e, "d", ""); /* the store notes the time as it writes */
    usleep(300 * 1000);

    snprintf(path, sizeof(path), CRONJOBS "?resourceVersion=%lld&resourceVersionMatch=Exact", old);
    check_error(&e, path, 410, "Expired", "The resourceVersion for the provided list is too old.");
    snprintf(path, sizeof(path), CRONJOBS "?limit=1&continue=%s", token);
    CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 410);
    CHECK_STR_EQ(api_str(&a, "reason"), "Expired");
    CHECK(strncmp(api_str(&a, "message"),
                  "The provided continue parameter is too old to display a consistent list "
                  "result. You can start a new list without the continue parameter, or use the "
                  "continue token in this response to retrieve the remainder of the results.",
                  200) == 0);
    /* the fresh token goes on after the same key, at the latest revision (rv -1) */
    const char *fresh = api_str(&a, "metadata.continue");
    CHECK(fresh != NULL);
    kapi_buf raw;
    kapi_buf_init(&raw);
    CHECK(kapi_base64_decode(fresh, strlen(fresh), KAPI_BASE64_URL | KAPI_BASE64_RAW, &raw) < 0);
    CHECK_STR_EQ(raw.ptr, "{\"v\":\"meta.k8s.io/v1\",\"rv\":-1,\"start\":\"a\\u0000\"}");
    kapi_buf_dispose(&raw);
    snprintf(path, sizeof(path), CRONJOBS "?limit=5&continue=%s", fresh);
    check_list(&e, path, 200, "b,c,d");
    api_answer_dispose(&a);

    api_watch w;
    snprintf(path, sizeof(path), CRONJOBS "?watch=1&resourceVersion=%lld", old);
    api_watch_open(&e, path, &w);
    CHECK_INT_EQ(w.status, 200);
    json_t *ev = api_watch_next(&w);
    CHECK_STR_EQ(api_event_type(ev), "ERROR");
    CHECK_STR_EQ(api_event_str(ev, "kind"), "Status");
    CHECK_STR_EQ(api_event_str(ev, "reason"), "Expired");
    CHECK_INT_EQ(json_integer_value(kapi_json_path(ev, "object.code")), 410);
    CHECK(strncmp(api_event_str(ev, "message"), "too old resource version: ", 26) == 0);
    json_decref(ev);
    CHECK(api_watch_next(&w) == NULL);
    CHECK(w.ended);
    api_watch_close(&w);
    free(token);
    api_env_stop(&e);
}

/* A custom resource's list is unstructured: members sorted, items whole, continue always
 * written (empty on the last page). */
TEST(api_list_custom_resources_unstructured)
{
    const char *widgets = "/apis/example.com/v1/namespaces/default/widgets";
    api_env e = {0};
    api_answer a;
    char path[512], got[256];
    env_start(&e);
    api_create_widget_crd(&e);
    for (int i = 0; i < 3; i++) {
        char *w = kapi_xprintf("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\","
                               "\"metadata\":{\"name\":\"w%d\"},\"spec\":{\"size\":\"S\"}}",
                               i);
        CHECK_INT_EQ(api_status(&e, "POST", widgets, w), 201);
        free(w);
    }
    snprintf(path, sizeof(path), "%s?limit=2", widgets);
    CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 200);
    CHECK(strncmp(a.body.ptr,
                  "{\"apiVersion\":\"example.com/v1\",\"items\":[{\"apiVersion\":", 50) == 0);
    CHECK_STR_EQ(api_str(&a, "kind"), "WidgetList");
    CHECK_STR_EQ(names(&a, got, sizeof(got)), "w0,w1");
    json_t *item = json_array_get(json_object_get(a.json, "items"), 0);
    CHECK_STR_EQ(kapi_json_path_str(item, "kind"), "Widget");
    CHECK_STR_EQ(kapi_json_path_str(item, "spec.size"), "S");
    CHECK_INT_EQ(api_int(&a, "metadata.remainingItemCount"), 1);
    CHECK(strstr(a.body.ptr, "],\"kind\":\"WidgetList\",\"metadata\":{\"continue\":\"") != NULL);
    snprintf(path, sizeof(path), "%s?limit=2&continue=%s", widgets,
             api_str(&a, "metadata.continue"));
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 200);
    CHECK_STR_EQ(names(&a, got, sizeof(got)), "w2");
    CHECK_STR_EQ(api_str(&a, "metadata.continue"), "");
    CHECK(kapi_json_path(a.json, "metadata.remainingItemCount") == NULL);
    api_answer_dispose(&a);
    api_env_stop(&e);
}
