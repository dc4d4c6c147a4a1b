/* codec/yaml: YAML bodies to JSON values, with libyaml's parser and gopkg.in/yaml.v2's
 * decoding rules (decode.go) followed by sigs.k8s.io/yaml's conversion to JSON.
 *
 * Two stages, as go-yaml has them, so that errors come in its order: libyaml's events
 * build a node tree of the first document (syntax errors, unknown anchors), then the tree
 * is decoded into jansson values (tags, aliases and merges, repeated keys). What
 * sigs.k8s.io/yaml and encoding/json would refuse afterwards (a null key, .nan) is judged
 * on the final value, where a repeated key has already replaced what it repeats. */
#include "codec/yaml.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "codec/codec_int.h"

#define MAX_DUPS 1000
#define TAG_PREFIX "tag:yaml.org,2002:"

enum { N_SCALAR, N_SEQ, N_MAP, N_ALIAS };

/* A node of the document; nodes and their text live in the parse's arena. */
typedef struct node node;
struct node {
    int kind;
    int line;         /* 0-based line where the node starts */
    bool implicit;    /* a plain scalar with no tag (or the "!" tag) */
    bool busy;        /* an alias being expanded: meeting it again is a cycle */
    const char *tag;  /* full tag ("tag:yaml.org,2002:int", "!foo"), NULL when untagged */
    const char *text; /* scalar value or alias name */
    size_t len;
    node *target; /* alias: the anchored node */
    node **kids;  /* sequence items; mapping keys and values alternating */
    size_t nkids, cap;
};

/* ---- stage 1: libyaml events to nodes ---- */

typedef struct named {
    const char *name;
    node *n;
} named;

typedef struct builder {
    kapi_arena *arena;
    node **stack; /* open collections */
    size_t depth, cap;
    node *root;
    named *anchors; /* open addressing, power-of-two size */
    size_t nanchors, acap;
} builder;

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static named *anchor_slot(named *t, size_t cap, const char *name)
{
    size_t i = hash_str(name) & (cap - 1);
    while (t[i].name && strcmp(t[i].name, name) != 0)
        i = (i + 1) & (cap - 1);
    return &t[i];
}

/* Names n; a later anchor of the same name replaces the earlier one, as in go-yaml. */
static void anchor_set(builder *b, const char *name, node *n)
{
    if (2 * (b->nanchors + 1) > b->acap) {
        size_t cap = b->acap ? 2 * b->acap : 16;
        named *t = kapi_xcalloc(cap, sizeof(*t));
        for (size_t i = 0; i < b->acap; i++)
            if (b->anchors[i].name)
                *anchor_slot(t, cap, b->anchors[i].name) = b->anchors[i];
        free(b->anchors);
        b->anchors = t;
        b->acap = cap;
    }
    named *a = anchor_slot(b->anchors, b->acap, name);
    if (!a->name) {
        a->name = kapi_arena_strdup(b->arena, name);
        b->nanchors++;
    }
    a->n = n;
}

static node *anchor_get(const builder *b, const char *name)
{
    return b->acap ? anchor_slot(b->anchors, b->acap, name)->n : NULL;
}

static node *new_node(builder *b, int kind, const yaml_event_t *ev, const yaml_char_t *anchor)
{
    node *n = kapi_arena_alloc(b->arena, sizeof(*n));
    n->kind = kind;
    n->line = (int)ev->start_mark.line;
    if (anchor)
        anchor_set(b, (const char *)anchor, n); /* before the children, as go-yaml does */
    return n;
}

static void add_kid(builder *b, node *n)
{
    if (b->depth == 0) {
        b->root = n;
        return;
    }
    node *p = b->stack[b->depth - 1];
    if (p->nkids == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 8;
        node **kids = kapi_arena_alloc(b->arena, cap * sizeof(*kids));
        if (p->nkids)
            memcpy(kids, p->kids, p->nkids * sizeof(*kids));
        p->kids = kids;
        p->cap = cap;
    }
    p->kids[p->nkids++] = n;
}

