/*
 * Unit tests for the watch verb's events (api/watch.c) over an api_env server: ADDED,
 * MODIFIED and DELETED from a resourceVersion or from the current state, bookmarks and
 * the timeout that ends the stream, selectors (an object leaving one is DELETED), the
 * watch of one object, the events.k8s.io view of core Events, and the options' errors.
 * (The ERROR 410 of a too-old resourceVersion is in test_list.c, with the other reads
 * of an expired revision.)
 */
#include <time.h>

#include "api_call.h"
#include "test.h"

#define CRONJOBS "/apis/batch/v1/namespaces/default/cronjobs"
#define MERGE "Content-Type: application/merge-patch+json\r\n"

static void env_start(api_env *e)
{
    api_env_start(e);
    CHECK(kapi_namespace_ensure(e->api, "default") == NULL);
}

/* Sends a write that must answer status; returns the resourceVersion it answers with. */
static long long write_ok(api_env *e, const char *method, const char *path, const char *headers,
                          const char *body, int status)
{
    api_answer a;
    CHECK_INT_EQ(api_call(e, method, path, headers, body, &a), status);
    const char *rv = api_str(&a, "metadata.resourceVersion");
    long long rev = rv ? atoll(rv) : 0;
    api_answer_dispose(&a);
    return rev;
}

static long long create(api_env *e, const char *name, const char *meta_extra)
{
    char *body = api_cronjob(name, meta_extra);
    long long rev = write_ok(e, "POST", CRONJOBS, "", body, 201);
    free(body);
    return rev;
}

/* Merge-patches the CronJob name with patch; returns the new resourceVersion. */
static long long patch(api_env *e, const char *name, const char *patch_body)
{
    char path[256];
    snprintf(path, sizeof(path), CRONJOBS "/%s", name);
    return write_ok(e, "PATCH", path, MERGE, patch_body, 200);
}

static void delete_cj(api_env *e, const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), CRONJOBS "/%s", name);
    write_ok(e, "DELETE", path, "", NULL, 200);
}

/* Reads the next event and checks its type, object name and resourceVersion (rev 0: any). */
static void expect(api_watch *w, const char *type, const char *name, long long rev)
{
    json_t *ev = api_watch_next(w);
    CHECK(ev != NULL);
    CHECK_STR_EQ(api_event_type(ev), type);
    CHECK_STR_EQ(api_event_str(ev, "metadata.name"), name);
    if (rev)
        CHECK_INT_EQ(atoll(api_event_str(ev, "metadata.resourceVersion")), rev);
    json_decref(ev);
}

TEST(api_watch_changes_from_resource_version)
{
    api_env e = {0};
    api_watch w;
    char path[256];
    env_start(&e);
    long long before = kapi_store_revision(e.store);
    long long a = create(&e, "a", "");
    /* from a revision before a's creation: a's ADDED comes from the history */
    snprintf(path, sizeof(path), CRONJOBS "?watch=1&resourceVersion=%lld", before);
    api_watch_open(&e, path, &w);
    CHECK_INT_EQ(w.status, 200);
    expect(&w, "ADDED", "a", a);
    api_watch_close(&w);

    /* from a's revision: only what comes after */
    snprintf(path, sizeof(path), CRONJOBS "?watch=1&resourceVersion=%lld", a);
    api_watch_open(&e, path, &w);
    long long b = create(&e, "b", "");
    long long b2 = patch(&e, "b", "{\"spec\":{\"suspend\":false}}");
    long long a2 = patch(&e, "a", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}");
    delete_cj(&e, "b");
    long long gone = kapi_store_revision(e.store);
    expect(&w, "ADDED", "b", b);
    json_t *ev = api_watch_next(&w);
    CHECK_STR_EQ(api_event_type(ev), "MODIFIED");
    CHECK_INT_EQ(atoll(api_event_str(ev, "metadata.resourceVersion")), b2);
    CHECK(json_is_false(kapi_json_path(json_object_get(ev, "object"), "spec.suspend")));
    /* an event's object is the whole object, kind and apiVersion included */
    CHECK_STR_EQ(api_event_str(ev, "kind"), "CronJob");
    CHECK_STR_EQ(api_event_str(ev, "apiVersion"), "batch/v1");
    json_decref(ev);
    expect(&w, "MODIFIED", "a", a2);
    expect(&w, "DELETED", "b", gone); /* the deleted state at the delete's revision */
    api_watch_close(&w);

    /* without a resourceVersion: the current state as ADDED, then the changes */
    api_watch_open(&e, CRONJOBS "?watch=1", &w);
    expect(&w, "ADDED", "a", a2);
    long long c = create(&e, "c", "");
    expect(&w, "ADDED", "c", c);
    api_watch_close(&w);
    api_env_stop(&e);
}

