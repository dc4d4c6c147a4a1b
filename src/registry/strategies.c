/*
 * registry/strategies: the code special to a type, by the strategy names the type files
 * use; a type with much of its own (namespaces, CRDs, custom resources) has its strategy
 * in its own file. Everything generic (metadata, names, revisions) is done by the API
 * pipeline.
 */
#include <string.h>

#include "codec/json.h"
#include "registry/registry_int.h"

/* cronjob: a new CronJob's status is the zero CronJobStatus. */
static void cronjob_create(const kapi_type *t, json_t *obj)
{
    (void)t;
    json_object_set_new_nocheck(obj, "status", json_object());
}

/* job: the annotation kube 1.26 marks Jobs tracked with finalizers by; an update cannot
 * remove it. */
#define JOB_TRACKING "batch.kubernetes.io/job-tracking"

/* job: generateSelector, for a Job whose selector is not manual: the template gets the
 * labels job-name (the Job's name) and controller-uid (its uid) unless it has them, and
 * the selector matchLabels controller-uid unless it has it; validation refuses any of
 * them that disagrees. (kube does this in its Validate, on the object it then stores.) */
static void job_generate_selector(json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    json_t *spec = kapi_json_object_ensure(obj, "spec");
    json_t *uid = json_object_get(meta, "uid"), *name = json_object_get(meta, "name");
    json_t *tmpl_meta =
        kapi_json_object_ensure(kapi_json_object_ensure(spec, "template"), "metadata");
    json_t *labels = kapi_json_object_ensure(tmpl_meta, "labels");
    if (!json_object_get(labels, "job-name"))
        json_object_set_new_nocheck(labels, "job-name", name ? json_incref(name) : json_string(""));
    if (!json_object_get(labels, "controller-uid"))
        json_object_set_new_nocheck(labels, "controller-uid",
                                    uid ? json_incref(uid) : json_string(""));
    json_t *match =
        kapi_json_object_ensure(kapi_json_object_ensure(spec, "selector"), "matchLabels");
    if (!json_object_get(match, "controller-uid"))
        json_object_set_new_nocheck(match, "controller-uid",
                                    uid ? json_incref(uid) : json_string(""));
}

/* job: a new Job's status is the zero JobStatus, and it is tracked with finalizers. A Job
 * without labels takes its template's, generated ones included: kube's defaulting does
 * that again when it reads the stored Job back for the answer. */
static void job_create(const kapi_type *t, json_t *obj)
{
    (void)t;
    json_object_set_new_nocheck(obj, "status", json_object());
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    json_object_set_new_nocheck(kapi_json_object_ensure(meta, "annotations"), JOB_TRACKING,
                                json_string_nocheck(""));
    if (!json_is_true(kapi_json_path(obj, "spec.manualSelector")))
        job_generate_selector(obj);
    json_t *labels = kapi_json_path(obj, "spec.template.metadata.labels");
    if (json_object_size(json_object_get(meta, "labels")) == 0 && json_object_size(labels))
        json_object_set_new_nocheck(meta, "labels", json_deep_copy(labels));
}

static void job_update(const kapi_type *t, json_t *obj, const json_t *old)
{
    (void)t;
    if (!json_object_get(kapi_json_path(old, "metadata.annotations"), JOB_TRACKING))
        return;
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    json_object_set_new_nocheck(kapi_json_object_ensure(meta, "annotations"), JOB_TRACKING,
                                json_string_nocheck(""));
}

/* serviceaccount: of each entry of secrets only the name is kept (kube's
 * cleanSecretReferences), on create and on update. */
static void serviceaccount_create(const kapi_type *t, json_t *obj)
{
    json_t *secrets = json_object_get(obj, "secrets"), *ref;
    size_t i;
    (void)t;
    json_array_foreach(secrets, i, ref)
    {
        json_t *name = json_object_get(ref, "name");
        json_t *kept = json_object();
        if (json_is_string(name) && json_string_length(name))
            json_object_set_nocheck(kept, "name", name);
        json_array_set_new(secrets, i, kept);
    }
}

static void serviceaccount_update(const kapi_type *t, json_t *obj, const json_t *old)
{
    (void)old;
    serviceaccount_create(t, obj);
}

