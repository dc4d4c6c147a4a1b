/*
 * api/filter: the labelSelector and fieldSelector of a list or watch, applied to stored
 * objects.
 *
 * Field labels are converted once, when the filter is made, to where the stored object
 * keeps them (the type's fieldLabels). metadata.name and metadata.namespace are read from
 * the object's key; an object is parsed only when a selector needs more than that.
 * metadata.name is compared by length with the whole name the key holds, so a name with a
 * NUL in it is never taken for the name before its NUL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "select/select.h"

/* A metadata.name requirement: the name (len bytes) equal or not. */
typedef struct name_req {
    char *value;
    size_t len;
    bool eq;
} name_req;

struct kapi_filter {
    const kapi_type *type; /* the type whose keys it reads (the request's reference) */
    kapi_labelsel *labels; /* NULL: no label requirement */
    kapi_fieldsel *fields; /* NULL: no other field requirement; stored paths */
    name_req *names;       /* the metadata.name requirements */
    size_t nnames;
    bool needs_parse;
};

void kapi_api__filter_free(kapi_filter *f)
{
    if (!f)
        return;
    kapi_labelsel_free(f->labels);
    kapi_fieldsel_free(f->fields);
    for (size_t i = 0; i < f->nnames; i++)
        free(f->names[i].value);
    free(f->names);
    free(f);
}

static void add_name(kapi_filter *f, kapi_str name, bool eq)
{
    f->names = kapi_xrealloc(f->names, (f->nnames + 1) * sizeof(*f->names));
    char *v = kapi_xmalloc(name.len + 1);
    if (name.len)
        memcpy(v, name.ptr, name.len);
    f->names[f->nnames++] = (name_req){v, name.len, eq};
}

/* Moves the metadata.name terms of the field selector to f->names. */
static void take_names(kapi_filter *f)
{
    kapi_fieldsel *fs = f->fields;
    size_t kept = 0;
    for (size_t i = 0; i < fs->n; i++) {
        kapi_field_req *q = &fs->reqs[i];
        if (strcmp(q->field, "metadata.name") != 0) {
            fs->reqs[kept++] = *q;
            continue;
        }
        add_name(f, kapi_str_c(q->value), q->op == KAPI_FIELD_EQ);
        free(q->field);
        free(q->value);
    }
    fs->n = kept;
}

kapi_error *kapi_api__filter_new(kapi_req *r, kapi_str name, kapi_filter **out)
{
    kapi_error *err;
    kapi_filter *f = kapi_xcalloc(1, sizeof(*f));
    *out = NULL;
    f->type = r->type;
    if ((err = kapi_labelsel_parse(&f->labels, kapi_api__query(r, "labelSelector"))) ||
        (err = kapi_fieldsel_parse(&f->fields, kapi_api__query(r, "fieldSelector"))))
        goto fail;
    if (f->labels && kapi_labelsel_empty(f->labels)) {
        kapi_labelsel_free(f->labels);
        f->labels = NULL;
    }
    if (f->fields && (err = kapi_type_field_selector(r->type, f->fields)) != NULL)
        goto fail;
    if (f->fields)
        take_names(f);
    if (f->fields && f->fields->n == 0) {
        kapi_fieldsel_free(f->fields);
        f->fields = NULL;
    }
    for (size_t i = 0; f->fields && i < f->fields->n; i++)
        f->needs_parse |= strcmp(f->fields->reqs[i].field, "metadata.namespace") != 0;
    if (name.len) /* the item form of a watch */
        add_name(f, name, true);
    f->needs_parse |= f->labels != NULL;
    if (!f->labels && !f->fields && !f->nnames) {
        kapi_api__filter_free(f);
        return NULL;
    }
    *out = f;
    return NULL;
fail:
    kapi_api__filter_free(f);
    return err;
}

/* What a field requirement reads: the key's namespace, or the parsed object. */
typedef struct field_src {
    const kapi_obj *o;
    const json_t *obj;
    char ns[256];
    char scratch[KAPI_FIELD_VALUE_SCRATCH];
} field_src;

/* The namespace in the object's key (a namespace is a DNS label: no NUL, at most 63
 * bytes). */
static void split_key(const kapi_filter *f, field_src *s)
{
    kapi_str ns;
    kapi_type_key_parse(f->type, kapi_obj_key(s->o), &ns, NULL);
    snprintf(s->ns, sizeof(s->ns), "%.*s", KAPI_STR_FMT(ns));
}

static const char *field_value(void *ctx, const char *path)
{
    field_src *s = ctx;
    if (strcmp(path, "metadata.namespace") == 0)
        return s->ns;
    return kapi_fieldsel_value(s->obj, path, s->scratch);
}

static bool names_match(const kapi_filter *f, const kapi_obj *o)
{
    kapi_str name;
    kapi_type_key_parse(f->type, kapi_obj_key(o), NULL, &name);
    for (size_t i = 0; i < f->nnames; i++)
        if (kapi_str_eq(name, (kapi_str){f->names[i].value, f->names[i].len}) != f->names[i].eq)
            return false;
    return true;
}

bool kapi_api__filter_match(const kapi_filter *f, const kapi_obj *o)
{
    if (!f)
        return true;
    if (!names_match(f, o))
        return false;
    field_src s = {.o = o};
    json_t *obj = NULL;
    split_key(f, &s);
    if (f->needs_parse)
        s.obj = obj = kapi_json_parse(o->data, o->len, NULL);
    bool ok =
        (!f->labels || kapi_labelsel_matches(f->labels, kapi_json_path(obj, "metadata.labels"))) &&
        (!f->fields || kapi_fieldsel_matches(f->fields, field_value, &s));
    json_decref(obj);
    return ok;
}
