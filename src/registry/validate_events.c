/*
 * registry/validate_events: Event validation as Kubernetes 1.26 does it
 * (pkg/apis/core/validation/events.go), for both served views of the one stored core/v1
 * Event.
 *
 * Kubernetes validates the internal (core) object, so causes use core field names in
 * both views (involvedObject.namespace, message, source, count, firstTimestamp, ...);
 * only the reporting controller is named after the request's version
 * (core/v1 "reportingComponent", events.k8s.io "reportingController"). Most values are
 * shown as "" with the real value in the detail, as 1.26 does.
 *
 * core/v1 (create and update): the legacy rules only — namespace agreement with
 * involvedObject, and for events with an eventTime the reporting fields, action and
 * lengths. events.k8s.io/v1 adds the strict rules: metadata, series, eventTime, type
 * Normal or Warning, the deprecated fields unset on create, and most fields immutable on
 * update.
 */
#include "codec/go.h"
#include "registry/registry_int.h"

#define REPORTING_INSTANCE_MAX 128
#define ACTION_MAX 128
#define REASON_MAX 128
#define NOTE_MAX 1024

/* An Event read by its core/v1 member names: obj in the core/v1 view, or in the
 * events.k8s.io/v1 view as it was sent (a create reads it so, without making the core
 * view: every member is read as Go reads a zero value, absent, null, "" and 0 alike). */
typedef struct event {
    const json_t *obj;
    bool core; /* obj is in the core/v1 view */
} event;

static const json_t *member(const event *e, const char *core_name)
{
    return e->core ? json_object_get(e->obj, core_name)
                   : kapi_registry__event_member(e->obj, core_name);
}

/* A string value, "" when it is not a string. */
static const char *str(const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? s : "";
}

/* True when a time value is Go's zero time (unset, null, or year 1). */
static bool zero_time(const json_t *v)
{
    const char *s = str(v);
    return !*s || strncmp(s, "0001-01-01T00:00:00", 19) == 0;
}

/* A length limit worded as the events code words it: the value is shown as "". */
static void at_most(kapi_error *err, const char *path, const char *v, size_t max)
{
    if (strlen(v) > max)
        kapi_field_invalid_str(err, path, "", "can have at most %zu characters", max);
}

/* legacyValidateEvent */
static void legacy(kapi_error *err, const event *ev, bool core_view)
{
    const char *msgs[KAPI_MSGS_MAX];
    const char *ns = kapi_registry__str(member(ev, "metadata"), "namespace");
    const char *ins = kapi_registry__str(member(ev, "involvedObject"), "namespace");
    const char *rc_field = core_view ? "reportingComponent" : "reportingController";
    const char *rc = str(member(ev, "reportingComponent"));
    const char *mismatch = "does not match event.namespace";
    if (zero_time(member(ev, "eventTime"))) {
        if (!*ins && *ns && strcmp(ns, "default") != 0)
            kapi_field_invalid_str(err, "involvedObject.namespace", ins, "%s", mismatch);
        else if (*ins && strcmp(ns, ins) != 0)
            kapi_field_invalid_str(err, "involvedObject.namespace", ins, "%s", mismatch);
    } else {
        if (!*ins && strcmp(ns, "default") != 0 && strcmp(ns, "kube-system") != 0)
            kapi_field_invalid_str(err, "involvedObject.namespace", ins, "%s", mismatch);
        if (!*rc)
            kapi_field_required(err, rc_field, "");
        size_t n = kapi_is_qualified_name(rc, msgs);
        kapi_field_invalid_each(err, rc_field, rc, msgs, n);
        const char *ri = str(member(ev, "reportingInstance")), *action = str(member(ev, "action"));
        const char *reason = str(member(ev, "reason"));
        if (!*ri)
            kapi_field_required(err, "reportingInstance", "");
        at_most(err, "reportingInstance", ri, REPORTING_INSTANCE_MAX);
        if (!*action)
            kapi_field_required(err, "action", "");
        at_most(err, "action", action, ACTION_MAX);
        if (!*reason)
            kapi_field_required(err, "reason", "");
        at_most(err, "reason", reason, REASON_MAX);
        at_most(err, "message", str(member(ev, "message")), NOTE_MAX);
    }
    size_t n = kapi_is_dns1123_subdomain(ns, msgs);
    kapi_field_invalid_each(err, "namespace", ns, msgs, n);
}