/* go-yaml's parser.fail: the problem, after "line N: " when a mark has a line (scanner
 * marks count from 0 and get one added, parser marks are written as they are). */
static kapi_error *syntax_error(const yaml_parser_t *p)
{
    int line = 0;
    if (p->problem_mark.line != 0)
        line = (int)p->problem_mark.line + (p->error == YAML_SCANNER_ERROR);
    else if (p->context_mark.line != 0)
        line = (int)p->context_mark.line;
    const char *what = p->problem ? p->problem : "unknown problem parsing YAML content";
    if (line)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "yaml: line %d: %s", line, what);
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "yaml: %s", what);
}

static kapi_error *open_collection(builder *b, int kind, const yaml_event_t *ev,
                                   const yaml_char_t *anchor)
{
    if (b->depth >= KAPI_YAML_MAX_DEPTH)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "yaml: line %d: exceeded max depth of %d",
                              (int)ev->start_mark.line + 1, KAPI_YAML_MAX_DEPTH);
    node *n = new_node(b, kind, ev, anchor);
    add_kid(b, n);
    if (b->depth == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->stack = kapi_xrealloc(b->stack, b->cap * sizeof(*b->stack));
    }
    b->stack[b->depth++] = n;
    return NULL;
}

/* One event of the first document; *done once it (or the stream) has ended. */
static kapi_error *on_event(builder *b, const yaml_event_t *ev, bool *done)
{
    node *n;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT: {
        const yaml_version_directive_t *v = ev->data.document_start.version_directive;
        if (v && (v->major != 1 || v->minor != 1)) { /* libyaml also takes 1.2; go-yaml not */
            int line = (int)ev->start_mark.line;
            if (line)
                return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                      "yaml: line %d: found incompatible YAML document", line);
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                                  "yaml: found incompatible YAML document");
        }
        return NULL;
    }
    case YAML_DOCUMENT_END_EVENT:
    case YAML_STREAM_END_EVENT:
        *done = true;
        return NULL;
    case YAML_SCALAR_EVENT:
        n = new_node(b, N_SCALAR, ev, ev->data.scalar.anchor);
        n->implicit = ev->data.scalar.plain_implicit;
        n->tag =
            ev->data.scalar.tag ? kapi_arena_strdup(b->arena, (char *)ev->data.scalar.tag) : NULL;
        n->len = ev->data.scalar.length;
        n->text = kapi_arena_strndup(b->arena, (char *)ev->data.scalar.value, n->len);
        add_kid(b, n);
        return NULL;
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        node *target = anchor_get(b, name);
        if (!target)
            return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "yaml: unknown anchor '%s' referenced",
                                  name);
        n = new_node(b, N_ALIAS, ev, NULL);
        n->text = kapi_arena_strdup(b->arena, name);
        n->target = target;
        add_kid(b, n);
        return NULL;
    }
    case YAML_SEQUENCE_START_EVENT:
        return open_collection(b, N_SEQ, ev, ev->data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
        return open_collection(b, N_MAP, ev, ev->data.mapping_start.anchor);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        b->depth--;
        return NULL;
    default:
        return NULL;
    }
}

