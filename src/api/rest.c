/*
 * api/rest: the verbs on a resource type (reference 4.2): get, list, create, update,
 * delete. Each reads top to bottom: resolve, decode, admit, store, encode.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "schema/field.h"

const char *kapi_api__quote(kapi_arena *a, kapi_str s)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_quote(&b, s.ptr ? s.ptr : "", s.len);
    const char *q = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return q;
}

const char *kapi_api__shown(kapi_arena *a, kapi_str s)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < s.len; i++) {
        if (s.ptr[i])
            kapi_buf_putc(&b, s.ptr[i]);
        else
            kapi_buf_puts(&b, "\\x00");
    }
    const char *out = kapi_arena_strndup(a, b.ptr ? b.ptr : "", b.len);
    kapi_buf_dispose(&b);
    return out;
}

kapi_str kapi_api__name_of(const json_t *meta)
{
    const json_t *v = json_object_get(meta, "name");
    return json_is_string(v) ? (kapi_str){json_string_value(v), json_string_length(v)}
                             : KAPI_STR("");
}

/* Status details name a resource by its plural ("cronjobs"), messages by plural.group and
 * the name as Go's %q shows it (a NUL as \x00). */
kapi_error *kapi_api__err_not_found(kapi_arena *a, const kapi_type *t, kapi_str name)
{
    kapi_error *err = kapi_error_new(KAPI_STATUS_NOT_FOUND, "%s %s not found",
                                     kapi_type_resource_name(a, t), kapi_api__quote(a, name));
    kapi_error_details(err, name.ptr, t->group, t->plural);
    return err;
}

kapi_error *kapi_api__err_store(kapi_arena *a, kapi_store_rc rc, const kapi_type *t, kapi_str name)
{
    const char *res = kapi_type_resource_name(a, t), *q = kapi_api__quote(a, name);
    kapi_error *err;
    switch (rc) {
    case KAPI_STORE_NOT_FOUND:
        err = kapi_error_new(KAPI_STATUS_NOT_FOUND, "%s %s not found", res, q);
        break;
    case KAPI_STORE_EXISTS:
        err = kapi_error_new(KAPI_STATUS_ALREADY_EXISTS, "%s %s already exists", res, q);
        break;
    case KAPI_STORE_CONFLICT:
        err = kapi_error_new(KAPI_STATUS_CONFLICT,
                             "Operation cannot be fulfilled on %s %s: the object has been "
                             "modified; please apply your changes to the latest version and try "
                             "again",
                             res, q);
        break;
    default:
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "storage error while writing %s %s", res,
                              q);
    }
    kapi_error_details(err, name.ptr, t->group, t->plural);
    return err;
}

/* Parses stored bytes (they were written by kapi, so they parse). */
json_t *kapi_api__parse_stored(const kapi_obj *o)
{
    return kapi_json_parse(o->data, o->len, NULL);
}

/* Answers with an object that was not stored (dry run), in the type's view. */
void kapi_api__respond_unstored(kapi_req *r, const kapi_type *t, int status, json_t *stored)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_grow(&b, KAPI_API_OBJECT_GUESS);
    kapi_error *err = kapi_type_encode_from_storage(t, &b, stored);
    if (err) {
        kapi_buf_dispose(&b);
        kapi_api__respond_error(r, err);
        return;
    }
    kapi_buf_putc(&b, '\n');
    kapi_api__respond_json(r, status, &b);
}

/* Answers with a stored object in the type's view: straight from the bytes when the
 * views are equal, converted otherwise. */
void kapi_api__respond_stored(kapi_req *r, const kapi_type *t, int status, kapi_obj *o)
{
    if (kapi_type_serves_stored(t, o->data, o->len)) {
        kapi_api__respond_obj(r, status, o);
        return;
    }
    kapi_api__respond_unstored(r, t, status, kapi_api__parse_stored(o));
    kapi_obj_unref(o);
}

