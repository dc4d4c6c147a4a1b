/*
 * registry/validate_node: Node (core/v1) as Kubernetes 1.26 validates it (ValidateNode,
 * ValidateNodeUpdate): a subdomain name, the scheduler's alpha annotations of taints and
 * preferAvoidPods (decoded as Go's encoding/json decodes them, with its errors), taints (qualified
 * key, label value, one of the three effects, unique by key and effect; reported under
 * metadata.taints, as 1.26 does), status.capacity and status.allocatable quantities (not negative,
 * whole for counted and extended resources), spec.podCIDRs (each a CIDR, at most one per family, no
 * duplicates), and on update spec.podCIDRs, spec.providerID and spec.externalID fixed once set, and
 * no duplicate status.addresses. A status write is checked by the update rules alone, as kube's
 * status strategy does.
 */
#include <ctype.h>
#include <stdlib.h>
#include <strings.h>

#include "base/cidr.h"
#include "codec/go.h"
#include "registry/registry_int.h"

static const kapi_gofield taint_fields[] = {
    {"Key", "key", KAPI_GO_STRING, NULL, NULL},
    {"Value", "value", KAPI_GO_STRING, NULL, NULL},
    {"Effect", "effect", KAPI_GO_STRING, NULL, NULL},
    {"TimeAdded", "timeAdded", KAPI_GO_TIME_PTR, NULL, NULL},
};
static const kapi_gotype taint = {"core.Taint", taint_fields, KAPI_ARRAY_LEN(taint_fields)};

static const kapi_gofield address_fields[] = {
    {"Type", "type", KAPI_GO_STRING, NULL, NULL},
    {"Address", "address", KAPI_GO_STRING, NULL, NULL},
};
static const kapi_gotype address = {"core.NodeAddress", address_fields,
                                    KAPI_ARRAY_LEN(address_fields)};

static void invalid_each(kapi_error *err, const char *path, const char *v,
                         size_t (*rule)(const char *, const char **))
{
    const char *msgs[KAPI_MSGS_MAX];
    size_t n = rule(v, msgs);
    kapi_field_invalid_each(err, path, v, msgs, n);
}

/* "Duplicate value: <%#v of v as t>[: detail]". */
static void duplicate(kapi_error *err, const char *path, const kapi_gotype *t, const json_t *v,
                      const char *detail)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_gofmt(&b, t, v);
    kapi_error_add_cause(err, KAPI_FIELD_DUPLICATE, path, "Duplicate value: %s%s%s", b.ptr,
                         detail ? ": " : "", detail ? detail : "");
    kapi_buf_dispose(&b);
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* validateNodeTaints, the causes under base. */
static void taints(kapi_error *err, kapi_arena *a, const json_t *list, const char *base)
{
    static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *t = json_array_get(list, i);
        const char *at = kapi_path_index(a, base, i);
        const char *key = kapi_registry__str(t, "key"), *effect = kapi_registry__str(t, "effect");
        const char *value = kapi_registry__str(t, "value");
        invalid_each(err, kapi_path_child(a, at, "key"), key, kapi_is_qualified_name);
        const char *msgs[KAPI_MSGS_MAX];
        size_t n = kapi_is_label_value(value, msgs);
        if (n) {
            kapi_buf b;
            kapi_buf_init(&b);
            for (size_t m = 0; m < n; m++)
                kapi_buf_printf(&b, "%s%s", m ? ";" : "", msgs[m]);
            kapi_field_invalid_str(err, kapi_path_child(a, at, "value"), value, "%s", b.ptr);
            kapi_buf_dispose(&b);
        }
        if (!*effect)
            kapi_field_required(err, kapi_path_child(a, at, "effect"), NULL);
        else if (strcmp(effect, effects[0]) && strcmp(effect, effects[1]) &&
                 strcmp(effect, effects[2]))
            kapi_field_not_supported(err, kapi_path_child(a, at, "effect"), effect, effects);
        for (size_t j = 0; j < i; j++) {
            const json_t *o = json_array_get(list, j);
            if (strcmp(kapi_registry__str(o, "key"), key) == 0 &&
                strcmp(kapi_registry__str(o, "effect"), effect) == 0) {
                duplicate(err, at, &taint, t, "taints must be unique by key and effect pair");
                break;
            }
        }
    }
}

