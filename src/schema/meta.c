/*
 * schema/meta: ObjectMeta validation as apimachinery 1.26 does it (ValidateObjectMeta,
 * ValidateObjectMetaUpdate), with core's finalizer rule for the built-in types, and the
 * label, annotation and label-selector rules they use (see field.h).
 */
#include <stdlib.h>
#include <string.h>

#include "schema/field.h"
#include "schema/schema_int.h"

#define ANNOTATIONS_MAX_BYTES (256 * 1024)
#define FIELD_MANAGER_MAX 128
#define SUBRESOURCE_NAME_MAX 256

static const char *str_member(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void invalid_each(kapi_error *err, const char *path, const char *value,
                         size_t (*rule)(const char *, const char **))
{
    const char *msgs[KAPI_MSGS_MAX];
    size_t n = rule(value, msgs);
    kapi_field_invalid_each(err, path, value, msgs, n);
}

/* True when every label of the object labels is valid: then there is nothing to report
 * and no need to sort the labels. */
static bool labels_valid(const json_t *labels)
{
    const char *msgs[KAPI_MSGS_MAX];
    for (void *it = json_object_iter((json_t *)labels); it;
         it = json_object_iter_next((json_t *)labels, it)) {
        const char *v = json_string_value(json_object_iter_value(it));
        if (kapi_is_qualified_name(json_object_iter_key(it), msgs) ||
            kapi_is_label_value(v ? v : "", msgs))
            return false;
    }
    return true;
}

void kapi_meta_validate_labels(kapi_error *err, const json_t *labels, const char *path)
{
    size_t n;
    if (!json_is_object(labels) || labels_valid(labels))
        return;
    kapi_json_member *m = kapi_json_sorted_members(labels, &n);
    for (size_t i = 0; i < n; i++) {
        invalid_each(err, path, m[i].key, kapi_is_qualified_name);
        invalid_each(err, path, json_string_value(m[i].value) ?: "", kapi_is_label_value);
    }
    free(m);
}

void kapi_meta_validate_annotations(kapi_error *err, const json_t *annotations, const char *path)
{
    size_t n, total = 0;
    const char *msgs[KAPI_MSGS_MAX];
    if (!json_is_object(annotations))
        return;
    kapi_json_member *m = kapi_json_sorted_members(annotations, &n);
    for (size_t i = 0; i < n; i++) {
        char *lower = kapi_xstrdup(m[i].key);
        for (char *c = lower; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        size_t nm = kapi_is_qualified_name(lower, msgs);
        kapi_field_invalid_each(err, path, m[i].key, msgs, nm);
        free(lower);
        total += strlen(m[i].key) + strlen(json_string_value(m[i].value) ?: "");
    }
    if (total > ANNOTATIONS_MAX_BYTES)
        kapi_field_too_long(err, path, ANNOTATIONS_MAX_BYTES);
    free(m);
}

/* schema.FromAPIVersionAndKind's version: "" when apiVersion has more than one "/". */
static bool owner_version_empty(const char *api_version)
{
    const char *slash = strchr(api_version, '/');
    if (!*api_version || strcmp(api_version, "/") == 0)
        return true;
    if (!slash)
        return false;
    return strchr(slash + 1, '/') != NULL || slash[1] == '\0';
}

static void validate_owner(kapi_error *err, kapi_arena *a, const json_t *ref, const char *path)
{
    const char *av = str_member(ref, "apiVersion"), *kind = str_member(ref, "kind");
    if (owner_version_empty(av))
        kapi_field_invalid_str(err, kapi_path_child(a, path, "apiVersion"), av,
                               "version must not be empty");
    if (!*kind)
        kapi_field_invalid_str(err, kapi_path_child(a, path, "kind"), kind,
                               "kind must not be empty");
    if (!*str_member(ref, "name"))
        kapi_field_invalid_str(err, kapi_path_child(a, path, "name"), "", "name must not be empty");
    if (!*str_member(ref, "uid"))
        kapi_field_invalid_str(err, kapi_path_child(a, path, "uid"), "", "uid must not be empty");
    if (strcmp(av, "v1") == 0 && strcmp(kind, "Event") == 0) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt(&b, &kapi_go_owner_reference, ref);
        kapi_field_invalid_raw(err, path, b.ptr,
                               "/v1, Kind=Event is disallowed from being an owner");
        kapi_buf_dispose(&b);
    }
}

static void validate_owners(kapi_error *err, kapi_arena *a, const json_t *refs, const char *path)
{
    char *first = NULL;
    for (size_t i = 0; i < json_array_size(refs); i++) {
        const json_t *ref = json_array_get(refs, i);
        validate_owner(err, a, ref, path);
        if (!json_is_true(json_object_get(ref, "controller")))
            continue;
        char *cur = kapi_xprintf("%s/%s", str_member(ref, "kind"), str_member(ref, "name"));
        if (!first) {
            first = cur;
            continue;
        }
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt_slice(&b, &kapi_go_owner_reference, refs);
        kapi_field_invalid_raw(err, path, b.ptr,
                               "Only one reference can have Controller set to true. Found "
                               "\"true\" in references for %s and %s",
                               first, cur);
        kapi_buf_dispose(&b);
        free(cur);
    }
    free(first);
}

/* apimachinery's ValidateFinalizers: qualified names, not both orphan and
 * foregroundDeletion. */
static void validate_finalizers(kapi_error *err, const json_t *fins, const char *path)
{
    bool orphan = false, foreground = false;
    for (size_t i = 0; i < json_array_size(fins); i++) {
        const char *f = json_string_value(json_array_get(fins, i));
        f = f ? f : "";
        invalid_each(err, path, f, kapi_is_qualified_name);
        orphan = orphan || strcmp(f, "orphan") == 0;
        foreground = foreground || strcmp(f, "foregroundDeletion") == 0;
    }
    if (orphan && foreground) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_gofmt_strings(&b, fins);
        kapi_field_invalid_raw(err, path, b.ptr,
                               "finalizer orphan and foregroundDeletion cannot be both set");
        kapi_buf_dispose(&b);
    }
}

