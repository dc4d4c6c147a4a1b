/*
 * schema/field: Kubernetes' field errors, Go's rendering of values, the common value
 * rules and the 422 Invalid answer (see field.h).
 */
#include "schema/field.h"
#include "codec/go.h"
#include "schema/schema_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- paths ---- */

/* parent, then sep (a NUL: none), then tail, then close (a NUL: none), in the arena:
 * every field a validator visits gets a path, so this is kept clear of printf. */
static const char *join(kapi_arena *a, const char *parent, char sep, const char *tail,
                        size_t tail_len, char close)
{
    size_t pl = parent ? strlen(parent) : 0;
    char *p = kapi_arena_alloc(a, pl + tail_len + 3), *at = p;
    memcpy(at, parent ? parent : "", pl);
    at += pl;
    if (sep)
        *at++ = sep;
    memcpy(at, tail, tail_len);
    at += tail_len;
    if (close)
        *at = close;
    return p;
}

const char *kapi_path_child(kapi_arena *a, const char *parent, const char *name)
{
    return join(a, parent, parent && *parent ? '.' : '\0', name, strlen(name), '\0');
}

const char *kapi_path_index(kapi_arena *a, const char *parent, size_t i)
{
    char digits[24], *d = digits + sizeof(digits);
    do
        *--d = (char)('0' + i % 10);
    while ((i /= 10) > 0);
    return join(a, parent, '[', d, (size_t)(digits + sizeof(digits) - d), ']');
}

const char *kapi_path_key(kapi_arena *a, const char *parent, const char *key)
{
    return join(a, parent, '[', key, strlen(key), ']');
}

/* ---- Go's %#v ---- */

#define GO_FAKE_ADDRESS "0xc000000000"

static void gofmt_field(kapi_buf *b, const kapi_gofield *f, const json_t *v);
static void gofmt_gotime(kapi_buf *b, const json_t *v);

void kapi_gofmt_strings(kapi_buf *b, const json_t *v)
{
    if (!json_is_array(v)) {
        kapi_buf_puts(b, "[]string(nil)");
        return;
    }
    kapi_buf_puts(b, "[]string{");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *s = json_array_get(v, i);
        kapi_buf_puts(b, i ? ", " : "");
        kapi_go_quote(b, json_string_value(s) ?: "", json_string_length(s));
    }
    kapi_buf_putc(b, '}');
}

void kapi_gofmt_string_map(kapi_buf *b, const json_t *v)
{
    if (!json_is_object(v)) {
        kapi_buf_puts(b, "map[string]string(nil)");
        return;
    }
    size_t n;
    kapi_json_member *m = kapi_json_sorted_members(v, &n);
    kapi_buf_puts(b, "map[string]string{");
    for (size_t i = 0; i < n; i++) {
        kapi_buf_puts(b, i ? ", " : "");
        kapi_go_quote(b, m[i].key, m[i].len);
        kapi_buf_putc(b, ':');
        kapi_go_quote(b, json_string_value(m[i].value) ?: "", json_string_length(m[i].value));
    }
    kapi_buf_putc(b, '}');
    free(m);
}

void kapi_gofmt(kapi_buf *b, const kapi_gotype *t, const json_t *v)
{
    kapi_buf_printf(b, "%s{", t->name);
    for (size_t i = 0; i < t->nfields; i++) {
        const kapi_gofield *f = &t->fields[i];
        kapi_buf_printf(b, "%s%s:", i ? ", " : "", f->go);
        gofmt_field(b, f, json_object_get(v, f->json));
    }
    kapi_buf_putc(b, '}');
}

void kapi_gofmt_slice(kapi_buf *b, const kapi_gotype *t, const json_t *v)
{
    if (!json_is_array(v)) {
        kapi_buf_printf(b, "[]%s(nil)", t->name);
        return;
    }
    kapi_buf_printf(b, "[]%s{", t->name);
    for (size_t i = 0; i < json_array_size(v); i++) {
        kapi_buf_puts(b, i ? ", " : "");
        kapi_gofmt(b, t, json_array_get(v, i));
    }
    kapi_buf_putc(b, '}');
}

