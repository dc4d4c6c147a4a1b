/* codec/json_dups: repeated keys of a JSON body, found in one pass over its bytes.
 *
 * The scanner keeps, for the objects open at the current point, the keys seen so far as
 * slices of the input (or, for keys with escapes, of a scratch buffer holding them
 * unescaped), with their hashes; an object's keys are dropped when it closes. Small objects
 * are searched linearly, objects past LINEAR_MAX keys get a hash index. Nothing is
 * allocated per key; the path of a repeat is only written out when one is found. */
#include "codec/go.h"
#include "codec/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_int.h"

#define LINEAR_MAX 16

typedef struct jkey {
    size_t off; /* into the input, or into the scratch buffer when scratch */
    size_t len;
    uint32_t hash;
    bool scratch;
} jkey;

typedef struct frame {
    bool object;
    size_t key0;     /* this object's first key in keys */
    size_t scratch0; /* the scratch length when it opened */
    size_t cur;      /* object: the current member's key (index in keys); array: position */
    uint32_t *index; /* key index + 1 by hash, for big objects */
    size_t icap;
} frame;

typedef struct scan {
    const char *p;
    size_t n, pos;
    jkey *keys;
    size_t nkeys, kcap;
    frame *frames;
    size_t depth, fcap;
    kapi_buf scratch;
    kapi_dups *out;
    size_t added;
    /* kapi_json_key_offsets: the paths looked for and where their keys were found */
    const char *const *targets;
    size_t ntargets;
    size_t *offsets;
} scan;

void kapi_dups_init(kapi_dups *d)
{
    memset(d, 0, sizeof(*d));
}

void kapi_dups_dispose(kapi_dups *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].message);
        free(d->v[i].path);
    }
    free(d->v);
    memset(d, 0, sizeof(*d));
}

static void truncate_scratch(scan *s, size_t len)
{
    s->scratch.len = len;
    s->scratch.ptr[len] = '\0';
}

static const char *key_ptr(const scan *s, const jkey *k)
{
    return k->scratch ? s->scratch.ptr + k->off : s->p + k->off;
}

static uint32_t hash_bytes(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

/* Appends the JSON string body p[0..n) unescaped, as Go's unquote does it (a lone
 * surrogate becomes U+FFFD). */
static void unescape(kapi_buf *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\\' || i + 1 >= n) {
            kapi_buf_putc(b, p[i]);
            continue;
        }
        char c = p[++i];
        int r = kapi_codec__json_escape((unsigned char)c);
        if (r >= 0) {
            kapi_buf_putc(b, (char)r);
            continue;
        }
        r = c == 'u' && i + 4 < n ? kapi_codec__hex4(p + i + 1) : -1;
        if (r < 0) {
            kapi_buf_putc(b, c);
            continue;
        }
        i += 4;
        if (r >= 0xd800 && r < 0xdc00 && i + 6 < n && p[i + 1] == '\\' && p[i + 2] == 'u') {
            int lo = kapi_codec__hex4(p + i + 3);
            if (lo >= 0xdc00 && lo < 0xe000) {
                r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
                i += 6;
            }
        }
        kapi_go_put_rune(b, r); /* a lone surrogate becomes U+FFFD */
    }
}

/* The end of the string whose opening quote is at s->p[s->pos]; sets *escaped when it
 * holds a backslash. Returns the offset of the closing quote, or n when unterminated. */
static size_t string_end(const scan *s, bool *escaped)
{
    size_t i = s->pos + 1;
    *escaped = false;
    while (i < s->n) {
        const char *q = memchr(s->p + i, '"', s->n - i);
        if (!q)
            return s->n;
        size_t e = (size_t)(q - s->p), bs = 0;
        while (e - bs > i && s->p[e - bs - 1] == '\\')
            bs++;
        if (memchr(s->p + i, '\\', e - i))
            *escaped = true;
        if (bs % 2 == 0)
            return e;
        i = e + 1;
    }
    return s->n;
}

static bool key_eq(const scan *s, const jkey *a, const char *p, size_t n, uint32_t h)
{
    return a->hash == h && a->len == n && memcmp(key_ptr(s, a), p, n) == 0;
}

static void index_insert(uint32_t *index, size_t icap, uint32_t h, size_t k)
{
    size_t i = h & (icap - 1);
    while (index[i])
        i = (i + 1) & (icap - 1);
    index[i] = (uint32_t)(k + 1);
}