/* core's validateKubeFinalizerName over every finalizer, at path[i]. */
static void validate_kube_finalizers(kapi_error *err, kapi_arena *a, const json_t *fins,
                                     const char *path)
{
    static const char *const standard[] = {"kubernetes", "orphan", "foregroundDeletion"};
    for (size_t i = 0; i < json_array_size(fins); i++) {
        const char *f = json_string_value(json_array_get(fins, i));
        f = f ? f : "";
        bool ok = strchr(f, '/') != NULL;
        for (size_t j = 0; !ok && j < KAPI_ARRAY_LEN(standard); j++)
            ok = strcmp(f, standard[j]) == 0;
        if (!ok)
            kapi_field_invalid_str(err, kapi_path_index(a, path, i), f,
                                   "name is neither a standard finalizer name nor is it fully "
                                   "qualified");
    }
}

/* ValidateFieldManager: at most 128 bytes, printable characters only, each rune read as
 * a range over a Go string reads it (an invalid byte is U+FFFD, which is printable). */
static void validate_field_manager(kapi_error *err, const char *manager, const char *path)
{
    size_t n = strlen(manager), w;
    if (n > FIELD_MANAGER_MAX)
        kapi_field_too_long(err, path, FIELD_MANAGER_MAX);
    for (size_t i = 0; i < n; i += w) {
        int32_t r = kapi_go_rune(manager + i, n - i, &w);
        if (r >= 0 && !kapi_go_is_print(r))
            kapi_field_invalid_str(err, path, manager, "invalid character U+%04X (at position %zu)",
                                   (unsigned)r, i);
    }
}

/* True when ValidateFieldManager finds nothing in manager. */
static bool field_manager_valid(const char *manager)
{
    size_t n = strlen(manager), w;
    if (n > FIELD_MANAGER_MAX)
        return false;
    for (size_t i = 0; i < n; i += w) {
        int32_t r = kapi_go_rune(manager + i, n - i, &w);
        if (r >= 0 && !kapi_go_is_print(r))
            return false;
    }
    return true;
}

