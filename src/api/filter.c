/*
 * api/filter: the labelSelector and fieldSelector of a list or watch, applied to stored
 * objects.
 *
 * Field labels are converted once, when the filter is made, to where the stored object
 * keeps them (the type's fieldLabels). metadata.name and metadata.namespace are read from
 * the object's key; an object is parsed only when a selector needs more than that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "select/select.h"

struct kapi_filter {
    kapi_label_selector *labels; /* NULL: no label requirement */
    kapi_field_selector *fields; /* NULL: no field requirement; fields are stored paths */
    bool needs_parse;
};

void kapi_api__filter_free(kapi_filter *f)
{
    if (!f)
        return;
    kapi_label_selector_free(f->labels);
    kapi_field_selector_free(f->fields);
    free(f);
}

static bool from_key(const char *path)
{
    return strcmp(path, "metadata.name") == 0 || strcmp(path, "metadata.namespace") == 0;
}

/* Adds metadata.name=name to the field selector (the item form of a watch). */
static void add_name(kapi_filter *f, const char *name)
{
    if (!f->fields)
        f->fields = kapi_xcalloc(1, sizeof(*f->fields));
    kapi_field_selector *fs = f->fields;
    fs->reqs = kapi_xrealloc(fs->reqs, (fs->n + 1) * sizeof(*fs->reqs));
    fs->reqs[fs->n++] = (kapi_field_req){kapi_xstrdup("metadata.name"), KAPI_FIELD_EQ,
                                         kapi_xstrdup(name)};
}

kapi_error *kapi_api__filter_new(kapi_req *r, const char *name, kapi_filter **out)
{
    kapi_error *err;
    kapi_filter *f = kapi_xcalloc(1, sizeof(*f));
    *out = NULL;
    if ((err = kapi_label_selector_parse(&f->labels, kapi_api__query(r, "labelSelector"))) ||
        (err = kapi_field_selector_parse(&f->fields, kapi_api__query(r, "fieldSelector"))))
        goto fail;
    if (f->labels && kapi_label_selector_empty(f->labels)) {
        kapi_label_selector_free(f->labels);
        f->labels = NULL;
    }
    if (f->fields && f->fields->n == 0) {
        kapi_field_selector_free(f->fields);
        f->fields = NULL;
    }
    if (f->fields && (err = kapi_type_field_selector(r->type, f->fields)) != NULL)
        goto fail;
    for (size_t i = 0; f->fields && i < f->fields->n; i++)
        f->needs_parse |= !from_key(f->fields->reqs[i].field);
    if (name)
        add_name(f, name);
    f->needs_parse |= f->labels != NULL;
    if (!f->labels && !f->fields) {
        kapi_api__filter_free(f);
        return NULL;
    }
    *out = f;
    return NULL;
fail:
    kapi_api__filter_free(f);
    return err;
}

/* What a field requirement reads: the key's parts, or the parsed object. */
typedef struct field_src {
    const kapi_obj *o;
    const json_t *obj;
    char ns[256], name[256];
    char scratch[KAPI_FIELD_VALUE_SCRATCH];
} field_src;

/* The namespace and name of a key "/<group>/<resource>[/<namespace>]/<name>". */
static void split_key(field_src *s)
{
    const char *k = s->o->key;
    const char *p = strchr(k + 1, '/');  /* after the group */
    p = p ? strchr(p + 1, '/') : NULL;   /* after the resource */
    const char *last = strrchr(k, '/');
    s->ns[0] = s->name[0] = '\0';
    if (!p || !last)
        return;
    snprintf(s->name, sizeof(s->name), "%s", last + 1);
    if (last > p)
        snprintf(s->ns, sizeof(s->ns), "%.*s", (int)(last - p - 1), p + 1);
}

static const char *field_value(void *ctx, const char *path)
{
    field_src *s = ctx;
    if (strcmp(path, "metadata.name") == 0)
        return s->name;
    if (strcmp(path, "metadata.namespace") == 0)
        return s->ns;
    return kapi_field_selector_value(s->obj, path, s->scratch);
}

bool kapi_api__filter_match(const kapi_filter *f, const kapi_obj *o)
{
    if (!f)
        return true;
    field_src s = {.o = o};
    json_t *obj = NULL;
    split_key(&s);
    if (f->needs_parse)
        s.obj = obj = kapi_json_parse(o->data, o->len, NULL);
    bool ok = (!f->labels ||
               kapi_label_selector_matches(f->labels, kapi_json_path(obj, "metadata.labels"))) &&
              (!f->fields || kapi_field_selector_matches(f->fields, field_value, &s));
    json_decref(obj);
    return ok;
}