/* validateV1EventSeries, of the Event's series s */
static void series(kapi_error *err, const json_t *s)
{
    if (!s || json_is_null(s))
        return;
    if (kapi_registry__int(s, "count") < 2)
        kapi_field_invalid_str(err, "series.count", "", "should be at least 2");
    if (zero_time(json_object_get(s, "lastObservedTime")))
        kapi_field_required(err, "series.lastObservedTime", "");
}

static void strict_create(kapi_error *err, kapi_arena *a, const kapi_type *t, const event *ev)
{
    kapi_meta_rules rules;
    const char *type = str(member(ev, "type"));
    const json_t *src = member(ev, "source");
    kapi_registry__meta_rules(t, true, &rules);
    kapi_meta_validate(err, a, member(ev, "metadata"), "metadata", &rules);
    series(err, member(ev, "series"));
    if (zero_time(member(ev, "eventTime")))
        kapi_field_required(err, "eventTime", "");
    if (strcmp(type, "Normal") != 0 && strcmp(type, "Warning") != 0)
        kapi_field_invalid_str(err, "type", "", "has invalid value: %s", type);
    if (!zero_time(member(ev, "firstTimestamp")))
        kapi_field_invalid_str(err, "firstTimestamp", "", "needs to be unset");
    if (!zero_time(member(ev, "lastTimestamp")))
        kapi_field_invalid_str(err, "lastTimestamp", "", "needs to be unset");
    if (json_integer_value(member(ev, "count")) != 0)
        kapi_field_invalid_str(err, "count", "", "needs to be unset");
    if (*kapi_registry__str(src, "component") || *kapi_registry__str(src, "host"))
        kapi_field_invalid_str(err, "source", "", "needs to be unset");
}

/* ---- update: immutable fields, rendered as Go renders each field's type ---- */

static const kapi_gofield source_fields[] = {
    {"Component", "component", KAPI_GO_STRING, NULL, NULL},
    {"Host", "host", KAPI_GO_STRING, NULL, NULL},
};
static const kapi_gotype go_source = {"core.EventSource", source_fields,
                                      KAPI_ARRAY_LEN(source_fields)};

typedef enum { IM_STRING, IM_INT, IM_TIME, IM_STRUCT, IM_STRUCT_PTR } im_kind;

/* One immutable field: path, the core member it reads, how Go renders it. */
typedef struct immutable {
    const char *path, *member;
    im_kind kind;
    const kapi_gotype *type;
} immutable;

/* Go's zero value test of a flat struct member: absent, null, "", 0 or false. */
static bool zero_member(const json_t *v)
{
    return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0) ||
           (json_is_integer(v) && json_integer_value(v) == 0) || json_is_false(v);
}

/* Equality of two flat structs, a missing member being its zero value. */
static bool struct_equal(const json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v)
    {
        const json_t *w = json_object_get(b, k);
        if (zero_member(v) ? !zero_member(w) : !(w && json_equal(v, (json_t *)w)))
            return false;
    }
    json_object_foreach((json_t *)b, k,
                        v) if (!zero_member(v) && !json_object_get(a, k)) return false;
    return true;
}

static bool same(const json_t *a, const json_t *b, im_kind kind)
{
    bool an = !a || json_is_null(a), bn = !b || json_is_null(b);
    switch (kind) {
    case IM_STRING:
        return strcmp(json_string_value(a) ?: "", json_string_value(b) ?: "") == 0;
    case IM_INT:
        return json_integer_value(a) == json_integer_value(b);
    case IM_TIME:
        return (an && bn) || (!an && !bn && json_equal((json_t *)a, (json_t *)b));
    case IM_STRUCT:
        return struct_equal(an ? NULL : a, bn ? NULL : b);
    default:
        return (an && bn) || (!an && !bn && struct_equal(a, b));
    }
}

