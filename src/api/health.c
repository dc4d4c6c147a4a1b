/*
 * api/health: /healthz, /livez and /readyz the way kube-apiserver serves them, with
 * kapi's own checks. The root path runs every check of its endpoint and answers "ok",
 * or with ?verbose one "[+]name ok" line a check and "<endpoint> check passed"; a
 * failed check makes it a 500 that lists every check ("[-]name failed: reason withheld",
 * the reason is not public) and ends "<endpoint> check failed". ?exclude=name skips a
 * check (repeatable). /<endpoint>/<check> runs one check; any other path under an
 * endpoint is the mux's plain 404, as an unregistered path is in kube-apiserver.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"

/* A health check: NULL when healthy, else why not (for the single-check answer). */
typedef const char *(*check_fn)(kapi_api *api);

static const char *check_ping(kapi_api *api)
{
    (void)api;
    return NULL;
}

static const char *check_store(kapi_api *api)
{
    return kapi_store_healthy(api->store) ? NULL : "the store's last commit failed";
}

static const char *check_shutdown(kapi_api *api)
{
    return atomic_load(&api->shutting_down) ? "process is shutting down" : NULL;
}

typedef struct health_check {
    const char *name;
    check_fn fn;
} health_check;

static const health_check ping_check = {"ping", check_ping};
static const health_check store_check = {"store", check_store};
static const health_check shutdown_check = {"shutdown", check_shutdown};

/* Each endpoint's checks, in the order they are reported. */
static const struct endpoint {
    const char *name;
    const health_check *checks[3];
} endpoints[] = {
    {"healthz", {&ping_check, &store_check, NULL}},
    {"livez", {&ping_check, &store_check, NULL}},
    {"readyz", {&ping_check, &store_check, &shutdown_check}},
};

static bool excluded(const kapi_req *r, const char *name, bool *used)
{
    bool hit = false;
    for (size_t i = 0; i < r->nquery; i++) {
        if (strcmp(r->query[i].key, "exclude") == 0 && strcmp(r->query[i].value, name) == 0) {
            used[i] = true;
            hit = true;
        }
    }
    return hit;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "warn: ..." for excluded names that match no check: each once, sorted, Go-quoted. */
static void unknown_excludes(const kapi_req *r, const bool *used, kapi_buf *out)
{
    const char **names = kapi_xcalloc(r->nquery + 1, sizeof(*names));
    size_t n = 0;
    for (size_t i = 0; i < r->nquery; i++)
        if (strcmp(r->query[i].key, "exclude") == 0 && !used[i])
            names[n++] = r->query[i].value;
    qsort(names, n, sizeof(*names), cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
            continue;
        kapi_buf_puts(out, i == 0 ? "warn: some health checks cannot be excluded: no matches for "
                                  : ",");
        kapi_go_quote(out, names[i], strlen(names[i]));
    }
    if (n)
        kapi_buf_puts(out, "\n");
    free(names);
}

static void serve_root(kapi_req *r, const struct endpoint *e)
{
    kapi_buf out;
    kapi_buf_init(&out);
    bool *used = kapi_arena_alloc(&r->arena, (r->nquery + 1) * sizeof(*used));
    memset(used, 0, (r->nquery + 1) * sizeof(*used));
    bool failed = false;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(e->checks) && e->checks[i]; i++) {
        const health_check *c = e->checks[i];
        if (excluded(r, c->name, used)) {
            kapi_buf_printf(&out, "[+]%s excluded: ok\n", c->name);
        } else if (c->fn(r->api)) {
            kapi_buf_printf(&out, "[-]%s failed: reason withheld\n", c->name);
            failed = true;
        } else {
            kapi_buf_printf(&out, "[+]%s ok\n", c->name);
        }
    }
    unknown_excludes(r, used, &out);
    if (failed)
        kapi_buf_printf(&out, "%s check failed\n", e->name);
    else if (kapi_api__query(r, "verbose"))
        kapi_buf_printf(&out, "%s check passed\n", e->name);
    kapi_api__respond_text(r, failed ? 500 : 200,
                           failed || kapi_api__query(r, "verbose") ? out.ptr : "ok");
    kapi_buf_dispose(&out);
}

static void serve_one(kapi_req *r, const health_check *c)
{
    const char *why = c->fn(r->api);
    if (!why) {
        kapi_api__respond_text(r, 200, "ok");
        return;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "internal server error: %s\n", why);
    kapi_api__respond_text(r, 500, msg);
}

/* The endpoint whose name is path's first segment, or NULL. */
static const struct endpoint *endpoint_of(const char *path)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(endpoints); i++) {
        size_t n = strlen(endpoints[i].name);
        if (path[0] == '/' && strncmp(path + 1, endpoints[i].name, n) == 0 &&
            (path[n + 1] == '\0' || path[n + 1] == '/'))
            return &endpoints[i];
    }
    return NULL;
}

bool kapi_api__health_endpoint(const char *path)
{
    return endpoint_of(path) != NULL;
}

void kapi_api__serve_health(kapi_req *r)
{
    const struct endpoint *e = endpoint_of(r->path);
    const char *check = r->path + 1 + strlen(e->name);
    if (*check == '\0') {
        serve_root(r, e);
        return;
    }
    for (size_t k = 0; k < KAPI_ARRAY_LEN(e->checks) && e->checks[k]; k++) {
        if (strcmp(check + 1, e->checks[k]->name) == 0) {
            serve_one(r, e->checks[k]);
            return;
        }
    }
    kapi_api__respond_not_found_page(r);
}
