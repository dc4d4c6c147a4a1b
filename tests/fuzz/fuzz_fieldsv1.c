/*
 * fuzz_fieldsv1: FieldsV1 objects (metadata.managedFields[].fieldsV1) as clients send
 * them, read as Set.FromJSON reads them (smd/smd.h). A set that reads is a fixpoint: its
 * bytes read back as an equal set that writes the same bytes, its jansson form encodes
 * to those bytes, it holds every path it iterates, and inserting those paths into a new
 * set builds it again.
 *
 * An input that is an array of two FieldsV1 objects [x, y] also checks the set
 * operations by membership: the union holds the paths of both, the intersection those
 * of both, the difference those of x not in y, the recursive difference those of x
 * neither in y nor below a path of y; each result is a fixpoint too, and x and y write
 * the same bytes afterwards.
 */
#include "codec/json.h"
#include "fuzz.h"
#include "smd/smd.h"

static void broken(const char *what, const char *a, const char *b)
{
    fprintf(stderr, "%s\n%s\n%s\n", what, a, b ? b : "");
    abort();
}

/* s as FieldsV1 bytes, in a (NUL-terminated). */
static const char *bytes_of(kapi_arena *a, const kapi_smd_set *s)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_smd_set_to_json(&b, s);
    const char *out = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

/* The set of a JSON value, or NULL when it does not read. */
static kapi_smd_set *read_value(kapi_arena *a, const json_t *v)
{
    kapi_smd_set *s = NULL;
    const char *why = NULL;
    if (!kapi_smd_set_from_json(a, v, &s, &why))
        return NULL;
    if (!s)
        broken("a set that reads is NULL", "", NULL);
    return s;
}

/* The set kapi's own FieldsV1 bytes read as: it must read. */
static kapi_smd_set *read_back(kapi_arena *a, const char *text)
{
    char *err = NULL;
    json_t *v = kapi_json_parse(text, strlen(text), &err);
    if (!v)
        broken("FieldsV1 kapi wrote is not JSON", text, err);
    kapi_smd_set *s = NULL;
    const char *why = NULL;
    if (!kapi_smd_set_from_json(a, v, &s, &why))
        broken("FieldsV1 kapi wrote does not read", text, why);
    json_decref(v);
    return s;
}

typedef struct rebuild {
    kapi_arena *a;
    const kapi_smd_set *of;
    kapi_smd_set *into;
    kapi_buf text;
} rebuild;

static void visit(kapi_smd_path p, void *ctx)
{
    rebuild *r = ctx;
    if (!kapi_smd_set_has(r->of, p))
        broken("an iterated path is not in its set", bytes_of(r->a, r->of), NULL);
    kapi_buf_clear(&r->text);
    kapi_smd_path_format(&r->text, p);
    kapi_smd_pe_key(&r->text, &p.pe[p.n - 1]);
    /* The path is borrowed for the call: the copy of its steps goes into the new set. */
    kapi_smd_pe *steps = kapi_arena_alloc(r->a, p.n * sizeof(*steps));
    memcpy(steps, p.pe, p.n * sizeof(*steps));
    kapi_smd_set_insert(r->a, r->into, (kapi_smd_path){steps, p.n});
}

static void check_fixpoint(kapi_arena *a, const kapi_smd_set *s)
{
    const char *text = bytes_of(a, s);
    kapi_smd_set *again = read_back(a, text);
    if (!kapi_smd_set_equal(s, again))
        broken("FieldsV1 reads back as another set", text, bytes_of(a, again));
    if (strcmp(bytes_of(a, again), text) != 0)
        broken("FieldsV1 is not a fixpoint", text, bytes_of(a, again));
    json_t *j = kapi_smd_set_to_jansson(s);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, j);
    if (strcmp(b.ptr, text) != 0)
        broken("to_jansson encodes otherwise than to_json", text, b.ptr);
    kapi_buf_dispose(&b);
    json_decref(j);
    rebuild r = {.a = a, .of = s, .into = kapi_smd_set_new(a)};
    kapi_buf_init(&r.text);
    kapi_smd_set_iterate(s, visit, &r);
    kapi_buf_dispose(&r.text);
    if (!kapi_smd_set_equal(s, r.into))
        broken("inserting the paths of a set builds another", text, bytes_of(a, r.into));
}

