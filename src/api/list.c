/*
 * api/list: the options of a list or watch (ListOptions) and the list verb, with the
 * resourceVersion rules of reference 4.6 and the pagination of 4.4.
 *
 * A page is read at one revision: the first page at the latest (or the one asked for),
 * every later page at the revision its continue token carries, from the store's history.
 * With selectors, keys are read in batches and filtered until the page is full; a page
 * has a continue token when keys remain after the last one looked at, as etcd pages do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "schema/field.h"

/* How long a read waits for a revision the store has not reached (kube-apiserver's
 * watch cache waits 3 s), and the Retry-After of the 504 that follows. */
#define TOO_NEW_WAIT_MS 3000
#define TOO_NEW_RETRY_AFTER 1

static const char expired_list[] = "The resourceVersion for the provided list is too old.";
static const char inconsistent_continue[] =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.";

/* ---- options ---- */

/* ValidateListOptions as Kubernetes 1.32 has it, with the WatchList feature on: a list's
 * resourceVersionMatch and its companions; a watch takes resourceVersionMatch only as
 * NotOlderThan, and only with sendInitialEvents (a streaming list), which a list refuses. */
static kapi_error *validate_list_options(const kapi_list_opts *o)
{
    static const char *const matches[] = {"Exact", "NotOlderThan", "", NULL};
    static const char *const watch_matches[] = {"NotOlderThan", NULL};
    static const char path[] = "resourceVersionMatch";
    const char *m = o->rv_match;
    bool cont = o->cont && *o->cont;
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "%s", "");
    if (o->watch) {
        if (o->send_initial >= 0 && strcmp(m, "NotOlderThan") != 0)
            kapi_field_forbidden(err, path,
                                 "sendInitialEvents requires setting resourceVersionMatch to "
                                 "NotOlderThan");
        if (*m && o->send_initial < 0)
            kapi_field_forbidden(err, path,
                                 "resourceVersionMatch is forbidden for watch unless "
                                 "sendInitialEvents is provided");
        if (*m && strcmp(m, "NotOlderThan") != 0)
            kapi_field_not_supported(err, path, m, watch_matches);
        if (*m && cont)
            kapi_field_forbidden(err, path,
                                 "resourceVersionMatch is forbidden when continue is provided");
    } else {
        if (*m && (!o->rv || !*o->rv))
            kapi_field_forbidden(err, path,
                                 "resourceVersionMatch is forbidden unless resourceVersion is "
                                 "provided");
        if (*m && cont)
            kapi_field_forbidden(err, path,
                                 "resourceVersionMatch is forbidden when continue is provided");
        if (*m && strcmp(m, "Exact") != 0 && strcmp(m, "NotOlderThan") != 0)
            kapi_field_not_supported(err, path, m, matches);
        if (strcmp(m, "Exact") == 0 && o->rv && strcmp(o->rv, "0") == 0)
            kapi_field_forbidden(err, path,
                                 "resourceVersionMatch \"exact\" is forbidden for resourceVersion "
                                 "\"0\"");
        if (o->send_initial >= 0)
            kapi_field_forbidden(err, "sendInitialEvents",
                                 "sendInitialEvents is forbidden for list");
    }
    if (!err->ncauses) {
        kapi_error_free(err);
        return NULL;
    }
    return kapi_field_finish_invalid(err, "ListOptions", "meta.k8s.io", "");
}

kapi_error *kapi_api__list_options(kapi_req *r, kapi_list_opts *o)
{
    kapi_error *err;
    memset(o, 0, sizeof(*o));
    o->watch = strcmp(r->info.verb, "watch") == 0;
    o->bookmarks = kapi_api__query_bool(r, "allowWatchBookmarks");
    o->rv = kapi_api__query(r, "resourceVersion");
    o->rv_match = kapi_api__query(r, "resourceVersionMatch");
    if (!o->rv_match)
        o->rv_match = "";
    o->cont = kapi_api__query(r, "continue");
    o->send_initial =
        kapi_api__query(r, "sendInitialEvents") ? kapi_api__query_bool(r, "sendInitialEvents") : -1;
    if ((err = kapi_api__query_int(r, "timeoutSeconds", &o->timeout)) != NULL ||
        (err = kapi_api__query_int(r, "limit", &o->limit)) != NULL)
        return err;
    if (o->limit < 0)
        o->limit = 0;
    return validate_list_options(o);
}