static void gofmt_field(kapi_buf *b, const kapi_gofield *f, const json_t *v)
{
    bool absent = !v || json_is_null(v);
    switch (f->kind) {
    case KAPI_GO_STRING:
        kapi_go_quote(b, json_string_value(v) ?: "", json_string_length(v));
        break;
    case KAPI_GO_STRINGS:
        kapi_gofmt_strings(b, v);
        break;
    case KAPI_GO_STRING_MAP:
        kapi_gofmt_string_map(b, v);
        break;
    case KAPI_GO_STRUCT:
        kapi_gofmt(b, f->sub, v);
        break;
    case KAPI_GO_STRUCTS:
        kapi_gofmt_slice(b, f->sub, v);
        break;
    case KAPI_GO_PTR:
        kapi_buf_printf(b, "(*%s)(%s)", f->sub ? f->sub->name : f->ptr_type,
                        absent ? "nil" : GO_FAKE_ADDRESS);
        break;
    case KAPI_GO_INT64:
        kapi_buf_printf(b, "%lld", (long long)json_integer_value(v));
        break;
    case KAPI_GO_TIME_PTR: /* fmt prints <nil> for a nil pointer with a GoString method */
        if (absent)
            kapi_buf_puts(b, "<nil>");
        else
            gofmt_gotime(b, v);
        break;
    case KAPI_GO_TIME:
        gofmt_gotime(b, v);
        break;
    }
}

/* Days since 1970-01-01 of a civil date (H. Hinnant's algorithm). */
static long long days_from_civil(long long y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* A time split as Go's calendar splits it. */
typedef struct civil {
    long long year;
    int month, day, hour, min, sec;
} civil;

/* The UTC date and clock of t seconds since 1970-01-01 (H. Hinnant's algorithm). */
static civil civil_of(long long t)
{
    long long days = t >= 0 ? t / 86400 : (t - 86399) / 86400, rem = t - days * 86400;
    long long z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    civil c = {.day = (int)(doy - (153 * mp + 2) / 5 + 1),
               .month = (int)(mp < 10 ? mp + 3 : mp - 9)};
    c.year = yoe + era * 400 + (c.month <= 2);
    c.hour = (int)(rem / 3600), c.min = (int)(rem / 60 % 60), c.sec = (int)(rem % 60);
    return c;
}

void kapi_gofmt_time(kapi_buf *b, const char *s)
{
    int y, mo, d, h, mi, sec, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6) {
        kapi_buf_puts(b, "0001-01-01 00:00:00 +0000 UTC");
        return;
    }
    const char *p = s + n;
    char frac[10] = "";
    size_t nf = 0;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (nf < 9)
                frac[nf++] = *p;
    while (nf > 0 && frac[nf - 1] == '0')
        nf--;
    frac[nf] = '\0';
    long long off = 0;
    if (*p == '+' || *p == '-') {
        int oh = 0, om = 0;
        sscanf(p + 1, "%2d:%2d", &oh, &om);
        off = (*p == '-' ? -1 : 1) * (oh * 3600LL + om * 60);
    }
    civil c = civil_of(days_from_civil(y, mo, d) * 86400 + h * 3600LL + mi * 60 + sec - off);
    kapi_buf_printf(b, "%04lld-%02d-%02d %02d:%02d:%02d%s%s +0000 UTC", c.year, c.month, c.day,
                    c.hour, c.min, c.sec, nf ? "." : "", frac);
}

/* Go's time.Time.GoString of the RFC 3339 time v, in UTC as kube-apiserver keeps its
 * times ("time.Date(2024, time.January, 2, 3, 4, 5, 0, time.UTC)"); the zero time when v
 * is absent or does not parse. */
static void gofmt_gotime(kapi_buf *b, const json_t *v)
{
    static const char *const months[] = {"January",   "February", "March",    "April",
                                         "May",       "June",     "July",     "August",
                                         "September", "October",  "November", "December"};
    int64_t secs;
    int32_t nsec;
    const char *s = json_string_value(v);
    if (!s || !kapi_gotime_parse(s, &secs, &nsec))
        secs = -62135596800, nsec = 0; /* Go's zero time, 0001-01-01 */
    civil c = civil_of(secs);
    kapi_buf_printf(b, "time.Date(%lld, time.%s, %d, %d, %d, %d, %d, time.UTC)", c.year,
                    months[c.month - 1], c.day, c.hour, c.min, c.sec, (int)nsec);
}

