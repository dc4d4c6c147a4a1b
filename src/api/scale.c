/*
 * api/scale: the scale subresource of custom resources (autoscaling/v1 Scale), as
 * apiextensions serves it. The Scale is a view of the object: spec.replicas is read from
 * and written to the CRD's specReplicasPath, status.replicas and status.selector are read
 * from statusReplicasPath and labelSelectorPath. A write to the Scale is an update of the
 * object through its main strategy, so the object's validation and generation apply.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "patch/patch.h"

/* The member at a ".a.b" path of the CRD's scale paths, or NULL. */
static json_t *at_path(const json_t *obj, const char *path)
{
    return path ? kapi_json_path(obj, path[0] == '.' ? path + 1 : path) : NULL;
}

/* The Scale of obj (served view). */
static json_t *scale_of(const kapi_type *t, const json_t *obj)
{
    static const char *const meta_keys[] = {"name", "namespace", "uid", "resourceVersion",
                                            "creationTimestamp"};
    const kapi_custom *c = t->custom;
    json_t *meta = json_object(), *spec = json_object(), *status = json_object();
    const json_t *m = json_object_get(obj, "metadata");
    for (size_t i = 0; i < KAPI_ARRAY_LEN(meta_keys); i++) {
        const char *v = kapi_json_path_str(m, meta_keys[i]);
        if (v && *v)
            json_object_set_new_nocheck(meta, meta_keys[i], json_string(v));
    }
    json_t *v = at_path(obj, c->scale_spec);
    json_int_t replicas = json_is_integer(v) ? json_integer_value(v) : 0;
    if (replicas)
        json_object_set_new_nocheck(spec, "replicas", json_integer((int32_t)replicas));
    v = at_path(obj, c->scale_status);
    json_object_set_new_nocheck(
        status, "replicas", json_integer(json_is_integer(v) ? (int32_t)json_integer_value(v) : 0));
    const char *sel = json_string_value(at_path(obj, c->scale_selector));
    if (sel && *sel)
        json_object_set_new_nocheck(status, "selector", json_string(sel));
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Scale", "apiVersion", "autoscaling/v1",
                     "metadata", meta, "spec", spec, "status", status);
}

/* unstructured.SetNestedField: sets the value at a ".a.b" path, making the objects on the
 * way. */
static void set_path(json_t *obj, const char *path, json_t *value)
{
    const char *p = path[0] == '.' ? path + 1 : path;
    for (;;) {
        size_t n = strcspn(p, ".");
        char *key = kapi_xstrndup(p, n);
        if (!p[n]) {
            json_object_set_new_nocheck(obj, key, value);
            free(key);
            return;
        }
        obj = kapi_json_object_ensure(obj, key);
        free(key);
        p += n + 1;
    }
}

static void respond_scale(kapi_req *r, int status, const json_t *obj)
{
    kapi_buf b;
    kapi_buf_init(&b);
    json_t *scale = scale_of(r->type, obj);
    kapi_json_encode(&b, scale);
    kapi_buf_putc(&b, '\n');
    json_decref(scale);
    kapi_api__respond_json(r, status, &b);
}

/* Writes the replicas of scale (a decoded Scale) into the object and updates it through
 * the main resource; *out gets the object as stored (served view). */
static kapi_error *write_scale(kapi_req *r, const kapi_write_opts *o, const json_t *scale,
                               json_t **out)
{
    const kapi_type *t = r->type;
    json_t *obj = NULL;
    kapi_write w;
    kapi_error *err = kapi_api__current(r, &obj, NULL);
    if (err)
        return err;
    json_t *replicas = kapi_json_path(scale, "spec.replicas");
    set_path(obj, t->custom->scale_spec,
             json_integer(json_is_integer(replicas) ? json_integer_value(replicas) : 0));
    const char *rv = kapi_json_path_str(scale, "metadata.resourceVersion");
    if (rv && *rv)
        json_object_set_new_nocheck(json_object_get(obj, "metadata"), "resourceVersion",
                                    json_string(rv));
    kapi_api__write_init(&w, r, KAPI_WRITE_UPDATE);
    w.subresource = ""; /* the main resource's update */
    w.recorded_as = "scale";
    w.manager = o->manager;
    w.obj = obj;
    w.dry_run = o->dry_run;
    if ((err = kapi_api__write(&w)) != NULL)
        return err;
    if (w.unstored) {
        *out = w.unstored;
    } else {
        *out = w.stored_json ? w.stored_json : kapi_api__parse_stored(w.stored);
        kapi_obj_unref(w.stored);
    }
    if ((err = kapi_type_from_storage(t, out, 1)) != NULL) {
        json_decref(*out);
        *out = NULL;
    }
    return err;
}