/* Finds key p[0..n) among the current object's keys; adds it when new. Returns the index
 * of the earlier key when it repeats one, else (size_t)-1. */
static size_t find_or_add(scan *s, frame *f, jkey k)
{
    const char *p = key_ptr(s, &k);
    size_t count = s->nkeys - f->key0;
    if (f->index) {
        for (size_t i = k.hash & (f->icap - 1); f->index[i]; i = (i + 1) & (f->icap - 1))
            if (key_eq(s, &s->keys[f->index[i] - 1], p, k.len, k.hash))
                return f->index[i] - 1;
    } else {
        for (size_t i = f->key0; i < s->nkeys; i++)
            if (key_eq(s, &s->keys[i], p, k.len, k.hash))
                return i;
    }
    if (s->nkeys == s->kcap) {
        s->kcap = s->kcap ? 2 * s->kcap : 64;
        s->keys = kapi_xrealloc(s->keys, s->kcap * sizeof(*s->keys));
    }
    s->keys[s->nkeys++] = k;
    count++;
    if (count > LINEAR_MAX && 2 * count > f->icap) {
        free(f->index);
        f->icap = f->icap ? 2 * f->icap : 4 * LINEAR_MAX;
        f->index = kapi_xcalloc(f->icap, sizeof(*f->index));
        for (size_t i = f->key0; i < s->nkeys; i++)
            index_insert(f->index, f->icap, s->keys[i].hash, i);
    } else if (f->index) {
        index_insert(f->index, f->icap, k.hash, s->nkeys - 1);
    }
    return (size_t)-1;
}

/* Writes the path of key k of the innermost object, as sigs.k8s.io/json joins it: a key
 * after anything else gets a ".", a position is "[i]". */
static void write_path(const scan *s, const jkey *k, kapi_buf *b)
{
    bool any = false;
    for (size_t d = 0; d < s->depth; d++) {
        const frame *f = &s->frames[d];
        const jkey *seg = d + 1 == s->depth ? k : f->object ? &s->keys[f->cur] : NULL;
        if (seg) {
            if (any)
                kapi_buf_putc(b, '.');
            kapi_buf_put(b, key_ptr(s, seg), seg->len);
        } else {
            kapi_buf_printf(b, "[%zu]", f->cur);
        }
        any = true;
    }
}

static void report(scan *s, const jkey *k)
{
    kapi_buf path, msg;
    kapi_dups *out = s->out;
    kapi_buf_init(&path);
    write_path(s, k, &path);
    for (size_t i = 0; i < out->n; i++) {
        if (out->v[i].path && strcmp(out->v[i].path, path.ptr) == 0) {
            kapi_buf_dispose(&path);
            return; /* sigs.k8s.io/json keeps each strict error once */
        }
    }
    if (s->added >= KAPI_JSON_MAX_DUPS) {
        kapi_buf_dispose(&path);
        return;
    }
    kapi_buf_init(&msg);
    kapi_buf_puts(&msg, "duplicate field ");
    kapi_go_quote(&msg, path.ptr, path.len);
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 8;
        out->v = kapi_xrealloc(out->v, out->cap * sizeof(*out->v));
    }
    out->v[out->n++] =
        (kapi_dup){kapi_buf_detach(&msg, NULL), kapi_buf_detach(&path, NULL), s->pos, 0};
    s->added++;
    kapi_buf_dispose(&msg);
    kapi_buf_dispose(&path);
}

static void skip_ws(scan *s)
{
    while (s->pos < s->n && (s->p[s->pos] == ' ' || s->p[s->pos] == '\n' || s->p[s->pos] == '\r' ||
                             s->p[s->pos] == '\t'))
        s->pos++;
}

/* Records the offset of key k when its path is one of the targets not found yet. */
static void locate(scan *s, const jkey *k)
{
    kapi_buf path;
    kapi_buf_init(&path);
    write_path(s, k, &path);
    for (size_t i = 0; i < s->ntargets; i++)
        if (s->offsets[i] == (size_t)-1 && strcmp(s->targets[i], path.ptr) == 0)
            s->offsets[i] = s->pos;
    kapi_buf_dispose(&path);
}

