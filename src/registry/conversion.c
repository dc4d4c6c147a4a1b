/*
 * registry/conversion: a CustomResourceDefinition's conversion webhook (spec.conversion
 * strategy Webhook), called as apiextensions-apiserver's webhookConverter calls it in
 * Kubernetes 1.26:
 *
 *   - the objects not already in the version wanted go in one ConversionReview, of the
 *     first of the CRD's conversionReviewVersions kapi speaks (v1, v1beta1), POSTed with
 *     a 30 s deadline through the registry's webhook client (webhook/webhook.h);
 *   - the answer is checked as kube checks it (its kind and uid for v1, result Success,
 *     as many objects as sent, each of the version wanted and of the same kind, name,
 *     namespace and uid), and each converted object gets the original's metadata back
 *     with only its labels and annotations taken from the webhook (validated);
 *   - any failure is kube's 500: a Status without reason whose message names the
 *     webhook's object, "conversion webhook for example.com/v1, Kind=Widget failed: ...".
 *
 * kube converts a list item by item, one review each; kapi sends a list's items in one
 * review (what the ConversionReview's object list is for), and words a failure as kube
 * words a single object's.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"
#include "codec/yaml.h"
#include "registry/registry_int.h"
#include "schema/field.h"

/* kube's conversion webhooks are called with client-go's default deadline */
#define CONVERSION_TIMEOUT_S 30

static const char review_kind[] = "ConversionReview";
static const char review_group[] = "apiextensions.k8s.io";

/* Go's %v of the GroupVersionKind of obj ("example.com/v1, Kind=Widget"). */
static void put_gvk(kapi_buf *b, const json_t *obj)
{
    const char *av = kapi_json_path_str(obj, "apiVersion") ?: "";
    const char *kind = kapi_json_path_str(obj, "kind") ?: "";
    if (!strchr(av, '/'))
        kapi_buf_putc(b, '/');
    kapi_buf_printf(b, "%s, Kind=%s", av, kind);
}

/* The 500 of a conversion of subject that failed: "conversion webhook for <gvk> " and
 * the rest, as formatted. */