kapi_error *kapi_api__parse_rv(const char *rv, int64_t *out)
{
    char *end = NULL;
    *out = 0;
    if (!rv || !*rv)
        return NULL;
    errno = 0;
    unsigned long long v = *rv != '-' && *rv != '+' && *rv != ' ' ? strtoull(rv, &end, 10) : 0;
    if (!end || *end || errno == ERANGE || v > INT64_MAX)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "invalid resource version: resourceVersion: Invalid value: \"%s\": "
                              "strconv.ParseUint: parsing \"%s\": %s",
                              rv, rv, end && !*end ? "value out of range" : "invalid syntax");
    *out = (int64_t)v;
    return NULL;
}

kapi_error *kapi_api__wait_for_revision(kapi_api *api, int64_t rev)
{
    if (kapi_store_wait_revision(api->store, rev, TOO_NEW_WAIT_MS))
        return NULL;
    kapi_error *err = kapi_error_new(KAPI_STATUS_TIMEOUT,
                                     "Timeout: Too large resource version: %lld, current: %lld",
                                     (long long)rev, (long long)kapi_store_revision(api->store));
    err->has_details = true;
    kapi_error_add_cause(err, "ResourceVersionTooLarge", NULL, "Too large resource version");
    err->retry_after = TOO_NEW_RETRY_AFTER;
    return err;
}

kapi_error *kapi_api__consistent(kapi_api *api, int64_t *at)
{
    kapi_store_rc rc = kapi_store_sync(api->store, TOO_NEW_WAIT_MS, at);
    if (rc == KAPI_STORE_OK || rc == KAPI_STORE_TOO_NEW)
        return NULL;
    return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                          "the store cannot tell its latest revision; try again");
}

void kapi_api__before_retry(kapi_api *api)
{
    int64_t behind;
    kapi_store_sync(api->store, TOO_NEW_WAIT_MS, &behind);
}

/* ---- continue tokens ----
 * base64url (raw) of {"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key after prefix>\u0000"},
 * as kube-apiserver's etcd store writes them; rv -1 continues at the latest revision. */

static char *encode_continue(kapi_str start, int64_t rev)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_printf(&b, "{\"v\":\"meta.k8s.io/v1\",\"rv\":%lld,\"start\":", (long long)rev);
    kapi_json_put_string(&b, start.ptr, start.len + 1); /* the key and its NUL: after it */
    kapi_buf_putc(&b, '}');
    char *token = kapi_base64_encode(b.ptr, b.len, KAPI_BASE64_URL | KAPI_BASE64_RAW);
    kapi_buf_dispose(&b);
    return token;
}

/* path.Clean leaves "/" + key unchanged: no empty, "." or ".." parts. */
static bool clean_path(const char *key)
{
    const char *p = key;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!slash)
            return true;
        p = slash + 1;
    }
}

#define BAD_TOKEN "invalid continue token: continue key is not valid"

/* encoding/json's UnmarshalTypeError for a member of the token, or NULL. */
static kapi_error *token_type_error(const json_t *v, const char *name, bool integer)
{
    if (!v || json_is_null(v) || (integer ? json_is_integer(v) : json_is_string(v)))
        return NULL;
    const char *go_type = integer ? "int64" : "string";
    if (json_is_number(v) && integer) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_json_encode(&b, v);
        kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                         BAD_TOKEN ": json: cannot unmarshal number %s into Go "
                                                   "struct field continueToken.%s of type %s",
                                         b.ptr, name, go_type);
        kapi_buf_dispose(&b);
        return err;
    }
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                          BAD_TOKEN ": json: cannot unmarshal %s into Go struct field "
                                    "continueToken.%s of type %s",
                          kapi_go_json_kind(v), name, go_type);
}