/* Nanoseconds on the monotonic clock. */
static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

TEST(api_watch_bookmarks_and_timeout)
{
    api_env e = {0};
    api_watch w;
    env_start(&e);
    long long a = create(&e, "a", "");
    long long t0 = mono_ns();
    api_watch_open(&e, CRONJOBS "?watch=1&allowWatchBookmarks=true&timeoutSeconds=3", &w);
    expect(&w, "ADDED", "a", a);
    /* One bookmark, 2 s before the end (here 1 s in); none as the timeout ends the stream. */
    json_t *ev = api_watch_next(&w);
    long long at = mono_ns() - t0;
    CHECK_STR_EQ(api_event_type(ev), "BOOKMARK");
    CHECK_STR_EQ(api_event_str(ev, "kind"), "CronJob");
    CHECK_STR_EQ(api_event_str(ev, "apiVersion"), "batch/v1");
    CHECK_INT_EQ(atoll(api_event_str(ev, "metadata.resourceVersion")), a);
    CHECK_INT_EQ(json_object_size(kapi_json_path(ev, "object.metadata")), 1);
    json_decref(ev);
    CHECK(at >= 900000000LL && at < 2900000000LL); /* before the end */
    CHECK(api_watch_next(&w) == NULL);
    CHECK(w.ended); /* the stream's end, not a dropped connection */
    long long took = mono_ns() - t0;
    CHECK(took >= 2900000000LL && took < 6000000000LL);
    api_watch_close(&w);

    /* without bookmarks the stream just ends */
    t0 = mono_ns();
    api_watch_open(&e, CRONJOBS "?watch=1&resourceVersion=1&timeoutSeconds=1", &w);
    expect(&w, "ADDED", "a", a);
    CHECK(api_watch_next(&w) == NULL);
    CHECK(w.ended);
    took = mono_ns() - t0;
    CHECK(took >= 900000000LL && took < 4000000000LL);
    api_watch_close(&w);
    api_env_stop(&e);
}

/* A bookmark is due 2 s before the timeout; a watch shorter than that has none at all. */
TEST(api_watch_no_bookmark_within_last_two_seconds)
{
    api_env e = {0};
    api_watch w;
    env_start(&e);
    long long t0 = mono_ns();
    api_watch_open(&e, CRONJOBS "?watch=1&allowWatchBookmarks=true&timeoutSeconds=1", &w);
    CHECK_INT_EQ(w.status, 200);
    json_t *ev = api_watch_next(&w);
    CHECK(ev == NULL);
    json_decref(ev);
    CHECK(w.ended);
    long long took = mono_ns() - t0;
    CHECK(took >= 900000000LL && took < 4000000000LL);
    api_watch_close(&w);
    api_env_stop(&e);
}

TEST(api_watch_selectors_filter_events)
{
    api_env e = {0};
    api_watch w;
    env_start(&e);
    api_watch_open(&e, CRONJOBS "?watch=1&labelSelector=app%3Dweb", &w);
    create(&e, "a", "\"labels\":{\"app\":\"db\"}"); /* outside: nothing */
    long long in = patch(&e, "a", "{\"metadata\":{\"labels\":{\"app\":\"web\"}}}");
    long long still = patch(&e, "a", "{\"metadata\":{\"annotations\":{\"n\":\"1\"}}}");
    long long out = patch(&e, "a", "{\"metadata\":{\"labels\":{\"app\":\"db\"}}}");
    patch(&e, "a", "{\"metadata\":{\"annotations\":{\"n\":\"2\"}}}"); /* outside: nothing */
    delete_cj(&e, "a");                                               /* outside: nothing */
    long long b = create(&e, "b", "\"labels\":{\"app\":\"web\"}");
    expect(&w, "ADDED", "a", in); /* entering the selector */
    expect(&w, "MODIFIED", "a", still);
    /* leaving it: the state the watcher last saw, at the revision that took it out */
    json_t *ev = api_watch_next(&w);
    CHECK_STR_EQ(api_event_type(ev), "DELETED");
    CHECK_INT_EQ(atoll(api_event_str(ev, "metadata.resourceVersion")), out);
    CHECK_STR_EQ(api_event_str(ev, "metadata.labels.app"), "web");
    CHECK_STR_EQ(api_event_str(ev, "metadata.annotations.n"), "1");
    json_decref(ev);
    expect(&w, "ADDED", "b", b);
    api_watch_close(&w);

    /* a field selector, and the watch of one object by its path */
    api_watch v;
    api_watch_open(&e, CRONJOBS "?watch=1&fieldSelector=metadata.name%3Dc", &w);
    api_watch_open(&e, CRONJOBS "/c?watch=1", &v);
    create(&e, "d", "");
    long long c = create(&e, "c", "");
    expect(&w, "ADDED", "c", c);
    expect(&v, "ADDED", "c", c);
    delete_cj(&e, "d");
    delete_cj(&e, "c");
    expect(&w, "DELETED", "c", 0);
    expect(&v, "DELETED", "c", 0);
    api_watch_close(&v);
    api_watch_close(&w);
    api_env_stop(&e);
}