static const kapi_gofield label_requirement_fields[] = {
    {"Key", "key", KAPI_GO_STRING, NULL, NULL},
    {"Operator", "operator", KAPI_GO_STRING, NULL, NULL},
    {"Values", "values", KAPI_GO_STRINGS, NULL, NULL},
};
static const kapi_gotype label_requirement = {"v1.LabelSelectorRequirement",
                                              label_requirement_fields,
                                              KAPI_ARRAY_LEN(label_requirement_fields)};
static const kapi_gofield label_selector_fields[] = {
    {"MatchLabels", "matchLabels", KAPI_GO_STRING_MAP, NULL, NULL},
    {"MatchExpressions", "matchExpressions", KAPI_GO_STRUCTS, &label_requirement, NULL},
};
const kapi_gotype kapi_go_label_selector = {"v1.LabelSelector", label_selector_fields,
                                            KAPI_ARRAY_LEN(label_selector_fields)};

static const kapi_gofield object_reference_fields[] = {
    {"Kind", "kind", KAPI_GO_STRING, NULL, NULL},
    {"Namespace", "namespace", KAPI_GO_STRING, NULL, NULL},
    {"Name", "name", KAPI_GO_STRING, NULL, NULL},
    {"UID", "uid", KAPI_GO_STRING, NULL, NULL},
    {"APIVersion", "apiVersion", KAPI_GO_STRING, NULL, NULL},
    {"ResourceVersion", "resourceVersion", KAPI_GO_STRING, NULL, NULL},
    {"FieldPath", "fieldPath", KAPI_GO_STRING, NULL, NULL},
};
const kapi_gotype kapi_go_object_reference = {"core.ObjectReference", object_reference_fields,
                                              KAPI_ARRAY_LEN(object_reference_fields)};

static const kapi_gofield owner_reference_fields[] = {
    {"APIVersion", "apiVersion", KAPI_GO_STRING, NULL, NULL},
    {"Kind", "kind", KAPI_GO_STRING, NULL, NULL},
    {"Name", "name", KAPI_GO_STRING, NULL, NULL},
    {"UID", "uid", KAPI_GO_STRING, NULL, NULL},
    {"Controller", "controller", KAPI_GO_PTR, NULL, "bool"},
    {"BlockOwnerDeletion", "blockOwnerDeletion", KAPI_GO_PTR, NULL, "bool"},
};
const kapi_gotype kapi_go_owner_reference = {"v1.OwnerReference", owner_reference_fields,
                                             KAPI_ARRAY_LEN(owner_reference_fields)};

static const kapi_gofield managed_fields_entry_fields[] = {
    {"Manager", "manager", KAPI_GO_STRING, NULL, NULL},
    {"Operation", "operation", KAPI_GO_STRING, NULL, NULL},
    {"APIVersion", "apiVersion", KAPI_GO_STRING, NULL, NULL},
    {"Time", "time", KAPI_GO_TIME_PTR, NULL, NULL},
    {"FieldsType", "fieldsType", KAPI_GO_STRING, NULL, NULL},
    {"FieldsV1", "fieldsV1", KAPI_GO_PTR, NULL, "v1.FieldsV1"},
    {"Subresource", "subresource", KAPI_GO_STRING, NULL, NULL},
};
static const kapi_gotype managed_fields_entry = {"v1.ManagedFieldsEntry",
                                                 managed_fields_entry_fields,
                                                 KAPI_ARRAY_LEN(managed_fields_entry_fields)};
static const kapi_gofield object_meta_fields[] = {
    {"Name", "name", KAPI_GO_STRING, NULL, NULL},
    {"GenerateName", "generateName", KAPI_GO_STRING, NULL, NULL},
    {"Namespace", "namespace", KAPI_GO_STRING, NULL, NULL},
    {"SelfLink", "selfLink", KAPI_GO_STRING, NULL, NULL},
    {"UID", "uid", KAPI_GO_STRING, NULL, NULL},
    {"ResourceVersion", "resourceVersion", KAPI_GO_STRING, NULL, NULL},
    {"Generation", "generation", KAPI_GO_INT64, NULL, NULL},
    {"CreationTimestamp", "creationTimestamp", KAPI_GO_TIME, NULL, NULL},
    {"DeletionTimestamp", "deletionTimestamp", KAPI_GO_TIME_PTR, NULL, NULL},
    {"DeletionGracePeriodSeconds", "deletionGracePeriodSeconds", KAPI_GO_PTR, NULL, "int64"},
    {"Labels", "labels", KAPI_GO_STRING_MAP, NULL, NULL},
    {"Annotations", "annotations", KAPI_GO_STRING_MAP, NULL, NULL},
    {"OwnerReferences", "ownerReferences", KAPI_GO_STRUCTS, &kapi_go_owner_reference, NULL},
    {"Finalizers", "finalizers", KAPI_GO_STRINGS, NULL, NULL},
    {"ManagedFields", "managedFields", KAPI_GO_STRUCTS, &managed_fields_entry, NULL},
};
const kapi_gotype kapi_go_object_meta = {"v1.ObjectMeta", object_meta_fields,
                                         KAPI_ARRAY_LEN(object_meta_fields)};