/* Reads the key at s->pos (an opening quote) into the current object. */
static bool read_key(scan *s)
{
    frame *f = &s->frames[s->depth - 1];
    bool escaped;
    size_t end = string_end(s, &escaped);
    jkey k = {s->pos + 1, end - s->pos - 1, 0, false};
    if (end >= s->n)
        return false;
    if (escaped) {
        size_t at = s->scratch.len;
        unescape(&s->scratch, s->p + k.off, k.len);
        k = (jkey){at, s->scratch.len - at, 0, true};
    }
    k.hash = hash_bytes(key_ptr(s, &k), k.len);
    if (s->targets)
        locate(s, &k);
    size_t prev = find_or_add(s, f, k);
    if (prev != (size_t)-1 && s->out) {
        report(s, &k);
        if (escaped)
            truncate_scratch(s, k.off); /* the earlier copy stands for it */
        f->cur = prev;
    } else {
        f->cur = s->nkeys - 1;
    }
    s->pos = end + 1;
    skip_ws(s);
    if (s->pos >= s->n || s->p[s->pos] != ':')
        return false;
    s->pos++;
    return true;
}

static void push(scan *s, bool object)
{
    if (s->depth == s->fcap) {
        s->fcap = s->fcap ? 2 * s->fcap : 16;
        s->frames = kapi_xrealloc(s->frames, s->fcap * sizeof(*s->frames));
    }
    s->frames[s->depth++] = (frame){object, s->nkeys, s->scratch.len, 0, NULL, 0};
}

static void pop(scan *s)
{
    frame *f = &s->frames[--s->depth];
    s->nkeys = f->key0;
    truncate_scratch(s, f->scratch0);
    free(f->index);
}

/* Skips a scalar value at s->pos; false at malformed input. */
static bool skip_scalar(scan *s)
{
    if (s->p[s->pos] == '"') {
        bool escaped;
        size_t end = string_end(s, &escaped);
        s->pos = end + 1;
        return end < s->n;
    }
    size_t start = s->pos;
    while (s->pos < s->n && strchr("+-.0123456789eEtrufalsn", s->p[s->pos]) && s->p[s->pos])
        s->pos++;
    return s->pos > start;
}

/* After a value: a comma and the next member, or the end of one or more containers.
 * Returns false when the document is over (or malformed). */
static bool after_value(scan *s)
{
    for (;;) {
        skip_ws(s);
        if (s->depth == 0 || s->pos >= s->n)
            return false;
        frame *f = &s->frames[s->depth - 1];
        char c = s->p[s->pos++];
        if (c == ',') {
            skip_ws(s);
            if (!f->object) {
                f->cur++;
                return true;
            }
            return s->pos < s->n && s->p[s->pos] == '"' && read_key(s);
        }
        if (c != (f->object ? '}' : ']'))
            return false;
        pop(s);
    }
}

static void run(scan *sp);

size_t kapi_json_duplicates(const char *p, size_t n, kapi_dups *dups)
{
    scan s = {.p = p, .n = n, .out = dups};
    run(&s);
    return s.added;
}

void kapi_json_key_offsets(const char *p, size_t n, const char *const *paths, size_t npaths,
                           size_t *offsets)
{
    for (size_t i = 0; i < npaths; i++)
        offsets[i] = (size_t)-1;
    scan s = {.p = p, .n = n, .targets = paths, .ntargets = npaths, .offsets = offsets};
    run(&s);
}

/* One pass over the document, reading every key into its object. */
static void run(scan *sp)
{
    scan s = *sp;
    const char *p = s.p;
    size_t n = s.n;
    kapi_buf_init(&s.scratch);
    for (;;) {
        skip_ws(&s);
        if (s.pos >= n)
            break;
        char c = p[s.pos];
        if (c == '{' || c == '[') {
            s.pos++;
            push(&s, c == '{');
            skip_ws(&s);
            if (s.pos < n && p[s.pos] == (c == '{' ? '}' : ']')) {
                if (!after_value(&s))
                    break;
                continue;
            }
            if (c == '{' && !(s.pos < n && p[s.pos] == '"' && read_key(&s)))
                break;
            continue;
        }
        if (!skip_scalar(&s) || !after_value(&s))
            break;
    }
    while (s.depth)
        pop(&s);
    free(s.keys);
    free(s.frames);
    kapi_buf_dispose(&s.scratch);
    sp->added = s.added;
}
