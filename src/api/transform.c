/*
 * api/transform: an answer in the form negotiate.c picked, made from the JSON body the verb
 * wrote, as kube-apiserver's transformResponseObject does for every object it answers
 * with (get, list, create, update, patch, delete):
 *
 *   - Table (meta.k8s.io/v1 or v1beta1): the type's columns (registry/printers.c) and one
 *     row per object, the cells read from the object's storage view; the row's object is
 *     its PartialObjectMetadata (includeObject=Metadata, the default), the object itself
 *     (Object) or null (None). A list's resourceVersion, continue and remainingItemCount
 *     carry over; a single object's resourceVersion does.
 *   - PartialObjectMetadata(List): kind, apiVersion and the object's metadata only; asking
 *     for one of a list, or for a list of one object, is kube's 406.
 *   - a Status passes through unchanged;
 *   - then YAML (sigs.k8s.io/yaml's form, codec/yaml.h), protobuf (codec/protobuf.h,
 *     enveloped, for built-in types and metadata) or JSON. Table and metadata answers in
 *     JSON are application/json, as kube-apiserver labels them.
 *
 * A plain JSON answer never comes here: it is written from the stored bytes.
 */
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "codec/protobuf.h"
#include "codec/yaml.h"

static const char *const include_values[] = {"", "Metadata", "Object", "None"};

/* The body, from its chunks (released). It is kapi's own JSON, so it parses. */
static json_t *join_chunks(const kapi_http_chunk *c, size_t n)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++) {
        kapi_buf_put(&b, c[i].ptr, c[i].len);
        if (c[i].release)
            c[i].release(c[i].owner);
    }
    json_t *v = kapi_json_parse(b.ptr, b.len, NULL);
    kapi_buf_dispose(&b);
    return v;
}

kapi_error *kapi_api__include_object(kapi_req *r, const char **out)
{
    const char *v = kapi_api__query(r, "includeObject");
    *out = v ? v : "";
    for (size_t i = 0; i < KAPI_ARRAY_LEN(include_values); i++)
        if (strcmp(*out, include_values[i]) == 0)
            return NULL;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_quote(&b, *out, strlen(*out));
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                     "Unable to convert to Table as requested: includeObject: "
                                     "Invalid value: %s: must be 'Metadata', 'Object', 'None', "
                                     "or empty",
                                     b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

static const char *meta_version(const kapi_media *m)
{
    return m->v1beta1 ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1";
}

/* A new object with kind and apiVersion, then the members of body (items of a list have
 * neither). */
static json_t *typed(const char *kind, const char *api_version, const json_t *body)
{
    json_t *o = json_pack("{s:s,s:s}", "kind", kind, "apiVersion", api_version);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (strcmp(key, "kind") != 0 && strcmp(key, "apiVersion") != 0)
            json_object_set_nocheck(o, key, v);
    }
    return o;
}

static json_t *partial(const kapi_media *m, const json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    return json_pack("{s:s,s:s,s:o}", "kind", "PartialObjectMetadata", "apiVersion",
                     meta_version(m), "metadata", meta ? json_incref(meta) : json_object());
}

/* The ListMeta of the answer: a list's own, or a single object's resourceVersion. */
static json_t *list_meta(const json_t *body, bool list)
{
    static const char *const keys[] = {"resourceVersion", "continue", "remainingItemCount"};
    json_t *from = json_object_get(body, "metadata"), *meta = json_object();
    for (size_t i = 0; i < (list ? KAPI_ARRAY_LEN(keys) : 1); i++) {
        json_t *v = json_object_get(from, keys[i]);
        if (v && !(json_is_string(v) && !*json_string_value(v)))
            json_object_set_nocheck(meta, keys[i], v);
    }
    return meta;
}

static json_t *column_definitions(const kapi_type *t)
{
    json_t *cols = json_array();
    for (size_t i = 0; i < t->ncolumns; i++) {
        const kapi_column *c = &t->columns[i];
        json_array_append_new(cols, json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", c->name, "type",
                                              c->type, "format", c->format, "description",
                                              c->description, "priority", c->priority));
    }
    return cols;
}

