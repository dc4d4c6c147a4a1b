/*
 * api/objects: the rules every object follows whatever its type: kind and apiVersion,
 * names, the order of members kube-apiserver writes, and decoding a request body.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/protobuf.h"
#include "codec/yaml.h"

static const char *internal_package(const char *group)
{
    static __thread char pkg[64];
    if (!*group)
        return "core";
    size_t n = strcspn(group, ".");
    if (n >= sizeof(pkg))
        n = sizeof(pkg) - 1;
    memcpy(pkg, group, n);
    pkg[n] = '\0';
    return pkg;
}

/* Sets obj's key to the string s, unless v, its value, is that string already. */
static void set_string(json_t *obj, const char *key, const json_t *v, const char *s)
{
    size_t n = strlen(s);
    if (!json_is_string(v) || json_string_length(v) != n || memcmp(json_string_value(v), s, n))
        json_object_set_new_nocheck(obj, key, json_stringn_nocheck(s, n));
}

kapi_error *kapi_api__check_kind(const kapi_type *t, json_t *obj)
{
    json_t *kind_v = json_object_get(obj, "kind"), *av_v = json_object_get(obj, "apiVersion");
    const char *kind = json_string_value(kind_v);
    const char *av = json_string_value(av_v);
    if (t->custom) {
        if (av && strcmp(av, t->group_version) != 0)
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                  "the API version in the data (%s) does not match the expected "
                                  "API version (%s)",
                                  av, t->group_version);
        return NULL;
    }
    if ((kind && *kind && strcmp(kind, t->kind) != 0) ||
        (kind && *kind && av && *av && strcmp(av, t->group_version) != 0)) {
        const char *v = av && strchr(av, '/') ? strchr(av, '/') + 1 : (av ? av : "");
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "%s in version \"%s\" cannot be handled as a %s: converting "
                              "(%s.%s) to (%s.%s): unknown conversion",
                              kind ? kind : t->kind, v, t->kind, v, kind ? kind : t->kind,
                              internal_package(t->group), t->kind);
    }
    if (av && *av && strcmp(av, t->group_version) != 0)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "the API version in the data (%s) does not match the expected "
                              "API version (%s)",
                              av, t->group_version);
    set_string(obj, "kind", kind_v, t->kind);
    set_string(obj, "apiVersion", av_v, t->group_version);
    return NULL;
}

/* Kubernetes' order of ObjectMeta members. */
static const char *const meta_order[] = {
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
};

/* A map written with its keys sorted, as Go writes maps. */
static json_t *sorted_map(const json_t *m)
{
    size_t n;
    kapi_json_member *sorted = kapi_json_sorted_members(m, &n);
    json_t *out = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_setn_nocheck(out, sorted[i].key, sorted[i].len, sorted[i].value);
    free(sorted);
    return out;
}

/* A copy of v with the members of every object sorted. */
static json_t *sorted_deep(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) json_array_append_new(out, sorted_deep(item));
        return out;
    }
    if (!json_is_object(v))
        return json_incref((json_t *)v);
    json_t *keys = sorted_map(v), *out = json_object();
    const char *key;
    json_t *val;
    json_object_foreach(keys, key, val) json_object_set_new_nocheck(out, key, sorted_deep(val));
    json_decref(keys);
    return out;
}

/* The place of key (len bytes: a key may hold a NUL) in meta_order; past its end when
 * it is not there. */
static size_t meta_place(const char *key, size_t len)
{
    size_t i;
    for (i = 0; i < KAPI_ARRAY_LEN(meta_order); i++)
        if (meta_order[i][0] == key[0] && strlen(meta_order[i]) == len &&
            memcmp(meta_order[i], key, len) == 0)
            break;
    return i;
}

/* The members of meta in Kubernetes' order, labels and annotations sorted (a new
 * object). One pass over meta finds them, where a lookup of each name would hash it. */
static json_t *canonical_meta(const json_t *meta)
{
    json_t *found[KAPI_ARRAY_LEN(meta_order) + 1] = {0}; /* the last: any other member */
    for (void *it = json_object_iter((json_t *)meta); it;
         it = json_object_iter_next((json_t *)meta, it))
        found[meta_place(json_object_iter_key(it), json_object_iter_key_len(it))] =
            json_object_iter_value(it);
    json_t *m = json_object();
    for (size_t i = 0; i < KAPI_ARRAY_LEN(meta_order); i++) {
        json_t *v = found[i];
        if (!v || json_is_null(v))
            continue;
        bool map =
            strcmp(meta_order[i], "labels") == 0 || strcmp(meta_order[i], "annotations") == 0;
        if (map && json_is_object(v))
            json_object_set_new_nocheck(m, meta_order[i], sorted_map(v));
        else
            json_object_set_nocheck(m, meta_order[i], v);
    }
    return m;
}

json_t *kapi_api__canonical(const kapi_type *t, const json_t *obj)
{
    if (t->custom)
        return sorted_deep(obj);
    json_t *out = json_object();
    json_object_set_nocheck(out, "kind", json_object_get(obj, "kind"));
    json_object_set_nocheck(out, "apiVersion", json_object_get(obj, "apiVersion"));
    json_object_set_new_nocheck(out, "metadata", canonical_meta(json_object_get(obj, "metadata")));
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        if (strcmp(key, "kind") && strcmp(key, "apiVersion") && strcmp(key, "metadata"))
            json_object_set_nocheck(out, key, val);
    }
    return out;
}

/* True when obj's members begin with kind, apiVersion and metadata, as canonical order
 * has them. */