/* Reads the first document into b->root (NULL when the stream has none). */
static kapi_error *build(builder *b, const char *data, size_t len)
{
    yaml_parser_t p;
    yaml_event_t ev;
    kapi_error *err = NULL;
    bool done = false;
    if (len == 0) { /* go-yaml reads an empty body as one line break */
        data = "\n";
        len = 1;
    }
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    while (!done && !err) {
        if (!yaml_parser_parse(&p, &ev)) {
            err = syntax_error(&p);
            break;
        }
        err = on_event(b, &ev, &done);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return err;
}

/* ---- stage 2: nodes to JSON values ---- */

/* A scalar as go-yaml decodes it into interface{} (timestamps are strings). */
typedef struct gval {
    kapi_yaml__kind kind; /* STR, NULL, BOOL, INT, UINT or FLOAT */
    kapi_yaml__value v;
    const char *s; /* STR */
    size_t n;
    char *owned; /* the decoded bytes of a !!binary scalar */
} gval;

/* Something sigs.k8s.io/yaml or encoding/json refuses, found while decoding and reported
 * only if it is still part of the final value. */
typedef struct pending {
    json_t *at;    /* the object holding the bad key, or the stand-in of a .nan/.inf */
    char *message; /* NULL for a stand-in (its message is the value's) */
    double f;
    size_t seq; /* document order */
    bool live;  /* still part of the final value */
} pending;

typedef struct dec {
    kapi_dups *dups;
    kapi_error *err; /* go-yaml's failf: ends decoding */
    long count, alias_count;
    int alias_depth;
    pending *pend;
    size_t npend, pcap;
} dec;

static bool fail(dec *d, const char *fmt, ...) KAPI_PRINTF(2, 3);
static bool fail(dec *d, const char *fmt, ...)
{
    kapi_buf b;
    va_list ap;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "yaml: ");
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    d->err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", b.ptr);
    kapi_buf_dispose(&b);
    return false;
}

static void add_pending(dec *d, json_t *at, char *message, double f)
{
    if (d->npend == d->pcap) {
        d->pcap = d->pcap ? 2 * d->pcap : 8;
        d->pend = kapi_xrealloc(d->pend, d->pcap * sizeof(*d->pend));
    }
    d->pend[d->npend] = (pending){json_incref(at), message, f, d->npend, false};
    d->npend++;
}

/* go-yaml's decoder.unmarshal entry: counts decoding steps and refuses documents where
 * aliases expand into most of the work (the "billion laughs"). */
static bool count(dec *d)
{
    d->count++;
    if (d->alias_depth > 0)
        d->alias_count++;
    if (d->alias_count > 100 && d->count > 1000) {
        double ratio = 0.99; /* allowedAliasRatio */
        if (d->count >= 4000000)
            ratio = 0.10;
        else if (d->count > 400000)
            ratio = 0.99 - 0.89 * ((double)(d->count - 400000) / 3600000.0);
        if ((double)d->alias_count / (double)d->count > ratio)
            return fail(d, "document contains excessive aliasing");
    }
    return true;
}

/* Enters alias a, or fails when a is already being expanded. */
static bool alias_enter(dec *d, node *a)
{
    if (a->busy)
        return fail(d, "anchor '%s' value contains itself", a->text);
    a->busy = true;
    d->alias_depth++;
    return true;
}

static void alias_leave(dec *d, node *a)
{
    a->busy = false;
    d->alias_depth--;
}

static bool is_tag(const char *tag, const char *name)
{
    size_t p = sizeof(TAG_PREFIX) - 1;
    return tag && strncmp(tag, TAG_PREFIX, p) == 0 && strcmp(tag + p, name) == 0;
}

static const char *kind_tag(kapi_yaml__kind k)
{
    static const char *const names[] = {"str", "null",  "bool",      "int",
                                        "int", "float", "timestamp", "merge"};
    return names[k];
}

/* A scalar node as go-yaml's decoder.scalar gives it to an interface{}. */
static bool scalar(dec *d, const node *n, gval *g)
{
    memset(g, 0, sizeof(*g));
    g->kind = KAPI_YAML_STR;
    g->s = n->text;
    g->n = n->len;
    if (!n->tag && !n->implicit)
        return true; /* quoted */
    const char *t = n->tag ? n->tag : "";
    if (is_tag(t, "binary")) {
        kapi_buf b;
        kapi_buf_init(&b);
        if (kapi_base64_decode(n->text, n->len, KAPI_BASE64_STD, &b) >= 0) {
            kapi_buf_dispose(&b);
            return fail(d, "!!binary value contains invalid base64 data");
        }
        g->owned = kapi_buf_detach(&b, &g->n);
        g->s = g->owned;
        return true;
    }
    bool untagged = !*t;
    if (!untagged && !is_tag(t, "bool") && !is_tag(t, "int") && !is_tag(t, "float") &&
        !is_tag(t, "null") && !is_tag(t, "timestamp"))
        return true; /* !!str, "!", local tags: the text */
    kapi_yaml__kind k =
        kapi_yaml__resolve(n->text, n->len, untagged || is_tag(t, "timestamp"), &g->v);
    if (!untagged && !is_tag(t, kind_tag(k))) {
        if (!is_tag(t, "float") || k != KAPI_YAML_INT)
            return fail(d, "cannot decode !!%s `%.*s` as a !!%s", kind_tag(k), (int)n->len, n->text,
                        t + sizeof(TAG_PREFIX) - 1);
        k = KAPI_YAML_FLOAT;
        g->v.f = (double)g->v.i;
    }
    g->kind = k == KAPI_YAML_TIMESTAMP ? KAPI_YAML_STR : k;
    return true;
}

