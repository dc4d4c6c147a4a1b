/*
 * api/write: the one write function. Every write — a request's create, update, patch,
 * delete or subresource write, and kapi's own through the client API (api.h) — is a
 * kapi_write run by kapi_api__write, so what a later stage adds (managedFields,
 * authorization, admission, metrics) is added once and cannot be skipped.
 *
 * kapi_api__write lends the type's hooks a kapi_hook_ctx (the registry, the write's arena
 * and time, a read of the store) and runs the verb's stages: admit, server metadata,
 * defaults (prepare), validate, then the store stage, kapi_api__store_write, here.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

void kapi_api__hook_cache_init(kapi_hook_cache *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
}

void kapi_api__hook_cache_dispose(kapi_hook_cache *c)
{
    for (size_t i = 0; i < KAPI_API_HOOK_CACHE; i++) {
        if (c->e[i].obj)
            kapi_obj_unref(c->e[i].obj);
        json_decref(c->e[i].parsed);
    }
    pthread_mutex_destroy(&c->mu);
}

/* The parse of o from the cache, a new reference, or NULL. */
static json_t *cached(kapi_hook_cache *c, const kapi_obj *o)
{
    json_t *v = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < KAPI_API_HOOK_CACHE && !v; i++)
        if (c->e[i].obj == o)
            v = json_incref(c->e[i].parsed);
    pthread_mutex_unlock(&c->mu);
    return v;
}

/* Keeps v as o's parse, in place of the oldest entry. */
static void cache_put(kapi_hook_cache *c, kapi_obj *o, json_t *v)
{
    pthread_mutex_lock(&c->mu);
    size_t i = c->next++ % KAPI_API_HOOK_CACHE;
    kapi_obj *old = c->e[i].obj;
    json_t *old_v = c->e[i].parsed;
    c->e[i].obj = kapi_obj_ref(o);
    c->e[i].parsed = json_incref(v);
    pthread_mutex_unlock(&c->mu);
    if (old)
        kapi_obj_unref(old);
    json_decref(old_v);
}

/* The hooks' read of the store: the object of t at ns/name, parsed (storage view; shared
 * through the hook cache, so read only). */
static json_t *hook_get(const kapi_hook_ctx *c, const kapi_type *t, kapi_str ns, kapi_str name)
{
    const kapi_write *w = c->pipeline;
    kapi_obj *o = NULL;
    if (kapi_store_get(w->api->store, kapi_type_key(c->arena, t, ns, name), &o) != KAPI_STORE_OK)
        return NULL;
    json_t *obj = cached(&w->api->hook_cache, o);
    if (!obj) {
        obj = kapi_api__parse_stored(o);
        cache_put(&w->api->hook_cache, o, obj);
    }
    kapi_obj_unref(o);
    return obj;
}

void kapi_api__write_init(kapi_write *w, kapi_req *r, kapi_write_verb verb)
{
    *w = (kapi_write){
        .api = r->api,
        .arena = &r->arena,
        .user = &r->user,
        .type = r->type,
        .verb = verb,
        .ns = r->info.ns,
        .name = r->info.name,
        .subresource = r->info.subresource,
        .req = r,
    };
}

/* Lends w's stages the hooks' context. */
static void lend_hooks(kapi_write *w)
{
    w->hooks = (kapi_hook_ctx){
        .registry = w->api->registry,
        .arena = w->arena,
        .now = kapi_api__now(w->arena),
        .get = hook_get,
        .pipeline = w,
    };
}

kapi_error *kapi_api__write(kapi_write *w)
{
    static kapi_error *(*const stages[])(kapi_write * w) = {
        [KAPI_WRITE_CREATE] = kapi_api__create_stage,
        [KAPI_WRITE_UPDATE] = kapi_api__update_stage,
        [KAPI_WRITE_DELETE] = kapi_api__delete_stage,
    };
    lend_hooks(w);
    w->status = w->verb == KAPI_WRITE_CREATE ? 201 : 200;
    w->stored = NULL;
    w->stored_json = NULL;
    w->unstored = w->deleted = NULL;
    w->removed = false;
    if (!w->subresource)
        w->subresource = "";
    return stages[w->verb](w);
}

