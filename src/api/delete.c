/*
 * api/delete: delete and deletecollection (reference section 3, 4.2, 4.7), the way
 * kube-apiserver's generic store deletes.
 *
 * DeleteOptions come from the body when there is one, else from the whole query. A delete
 * checks the preconditions, applies the propagation policy's finalizer (Orphan: orphan,
 * Foreground: foregroundDeletion, Background: neither; without a policy, the finalizer the
 * object has or the type's default: kapi_type.gc_policy), then either removes the object
 * (no finalizers: the answer is a Success Status) or starts its two-phase deletion:
 * deletionTimestamp and deletionGracePeriodSeconds 0 are set, the generation moves on,
 * and the object is answered. The object goes once an update empties its finalizers
 * (kapi_api__finish_deletion). A write that loses a race with another is retried.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "schema/field.h"

/* ---- options ---- */

static kapi_error *options_invalid(kapi_error *err)
{
    return kapi_field_finish_invalid(err, "DeleteOptions", "meta.k8s.io", "");
}

/* The members of a DeleteOptions body. */
static kapi_error *body_options(kapi_req *r, kapi_delete_opts *d)
{
    json_t *body = NULL;
    kapi_error *err = kapi_api__decode_body(r, "DeleteOptions", &body, NULL);
    if (err)
        return err;
    /* Any other kind is not options: an object sent by mistake must not be a delete
     * without preconditions or dry run (kube-apiserver fails its decoding with a 500). */
    const char *kind = kapi_json_path_str(body, "kind");
    if (kind && *kind && strcmp(kind, "DeleteOptions") != 0) {
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             "the body of a delete must be DeleteOptions, not %s", kind);
        json_decref(body);
        return err;
    }
    json_t *pre = json_object_get(body, "preconditions");
    json_t *dry = json_object_get(body, "dryRun");
    const char *uid = kapi_json_path_str(pre, "uid");
    const char *rv = kapi_json_path_str(pre, "resourceVersion");
    const char *policy = kapi_json_path_str(body, "propagationPolicy");
    json_t *grace = json_object_get(body, "gracePeriodSeconds");
    d->pre_uid = uid ? kapi_arena_strdup(&r->arena, uid) : NULL;
    d->pre_rv = rv ? kapi_arena_strdup(&r->arena, rv) : NULL;
    d->propagation = policy ? kapi_arena_strdup(&r->arena, policy) : NULL;
    d->has_orphan = json_is_boolean(json_object_get(body, "orphanDependents"));
    d->orphan = json_is_true(json_object_get(body, "orphanDependents"));
    if (json_is_integer(grace))
        d->grace = json_integer_value(grace);
    size_t i;
    json_t *v;
    json_array_foreach(dry, i, v)
    {
        if (!json_is_string(v) || strcmp(json_string_value(v), "All") != 0) {
            kapi_error *e = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
            kapi_field_not_supported(e, "dryRun", json_is_string(v) ? json_string_value(v) : "",
                                     (const char *const[]){"All", NULL});
            json_decref(body);
            return options_invalid(e);
        }
        d->dry_run = true;
    }
    json_decref(body);
    return NULL;
}

/* The query as DeleteOptions (Convert_url_Values_To_v1_DeleteOptions): gracePeriodSeconds,
 * orphanDependents, propagationPolicy and dryRun; a value that does not convert is a 400.
 * Preconditions are no query parameters. */
static kapi_error *query_options(kapi_req *r, kapi_delete_opts *d)
{
    kapi_write_opts w;
    kapi_error *err = kapi_api__query_int(r, "gracePeriodSeconds", &d->grace);
    if (err)
        return err;
    d->has_orphan = kapi_api__query(r, "orphanDependents") != NULL;
    d->orphan = kapi_api__query_bool(r, "orphanDependents");
    d->propagation = kapi_api__query(r, "propagationPolicy");
    if ((err = kapi_api__write_options(r, "DeleteOptions", false, &w)) != NULL)
        return err;
    d->dry_run = w.dry_run;
    return NULL;
}