/* A Scale body, decoded as kube-apiserver decodes into autoscaling/v1 Scale. */
static kapi_error *decode_scale(kapi_req *r, json_t *scale)
{
    const kapi_schema *s = kapi_schema_set_get(kapi_registry_schemas(r->api->registry),
                                               "io.k8s.api.autoscaling.v1.Scale");
    kapi_schema_walk w = {.arena = &r->arena, .go_types = true};
    kapi_error *err = s ? kapi_schema_decode(s, scale, &w) : NULL;
    if (!err)
        return NULL;
    kapi_error *out =
        kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                       "Scale in version \"v1\" cannot be handled as a Scale: %s", err->message);
    kapi_error_free(err);
    return out;
}

static kapi_error *put_scale(kapi_req *r, json_t **out)
{
    kapi_write_opts o;
    kapi_dups dups;
    json_t *scale = NULL;
    kapi_dups_init(&dups);
    kapi_error *err = kapi_api__write_options(r, "UpdateOptions", false, &o);
    if (!err)
        err = kapi_api__decode_body(r, "Scale", &scale, &dups);
    if (!err)
        err = decode_scale(r, scale);
    if (!err)
        err = write_scale(r, &o, scale, out);
    kapi_dups_dispose(&dups);
    json_decref(scale);
    return err;
}

/* An apply to the scale subresource, as 1.26 answers it: its field manager is the
 * custom resource's, which has no type for autoscaling/v1 Scale, so an apply body of
 * the right version fails to be typed (a 500). */
static kapi_error *apply_scale(kapi_req *r)
{
    kapi_write_opts o;
    kapi_dups dups;
    json_t *config = NULL;
    kapi_dups_init(&dups);
    kapi_error *err = kapi_api__write_options(r, "PatchOptions", true, &o);
    if (!err)
        err = kapi_api__decode_apply(r, &config, &dups);
    kapi_dups_dispose(&dups);
    if (err)
        return err;
    const char *av = kapi_json_path_str(config, "apiVersion") ?: "";
    const char *kind = kapi_json_path_str(config, "kind") ?: "";
    const char *ns = kapi_json_path_str(config, "metadata.namespace") ?: "";
    const char *name = kapi_json_path_str(config, "metadata.name") ?: "";
    if (strcmp(av, "autoscaling/v1") != 0)
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             "Incorrect version specified in apply patch. Specified patch "
                             "version: %s, expected: autoscaling/v1",
                             av);
    else if (json_is_array(kapi_json_path(config, "metadata.managedFields")))
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "metadata.managedFields must be nil");
    else
        err = kapi_error_new(KAPI_STATUS_UNKNOWN,
                             "failed to create typed patch object (%s/%s; autoscaling/v1, "
                             "Kind=%s): no corresponding type for autoscaling/v1, Kind=%s",
                             ns, name, kind, kind);
    json_decref(config);
    return err;
}

static kapi_error *patch_scale(kapi_req *r, json_t **out)
{
    kapi_write_opts o;
    kapi_patch_type type;
    json_t *patch = NULL, *obj = NULL, *scale = NULL;
    kapi_error *err = kapi_api__patch_type(r, &type);
    if (!err && type == KAPI_PATCH_APPLY)
        return apply_scale(r);
    if (!err)
        err = kapi_api__write_options(r, "PatchOptions", false, &o);
    if (!err)
        err = kapi_patch_parse(&patch, type, r->http->body, r->http->body_len,
                               o.fv != KAPI_FV_IGNORE);
    if (!err)
        err = kapi_api__current(r, &obj, NULL);
    if (!err) {
        scale = scale_of(r->type, obj);
        const kapi_schema *s = kapi_schema_set_get(kapi_registry_schemas(r->api->registry),
                                                   "io.k8s.api.autoscaling.v1.Scale");
        err = type == KAPI_PATCH_JSON    ? kapi_patch_json(&scale, patch)
              : type == KAPI_PATCH_MERGE ? kapi_patch_merge(&scale, patch)
                                         : kapi_patch_strategic(&scale, patch, s);
    }
    if (!err)
        err = decode_scale(r, scale);
    if (!err)
        err = write_scale(r, &o, scale, out);
    json_decref(patch);
    json_decref(obj);
    json_decref(scale);
    return err;
}

void kapi_api__serve_scale(kapi_req *r)
{
    json_t *obj = NULL;
    kapi_error *err;
    if (strcmp(r->info.verb, "get") == 0)
        err = kapi_api__current(r, &obj, NULL);
    else if (strcmp(r->info.verb, "update") == 0)
        err = put_scale(r, &obj);
    else
        err = patch_scale(r, &obj);
    if (err)
        kapi_api__respond_error(r, err);
    else
        respond_scale(r, 200, obj);
    json_decref(obj);
}