/* What one operation on x and y must hold. */
typedef struct op_check {
    kapi_arena *a;
    const kapi_smd_set *x, *y, *result;
    const char *name;
    bool (*want)(const struct op_check *c, kapi_smd_path p);
} op_check;

static bool in(const kapi_smd_set *s, kapi_smd_path p)
{
    return kapi_smd_set_has(s, p);
}

/* True if a proper prefix of p is a path of s: one walk down s along p. */
static bool below(const kapi_smd_set *s, kapi_smd_path p)
{
    for (size_t n = 0; n + 1 < p.n; n++) {
        if (kapi_smd_set_has(s, (kapi_smd_path){&p.pe[n], 1}))
            return true;
        s = kapi_smd_set_child(s, &p.pe[n]);
    }
    return false;
}

static bool want_union(const op_check *c, kapi_smd_path p)
{
    return in(c->x, p) || in(c->y, p);
}

static bool want_intersection(const op_check *c, kapi_smd_path p)
{
    return in(c->x, p) && in(c->y, p);
}

static bool want_difference(const op_check *c, kapi_smd_path p)
{
    return in(c->x, p) && !in(c->y, p);
}

static bool want_recursive_difference(const op_check *c, kapi_smd_path p)
{
    return in(c->x, p) && !in(c->y, p) && !below(c->y, p);
}

static void check_path(kapi_smd_path p, void *ctx)
{
    const op_check *c = ctx;
    if (in(c->result, p) != c->want(c, p))
        broken(c->name, bytes_of(c->a, c->x), bytes_of(c->a, c->y));
}

static const struct {
    const char *name;
    kapi_smd_set *(*fn)(kapi_arena *, const kapi_smd_set *, const kapi_smd_set *);
    bool (*want)(const op_check *c, kapi_smd_path p);
} ops[] = {
    {"union", kapi_smd_set_union, want_union},
    {"intersection", kapi_smd_set_intersection, want_intersection},
    {"difference", kapi_smd_set_difference, want_difference},
    {"recursive difference", kapi_smd_set_recursive_difference, want_recursive_difference},
};

/* Each operation, checked on every path of x, of y and of its result. */
static void check_ops(kapi_arena *a, const kapi_smd_set *x, const kapi_smd_set *y)
{
    const char *bx = bytes_of(a, x), *by = bytes_of(a, y);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ops); i++) {
        op_check c = {a, x, y, ops[i].fn(a, x, y), ops[i].name, ops[i].want};
        kapi_smd_set_iterate(x, check_path, &c);
        kapi_smd_set_iterate(y, check_path, &c);
        kapi_smd_set_iterate(c.result, check_path, &c);
        check_fixpoint(a, c.result);
    }
    if (strcmp(bytes_of(a, x), bx) != 0 || strcmp(bytes_of(a, y), by) != 0)
        broken("an operation changed its arguments", bx, by);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    char *err = NULL;
    json_t *v = kapi_json_parse((const char *)data, size, &err);
    free(err);
    if (!v)
        return 0;
    kapi_arena a;
    kapi_arena_init(&a);
    bool pair = json_is_array(v) && json_array_size(v) == 2;
    kapi_smd_set *x = read_value(&a, pair ? json_array_get(v, 0) : v);
    kapi_smd_set *y = pair ? read_value(&a, json_array_get(v, 1)) : NULL;
    if (x)
        check_fixpoint(&a, x);
    if (y)
        check_fixpoint(&a, y);
    if (x && y)
        check_ops(&a, x, y);
    json_decref(v);
    kapi_arena_dispose(&a);
    return 0;
}