TEST(api_watch_events_view)
{
    static const char ev_body[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e1\"},"
        "\"involvedObject\":{\"kind\":\"CronJob\",\"name\":\"a\"},\"reason\":\"R\","
        "\"message\":\"hello\",\"type\":\"Normal\"}";
    const char *core = "/api/v1/namespaces/default/events";
    api_env e = {0};
    api_watch w, v;
    env_start(&e);
    api_watch_open(&e, "/apis/events.k8s.io/v1/namespaces/default/events?watch=1", &w);
    api_watch_open(&e, "/api/v1/namespaces/default/events?watch=1", &v);
    write_ok(&e, "POST", core, "", ev_body, 201);
    write_ok(&e, "PATCH", "/api/v1/namespaces/default/events/e1", MERGE, "{\"message\":\"again\"}",
             200);
    write_ok(&e, "DELETE", "/api/v1/namespaces/default/events/e1", "", NULL, 200);
    static const struct {
        const char *type, *text;
    } want[] = {{"ADDED", "hello"}, {"MODIFIED", "again"}, {"DELETED", "again"}};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(want); i++) {
        json_t *ev = api_watch_next(&w);
        CHECK_STR_EQ(api_event_type(ev), want[i].type);
        CHECK_STR_EQ(api_event_str(ev, "apiVersion"), "events.k8s.io/v1");
        CHECK_STR_EQ(api_event_str(ev, "note"), want[i].text);
        CHECK_STR_EQ(api_event_str(ev, "regarding.kind"), "CronJob");
        CHECK(api_event_str(ev, "message") == NULL);
        json_decref(ev);
        ev = api_watch_next(&v);
        CHECK_STR_EQ(api_event_type(ev), want[i].type);
        CHECK_STR_EQ(api_event_str(ev, "apiVersion"), "v1");
        CHECK_STR_EQ(api_event_str(ev, "message"), want[i].text);
        CHECK_STR_EQ(api_event_str(ev, "involvedObject.name"), "a");
        json_decref(ev);
    }
    api_watch_close(&v);
    api_watch_close(&w);
    api_env_stop(&e);
}

TEST(api_watch_option_errors)
{
    api_env e = {0};
    api_answer a;
    env_start(&e);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?watch=1&resourceVersion=abc", "", NULL, &a), 400);
    CHECK_STR_EQ(api_str(&a, "reason"), "BadRequest");
    CHECK_STR_EQ(api_str(&a, "message"),
                 "invalid resource version: resourceVersion: Invalid value: \"abc\": "
                 "strconv.ParseUint: parsing \"abc\": invalid syntax");
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET",
                          CRONJOBS "?watch=1&resourceVersion=1&resourceVersionMatch=Exact", "",
                          NULL, &a),
                 422);
    CHECK_STR_EQ(api_str(&a, "message"),
                 "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: "
                 "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                 "provided, resourceVersionMatch: Unsupported value: \"Exact\": supported "
                 "values: \"NotOlderThan\"]");
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?watch=1&timeoutSeconds=soon", "", NULL, &a), 400);
    CHECK_STR_EQ(api_str(&a, "message"), "strconv.ParseInt: parsing \"soon\": invalid syntax");
    api_answer_dispose(&a);
    CHECK_INT_EQ(api_call(&e, "GET", CRONJOBS "?watch=1&labelSelector=a%20b", "", NULL, &a), 400);
    CHECK_STR_EQ(api_str(&a, "message"),
                 "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
    api_answer_dispose(&a);
    api_env_stop(&e);
}

