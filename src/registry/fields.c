/*
 * registry/fields: what field ownership (src/smd) needs of each type: its merge type,
 * the fields its strategies reset on a write of each subresource (kube's GetResetFields:
 * owned by nobody), and its zero value, the object a create is compared with.
 *
 * Built-in types read their reset fields from the type file's "resetFields" (a
 * subresource name, "" for the main resource, to dotted paths) and take their merge type
 * from their definition; a custom type resets status on its main resource and spec on
 * its status, as apiextensions' strategies do, and takes its merge type from its CRD
 * version's schema with ObjectMeta as metadata.
 */
#include <string.h>

#include "registry/registry_int.h"

/* Go's zero value of the struct s as encoding/json writes it: the members x-kapi-emit
 * says Go always writes, structs among them filled the same way. */
static json_t *zero_of(const kapi_schema *s)
{
    json_t *obj = json_object();
    for (size_t i = 0; i < s->nprops; i++) {
        const kapi_schema_prop *p = &s->props[i];
        if (!p->emit)
            continue;
        json_t *v = kapi_json_copy(p->emit);
        if (json_is_object(v) && json_object_size(v) == 0 && p->schema->nprops) {
            json_decref(v);
            v = zero_of(p->schema);
        }
        json_object_set_new_nocheck(obj, p->name, v);
    }
    return obj;
}

/* The set of the dotted paths in names (a JSON array of strings). */
static kapi_smd_set *paths_set(kapi_arena *a, const json_t *names)
{
    kapi_smd_set *s = kapi_smd_set_new(a);
    size_t i;
    json_t *name;
    json_array_foreach(names, i, name)
    {
        const char *p = json_string_value(name);
        kapi_smd_pe pe[8];
        size_t n = 0;
        while (p && *p && n < KAPI_ARRAY_LEN(pe)) {
            size_t len = strcspn(p, ".");
            pe[n++] = (kapi_smd_pe){.kind = KAPI_SMD_PE_FIELD,
                                    .name = {kapi_arena_strndup(a, p, len), len}};
            p += len + (p[len] == '.');
        }
        if (n)
            kapi_smd_set_insert(a, s, (kapi_smd_path){pe, n});
    }
    return s;
}

/* The reset fields of a custom type, as its strategies have them. */
static json_t *custom_reset(const kapi_type *t)
{
    json_t *r = json_object();
    if (kapi_type_subresource(t, KAPI_STR("status"))) {
        json_object_set_new_nocheck(r, "", json_pack("[s]", "status"));
        json_object_set_new_nocheck(r, "status", json_pack("[s]", "spec"));
    }
    return r;
}

void kapi_registry__type_fields(kapi_type *t, kapi_smd_types *ts, const kapi_smd_type *object_meta,
                                kapi_arena *a)
{
    json_t *reset =
        t->custom ? custom_reset(t) : json_incref(json_object_get(t->def, "resetFields"));
    t->reset = paths_set(a, json_object_get(reset, ""));
    for (size_t i = 0; i < t->nsubresources; i++) {
        kapi_subresource *sub = (kapi_subresource *)&t->subresources[i];
        sub->reset = paths_set(a, json_object_get(reset, sub->name));
    }
    json_decref(reset);
    if (t->custom) {
        static const kapi_schema any = {0};
        t->smd = kapi_smd_type_custom(ts, t->schema ? t->schema : &any, object_meta);
        t->zero = json_pack("{s:s,s:s}", "apiVersion", t->group_version, "kind", t->kind);
    } else {
        t->smd = kapi_smd_type_of(ts, t->schema);
        t->zero = zero_of(t->schema);
    }
}