kapi_error *kapi_api__decode_continue(kapi_arena *a, const char *token, kapi_str *start,
                                      int64_t *rev)
{
    kapi_buf raw;
    kapi_buf_init(&raw);
    kapi_error *err = NULL;
    json_t *v = NULL;
    char *why = NULL;
    long bad = kapi_base64_decode(token, strlen(token), KAPI_BASE64_URL | KAPI_BASE64_RAW, &raw);
    if (bad >= 0) {
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             BAD_TOKEN ": illegal base64 data at input byte %ld", bad);
        goto done;
    }
    if (!(v = kapi_json_parse(raw.ptr, raw.len, &why))) {
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, BAD_TOKEN ": %s", why);
        goto done;
    }
    if (!json_is_object(v) && !json_is_null(v)) {
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             BAD_TOKEN ": json: cannot unmarshal %s into Go value of type "
                                       "storage.continueToken",
                             kapi_go_json_kind(v));
        goto done;
    }
    json_t *ver = json_object_get(v, "v"), *rv = json_object_get(v, "rv");
    json_t *st = json_object_get(v, "start");
    if ((err = token_type_error(ver, "v", false)) != NULL ||
        (err = token_type_error(rv, "rv", true)) != NULL ||
        (err = token_type_error(st, "start", false)) != NULL)
        goto done;
    const char *version = json_is_string(ver) ? json_string_value(ver) : "";
    const char *s = json_is_string(st) ? json_string_value(st) : "";
    size_t slen = json_is_string(st) ? json_string_length(st) : 0;
    *rev = json_is_integer(rv) ? json_integer_value(rv) : 0;
    if (strcmp(version, "meta.k8s.io/v1") != 0)
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             BAD_TOKEN ": server does not recognize this encoded version %s",
                             version);
    else if (*rev == 0)
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             BAD_TOKEN ": incorrect encoded start resourceVersion (version "
                                       "meta.k8s.io/v1)");
    else if (slen == 0)
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                             BAD_TOKEN ": encoded start key empty (version meta.k8s.io/v1)");
    else if (!clean_path(*s == '/' ? s + 1 : s))
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, BAD_TOKEN ": %s", s);
    else { /* the NUL that ends the key, if any, is dropped */
        size_t skip = *s == '/', n = slen - skip - (s[slen - 1] == '\0');
        *start = (kapi_str){kapi_arena_strndup(a, s + skip, n), n};
    }
done:
    free(why);
    json_decref(v);
    kapi_buf_dispose(&raw);
    return err;
}

/* ---- reading a page ---- */

/* What a page read gives back. */
typedef struct page {
    kapi_obj **items; /* references the page owns */
    size_t n, cap;
    int64_t rev;
    bool more;        /* keys remain after the last one looked at */
    size_t remaining; /* without a filter: the keys after the last item */
    kapi_str last;    /* the key of the last item looked at (owned by an item or the page) */
    kapi_obj *last_ref;
    /* The items in the served view, converted together when the type's conversion calls
     * out (one ConversionReview for the page, before any of it is sent); else NULL and
     * each item is converted as it is written. */
    json_t **views;
} page;

static void page_dispose(page *p)
{
    for (size_t i = 0; i < p->n; i++) {
        kapi_obj_unref(p->items[i]);
        if (p->views)
            json_decref(p->views[i]);
    }
    free(p->items);
    free(p->views);
    kapi_obj_unref(p->last_ref);
}

static void page_add(page *p, kapi_obj *o)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->items = kapi_xrealloc(p->items, p->cap * sizeof(*p->items));
    }
    p->items[p->n++] = kapi_obj_ref(o);
}

/* Reads up to limit (0: all) objects that pass f under prefix after start_after, at
 * revision rev (0: the latest). */