/* A streaming list (KEP-3157, as Kubernetes 1.32 serves it): the state as ADDED events,
 * then a bookmark annotated k8s.io/initial-events-end at the state's revision, then the
 * changes; without sendInitialEvents, only what comes after the revision asked for. */
TEST(api_watch_streaming_list)
{
    api_env e = {0};
    api_watch w;
    api_answer a;
    char path[256];
    env_start(&e);
    long long x = create(&e, "x", "");
    long long y = create(&e, "y", "");
    api_watch_open(&e,
                   CRONJOBS "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                            "&allowWatchBookmarks=true",
                   &w);
    CHECK_INT_EQ(w.status, 200);
    expect(&w, "ADDED", "x", x);
    expect(&w, "ADDED", "y", y);
    json_t *ev = api_watch_next(&w);
    CHECK_STR_EQ(api_event_type(ev), "BOOKMARK");
    CHECK_INT_EQ(atoll(api_event_str(ev, "metadata.resourceVersion")), y);
    CHECK_STR_EQ(
        json_string_value(json_object_get(kapi_json_path(ev, "object.metadata.annotations"),
                                          "k8s.io/initial-events-end")),
        "true");
    json_decref(ev);
    long long z = create(&e, "z", "");
    expect(&w, "ADDED", "z", z);
    api_watch_close(&w);

    /* sendInitialEvents=false from x's revision: y and what follows, no state, no end mark */
    snprintf(path, sizeof(path),
             CRONJOBS "?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
                      "&resourceVersion=%lld&allowWatchBookmarks=true",
             x);
    api_watch_open(&e, path, &w);
    expect(&w, "ADDED", "y", y);
    expect(&w, "ADDED", "z", z);
    api_watch_close(&w);

    static const struct {
        const char *query, *message;
    } refused[] = {
        {"?sendInitialEvents=true", "sendInitialEvents: Forbidden: sendInitialEvents is "
                                    "forbidden for list"},
        {"?watch=1&sendInitialEvents=true", "resourceVersionMatch: Forbidden: sendInitialEvents "
                                            "requires setting resourceVersionMatch to "
                                            "NotOlderThan"},
        {"?watch=1&resourceVersionMatch=NotOlderThan", "resourceVersionMatch: Forbidden: "
                                                       "resourceVersionMatch is forbidden for "
                                                       "watch unless sendInitialEvents is "
                                                       "provided"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(refused); i++) {
        snprintf(path, sizeof(path), CRONJOBS "%s", refused[i].query);
        CHECK_INT_EQ(api_call(&e, "GET", path, "", NULL, &a), 422);
        char *want =
            kapi_xprintf("ListOptions.meta.k8s.io \"\" is invalid: %s", refused[i].message);
        CHECK_STR_EQ(api_str(&a, "message"), want);
        free(want);
        api_answer_dispose(&a);
    }
    api_env_stop(&e);
}

/* A watch resuming from an old resourceVersion gets the whole history after it, however
 * much more than the live queue limit (512 KiB) it is: 160 changes of 4 KiB here, all
 * queued before the client reads any. */
TEST(api_watch_replays_long_history)
{
    api_env e = {0};
    api_watch w;
    char path[256];
    env_start(&e);
    long long from = kapi_store_revision(e.store);
    char *big = kapi_xmalloc(4097);
    memset(big, 'x', 4096);
    big[4096] = '\0';
    char *meta = kapi_xprintf("\"annotations\":{\"filler\":\"%s\"}", big);
    char names[160][16];
    long long revs[160];
    for (int i = 0; i < 160; i++) {
        snprintf(names[i], sizeof(names[i]), "h%03d", i);
        revs[i] = create(&e, names[i], meta);
    }
    snprintf(path, sizeof(path), CRONJOBS "?watch=1&resourceVersion=%lld", from);
    api_watch_open(&e, path, &w);
    CHECK_INT_EQ(w.status, 200);
    for (int i = 0; i < 160; i++)
        expect(&w, "ADDED", names[i], revs[i]);
    long long after = create(&e, "live", "");
    expect(&w, "ADDED", "live", after);
    api_watch_close(&w);
    free(meta);
    free(big);
    api_env_stop(&e);
}