/*
 * Events: stored as core/v1 Events. Both views are written with their members in the
 * order and with the zero values kube-apiserver writes (an absent time is null, an
 * absent source or reference is {}).
 */
typedef struct field_rule {
    const char *name;
    const char *other;     /* its name in the other view: core/v1 for an events.k8s.io/v1
                            * field, events.k8s.io/v1 for a core one */
    json_t *(*zero)(void); /* written when absent; NULL: left out */
} field_rule;

static json_t *zero_object(void)
{
    return json_object();
}

static json_t *zero_string(void)
{
    return json_string_nocheck("");
}

static const field_rule core_fields[] = {
    {"involvedObject", "regarding", zero_object},
    {"reason", "reason", NULL},
    {"message", "note", NULL},
    {"source", "deprecatedSource", zero_object},
    {"firstTimestamp", "deprecatedFirstTimestamp", json_null},
    {"lastTimestamp", "deprecatedLastTimestamp", json_null},
    {"count", "deprecatedCount", NULL},
    {"type", "type", NULL},
    {"eventTime", "eventTime", json_null},
    {"series", "series", NULL},
    {"action", "action", NULL},
    {"related", "related", NULL},
    {"reportingComponent", "reportingController", zero_string},
    {"reportingInstance", "reportingInstance", zero_string},
};

static const field_rule v1_fields[] = {
    {"eventTime", "eventTime", json_null},
    {"series", "series", NULL},
    {"reportingController", "reportingComponent", NULL},
    {"reportingInstance", "reportingInstance", NULL},
    {"action", "action", NULL},
    {"reason", "reason", NULL},
    {"regarding", "involvedObject", zero_object},
    {"related", "related", NULL},
    {"note", "message", NULL},
    {"type", "type", NULL},
    {"deprecatedSource", "source", zero_object},
    {"deprecatedFirstTimestamp", "firstTimestamp", json_null},
    {"deprecatedLastTimestamp", "lastTimestamp", json_null},
    {"deprecatedCount", "count", NULL},
};

_Static_assert(KAPI_ARRAY_LEN(v1_fields) == KAPI_ARRAY_LEN(core_fields),
               "the two views of an Event have the same fields");

static bool is_empty_value(const json_t *v)
{
    return !v || (json_is_string(v) && json_string_length(v) == 0) ||
           (json_is_integer(v) && json_integer_value(v) == 0) || json_is_null(v);
}

/* The place of src's member key (len bytes: a key may hold a NUL) among the n rules, by
 * its own name or, from_other, its name in the other view; n when none names it. */
static size_t rule_place(const field_rule *rules, size_t n, bool from_other, const char *key,
                         size_t len)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const char *name = from_other ? rules[i].other : rules[i].name;
        if (name[0] == key[0] && strlen(name) == len && memcmp(name, key, len) == 0)
            break;
    }
    return i;
}

/* Finds src's metadata (*meta, NULL when absent) and the members rules name (found[i],
 * by their own names or, from_other, their names in the other view; found[n] any other
 * member). One pass over src, where a lookup of each name would hash it. */
static void event_members(const json_t *src, const field_rule *rules, size_t n, bool from_other,
                          json_t **found, json_t **meta)
{
    *meta = NULL;
    for (void *it = json_object_iter((json_t *)src); it;
         it = json_object_iter_next((json_t *)src, it)) {
        const char *key = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        if (len == 8 && memcmp(key, "metadata", 8) == 0)
            *meta = json_object_iter_value(it);
        else
            found[rule_place(rules, n, from_other, key, len)] = json_object_iter_value(it);
    }
}

/* Builds kind, apiVersion, metadata, then the fields of rules in order: each taken from
 * src under its own name (or its name in the other view when from_other), else its zero
 * value. */