static kapi_store_rc read_page(kapi_store *st, kapi_str prefix, int64_t rev, kapi_str start_after,
                               size_t limit, const kapi_filter *f, page *p)
{
    memset(p, 0, sizeof(*p));
    kapi_str after = start_after;
    for (;;) {
        kapi_store_list_result l;
        kapi_store_list_opts q = {
            .prefix = prefix,
            .rev = rev,
            .start_after = after,
            .limit = limit ? limit - (f ? 0 : p->n) : 0,
        };
        kapi_store_rc rc = kapi_store_list(st, &q, &l);
        if (rc != KAPI_STORE_OK)
            return rc;
        rev = p->rev = l.rev;
        size_t i = 0;
        for (; i < l.n && !(limit && p->n == limit); i++) {
            if (!f || kapi_api__filter_match(f, l.items[i]))
                page_add(p, l.items[i]);
            kapi_obj_unref(p->last_ref);
            p->last_ref = kapi_obj_ref(l.items[i]);
        }
        p->remaining = l.remaining + (l.n - i);
        p->more = p->remaining > 0;
        kapi_store_list_dispose(&l);
        if (!limit || p->n == limit || !p->more)
            break;
        after = kapi_obj_key(p->last_ref);
    }
    if (p->last_ref)
        p->last = kapi_obj_key(p->last_ref);
    return KAPI_STORE_OK;
}

/* ---- the list verb ---- */

/* Where a list reads (reference 4.6): at revision *rev (0: the latest), after key
 * *start_after, honouring the limit or not. */
typedef struct list_plan {
    int64_t rev;
    kapi_str start_after;
    bool paged;
    bool from_token; /* continuing: a compacted revision answers with a fresh token */
} list_plan;

static kapi_error *plan_list(kapi_req *r, const kapi_list_opts *o, kapi_str prefix, list_plan *plan)
{
    kapi_error *err;
    int64_t rv = 0;
    memset(plan, 0, sizeof(*plan));
    plan->paged = o->limit > 0;
    if (o->cont && *o->cont) {
        kapi_str start = KAPI_STR_NULL;
        if ((err = kapi_api__decode_continue(&r->arena, o->cont, &start, &rv)) != NULL)
            return err;
        if (o->rv && *o->rv && strcmp(o->rv, "0") != 0)
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                  "specifying resource version is not allowed when using "
                                  "continue");
        char *after = kapi_arena_alloc(&r->arena, prefix.len + start.len + 1);
        memcpy(after, prefix.ptr, prefix.len);
        if (start.len)
            memcpy(after + prefix.len, start.ptr, start.len);
        plan->start_after = (kapi_str){after, prefix.len + start.len};
        plan->rev = rv > 0 ? rv : 0;
        plan->from_token = true;
        return NULL;
    }
    if (!o->rv || !*o->rv)
        return kapi_api__consistent(r->api, &plan->rev);
    if (strcmp(o->rv, "0") == 0) {
        plan->paged = false; /* served whole, as from kube-apiserver's watch cache */
        return NULL;
    }
    if ((err = kapi_api__parse_rv(o->rv, &rv)) != NULL)
        return err;
    if ((err = kapi_api__wait_for_revision(r->api, rv)) != NULL)
        return err;
    bool exact = strcmp(o->rv_match, "Exact") == 0 || (!*o->rv_match && o->limit > 0);
    plan->rev = exact ? rv : 0;
    return NULL;
}

/* A list's metadata. An unstructured list (custom resources) writes its members sorted,
 * continue always. */
static void put_list_meta(kapi_buf *b, const kapi_list_meta *m, bool unstructured)
{
    kapi_buf_puts(b, "\"metadata\":{");
    if (unstructured) {
        kapi_buf_printf(b, "\"continue\":\"%s\",", m->continue_token ? m->continue_token : "");
        if (m->has_remaining)
            kapi_buf_printf(b, "\"remainingItemCount\":%zu,", m->remaining);
        kapi_buf_printf(b, "\"resourceVersion\":\"%lld\"}", (long long)m->rev);
    } else {
        kapi_buf_printf(b, "\"resourceVersion\":\"%lld\"", (long long)m->rev);
        if (m->continue_token)
            kapi_buf_printf(b, ",\"continue\":\"%s\"", m->continue_token);
        if (m->has_remaining)
            kapi_buf_printf(b, ",\"remainingItemCount\":%zu", m->remaining);
        kapi_buf_putc(b, '}');
    }
}