/* ---- the alpha scheduler annotations (ValidateNodeSpecificAnnotations) ---- */

#define TAINTS_KEY "scheduler.alpha.kubernetes.io/taints"
#define AVOID_KEY "scheduler.alpha.kubernetes.io/preferAvoidPods"

/* The Go types kube's encoding/json decodes the annotations into. */
typedef enum { GO_STRING, GO_BOOL, GO_TIME, GO_STRUCT, GO_SLICE } go_kind;
typedef struct go_type go_type;
typedef struct go_field {
    const char *json;
    const go_type *type;
} go_field;
struct go_type {
    const char *name; /* as a type error names it: "[]core.Taint", "bool" */
    go_kind kind;
    const go_type *elem;     /* GO_SLICE */
    const go_field *fields;  /* GO_STRUCT, NULL-terminated */
    const char *struct_name; /* GO_STRUCT: reflect's Name(), "Taint" */
    /* GO_STRUCT: a type error's path names its fields the Go way ("Key", its JSON name
     * capitalised): kube's internal types have no JSON names */
    bool go_names;
};

static const go_type go_string = {"string", GO_STRING, NULL, NULL, NULL, false};
static const go_type go_uid = {"types.UID", GO_STRING, NULL, NULL, NULL, false};
static const go_type go_bool = {"bool", GO_BOOL, NULL, NULL, NULL, false};
static const go_type go_time = {"string", GO_TIME, NULL, NULL, NULL, false}; /* metav1.Time */
static const go_field taint_go_fields[] = {{"key", &go_string},
                                           {"value", &go_string},
                                           {"effect", &go_string},
                                           {"timeAdded", &go_time},
                                           {NULL, NULL}};
static const go_type go_taint = {"core.Taint", GO_STRUCT, NULL, taint_go_fields, "Taint", true};
static const go_type go_taints = {"[]core.Taint", GO_SLICE, &go_taint, NULL, NULL, false};
static const go_field owner_go_fields[] = {{"apiVersion", &go_string},
                                           {"kind", &go_string},
                                           {"name", &go_string},
                                           {"uid", &go_uid},
                                           {"controller", &go_bool},
                                           {"blockOwnerDeletion", &go_bool},
                                           {NULL, NULL}};
static const go_type go_owner = {"v1.OwnerReference", GO_STRUCT,        NULL,
                                 owner_go_fields,     "OwnerReference", false};
static const go_field signature_go_fields[] = {{"podController", &go_owner}, {NULL, NULL}};
static const go_type go_signature = {"v1.PodSignature",   GO_STRUCT,      NULL,
                                     signature_go_fields, "PodSignature", false};
static const go_field entry_go_fields[] = {{"podSignature", &go_signature},
                                           {"evictionTime", &go_time},
                                           {"reason", &go_string},
                                           {"message", &go_string},
                                           {NULL, NULL}};
static const go_type go_entry = {"v1.PreferAvoidPodsEntry", GO_STRUCT, NULL, entry_go_fields,
                                 "PreferAvoidPodsEntry",    false};
static const go_type go_entries = {
    "[]v1.PreferAvoidPodsEntry", GO_SLICE, &go_entry, NULL, NULL, false};
static const go_field avoid_go_fields[] = {{"preferAvoidPods", &go_entries}, {NULL, NULL}};
static const go_type go_avoid = {"v1.AvoidPods",  GO_STRUCT,   NULL,
                                 avoid_go_fields, "AvoidPods", false};

