/*
 * fuzz: what kapi's libFuzzer targets share (tests/fuzz/fuzz_*.c, built by `make fuzz`).
 *
 * Each target feeds one input to the entry point the api uses for that kind of input
 * (a create body, a patch, a selector, a path and query, ...) and renders every error it
 * gets as the Status body the client would read, which must be valid JSON. An input
 * must never crash, trip a sanitizer or leak (LeakSanitizer checks each input's
 * allocations); inputs longer than FUZZ_MAX_INPUT are skipped so that every run is bounded.
 *
 * What lives across inputs (the registry, a store in a temporary directory and the api
 * over it) is made once, on first use, and reachable until exit.
 */
#ifndef KAPI_FUZZ_H
#define KAPI_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_int.h"
#include "controllers/controllers.h"

/* The largest input a target reads (run.sh passes the same -max_len). */
#define FUZZ_MAX_INPUT (64 * 1024)

/* Stops the run: a setup step that cannot fail did. */
static inline void fuzz_setup_failed(const char *what, kapi_error *err)
{
    fprintf(stderr, "fuzz setup: %s: %s\n", what, err ? err->message : "failed");
    abort();
}

/* The built-in registry, loaded once. */
static inline const kapi_registry *fuzz_registry(void)
{
    static kapi_registry *reg;
    kapi_error *err;
    if (!reg && (err = kapi_registry_new(&reg)) != NULL)
        fuzz_setup_failed("registry", err);
    return reg;
}

/* Built-in type i of those that are stored, counted round, in registry order: what the
 * create, patch and selector targets pick with a byte of their input. The reviews are
 * left out: they are only ever created and answered, never updated, patched or listed. */
static inline const kapi_type *fuzz_stored_type(size_t i)
{
    const kapi_registry *reg = fuzz_registry();
    size_t n = 0;
    for (size_t j = 0; j < kapi_registry_count(reg); j++)
        n += kapi_registry_at(reg, j)->persisted;
    i %= n;
    for (size_t j = 0;; j++)
        if (kapi_registry_at(reg, j)->persisted && i-- == 0)
            return kapi_registry_at(reg, j);
}

static char fuzz_dir[64];

/* Removes the store's directory at exit. */
static inline void fuzz_remove_dir(void)
{
    static const char *const files[] = {"kapi.db", "kapi.db-wal", "kapi.db-shm"};
    char path[128];
    for (size_t i = 0; i < KAPI_ARRAY_LEN(files); i++) {
        snprintf(path, sizeof(path), "%s/%s", fuzz_dir, files[i]);
        unlink(path);
    }
    rmdir(fuzz_dir);
}

/* An api over a store in a fresh temporary directory, with the namespace "default";
 * made once. Targets write to it with dryRun only, so every input sees the same state. */
static inline kapi_api *fuzz_api(void)
{
    static kapi_api *api;
    static kapi_store *store;
    kapi_error *err;
    if (api)
        return api;
    snprintf(fuzz_dir, sizeof(fuzz_dir), "/tmp/kapi-fuzz-XXXXXX");
    if (!mkdtemp(fuzz_dir))
        fuzz_setup_failed("mkdtemp", NULL);
    atexit(fuzz_remove_dir);
    char db[128];
    snprintf(db, sizeof(db), "%s/kapi.db", fuzz_dir);
    kapi_store_options so = {.path = db, .history_seconds = 300};
    if ((err = kapi_store_open(&store, &so)) != NULL)
        fuzz_setup_failed("store", err);
    kapi_api_config ac = {.store = store, .registry = fuzz_registry()};
    api = kapi_api_new(&ac);
    if ((err = kapi_namespace_ensure(api, "default")) != NULL)
        fuzz_setup_failed("namespace", err);
    return api;
}

/* A request as the http layer hands it over, without a connection: the handler's
 * kapi_req in its arena, the body a NUL-terminated heap copy. */
typedef struct fuzz_req {
    kapi_req r;
    kapi_http_request http;
    kapi_http_header headers[2];
    char *body;
} fuzz_req;

/* Fills f for method path?query with the given Content-Type and Accept (NULL: none). */
static inline void fuzz_req_init(fuzz_req *f, const char *method, kapi_str path, kapi_str query,
                                 const char *content_type, const char *accept, const void *body,
                                 size_t n)
{
    memset(f, 0, sizeof(*f));
    f->body = kapi_xmalloc(n + 1);
    if (n)
        memcpy(f->body, body, n);
    f->body[n] = '\0';
    f->http.method = method;
    f->http.path = path;
    f->http.query = query;
    f->http.headers = f->headers;
    if (content_type)
        f->headers[f->http.nheaders++] = (kapi_http_header){"content-type", content_type};
    if (accept)
        f->headers[f->http.nheaders++] = (kapi_http_header){"accept", accept};
    f->http.body = f->body;
    f->http.body_len = n;
    f->http.remote_addr = "127.0.0.1:1";
    kapi_arena_init(&f->r.arena);
    f->r.http = &f->http;
    f->r.info.verb = "";
}

static inline void fuzz_req_dispose(fuzz_req *f)
{
    kapi_arena_dispose(&f->r.arena);
    free(f->body);
}

/* Renders err as the Status body an answer carries, then frees it; NULL is nothing. The
 * body must be JSON a strict reader accepts (valid UTF-8 whatever bytes the input held). */
static inline void fuzz_status(kapi_error *err)
{
    if (!err)
        return;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_api__status_json(&b, err);
    json_error_t je;
    json_t *v = json_loadb(b.ptr, b.len, 0, &je);
    if (!v) {
        fprintf(stderr, "a Status body is not valid JSON: %s\n%s\n", je.text, b.ptr);
        abort();
    }
    json_decref(v);
    kapi_buf_dispose(&b);
    kapi_error_free(err);
}

/* A NUL-terminated heap copy of n bytes (inputs are not terminated). */
static inline char *fuzz_strndup(const uint8_t *p, size_t n)
{
    char *s = kapi_xmalloc(n + 1);
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

#endif