/* ---- field errors ---- */

/* Adds a cause whose message is head, then ": " and the formatted detail when the detail
 * is not empty. */
static void add_cause(kapi_error *err, const char *reason, const char *path, const char *head,
                      const char *fmt, va_list ap)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, head);
    if (fmt && *fmt) {
        size_t mark = b.len;
        kapi_buf_puts(&b, ": ");
        size_t before = b.len;
        kapi_buf_vprintf(&b, fmt, ap);
        if (b.len == before) { /* the detail came out empty */
            b.len = mark;
            b.ptr[mark] = '\0';
        }
    }
    kapi_error_add_cause(err, reason, path ? path : "", "%s", b.ptr);
    kapi_buf_dispose(&b);
}

static void add_plain(kapi_error *err, const char *reason, const char *path, const char *head,
                      const char *detail)
{
    if (detail && *detail)
        kapi_error_add_cause(err, reason, path ? path : "", "%s: %s", head, detail);
    else
        kapi_error_add_cause(err, reason, path ? path : "", "%s", head);
}

void kapi_field_required(kapi_error *err, const char *path, const char *detail)
{
    add_plain(err, KAPI_FIELD_REQUIRED, path, "Required value", detail);
}

void kapi_field_forbidden(kapi_error *err, const char *path, const char *detail)
{
    add_plain(err, KAPI_FIELD_FORBIDDEN, path, "Forbidden", detail);
}

/* "Invalid value: " + rendered, then the detail. */
static void invalid_v(kapi_error *err, const char *path, kapi_buf *head, const char *fmt,
                      va_list ap)
{
    add_cause(err, KAPI_FIELD_INVALID, path, head->ptr, fmt, ap);
    kapi_buf_dispose(head);
}

void kapi_field_invalid_str(kapi_error *err, const char *path, const char *value, const char *fmt,
                            ...)
{
    kapi_buf h;
    va_list ap;
    kapi_buf_init(&h);
    kapi_buf_puts(&h, "Invalid value: ");
    kapi_go_quote(&h, value ? value : "", value ? strlen(value) : 0);
    va_start(ap, fmt);
    invalid_v(err, path, &h, fmt, ap);
    va_end(ap);
}

void kapi_field_invalid_int(kapi_error *err, const char *path, long long value, const char *fmt,
                            ...)
{
    kapi_buf h;
    va_list ap;
    kapi_buf_init(&h);
    kapi_buf_printf(&h, "Invalid value: %lld", value);
    va_start(ap, fmt);
    invalid_v(err, path, &h, fmt, ap);
    va_end(ap);
}

void kapi_field_invalid_json(kapi_error *err, const char *path, const json_t *value,
                             const char *fmt, ...)
{
    kapi_buf h;
    va_list ap;
    kapi_buf_init(&h);
    kapi_buf_puts(&h, "Invalid value: ");
    kapi_go_value(&h, value);
    va_start(ap, fmt);
    invalid_v(err, path, &h, fmt, ap);
    va_end(ap);
}

void kapi_field_invalid_raw(kapi_error *err, const char *path, const char *rendered,
                            const char *fmt, ...)
{
    kapi_buf h;
    va_list ap;
    kapi_buf_init(&h);
    kapi_buf_printf(&h, "Invalid value: %s", rendered);
    va_start(ap, fmt);
    invalid_v(err, path, &h, fmt, ap);
    va_end(ap);
}

void kapi_field_invalid_omit(kapi_error *err, const char *path, const char *detail)
{
    add_plain(err, KAPI_FIELD_INVALID, path, "Invalid value", detail);
}

