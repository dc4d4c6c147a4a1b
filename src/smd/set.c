/*
 * smd/set: the first layer of smd.h: values, path elements, paths and sets. It is
 * structured-merge-diff v4.2.3's value package (Compare, ToString, the JSON SMD writes a
 * value as) and its fieldpath package (PathElement, Path, Set with its SetNodeMap, the
 * FieldsV1 reader and writer), with the json-iterator v1.1.12 SMD writes and reads through.
 *
 * A set is two sorted arrays: the steps that end there and the steps that lead further.
 * An operation makes new arrays and shares each child set it keeps unchanged, as Go does;
 * which operations keep an empty child set and which drop one is Go's too (the rules
 * table below).
 */
#include "smd/smd.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"

/* ---- values ---- */

/* strings.Compare: bytewise, a prefix first. */
static int str_cmp(kapi_str x, kapi_str y)
{
    size_t n = x.len < y.len ? x.len : y.len;
    if (n && x.ptr[0] != y.ptr[0]) /* most names differ there: no memcmp call */
        return (unsigned char)x.ptr[0] < (unsigned char)y.ptr[0] ? -1 : 1;
    int c = n ? memcmp(x.ptr, y.ptr, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return x.len < y.len ? -1 : x.len > y.len;
}

static kapi_str arena_str(kapi_arena *a, const char *p, size_t n)
{
    return (kapi_str){n ? kapi_arena_strndup(a, p, n) : "", n};
}

static int field_order(const void *x, const void *y)
{
    return str_cmp(((const kapi_smd_field *)x)->name, ((const kapi_smd_field *)y)->name);
}

static kapi_smd_value list_of(kapi_arena *a, const json_t *v)
{
    size_t n = json_array_size(v);
    kapi_smd_value *items = kapi_arena_alloc(a, n * sizeof(*items));
    for (size_t i = 0; i < n; i++)
        items[i] = kapi_smd_value_of(a, json_array_get(v, i));
    return (kapi_smd_value){.kind = KAPI_SMD_LIST, .u.list = {items, n}};
}

static kapi_smd_value map_of(kapi_arena *a, const json_t *v)
{
    kapi_smd_field *fields = kapi_arena_alloc(a, json_object_size(v) * sizeof(*fields));
    size_t n = 0, len;
    const char *key;
    json_t *m;
    json_object_keylen_foreach((json_t *)v, key, len, m)
    {
        fields[n].name = arena_str(a, key, len);
        fields[n++].value = kapi_smd_value_of(a, m);
    }
    if (n > 1)
        qsort(fields, n, sizeof(*fields), field_order);
    return (kapi_smd_value){.kind = KAPI_SMD_MAP, .u.map = {fields, n}};
}

kapi_smd_value kapi_smd_value_of(kapi_arena *a, const json_t *v)
{
    kapi_smd_value out = {.kind = KAPI_SMD_NULL};
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
        return map_of(a, v);
    case JSON_ARRAY:
        return list_of(a, v);
    case JSON_STRING:
        out.kind = KAPI_SMD_STRING;
        out.u.s = arena_str(a, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        out.kind = KAPI_SMD_INT;
        out.u.i = json_integer_value(v);
        break;
    case JSON_REAL:
        out.kind = KAPI_SMD_FLOAT;
        out.u.f = json_real_value(v);
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        out.kind = KAPI_SMD_BOOL;
        out.u.b = json_is_true(v);
        break;
    case JSON_NULL:
        break;
    }
    return out;
}

static double as_float(const kapi_smd_value *v)
{
    return v->kind == KAPI_SMD_INT ? (double)v->u.i : v->u.f;
}

/* Two numbers: integers exactly, else both as float64 (FloatCompare). */
static int numbers_cmp(const kapi_smd_value *x, const kapi_smd_value *y)
{
    if (x->kind == KAPI_SMD_INT && y->kind == KAPI_SMD_INT)
        return x->u.i < y->u.i ? -1 : x->u.i > y->u.i;
    double fx = as_float(x), fy = as_float(y);
    return fx < fy ? -1 : fx > fy;
}

static int strings_cmp(const kapi_smd_value *x, const kapi_smd_value *y)
{
    return str_cmp(x->u.s, y->u.s);
}

static int bools_cmp(const kapi_smd_value *x, const kapi_smd_value *y)
{
    return (int)x->u.b - (int)y->u.b;
}

/* Item by item, a shorter list first when it is a prefix (ListCompare). */
static int lists_cmp(const kapi_smd_value *x, const kapi_smd_value *y)
{
    size_t n = x->u.list.n < y->u.list.n ? x->u.list.n : y->u.list.n;
    for (size_t i = 0; i < n; i++) {
        int c = kapi_smd_value_cmp(&x->u.list.items[i], &y->u.list.items[i]);
        if (c)
            return c;
    }
    return x->u.list.n < y->u.list.n ? -1 : x->u.list.n > y->u.list.n;
}

/* FieldList.Compare: name, then value, field by field; a shorter list first when it is a
 * prefix. MapCompare of two maps is this on their fields in name order. */
static int fields_cmp(const kapi_smd_field *x, size_t nx, const kapi_smd_field *y, size_t ny)
{
    for (size_t i = 0; i < nx && i < ny; i++) {
        int c = str_cmp(x[i].name, y[i].name);
        if (!c)
            c = kapi_smd_value_cmp(&x[i].value, &y[i].value);
        if (c)
            return c;
    }
    return nx < ny ? -1 : nx > ny;
}

static int maps_cmp(const kapi_smd_value *x, const kapi_smd_value *y)
{
    return fields_cmp(x->u.map.fields, x->u.map.n, y->u.map.fields, y->u.map.n);
}

static int nulls_cmp(const kapi_smd_value *x, const kapi_smd_value *y)
{
    (void)x;
    (void)y;
    return 0;
}

static void put_int(kapi_buf *b, int64_t i)
{
    kapi_buf_printf(b, "%" PRId64, i);
}

/* The fixed form ('f', shortest) of g, kapi_go_format_float's exponent form of a number
 * ("-1.5e+07"): its digits are already the shortest that read back. */
static void put_fixed(kapi_buf *b, const char *g, const char *e)
{
    char d[32];
    long nd = 0;
    if (*g == '-')
        kapi_buf_putc(b, *g++);
    for (; g < e; g++) {
        if (*g != '.')
            d[nd++] = *g;
    }
    long dp = strtol(e + 1, NULL, 10) + 1; /* digits before the point */
    if (dp <= 0) {
        kapi_buf_puts(b, "0.");
        for (long i = dp; i < 0; i++)
            kapi_buf_putc(b, '0');
        kapi_buf_put(b, d, (size_t)nd);
        return;
    }
    for (long i = 0; i < dp; i++)
        kapi_buf_putc(b, i < nd ? d[i] : '0');
    if (nd > dp) {
        kapi_buf_putc(b, '.');
        kapi_buf_put(b, d + dp, (size_t)(nd - dp));
    }
}

/* json-iterator v1.1.12's WriteFloat64, which SMD's values are written with: strconv's
 * shortest 'f' form, and its 'e' form below 1e-6 and from 1e21. Unlike encoding/json,
 * that jsoniter keeps the exponent's two digits: 1e-07, 1e+21. */
static void put_float(kapi_buf *b, double x)
{
    char g[40];
    kapi_go_format_float(g, x, 64);
    const char *e = strchr(g, 'e');
    if (!e || fabs(x) < 1e-6 || fabs(x) >= 1e21) {
        kapi_buf_puts(b, g); /* 'g' is 'f' or 'e' exactly where WriteFloat64 uses them */
        return;
    }
    put_fixed(b, g, e);
}

static void null_json(kapi_buf *b, const kapi_smd_value *v)
{
    (void)v;
    kapi_buf_puts(b, "null");
}

static void bool_json(kapi_buf *b, const kapi_smd_value *v)
{
    kapi_buf_puts(b, v->u.b ? "true" : "false");
}

static void int_json(kapi_buf *b, const kapi_smd_value *v)
{
    put_int(b, v->u.i);
}

static void float_json(kapi_buf *b, const kapi_smd_value *v)
{
    put_float(b, v->u.f);
}

static void string_json(kapi_buf *b, const kapi_smd_value *v)
{
    kapi_json_put_string(b, v->u.s.ptr, v->u.s.len);
}

static void list_json(kapi_buf *b, const kapi_smd_value *v)
{
    kapi_buf_putc(b, '[');
    for (size_t i = 0; i < v->u.list.n; i++) {
        if (i)
            kapi_buf_putc(b, ',');
        kapi_smd_value_json(b, &v->u.list.items[i]);
    }
    kapi_buf_putc(b, ']');
}

static void map_json(kapi_buf *b, const kapi_smd_value *v)
{
    kapi_buf_putc(b, '{');
    for (size_t i = 0; i < v->u.map.n; i++) {
        const kapi_smd_field *f = &v->u.map.fields[i];
        if (i)
            kapi_buf_putc(b, ',');
        kapi_json_put_string(b, f->name.ptr, f->name.len);
        kapi_buf_putc(b, ':');
        kapi_smd_value_json(b, &f->value);
    }
    kapi_buf_putc(b, '}');
}

static void put_text(kapi_buf *b, const kapi_smd_value *v);

static void float_text(kapi_buf *b, const kapi_smd_value *v)
{
    char g[40];
    kapi_go_format_float(g, v->u.f, 64);
    kapi_buf_puts(b, g);
}

static void string_text(kapi_buf *b, const kapi_smd_value *v)
{
    kapi_go_quote(b, v->u.s.ptr, v->u.s.len);
}

static void list_text(kapi_buf *b, const kapi_smd_value *v)
{
    kapi_buf_putc(b, '[');
    for (size_t i = 0; i < v->u.list.n; i++) {
        if (i)
            kapi_buf_putc(b, ',');
        put_text(b, &v->u.list.items[i]);
    }
    kapi_buf_putc(b, ']');
}

/* Go joins a map's name=value pairs with nothing between them, in its map order (which
 * is random); here they come in name order. */
static void map_text(kapi_buf *b, const kapi_smd_value *v)
{
    for (size_t i = 0; i < v->u.map.n; i++) {
        kapi_buf_put(b, v->u.map.fields[i].name.ptr, v->u.map.fields[i].name.len);
        kapi_buf_putc(b, '=');
        put_text(b, &v->u.map.fields[i].value);
    }
}

/* What each kind of value does: its place in value.Compare's order of kinds (numbers,
 * strings, booleans, lists, maps, null) and how it compares with a value of the same
 * place, how SMD writes it as JSON, and value.ToString. */
static const struct {
    int rank;
    int (*cmp)(const kapi_smd_value *, const kapi_smd_value *);
    void (*json)(kapi_buf *, const kapi_smd_value *);
    void (*text)(kapi_buf *, const kapi_smd_value *);
} kinds[] = {
    [KAPI_SMD_NULL] = {5, nulls_cmp, null_json, null_json},
    [KAPI_SMD_BOOL] = {2, bools_cmp, bool_json, bool_json},
    [KAPI_SMD_INT] = {0, numbers_cmp, int_json, int_json},
    [KAPI_SMD_FLOAT] = {0, numbers_cmp, float_json, float_text},
    [KAPI_SMD_STRING] = {1, strings_cmp, string_json, string_text},
    [KAPI_SMD_LIST] = {3, lists_cmp, list_json, list_text},
    [KAPI_SMD_MAP] = {4, maps_cmp, map_json, map_text},
};

int kapi_smd_value_cmp(const kapi_smd_value *x, const kapi_smd_value *y)
{
    int rx = kinds[x->kind].rank, ry = kinds[y->kind].rank;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return kinds[x->kind].cmp(x, y);
}

void kapi_smd_value_json(kapi_buf *b, const kapi_smd_value *v)
{
    kinds[v->kind].json(b, v);
}

/* value.ToString. */
static void put_text(kapi_buf *b, const kapi_smd_value *v)
{
    kinds[v->kind].text(b, v);
}

/* ---- path elements and paths ---- */

/* json-iterator's Stream.WriteString, with which SMD writes a key field's name: quotes,
 * backslashes and control characters escaped, every other byte as it is (no HTML
 * escaping, no UTF-8 check: the FieldsV1 key it ends up in is escaped as a whole). */
static void put_plain_string(kapi_buf *b, kapi_str s)
{
    static const char hex[] = "0123456789abcdef";
    kapi_buf_putc(b, '"');
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                                      : NULL;
        if (esc)
            kapi_buf_puts(b, esc);
        else if (c < 0x20)
            kapi_buf_printf(b, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
        else
            kapi_buf_putc(b, (char)c);
    }
    kapi_buf_putc(b, '"');
}

static void field_key(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_buf_put(b, pe->name.ptr, pe->name.len);
}

static void key_key(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_buf_putc(b, '{');
    for (size_t i = 0; i < pe->nkeys; i++) {
        if (i)
            kapi_buf_putc(b, ',');
        put_plain_string(b, pe->keys[i].name);
        kapi_buf_putc(b, ':');
        kapi_smd_value_json(b, &pe->keys[i].value);
    }
    kapi_buf_putc(b, '}');
}

static void value_key(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_smd_value_json(b, &pe->value);
}

static void index_key(kapi_buf *b, const kapi_smd_pe *pe)
{
    put_int(b, pe->index);
}

static void field_path(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_buf_putc(b, '.');
    kapi_buf_put(b, pe->name.ptr, pe->name.len);
}

static void key_path(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_buf_putc(b, '[');
    for (size_t i = 0; i < pe->nkeys; i++) {
        if (i)
            kapi_buf_putc(b, ',');
        kapi_buf_put(b, pe->keys[i].name.ptr, pe->keys[i].name.len);
        kapi_buf_putc(b, '=');
        put_text(b, &pe->keys[i].value);
    }
    kapi_buf_putc(b, ']');
}

static void value_path(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_buf_puts(b, "[=");
    put_text(b, &pe->value);
    kapi_buf_putc(b, ']');
}

static void index_path(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_buf_putc(b, '[');
    put_int(b, pe->index);
    kapi_buf_putc(b, ']');
}

static bool read_field(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why);
static bool read_key(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why);
static bool read_value(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why);
static bool read_index(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why);

/* What each kind of path element does: its FieldsV1 prefix letter, the FieldsV1 key after
 * "<letter>:", its part of Path.String, and the reader of a FieldsV1 key of its letter. */
static const struct {
    char letter;
    void (*key)(kapi_buf *, const kapi_smd_pe *);
    void (*path)(kapi_buf *, const kapi_smd_pe *);
    bool (*read)(kapi_arena *, kapi_str, kapi_smd_pe *, const char **);
} pe_kinds[] = {
    [KAPI_SMD_PE_FIELD] = {'f', field_key, field_path, read_field},
    [KAPI_SMD_PE_KEY] = {'k', key_key, key_path, read_key},
    [KAPI_SMD_PE_VALUE] = {'v', value_key, value_path, read_value},
    [KAPI_SMD_PE_INDEX] = {'i', index_key, index_path, read_index},
};

/* The kinds compare in the order of the enum, which is Go's: fields, keys, values,
 * indexes. */
int kapi_smd_pe_cmp(const kapi_smd_pe *x, const kapi_smd_pe *y)
{
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    switch (x->kind) {
    case KAPI_SMD_PE_FIELD:
        return str_cmp(x->name, y->name);
    case KAPI_SMD_PE_KEY:
        return fields_cmp(x->keys, x->nkeys, y->keys, y->nkeys);
    case KAPI_SMD_PE_VALUE:
        return kapi_smd_value_cmp(&x->value, &y->value);
    case KAPI_SMD_PE_INDEX:
        break;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

void kapi_smd_path_format(kapi_buf *b, kapi_smd_path p)
{
    for (size_t i = 0; i < p.n; i++)
        pe_kinds[p.pe[i].kind].path(b, &p.pe[i]);
}

void kapi_smd_pe_key(kapi_buf *b, const kapi_smd_pe *pe)
{
    kapi_buf_putc(b, pe_kinds[pe->kind].letter);
    kapi_buf_putc(b, ':');
    pe_kinds[pe->kind].key(b, pe);
}

/* ---- sets ---- */

static const kapi_smd_set empty_set;

kapi_smd_set *kapi_smd_set_new(kapi_arena *a)
{
    return kapi_arena_alloc(a, sizeof(kapi_smd_set));
}

/* The position in base[0..n) (elements of stride bytes, each starting with a path
 * element) of the first element not less than pe; *found when it equals pe. */
static size_t search(const void *base, size_t n, size_t stride, const kapi_smd_pe *pe, bool *found)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (kapi_smd_pe_cmp((const void *)((const char *)base + mid * stride), pe) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < n && kapi_smd_pe_cmp((const void *)((const char *)base + lo * stride), pe) == 0;
    return lo;
}

static size_t find_member(const kapi_smd_set *s, const kapi_smd_pe *pe, bool *found)
{
    return search(s->members, s->nmembers, sizeof(*s->members), pe, found);
}

static size_t find_child(const kapi_smd_set *s, const kapi_smd_pe *pe, bool *found)
{
    return search(s->children, s->nchildren, sizeof(*s->children), pe, found);
}

static bool has_member(const kapi_smd_set *s, const kapi_smd_pe *pe)
{
    bool found;
    find_member(s, pe, &found);
    return found;
}

/* p, or a copy of its n elements of size bytes in a new block of twice the capacity
 * when it is full. */
static void *grow(kapi_arena *a, void *p, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return p;
    *cap = *cap ? 2 * *cap : 4;
    void *q = kapi_arena_alloc(a, *cap * size);
    if (n)
        memcpy(q, p, n * size);
    return q;
}

/* Adds pe to the members unless an equal one is there (Go keeps the one it has). */
static void add_member(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe)
{
    bool found;
    size_t at = find_member(s, pe, &found);
    if (found)
        return;
    s->members = grow(a, s->members, s->nmembers, &s->members_cap, sizeof(*s->members));
    memmove(s->members + at + 1, s->members + at, (s->nmembers - at) * sizeof(*s->members));
    s->members[at] = *pe;
    s->nmembers++;
}

/* The child at pe, made empty when there is none (SetNodeMap.Descend). */
static kapi_smd_child *descend(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe)
{
    bool found;
    size_t at = find_child(s, pe, &found);
    if (found)
        return &s->children[at];
    s->children = grow(a, s->children, s->nchildren, &s->children_cap, sizeof(*s->children));
    memmove(s->children + at + 1, s->children + at, (s->nchildren - at) * sizeof(*s->children));
    s->children[at] = (kapi_smd_child){*pe, kapi_smd_set_new(a)};
    s->nchildren++;
    return &s->children[at];
}

void kapi_smd_set_insert(kapi_arena *a, kapi_smd_set *s, kapi_smd_path p)
{
    if (p.n == 0)
        return; /* the whole object: nobody owns it */
    for (size_t i = 0; i + 1 < p.n; i++)
        s = descend(a, s, &p.pe[i])->set;
    add_member(a, s, &p.pe[p.n - 1]);
}

kapi_smd_set *kapi_smd_set_descend(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe)
{
    return descend(a, s, pe)->set;
}

void kapi_smd_set_graft(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe, kapi_smd_set *child)
{
    descend(a, s, pe)->set = child;
}

bool kapi_smd_set_empty(const kapi_smd_set *s)
{
    if (s->nmembers)
        return false;
    for (size_t i = 0; i < s->nchildren; i++) {
        if (!kapi_smd_set_empty(s->children[i].set))
            return false;
    }
    return true;
}

bool kapi_smd_set_has(const kapi_smd_set *s, kapi_smd_path p)
{
    if (p.n == 0)
        return false;
    for (size_t i = 0; i + 1 < p.n; i++) {
        s = kapi_smd_set_child(s, &p.pe[i]);
        if (s == &empty_set)
            return false;
    }
    return has_member(s, &p.pe[p.n - 1]);
}

/* Same members, and the same children with equal sets, empty ones included (Set.Equals
 * compares the trees). */
bool kapi_smd_set_equal(const kapi_smd_set *x, const kapi_smd_set *y)
{
    if (x->nmembers != y->nmembers || x->nchildren != y->nchildren)
        return false;
    for (size_t i = 0; i < x->nmembers; i++) {
        if (kapi_smd_pe_cmp(&x->members[i], &y->members[i]) != 0)
            return false;
    }
    for (size_t i = 0; i < x->nchildren; i++) {
        if (kapi_smd_pe_cmp(&x->children[i].pe, &y->children[i].pe) != 0 ||
            !kapi_smd_set_equal(x->children[i].set, y->children[i].set))
            return false;
    }
    return true;
}

const kapi_smd_set *kapi_smd_set_child(const kapi_smd_set *s, const kapi_smd_pe *pe)
{
    bool found;
    size_t at = find_child(s, pe, &found);
    return found ? s->children[at].set : &empty_set;
}

/* How one set operation treats what only x has, only y has, and what both have. */
typedef struct op_rule {
    bool x_only, y_only; /* keep a member or a child only that side has */
    char both;           /* a member of both: 'x' or 'y' keeps that side's element, 0 none */
    bool drop_empty;     /* drop a child of both whose computed set is empty */
    bool cut;            /* drop x's child at a member of y, and all below it */
    kapi_smd_set *(*child)(kapi_arena *, const kapi_smd_set *, const kapi_smd_set *);
} op_rule;

enum { OP_UNION, OP_INTERSECTION, OP_DIFFERENCE, OP_RECURSIVE_DIFFERENCE };

/* Set.Union, Intersection, Difference and RecursiveDifference, from PathElementSet's and
 * SetNodeMap's loops. Union keeps the child sets of one side (empty ones too) and the
 * union of both sides' even when empty; Difference keeps x's child sets that y has no
 * child for, empty ones too, and drops a difference that comes out empty. */
static const op_rule rules[] = {
    [OP_UNION] = {true, true, 'y', false, false, kapi_smd_set_union},
    [OP_INTERSECTION] = {false, false, 'x', true, false, kapi_smd_set_intersection},
    [OP_DIFFERENCE] = {true, false, 0, true, false, kapi_smd_set_difference},
    [OP_RECURSIVE_DIFFERENCE] = {true, false, 0, true, true, kapi_smd_set_recursive_difference},
};

/* Whether x's step i (of nx, stride bytes apart) comes before (<0), with (0) or after (>0)
 * y's step j (of ny); a side that has run out comes last. */
static int merge_cmp(const void *x, size_t i, size_t nx, const void *y, size_t j, size_t ny,
                     size_t stride)
{
    if (i == nx || j == ny)
        return i == nx ? 1 : -1;
    return kapi_smd_pe_cmp((const void *)((const char *)x + i * stride),
                           (const void *)((const char *)y + j * stride));
}

static void combine_members(kapi_smd_set *out, const kapi_smd_set *x, const kapi_smd_set *y,
                            const op_rule *r)
{
    size_t i = 0, j = 0, stride = sizeof(*x->members);
    while (i < x->nmembers || j < y->nmembers) {
        int c = merge_cmp(x->members, i, x->nmembers, y->members, j, y->nmembers, stride);
        const kapi_smd_pe *keep = NULL;
        if (c < 0 && r->x_only)
            keep = &x->members[i];
        else if (c > 0 && r->y_only)
            keep = &y->members[j];
        else if (c == 0 && r->both)
            keep = r->both == 'x' ? &x->members[i] : &y->members[j];
        if (keep)
            out->members[out->nmembers++] = *keep;
        i += c <= 0;
        j += c >= 0;
    }
}

/* A child only x has, kept as it is (shared) if the rule keeps it. */
static void only_x(kapi_smd_set *out, const kapi_smd_child *c, const kapi_smd_set *y,
                   const op_rule *r)
{
    if (r->x_only && !(r->cut && has_member(y, &c->pe)))
        out->children[out->nchildren++] = *c;
}

/* A child both have: the operation on the two sets, under x's element. */
static void both(kapi_arena *a, kapi_smd_set *out, const kapi_smd_child *cx,
                 const kapi_smd_child *cy, const kapi_smd_set *y, const op_rule *r)
{
    if (r->cut && has_member(y, &cx->pe))
        return;
    kapi_smd_set *s = r->child(a, cx->set, cy->set);
    if (!(r->drop_empty && kapi_smd_set_empty(s)))
        out->children[out->nchildren++] = (kapi_smd_child){cx->pe, s};
}

static void combine_children(kapi_arena *a, kapi_smd_set *out, const kapi_smd_set *x,
                             const kapi_smd_set *y, const op_rule *r)
{
    size_t i = 0, j = 0, stride = sizeof(*x->children);
    while (i < x->nchildren || j < y->nchildren) {
        int c = merge_cmp(x->children, i, x->nchildren, y->children, j, y->nchildren, stride);
        if (c < 0)
            only_x(out, &x->children[i], y, r);
        else if (c > 0 && r->y_only)
            out->children[out->nchildren++] = y->children[j];
        else if (c == 0)
            both(a, out, &x->children[i], &y->children[j], y, r);
        i += c <= 0;
        j += c >= 0;
    }
}

/* How many of nx steps of x and ny of y rule r can keep. */
static size_t most_kept(size_t nx, size_t ny, const op_rule *r)
{
    if (r->x_only)
        return r->y_only ? nx + ny : nx;
    return r->y_only ? ny : nx < ny ? nx : ny;
}

static kapi_smd_set *combine(kapi_arena *a, const kapi_smd_set *x, const kapi_smd_set *y,
                             const op_rule *r)
{
    kapi_smd_set *out = kapi_smd_set_new(a);
    out->members_cap = most_kept(x->nmembers, y->nmembers, r);
    out->children_cap = most_kept(x->nchildren, y->nchildren, r);
    out->members = kapi_arena_alloc(a, out->members_cap * sizeof(*out->members));
    out->children = kapi_arena_alloc(a, out->children_cap * sizeof(*out->children));
    combine_members(out, x, y, r);
    combine_children(a, out, x, y, r);
    return out;
}

kapi_smd_set *kapi_smd_set_union(kapi_arena *a, const kapi_smd_set *x, const kapi_smd_set *y)
{
    return combine(a, x, y, &rules[OP_UNION]);
}

kapi_smd_set *kapi_smd_set_intersection(kapi_arena *a, const kapi_smd_set *x, const kapi_smd_set *y)
{
    return combine(a, x, y, &rules[OP_INTERSECTION]);
}

kapi_smd_set *kapi_smd_set_difference(kapi_arena *a, const kapi_smd_set *x, const kapi_smd_set *y)
{
    return combine(a, x, y, &rules[OP_DIFFERENCE]);
}

kapi_smd_set *kapi_smd_set_recursive_difference(kapi_arena *a, const kapi_smd_set *x,
                                                const kapi_smd_set *y)
{
    return combine(a, x, y, &rules[OP_RECURSIVE_DIFFERENCE]);
}

/* The path walked so far: a heap array the walk grows. */
typedef struct walk {
    kapi_smd_pe *pe;
    size_t n, cap;
    void (*fn)(kapi_smd_path p, void *ctx);
    void *ctx;
} walk;

static void walk_set(walk *w, const kapi_smd_set *s)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->pe = kapi_xrealloc(w->pe, w->cap * sizeof(*w->pe));
    }
    for (size_t i = 0; i < s->nmembers; i++) {
        w->pe[w->n] = s->members[i];
        w->fn((kapi_smd_path){w->pe, w->n + 1}, w->ctx);
    }
    for (size_t i = 0; i < s->nchildren; i++) {
        w->pe[w->n++] = s->children[i].pe;
        walk_set(w, s->children[i].set);
        w->n--;
    }
}

void kapi_smd_set_iterate(const kapi_smd_set *s, void (*fn)(kapi_smd_path p, void *ctx), void *ctx)
{
    walk w = {.fn = fn, .ctx = ctx};
    walk_set(&w, s);
    free(w.pe);
}

/* ---- FieldsV1 ---- */

/* One step of a set as FieldsV1 writes it: a member, a child, or both. */
typedef struct entry {
    const kapi_smd_pe *pe;
    const kapi_smd_set *child; /* NULL for a member only */
    bool member;
} entry;

/* The next step of s in emitContentsV1's order, members and children merged (a step
 * that is both is written with the child's element); false after the last. */
static bool next_entry(const kapi_smd_set *s, size_t *mi, size_t *ci, entry *e)
{
    if (*mi == s->nmembers && *ci == s->nchildren)
        return false;
    int c = *mi == s->nmembers    ? 1
            : *ci == s->nchildren ? -1
                                  : kapi_smd_pe_cmp(&s->members[*mi], &s->children[*ci].pe);
    *e = (entry){.member = c <= 0};
    if (c <= 0)
        e->pe = &s->members[(*mi)++];
    if (c >= 0) {
        e->pe = &s->children[*ci].pe;
        e->child = s->children[(*ci)++].set;
    }
    return true;
}

/* The members of a FieldsV1 object; self writes "." first, as a child set that is also
 * its parent's member has it (unless it is empty). key is scratch space. */
static void json_contents(kapi_buf *b, kapi_buf *key, const kapi_smd_set *s, bool self)
{
    size_t mi = 0, ci = 0;
    entry e;
    bool first = true;
    if (self && (s->nmembers || s->nchildren)) {
        kapi_buf_puts(b, "\".\":{}");
        first = false;
    }
    while (next_entry(s, &mi, &ci, &e)) {
        if (!first)
            kapi_buf_putc(b, ',');
        first = false;
        kapi_buf_clear(key);
        kapi_smd_pe_key(key, e.pe);
        kapi_json_put_string(b, key->ptr, key->len);
        kapi_buf_puts(b, ":{");
        if (e.child)
            json_contents(b, key, e.child, e.member);
        kapi_buf_putc(b, '}');
    }
}

void kapi_smd_set_to_json(kapi_buf *b, const kapi_smd_set *s)
{
    kapi_buf key;
    kapi_buf_init(&key);
    kapi_buf_putc(b, '{');
    json_contents(b, &key, s, false);
    kapi_buf_putc(b, '}');
    kapi_buf_dispose(&key);
}

static json_t *jansson_contents(kapi_buf *key, const kapi_smd_set *s, bool self)
{
    json_t *obj = json_object();
    size_t mi = 0, ci = 0;
    entry e;
    if (self && (s->nmembers || s->nchildren))
        json_object_set_new_nocheck(obj, ".", json_object());
    while (next_entry(s, &mi, &ci, &e)) {
        json_t *v = e.child ? jansson_contents(key, e.child, e.member) : json_object();
        kapi_buf_clear(key);
        kapi_smd_pe_key(key, e.pe);
        json_object_setn_new_nocheck(obj, key->ptr, key->len, v);
    }
    return obj;
}

json_t *kapi_smd_set_to_jansson(const kapi_smd_set *s)
{
    kapi_buf key;
    kapi_buf_init(&key);
    json_t *obj = jansson_contents(&key, s, false);
    kapi_buf_dispose(&key);
    return obj;
}

static bool fail(const char **why, const char *message)
{
    if (why)
        *why = message;
    return false;
}

/* Fails with `"<key>": what` (the key quoted as Go's %q) in a. */
static bool fail_key(kapi_arena *a, kapi_str key, const char *what, const char **why)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_quote(&b, key.ptr, key.len);
    kapi_buf_printf(&b, ": %s", what);
    const char *message = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return fail(why, message);
}