/* Where the decoder is: the innermost struct and the field names from the top. */
typedef struct go_decoder {
    const char *struct_name;
    kapi_buf fields;
    char *saved; /* the first type error: decoding goes on after it */
    char *hard;  /* an error that stops decoding (a time that does not parse) */
} go_decoder;

static void type_error(go_decoder *d, const json_t *v, const char *type)
{
    if (d->saved)
        return;
    if (d->struct_name)
        d->saved = kapi_xprintf("json: cannot unmarshal %s into Go struct field %s.%s of type %s",
                                kapi_go_json_kind(v), d->struct_name, d->fields.ptr, type);
    else
        d->saved = kapi_xprintf("json: cannot unmarshal %s into Go value of type %s",
                                kapi_go_json_kind(v), type);
}

/* The value v decodes to as t (a new reference, NULL for Go's zero value): objects with
 * t's field names (Go matches them regardless of case; a later duplicate wins), unknown
 * members left out. Errors go to d. */
static json_t *go_decode(go_decoder *d, const json_t *v, const go_type *t)
{
    if (json_is_null(v) || d->hard)
        return NULL;
    switch (t->kind) {
    case GO_STRING:
    case GO_TIME:
        if (!json_is_string(v)) {
            type_error(d, v, t->name);
            return NULL;
        }
        if (t->kind == GO_TIME) {
            kapi_go_time tm;
            d->hard = kapi_go_parse_time(json_string_value(v), false, &tm);
        }
        return json_incref((json_t *)v);
    case GO_BOOL:
        if (!json_is_boolean(v)) {
            type_error(d, v, t->name);
            return NULL;
        }
        return json_incref((json_t *)v);
    case GO_SLICE: {
        if (!json_is_array(v)) {
            type_error(d, v, t->name);
            return NULL;
        }
        json_t *out = json_array();
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = go_decode(d, json_array_get(v, i), t->elem);
            json_array_append_new(out, e ? e : json_object());
        }
        return out;
    }
    case GO_STRUCT:
        break;
    }
    if (!json_is_object(v)) {
        type_error(d, v, t->name);
        return NULL;
    }
    json_t *out = json_object();
    const char *key;
    json_t *member;
    json_object_foreach((json_t *)v, key, member)
    {
        const go_field *f = t->fields;
        while (f->json && strcmp(f->json, key) != 0)
            f++;
        if (!f->json)
            for (f = t->fields; f->json && strcasecmp(f->json, key) != 0;)
                f++;
        if (!f->json)
            continue;
        const char *outer = d->struct_name;
        size_t len = d->fields.len;
        d->struct_name = t->struct_name;
        kapi_buf_printf(&d->fields, "%s%c%s", len ? "." : "",
                        t->go_names ? toupper((unsigned char)f->json[0]) : f->json[0], f->json + 1);
        json_t *got = go_decode(d, member, f->type);
        d->struct_name = outer;
        d->fields.len = len;
        d->fields.ptr[len] = '\0';
        if (got)
            json_object_set_new(out, f->json, got);
        else
            json_object_del(out, f->json);
    }
    return out;
}