/* One row: the cells of obj (served view, kind and apiVersion set), and the object
 * includeObject asks for. A built-in type's printers read its storage view; a custom
 * resource's columns are its served version's, read from that version's object. */
static json_t *table_row(const kapi_type *t, const kapi_media *m, json_t *obj, const char *include,
                         int64_t now)
{
    json_t *stored = json_incref(obj);
    if (!t->custom) /* a built-in conversion, which cannot fail */
        kapi_error_free(kapi_type_to_storage(t, &stored));
    json_t *row = json_pack("{s:o}", "cells", kapi_type_table_cells(t, stored, now));
    json_decref(stored);
    if (strcmp(include, "None") == 0)
        json_object_set_new_nocheck(row, "object", json_null());
    else if (strcmp(include, "Object") == 0)
        json_object_set_nocheck(row, "object", obj);
    else
        json_object_set_new_nocheck(row, "object", partial(m, obj));
    return row;
}

static json_t *to_table(kapi_req *r, const json_t *body, bool list, const char *include)
{
    const kapi_type *t = r->type;
    int64_t now = kapi_time_now_ns();
    json_t *rows = json_array();
    if (!list) {
        json_array_append_new(rows, table_row(t, &r->media, (json_t *)body, include, now));
    } else {
        const json_t *items = json_object_get(body, "items");
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *obj = typed(t->kind, t->group_version, json_array_get(items, i));
            json_array_append_new(rows, table_row(t, &r->media, obj, include, now));
            json_decref(obj);
        }
    }
    if (t->default_table && !json_array_size(rows)) { /* kube's default table: no rows, null */
        json_decref(rows);
        rows = json_null();
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Table", "apiVersion",
                     meta_version(&r->media), "metadata", list_meta(body, list),
                     "columnDefinitions", column_definitions(t), "rows", rows);
}

static json_t *to_partial_list(kapi_req *r, const json_t *body)
{
    const json_t *items = json_object_get(body, "items");
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(items); i++)
        json_array_append_new(out, partial(&r->media, json_array_get(items, i)));
    if (!json_array_size(out)) { /* an empty Go slice that was never appended to */
        json_decref(out);
        out = json_null();
    }
    return json_pack("{s:s,s:s,s:o,s:o}", "kind", "PartialObjectMetadataList", "apiVersion",
                     meta_version(&r->media), "metadata", list_meta(body, true), "items", out);
}

/* doTransformObject: body in the negotiated target, or kube's error. */
static kapi_error *transform(kapi_req *r, json_t *body, json_t **out)
{
    const char *include = "", *kind = kapi_json_path_str(body, "kind");
    const char *go_type = r->type->go_type;
    bool list = json_is_array(json_object_get(body, "items"));
    kapi_error *err;
    if (r->media.target == KAPI_TARGET_TABLE &&
        (err = kapi_api__include_object(r, &include)) != NULL)
        return err;
    if (r->media.target == KAPI_TARGET_OBJECT || (kind && strcmp(kind, "Status") == 0)) {
        *out = json_incref(body);
        return NULL;
    }
    if (r->media.target == KAPI_TARGET_POM && list)
        return kapi_error_new(KAPI_STATUS_NOT_ACCEPTABLE,
                              "you requested PartialObjectMetadata, but the requested object is "
                              "a list (*%sList)",
                              go_type);
    if (r->media.target == KAPI_TARGET_POM_LIST && !list)
        return kapi_error_new(KAPI_STATUS_NOT_ACCEPTABLE,
                              "you requested PartialObjectMetadataList, but the requested "
                              "object is not a list (*%s)",
                              go_type);
    if (r->media.target == KAPI_TARGET_TABLE)
        *out = to_table(r, body, list, include);
    else if (r->media.target == KAPI_TARGET_POM)
        *out = partial(&r->media, body);
    else
        *out = to_partial_list(r, body);
    return NULL;
}

