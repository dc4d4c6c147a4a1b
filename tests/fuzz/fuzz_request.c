/*
 * fuzz_request: a request's method, path, query and headers, read as the api reads them
 * before it does anything: its class and deadline for admission (kapi_api_classify, with
 * the timeout parameter), its counting when refused busy (kapi_api_refused), the path and query
 * (kapi_api__parse_request), the type the path names, the answer's media type from Accept
 * (kapi_api__negotiate), and the options of each verb from the query and body: ListOptions with its
 * continue token, the selectors, CreateOptions, DeleteOptions, the patch type from Content-Type.
 *
 * Input: the first byte picks the method; then lines: the path and query
 * ("/api/v1/namespaces?limit=1"), the Accept header, the Content-Type header, and the
 * body (the rest).
 */
#include "fuzz.h"

static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};

/* The next line of *s (without its newline), or the rest. */
static kapi_str next_line(kapi_str *s)
{
    kapi_str line;
    kapi_str_cut(s, '\n', &line);
    return line;
}

/* Everything a resource request reads from its query, headers and body. */
static void read_options(kapi_req *r)
{
    kapi_list_opts lo;
    kapi_write_opts wo;
    kapi_delete_opts d;
    kapi_patch_type pt;
    kapi_filter *f = NULL;
    int64_t rv;
    fuzz_status(kapi_api__negotiate(r));
    kapi_error *err = kapi_api__list_options(r, &lo);
    if (!err && lo.cont && *lo.cont) {
        kapi_str start;
        err = kapi_api__decode_continue(&r->arena, lo.cont, &start, &rv);
    }
    fuzz_status(err);
    fuzz_status(kapi_api__parse_rv(kapi_api__query(r, "resourceVersion"), &rv));
    fuzz_status(kapi_api__filter_new(r, r->info.name, &f));
    kapi_api__filter_free(f);
    fuzz_status(kapi_api__write_options(r, "CreateOptions", false, &wo));
    fuzz_status(kapi_api__delete_options(r, &d));
    fuzz_status(kapi_api__patch_type(r, &pt));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    char *text = fuzz_strndup(data + 1, size - 1);
    kapi_str s = {text, size - 1}, query = KAPI_STR("");
    kapi_str path = next_line(&s), a = next_line(&s), c = next_line(&s), head;
    char *accept = kapi_xstrndup(a.ptr, a.len), *ct = kapi_xstrndup(c.ptr, c.len);
    if (kapi_str_cut(&path, '?', &head)) {
        query = path;
        path = head;
    }
    fuzz_req f;
    fuzz_req_init(&f, methods[data[0] % KAPI_ARRAY_LEN(methods)], path, query, ct, accept, s.ptr,
                  s.len);
    f.r.api = fuzz_api();
    kapi_api_classify(&f.http, f.r.api);
    kapi_api_refused(&f.http, 429, f.r.api);
    kapi_error *err = kapi_api__parse_request(&f.r);
    if (!err)
        kapi_api__health_endpoint(f.r.path);
    if (!err && f.r.info.is_resource) {
        const kapi_reqinfo *in = &f.r.info;
        f.r.type = kapi_registry_lookup(fuzz_registry(), kapi_str_c(in->group),
                                        kapi_str_c(in->version), kapi_str_c(in->resource));
        if (f.r.type)
            read_options(&f.r);
    }
    fuzz_status(err);
    fuzz_req_dispose(&f);
    free(accept);
    free(ct);
    free(text);
    return 0;
}