/* The object at key as of revision at, read from etcd when the cache lags behind it. */
static kapi_store_rc get_at(kapi_store *st, kapi_str key, int64_t at, kapi_obj **out)
{
    kapi_store_list_result l;
    kapi_store_list_opts q = {.prefix = key, .rev = at, .limit = 1};
    kapi_store_rc rc = kapi_store_list(st, &q, &l);
    *out = NULL;
    if (rc == KAPI_STORE_OK && l.n == 1 && kapi_str_eq(kapi_obj_key(l.items[0]), key))
        *out = kapi_obj_ref(l.items[0]);
    else if (rc == KAPI_STORE_OK)
        rc = KAPI_STORE_NOT_FOUND;
    kapi_store_list_dispose(&l);
    return rc;
}

/* get honours resourceVersion (reference 4.6): "0" is any, another value not older than
 * it (waited for briefly when the store has not reached it), none the latest
 * (kapi_api__consistent). */
static void do_get(kapi_req *r)
{
    const kapi_type *t = r->type;
    kapi_obj *o = NULL;
    int64_t rv, at = 0;
    const char *given = kapi_api__query(r, "resourceVersion");
    kapi_error *err = kapi_api__parse_rv(given, &rv);
    if (!err && rv > 0)
        err = kapi_api__wait_for_revision(r->api, rv);
    else if (!err && (!given || !*given))
        err = kapi_api__consistent(r->api, &at);
    if (err) {
        kapi_api__respond_error(r, err);
        return;
    }
    kapi_str key = kapi_type_key(&r->arena, t, r->info.ns, r->info.name);
    kapi_store_rc rc =
        at ? get_at(r->api->store, key, at, &o) : kapi_store_get(r->api->store, key, &o);
    if (rc == KAPI_STORE_NOT_FOUND) {
        kapi_api__respond_error(r, kapi_api__err_not_found(&r->arena, t, r->info.name));
        return;
    }
    if (rc != KAPI_STORE_OK) {
        kapi_api__respond_error(
            r, kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "the store cannot be read; try again"));
        return;
    }
    kapi_api__respond_stored(r, t, 200, o);
}

kapi_error *kapi_api__body_namespace(const kapi_type *t, kapi_str ns, json_t *meta)
{
    const json_t *body_ns = json_object_get(meta, "namespace");
    if (!t->namespaced) {
        json_object_del(meta, "namespace");
        return NULL;
    }
    kapi_str given = {json_string_value(body_ns), json_string_length(body_ns)};
    if (given.len && !kapi_str_eq(given, ns))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "the namespace of the provided object does not match the namespace "
                              "sent on the request");
    json_object_set_new_nocheck(meta, "namespace", json_stringn(ns.ptr ? ns.ptr : "", ns.len));
    return NULL;
}

/* Passes a type's warnings on as Warning headers of the request. */
static void warn(void *ctx, const char *text)
{
    kapi_api__warn(ctx, "%s", text);
}

/* The create stage of kapi_api__write. */
kapi_error *kapi_api__create_stage(kapi_write *w)
{
    const kapi_type *t = w->type;
    json_t *obj = w->obj;
    kapi_str ns = w->ns;
    kapi_error *err;
    char uid[37], suffix[6];
    w->obj = NULL;
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    if ((err = kapi_api__body_namespace(t, ns, meta)) != NULL)
        goto done;
    if (!t->persisted) { /* a review: its managedFields, validation, then its answer */
        kapi_api__manage(w, NULL, obj);
        if ((err = kapi_type_validate(t, obj, NULL)) == NULL)
            w->unstored = kapi_api__review(w, obj);
        goto done;
    }
    kapi_str name = kapi_api__name_of(meta);
    const json_t *gen = json_object_get(meta, "generateName");
    size_t gen_len = json_string_length(gen);
    if (!name.len && gen_len) { /* at most 58 bytes of it, whatever they are, and 5 more */
        char generated[58 + 5];
        size_t n = gen_len < 58 ? gen_len : 58;
        kapi_random_suffix(suffix, 5);
        memcpy(generated, json_string_value(gen), n);
        memcpy(generated + n, suffix, 5);
        json_object_set_new_nocheck(meta, "name", json_stringn(generated, n + 5));
    }
    const char *rv = kapi_json_path_str(meta, "resourceVersion");
    if (rv && *rv) {
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             "resourceVersion should not be set on objects to be created");
        goto done;
    }
    if ((err = kapi_api__escalation_check(w, obj, NULL)) != NULL ||
        (err = kapi_type_admit(t, &w->hooks, KAPI_ADMIT_CREATE, ns, obj)) != NULL)
        goto done;
    kapi_api__manage(w, NULL, obj);
    kapi_uuid_v4(uid);
    json_object_set_new_nocheck(meta, "uid", json_string_nocheck(uid));
    json_object_set_new_nocheck(meta, "creationTimestamp", json_string_nocheck(w->hooks.now));
    json_object_del(meta, "deletionTimestamp");
    json_object_del(meta, "deletionGracePeriodSeconds");
    if (t->generation)
        json_object_set_new_nocheck(meta, "generation", json_integer(1));
    else
        json_object_del(meta, "generation");
    kapi_type_prepare_create(t, obj);
    if ((err = kapi_type_validate(t, obj, NULL)) != NULL)
        goto done;
    if (t->strategy->warnings && w->req)
        t->strategy->warnings(t, obj, NULL, warn, w->req);
    err = kapi_api__store_write(w->api, w->arena, t, obj, KAPI_STORE_CREATE, 0, NULL, &w->stored,
                                t->strategy->from_storage ? &w->stored_json : NULL,
                                w->dry_run ? &w->unstored : NULL);