void kapi_field_invalid_each(kapi_error *err, const char *path, const char *value,
                             const char *const *msgs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        kapi_field_invalid_str(err, path, value, "%s", msgs[i]);
}

void kapi_field_not_supported_raw(kapi_error *err, const char *path, const char *rendered,
                                  const char *const *valid)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_printf(&b, "Unsupported value: %s", rendered);
    for (size_t i = 0; valid && valid[i]; i++) {
        kapi_buf_puts(&b, i ? ", " : ": supported values: ");
        kapi_go_quote(&b, valid[i], strlen(valid[i]));
    }
    kapi_error_add_cause(err, KAPI_FIELD_NOT_SUPPORTED, path ? path : "", "%s", b.ptr);
    kapi_buf_dispose(&b);
}

void kapi_field_not_supported(kapi_error *err, const char *path, const char *value,
                              const char *const *valid)
{
    kapi_buf v;
    kapi_buf_init(&v);
    kapi_go_quote(&v, value ? value : "", value ? strlen(value) : 0);
    kapi_field_not_supported_raw(err, path, v.ptr, valid);
    kapi_buf_dispose(&v);
}

void kapi_field_duplicate(kapi_error *err, const char *path, const char *value)
{
    kapi_buf v;
    kapi_buf_init(&v);
    kapi_go_quote(&v, value ? value : "", value ? strlen(value) : 0);
    kapi_error_add_cause(err, KAPI_FIELD_DUPLICATE, path ? path : "", "Duplicate value: %s", v.ptr);
    kapi_buf_dispose(&v);
}

void kapi_field_duplicate_int(kapi_error *err, const char *path, long long value)
{
    kapi_error_add_cause(err, KAPI_FIELD_DUPLICATE, path ? path : "", "Duplicate value: %lld",
                         value);
}

void kapi_field_not_found(kapi_error *err, const char *path, const char *value, const char *detail)
{
    kapi_buf v;
    kapi_buf_init(&v);
    kapi_buf_puts(&v, "Not found: ");
    kapi_go_quote(&v, value ? value : "", value ? strlen(value) : 0);
    add_plain(err, KAPI_FIELD_NOT_FOUND, path, v.ptr, detail);
    kapi_buf_dispose(&v);
}

void kapi_field_too_long(kapi_error *err, const char *path, long long max)
{
    kapi_error_add_cause(err, KAPI_FIELD_TOO_LONG, path ? path : "",
                         "Too long: must have at most %lld bytes", max);
}

void kapi_field_too_many(kapi_error *err, const char *path, long long actual, long long max)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "Too many");
    if (actual >= 0)
        kapi_buf_printf(&b, ": %lld", actual);
    if (max >= 0)
        kapi_buf_printf(&b, ": must have at most %lld items", max);
    else
        kapi_buf_puts(&b, ": has too many items");
    kapi_error_add_cause(err, KAPI_FIELD_TOO_MANY, path ? path : "", "%s", b.ptr);
    kapi_buf_dispose(&b);
}

/* ---- the 422 answer ---- */

/* The text Go's field.Error.Error() gives one cause: "<field>: <body>". */
static char *cause_text(const kapi_cause *c)
{
    return kapi_xprintf("%s: %s", c->field ? c->field : "", c->message);
}

void kapi_field_aggregate(kapi_buf *b, const kapi_error *err)
{
    char **seen = kapi_xcalloc(err->ncauses ? err->ncauses : 1, sizeof(*seen));
    size_t nseen = 0;
    for (size_t i = 0; i < err->ncauses; i++) {
        char *text = cause_text(&err->causes[i]);
        bool dup = false;
        for (size_t j = 0; j < nseen && !dup; j++)
            dup = strcmp(seen[j], text) == 0;
        if (dup)
            free(text);
        else
            seen[nseen++] = text;
    }
    if (nseen > 1)
        kapi_buf_putc(b, '[');
    for (size_t i = 0; i < nseen; i++) {
        kapi_buf_printf(b, "%s%s", i ? ", " : "", seen[i]);
        free(seen[i]);
    }
    if (nseen > 1)
        kapi_buf_putc(b, ']');
    free(seen);
}

kapi_error *kapi_field_finish_invalid(kapi_error *err, const char *kind, const char *group,
                                      const char *name)
{
    return kapi_field_finish_invalid_n(err, kind, group, name ? kapi_str_c(name) : KAPI_STR(""));
}