/* out (with kind and apiVersion) as protobuf into b, enveloped; false when kapi has no
 * message for its kind or it does not fit one (b then holds nothing new). */
static bool encode_protobuf(const kapi_registry *reg, const json_t *out, kapi_buf *b)
{
    const char *av = kapi_json_path_str(out, "apiVersion"), *kind = kapi_json_path_str(out, "kind");
    const kapi_pb_message *m = av && kind ? kapi_registry_pb_message(reg, av, kind) : NULL;
    kapi_buf body;
    char *err = NULL;
    if (!m)
        return false;
    kapi_buf_init(&body);
    bool ok = kapi_pb_from_json(m, out, &body, &err);
    if (ok)
        kapi_pb_envelope_write(b, av, kind, body.ptr, body.len);
    free(err);
    kapi_buf_dispose(&body);
    return ok;
}

json_t *kapi_api__watch_object(const kapi_type *t, const kapi_media *m, const char *include,
                               json_t *obj, bool columns)
{
    if (m->target == KAPI_TARGET_POM)
        return partial(m, obj);
    if (m->target != KAPI_TARGET_TABLE)
        return json_incref(obj);
    json_t *meta = json_object(),
           *rv = json_object_get(json_object_get(obj, "metadata"), "resourceVersion");
    if (json_is_string(rv) && json_string_length(rv))
        json_object_set_nocheck(meta, "resourceVersion", rv);
    return json_pack("{s:s,s:s,s:o,s:o,s:[o]}", "kind", "Table", "apiVersion", meta_version(m),
                     "metadata", meta, "columnDefinitions",
                     columns ? column_definitions(t) : json_null(), "rows",
                     table_row(t, m, obj, include, kapi_time_now_ns()));
}

const kapi_obj_form *kapi_api__protobuf_form(const kapi_registry *reg, kapi_obj *o)
{
    const kapi_obj_form *f = kapi_obj_form_get(o);
    if (f)
        return f;
    json_t *v = kapi_json_parse(o->data, o->len, NULL);
    kapi_buf b;
    kapi_buf_init(&b);
    bool ok = v && encode_protobuf(reg, v, &b);
    json_decref(v);
    if (ok) {
        kapi_obj_form *made = kapi_xmalloc(sizeof(*made) + b.len);
        made->len = b.len;
        memcpy(made->data, b.ptr, b.len);
        f = kapi_obj_form_put(o, made);
    }
    kapi_buf_dispose(&b);
    return f;
}

bool kapi_api__protobuf_of(const kapi_registry *reg, const json_t *v, kapi_buf *b)
{
    return encode_protobuf(reg, v, b);
}

bool kapi_api__to_protobuf(const kapi_registry *reg, kapi_buf *b)
{
    json_t *v = kapi_json_parse(b->ptr, b->len, NULL);
    kapi_buf pb;
    kapi_buf_init(&pb);
    bool ok = v && encode_protobuf(reg, v, &pb);
    json_decref(v);
    if (ok) {
        kapi_buf_dispose(b);
        *b = pb;
    } else {
        kapi_buf_dispose(&pb);
    }
    return ok;
}

/* The media type of an answer in r's negotiated form. */
static const char *media_type(const kapi_req *r)
{
    switch (r->media.format) {
    case KAPI_FORMAT_YAML:
        return KAPI_YAML_MEDIA_TYPE;
    case KAPI_FORMAT_PROTOBUF:
        return KAPI_PROTOBUF_MEDIA_TYPE;
    default:
        return "application/json";
    }
}

