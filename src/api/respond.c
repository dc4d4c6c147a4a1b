/*
 * api/respond: the answers. Errors become metav1.Status bodies here and only here;
 * stored objects are written straight from their refcounted bytes (DESIGN.md inv. 2).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "codec/protobuf.h"
#include "codec/yaml.h"

void kapi_api__warn(kapi_req *r, const char *fmt, ...)
{
    if (r->nwarnings == r->warnings_cap) {
        size_t cap = r->warnings_cap ? 2 * r->warnings_cap : 4;
        const char **n = kapi_arena_alloc(&r->arena, cap * sizeof(*n));
        if (r->nwarnings)
            memcpy(n, r->warnings, r->nwarnings * sizeof(*n));
        r->warnings = n;
        r->warnings_cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    kapi_buf text, b;
    kapi_buf_init(&text);
    kapi_buf_vprintf(&text, fmt, ap);
    va_end(ap);
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "299 - ");
    kapi_go_quote(&b, text.ptr, text.len); /* Go's strconv.Quote, as kube-apiserver */
    r->warnings[r->nwarnings++] = kapi_arena_strdup(&r->arena, b.ptr);
    kapi_buf_dispose(&text);
    kapi_buf_dispose(&b);
}

/* The headers of every answer: Content-Type, the extra ones, the warnings and Audit-ID
 * (as kube-apiserver sends it on every answer). Every answer is made here: the request is
 * recorded as answered (request log, audit) while r->http is still its own. */
static kapi_http_header *answer_headers(kapi_req *r, int status, const char *content_type,
                                        const kapi_http_header *extra, size_t nextra, size_t *nh)
{
    kapi_http_header *h = kapi_arena_alloc(&r->arena, (2 + nextra + r->nwarnings) * sizeof(*h));
    *nh = 0;
    h[(*nh)++] = (kapi_http_header){"Content-Type", content_type};
    for (size_t i = 0; i < nextra; i++)
        h[(*nh)++] = extra[i];
    for (size_t i = 0; i < r->nwarnings; i++)
        h[(*nh)++] = (kapi_http_header){"Warning", r->warnings[i]};
    if (*r->audit_id)
        h[(*nh)++] = (kapi_http_header){"Audit-ID", r->audit_id};
    kapi_api__metrics_answer(r, status);
    kapi_api__answered(r, status);
    return h;
}

void kapi_api__send_headers(kapi_req *r, int status, const char *content_type,
                            const kapi_http_header *extra, size_t nextra, const kapi_http_chunk *c,
                            size_t n)
{
    size_t nh;
    kapi_http_header *h = answer_headers(r, status, content_type, extra, nextra, &nh);
    for (size_t i = 0; i < n; i++)
        r->resp_bytes += c[i].len;
    kapi_http_respond(r->http, status, h, nh, c, n);
}

void kapi_api__send(kapi_req *r, int status, const char *content_type, const kapi_http_chunk *c,
                    size_t n)
{
    kapi_api__send_headers(r, status, content_type, NULL, 0, c, n);
}

kapi_http_stream *kapi_api__start_stream(kapi_req *r, const char *type, size_t max_queued)
{
    size_t nh;
    kapi_http_header *h = answer_headers(r, 200, type, NULL, 0, &nh);
    r->streamed = true;
    return kapi_http_stream_start(r->http, 200, h, nh, max_queued);
}

void kapi_api__respond_chunks(kapi_req *r, int status, const kapi_http_chunk *c, size_t n)
{
    if (r->media.format == KAPI_FORMAT_JSON && r->media.target == KAPI_TARGET_OBJECT)
        kapi_api__send(r, status, "application/json", c, n);
    else
        kapi_api__respond_transformed(r, status, c, n);
}

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
    kapi_buf_puts(b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{");
    if (err->list_continue) {
        kapi_buf_puts(b, "\"continue\":");
        kapi_json_put_string(b, err->list_continue, strlen(err->list_continue));
    }
    kapi_buf_puts(b, "},\"status\":\"Failure\",\"message\":");
    kapi_json_put_string(b, err->message, strlen(err->message));
    if (*reason) {
        kapi_buf_puts(b, ",\"reason\":");
        kapi_json_put_string(b, reason, strlen(reason));
    }
    if (err->has_details)
        put_details(b, err);
    kapi_buf_printf(b, ",\"code\":%d}\n", kapi_status_code(err->status));
}

/* The Status of an error in YAML, when the request negotiated it. */
static void status_yaml(kapi_buf *b, const kapi_error *err)
{
    kapi_buf json;
    kapi_buf_init(&json);
    kapi_api__status_json(&json, err);
    json_t *v = kapi_json_parse(json.ptr, json.len, NULL);
    kapi_yaml_encode(b, v);
    json_decref(v);
    kapi_buf_dispose(&json);
}

void kapi_api__respond_error(kapi_req *r, kapi_error *err)
{
    kapi_buf b;
    char ra[16];
    bool yaml = r->error_format == KAPI_FORMAT_YAML;
    const char *type = yaml ? KAPI_YAML_MEDIA_TYPE : "application/json";
    kapi_buf_init(&b);
    if (yaml) {
        status_yaml(&b, err);
    } else {
        kapi_api__status_json(&b, err);
        if (r->error_format == KAPI_FORMAT_PROTOBUF && kapi_api__to_protobuf(r->api->registry, &b))
            type = KAPI_PROTOBUF_MEDIA_TYPE;
    }
    snprintf(ra, sizeof(ra), "%d", err->retry_after);
    kapi_http_header h[] = {{"Retry-After", ra}};
    size_t len;
    char *p = kapi_buf_detach(&b, &len);
    kapi_http_chunk c = kapi_http_chunk_take(p, len);
    r->failure = err;
    kapi_api__send_headers(r, kapi_status_code(err->status), type, h, err->retry_after > 0, &c, 1);
    r->failure = NULL;
    kapi_error_free(err);
}

void kapi_api__respond_json(kapi_req *r, int status, kapi_buf *body)
{
    size_t len;
    char *p = kapi_buf_detach(body, &len);
    kapi_http_chunk c = kapi_http_chunk_take(p, len);
    kapi_api__respond_chunks(r, status, &c, 1);
}

void kapi_api__release_obj(void *owner)
{
    kapi_obj_unref(owner);
}

void kapi_api__respond_obj(kapi_req *r, int status, kapi_obj *obj)
{
    if (r->media.format == KAPI_FORMAT_PROTOBUF && r->media.target == KAPI_TARGET_OBJECT &&
        !r->type->strategy->from_storage) {
        /* the served view is the stored one: its protobuf is made once per revision */
        const kapi_obj_form *f = kapi_api__protobuf_form(r->api->registry, obj);
        if (f) {
            kapi_http_chunk c = {f->data, f->len, kapi_api__release_obj, obj};
            kapi_api__send(r, status, KAPI_PROTOBUF_MEDIA_TYPE, &c, 1);
            return;
        }
    }
    kapi_http_chunk c[2] = {
        {obj->data, obj->len, kapi_api__release_obj, obj},
        {"\n", 1, NULL, NULL},
    };
    kapi_api__respond_chunks(r, status, c, 2);
}

void kapi_api__respond_text(kapi_req *r, int status, const char *text)
{
    static const kapi_http_header h[] = {{"X-Content-Type-Options", "nosniff"}};
    kapi_http_chunk c = kapi_http_chunk_copy(text, strlen(text));
    kapi_api__send_headers(r, status, "text/plain; charset=utf-8", h, 1, &c, 1);
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