/* The managedFields entries; an entry's paths are made only when it has a fault. */
static void validate_managed_fields(kapi_error *err, kapi_arena *a, const json_t *mf,
                                    const char *path)
{
    for (size_t i = 0; i < json_array_size(mf); i++) {
        const json_t *e = json_array_get(mf, i);
        const char *op = str_member(e, "operation"), *ft = str_member(e, "fieldsType");
        if ((strcmp(op, "Apply") == 0 || strcmp(op, "Update") == 0) &&
            (!*ft || strcmp(ft, "FieldsV1") == 0) &&
            field_manager_valid(str_member(e, "manager")) &&
            strlen(str_member(e, "subresource")) <= SUBRESOURCE_NAME_MAX)
            continue;
        const char *at = kapi_path_index(a, path, i);
        if (strcmp(op, "Apply") != 0 && strcmp(op, "Update") != 0)
            kapi_field_invalid_str(err, kapi_path_child(a, at, "operation"), op,
                                   "must be `Apply` or `Update`");
        if (*ft && strcmp(ft, "FieldsV1") != 0)
            kapi_field_invalid_str(err, kapi_path_child(a, at, "fieldsType"), ft,
                                   "must be `FieldsV1`");
        validate_field_manager(err, str_member(e, "manager"), kapi_path_child(a, at, "manager"));
        if (strlen(str_member(e, "subresource")) > SUBRESOURCE_NAME_MAX)
            kapi_field_too_long(err, kapi_path_child(a, at, "subresource"), SUBRESOURCE_NAME_MAX);
    }
}

/* The rules read C strings, and a name (a JSON string) may hold NUL bytes: the whole
 * value, with each NUL shown to the rule as 0x01, a byte every name rule judges as it
 * judges a NUL (outside the DNS alphabets; allowed in a path segment), so the messages
 * are the ones the whole value earns, never the ones of the bytes before a NUL. A value
 * with a NUL is copied into *copy (heap, the caller frees; NULL for one without). */
static const char *rule_view(const json_t *v, char **copy)
{
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    *copy = NULL;
    if (!memchr(s, '\0', n))
        return s;
    *copy = kapi_xstrndup(s, n);
    for (size_t i = 0; i < n; i++)
        if ((*copy)[i] == '\0')
            (*copy)[i] = '\x01';
    return *copy;
}

/* One "Invalid value" per message, the value shown whole (Go's %q). */
static void invalid_whole(kapi_error *err, const char *path, const json_t *v,
                          const char *const *msgs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        kapi_field_invalid_json(err, path, v, "%s", msgs[i]);
}

/* The name rule on v, member key of path; the member's path is made only for a fault. */
static void check_name(kapi_error *err, kapi_arena *a, const char *path, const char *key,
                       const json_t *v, const kapi_meta_rules *rules, bool prefix)
{
    const char *msgs[KAPI_MSGS_MAX + 2];
    char *copy;
    size_t n = rules->name_fn(rules->name_ctx, rule_view(v, &copy), prefix, msgs);
    if (n)
        invalid_whole(err, kapi_path_child(a, path, key), v, msgs, n);
    free(copy);
}

static void validate_names(kapi_error *err, kapi_arena *a, const json_t *meta, const char *path,
                           const kapi_meta_rules *rules)
{
    const char *msgs[KAPI_MSGS_MAX];
    const json_t *gen = json_object_get(meta, "generateName"),
                 *name = json_object_get(meta, "name");
    const json_t *ns = json_object_get(meta, "namespace");
    if (json_string_length(gen))
        check_name(err, a, path, "generateName", gen, rules, true);
    if (!json_string_length(name))
        kapi_field_required(err, kapi_path_child(a, path, "name"),
                            "name or generateName is required");
    else
        check_name(err, a, path, "name", name, rules, false);
    if (rules->namespaced && !json_string_length(ns)) {
        kapi_field_required(err, kapi_path_child(a, path, "namespace"), "");
    } else if (rules->namespaced) {
        char *copy;
        size_t n = kapi_is_dns1123_label(rule_view(ns, &copy), msgs);
        if (n)
            invalid_whole(err, kapi_path_child(a, path, "namespace"), ns, msgs, n);
        free(copy);
    } else if (json_string_length(ns)) {
        kapi_field_forbidden(err, kapi_path_child(a, path, "namespace"),
                             "not allowed on this type");
    }
}