static kapi_error *failed(const json_t *subject, const char *fmt, ...) KAPI_PRINTF(2, 3);
static kapi_error *failed(const json_t *subject, const char *fmt, ...)
{
    kapi_buf b;
    va_list ap;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "conversion webhook for ");
    put_gvk(&b, subject);
    kapi_buf_putc(&b, ' ');
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    kapi_error *err = kapi_error_new(KAPI_STATUS_UNKNOWN, "%s", b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

/* client-go's error for an answer that is not 2xx (rest.Result's transformResponse). */
static void non_2xx(kapi_buf *why, const kapi_webhook_answer *a)
{
    json_t *doc = kapi_json_parse(a->body.ptr, a->body.len, NULL);
    const char *msg = kapi_json_path_str(doc, "message");
    if (json_is_object(doc) && strcmp(kapi_json_path_str(doc, "kind") ?: "", "Status") == 0 &&
        msg && *msg) {
        kapi_buf_puts(why, msg);
        json_decref(doc);
        return;
    }
    json_decref(doc);
    /* the body itself when it is text (its first 2 KiB, trimmed), else "unknown" */
    size_t n = a->body.len > 2048 ? 2048 : a->body.len;
    const char *p = a->body.ptr;
    while (a->text && n && strchr(" \t\r\n", *p))
        p++, n--;
    while (a->text && n && strchr(" \t\r\n", p[n - 1]))
        n--;
    kapi_buf server;
    kapi_buf_init(&server);
    if (a->text && n)
        kapi_buf_put(&server, p, n);
    else
        kapi_buf_puts(&server, "unknown");
    switch (a->status) {
    case 400:
        kapi_buf_puts(why, "the server rejected our request for an unknown reason");
        break;
    case 401:
        kapi_buf_puts(why, "the server has asked for the client to provide credentials");
        break;
    case 403:
    case 415:
        kapi_buf_puts(why, server.ptr);
        break;
    case 404:
        kapi_buf_puts(why, "the server could not find the requested resource");
        break;
    case 405:
        kapi_buf_puts(why, "the server does not allow this method on the requested resource");
        break;
    case 409:
        kapi_buf_puts(why, "the server reported a conflict");
        break;
    case 422:
        kapi_buf_puts(why, "the server rejected our request due to an error in our request");
        break;
    case 429:
        kapi_buf_puts(why, "the server has received too many requests and has asked us to try "
                           "again later");
        break;
    case 503:
        kapi_buf_puts(why, "the server is currently unable to handle the request");
        break;
    case 504:
        kapi_buf_puts(why, "the server was unable to return a response in the time allotted, "
                           "but may still be processing the request");
        break;
    default:
        if (a->status >= 500) {
            kapi_buf_puts(why, "an error on the server (");
            kapi_go_quote(why, server.ptr, server.len);
            kapi_buf_puts(why, ") has prevented the request from succeeding");
        } else {
            kapi_buf_printf(why,
                            "the server responded with the status code %ld but did not return "
                            "more information",
                            a->status);
        }
        break;
    }
    kapi_buf_dispose(&server);
}

/* The ConversionReview in a 2xx answer (a new reference), or NULL with client-go's
 * decoding error in why. */
static json_t *decode_review(const kapi_webhook_answer *a, kapi_buf *why)
{
    json_t *doc = NULL;
    kapi_error *err = kapi_yaml_parse(a->body.ptr, a->body.len, &doc, NULL);
    if (err) {
        kapi_buf_printf(why, "couldn't get version/kind; json parse error: %s", err->message);
        kapi_error_free(err);
        return NULL;
    }
    if (!json_is_object(doc) && !json_is_null(doc)) {
        kapi_buf_printf(why,
                        "couldn't get version/kind; json parse error: json: cannot unmarshal %s "
                        "into Go value of type struct { APIVersion string "
                        "\"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                        "\"json:\\\"kind,omitempty\\\"\" }",
                        kapi_go_json_kind(doc));
        json_decref(doc);
        return NULL;
    }
    const char *kind = kapi_json_path_str(doc, "kind");
    if (!kind || !*kind) {
        kapi_buf_printf(why, "Object 'Kind' is missing in '%.*s'", (int)a->body.len, a->body.ptr);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* getConvertedObjectsFromResponse: true with the converted objects of a review answer in
 * *objs (borrowed from doc; NULL when it has none), or false with why. */
static bool converted_objects(const json_t *doc, const char *version, const char *uid,
                              kapi_buf *why, const json_t **objs)
{
    const json_t *resp = json_object_get(doc, "response");
    if (strcmp(version, "v1") == 0) {
        const char *av = kapi_json_path_str(doc, "apiVersion") ?: "";
        const char *kind = kapi_json_path_str(doc, "kind") ?: "";
        if (strcmp(av, "apiextensions.k8s.io/v1") != 0 || strcmp(kind, review_kind) != 0) {
            kapi_buf_printf(why,
                            "expected webhook response of apiextensions.k8s.io/v1, "
                            "Kind=ConversionReview, got %s%s, Kind=%s",
                            strchr(av, '/') ? "" : "/", av, kind);
            return false;
        }
    }
    if (!json_is_object(resp)) {
        kapi_buf_puts(why, "no response provided");
        return false;
    }
    const char *got = kapi_json_path_str(resp, "uid") ?: "";
    if (strcmp(version, "v1") == 0 && strcmp(got, uid) != 0) {
        kapi_buf_printf(why, "expected response.uid=\"%s\", got ", uid);
        kapi_go_quote(why, got, strlen(got));
        return false;
    }
    const char *status = kapi_json_path_str(resp, "result.status") ?: "";
    if (strcmp(status, "Success") != 0) {
        const char *msg = kapi_json_path_str(resp, "result.message");
        if (msg && *msg)
            kapi_buf_puts(why, msg);
        else
            kapi_buf_printf(why, "response.result.status was '%s', not 'Success'", status);
        return false;
    }
    *objs = json_object_get(resp, "convertedObjects");
    return true;
}

/* validateConvertedObject's first difference between in and out, or NULL. */
static bool same_identity(const json_t *in, const json_t *out, kapi_buf *why)
{
    static const struct {
        const char *path, *what;
    } fields[] = {{"kind", "kind"},
                  {"metadata.name", "name"},
                  {"metadata.namespace", "namespace"},
                  {"metadata.uid", "UID"}};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(fields); i++) {
        const char *a = kapi_json_path_str(in, fields[i].path) ?: "";
        const char *b = kapi_json_path_str(out, fields[i].path) ?: "";
        if (strcmp(a, b) != 0) {
            kapi_buf_printf(why, "must have the same %s: %s != %s", fields[i].what, a, b);
            return false;
        }
    }
    return true;
}

/* restoreObjectMeta: out's metadata becomes a copy of in's, with out's labels and
 * annotations (strings, validated when they changed); false with why. */
static bool restore_meta(const json_t *in, json_t *out, kapi_buf *why)
{
    json_t *theirs = json_object_get(out, "metadata");
    if (!theirs) {
        kapi_buf_puts(why, "missing metadata in converted object");
        return false;
    }
    if (!json_is_object(theirs)) {
        kapi_buf_printf(why, "invalid metadata of type %s in converted object",
                        kapi_go_type_name(theirs));
        return false;
    }
    const json_t *mine = json_object_get(in, "metadata");
    json_t *meta = json_is_object(mine) ? kapi_json_copy(mine) : json_object();
    json_incref(theirs);
    json_object_set_new_nocheck(out, "metadata", meta);
    bool ok = true;
    static const char *const fields[] = {"labels", "annotations"};
    for (size_t f = 0; f < 2 && ok; f++) {
        const json_t *got = json_object_get(theirs, fields[f]);
        const json_t *had = json_object_get(meta, fields[f]);
        if (!got || json_is_null(got)) {
            json_object_del(meta, fields[f]);
            continue;
        }
        if (!json_is_object(got)) {
            kapi_buf_printf(why, "invalid metadata.%s of type %s in converted object", fields[f],
                            kapi_go_type_name(got));
            ok = false;
            break;
        }
        bool changed = json_object_size(had) != json_object_size(got);
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)got, k, v)
        {
            if (!json_is_string(v)) {
                kapi_buf_printf(why,
                                "metadata.%s[%s] must be a string, but is %s in converted "
                                "object",
                                fields[f], k, kapi_go_type_name(v));
                ok = false;
                break;
            }
            if (!json_equal(v, json_object_get(had, k)))
                changed = true;
        }
        if (ok && changed) {
            kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
            if (f == 0)
                kapi_meta_validate_labels(err, got, "metadata.labels");
            else /* kube names the annotations' path so */
                kapi_meta_validate_annotations(err, got, "metadata.annotation");
            if (err->ncauses) {
                kapi_field_aggregate(why, err);
                ok = false;
            }
            kapi_error_free(err);
        }
        if (ok)
            json_object_set_nocheck(meta, fields[f], (json_t *)got);
    }
    json_decref(theirs);
    return ok;
}

