/*
 * registry/prepare: what a write may change, before it is validated, as kube-apiserver's
 * strategies PrepareForCreate and PrepareForUpdate decide it.
 *
 * The status rules are the type model's, the same for every type that has a "status"
 * subresource (built-in or custom): a write to the main resource cannot set status (a
 * create drops it, an update keeps the stored one; a type file's "createKeepsStatus" lets
 * a create set it, as kube's Node strategy does), and a write to /status changes only
 * status and metadata (the stored spec, and every other member, is kept). What a type
 * does beyond that is its strategy's hooks: the status it starts with (prepare_create),
 * what else an update keeps (prepare_update), the metadata a status write keeps too and
 * the rules of its other subresources (prepare_subresource).
 */
#include <string.h>

#include "codec/json.h"
#include "registry/registry_int.h"

static bool has_status(const kapi_type *t)
{
    return kapi_type_subresource(t, KAPI_STR("status")) != NULL;
}

kapi_error *kapi_type_to_storage(const kapi_type *t, json_t **obj)
{
    return t->strategy->to_storage ? t->strategy->to_storage(t, obj, 1) : NULL;
}

kapi_error *kapi_type_from_storage(const kapi_type *t, json_t **objs, size_t n)
{
    return t->strategy->from_storage ? t->strategy->from_storage(t, objs, n) : NULL;
}

kapi_error *kapi_type_encode_from_storage(const kapi_type *t, kapi_buf *b, json_t *stored)
{
    kapi_error *err = NULL;
    if (t->strategy->encode_from_storage)
        t->strategy->encode_from_storage(t, b, stored);
    else if ((err = kapi_type_from_storage(t, &stored, 1)) == NULL)
        kapi_json_encode(b, stored);
    json_decref(stored);
    return err;
}

bool kapi_type_serves_stored(const kapi_type *t, const char *data, size_t len)
{
    static const char head[] = "{\"apiVersion\":\"";
    size_t h = sizeof(head) - 1, n = strlen(t->group_version);
    if (!t->strategy->from_storage)
        return true;
    return t->custom && len > h + n && memcmp(data, head, h) == 0 &&
           memcmp(data + h, t->group_version, n) == 0 && data[h + n] == '"';
}

bool kapi_type_converts_remotely(const kapi_type *t)
{
    return t->custom && t->custom->webhook;
}

void kapi_type_prepare_create(const kapi_type *t, json_t *obj)
{
    if (has_status(t) && !t->create_keeps_status)
        json_object_del(obj, "status");
    if (t->strategy->prepare_create)
        t->strategy->prepare_create(t, obj);
}

void kapi_type_prepare_update(const kapi_type *t, json_t *obj, const json_t *old)
{
    if (has_status(t)) {
        json_t *st = json_object_get(old, "status");
        json_object_del(obj, "status");
        if (st)
            json_object_set_nocheck(obj, "status", st);
    }
    if (t->strategy->prepare_update)
        t->strategy->prepare_update(t, obj, old);
}

/* A status write: obj becomes old with obj's metadata and status (the members in old's
 * order; a status old did not have goes last, a status obj does not have is dropped). */
static void keep_all_but_status(json_t *obj, const json_t *old)
{
    json_t *out = json_object();
    json_t *status = json_object_get(obj, "status");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)old, key, v)
    {
        if (strcmp(key, "metadata") == 0)
            v = json_object_get(obj, "metadata");
        else if (strcmp(key, "status") == 0)
            v = status;
        if (v)
            json_object_set_nocheck(out, key, v);
    }
    if (status && !json_object_get(old, "status"))
        json_object_set_nocheck(out, "status", status);
    json_object_clear(obj);
    json_object_update(obj, out);
    json_decref(out);
}

void kapi_type_prepare_subresource(const kapi_type *t, const char *sub, json_t *obj,
                                   const json_t *old)
{
    if (strcmp(sub, "status") == 0)
        keep_all_but_status(obj, old);
    if (t->strategy->prepare_subresource)
        t->strategy->prepare_subresource(t, sub, obj, old);
}