/* The labels, annotations and ownerReferences of meta, each path made only when the
 * member is there. */
static void validate_members(kapi_error *err, kapi_arena *a, const json_t *meta, const char *path)
{
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *annotations = json_object_get(meta, "annotations");
    const json_t *owners = json_object_get(meta, "ownerReferences");
    if (json_is_object(labels))
        kapi_meta_validate_labels(err, labels, kapi_path_child(a, path, "labels"));
    if (json_is_object(annotations))
        kapi_meta_validate_annotations(err, annotations, kapi_path_child(a, path, "annotations"));
    if (json_array_size(owners))
        validate_owners(err, a, owners, kapi_path_child(a, path, "ownerReferences"));
}

/* The managedFields of meta, its path made only when it is there. */
static void validate_managed(kapi_error *err, kapi_arena *a, const json_t *meta, const char *path)
{
    const json_t *managed = json_object_get(meta, "managedFields");
    if (json_array_size(managed))
        validate_managed_fields(err, a, managed, kapi_path_child(a, path, "managedFields"));
}

void kapi_meta_validate(kapi_error *err, kapi_arena *a, const json_t *meta, const char *path,
                        const kapi_meta_rules *rules)
{
    validate_names(err, a, meta, path, rules);
    json_int_t gen = json_integer_value(json_object_get(meta, "generation"));
    if (gen < 0)
        kapi_field_invalid_int(err, kapi_path_child(a, path, "generation"), gen,
                               "must be greater than or equal to 0");
    validate_members(err, a, meta, path);
    const json_t *fins = json_object_get(meta, "finalizers");
    const char *fin_path = NULL; /* made only when there are finalizers to check */
    if (json_array_size(fins)) {
        fin_path = kapi_path_child(a, path, "finalizers");
        validate_finalizers(err, fins, fin_path);
    }
    validate_managed(err, a, meta, path);
    if (rules->kube_finalizers && fin_path)
        validate_kube_finalizers(err, a, fins, fin_path);
}

/* True when now and before are both nil (absent or null) or equal. */
static bool unchanged(const json_t *now, const json_t *before)
{
    bool now_nil = !now || json_is_null(now), before_nil = !before || json_is_null(before);
    return (now_nil && before_nil) ||
           (!now_nil && !before_nil && json_equal((json_t *)now, (json_t *)before));
}

bool kapi_meta_immutable(kapi_error *err, const char *path, const json_t *now, const json_t *before)
{
    if (unchanged(now, before))
        return true;
    kapi_field_invalid_json(err, path, now, "field is immutable");
    return false;
}

/* An immutable string member ("" when absent, as Go's zero value). */
static void immutable_str(kapi_error *err, kapi_arena *a, const json_t *meta,
                          const json_t *old_meta, const char *path, const char *key)
{
    const char *now = str_member(meta, key), *before = str_member(old_meta, key);
    if (strcmp(now, before) != 0)
        kapi_field_invalid_str(err, kapi_path_child(a, path, key), now, "field is immutable");
}

/* An immutable time member; Go renders a metav1.Time with time.Time.String(), and a nil
 * *metav1.Time as "null". */