void kapi_api__list_envelope(kapi_buf *head, kapi_buf *tail, const kapi_type *t,
                             const kapi_list_meta *m)
{
    if (t->custom) {
        kapi_buf_printf(head, "{\"apiVersion\":\"%s\",\"items\":[", t->group_version);
        kapi_buf_printf(tail, "],\"kind\":\"%s\",", t->list_kind);
        put_list_meta(tail, m, true);
        kapi_buf_puts(tail, "}\n");
    } else {
        kapi_buf_printf(head, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",", t->list_kind,
                        t->group_version);
        put_list_meta(head, m, false);
        kapi_buf_puts(head, ",\"items\":[");
        kapi_buf_puts(tail, "]}\n");
    }
}

/* ---- writing the answer ----
 *
 * A list is written from the stored bytes as the client takes it: an answer up to
 * LIST_BUFFER bytes goes whole (with Content-Length); a longer one is chunked, as Go's
 * server chunks what outgrows its buffer, and made LIST_BUFFER bytes at a time, each part
 * handed over when the client has taken all but LIST_BUFFER of what came before. Items
 * straight from the store are references to their bytes; converted ones and other forms
 * (Table, PartialObjectMetadataList, YAML) are made part by part. */

#define LIST_BUFFER (1u << 20)
/* A client that takes nothing of a list for this long is dropped, freeing its worker. */
#define LIST_STALL_MS 30000

typedef struct list_out {
    kapi_req *r;
    const char *content_type;
    kapi_http_chunk *c; /* the part not yet handed over */
    size_t n, cap, bytes;
    kapi_http_stream *s; /* once the answer is chunked */
    bool failed;         /* the client is gone or stalled: the rest is dropped */
} list_out;

static void release_chunk(kapi_http_chunk c)
{
    if (c.release)
        c.release(c.owner);
}

/* Starts the chunked answer with the headers a whole one would have. */
static void start_chunked(list_out *o)
{
    o->s = kapi_api__start_stream(o->r, o->content_type, SIZE_MAX);
}

/* Hands the part over (one HTTP chunk), then waits until the client has taken all but
 * LIST_BUFFER. */
static void hand_over(list_out *o, bool wait)
{
    if (!o->s)
        start_chunked(o);
    if (!o->failed)
        o->failed = !kapi_http_stream_writev(o->s, o->c, o->n);
    else
        for (size_t i = 0; i < o->n; i++)
            release_chunk(o->c[i]);
    o->n = o->bytes = 0;
    if (wait && !o->failed)
        o->failed = !kapi_http_stream_wait(o->s, LIST_BUFFER, LIST_STALL_MS);
}

/* Adds a chunk (taken) to the answer. */
static void out_put(list_out *o, kapi_http_chunk c)
{
    if (o->failed) {
        release_chunk(c);
        return;
    }
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 256;
        o->c = kapi_xrealloc(o->c, o->cap * sizeof(*o->c));
    }
    o->c[o->n++] = c;
    o->bytes += c.len;
    if (o->bytes >= LIST_BUFFER)
        hand_over(o, true);
}

/* Adds the bytes of b (taken; b is left empty). */
static void out_buf(list_out *o, kapi_buf *b)
{
    size_t len;
    char *p = kapi_buf_detach(b, &len);
    out_put(o, kapi_http_chunk_take(p, len));
}

/* Sends what is left: the whole answer, or the last part and the end of the chunked one. */
static void out_end(list_out *o)
{
    if (o->s) {
        hand_over(o, false);
        kapi_http_stream_end(o->s);
    } else {
        kapi_api__send(o->r, 200, o->content_type, o->c, o->n);
    }
    free(o->c);
}