static bool read_field(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why)
{
    (void)why;
    pe->name = arena_str(a, key.ptr + 2, key.len - 2);
    return true;
}

/* The JSON after "k:" or "v:". json-iterator reads one value and ignores what follows
 * it, and reads every number as a float64; jansson is told to do the same. */
static json_t *parse_json(kapi_arena *a, kapi_str key, const char **why)
{
    json_error_t je;
    json_t *v = json_loadb(
        key.ptr + 2, key.len - 2,
        JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &je);
    if (!v)
        fail_key(a, key, je.text, why);
    return v;
}

/* An object of key fields (value.FieldList, sorted by name). Go also reads null and {} as
 * a key with no fields. */
static bool read_key(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why)
{
    json_t *v = parse_json(a, key, why);
    if (!v)
        return false;
    bool ok = json_is_object(v) || json_is_null(v);
    if (json_is_object(v)) {
        kapi_smd_value m = kapi_smd_value_of(a, v);
        pe->keys = m.u.map.fields;
        pe->nkeys = m.u.map.n;
    }
    json_decref(v);
    return ok || fail_key(a, key, "a key is not a JSON object", why);
}

static bool read_value(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why)
{
    json_t *v = parse_json(a, key, why);
    if (!v)
        return false;
    pe->value = kapi_smd_value_of(a, v);
    json_decref(v);
    return true;
}