static void immutable_time(kapi_error *err, kapi_arena *a, const json_t *meta,
                           const json_t *old_meta, const char *path, const char *key, bool pointer)
{
    const char *now = json_string_value(json_object_get(meta, key));
    const char *before = json_string_value(json_object_get(old_meta, key));
    if ((!now && !before) || (now && before && strcmp(now, before) == 0))
        return;
    kapi_buf b;
    kapi_buf_init(&b);
    if (!now && pointer)
        kapi_buf_puts(&b, "\"null\"");
    else
        kapi_gofmt_time(&b, now);
    kapi_field_invalid_raw(err, kapi_path_child(a, path, key), b.ptr, "field is immutable");
    kapi_buf_dispose(&b);
}

/* ValidateNoNewFinalizers: the finalizers of meta that old_meta lacks, sorted. */
static void no_new_finalizers(kapi_error *err, const json_t *meta, const json_t *old_meta,
                              const char *path)
{
    const json_t *now = json_object_get(meta, "finalizers");
    const json_t *before = json_object_get(old_meta, "finalizers");
    size_t n = json_array_size(now), nextra = 0;
    const char **extra = kapi_xcalloc(n ? n : 1, sizeof(*extra));
    for (size_t i = 0; i < n; i++) {
        const char *f = json_string_value(json_array_get(now, i));
        bool known = !f;
        for (size_t j = 0; !known && j < json_array_size(before); j++)
            known = strcmp(f, json_string_value(json_array_get(before, j)) ?: "") == 0;
        for (size_t j = 0; !known && j < nextra; j++)
            known = strcmp(f, extra[j]) == 0;
        if (!known)
            extra[nextra++] = f;
    }
    if (nextra > 0) {
        qsort(extra, nextra, sizeof(*extra), cmp_str);
        json_t *list = json_array();
        for (size_t i = 0; i < nextra; i++)
            json_array_append_new(list, json_string(extra[i]));
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_buf_puts(&b, "no new finalizers can be added if the object is being deleted, found "
                          "new finalizers ");
        kapi_gofmt_strings(&b, list);
        kapi_field_forbidden(err, path, b.ptr);
        kapi_buf_dispose(&b);
        json_decref(list);
    }
    free(extra);
}

void kapi_meta_validate_update(kapi_error *err, kapi_arena *a, const json_t *meta,
                               const json_t *old_meta, const char *path, bool kube_finalizers)
{
    const json_t *fins = json_object_get(meta, "finalizers");
    const char *fin_path = NULL; /* made only when there are finalizers to check */
    if (json_array_size(fins))
        fin_path = kapi_path_child(a, path, "finalizers");
    if (fin_path && json_object_get(old_meta, "deletionTimestamp") &&
        !json_is_null(json_object_get(old_meta, "deletionTimestamp")))
        no_new_finalizers(err, meta, old_meta, fin_path);
    json_int_t gen = json_integer_value(json_object_get(meta, "generation"));
    if (gen < json_integer_value(json_object_get(old_meta, "generation")))
        kapi_field_invalid_int(err, kapi_path_child(a, path, "generation"), gen,
                               "must not be decremented");
    immutable_str(err, a, meta, old_meta, path, "name");
    immutable_str(err, a, meta, old_meta, path, "namespace");
    immutable_str(err, a, meta, old_meta, path, "uid");
    immutable_time(err, a, meta, old_meta, path, "creationTimestamp", false);
    immutable_time(err, a, meta, old_meta, path, "deletionTimestamp", true);
    const json_t *grace = json_object_get(meta, "deletionGracePeriodSeconds");
    const json_t *old_grace = json_object_get(old_meta, "deletionGracePeriodSeconds");
    if (!unchanged(grace, old_grace))
        kapi_meta_immutable(err, kapi_path_child(a, path, "deletionGracePeriodSeconds"), grace,
                            old_grace);
    validate_members(err, a, meta, path);
    validate_managed(err, a, meta, path);
    if (kube_finalizers && fin_path)
        validate_kube_finalizers(err, a, fins, fin_path);
}

/* ---- embedded resources ---- */

/* validateEmbeddedResource: an x-kubernetes-embedded-resource object has an apiVersion
 * (a group/version) and a kind (a DNS-1035 label but for case), and its metadata is
 * ObjectMeta, its name a path segment ("fakename" when it has none). */
