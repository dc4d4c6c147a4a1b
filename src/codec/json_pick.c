/*
 * codec/json_pick: see json_pick.h. The scanner knows only where a value ends: strings
 * (escapes included), and brackets counted outside strings; what it skips it does not
 * check. A key written with an escape, nesting deeper than MAX_DEPTH or a text it cannot
 * follow sends the call to the whole parse, so the answer never depends on the shortcut.
 */
#include "codec/json_pick.h"

#include <stdbool.h>
#include <string.h>

#include "codec/json.h"

#define MAX_DEPTH 1000

typedef struct scanner {
    const char *p, *end;
} scanner;

static void skip_space(scanner *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* Past the string at s->p (its opening quote): to the first quote after it that an odd
 * run of backslashes does not escape, found with memchr (most of an object's bytes are in
 * its strings). */
static bool skip_string(scanner *s)
{
    const char *q = s->p + 1;
    for (;;) {
        const char *quote = memchr(q, '"', (size_t)(s->end - q));
        if (!quote)
            return false;
        const char *run = quote;
        while (run[-1] == '\\') /* the opening quote ends the run */
            run--;
        if ((quote - run) % 2 == 0) {
            s->p = quote + 1;
            return true;
        }
        q = quote + 1;
    }
}

static bool is_delimiter(char c)
{
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Past the value at s->p. */
static bool skip_value(scanner *s)
{
    if (s->p >= s->end)
        return false;
    if (*s->p == '"')
        return skip_string(s);
    if (*s->p != '{' && *s->p != '[') {
        const char *start = s->p;
        while (s->p < s->end && !is_delimiter(*s->p))
            s->p++;
        return s->p > start;
    }
    int depth = 0;
    while (s->p < s->end) {
        char c = *s->p;
        if (c == '"') {
            if (!skip_string(s))
                return false;
            continue;
        }
        if ((c == '{' || c == '[') && ++depth > MAX_DEPTH)
            return false;
        if ((c == '}' || c == ']') && --depth == 0) {
            s->p++;
            return true;
        }
        s->p++;
    }
    return false;
}

/* One member of an object: its name (as written, no escapes) and its value's text. */
typedef struct member {
    const char *key, *value;
    size_t key_len, value_len;
} member;

typedef bool (*member_fn)(void *ctx, const member *m);

/* Calls fn with each member of the object at s->p, in order; false when the text is not
 * an object the scanner can follow, or fn said stop. */
static bool each_member(scanner *s, member_fn fn, void *ctx)
{
    skip_space(s);
    if (s->p >= s->end || *s->p != '{')
        return false;
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        member m;
        skip_space(s);
        if (s->p >= s->end || *s->p != '"')
            return false;
        m.key = s->p + 1;
        if (!skip_string(s))
            return false;
        m.key_len = (size_t)(s->p - 1 - m.key);
        if (memchr(m.key, '\\', m.key_len))
            return false;
        skip_space(s);
        if (s->p >= s->end || *s->p != ':')
            return false;
        s->p++;
        skip_space(s);
        m.value = s->p;
        if (!skip_value(s))
            return false;
        m.value_len = (size_t)(s->p - m.value);
        if (!fn(ctx, &m))
            return false;
        skip_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return true;
        }
        return false;
    }
}

static bool key_is(const member *m, const char *key)
{
    return strlen(key) == m->key_len && memcmp(m->key, key, m->key_len) == 0;
}

typedef struct finding {
    const char *within;
    bool first; /* stop at the first member named within */
    member found;
    bool seen;
} finding;

/* Notes the last member named f->within (the first, with f->first: the scan stops). */
static bool find(void *ctx, const member *m)
{
    finding *f = ctx;
    if (key_is(m, f->within)) {
        f->found = *m;
        f->seen = true;
    }
    return !(f->seen && f->first);
}

typedef struct picking {
    const char *const *keys;
    json_t *out;
} picking;

/* Parses the member into out when it is one of the keys. */
static bool pick(void *ctx, const member *m)
{
    picking *k = ctx;
    for (const char *const *key = k->keys; *key; key++) {
        if (!key_is(m, *key))
            continue;
        json_t *v = kapi_json_parse(m->value, m->value_len, NULL);
        if (!v)
            return false;
        json_object_set_new_nocheck(k->out, *key, v);
        return true;
    }
    return true;
}

/* The whole parse, picked: for the texts the scanner does not follow. */
static json_t *pick_parsed(const char *p, size_t n, const char *within, const char *const *keys)
{
    json_t *all = kapi_json_parse(p, n, NULL), *out = NULL;
    const json_t *obj = json_object_get(all, within);
    if (json_is_object(all) && json_is_object(obj)) {
        out = json_object();
        for (const char *const *key = keys; *key; key++) {
            json_t *v = json_object_get(obj, *key);
            if (v)
                json_object_set_nocheck(out, *key, v);
        }
    }
    json_decref(all);
    return out;
}

static json_t *pick_from(const char *p, size_t n, const char *within, const char *const *keys,
                         bool first)
{
    scanner s = {p, p + n};
    finding f = {.within = within, .first = first};
    if (!each_member(&s, find, &f) && !(f.seen && first))
        return pick_parsed(p, n, within, keys);
    if (!f.seen)
        return NULL;
    if (*f.found.value != '{')
        return NULL;
    scanner in = {f.found.value, f.found.value + f.found.value_len};
    picking k = {keys, json_object()};
    if (each_member(&in, pick, &k))
        return k.out;
    json_decref(k.out);
    return pick_parsed(p, n, within, keys);
}

json_t *kapi_json_pick(const char *p, size_t n, const char *within, const char *const *keys)
{
    return pick_from(p, n, within, keys, false);
}

json_t *kapi_json_pick_unique(const char *p, size_t n, const char *within, const char *const *keys)
{
    return pick_from(p, n, within, keys, true);
}

typedef struct texting {
    const char *const *keys;
    kapi_str *texts;
} texting;

/* Notes the member's text when it is one of the keys. */
static bool text_of(void *ctx, const member *m)
{
    texting *t = ctx;
    for (size_t i = 0; t->keys[i]; i++)
        if (key_is(m, t->keys[i]))
            t->texts[i] = (kapi_str){m->value, m->value_len};
    return true;
}

bool kapi_json_member_texts(const char *p, size_t n, const char *const *keys, kapi_str *texts)
{
    scanner s = {p, p + n};
    for (size_t i = 0; keys[i]; i++)
        texts[i] = KAPI_STR_NULL;
    texting t = {keys, texts};
    return each_member(&s, text_of, &t);
}