/* A list item: the stored object without kind and apiVersion, as typed lists write
 * their items. The bytes start with {"kind":..,"apiVersion":.., so the item is "{"
 * followed by everything from "metadata" on. The search cannot be fooled: the stored
 * bytes are kapi's compact canonical JSON (kapi_api__canonical) with kind, apiVersion and
 * metadata first and only strings before metadata; inside a JSON string every '"' is
 * escaped as \", so no string can hold the bytes "metadata": and their first occurrence
 * is the top-level member's key, whatever the labels or annotations after it hold. */
static void put_item_bytes(list_out *o, kapi_obj *o_item)
{
    const char *m = strstr(o_item->data, "\"metadata\":");
    out_put(o, (kapi_http_chunk){"{", 1, NULL, NULL});
    out_put(o, (kapi_http_chunk){m, o_item->len - (size_t)(m - o_item->data), kapi_api__release_obj,
                                 o_item});
}

/* Converts the items of p into its views at once, for a type that converts remotely. */
static kapi_error *convert_page(const kapi_type *t, page *p)
{
    if (!kapi_type_converts_remotely(t) || p->n == 0)
        return NULL;
    p->views = kapi_xcalloc(p->n, sizeof(*p->views));
    for (size_t i = 0; i < p->n; i++)
        p->views[i] = kapi_api__parse_stored(p->items[i]);
    return kapi_type_from_storage(t, p->views, p->n);
}

/* Item i of p as the JSON list holds it: converted to the type's view; a built-in type's
 * without kind and apiVersion, a custom resource's whole with its members sorted. */
static json_t *item_json(const kapi_type *t, const page *p, size_t i)
{
    json_t *v;
    if (p->views) {
        v = json_incref(p->views[i]);
    } else { /* a conversion in kapi, which cannot fail */
        v = kapi_api__parse_stored(p->items[i]);
        kapi_error_free(kapi_type_from_storage(t, &v, 1));
    }
    if (t->custom && t->strategy->from_storage) {
        json_t *canon = kapi_api__canonical(t, v);
        json_decref(v);
        return canon;
    }
    if (!t->custom) {
        json_object_del(v, "kind");
        json_object_del(v, "apiVersion");
    }
    return v;
}

/* The items of a JSON list: the stored bytes of each item already in the type's view,
 * the others converted. */
static void put_json_items(list_out *o, page *p)
{
    const kapi_type *t = o->r->type;
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < p->n; i++) {
        if (!kapi_type_serves_stored(t, p->items[i]->data, p->items[i]->len)) {
            json_t *v = item_json(t, p, i);
            if (i)
                kapi_buf_putc(&b, ',');
            kapi_json_encode(&b, v);
            json_decref(v);
            if (b.len >= LIST_BUFFER / 4)
                out_buf(o, &b);
            continue;
        }
        if (b.len) /* the converted items before it go first */
            out_buf(o, &b);
        kapi_obj *item = kapi_obj_ref(p->items[i]);
        if (i)
            out_put(o, (kapi_http_chunk){",", 1, NULL, NULL});
        if (t->custom)
            out_put(o, (kapi_http_chunk){item->data, item->len, kapi_api__release_obj, item});
        else
            put_item_bytes(o, item);
    }
    if (b.len)
        out_buf(o, &b);
    kapi_buf_dispose(&b);
}

/* The items in the negotiated form (Table rows, metadata, YAML), part by part. */
static void put_form_items(list_out *o, kapi_list_form *f, page *p)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < p->n && !o->failed; i++) {
        json_t *v = item_json(o->r->type, p, i);
        kapi_api__list_form_item(f, v, i == 0, &b);
        json_decref(v);
        if (b.len >= LIST_BUFFER / 4)
            out_buf(o, &b);
    }
    if (b.len)
        out_buf(o, &b);
    kapi_buf_dispose(&b);
}

/* A list in a form other than its JSON: made from the JSON list's skeleton (head and
 * tail around no items) and the items one by one. */