static json_t *event_view(const json_t *src, const char *api_version, const field_rule *rules,
                          size_t n, bool from_other)
{
    json_t *found[KAPI_ARRAY_LEN(core_fields) + 1] = {0}; /* the last: any other member */
    json_t *meta;
    event_members(src, rules, n, from_other, found, &meta);
    json_t *out = json_object();
    json_object_set_new_nocheck(out, "kind", json_string_nocheck("Event"));
    json_object_set_new_nocheck(out, "apiVersion", json_string_nocheck(api_version));
    json_object_set_new_nocheck(out, "metadata", meta ? json_incref(meta) : json_object());
    for (size_t i = 0; i < n; i++) {
        json_t *v = found[i];
        if (rules[i].zero)
            json_object_set_new_nocheck(out, rules[i].name,
                                        v && !json_is_null(v) ? json_incref(v) : rules[i].zero());
        else if (!is_empty_value(v))
            json_object_set_nocheck(out, rules[i].name, v);
    }
    return out;
}

const json_t *kapi_registry__event_member(const json_t *ev, const char *core_name)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(core_fields); i++) { /* the first byte rules most out */
        if (core_fields[i].name[0] == core_name[0] && strcmp(core_fields[i].name, core_name) == 0) {
            const json_t *v = json_object_get(ev, core_fields[i].other);
            return is_empty_value(v) ? NULL : v;
        }
    }
    return json_object_get(ev, core_name); /* metadata: the same in both views */
}

static json_t *core_event_normalize(const json_t *src)
{
    return event_view(src, "v1", core_fields, KAPI_ARRAY_LEN(core_fields), false);
}

static void event_create(const kapi_type *t, json_t *obj)
{
    (void)t;
    json_t *norm = core_event_normalize(obj);
    json_object_clear(obj);
    json_object_update(obj, norm);
    json_decref(norm);
}

static void event_update(const kapi_type *t, json_t *obj, const json_t *old)
{
    (void)old;
    event_create(t, obj);
}

static kapi_error *events_v1_to_storage(const kapi_type *t, json_t **objs, size_t n)
{
    (void)t;
    for (size_t i = 0; i < n; i++) {
        json_t *out = event_view(objs[i], "v1", core_fields, KAPI_ARRAY_LEN(core_fields), true);
        json_decref(objs[i]);
        objs[i] = out;
    }
    return NULL;
}

static kapi_error *events_v1_from_storage(const kapi_type *t, json_t **objs, size_t n)
{
    (void)t;
    for (size_t i = 0; i < n; i++) {
        json_t *out =
            event_view(objs[i], "events.k8s.io/v1", v1_fields, KAPI_ARRAY_LEN(v1_fields), true);
        json_decref(objs[i]);
        objs[i] = out;
    }
    return NULL;
}

/* The JSON of events_v1_from_storage's view of stored, as kapi_json_encode would write
 * it, written straight from the stored members: an answer's view is only encoded. */
static void events_v1_encode_from_storage(const kapi_type *t, kapi_buf *b, const json_t *stored)
{
    static const char head[] = "{\"kind\":\"Event\",\"apiVersion\":\"events.k8s.io/v1\","
                               "\"metadata\":";
    json_t *found[KAPI_ARRAY_LEN(v1_fields) + 1] = {0}; /* the last: any other member */
    json_t *meta;
    (void)t;
    event_members(stored, v1_fields, KAPI_ARRAY_LEN(v1_fields), true, found, &meta);
    kapi_buf_put(b, head, sizeof(head) - 1);
    if (meta)
        kapi_json_encode(b, meta);
    else
        kapi_buf_put(b, "{}", 2);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(v1_fields); i++) {
        json_t *v = found[i];
        bool zero = v1_fields[i].zero && (!v || json_is_null(v));
        if (!v1_fields[i].zero && is_empty_value(v))
            continue;
        kapi_buf_putc(b, ',');
        kapi_json_put_string(b, v1_fields[i].name, strlen(v1_fields[i].name));
        kapi_buf_putc(b, ':');
        if (zero)
            v = v1_fields[i].zero();
        kapi_json_encode(b, v);
        if (zero)
            json_decref(v);
    }
    kapi_buf_putc(b, '}');
}

/* node: a create may set status, but not spec.configSource or status.config (the removed
 * DynamicKubeletConfig feature); an update keeps neither unless the stored Node has it. A
 * new Node gets the not-ready NoSchedule taint unless it has it, as kube-apiserver's
 * TaintNodesByCondition admission gives it. */