/* The annotation's value decoded as t: NULL, with Go's error into *why (heap). */
static json_t *go_unmarshal(const char *text, const go_type *t, char **why)
{
    json_t *v = kapi_json_parse(text, strlen(text), why);
    if (!v)
        return NULL;
    go_decoder d = {0};
    kapi_buf_init(&d.fields);
    kapi_buf_puts(&d.fields, "");
    json_t *out = go_decode(&d, v, t);
    json_decref(v);
    kapi_buf_dispose(&d.fields);
    *why = d.hard ? d.hard : d.saved;
    if (d.hard)
        free(d.saved);
    if (*why) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ValidateNodeSpecificAnnotations: the taints and preferAvoidPods annotations, when set,
 * must decode, and what they hold must be valid. */
static void node_annotations(kapi_error *err, kapi_arena *a, const json_t *obj)
{
    const json_t *ann = kapi_json_path(obj, "metadata.annotations");
    const char *text = json_string_value(json_object_get(ann, TAINTS_KEY));
    char *why = NULL;
    if (text && *text) {
        json_t *list = go_unmarshal(text, &go_taints, &why);
        if (why)
            kapi_field_invalid_str(err, "metadata.annotations", TAINTS_KEY, "%s", why);
        else
            taints(err, a, list, "metadata.annotations." TAINTS_KEY);
        json_decref(list);
        free(why);
        why = NULL;
    }
    text = json_string_value(json_object_get(ann, AVOID_KEY));
    if (!text || !*text)
        return;
    json_t *avoid = go_unmarshal(text, &go_avoid, &why);
    if (why)
        kapi_field_invalid_str(err, "metadata.annotations.AvoidPods", AVOID_KEY, "%s", why);
    const json_t *entries = json_object_get(avoid, "preferAvoidPods");
    for (size_t i = 0; i < json_array_size(entries); i++) {
        const char *at = kapi_path_index(a, "metadata.annotations." AVOID_KEY, i);
        const json_t *ctl =
            kapi_json_path(json_array_get(entries, i), "podSignature.podController");
        const char *sig = kapi_path_child(a, at, "PodSignature");
        if (!ctl)
            kapi_field_required(err, sig, NULL);
        /* kube reads a missing controller too (and fails); it is false here */
        else if (!json_is_true(json_object_get(ctl, "controller")))
            kapi_field_invalid_raw(
                err, kapi_path_child(a, kapi_path_child(a, sig, "PodController"), "Controller"),
                "false", "must point to a controller");
    }
    json_decref(avoid);
    free(why);
}

/* The spec.podCIDRs rules of ValidateNode. */
static void pod_cidrs(kapi_error *err, kapi_arena *a, const json_t *cidrs)
{
    size_t n = json_array_size(cidrs);
    int v4 = 0, v6 = 0;
    kapi_buf shown;
    kapi_buf_init(&shown);
    kapi_gofmt_strings(&shown, cidrs);
    const char *bad = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(cidrs, i));
        kapi_cidr c;
        if (!kapi_cidr_parse(s ? s : "", &c)) {
            kapi_field_invalid_raw(err, kapi_path_index(a, "spec.podCIDRs", i), shown.ptr,
                                   "must be valid CIDR");
            bad = bad ? bad : s ? s : "";
        } else {
            *(c.v4 ? &v4 : &v6) += 1;
        }
    }
    if (n > 1 && bad) {
        /* netutils.IsDualStackCIDRStrings fails at the first CIDR that does not parse */
        kapi_buf q;
        kapi_buf_init(&q);
        kapi_go_quote(&q, bad, strlen(bad));
        kapi_error_add_cause(err, "InternalError", "spec.podCIDRs",
                             "Internal error: invalid PodCIDRs. failed to check with dual stack "
                             "with error:failed to parse cidr value:%s with error:invalid CIDR "
                             "address: %s",
                             q.ptr, bad);
        kapi_buf_dispose(&q);
    }
    if (n > 1 && (bad || v4 != 1 || v6 != 1 || n > 2))
        kapi_field_invalid_raw(err, "spec.podCIDRs", shown.ptr,
                               "may specify no more than one CIDR for each IP family");
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(cidrs, i), json_array_get(cidrs, j))) {
                const char *s = json_string_value(json_array_get(cidrs, i));
                kapi_field_duplicate(err, kapi_path_index(a, "spec.podCIDRs", i), s);
                break;
            }
    kapi_buf_dispose(&shown);
}

/* ValidateNodeResources: status.capacity and status.allocatable (in name order, where
 * kube walks a Go map). */