static void respond_form(kapi_req *r, page *p, kapi_buf *head, kapi_buf *tail)
{
    kapi_list_form *f = NULL;
    kapi_buf_put(head, tail->ptr, tail->len);
    kapi_error *err = kapi_api__list_form_new(r, kapi_json_parse(head->ptr, head->len, NULL), &f);
    kapi_buf_clear(head);
    kapi_buf_clear(tail);
    if (err) {
        kapi_api__respond_error(r, err);
        return;
    }
    list_out o = {.r = r, .content_type = kapi_api__list_form_type(f)};
    if (p->n == 0 || kapi_api__list_form_buffered(f)) {
        put_form_items(&o, f, p); /* into the form itself */
        kapi_api__list_form_whole(f, head);
        out_buf(&o, head);
    } else {
        kapi_api__list_form_split(f, head, tail);
        out_buf(&o, head);
        put_form_items(&o, f, p);
        out_buf(&o, tail);
    }
    out_end(&o);
    kapi_api__list_form_free(f);
}

/* A page as a list (kapi_api__list_envelope), its continue token and remaining count
 * from the page. Items come straight from the stored bytes when the views are equal. */
static void respond_page(kapi_req *r, page *p, kapi_str prefix, bool paged, bool filtered)
{
    bool more = paged && p->more && p->last.ptr;
    char *token = more ? encode_continue(
                             (kapi_str){p->last.ptr + prefix.len, p->last.len - prefix.len}, p->rev)
                       : NULL;
    kapi_list_meta m = {.rev = p->rev,
                        .continue_token = token,
                        .has_remaining = more && !filtered,
                        .remaining = p->remaining};
    kapi_buf head, tail;
    kapi_buf_init(&head);
    kapi_buf_init(&tail);
    kapi_api__list_envelope(&head, &tail, r->type, &m);
    free(token);
    if (r->media.format != KAPI_FORMAT_JSON || r->media.target != KAPI_TARGET_OBJECT) {
        respond_form(r, p, &head, &tail);
    } else {
        list_out o = {.r = r, .content_type = "application/json"};
        out_buf(&o, &head);
        put_json_items(&o, p);
        out_buf(&o, &tail);
        out_end(&o);
    }
    kapi_buf_dispose(&head);
    kapi_buf_dispose(&tail);
}

/* The 410 of a list at a revision that has left the history window. */
static kapi_error *err_expired(const list_plan *plan, kapi_str prefix)
{
    if (!plan->from_token)
        return kapi_error_new(KAPI_STATUS_EXPIRED, "%s", expired_list);
    kapi_error *err = kapi_error_new(KAPI_STATUS_EXPIRED, "%s", inconsistent_continue);
    kapi_str rest = {plan->start_after.ptr + prefix.len, plan->start_after.len - prefix.len};
    err->list_continue = encode_continue(rest, -1);
    return err;
}

void kapi_api__serve_list(kapi_req *r)
{
    kapi_list_opts o;
    kapi_filter *f = NULL;
    list_plan plan;
    page p = {0};
    kapi_str prefix = kapi_type_key(&r->arena, r->type, r->info.ns, KAPI_STR(""));
    kapi_error *err = kapi_api__list_options(r, &o);
    if (!err)
        err = kapi_api__filter_new(r, KAPI_STR(""), &f);
    if (!err)
        err = plan_list(r, &o, prefix, &plan);
    if (!err) {
        kapi_store_rc rc = read_page(r->api->store, prefix, plan.rev, plan.start_after,
                                     plan.paged ? (size_t)o.limit : 0, f, &p);
        if (rc == KAPI_STORE_GONE)
            err = err_expired(&plan, prefix);
        else if (rc != KAPI_STORE_OK)
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "storage error while listing %s",
                                 r->type->plural);
        else
            err = convert_page(r->type, &p);
    }
    if (err)
        kapi_api__respond_error(r, err);
    else
        respond_page(r, &p, prefix, plan.paged, f != NULL);
    page_dispose(&p);
    kapi_api__filter_free(f);
}