/* A JSON string of s; bytes that are not UTF-8 become U+FFFD as encoding/json writes. */
static json_t *string_json(const char *s, size_t n)
{
    if (kapi_go_valid_utf8(s, n))
        return json_stringn_nocheck(s, n);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_codec__put_utf8(&b, s, n);
    json_t *v = json_stringn_nocheck(b.ptr, b.len);
    kapi_buf_dispose(&b);
    return v;
}

/* The JSON value of a scalar after encoding/json and kube-apiserver's int-preserving
 * decoding: an integral float below 2^63 reads back as an integer. */
static json_t *gval_json(dec *d, const gval *g)
{
    double f = g->v.f;
    json_t *v;
    switch (g->kind) {
    case KAPI_YAML_NULL:
        return json_null();
    case KAPI_YAML_BOOL:
        return json_boolean(g->v.b);
    case KAPI_YAML_INT:
        return json_integer(g->v.i);
    case KAPI_YAML_UINT:
        return json_real((double)g->v.u);
    case KAPI_YAML_FLOAT:
        if (!isfinite(f)) {
            v = json_object(); /* a stand-in, judged at the end */
            add_pending(d, v, NULL, f);
            return v;
        }
        if (f == trunc(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0)
            return json_integer((json_int_t)f);
        return json_real(f);
    default:
        return string_json(g->s, g->n);
    }
}

/* Go's %#v of a scalar key. */
static void key_syntax(kapi_buf *b, const gval *k)
{
    char num[40];
    switch (k->kind) {
    case KAPI_YAML_NULL:
        kapi_buf_puts(b, "<nil>");
        break;
    case KAPI_YAML_BOOL:
        kapi_buf_puts(b, k->v.b ? "true" : "false");
        break;
    case KAPI_YAML_INT:
        kapi_buf_printf(b, "%lld", (long long)k->v.i);
        break;
    case KAPI_YAML_UINT:
        kapi_buf_printf(b, "0x%llx", (unsigned long long)k->v.u);
        break;
    case KAPI_YAML_FLOAT:
        kapi_go_format_float(num, k->v.f, 64);
        kapi_buf_puts(b, num);
        break;
    default:
        kapi_go_quote(b, k->s, k->n);
    }
}

/* A key's identity as a Go map[interface{}]interface{} sees it (type and value). */
static void key_identity(kapi_buf *b, const gval *k)
{
    double f = k->v.f == 0 ? 0 : k->v.f; /* -0 and 0 are one key */
    switch (k->kind) {
    case KAPI_YAML_STR:
        kapi_buf_putc(b, 's');
        kapi_buf_put(b, k->s, k->n);
        break;
    case KAPI_YAML_FLOAT:
        kapi_buf_printf(b, "f%a", f);
        break;
    default:
        kapi_buf_printf(b, "%d:%d:%lld:%llu", (int)k->kind, (int)k->v.b, (long long)k->v.i,
                        (unsigned long long)k->v.u);
    }
}

/* The keys a mapping has been given so far, by Go identity: the object itself while all
 * keys are strings, a side set once another kind of key shows up. */
typedef struct keyset {
    json_t *typed;
} keyset;

static bool key_seen(json_t *obj, keyset *ks, const gval *k)
{
    if (k->kind == KAPI_YAML_FLOAT && isnan(k->v.f))
        return false; /* NaN never equals a key */
    if (k->kind == KAPI_YAML_STR && !ks->typed)
        return json_object_getn(obj, k->s, k->n) != NULL;
    if (!ks->typed) {
        const char *key;
        size_t klen;
        json_t *x;
        ks->typed = json_object();
        json_object_keylen_foreach(obj, key, klen, x)
        {
            gval s = {.kind = KAPI_YAML_STR, .s = key, .n = klen};
            kapi_buf b;
            kapi_buf_init(&b);
            key_identity(&b, &s);
            json_object_setn_new_nocheck(ks->typed, b.ptr, b.len, json_null());
            kapi_buf_dispose(&b);
        }
    }
    kapi_buf b;
    kapi_buf_init(&b);
    key_identity(&b, k);
    bool seen = json_object_getn(ks->typed, b.ptr, b.len) != NULL;
    json_object_setn_new_nocheck(ks->typed, b.ptr, b.len, json_null());
    kapi_buf_dispose(&b);
    return seen;
}

/* Reports key k of value vn when obj has it already, in go-yaml's strict words. */
static void report_repeat(dec *d, json_t *obj, keyset *ks, const gval *k, const node *vn)
{
    kapi_dups *l = d->dups;
    if (!key_seen(obj, ks, k) || !l || l->n >= MAX_DUPS)
        return;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_printf(&b, "line %d: key ", vn->line + 1);
    key_syntax(&b, k);
    kapi_buf_puts(&b, " already set in map");
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = kapi_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = (kapi_dup){kapi_buf_detach(&b, NULL), NULL, 0, vn->line + 1};
}

/* sigs.k8s.io/yaml's conversion of a key to a string; false for the null and uint64 keys
 * it refuses. */
static bool key_text(kapi_buf *b, const gval *k)
{
    char num[40];
    switch (k->kind) {
    case KAPI_YAML_STR:
        kapi_codec__put_utf8(b, k->s, k->n);
        return true;
    case KAPI_YAML_BOOL:
        kapi_buf_puts(b, k->v.b ? "true" : "false");
        return true;
    case KAPI_YAML_INT:
        kapi_buf_printf(b, "%lld", (long long)k->v.i);
        return true;
    case KAPI_YAML_FLOAT:
        kapi_go_format_float(num, k->v.f, 32);
        kapi_buf_puts(b, isnan(k->v.f)   ? ".nan"
                         : isinf(k->v.f) ? (k->v.f > 0 ? ".inf" : "-.inf")
                                         : num);
        return true;
    default:
        return false;
    }
}

/* decoder.setMapIndex without its strict early return: reports a repeated key, then the
 * value replaces the earlier one (what the non-strict decoding kube-apiserver keeps).
 * Takes v; false when decoding must stop. */
static bool put(dec *d, json_t *obj, keyset *ks, const gval *k, json_t *v, const node *vn)
{
    kapi_buf b;
    bool ok = true;
    report_repeat(d, obj, ks, k, vn);
    kapi_buf_init(&b);
    if (!key_text(&b, k)) {
        kapi_buf_printf(&b, "Unsupported map key of type: %s, key: ",
                        k->kind == KAPI_YAML_NULL ? "<nil>" : "uint64");
        key_syntax(&b, k);
        kapi_buf_puts(&b, ", value: ");
        kapi_go_sharp_v(&b, v, KAPI_GO_YAML_MAP);
        add_pending(d, obj, kapi_buf_detach(&b, NULL), 0);
        json_decref(v);
    } else if (memchr(b.ptr, '\0', b.len)) {
        /* Go takes it, but jansson could not read the stored object again. */
        kapi_buf_clear(&b);
        kapi_go_quote(&b, k->s, k->n);
        ok = fail(d, "NUL byte in mapping key %s not supported", b.ptr);
        json_decref(v);
    } else {
        json_object_setn_new_nocheck(obj, b.ptr, b.len, v);
    }
    kapi_buf_dispose(&b);
    return ok;
}

static json_t *decode(dec *d, node *n, int depth);
static bool fill(dec *d, node *m, json_t *obj, keyset *ks, int depth);

/* A key node, which go-yaml requires to decode to neither a map nor a slice. */
static bool decode_key(dec *d, node *k, gval *g, int depth)
{
    bool ok;
    if (k->kind == N_ALIAS) {
        if (!count(d) || !alias_enter(d, k))
            return false;
        ok = decode_key(d, k->target, g, depth);
        alias_leave(d, k);
        return ok;
    }
    if (k->kind == N_SCALAR)
        return count(d) && scalar(d, k, g);
    json_t *v = decode(d, k, depth + 1);
    if (!v)
        return false;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_sharp_v(&b, v, KAPI_GO_YAML_MAP);
    fail(d, "invalid map key: %s", b.ptr);
    kapi_buf_dispose(&b);
    json_decref(v);
    return false;
}

/* Decodes mapping m (or an alias of one) into obj, as a merge does. */
static bool merge_one(dec *d, node *m, json_t *obj, keyset *ks, int depth)
{
    bool ok;
    if (!count(d))
        return false;
    if (m->kind == N_MAP)
        return fill(d, m, obj, ks, depth);
    if (!alias_enter(d, m))
        return false;
    ok = merge_one(d, m->target, obj, ks, depth);
    alias_leave(d, m);
    return ok;
}

static bool is_map_or_alias_of_map(const node *n)
{
    return n->kind == N_MAP || (n->kind == N_ALIAS && n->target->kind == N_MAP);
}

/* The value of a "<<" key: a mapping, an alias of one, or a sequence of those; earlier
 * entries of a sequence win, so they are merged last. */
static bool merge(dec *d, node *v, json_t *obj, keyset *ks, int depth)
{
    if (v->kind != N_SEQ) {
        if (!is_map_or_alias_of_map(v))
            return fail(d, "map merge requires map or sequence of maps as the value");
        return merge_one(d, v, obj, ks, depth);
    }
    for (size_t i = v->nkids; i-- > 0;) {
        if (!is_map_or_alias_of_map(v->kids[i]))
            return fail(d, "map merge requires map or sequence of maps as the value");
        if (!merge_one(d, v->kids[i], obj, ks, depth))
            return false;
    }
    return true;
}

static bool is_merge_key(const node *k)
{
    return k->kind == N_SCALAR && k->len == 2 && memcmp(k->text, "<<", 2) == 0 &&
           (k->implicit || is_tag(k->tag, "merge"));
}

static bool fill(dec *d, node *m, json_t *obj, keyset *ks, int depth)
{
    for (size_t i = 0; i + 1 < m->nkids; i += 2) {
        node *k = m->kids[i], *vn = m->kids[i + 1];
        gval key;
        if (is_merge_key(k)) {
            if (!merge(d, vn, obj, ks, depth))
                return false;
            continue;
        }
        if (!decode_key(d, k, &key, depth))
            return false;
        json_t *v = decode(d, vn, depth + 1);
        bool ok = v && put(d, obj, ks, &key, v, vn);
        free(key.owned);
        if (!ok)
            return false;
    }
    return true;
}

static json_t *decode(dec *d, node *n, int depth)
{
    json_t *v = NULL;
    gval g;
    if (!count(d))
        return NULL;
    if ((n->kind == N_SEQ || n->kind == N_MAP) && depth >= KAPI_YAML_MAX_DEPTH) {
        fail(d, "line %d: exceeded max depth of %d", n->line + 1, KAPI_YAML_MAX_DEPTH);
        return NULL; /* reached through aliases: the tree itself was checked */
    }
    switch (n->kind) {
    case N_ALIAS:
        if (!alias_enter(d, n))
            return NULL;
        v = decode(d, n->target, depth);
        alias_leave(d, n);
        return v;
    case N_SCALAR:
        if (!scalar(d, n, &g))
            return NULL;
        v = gval_json(d, &g);
        free(g.owned);
        return v;
    case N_SEQ:
        v = json_array();
        for (size_t i = 0; i < n->nkids; i++) {
            json_t *x = decode(d, n->kids[i], depth + 1);
            if (!x) {
                json_decref(v);
                return NULL;
            }
            json_array_append_new(v, x);
        }
        return v;
    default: {
        keyset ks = {NULL};
        v = json_object();
        bool ok = fill(d, n, v, &ks, depth);
        json_decref(ks.typed);
        if (!ok) {
            json_decref(v);
            return NULL;
        }
        return v;
    }
    }
}

/* ---- stage 3: what the JSON conversion refuses ---- */

static int pending_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const pending *)a)->at, y = (uintptr_t)((const pending *)b)->at;
    return (x > y) - (x < y);
}