done:
    json_decref(obj);
    return err;
}

void kapi_api__respond_written(kapi_req *r, kapi_write *w, kapi_error *err)
{
    if (err) {
        kapi_api__respond_error(r, err);
    } else if (w->unstored) {
        kapi_api__respond_unstored(r, r->type, w->status, w->unstored);
    } else if (w->stored_json) {
        kapi_obj_unref(w->stored);
        kapi_api__respond_unstored(r, r->type, w->status, w->stored_json);
    } else {
        kapi_api__respond_stored(r, r->type, w->status, w->stored);
    }
}

static void do_create(kapi_req *r)
{
    kapi_write w;
    kapi_write_opts opts;
    kapi_api__write_init(&w, r, KAPI_WRITE_CREATE);
    kapi_error *err = kapi_api__write_options(r, "CreateOptions", false, &opts);
    if (!err)
        err = kapi_api__decode_object(r, &opts, &w.obj);
    if (!err) {
        w.dry_run = opts.dry_run;
        w.manager = opts.manager;
        err = kapi_api__write(&w);
    }
    kapi_api__respond_written(r, &w, err);
}

/* metadata.resourceVersion of an update: "" (unconditional) or the revision it expects. */
static kapi_error *expected_rev(const json_t *meta, int64_t *out)
{
    const char *rv = kapi_json_path_str(meta, "resourceVersion");
    char *end = NULL;
    *out = 0;
    if (!rv || !*rv)
        return NULL;
    long long v = strtoll(rv, &end, 10);
    if (*end || v <= 0)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "invalid resource version \"%s\": must be a decimal revision", rv);
    *out = v;
    return NULL;
}

/* The metadata an update carries over from the stored object (rest.BeforeUpdate). The
 * generation moves on when a write to the main resource changes the spec; a write to a
 * subresource never moves it. */
/* Whether an update changes what the generation counts: the spec of a built-in type;
 * anything outside metadata of a custom resource, as apiextensions counts. */
static bool content_changed(const kapi_type *t, const json_t *obj, const json_t *old)
{
    if (!t->custom)
        return !kapi_json_equal(json_object_get(obj, "spec"), json_object_get(old, "spec"));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (strcmp(key, "metadata") != 0 && !kapi_json_equal(v, json_object_get(old, key)))
            return true;
    }
    json_object_foreach((json_t *)old, key, v)
    {
        if (strcmp(key, "metadata") != 0 && !json_object_get(obj, key))
            return true;
    }
    return false;
}

static void keep_server_fields(const kapi_type *t, json_t *obj, const json_t *old, bool subresource)
{
    static const char *const kept[] = {"creationTimestamp", "deletionTimestamp",
                                       "deletionGracePeriodSeconds"};
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    const json_t *old_meta = json_object_get(old, "metadata");
    const char *uid = kapi_json_path_str(meta, "uid");
    if (!uid || !*uid)
        json_object_set_nocheck(meta, "uid", json_object_get(old_meta, "uid"));
    kapi_json_keep(meta, old_meta, kept, KAPI_ARRAY_LEN(kept));
    if (!t->generation) {
        json_object_del(meta, "generation");
        return;
    }
    json_int_t gen = json_integer_value(json_object_get(old_meta, "generation"));
    if (!subresource && content_changed(t, obj, old))
        gen++;
    json_object_set_new_nocheck(meta, "generation", json_integer(gen));
}

