/* status: the error type and the status table it maps to. */
#include "base/status.h"

#include <stdlib.h>

static const struct {
    int code;
    const char *reason;
} status_table[] = {
#define XX(name, code, reason) {code, reason},
    KAPI_STATUS_MAP(XX)
#undef XX
};

int kapi_status_code(kapi_status s)
{
    return s < KAPI_STATUS__COUNT ? status_table[s].code : 500;
}

const char *kapi_status_reason(kapi_status s)
{
    return s < KAPI_STATUS__COUNT ? status_table[s].reason : "InternalError";
}

kapi_error *kapi_error_new(kapi_status status, const char *fmt, ...)
{
    kapi_error *err = kapi_xcalloc(1, sizeof(*err));
    kapi_buf b;
    va_list ap;
    err->status = status;
    kapi_buf_init(&b);
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    err->message = kapi_buf_detach(&b, NULL);
    return err;
}

static char *dup_or_null(const char *s)
{
    return s && *s ? kapi_xstrdup(s) : NULL;
}

void kapi_error_details(kapi_error *err, const char *name, const char *group, const char *kind)
{
    free(err->name);
    free(err->group);
    free(err->kind);
    err->name = dup_or_null(name);
    err->group = dup_or_null(group);
    err->kind = dup_or_null(kind);
    err->has_details = true;
}

void kapi_error_add_cause(kapi_error *err, const char *reason, const char *field, const char *fmt,
                          ...)
{
    if (err->ncauses == err->causes_cap) {
        err->causes_cap = err->causes_cap ? err->causes_cap * 2 : 4;
        err->causes = kapi_xrealloc(err->causes, err->causes_cap * sizeof(*err->causes));
    }
    kapi_cause *c = &err->causes[err->ncauses++];
    kapi_buf b;
    va_list ap;
    kapi_buf_init(&b);
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    c->reason = kapi_xstrdup(reason);
    c->field = field ? kapi_xstrdup(field) : NULL;
    c->message = kapi_buf_detach(&b, NULL);
    err->has_details = true;
}

void kapi_error_free(kapi_error *err)
{
    if (!err)
        return;
    for (size_t i = 0; i < err->ncauses; i++) {
        free(err->causes[i].reason);
        free(err->causes[i].message);
        free(err->causes[i].field);
    }
    free(err->causes);
    free(err->message);
    free(err->name);
    free(err->group);
    free(err->kind);
    free(err->list_continue);
    free(err);
}