/* strconv.Atoi (64-bit): an optional sign and decimal digits. Returns NULL, or the
 * NumError's reason: the range error comes at the digit that overflows uint64, before a
 * bad byte after it, as ParseUint finds them. */
static const char *atoi_go(kapi_str s, int64_t *out)
{
    size_t i = s.len && (s.ptr[0] == '+' || s.ptr[0] == '-');
    bool neg = i && s.ptr[0] == '-';
    uint64_t n = 0;
    if (i == s.len)
        return "invalid syntax";
    for (; i < s.len; i++) {
        unsigned d = (unsigned)(unsigned char)s.ptr[i] - '0';
        if (d > 9)
            return "invalid syntax";
        if (n > (UINT64_MAX - d) / 10)
            return "value out of range";
        n = n * 10 + d;
    }
    if (n > (uint64_t)INT64_MAX + neg)
        return "value out of range";
    *out = neg ? (int64_t)(0 - n) : (int64_t)n;
    return NULL;
}

static bool read_index(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, const char **why)
{
    kapi_str digits = {key.ptr + 2, key.len - 2};
    const char *reason = atoi_go(digits, &pe->index);
    if (!reason)
        return true;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "strconv.Atoi: parsing ");
    kapi_go_quote(&b, digits.ptr, digits.len);
    kapi_buf_printf(&b, ": %s", reason);
    const char *message = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return fail(why, message);
}