/* The update stage of kapi_api__write. */
kapi_error *kapi_api__update_stage(kapi_write *w)
{
    const kapi_type *t = w->type;
    kapi_arena *a = w->arena;
    const char *sub = w->subresource;
    json_t *obj = w->obj;
    kapi_error *err;
    kapi_obj *cur = NULL;
    json_t *old = NULL;
    int64_t expect;
    w->obj = NULL;
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    kapi_str name = kapi_api__name_of(meta);
    if (!kapi_str_eq(name, w->name)) {
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             "the name of the object (%s) does not match the name on the URL (%s)",
                             kapi_api__shown(a, name), kapi_api__shown(a, w->name));
        goto done;
    }
    if ((err = kapi_api__body_namespace(t, w->ns, meta)) != NULL ||
        (err = expected_rev(meta, &expect)) != NULL)
        goto done;
    kapi_str key = kapi_type_key(a, t, w->ns, name);
    if (kapi_store_get(w->api->store, key, &cur) != KAPI_STORE_OK) {
        if (t->create_on_update && expect == 0) {
            json_object_del(meta, "resourceVersion");
            w->status = 201;
            w->obj = json_incref(obj);
            err = kapi_api__create_stage(w);
        } else {
            err = kapi_api__err_not_found(a, t, name);
        }
        goto done;
    }
    if (!expect && t->conditional_update) {
        /* kube-apiserver names the resource here, not the kind */
        err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
        kapi_field_invalid_raw(err, "metadata.resourceVersion", "0x0",
                               "must be specified for an update");
        err = kapi_field_finish_invalid(err, t->plural, t->group, name.ptr);
        goto done;
    }
    if (expect && expect != cur->rev) {
        err = kapi_api__err_store(a, KAPI_STORE_CONFLICT, t, name);
        goto done;
    }
    if (w->old && w->old_rev == cur->rev) {
        old = json_incref((json_t *)w->old);
    } else {
        old = kapi_api__parse_stored(cur);
        if ((err = kapi_type_from_storage(t, &old, 1)) != NULL)
            goto done;
    }
    if (!*sub && (err = kapi_api__escalation_check(w, obj, old)) != NULL)
        goto done;
    kapi_api__manage(w, old, obj);
    if (*sub) {
        kapi_type_prepare_subresource(t, sub, obj, old);
        keep_server_fields(t, obj, old, true);
        if ((err = kapi_type_validate_subresource(t, sub, obj, old)) != NULL)
            goto done;
    } else {
        kapi_type_prepare_update(t, obj, old);
        keep_server_fields(t, obj, old, false);
        if ((err = kapi_type_validate(t, obj, old)) != NULL)
            goto done;
        if (t->strategy->warnings && w->req)
            t->strategy->warnings(t, obj, old, warn, w->req);
    }
    if (kapi_type_deletion_done(t, obj)) {
        err = kapi_api__finish_deletion(w->api, a, t, key, cur->rev, w->dry_run, obj, &w->unstored);
        goto done;
    }
    err = kapi_api__store_write(w->api, a, t, obj, KAPI_STORE_UPDATE, cur->rev, cur, &w->stored,
                                t->strategy->from_storage ? &w->stored_json : NULL,
                                w->dry_run ? &w->unstored : NULL);
done:
    if (cur)
        kapi_obj_unref(cur);
    json_decref(old);
    json_decref(obj);
    return err;
}

static void do_update(kapi_req *r)
{
    kapi_write w;
    kapi_write_opts opts;
    kapi_api__write_init(&w, r, KAPI_WRITE_UPDATE);
    kapi_error *err = kapi_api__write_options(r, "UpdateOptions", false, &opts);
    if (!err)
        err = kapi_api__decode_object(r, &opts, &w.obj);
    if (!err) {
        w.dry_run = opts.dry_run;
        w.manager = opts.manager;
        err = kapi_api__write(&w);
    }
    kapi_api__respond_written(r, &w, err);
}