kapi_error *kapi_field_finish_invalid_n(kapi_error *err, const char *kind, const char *group,
                                        kapi_str name)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_printf(&b, "%s%s%s ", kind, group && *group ? "." : "", group ? group : "");
    kapi_go_quote(&b, name.ptr ? name.ptr : "", name.len);
    kapi_buf_puts(&b, " is invalid");
    if (err->ncauses > 0)
        kapi_buf_puts(&b, ": ");
    kapi_field_aggregate(&b, err);
    err->status = KAPI_STATUS_INVALID;
    free(err->message);
    err->message = kapi_buf_detach(&b, NULL);
    kapi_error_details(err, name.ptr, group, kind);
    return err;
}

/* ---- value rules ---- */

#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG                                                                                  \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "    \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "         \
    "validation is '" QNAME_FMT "')"
#define LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define LABEL_MSG                                                                                  \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '" LABEL_FMT "')"
#define SUBDOMAIN_MSG                                                                              \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '" LABEL_FMT "(\\." LABEL_FMT ")*')"

static const char msg_max63[] = "must be no more than 63 characters";
static const char msg_max253[] = "must be no more than 253 characters";
static const char msg_label[] = LABEL_MSG;
static const char msg_subdomain[] = SUBDOMAIN_MSG;
static const char msg_dns1035[] =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
static const char msg_qname_format[] =
    "a qualified name " QNAME_MSG " with an optional DNS subdomain prefix and '/' (e.g. "
    "'example.com/MyName')";
static const char msg_name_empty[] = "name part must be non-empty";
static const char msg_name_max[] = "name part must be no more than 63 characters";
static const char msg_name_regex[] = "name part " QNAME_MSG;
static const char msg_prefix_empty[] = "prefix part must be non-empty";
static const char msg_prefix_max[] = "prefix part must be no more than 253 characters";
static const char msg_prefix_regex[] = "prefix part " SUBDOMAIN_MSG;
static const char msg_label_value[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '(" QNAME_FMT ")?')";
static const char msg_env_var[] =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
    "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
static const char msg_config_key[] =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')";

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n). */
static bool match_label(const char *s, size_t n)
{
    if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool match_subdomain(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (!match_label(s + start, i - start))
            return false;
        start = i + 1;
    }
    return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n). */