/* Walks v in encoding/json's order (object keys sorted), marks the pending entries still
 * part of it and notes the first .nan/.inf stand-in met. */
static void walk(dec *d, const json_t *v, const pending **first_nan)
{
    pending key = {.at = (json_t *)v};
    pending *p = bsearch(&key, d->pend, d->npend, sizeof(*d->pend), pending_cmp);
    if (p) {
        while (p > d->pend && p[-1].at == v)
            p--;
        for (; p < d->pend + d->npend && p->at == v; p++) {
            p->live = true;
            if (!p->message && !*first_nan)
                *first_nan = p;
        }
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            walk(d, json_array_get(v, i), first_nan);
    } else if (json_is_object(v)) {
        size_t n;
        kapi_json_member *m = kapi_json_sorted_members(v, &n);
        for (size_t i = 0; i < n; i++)
            walk(d, m[i].value, first_nan);
        free(m);
    }
}

/* The conversion's verdict on the final value v, NULL when it passes: a bad key first
 * (sigs.k8s.io/yaml converts keys before encoding/json runs; of several, Go's map order
 * picks one at random, kapi the first in the document), then the first .nan/.inf that
 * encoding/json meets. */
static kapi_error *convert_error(dec *d, const json_t *v)
{
    const pending *nan = NULL, *bad = NULL;
    qsort(d->pend, d->npend, sizeof(*d->pend), pending_cmp);
    walk(d, v, &nan);
    for (size_t i = 0; i < d->npend; i++)
        if (d->pend[i].live && d->pend[i].message && (!bad || d->pend[i].seq < bad->seq))
            bad = &d->pend[i];
    if (bad)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "%s", bad->message);
    if (nan) {
        char num[40];
        kapi_go_format_float(num, nan->f, 64);
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "json: unsupported value: %s", num);
    }
    return NULL;
}