kapi_error *kapi_api__create_unstored(kapi_req *r, const kapi_subresource *sub, const char *manager,
                                      json_t *obj)
{
    kapi_write w;
    kapi_api__write_init(&w, r, KAPI_WRITE_CREATE);
    w.type = sub->kind;
    w.manager = manager;
    lend_hooks(&w);
    kapi_api__manage(&w, NULL, obj);
    /* Admission sees the object the path names, as kube's attributes name it. */
    json_t *named = json_pack("{s:{s:s%}}", "metadata", "name",
                              r->info.name.ptr ? r->info.name.ptr : "", r->info.name.len);
    kapi_error *err = kapi_type_admit(r->type, &w.hooks, KAPI_ADMIT_CREATE, r->info.ns, named);
    json_decref(named);
    return err;
}

/* True when bytes (with an empty resourceVersion at rv_off) are cur's but for its
 * resourceVersion: the update changes nothing, as GuaranteedUpdate finds it. */
static bool same_bytes(const kapi_obj *cur, const char *bytes, size_t len, size_t rv_off)
{
    size_t tail = cur->len - cur->rv_off - cur->rv_len;
    return cur->rv_off == rv_off && len - rv_off == tail && memcmp(cur->data, bytes, rv_off) == 0 &&
           memcmp(cur->data + cur->rv_off + cur->rv_len, bytes + rv_off, tail) == 0;
}

/* obj as the store keeps it (*stored, a new reference): what kube-apiserver's protobuf
 * storage reads back, in the storage view. */
static kapi_error *storage_view(const kapi_type *t, json_t *obj, json_t **stored)
{
    *stored = json_incref(obj);
    if (t->protobuf_storage)
        kapi_schema_protobuf_nulls(t->schema, *stored);
    kapi_error *err = kapi_type_to_storage(t, stored);
    if (err) {
        json_decref(*stored);
        *stored = NULL;
    }
    return err;
}

kapi_error *kapi_api__store_write(kapi_api *api, kapi_arena *a, const kapi_type *t, json_t *obj,
                                  kapi_store_op op, int64_t expect_rev, kapi_obj *cur,
                                  kapi_obj **out, json_t **json, json_t **dry)
{
    json_t *stored;
    kapi_error *err = storage_view(t, obj, &stored);
    if (err) {
        *out = NULL;
        return err;
    }
    if (dry) {
        json_t *meta = kapi_json_object_ensure(stored, "metadata");
        if (op == KAPI_STORE_CREATE)
            json_object_del(meta, "resourceVersion");
        else
            json_object_set_new_nocheck(meta, "resourceVersion", kapi_json_decimal(expect_rev));
        *dry = kapi_api__canonical_take(t, stored);
        *out = NULL;
        return NULL;
    }
    json_object_set_new_nocheck(kapi_json_object_ensure(stored, "metadata"), "resourceVersion",
                                json_string_nocheck(""));
    json_t *canon = kapi_api__canonical_take(t, stored);
    json_t *meta = json_object_get(canon, "metadata");
    kapi_str name = kapi_api__name_of(meta);
    const json_t *ns = json_object_get(meta, "namespace");
    size_t len, rv_off;
    char *bytes = kapi_api__encode_stored(canon, &len, &rv_off);
    if (op == KAPI_STORE_UPDATE && cur && same_bytes(cur, bytes, len, rv_off)) {
        *out = kapi_obj_ref(cur);
        goto done;
    }
    kapi_str key =
        kapi_type_key(a, t, (kapi_str){json_string_value(ns), json_string_length(ns)}, name);
    kapi_store_write w = {
        .op = op,
        .key = key,
        .expect_rev = expect_rev,
        .value = {bytes, len},
        .rv_off = rv_off,
    };
    kapi_store_rc rc = kapi_store_commit(api->store, &w);
    err = rc == KAPI_STORE_OK ? NULL : kapi_api__err_store(a, rc, t, name);
    if (w.current)
        kapi_obj_unref(w.current);
    *out = w.result;
    if (!err && json && w.result) {
        json_object_set_new_nocheck(meta, "resourceVersion", kapi_json_decimal(w.result->rev));
        *json = json_incref(canon);
    }
done:
    json_decref(canon);
    free(bytes);
    return err;
}