/* DeserializePathElement: *known stays false for a letter Go does not know (the key is
 * then skipped). */
static bool read_pe(kapi_arena *a, kapi_str key, kapi_smd_pe *pe, bool *known, const char **why)
{
    *known = false;
    if (key.len < 2)
        return fail(why, "key must be 2 characters long:");
    if (key.ptr[1] != ':')
        return fail(why, kapi_arena_printf(a, "missing colon: %.*s", KAPI_STR_FMT(key)));
    for (size_t k = 0; k < KAPI_ARRAY_LEN(pe_kinds); k++) {
        if (pe_kinds[k].letter != key.ptr[0])
            continue;
        *known = true;
        *pe = (kapi_smd_pe){.kind = (kapi_smd_pe_kind)k};
        return pe_kinds[k].read(a, key, pe, why);
    }
    return true;
}

/* Adds pe to the members, as add_member does; a FieldsV1 object's keys come in order
 * (as sets are written), so a step after the last is appended without a search. */
static void put_member(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe)
{
    size_t n = s->nmembers;
    if (n && kapi_smd_pe_cmp(&s->members[n - 1], pe) >= 0) {
        add_member(a, s, pe);
        return;
    }
    s->members = grow(a, s->members, n, &s->members_cap, sizeof(*s->members));
    s->members[s->nmembers++] = *pe;
}

