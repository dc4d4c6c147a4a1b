/*
 * api/decode: the options of a write and the decoding of its body, the way
 * kube-apiserver's decoder and field validation (reference 4.7) treat them.
 *
 * The body becomes an object of the request's type: kind and apiVersion checked, then
 * the schema walk drops the fields the type does not have, fails on a value of the
 * wrong type with Go's words, fills in Go's zero values and the defaults, and puts
 * members in Kubernetes' order. Unknown and duplicate fields are answered as the
 * fieldValidation parameter says: warnings (the default), nothing, or a 400.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "codec/yaml.h"
#include "schema/field.h"

/* Adds an unsupported option to err (made on the first); kapi_field_finish_invalid
 * words the 422 of them all: "<Kind>.meta.k8s.io "" is invalid: ...". */
static kapi_error *options_error(kapi_error *err, const char *field, const char *msg)
{
    if (!err)
        err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
    kapi_error_add_cause(err, KAPI_FIELD_NOT_SUPPORTED, field, "%s", msg);
    return err;
}

/* The field manager's options (ValidatePatchOptions' first checks, then
 * ValidateFieldManager); o->manager defaults to the User-Agent's product. */
static kapi_error *manager_options(kapi_req *r, const char *options_kind, bool apply,
                                   kapi_write_opts *o)
{
    kapi_error *err = NULL;
    const char *fm = kapi_api__query(r, "fieldManager");
    o->has_field_manager = fm && *fm;
    o->manager = o->has_field_manager ? fm
                                      : kapi_api__manager_from_user_agent(
                                            &r->arena, kapi_http_header_get(r->http, "user-agent"));
    o->has_force = kapi_api__query(r, "force") != NULL;
    o->force = kapi_api__query_bool(r, "force");
    if (strcmp(options_kind, "PatchOptions") == 0 && !apply && o->has_force) {
        err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
        kapi_field_forbidden(err, "force", "may not be specified for non-apply patch");
    }
    if (apply && !o->has_field_manager) {
        if (!err)
            err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
        kapi_field_required(err, "fieldManager", "is required for apply patch");
    }
    if (fm)
        kapi_api__check_field_manager(&err, fm);
    return err;
}

kapi_error *kapi_api__write_options(kapi_req *r, const char *options_kind, bool apply,
                                    kapi_write_opts *o)
{
    static const struct {
        const char *name;
        kapi_field_validation fv;
    } fvs[] = {{"", KAPI_FV_WARN},
               {"Ignore", KAPI_FV_IGNORE},
               {"Strict", KAPI_FV_STRICT},
               {"Warn", KAPI_FV_WARN}};
    /* DeleteOptions has neither a field manager nor fieldValidation. */
    bool deleting = strcmp(options_kind, "DeleteOptions") == 0;
    kapi_error *err = deleting ? NULL : manager_options(r, options_kind, apply, o);
    const char *dry = kapi_api__query(r, "dryRun");
    o->dry_run = dry != NULL;
    if (dry && strcmp(dry, "All") != 0) {
        char *msg = kapi_arena_printf(&r->arena,
                                      "Unsupported value: []string{\"%s\"}: supported values: "
                                      "\"All\"",
                                      dry);
        err = options_error(err, "dryRun", msg);
    }
    const char *fv = deleting ? NULL : kapi_api__query(r, "fieldValidation");
    o->fv = KAPI_FV_WARN;
    if (fv) {
        size_t i = 0;
        while (i < KAPI_ARRAY_LEN(fvs) && strcmp(fv, fvs[i].name) != 0)
            i++;
        if (i < KAPI_ARRAY_LEN(fvs)) {
            o->fv = fvs[i].fv;
        } else {
            char *msg = kapi_arena_printf(&r->arena,
                                          "Unsupported value: \"%s\": supported values: \"\", "
                                          "\"Ignore\", \"Strict\", \"Warn\"",
                                          fv);
            err = options_error(err, "fieldValidation", msg);
        }
    }
    return err ? kapi_field_finish_invalid(err, options_kind, "meta.k8s.io", NULL) : NULL;
}

/* "<Kind> in version "<v>" cannot be handled as a <Kind>: <what>" */
static kapi_error *cannot_handle(const kapi_type *t, kapi_error *cause)
{
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                     "%s in version \"%s\" cannot be handled as a %s: %s", t->kind,
                                     t->version, t->kind, cause->message);
    kapi_error_free(cause);
    return err;
}