static void resources(kapi_error *err, kapi_arena *a, const json_t *status)
{
    static const char *const lists[] = {"capacity", "allocatable"};
    for (size_t l = 0; l < KAPI_ARRAY_LEN(lists); l++) {
        const json_t *list = json_object_get(status, lists[l]);
        const char *at = kapi_path_child(a, "status", lists[l]);
        size_t n = json_object_size(list), i = 0;
        const char **keys = kapi_xcalloc(n ? n : 1, sizeof(*keys));
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)list, k, v) keys[i++] = k;
        qsort(keys, n, sizeof(*keys), by_name);
        for (i = 0; i < n; i++)
            kapi_registry__resource_quantity(err, keys[i], json_object_get(list, keys[i]),
                                             kapi_path_child(a, at, keys[i]));
        free(keys);
    }
}

/* ValidateNode, less its metadata. */
static void node(kapi_error *err, kapi_arena *a, const json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");
    node_annotations(err, a, obj);
    taints(err, a, json_object_get(spec, "taints"), "metadata.taints");
    resources(err, a, json_object_get(obj, "status"));
    pod_cidrs(err, a, json_object_get(spec, "podCIDRs"));
}

/* ValidateNodeUpdate, less its metadata. */
static void node_update(kapi_error *err, const json_t *obj, const json_t *old)
{
    const json_t *spec = json_object_get(obj, "spec"), *old_spec = json_object_get(old, "spec");
    const json_t *addrs = kapi_json_path(obj, "status.addresses");
    kapi_arena a;
    kapi_arena_init(&a);
    node_annotations(err, &a, obj);
    resources(err, &a, json_object_get(obj, "status"));
    for (size_t i = 1; i < json_array_size(addrs); i++)
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(addrs, i), json_array_get(addrs, j))) {
                duplicate(err, kapi_path_index(&a, "status.addresses", i), &address,
                          json_array_get(addrs, i), NULL);
                break;
            }
    const json_t *cidrs = json_object_get(spec, "podCIDRs");
    const json_t *old_cidrs = json_object_get(old_spec, "podCIDRs");
    size_t n = json_array_size(old_cidrs);
    if (n > 0) {
        /* one cause for a length change, else one per changed entry, as kube reports */
        size_t bad = json_array_size(cidrs) != n;
        for (size_t i = 0; !bad && i < n; i++)
            bad += !json_equal(json_array_get(cidrs, i), json_array_get(old_cidrs, i));
        for (size_t i = 0; i < bad; i++)
            kapi_field_forbidden(err, "spec.podCIDRs",
                                 "node updates may not change podCIDR except from \"\" to valid");
    }
    const char *pid = kapi_registry__str(spec, "providerID");
    const char *old_pid = kapi_registry__str(old_spec, "providerID");
    if (*old_pid && strcmp(old_pid, pid) != 0)
        kapi_field_forbidden(err, "spec.providerID",
                             "node updates may not change providerID except from \"\" to valid");
    if (strcmp(kapi_registry__str(spec, "externalID"), kapi_registry__str(old_spec, "externalID")))
        kapi_field_forbidden(err, "spec.externalID", "may not be updated");
    if (json_array_size(json_object_get(spec, "taints")))
        taints(err, &a, json_object_get(spec, "taints"), "metadata.taints");
    kapi_arena_dispose(&a);
}

void kapi_registry__validate_node(const kapi_type *t, const json_t *obj, const json_t *old,
                                  kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_registry__validate_meta_as(t, obj, old, true, err);
    node(err, &a, obj);
    if (old)
        node_update(err, obj, old);
    kapi_arena_dispose(&a);
}

void kapi_registry__validate_node_status(const kapi_type *t, const char *sub, const json_t *obj,
                                         const json_t *old, kapi_error *err)
{
    kapi_arena a;
    (void)t, (void)sub;
    kapi_arena_init(&a);
    kapi_meta_validate_update(err, &a, json_object_get(obj, "metadata"),
                              json_object_get(old, "metadata"), "metadata", true);
    node_update(err, obj, old);
    kapi_arena_dispose(&a);
}
