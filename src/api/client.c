/*
 * api/client: the api as a client (api.h): kapi's own readers and writers (the
 * controllers, the namespaces made at start) use these as a client uses the REST API.
 * A write is decoded as a body is (Go types, defaults, members in order) and then made
 * by kapi_api__write, the function a request's write goes through, as the caller's user.
 * Each call has its own arena; what it answers is a JSON reference of the caller's.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

static const char *const loopback_groups[] = {"system:masters", "system:authenticated", NULL};
const kapi_user kapi_api_loopback_user = {"system:apiserver", "", loopback_groups};

/* An object of t as the client reads it (served view) from its stored bytes. */
static kapi_error *served(const kapi_type *t, const kapi_obj *o, json_t **out)
{
    *out = kapi_api__parse_stored(o);
    return kapi_type_from_storage(t, out, 1);
}

kapi_error *kapi_api_get(kapi_api *api, const kapi_type *t, kapi_str ns, kapi_str name,
                         json_t **out)
{
    kapi_arena a;
    kapi_obj *o = NULL;
    kapi_error *err = NULL;
    kapi_arena_init(&a);
    *out = NULL;
    if (kapi_store_get(api->store, kapi_type_key(&a, t, ns, name), &o) == KAPI_STORE_OK) {
        err = served(t, o, out);
        kapi_obj_unref(o);
        if (err) {
            json_decref(*out);
            *out = NULL;
        }
    } else {
        err = kapi_api__err_not_found(&a, t, name);
    }
    kapi_arena_dispose(&a);
    return err;
}

kapi_error *kapi_api_list_stored(kapi_api *api, const kapi_type *t, kapi_str ns,
                                 void (*fn)(void *ctx, const kapi_obj *o), void *ctx, int64_t *rev)
{
    kapi_arena a;
    kapi_store_list_result l;
    kapi_arena_init(&a);
    kapi_store_list_opts q = {.prefix = kapi_type_key(&a, t, ns, KAPI_STR(""))};
    kapi_store_rc rc = kapi_store_list(api->store, &q, &l);
    kapi_arena_dispose(&a);
    if (rc != KAPI_STORE_OK)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "storage error while listing %s",
                              t->plural);
    for (size_t i = 0; i < l.n; i++)
        fn(ctx, l.items[i]);
    if (rev)
        *rev = l.rev;
    kapi_store_list_dispose(&l);
    return NULL;
}

/* A list's objects parsed, in order. */
typedef struct parsed {
    json_t **items;
    size_t n, cap;
} parsed;

static void parse_item(void *ctx, const kapi_obj *o)
{
    parsed *p = ctx;
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->items = kapi_xrealloc(p->items, p->cap * sizeof(*p->items));
    }
    p->items[p->n++] = kapi_api__parse_stored(o);
}

kapi_error *kapi_api_list(kapi_api *api, const kapi_type *t, kapi_str ns, json_t **out,
                          int64_t *rev)
{
    parsed p = {0};
    *out = NULL;
    kapi_error *err = kapi_api_list_stored(api, t, ns, parse_item, &p, rev);
    /* converted in one call: a conversion webhook gets the list in one review */
    if (!err && !(err = kapi_type_from_storage(t, p.items, p.n)))
        *out = json_array();
    for (size_t i = 0; i < p.n; i++)
        if (*out)
            json_array_append_new(*out, p.items[i]);
        else
            json_decref(p.items[i]);
    free(p.items);
    return err;
}

kapi_error *kapi_api_list_names(kapi_api *api, const kapi_type *t, kapi_str ns, kapi_str after,
                                size_t limit, kapi_arena *a, kapi_str **names, size_t *n)
{
    kapi_store_list_result l;
    kapi_store_list_opts q = {
        .prefix = kapi_type_key(a, t, ns, KAPI_STR("")),
        .start_after = after.len ? kapi_type_key(a, t, ns, after) : KAPI_STR(""),
        .limit = limit,
    };
    *names = NULL;
    *n = 0;
    if (kapi_store_list(api->store, &q, &l) != KAPI_STORE_OK)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "storage error while listing %s",
                              t->plural);
    *names = kapi_arena_alloc(a, (l.n ? l.n : 1) * sizeof(**names));
    for (size_t i = 0; i < l.n; i++) {
        kapi_str key_ns, name;
        if (kapi_type_key_parse(t, kapi_obj_key(l.items[i]), &key_ns, &name))
            (*names)[(*n)++] = (kapi_str){kapi_arena_strndup(a, name.ptr, name.len), name.len};
    }
    kapi_store_list_dispose(&l);
    return NULL;
}

/* The decode stage of a client's object (taken, or freed on error). */
static kapi_error *decode(kapi_arena *a, const kapi_type *t, json_t *obj)
{
    kapi_schema_walk w = {.arena = a, .go_types = true, .defaults = true, .reorder = true};
    kapi_error *err = kapi_api__check_kind(t, obj);
    if (!err && t->strategy->decode)
        err = t->strategy->decode(t, obj, &w);
    else if (!err && t->schema)
        err = kapi_schema_decode(t->schema, obj, &w);
    if (err)
        json_decref(obj);
    return err;
}