/* Which verb a request may use here, given its path's shape; NULL when the method is
 * not allowed (405) on this path. */
static bool route_allowed(kapi_req *r)
{
    const kapi_reqinfo *in = &r->info;
    const char *v = in->verb;
    bool named = in->name.len > 0;
    if (*in->subresource) {
        const kapi_subresource *s = kapi_type_subresource(r->type, kapi_str_c(in->subresource));
        return s && kapi_verbs_has(s->verbs, v);
    }
    if (named)
        return strcmp(v, "get") == 0 || strcmp(v, "update") == 0 || strcmp(v, "delete") == 0 ||
               strcmp(v, "watch") == 0 || strcmp(v, "patch") == 0;
    return strcmp(v, "list") == 0 || strcmp(v, "create") == 0 || strcmp(v, "watch") == 0 ||
           strcmp(v, "deletecollection") == 0;
}

/* Resolves the type and the path's shape; NULL when the request may go on. */
static kapi_error *resolve(kapi_req *r)
{
    kapi_reqinfo *in = &r->info;
    const kapi_type *t = kapi_registry_lookup(r->api->registry, kapi_str_c(in->group),
                                              kapi_str_c(in->version), kapi_str_c(in->resource));
    kapi_error *err;
    if (!t && (err = kapi_api__custom_type(r, &t)) != NULL)
        return err;
    r->type = t;
    if (!t || in->nparts > 3)
        return kapi_api__err_not_found_resource();
    if (t->custom && t->custom->warning)
        kapi_api__warn(r, "%s", t->custom->warning);
    if (t->is_namespace)
        in->ns = KAPI_STR("");
    if (!t->namespaced && in->ns.len)
        return kapi_api__err_not_found_resource();
    if (*in->subresource && !kapi_type_subresource(t, kapi_str_c(in->subresource)))
        return kapi_api__err_not_found_resource();
    if (t->namespaced && !in->ns.len) {
        /* Only list and watch exist across namespaces. */
        if (in->name.len || !t->all_namespaces)
            return kapi_api__err_not_found_resource();
        if (strcmp(in->verb, "list") != 0 && strcmp(in->verb, "watch") != 0)
            return kapi_api__err_method_not_allowed();
    }
    if (!kapi_verbs_has(t->verbs, in->verb) && !*in->subresource)
        return kapi_api__err_method_not_allowed();
    /* apiextensions routes every verb on both path shapes: a create on an item path takes
     * the body's name, an update or patch on the collection has none. */
    if (t->custom && !*in->subresource) {
        bool named = in->name.len > 0;
        if (!named && (strcmp(in->verb, "update") == 0 || strcmp(in->verb, "patch") == 0))
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "name must be provided");
        if (named && strcmp(in->verb, "create") == 0)
            return NULL;
    }
    if (!route_allowed(r))
        return kapi_api__err_method_not_allowed();
    return NULL;
}

/* The verbs served so far; any other answers 405. */
static const struct {
    const char *verb;
    void (*serve)(kapi_req *r);
} verbs[] = {
    {"get", do_get},
    {"list", kapi_api__serve_list},
    {"watch", kapi_api__serve_watch},
    {"create", do_create},
    {"update", do_update},
    {"delete", kapi_api__serve_delete},
    {"deletecollection", kapi_api__serve_deletecollection},
    {"patch", kapi_api__serve_patch},
};

/* The subresources with code of their own; the others (status, finalize) are served by
 * the verbs above. */
static const struct {
    const char *name;
    void (*serve)(kapi_req *r);
} subresources[] = {
    {"scale", kapi_api__serve_scale},
    {"token", kapi_api__serve_token},
};

void kapi_api__serve_resource(kapi_req *r)
{
    kapi_error *err = resolve(r);
    if (!err)
        err = kapi_api__negotiate(r);
    if (err) {
        kapi_api__respond_error(r, err);
        return;
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(subresources); i++) {
        if (strcmp(r->info.subresource, subresources[i].name) == 0) {
            subresources[i].serve(r);
            return;
        }
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(verbs); i++) {
        if (strcmp(r->info.verb, verbs[i].verb) == 0) {
            verbs[i].serve(r);
            return;
        }
    }
    kapi_api__respond_error(r, kapi_api__err_method_not_allowed());
}
