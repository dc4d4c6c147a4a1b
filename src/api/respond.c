/*
 * api/respond: the answers. Errors become metav1.Status bodies here and only here;
 * stored objects are written straight from their refcounted bytes (DESIGN.md inv. 2).
 */
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"

static const kapi_http_header json_headers[] = {{"Content-Type", "application/json"}};

static void put_member(kapi_buf *b, bool *first, const char *key, const char *value)
{
    if (!value)
        return;
    if (!*first)
        kapi_buf_putc(b, ',');
    *first = false;
    kapi_buf_printf(b, "\"%s\":", key);
    kapi_json_put_string(b, value, strlen(value));
}

static void put_details(kapi_buf *b, const kapi_error *err)
{
    bool first = true;
    kapi_buf_puts(b, ",\"details\":{");
    put_member(b, &first, "name", err->name);
    put_member(b, &first, "group", err->group);
    put_member(b, &first, "kind", err->kind);
    if (err->ncauses) {
        kapi_buf_puts(b, first ? "\"causes\":[" : ",\"causes\":[");
        first = false;
        for (size_t i = 0; i < err->ncauses; i++) {
            const kapi_cause *c = &err->causes[i];
            bool cfirst = true;
            kapi_buf_puts(b, i ? ",{" : "{");
            put_member(b, &cfirst, "reason", c->reason);
            put_member(b, &cfirst, "message", c->message);
            put_member(b, &cfirst, "field", c->field);
            kapi_buf_putc(b, '}');
        }
        kapi_buf_putc(b, ']');
    }
    if (err->retry_after > 0)
        kapi_buf_printf(b, "%s\"retryAfterSeconds\":%d", first ? "" : ",", err->retry_after);
    kapi_buf_putc(b, '}');
}

void kapi_api__status_json(kapi_buf *b, const kapi_error *err)
{
    const char *reason = kapi_status_reason(err->status);
    kapi_buf_puts(b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                     "\"status\":\"Failure\",\"message\":");
    kapi_json_put_string(b, err->message, strlen(err->message));
    if (*reason) {
        kapi_buf_puts(b, ",\"reason\":");
        kapi_json_put_string(b, reason, strlen(reason));
    }
    if (err->has_details)
        put_details(b, err);
    kapi_buf_printf(b, ",\"code\":%d}\n", kapi_status_code(err->status));
}

void kapi_api__respond_error(kapi_req *r, kapi_error *err)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_api__status_json(&b, err);
    int code = kapi_status_code(err->status);
    if (err->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", err->retry_after);
        kapi_http_header h[] = {{"Content-Type", "application/json"}, {"Retry-After", ra}};
        size_t len;
        char *p = kapi_buf_detach(&b, &len);
        kapi_http_chunk c = kapi_http_chunk_take(p, len);
        kapi_http_respond(r->http, code, h, 2, &c, 1);
    } else {
        kapi_api__respond_json(r, code, &b);
    }
    kapi_error_free(err);
}

void kapi_api__respond_json(kapi_req *r, int status, kapi_buf *body)
{
    size_t len;
    char *p = kapi_buf_detach(body, &len);
    kapi_http_chunk c = kapi_http_chunk_take(p, len);
    kapi_http_respond(r->http, status, json_headers, 1, &c, 1);
}

static void release_obj(void *owner)
{
    kapi_obj_unref(owner);
}

void kapi_api__respond_obj(kapi_req *r, int status, kapi_obj *obj)
{
    kapi_http_chunk c[2] = {
        {obj->data, obj->len, release_obj, obj},
        {"\n", 1, NULL, NULL},
    };
    kapi_http_respond(r->http, status, json_headers, 1, c, 2);
}

void kapi_api__respond_text(kapi_req *r, int status, const char *text)
{
    static const kapi_http_header h[] = {{"Content-Type", "text/plain; charset=utf-8"},
                                         {"X-Content-Type-Options", "nosniff"}};
    kapi_http_chunk c = kapi_http_chunk_copy(text, strlen(text));
    kapi_http_respond(r->http, status, h, 2, &c, 1);
}

void kapi_api__respond_not_found_page(kapi_req *r)
{
    kapi_api__respond_text(r, 404, "404 page not found\n");
}

kapi_error *kapi_api__err_not_found_resource(void)
{
    kapi_error *err =
        kapi_error_new(KAPI_STATUS_NOT_FOUND, "the server could not find the requested resource");
    err->has_details = true;
    return err;
}

kapi_error *kapi_api__err_method_not_allowed(void)
{
    kapi_error *err = kapi_error_new(KAPI_STATUS_METHOD_NOT_ALLOWED,
                                     "the server does not allow this method on the requested "
                                     "resource");
    err->has_details = true;
    return err;
}