static void immutable_check(kapi_error *err, const immutable *f, const json_t *ev,
                            const json_t *old)
{
    const json_t *now = json_object_get(ev, f->member), *before = json_object_get(old, f->member);
    if (same(now, before, f->kind))
        return;
    kapi_buf b;
    kapi_buf_init(&b);
    switch (f->kind) {
    case IM_STRING:
        kapi_go_quote(&b, json_string_value(now) ?: "", json_string_length(now));
        break;
    case IM_INT:
        kapi_buf_printf(&b, "%lld", (long long)json_integer_value(now));
        break;
    case IM_TIME:
        kapi_gofmt_time(&b, json_string_value(now));
        break;
    default:
        if (f->kind == IM_STRUCT_PTR && (!now || json_is_null(now)))
            kapi_buf_puts(&b, "\"null\"");
        else
            kapi_gofmt(&b, f->type, now);
    }
    kapi_field_invalid_raw(err, f->path, b.ptr, "field is immutable");
    kapi_buf_dispose(&b);
}

/* The truncated-to-microsecond comparison of eventTime: equal texts are equal. */
static void strict_update(kapi_error *err, kapi_arena *a, const json_t *ev, const json_t *old)
{
    static const immutable fields[] = {
        {"involvedObject", "involvedObject", IM_STRUCT, &kapi_go_object_reference},
        {"reason", "reason", IM_STRING, NULL},
        {"message", "message", IM_STRING, NULL},
        {"source", "source", IM_STRUCT, &go_source},
        {"firstTimestamp", "firstTimestamp", IM_TIME, NULL},
        {"lastTimestamp", "lastTimestamp", IM_TIME, NULL},
        {"count", "count", IM_INT, NULL},
        {"reason", "reason", IM_STRING, NULL},
        {"type", "type", IM_STRING, NULL},
        {"eventTime", "eventTime", IM_TIME, NULL},
        {"action", "action", IM_STRING, NULL},
        {"related", "related", IM_STRUCT_PTR, &kapi_go_object_reference},
        {"reportingController", "reportingComponent", IM_STRING, NULL},
        {"reportingInstance", "reportingInstance", IM_STRING, NULL},
    };
    kapi_meta_validate_update(err, a, json_object_get(ev, "metadata"),
                              json_object_get(old, "metadata"), "metadata", true);
    const json_t *s = json_object_get(ev, "series"), *os = json_object_get(old, "series");
    if (!same(s, os, IM_STRUCT_PTR))
        series(err, s);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(fields); i++)
        immutable_check(err, &fields[i], ev, old);
}

/* The core/v1 form of an object of type t (a new reference). */
static json_t *core_view(const kapi_type *t, const json_t *obj)
{
    json_t *v = json_incref((json_t *)obj);
    kapi_error_free(kapi_type_to_storage(t, &v)); /* a built-in conversion, which cannot fail */
    return v;
}

void kapi_registry__validate_event(const kapi_type *t, const json_t *obj, const json_t *old,
                                   kapi_error *err)
{
    kapi_arena a;
    bool is_core = !*t->group;
    kapi_arena_init(&a);
    if (!old) { /* the object as it was sent */
        event e = {obj, is_core};
        legacy(err, &e, is_core);
        if (!is_core)
            strict_create(err, &a, t, &e);
    } else { /* the core views, whose values an immutable field's cause shows */
        json_t *ev = core_view(t, obj), *old_ev = core_view(t, old);
        event e = {ev, true};
        legacy(err, &e, is_core);
        if (!is_core)
            strict_update(err, &a, ev, old_ev);
        json_decref(ev);
        json_decref(old_ev);
    }
    kapi_arena_dispose(&a);
}