kapi_error *kapi_api__delete_options(kapi_req *r, kapi_delete_opts *d)
{
    memset(d, 0, sizeof(*d));
    d->grace = -1;
    kapi_error *err = r->http->body_len > 0 ? body_options(r, d) : query_options(r, d);
    if (err)
        return err;
    const char *p = d->propagation;
    if (p && strcmp(p, "Foreground") != 0 && strcmp(p, "Background") != 0 &&
        strcmp(p, "Orphan") != 0) {
        static const char *const policies[] = {"Foreground", "Background", "Orphan", "nil", NULL};
        err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
        kapi_field_not_supported(err, "propagationPolicy", p, policies);
        return options_invalid(err);
    }
    if (d->has_orphan && p) {
        err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
        kapi_field_invalid_str(err, "propagationPolicy", p, "%s",
                               "orphanDependents and deletionPropagation cannot be both set");
        return options_invalid(err);
    }
    return NULL;
}

/* kube's Job REST warns that a delete without a policy keeps the Job's children. */
static void warn_orphaning(kapi_req *r, const kapi_delete_opts *d)
{
    if (!d->propagation && !d->has_orphan && r->type->gc_policy == KAPI_GC_ORPHAN &&
        r->type->gc_policy_warning)
        kapi_api__warn(r, "%s", r->type->gc_policy_warning);
}

/* ---- one object ---- */

static kapi_error *check_preconditions(const kapi_type *t, const kapi_delete_opts *d,
                                       const json_t *meta, kapi_str name_s, kapi_arena *a)
{
    const char *name = kapi_api__quote(a, name_s);
    const char *uid = kapi_json_path_str(meta, "uid");
    const char *rv = kapi_json_path_str(meta, "resourceVersion");
    kapi_error *err = NULL;
    if (d->pre_uid && strcmp(d->pre_uid, uid ? uid : "") != 0)
        err = kapi_error_new(KAPI_STATUS_CONFLICT,
                             "Operation cannot be fulfilled on %s.%s %s: the UID in the "
                             "precondition (%s) does not match the UID in record (%s). The "
                             "object might have been deleted and then recreated",
                             t->kind, t->group, name, d->pre_uid, uid ? uid : "");
    else if (d->pre_rv && strcmp(d->pre_rv, rv ? rv : "") != 0)
        err = kapi_error_new(KAPI_STATUS_CONFLICT,
                             "Operation cannot be fulfilled on %s.%s %s: the ResourceVersion "
                             "in the precondition (%s) does not match the ResourceVersion in "
                             "record (%s). The object might have been modified",
                             t->kind, t->group, name, d->pre_rv, rv ? rv : "");
    if (err)
        kapi_error_details(err, name_s.ptr, t->group, t->kind);
    return err;
}

/* shouldOrphanDependents and shouldDeleteDependents: what the garbage collector is to do
 * with obj's dependents. The options decide first, then the first of the two finalizers
 * obj has, then (orphaning only) the type's default policy; a type whose objects own
 * nothing takes neither. */
static void gc_wanted(const kapi_type *t, const kapi_delete_opts *d, const json_t *fins,
                      bool *orphan, bool *foreground)
{
    const char *p = d->propagation;
    *orphan = *foreground = false;
    if (t->gc_policy == KAPI_GC_UNSUPPORTED)
        return;
    if (d->has_orphan || p) {
        *orphan = d->has_orphan ? d->orphan : strcmp(p, "Orphan") == 0;
        *foreground = !d->has_orphan && strcmp(p, "Foreground") == 0;
        return;
    }
    size_t i;
    json_t *v;
    json_array_foreach(fins, i, v)
    {
        const char *f = json_is_string(v) ? json_string_value(v) : "";
        *orphan = strcmp(f, "orphan") == 0;
        *foreground = strcmp(f, "foregroundDeletion") == 0;
        if (*orphan || *foreground)
            return;
    }
    *orphan = t->gc_policy == KAPI_GC_ORPHAN;
}