/* The field manager a kapi user's writes are recorded under: the component it stands
 * for, as that component's User-Agent would name it (kube-apiserver's loopback client,
 * kube-controller-manager). */
static const char *manager_of(const kapi_user *u)
{
    if (strcmp(u->name, kapi_api_loopback_user.name) == 0)
        return "kube-apiserver";
    if (strcmp(u->name, "system:kube-controller-manager") == 0)
        return "kube-controller-manager";
    return u->name;
}

/* Runs w (its obj decoded first, when it has one) and gives the caller what came of it:
 * the stored object, or the one not stored, or the deleted one (served view). */
static kapi_error *run(kapi_write *w, json_t **out)
{
    w->manager = manager_of(w->user);
    kapi_error *err = w->obj ? decode(w->arena, w->type, w->obj) : NULL;
    json_t *obj = NULL;
    if (!err)
        err = kapi_api__write(w);
    else
        w->obj = NULL;
    if (!err && w->stored_json) {
        obj = json_incref(w->stored_json);
        err = kapi_type_from_storage(w->type, &obj, 1);
    } else if (!err && w->stored) {
        err = served(w->type, w->stored, &obj);
    } else if (!err && w->unstored) {
        obj = json_incref(w->unstored);
        err = kapi_type_from_storage(w->type, &obj, 1);
    } else if (!err && w->deleted) {
        obj = json_incref(w->deleted);
    }
    if (err) {
        json_decref(obj);
        obj = NULL;
    }
    if (w->stored)
        kapi_obj_unref(w->stored);
    json_decref(w->stored_json);
    json_decref(w->unstored);
    json_decref(w->deleted);
    if (out)
        *out = obj;
    else
        json_decref(obj);
    return err;
}

kapi_error *kapi_api_create(kapi_api *api, const kapi_user *user, const kapi_type *t, kapi_str ns,
                            json_t *obj, json_t **out)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_write w = {.api = api,
                    .arena = &a,
                    .user = user,
                    .type = t,
                    .verb = KAPI_WRITE_CREATE,
                    .ns = ns,
                    .obj = obj};
    kapi_error *err = run(&w, out);
    kapi_arena_dispose(&a);
    return err;
}

kapi_error *kapi_api_update(kapi_api *api, const kapi_user *user, const kapi_type *t,
                            const char *sub, json_t *obj, json_t **out)
{
    kapi_arena a;
    kapi_arena_init(&a);
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *ns = json_object_get(meta, "namespace");
    kapi_write w = {.api = api,
                    .arena = &a,
                    .user = user,
                    .type = t,
                    .verb = KAPI_WRITE_UPDATE,
                    .ns = t->namespaced ? (kapi_str){json_string_value(ns), json_string_length(ns)}
                                        : KAPI_STR(""),
                    .name = kapi_api__name_of(meta),
                    .subresource = sub,
                    .obj = obj};
    /* The name and namespace are the object's: copied, as decoding rebuilds metadata. */
    w.name =
        (kapi_str){kapi_arena_strndup(&a, w.name.ptr ? w.name.ptr : "", w.name.len), w.name.len};
    w.ns = (kapi_str){kapi_arena_strndup(&a, w.ns.ptr ? w.ns.ptr : "", w.ns.len), w.ns.len};
    kapi_error *err = run(&w, out);
    kapi_arena_dispose(&a);
    return err;
}

kapi_error *kapi_api_delete(kapi_api *api, const kapi_user *user, const kapi_type *t, kapi_str ns,
                            kapi_str name, const kapi_delete_opts *d, json_t **out, bool *removed)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_write w = {.api = api,
                    .arena = &a,
                    .user = user,
                    .type = t,
                    .verb = KAPI_WRITE_DELETE,
                    .ns = ns,
                    .name = name,
                    .del = d};
    kapi_error *err = run(&w, out);
    if (removed)
        *removed = !err && w.removed;
    kapi_arena_dispose(&a);
    return err;
}

kapi_store_rc kapi_api_watch_start(kapi_api *api, const kapi_type *t, kapi_str ns, int64_t from,
                                   kapi_store_watch_fn fn, void *ctx, kapi_store_watch **out)
{
    kapi_arena a;
    int64_t oldest;
    kapi_arena_init(&a);
    kapi_store_rc rc = kapi_store_watch_start(api->store, kapi_type_key(&a, t, ns, KAPI_STR("")),
                                              from, fn, ctx, out, &oldest);
    kapi_arena_dispose(&a);
    return rc;
}

void kapi_api_watch_stop(kapi_api *api, kapi_store_watch *w)
{
    kapi_store_watch_stop(api->store, w);
}