/* Adds pe's set below; an equal step read before keeps its element and takes this set, as
 * Go's Descend and assignment do. A step after the last is appended, as in put_member. */
static void put_child(kapi_arena *a, kapi_smd_set *s, const kapi_smd_pe *pe, kapi_smd_set *below)
{
    size_t n = s->nchildren;
    if (n && kapi_smd_pe_cmp(&s->children[n - 1].pe, pe) >= 0) {
        descend(a, s, pe)->set = below;
        return;
    }
    s->children = grow(a, s->children, n, &s->children_cap, sizeof(*s->children));
    s->children[s->nchildren++] = (kapi_smd_child){*pe, below};
}

static bool read_object(kapi_arena *a, const json_t *obj, kapi_smd_set **set, bool *member,
                        const char **why);

/* One member of a FieldsV1 object: key and the object (or null) it names. */
static bool read_entry(kapi_arena *a, kapi_str key, const json_t *v, kapi_smd_set **set,
                       const char **why)
{
    kapi_smd_pe pe;
    kapi_smd_set *below = NULL;
    bool known, member = true;
    if (!read_pe(a, key, &pe, &known, why))
        return false;
    if (!known)
        return true;
    if (!json_is_object(v) && !json_is_null(v))
        return fail_key(a, key, "the value is not a JSON object", why);
    if (json_is_object(v) && !read_object(a, v, &below, &member, why))
        return false;
    if (!*set)
        *set = kapi_smd_set_new(a);
    if (member)
        put_member(a, *set, &pe);
    if (below)
        put_child(a, *set, &pe, below);
    return true;
}

/* readIterV1: the set an object holds (NULL when it holds no step), and whether it marks
 * its own step as a member: it has ".", or holds no step at all ({} is a leaf). */
static bool read_object(kapi_arena *a, const json_t *obj, kapi_smd_set **set, bool *member,
                        const char **why)
{
    const char *key;
    size_t len;
    json_t *v;
    *set = NULL;
    *member = false;
    json_object_keylen_foreach((json_t *)obj, key, len, v)
    {
        if (len == 1 && key[0] == '.')
            *member = true;
        else if (!read_entry(a, (kapi_str){key, len}, v, set, why))
            return false;
    }
    if (!*set)
        *member = true;
    return true;
}

bool kapi_smd_set_from_json(kapi_arena *a, const json_t *fields, kapi_smd_set **out,
                            const char **why)
{
    kapi_smd_set *s = NULL;
    bool member;
    *out = NULL;
    if (fields && !json_is_object(fields) && !json_is_null(fields))
        return fail(why, "FieldsV1 is not a JSON object");
    if (json_is_object(fields) && !read_object(a, fields, &s, &member, why))
        return false;
    *out = s ? s : kapi_smd_set_new(a);
    return true;
}