static void node_create(const kapi_type *t, json_t *obj)
{
    static const char key[] = "node.kubernetes.io/not-ready", effect[] = "NoSchedule";
    (void)t;
    json_object_del(json_object_get(obj, "spec"), "configSource");
    json_object_del(json_object_get(obj, "status"), "config");
    json_t *spec = kapi_json_object_ensure(obj, "spec"), *taints = json_object_get(spec, "taints");
    size_t i;
    json_t *taint;
    json_array_foreach(taints, i, taint)
    {
        const char *k = kapi_json_path_str(taint, "key"), *e = kapi_json_path_str(taint, "effect");
        if (k && e && strcmp(k, key) == 0 && strcmp(e, effect) == 0)
            return;
    }
    if (!json_is_array(taints))
        json_object_set_new_nocheck(spec, "taints", taints = json_array());
    json_array_append_new(taints, json_pack("{s:s,s:s}", "key", key, "effect", effect));
}

static void node_update(const kapi_type *t, json_t *obj, const json_t *old)
{
    (void)t;
    if (!kapi_json_path(old, "spec.configSource"))
        json_object_del(json_object_get(obj, "spec"), "configSource");
}

static void node_status(const kapi_type *t, const char *sub, json_t *obj, const json_t *old)
{
    (void)t, (void)sub;
    if (!kapi_json_path(old, "status.config"))
        json_object_del(json_object_get(obj, "status"), "config");
}

static const kapi_type_strategy strategies[] = {
    {.name = "plain"},
    {.name = "cronjob",
     .prepare_create = cronjob_create,
     .validate = kapi_registry__validate_cronjob,
     .warnings = kapi_registry__cronjob_warnings},
    {.name = "job",
     .prepare_create = job_create,
     .prepare_update = job_update,
     .validate = kapi_registry__validate_job,
     .validate_subresource = kapi_registry__validate_job_status},
    {.name = "clustercidr", .validate = kapi_registry__validate_clustercidr},
    {.name = "node",
     .prepare_create = node_create,
     .prepare_update = node_update,
     .prepare_subresource = node_status,
     .validate = kapi_registry__validate_node,
     .validate_subresource = kapi_registry__validate_node_status},
    {.name = "serviceaccount",
     .prepare_create = serviceaccount_create,
     .prepare_update = serviceaccount_update,
     .validate = kapi_registry__validate_serviceaccount},
    {.name = "rbac-role", .validate = kapi_registry__validate_role},
    {.name = "rbac-binding", .validate = kapi_registry__validate_binding},
    {.name = "lease", .validate = kapi_registry__validate_lease},
    {.name = "event",
     .prepare_create = event_create,
     .prepare_update = event_update,
     .validate = kapi_registry__validate_event},
    {.name = "events.k8s.io",
     .to_storage = events_v1_to_storage,
     .from_storage = events_v1_from_storage,
     .encode_from_storage = events_v1_encode_from_storage,
     .validate = kapi_registry__validate_event},
    {.name = "subjectaccessreview", .validate = kapi_registry__validate_sar},
    {.name = "selfsubjectaccessreview", .validate = kapi_registry__validate_self_sar},
    {.name = "localsubjectaccessreview", .validate = kapi_registry__validate_local_sar},
    {.name = "selfsubjectrulesreview", .validate = kapi_registry__validate_self_srr},
    {.name = "tokenreview", .validate = kapi_registry__validate_tokenreview},
};

const kapi_type_strategy *kapi_registry__strategy(const char *name)
{
    static const kapi_type_strategy *const own_file[] = {
        &kapi_registry__namespace_strategy, &kapi_registry__crd_strategy,
        &kapi_registry__custom_strategy, &kapi_registry__custom_converting_strategy};
    for (size_t i = 0; name && i < KAPI_ARRAY_LEN(strategies); i++)
        if (strcmp(strategies[i].name, name) == 0)
            return &strategies[i];
    for (size_t i = 0; name && i < KAPI_ARRAY_LEN(own_file); i++)
        if (strcmp(own_file[i]->name, name) == 0)
            return own_file[i];
    return NULL;
}