static bool match_qname(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

size_t kapi_is_dns1123_label(const char *v, const char **out)
{
    size_t n = 0, len = strlen(v);
    if (len > 63)
        out[n++] = msg_max63;
    if (!match_label(v, len))
        out[n++] = msg_label;
    return n;
}

size_t kapi_is_dns1123_subdomain(const char *v, const char **out)
{
    size_t n = 0, len = strlen(v);
    if (len > 253)
        out[n++] = msg_max253;
    if (!match_subdomain(v, len))
        out[n++] = msg_subdomain;
    return n;
}

size_t kapi_is_dns1035_label(const char *v, const char **out)
{
    size_t n = 0, len = strlen(v);
    if (len > 63)
        out[n++] = msg_max63;
    bool ok = len > 0 && v[0] >= 'a' && v[0] <= 'z' && is_lower_alnum(v[len - 1]);
    for (size_t i = 0; ok && i < len; i++)
        ok = is_lower_alnum(v[i]) || v[i] == '-';
    if (!ok)
        out[n++] = msg_dns1035;
    return n;
}

size_t kapi_is_qualified_name(const char *v, const char **out)
{
    size_t n = 0;
    const char *slash = strchr(v, '/');
    const char *name = v;
    if (slash && strchr(slash + 1, '/')) {
        out[0] = msg_qname_format;
        return 1;
    }
    if (slash) {
        size_t plen = (size_t)(slash - v);
        if (plen == 0) {
            out[n++] = msg_prefix_empty;
        } else {
            if (plen > 253)
                out[n++] = msg_prefix_max;
            if (!match_subdomain(v, plen))
                out[n++] = msg_prefix_regex;
        }
        name = slash + 1;
    }
    size_t len = strlen(name);
    if (len == 0)
        out[n++] = msg_name_empty;
    else if (len > 63)
        out[n++] = msg_name_max;
    if (!match_qname(name, len))
        out[n++] = msg_name_regex;
    return n;
}

size_t kapi_is_label_value(const char *v, const char **out)
{
    size_t n = 0, len = strlen(v);
    if (len > 63)
        out[n++] = msg_max63;
    if (len > 0 && !match_qname(v, len))
        out[n++] = msg_label_value;
    return n;
}

/* hasChDirPrefix: ".", ".." and names starting with "..". */
static size_t chdir_prefix(const char *v, const char **out)
{
    if (strcmp(v, ".") == 0)
        out[0] = "must not be '.'";
    else if (strcmp(v, "..") == 0)
        out[0] = "must not be '..'";
    else if (strncmp(v, "..", 2) == 0)
        out[0] = "must not start with '..'";
    else
        return 0;
    return 1;
}

static bool env_char(char c)
{
    return is_alnum(c) || c == '-' || c == '.' || c == '_';
}

size_t kapi_is_env_var_name(const char *v, const char **out)
{
    size_t n = 0;
    bool ok = v[0] && env_char(v[0]) && !(v[0] >= '0' && v[0] <= '9');
    for (size_t i = 1; ok && v[i]; i++)
        ok = env_char(v[i]);
    if (!ok)
        out[n++] = msg_env_var;
    return n + chdir_prefix(v, out + n);
}

size_t kapi_is_config_map_key(const char *v, const char **out)
{
    size_t n = 0, len = strlen(v);
    if (len > 253)
        out[n++] = msg_max253;
    bool ok = len > 0;
    for (size_t i = 0; ok && i < len; i++)
        ok = env_char(v[i]);
    if (!ok)
        out[n++] = msg_config_key;
    return n + chdir_prefix(v, out + n);
}

size_t kapi_is_port_name(const char *v, const char **out)
{
    size_t n = 0, len = strlen(v);
    bool charset = len > 0, letter = false;
    for (size_t i = 0; i < len; i++) {
        charset = charset && (is_lower_alnum(v[i]) || v[i] == '-');
        letter = letter || (v[i] >= 'a' && v[i] <= 'z');
    }
    if (len > 15)
        out[n++] = "must be no more than 15 characters";
    if (!charset)
        out[n++] = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
    if (!letter)
        out[n++] = "must contain at least one letter (a-z)";
    if (strstr(v, "--"))
        out[n++] = "must not contain consecutive hyphens";
    if (len > 0 && (v[0] == '-' || v[len - 1] == '-'))
        out[n++] = "must not begin or end with a hyphen";
    return n;
}

size_t kapi_is_port_num(long long port, const char **out)
{
    if (port >= 1 && port <= 65535)
        return 0;
    out[0] = "must be between 1 and 65535, inclusive";
    return 1;
}

/* maskTrailingDash, bug for bug: "abc-" becomes "aba" (Go drops the two last bytes). */
static char *mask_trailing_dash(const char *name)
{
    size_t n = strlen(name);
    if (n > 1 && name[n - 1] == '-') {
        char *s = kapi_xmalloc(n);
        memcpy(s, name, n - 2);
        s[n - 2] = 'a';
        s[n - 1] = '\0';
        return s;
    }
    return kapi_xstrdup(name);
}

static size_t name_rule(size_t (*rule)(const char *, const char **), const char *name, bool prefix,
                        const char **out)
{
    char *v = prefix ? mask_trailing_dash(name) : (char *)name;
    size_t n = rule(v, out);
    if (prefix)
        free(v);
    return n;
}

size_t kapi_name_dns_label(void *ctx, const char *name, bool prefix, const char **out)
{
    (void)ctx;
    return name_rule(kapi_is_dns1123_label, name, prefix, out);
}

size_t kapi_name_dns_subdomain(void *ctx, const char *name, bool prefix, const char **out)
{
    (void)ctx;
    return name_rule(kapi_is_dns1123_subdomain, name, prefix, out);
}

size_t kapi_name_dns1035_label(void *ctx, const char *name, bool prefix, const char **out)
{
    (void)ctx;
    return name_rule(kapi_is_dns1035_label, name, prefix, out);
}

size_t kapi_name_path_segment(void *ctx, const char *name, bool prefix, const char **out)
{
    size_t n = 0;
    (void)ctx;
    if (!prefix && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)) {
        out[0] = name[1] ? "may not be '..'" : "may not be '.'";
        return 1;
    }
    if (strchr(name, '/'))
        out[n++] = "may not contain '/'";
    if (strchr(name, '%'))
        out[n++] = "may not contain '%'";
    return n;
}