/* A repeated key inside an unknown field is reported once, as the unknown field. */
static bool inside_unknown(const kapi_dup *d, const kapi_schema_walk *w)
{
    for (size_t i = 0; d->path && i < w->nunknown; i++) {
        size_t n = strlen(w->unknown[i]);
        if (strncmp(d->path, w->unknown[i], n) == 0 &&
            (d->path[n] == '\0' || d->path[n] == '.' || d->path[n] == '['))
            return true;
    }
    return false;
}

/* One strict-decoding complaint, placed where it stands in the body. */
typedef struct complaint {
    size_t offset;
    const char *text;
} complaint;

static int by_offset(const void *a, const void *b)
{
    const complaint *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The repeated and unknown fields in the order Kubernetes reports them: a JSON body's in
 * document order (one decoder finds both), a YAML body's repeats first (they are found
 * while it is converted to JSON, before the object is decoded). */
static size_t complaints(kapi_req *r, const kapi_dups *kept, const kapi_schema_walk *w,
                         complaint *out)
{
    size_t n = 0;
    bool json_dups = kept->n && kept->v[0].path;
    size_t *offsets = kapi_arena_alloc(&r->arena, (w->nunknown + 1) * sizeof(*offsets));
    if (json_dups)
        kapi_json_key_offsets(r->http->body, r->http->body_len, w->unknown, w->nunknown, offsets);
    for (size_t i = 0; i < kept->n; i++)
        out[n++] = (complaint){json_dups ? kept->v[i].offset : 0, kept->v[i].message};
    for (size_t i = 0; i < w->nunknown; i++)
        out[n++] = (complaint){json_dups ? offsets[i] : (size_t)-1,
                               kapi_arena_printf(&r->arena, "unknown field \"%s\"", w->unknown[i])};
    if (json_dups)
        qsort(out, n, sizeof(*out), by_offset);
    return n;
}

/* Field validation's answer to the repeated and unknown fields: Warning headers (Warn),
 * nothing (Ignore), or for Strict true, with "strict decoding error: <each>" in *msg. */
static bool strict_errors(kapi_req *r, const kapi_write_opts *o, const kapi_dups *dups,
                          const kapi_schema_walk *w, kapi_buf *msg)
{
    if (o->fv == KAPI_FV_IGNORE || (!dups->n && !w->nunknown))
        return false;
    kapi_dups kept;
    kapi_dups_init(&kept);
    kept.v = kapi_xcalloc(dups->n + 1, sizeof(*kept.v));
    for (size_t i = 0; i < dups->n; i++)
        if (!inside_unknown(&dups->v[i], w))
            kept.v[kept.n++] = dups->v[i];
    complaint *c = kapi_arena_alloc(&r->arena, (kept.n + w->nunknown + 1) * sizeof(*c));
    size_t n = complaints(r, &kept, w, c);
    bool strict = o->fv == KAPI_FV_STRICT && n > 0;
    if (o->fv == KAPI_FV_WARN) {
        for (size_t i = 0; i < n; i++)
            kapi_api__warn(r, "%s", c[i].text);
    } else if (strict) {
        bool yaml = kept.n && !kept.v[0].path;
        kapi_buf_puts(msg, "strict decoding error: ");
        if (yaml)
            kapi_yaml_strict_message(msg, &kept);
        for (size_t i = yaml ? kept.n : 0; i < n; i++)
            kapi_buf_printf(msg, "%s%s", i ? ", " : "", c[i].text);
    }
    free(kept.v);
    return strict;
}