/* deletionFinalizersForGarbageCollection: meta's finalizers without orphan and
 * foregroundDeletion, then the one the policy asks for. Returns true when the set
 * changed (the order of an unchanged set is kept). */
static bool apply_policy(const kapi_type *t, const kapi_delete_opts *d, json_t *meta)
{
    json_t *fins = json_object_get(meta, "finalizers");
    bool orphan, foreground, had_orphan = false, had_foreground = false;
    gc_wanted(t, d, fins, &orphan, &foreground);
    json_t *kept = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(fins, i, v)
    {
        const char *f = json_is_string(v) ? json_string_value(v) : "";
        had_orphan |= strcmp(f, "orphan") == 0;
        had_foreground |= strcmp(f, "foregroundDeletion") == 0;
        if (strcmp(f, "orphan") != 0 && strcmp(f, "foregroundDeletion") != 0)
            json_array_append(kept, v);
    }
    if (orphan == had_orphan && foreground == had_foreground) {
        json_decref(kept);
        return false;
    }
    if (orphan)
        json_array_append_new(kept, json_string("orphan"));
    if (foreground)
        json_array_append_new(kept, json_string("foregroundDeletion"));
    if (json_array_size(kept))
        json_object_set_new_nocheck(meta, "finalizers", kept);
    else {
        json_object_del(meta, "finalizers");
        json_decref(kept);
    }
    return true;
}

/* Removes the object at key from the store as it is at revision rev. */
static kapi_error *remove_stored(kapi_api *api, kapi_arena *a, const kapi_type *t, kapi_str key,
                                 kapi_str name, int64_t rev, bool dry, json_t *obj, json_t **out)
{
    if (dry) {
        *out = json_incref(obj);
        return NULL;
    }
    kapi_store_write w = {.op = KAPI_STORE_DELETE, .key = key, .expect_rev = rev};
    kapi_store_rc rc = kapi_store_commit(api->store, &w);
    kapi_obj_unref(w.current);
    if (rc != KAPI_STORE_OK)
        return kapi_api__err_store(a, rc, t, name);
    json_object_set_new_nocheck(kapi_json_object_ensure(obj, "metadata"), "resourceVersion",
                                json_sprintf("%lld", (long long)w.result->rev));
    kapi_obj_unref(w.result);
    *out = json_incref(obj);
    return NULL;
}

/* Stores obj (served view), which waits for its finalizers, when it changed; *out gets
 * the object as it now is. */
static kapi_error *write_deleting(kapi_api *api, kapi_arena *a, const kapi_type *t, json_t *obj,
                                  int64_t rev, bool changed, bool dry, json_t **out)
{
    kapi_obj *o = NULL;
    json_t *would = NULL;
    if (!changed) {
        *out = json_incref(obj);
        return NULL;
    }
    json_t *json = NULL;
    kapi_error *err = kapi_api__store_write(api, a, t, obj, KAPI_STORE_UPDATE, rev, NULL, &o,
                                            dry ? NULL : &json, dry ? &would : NULL);
    if (err)
        return err;
    kapi_obj_unref(o);
    *out = dry ? would : json;
    if ((err = kapi_type_from_storage(t, out, 1)) != NULL) {
        json_decref(*out);
        *out = NULL;
    }
    return err;
}

/* The hooks' propagate: the delete's policy (w->del). */
static bool propagate(const kapi_hook_ctx *c, json_t *meta)
{
    const kapi_write *w = c->pipeline;
    return apply_policy(w->type, w->del, meta);
}

/* The delete stage of kapi_api__write: the type's admission and its own delete (its
 * before_delete hook), then the generic one. */