/* The converted object of the answer for in (a new reference), checked, or NULL with the
 * error. */
static json_t *take_converted(const json_t *in, const json_t *raw, const char *gv, kapi_error **err)
{
    kapi_buf why;
    kapi_buf_init(&why);
    json_t *out = NULL;
    const char *kind = kapi_json_path_str(raw, "kind");
    if (!json_is_object(raw)) {
        kapi_buf_printf(&why,
                        "json: cannot unmarshal %s into Go value of type "
                        "map[string]interface {}",
                        kapi_go_json_kind(raw));
        *err = kapi_error_new(KAPI_STATUS_UNKNOWN, "%s", why.ptr);
    } else if (!kind || !*kind) {
        kapi_buf_puts(&why, "Object 'Kind' is missing in '");
        kapi_json_encode(&why, raw);
        kapi_buf_putc(&why, '\'');
        *err = kapi_error_new(KAPI_STATUS_UNKNOWN, "%s", why.ptr);
    } else if (strcmp(kapi_json_path_str(raw, "apiVersion") ?: "", gv) != 0) {
        *err = failed(in,
                      "returned invalid object at index 0: invalid groupVersion (expected %s, "
                      "received %s)",
                      gv, kapi_json_path_str(raw, "apiVersion") ?: "");
    } else if (strcmp(kind, kapi_json_path_str(in, "kind") ?: "") != 0) {
        *err = failed(in,
                      "returned invalid object at index 0: invalid kind (expected %s, "
                      "received %s)",
                      kapi_json_path_str(in, "kind") ?: "", kind);
    } else if (!same_identity(in, raw, &why)) {
        *err = failed(in, "returned invalid object: %s", why.ptr);
    } else {
        out = kapi_json_copy(raw);
        if (!restore_meta(in, out, &why)) {
            *err = failed(in, "returned invalid metadata: %s", why.ptr);
            json_decref(out);
            out = NULL;
        }
    }
    kapi_buf_dispose(&why);
    return out;
}

/* obj as a review carries it: as stored, without resourceVersion (kube converts an
 * object as it decodes it from storage, before it is stamped). */
static void put_sent(kapi_buf *b, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    if (!json_object_get(meta, "resourceVersion")) {
        kapi_json_encode(b, obj);
        return;
    }
    json_t *o = json_copy((json_t *)obj), *m = json_copy((json_t *)meta);
    json_object_del(m, "resourceVersion");
    json_object_set_new_nocheck(o, "metadata", m);
    kapi_json_encode(b, o);
    json_decref(o);
}