kapi_error *kapi_yaml_parse(const char *data, size_t len, json_t **out, kapi_dups *dups)
{
    kapi_arena arena;
    builder b = {.arena = &arena};
    dec d = {.dups = dups, .count = 1};
    kapi_error *err;
    json_t *v = NULL;
    *out = NULL;
    kapi_arena_init(&arena);
    if ((err = build(&b, data, len)) != NULL)
        goto done;
    v = b.root ? decode(&d, b.root, 0) : json_null();
    if ((err = d.err) != NULL)
        goto done;
    if (d.npend && (err = convert_error(&d, v)) != NULL)
        goto done;
    *out = v;
    v = NULL;
done:
    json_decref(v);
    for (size_t i = 0; i < d.npend; i++) {
        json_decref(d.pend[i].at);
        free(d.pend[i].message);
    }
    free(d.pend);
    free(b.stack);
    free(b.anchors);
    kapi_arena_dispose(&arena);
    return err;
}

void kapi_yaml_strict_message(kapi_buf *b, const kapi_dups *dups)
{
    kapi_buf_puts(b, "yaml: unmarshal errors:");
    for (size_t i = 0; i < dups->n; i++) {
        kapi_buf_puts(b, "\n  ");
        kapi_buf_puts(b, dups->v[i].message);
    }
}