void kapi_api__respond_transformed(kapi_req *r, int status, const kapi_http_chunk *c, size_t n)
{
    json_t *body = join_chunks(c, n), *out = NULL;
    kapi_error *err = transform(r, body, &out);
    json_decref(body);
    if (err) {
        kapi_api__respond_error(r, err);
        return;
    }
    kapi_buf b;
    kapi_buf_init(&b);
    const char *type = media_type(r);
    if (r->media.format == KAPI_FORMAT_YAML) {
        kapi_yaml_encode(&b, out);
    } else if (r->media.format != KAPI_FORMAT_PROTOBUF ||
               !encode_protobuf(r->api->registry, out, &b)) {
        /* JSON, or a kind with no protobuf form (a Status of another group's kind) */
        kapi_json_encode(&b, out);
        kapi_buf_putc(&b, '\n');
        type = "application/json";
    }
    json_decref(out);
    size_t len;
    char *p = kapi_buf_detach(&b, &len);
    kapi_http_chunk chunk = kapi_http_chunk_take(p, len);
    kapi_api__send(r, status, type, &chunk, 1);
}

/* ---- lists, item by item ----
 *
 * A list answer is made from a skeleton, the answer transform() makes from the list with
 * no items, and the items one by one, so that a list of any length is written in
 * bounded memory (list.c streams the parts). The bytes are those of the whole answer. */

struct kapi_list_form {
    kapi_req *r;
    json_t *skeleton; /* the answer with its array (items or rows) empty or null */
    const char *key;  /* the array's member */
    const char *include;
    int64_t now;
    /* Protobuf: the list's message, its items' and the items written so far (the
     * envelope's length comes first, so the answer is made whole at the end). */
    const kapi_pb_message *pb_list, *pb_item;
    kapi_buf pb_items;
};

/* The message of field num of m, or NULL. */
static const kapi_pb_message *field_message(const kapi_pb_message *m, uint32_t num)
{
    for (size_t i = 0; m && i < m->nfields; i++)
        if (m->fields[i].number == num)
            return m->fields[i].message;
    return NULL;
}

kapi_error *kapi_api__list_form_new(kapi_req *r, json_t *list, kapi_list_form **out)
{
    kapi_list_form *f = kapi_xcalloc(1, sizeof(*f));
    kapi_error *err = transform(r, list, &f->skeleton);
    json_decref(list);
    *out = NULL;
    if (!err && r->media.target == KAPI_TARGET_TABLE)
        err = kapi_api__include_object(r, &f->include);
    if (err) {
        json_decref(f->skeleton);
        free(f);
        return err;
    }
    f->r = r;
    f->key = r->media.target == KAPI_TARGET_TABLE ? "rows" : "items";
    f->now = kapi_time_now_ns();
    kapi_buf_init(&f->pb_items);
    if (r->media.format == KAPI_FORMAT_PROTOBUF) {
        const char *av = kapi_json_path_str(f->skeleton, "apiVersion");
        const char *kind = kapi_json_path_str(f->skeleton, "kind");
        f->pb_list = av && kind ? kapi_registry_pb_message(r->api->registry, av, kind) : NULL;
        f->pb_item = field_message(f->pb_list, 2);
    }
    *out = f;
    return NULL;
}

bool kapi_api__list_form_buffered(const kapi_list_form *f)
{
    return f->pb_item != NULL;
}

void kapi_api__list_form_free(kapi_list_form *f)
{
    if (!f)
        return;
    json_decref(f->skeleton);
    kapi_buf_dispose(&f->pb_items);
    free(f);
}

const char *kapi_api__list_form_type(const kapi_list_form *f)
{
    return f->pb_item ? KAPI_PROTOBUF_MEDIA_TYPE : media_type(f->r);
}

/* The answer as one document (a list without items). */
static void encode_answer(kapi_req *r, const json_t *v, kapi_buf *b)
{
    if (r->media.format == KAPI_FORMAT_YAML) {
        kapi_yaml_encode(b, v);
    } else {
        kapi_json_encode(b, v);
        kapi_buf_putc(b, '\n');
    }
}

void kapi_api__list_form_whole(kapi_list_form *f, kapi_buf *b)
{
    if (!f->pb_item) {
        encode_answer(f->r, f->skeleton, b);
        return;
    }
    /* The skeleton writes the list's metadata (field 1), the items follow (field 2). */
    kapi_buf body;
    char *err = NULL;
    kapi_buf_init(&body);
    kapi_pb_from_json(f->pb_list, f->skeleton, &body, &err);
    free(err);
    kapi_buf_put(&body, f->pb_items.ptr, f->pb_items.len);
    kapi_pb_envelope_write(b, kapi_json_path_str(f->skeleton, "apiVersion"),
                           kapi_json_path_str(f->skeleton, "kind"), body.ptr, body.len);
    kapi_buf_dispose(&body);
}