kapi_error *kapi_api__delete_stage(kapi_write *w)
{
    kapi_api *api = w->api;
    kapi_arena *a = w->arena;
    const kapi_type *t = w->type;
    const kapi_delete_opts *d = w->del;
    kapi_str name = w->name;
    kapi_str key = kapi_type_key(a, t, w->ns, name);
    json_t **out = &w->deleted;
    w->hooks.propagate = propagate;
    for (;;) {
        kapi_obj *cur = NULL;
        if (kapi_store_get(api->store, key, &cur) != KAPI_STORE_OK)
            return kapi_api__err_not_found(a, t, name);
        int64_t rev = cur->rev;
        json_t *obj = kapi_api__parse_stored(cur);
        kapi_obj_unref(cur);
        kapi_error *err = kapi_type_from_storage(t, &obj, 1);
        if (err) {
            json_decref(obj);
            return err;
        }
        json_t *meta = kapi_json_object_ensure(obj, "metadata");
        err = kapi_type_admit(t, &w->hooks, KAPI_ADMIT_DELETE, w->ns, obj);
        if (!err)
            err = check_preconditions(t, d, meta, name, a);
        if (err) { /* refused, or the client's precondition: not a race to retry */
            json_decref(obj);
            return err;
        }
        kapi_delete_step step = t->strategy->before_delete
                                    ? t->strategy->before_delete(t, &w->hooks, obj)
                                    : KAPI_DELETE_GENERIC;
        if (step != KAPI_DELETE_GENERIC) {
            err = write_deleting(api, a, t, obj, rev, step == KAPI_DELETE_MARKED, d->dry_run, out);
            json_decref(obj);
            if (!err || err->status != KAPI_STATUS_CONFLICT)
                return err;
            kapi_error_free(err);
            kapi_api__before_retry(api);
            continue;
        }
        bool changed = apply_policy(t, d, meta);
        if (json_array_size(json_object_get(meta, "finalizers")) == 0) {
            w->removed = true;
            err = remove_stored(api, a, t, key, name, rev, d->dry_run, obj, out);
        } else {
            if (!json_object_get(meta, "deletionTimestamp")) {
                json_object_set_new_nocheck(meta, "deletionTimestamp",
                                            json_string(kapi_api__now(a)));
                json_object_set_new_nocheck(meta, "deletionGracePeriodSeconds", json_integer(0));
                json_int_t gen = json_integer_value(json_object_get(meta, "generation"));
                if (gen > 0)
                    json_object_set_new_nocheck(meta, "generation", json_integer(gen + 1));
                changed = true;
            }
            err = write_deleting(api, a, t, obj, rev, changed, d->dry_run, out);
        }
        json_decref(obj);
        if (!err || err->status != KAPI_STATUS_CONFLICT || d->pre_rv)
            return err;
        kapi_error_free(err);
        json_decref(*out);
        *out = NULL;
        w->removed = false;
        kapi_api__before_retry(api);
    }
}

kapi_error *kapi_api__finish_deletion(kapi_api *api, kapi_arena *a, const kapi_type *t,
                                      kapi_str key, int64_t rev, bool dry, const json_t *obj,
                                      json_t **out)
{
    json_t *stored = kapi_json_copy(obj);
    kapi_error *err = kapi_type_to_storage(t, &stored);
    if (err) {
        json_decref(stored);
        return err;
    }
    json_t *meta = kapi_json_object_ensure(stored, "metadata");
    json_object_set_new_nocheck(meta, "resourceVersion", json_sprintf("%lld", (long long)rev));
    err = remove_stored(api, a, t, key, kapi_api__name_of(meta), rev, dry, stored, out);
    json_decref(stored);
    if (!err) {
        json_t *canon = kapi_api__canonical(t, *out);
        json_decref(*out);
        *out = canon;
    }
    return err;
}

/* ---- the verbs ---- */