static bool canonical_head(json_t *obj)
{
    static const char *const head[] = {"kind", "apiVersion", "metadata"};
    void *it = json_object_iter(obj);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(head); i++, it = json_object_iter_next(obj, it))
        if (!it || strcmp(json_object_iter_key(it), head[i]) != 0)
            return false;
    return true;
}

json_t *kapi_api__canonical_take(const kapi_type *t, json_t *obj)
{
    if (t->custom || obj->refcount > 1 || !canonical_head(obj)) {
        json_t *out = kapi_api__canonical(t, obj);
        json_decref(obj);
        return out;
    }
    /* jansson replaces a member's value in its place */
    json_object_set_new_nocheck(obj, "metadata", canonical_meta(json_object_get(obj, "metadata")));
    return obj;
}

char *kapi_api__encode_stored(const json_t *obj, size_t *len, size_t *rv_off)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_grow(&b, KAPI_API_OBJECT_GUESS);
    kapi_json_encode_stamped(&b, obj, rv_off);
    return kapi_buf_detach(&b, len);
}

/* Go's summary of a body in decoding errors: at most 30 bytes, then " ...". */
static char *summarize(const char *body, size_t n)
{
    if (n == 0)
        return kapi_xstrdup("<empty>");
    if (n > 30)
        return kapi_xprintf("%.30s ...", body);
    return kapi_xstrndup(body, n);
}

kapi_error *kapi_api__unrecognized(const char *kind, const char *what, const char *body, size_t n)
{
    char *sum = summarize(body, n);
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                     "the object provided is unrecognized (must be of type %s): "
                                     "%s (%s)",
                                     kind, what, sum);
    free(sum);
    return err;
}

/* A protobuf body of kind want (the type's own, or DeleteOptions or Scale): the envelope
 * names the kind, raw holds the object's message. */
static kapi_error *decode_protobuf(kapi_req *r, const char *want, json_t **out)
{
    const kapi_type *t = r->type;
    kapi_str av, kind, raw;
    char *perr = NULL;
    kapi_error *err = NULL;
    const kapi_pb_message *m = t->protobuf;
    if (!kapi_pb_envelope(r->http->body, r->http->body_len, &av, &kind, &raw, &perr)) {
        err = kapi_api__unrecognized(want, perr, r->http->body, r->http->body_len);
        free(perr);
        return err;
    }
    if (strcmp(want, t->kind) != 0) {
        /* another kind, read in whatever group version the envelope names */
        char *avs = kapi_xstrndup(av.ptr, av.len);
        m = kapi_str_eqc(kind, want) ? kapi_registry_pb_message(r->api->registry, avs, want) : NULL;
        free(avs);
    } else if (!kapi_str_eqc(kind, t->kind) || !kapi_str_eqc(av, t->group_version)) {
        m = NULL;
    }
    if (!m)
        return kapi_error_new(KAPI_STATUS_UNSUPPORTED_MEDIA_TYPE,
                              "the body of the request was in an unknown format - accepted "
                              "media types include: application/json");
    *out = kapi_pb_to_json(m, raw.ptr, raw.len, &perr);
    if (!*out) {
        err = kapi_api__unrecognized(want, perr, r->http->body, r->http->body_len);
        free(perr);
        return err;
    }
    json_object_set_new_nocheck(*out, "kind", json_stringn(kind.ptr, kind.len));
    json_object_set_new_nocheck(*out, "apiVersion", json_stringn(av.ptr, av.len));
    return NULL;
}

static bool media_is(const char *ct, const char *type)
{
    size_t n = strcspn(ct, "; \t");
    return n == strlen(type) && strncasecmp(ct, type, n) == 0;
}

kapi_error *kapi_api__decode_body(kapi_req *r, const char *kind, json_t **out, kapi_dups *dups)
{
    const char *ct = kapi_http_header_get(r->http, "content-type");
    const char *body = r->http->body;
    size_t len = r->http->body_len;
    *out = NULL;
    if (ct && media_is(ct, KAPI_PROTOBUF_MEDIA_TYPE) && r->type->protobuf)
        return decode_protobuf(r, kind, out);
    bool yaml = ct && media_is(ct, KAPI_YAML_MEDIA_TYPE);
    if (ct && *ct && !yaml && !media_is(ct, "application/json"))
        return kapi_error_new(
            KAPI_STATUS_UNSUPPORTED_MEDIA_TYPE,
            "the body of the request was in an unknown format - accepted "
            "media types include: application/json, application/yaml, " KAPI_PROTOBUF_MEDIA_TYPE);
    json_t *v = NULL;
    char *perr = NULL;
    if (yaml) {
        kapi_error *err = kapi_yaml_parse(body, len, &v, dups);
        if (err) {
            kapi_error *u = kapi_api__unrecognized(kind, err->message, body, len);
            kapi_error_free(err);
            return u;
        }
    } else {
        v = kapi_json_parse_dups(body, len, &perr, dups);
    }
    if (!v || !json_is_object(v)) {
        char *what = kapi_xprintf(
            "couldn't get version/kind; json parse error: %s",
            perr ? perr : "json: cannot unmarshal non-object into Go value of type struct");
        kapi_error *err = kapi_api__unrecognized(kind, what, body, len);
        free(what);
        free(perr);
        json_decref(v);
        return err;
    }
    *out = v;
    return NULL;
}

/* The current second's text is kept by each thread: writes come many a second, and
 * gmtime and strftime cost more than the rest of a create's server metadata. */
const char *kapi_api__now(kapi_arena *a)
{
    static __thread int64_t second = -1;
    static __thread char text[32];
    int64_t now = kapi_time_now_ns() / 1000000000;
    if (now != second) {
        kapi_time_rfc3339(text, now);
        second = now;
    }
    return kapi_arena_strdup(a, text);
}