/* JSON: the members of the skeleton in order, the array opened in head, closed in tail. */
static void json_split(const kapi_list_form *f, kapi_buf *head, kapi_buf *tail)
{
    const char *key;
    json_t *v;
    kapi_buf *b = head;
    bool first = true;
    kapi_buf_putc(b, '{');
    json_object_foreach(f->skeleton, key, v)
    {
        if (!first)
            kapi_buf_putc(b, ',');
        first = false;
        kapi_json_put_string(b, key, strlen(key));
        kapi_buf_putc(b, ':');
        if (strcmp(key, f->key) == 0) {
            kapi_buf_putc(b, '[');
            b = tail;
            kapi_buf_putc(b, ']');
        } else {
            kapi_json_encode(b, v);
        }
    }
    kapi_buf_puts(b, "}\n");
}

/* YAML: the document with an empty array has the line "<key>: []" at the top level (a
 * line at column 0 is a top-level key: nested lines and block scalars are indented); the
 * items go where it is. */
static void yaml_split(const kapi_list_form *f, kapi_buf *head, kapi_buf *tail)
{
    json_t *doc = json_copy(f->skeleton);
    kapi_buf y, line;
    kapi_buf_init(&y);
    kapi_buf_init(&line);
    json_object_set_new_nocheck(doc, f->key, json_array());
    kapi_yaml_encode(&y, doc);
    kapi_buf_printf(&line, "%s: []\n", f->key);
    const char *at = y.ptr;
    while (strncmp(at, line.ptr, line.len) != 0)
        at = strchr(at, '\n') + 1;
    kapi_buf_put(head, y.ptr, (size_t)(at - y.ptr));
    kapi_buf_printf(head, "%s:\n", f->key);
    kapi_buf_puts(tail, at + line.len);
    kapi_buf_dispose(&line);
    kapi_buf_dispose(&y);
    json_decref(doc);
}

void kapi_api__list_form_split(kapi_list_form *f, kapi_buf *head, kapi_buf *tail)
{
    if (f->r->media.format == KAPI_FORMAT_YAML)
        yaml_split(f, head, tail);
    else
        json_split(f, head, tail);
}

/* The element of the answer's array for item, as transform() makes it. */
static json_t *element(kapi_list_form *f, const json_t *item)
{
    kapi_req *r = f->r;
    if (r->media.target == KAPI_TARGET_POM_LIST)
        return partial(&r->media, item);
    if (r->media.target != KAPI_TARGET_TABLE)
        return json_incref((json_t *)item);
    json_t *obj = typed(r->type->kind, r->type->group_version, item);
    json_t *row = table_row(r->type, &r->media, obj, f->include, f->now);
    json_decref(obj);
    return row;
}

void kapi_api__list_form_item(kapi_list_form *f, const json_t *item, bool first, kapi_buf *b)
{
    json_t *e = element(f, item);
    if (f->pb_item) {
        char *err = NULL;
        kapi_pb_put_message(&f->pb_items, 2, f->pb_item, e, &err);
        free(err);
        json_decref(e);
        return;
    }
    if (f->r->media.format == KAPI_FORMAT_YAML) {
        /* "<key>:\n- ..." is the element as the whole document writes it */
        json_t *wrap = json_pack("{s:[o]}", f->key, e);
        size_t at = b->len;
        kapi_yaml_encode(b, wrap);
        size_t skip = strlen(f->key) + 2;
        memmove(b->ptr + at, b->ptr + at + skip, b->len - at - skip + 1);
        b->len -= skip;
        json_decref(wrap);
        return;
    }
    if (!first)
        kapi_buf_putc(b, ',');
    kapi_json_encode(b, e);
    json_decref(e);
}