static void embedded_resource(kapi_error *err, kapi_arena *a, const json_t *x, const char *path)
{
    const char *av_path = kapi_path_child(a, path, "apiVersion");
    const char *kind_path = kapi_path_child(a, path, "kind");
    const json_t *av = json_object_get(x, "apiVersion"), *kind = json_object_get(x, "kind");
    const json_t *meta = json_object_get(x, "metadata");
    if (!av)
        kapi_field_required(err, av_path, "must not be empty");
    if (!kind)
        kapi_field_required(err, kind_path, "must not be empty");
    if (av && !json_is_string(av)) {
        kapi_field_invalid_json(err, av_path, av, "must be a string");
    } else if (av && !json_string_length(av)) {
        kapi_field_invalid_str(err, av_path, "", "must not be empty");
    } else if (av) {
        const char *s = json_string_value(av), *slash = strchr(s, '/');
        if (slash && strchr(slash + 1, '/'))
            kapi_field_invalid_str(err, av_path, s, "unexpected GroupVersion string: %s", s);
    }
    if (kind && !json_is_string(kind)) {
        kapi_field_invalid_json(err, kind_path, kind, "must be a string");
    } else if (kind && !json_string_length(kind)) {
        kapi_field_invalid_str(err, kind_path, "", "must not be empty");
    } else if (kind) {
        const char *msgs[KAPI_MSGS_MAX];
        char *lower = kapi_xstrdup(json_string_value(kind));
        for (char *p = lower; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        size_t n = kapi_is_dns1035_label(lower, msgs);
        free(lower);
        if (n) {
            kapi_buf b;
            kapi_buf_init(&b);
            for (size_t i = 0; i < n; i++)
                kapi_buf_printf(&b, "%s%s", i ? "," : "", msgs[i]);
            kapi_field_invalid_str(err, kind_path, json_string_value(kind),
                                   "may have mixed case, but should otherwise match: %s", b.ptr);
            kapi_buf_dispose(&b);
        }
    }
    if (!meta || json_is_null(meta)) /* Go decodes null into an empty ObjectMeta */
        return;
    const char *meta_path = kapi_path_child(a, path, "metadata");
    if (!json_is_object(meta)) {
        kapi_field_invalid_json(err, meta_path, meta,
                                "json: cannot unmarshal %s into Go value of type v1.ObjectMeta",
                                kapi_go_json_kind(meta));
        return;
    }
    json_t *m = json_copy((json_t *)meta);
    if (!json_string_length(json_object_get(m, "name")))
        json_object_set_new_nocheck(m, "name", json_string("fakename"));
    kapi_meta_rules rules = {.name_fn = kapi_name_path_segment,
                             .namespaced = json_string_length(json_object_get(m, "namespace")) > 0};
    kapi_meta_validate(err, a, m, meta_path, &rules);
    json_decref(m);
}

static void embedded_walk(kapi_error *err, kapi_arena *a, const kapi_schema *s, const json_t *x,
                          const char *path)
{
    const char *key;
    const json_t *v;
    size_t i;
    if (!s)
        return;
    if (json_is_object(x)) {
        if (s->embedded_resource)
            embedded_resource(err, a, x, path);
        json_object_foreach((json_t *)x, key, v)
        {
            const kapi_schema_prop *p = kapi_schema__prop(s, key);
            if (p)
                embedded_walk(err, a, p->schema, v, kapi_path_child(a, path, key));
            else if (s->additional)
                embedded_walk(err, a, s->additional, v, kapi_path_key(a, path, key));
        }
    } else if (json_is_array(x)) {
        json_array_foreach(x, i, v) embedded_walk(err, a, s->items, v, kapi_path_index(a, path, i));
    }
}

void kapi_schema_validate_embedded(const kapi_schema *s, const json_t *obj, const char *path,
                                   kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    embedded_walk(err, &a, s, obj, path);
    kapi_arena_dispose(&a);
}