/* The 400 of a body of t that Strict field validation refuses. */
static kapi_error *report_fields(kapi_req *r, const kapi_type *t, const kapi_write_opts *o,
                                 const kapi_dups *dups, const kapi_schema_walk *w)
{
    kapi_buf msg;
    kapi_buf_init(&msg);
    kapi_error *err = NULL;
    if (strict_errors(r, o, dups, w, &msg))
        err = cannot_handle(t, kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", msg.ptr));
    kapi_buf_dispose(&msg);
    return err;
}

/* The decode walk of t: the strategy's when it has one, else the schema's. */
static kapi_error *decode_walk(const kapi_type *t, json_t *obj, kapi_schema_walk *w)
{
    if (t->strategy->decode)
        return t->strategy->decode(t, obj, w);
    return t->schema ? kapi_schema_decode(t->schema, obj, w) : NULL;
}

/* A custom resource's body is read as unstructured: it must name its kind and
 * apiVersion, and one naming another version of the type is read as that version (its
 * unknown fields reported) before it is refused. */
static kapi_error *custom_type_meta(kapi_req *r, const kapi_write_opts *o, json_t *obj,
                                    const kapi_dups *dups, kapi_schema_walk *w)
{
    const kapi_type *t = r->type;
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *missing = !kind || !*kind ? "Kind" : !av || !*av ? "apiVersion" : NULL;
    if (missing) {
        char *what = kapi_arena_printf(&r->arena, "Object '%s' is missing in '%.*s'", missing,
                                       (int)r->http->body_len, r->http->body);
        return kapi_api__unrecognized(t->kind, what, r->http->body, r->http->body_len);
    }
    const char *slash = strchr(av, '/');
    size_t glen = strlen(t->group);
    if (strcmp(av, t->group_version) == 0 || !slash || (size_t)(slash - av) != glen ||
        strncmp(av, t->group, glen) != 0)
        return NULL;
    kapi_custom_prune_as(t, slash + 1, obj, w);
    return report_fields(r, t, o, dups, w);
}

kapi_error *kapi_api__decode_object(kapi_req *r, const kapi_write_opts *o, json_t **out)
{
    return kapi_api__decode_as(r, r->type, o, out);
}

kapi_error *kapi_api__decode_as(kapi_req *r, const kapi_type *t, const kapi_write_opts *o,
                                json_t **out)
{
    json_t *obj = NULL;
    kapi_dups dups;
    kapi_dups_init(&dups);
    kapi_schema_walk w = {.arena = &r->arena, .go_types = true, .defaults = true, .reorder = true};
    kapi_error *err;
    *out = NULL;
    if ((err = kapi_api__decode_body(r, t->kind, &obj, &dups)) != NULL ||
        (t->custom && (err = custom_type_meta(r, o, obj, &dups, &w)) != NULL) ||
        (err = kapi_api__check_kind(t, obj)) != NULL)
        goto fail;
    if ((err = decode_walk(t, obj, &w)) != NULL) {
        err = cannot_handle(t, err);
        goto fail;
    }
    if ((err = report_fields(r, t, o, &dups, &w)) != NULL)
        goto fail;
    kapi_dups_dispose(&dups);
    kapi_api__audit_object(r, obj);
    *out = obj;
    return NULL;
fail:
    kapi_dups_dispose(&dups);
    json_decref(obj);
    return err;
}

/* kube-apiserver's 422 for a patch result it cannot decode: ` "" is invalid: patch:
 * Invalid value: "<shown>": <why>`, shown being Go's %v of a strategic merge patch
 * (smp), else the patched object as JSON. */
static kapi_error *patch_invalid(const json_t *doc, const json_t *smp, const char *why)
{
    kapi_buf b;
    kapi_buf_init(&b);
    if (smp)
        kapi_go_put_fmt(&b, smp, 'v');
    else
        kapi_json_encode(&b, doc);
    kapi_error *inv = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
    kapi_field_invalid_str(inv, "patch", b.ptr, "%s", why);
    kapi_buf_dispose(&b);
    return kapi_field_finish_invalid(inv, "", "", "");
}

/* patch_invalid with the patched object made again. */
static kapi_error *remade_invalid(kapi_api_remake remake, void *ctx, const json_t *smp,
                                  const char *why)
{
    json_t *doc = smp ? NULL : remake(ctx);
    kapi_error *err = patch_invalid(doc ? doc : json_null(), smp, why);
    json_decref(doc);
    return err;
}

kapi_error *kapi_api__decode_patched(kapi_req *r, const kapi_write_opts *o, json_t *doc,
                                     const json_t *smp, kapi_api_remake remake, void *ctx,
                                     json_t **out)
{
    const kapi_type *t = r->type;
    kapi_dups none;
    kapi_dups_init(&none);
    kapi_schema_walk w = {.arena = &r->arena, .go_types = true, .defaults = true, .reorder = true};
    kapi_buf msg;
    kapi_buf_init(&msg);
    kapi_error *err = kapi_api__check_kind(t, doc);
    *out = NULL;
    if (!err && (err = decode_walk(t, doc, &w)) != NULL) {
        kapi_error *why = err;
        err = remade_invalid(remake, ctx, smp, why->message);
        kapi_error_free(why);
    }
    if (!err && strict_errors(r, o, &none, &w, &msg))
        err = remade_invalid(remake, ctx, smp, msg.ptr);
    kapi_buf_dispose(&msg);
    kapi_dups_dispose(&none);
    if (err) {
        json_decref(doc);
        return err;
    }
    *out = doc;
    return NULL;
}