/* The first of the CRD's conversionReviewVersions kapi speaks, or NULL. */
static const char *review_version(const json_t *webhook)
{
    static const char *const spoken[] = {"v1", "v1beta1", NULL};
    const json_t *versions = json_object_get(webhook, "conversionReviewVersions");
    for (size_t i = 0; i < json_array_size(versions); i++) {
        const char *v = json_string_value(json_array_get(versions, i));
        if (v && kapi_cstr_in(v, spoken))
            return v;
    }
    return NULL;
}

kapi_error *kapi_registry__conversion_answer(const kapi_conversion_call *call,
                                             const kapi_webhook_answer *a, json_t **objs,
                                             bool *converted)
{
    const json_t *first = objs[call->sent[0]];
    kapi_buf why;
    kapi_buf_init(&why);
    kapi_error *err = NULL;
    json_t *doc = NULL;
    const json_t *got = NULL;
    bool answered = false;
    if (a->status < 200 || a->status > 299)
        non_2xx(&why, a);
    else if ((doc = decode_review(a, &why)) != NULL)
        answered = converted_objects(doc, call->version, call->uid, &why, &got);
    if (!answered) {
        err = failed(first, "failed: %s", why.ptr);
    } else if (json_array_size(got) != call->nsent) {
        err =
            failed(first, "returned %zu objects, expected %zu", json_array_size(got), call->nsent);
    } else {
        /* all checked before any is taken: a failed call leaves every object as it was */
        json_t **outs = kapi_xcalloc(call->nsent, sizeof(*outs));
        for (size_t k = 0; k < call->nsent && !err; k++)
            outs[k] = take_converted(objs[call->sent[k]], json_array_get(got, k), call->gv, &err);
        for (size_t k = 0; k < call->nsent; k++) {
            if (err) {
                json_decref(outs[k]);
                continue;
            }
            json_decref(objs[call->sent[k]]);
            objs[call->sent[k]] = outs[k];
            converted[call->sent[k]] = true;
        }
        free(outs);
    }
    json_decref(doc);
    kapi_buf_dispose(&why);
    return err;
}

kapi_error *kapi_registry__webhook_convert(const kapi_type *t, const char *gv, json_t **objs,
                                           size_t n, bool *converted)
{
    const kapi_custom *c = t->custom;
    kapi_conversion_call call = {.gv = gv, .sent = kapi_xcalloc(n ? n : 1, sizeof(size_t))};
    for (size_t i = 0; i < n; i++) {
        converted[i] = false;
        if (strcmp(kapi_json_path_str(objs[i], "apiVersion") ?: "", gv) != 0)
            call.sent[call.nsent++] = i;
    }
    kapi_error *err = NULL;
    if (call.nsent == 0)
        goto done;
    if (!(call.version = review_version(c->webhook))) {
        err = kapi_error_new(KAPI_STATUS_UNKNOWN, "no supported conversion review versions");
        goto done;
    }
    kapi_uuid_v4(call.uid);
    kapi_buf body, why;
    kapi_buf_init(&body);
    kapi_buf_init(&why);
    kapi_buf_printf(&body,
                    "{\"kind\":\"%s\",\"apiVersion\":\"%s/%s\",\"request\":{\"uid\":\"%s\","
                    "\"desiredAPIVersion\":",
                    review_kind, review_group, call.version, call.uid);
    kapi_json_put_string(&body, gv, strlen(gv));
    kapi_buf_puts(&body, ",\"objects\":[");
    for (size_t k = 0; k < call.nsent; k++) {
        if (k)
            kapi_buf_putc(&body, ',');
        put_sent(&body, objs[call.sent[k]]);
    }
    kapi_buf_puts(&body, "]},\"response\":{\"uid\":\"\",\"convertedObjects\":null,"
                         "\"result\":{\"metadata\":{}}}}");
    kapi_webhook_answer a = {0};
    kapi_buf_init(&a.body);
    if (kapi_webhook_post(c->webhooks, json_object_get(c->webhook, "clientConfig"),
                          CONVERSION_TIMEOUT_S, body.ptr, body.len, &a, &why))
        err = kapi_registry__conversion_answer(&call, &a, objs, converted);
    else
        err = failed(objs[call.sent[0]], "failed: %s", why.ptr);
    kapi_buf_dispose(&a.body);
    kapi_buf_dispose(&body);
    kapi_buf_dispose(&why);
done:
    free(call.sent);
    return err;
}