/* The Status of a successful delete: details name the resource by its plural. */
static void respond_deleted(kapi_req *r, const kapi_type *t, kapi_str name, const char *uid)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                      "\"Success\",\"details\":{\"name\":");
    kapi_json_put_string(&b, name.ptr, name.len);
    if (*t->group) {
        kapi_buf_puts(&b, ",\"group\":");
        kapi_json_put_string(&b, t->group, strlen(t->group));
    }
    kapi_buf_printf(&b, ",\"kind\":\"%s\",\"uid\":", t->plural);
    kapi_json_put_string(&b, uid ? uid : "", uid ? strlen(uid) : 0);
    kapi_buf_puts(&b, "}}\n");
    kapi_api__respond_json(r, 200, &b);
}

/* Answers with an object in the type's (served) view. */
static void respond_served(kapi_req *r, int status, json_t *obj)
{
    kapi_buf b;
    kapi_buf_init(&b);
    json_t *canon = kapi_api__canonical(r->type, obj);
    kapi_json_encode(&b, canon);
    kapi_buf_putc(&b, '\n');
    json_decref(canon);
    kapi_api__respond_json(r, status, &b);
}

void kapi_api__serve_delete(kapi_req *r)
{
    kapi_delete_opts d;
    kapi_write w;
    kapi_api__write_init(&w, r, KAPI_WRITE_DELETE);
    w.del = &d;
    kapi_error *err = kapi_api__delete_options(r, &d);
    if (!err) {
        warn_orphaning(r, &d);
        err = kapi_api__write(&w);
    }
    if (err)
        kapi_api__respond_error(r, err);
    else if (w.removed)
        respond_deleted(r, r->type, w.name, kapi_json_path_str(w.deleted, "metadata.uid"));
    else /* kept by finalizers: 202 when the deprecated orphanDependents=false asked for a
            cascade, as kube-apiserver answers it */
        respond_served(r, d.has_orphan && !d.orphan ? 202 : 200, w.deleted);
    json_decref(w.deleted);
}

void kapi_api__serve_deletecollection(kapi_req *r)
{
    const kapi_type *t = r->type;
    kapi_delete_opts d;
    kapi_list_opts lo;
    kapi_filter *f = NULL;
    kapi_store_list_result l = {0};
    kapi_str prefix = kapi_type_key(&r->arena, t, r->info.ns, KAPI_STR(""));
    kapi_error *err = kapi_api__filter_new(r, KAPI_STR(""), &f);
    if (!err)
        err = kapi_api__list_options(r, &lo);
    if (!err) /* after the ListOptions, as kube-apiserver decodes them */
        err = kapi_api__delete_options(r, &d);
    if (!err)
        warn_orphaning(r, &d);
    kapi_store_list_opts q = {.prefix = prefix};
    if (!err && kapi_store_list(r->api->store, &q, &l) != KAPI_STORE_OK)
        err =
            kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "storage error while listing %s", t->plural);
    if (err) {
        kapi_api__filter_free(f);
        kapi_api__respond_error(r, err);
        return;
    }
    kapi_buf b, tail;
    kapi_buf_init(&b);
    kapi_buf_init(&tail);
    kapi_api__list_envelope(&b, &tail, t, &(kapi_list_meta){.rev = l.rev});
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!kapi_api__filter_match(f, l.items[i]))
            continue;
        kapi_write w;
        kapi_api__write_init(&w, r, KAPI_WRITE_DELETE);
        kapi_type_key_parse(t, kapi_obj_key(l.items[i]), NULL, &w.name);
        w.del = &d;
        kapi_error *e = kapi_api__write(&w);
        if (!e) {
            json_t *canon = kapi_api__canonical(t, w.deleted);
            if (!t->custom) {
                json_object_del(canon, "kind");
                json_object_del(canon, "apiVersion");
            }
            if (n++)
                kapi_buf_putc(&b, ',');
            kapi_json_encode(&b, canon);
            json_decref(canon);
        }
        kapi_error_free(e);
        json_decref(w.deleted);
    }
    kapi_buf_put(&b, tail.ptr, tail.len);
    kapi_buf_dispose(&tail);
    kapi_store_list_dispose(&l);
    kapi_api__filter_free(f);
    kapi_api__respond_json(r, 200, &b);
}
