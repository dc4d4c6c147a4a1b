/*
 * smd/typed: walks of JSON values by their smd type (smd.h, "typed walks"), ports of
 * structured-merge-diff's typed package: the apply body's type check (validate.go), an
 * object's field set (tofieldset.go), compare and merge, which are one walk of two values
 * with a rule at the leaves and a hook after the other nodes (merge.go), removal
 * (remove.go) and Set.EnsureNamedFieldsAreMembers.
 *
 * A walker keeps the path from the root in a stack of path elements; field names point
 * at the type's names when the field is declared and are copied into the arena when not,
 * and list keys and set values are copied, so sets outlive the values walked. Errors are
 * collected as SMD prints them, "<path>: <message>".
 */
#include "smd/smd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"

/* A set a walk inserts into, with the sets it reached below the current path's steps:
 * node[k] is the set below the path's first k steps, for k < nvalid (node[0] is root). A
 * path inserted descends only from the deepest of them. */
typedef struct target {
    kapi_smd_set **node;
    size_t nvalid, cap;
} target;

typedef struct walker {
    kapi_arena *a;
    kapi_smd_pe *path;
    size_t depth, cap;
    target sets[3]; /* to set's one; compare's added, modified, removed */
    kapi_buf errs;  /* "\n  "-separated, as SMD joins several */
    size_t nerrs;
    bool quiet; /* errors are dropped (SMD drops a list item's merge errors) */
} walker;

static void walker_init(walker *w, kapi_arena *a)
{
    *w = (walker){.a = a};
    kapi_buf_init(&w->errs);
}

/* The errors as SMD's ValidationErrors print them (in the arena), NULL when none; the
 * walker is done. */
static kapi_smd_errors walker_finish(walker *w)
{
    const char *out = NULL;
    if (w->nerrs == 1)
        out = kapi_arena_strndup(w->a, w->errs.ptr, w->errs.len);
    else if (w->nerrs > 1)
        out = kapi_arena_printf(w->a, "errors:\n  %s", w->errs.ptr);
    kapi_buf_dispose(&w->errs);
    free(w->path);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(w->sets); i++)
        free(w->sets[i].node);
    return out;
}

/* Target i of w inserts into root. */
static target *target_init(walker *w, size_t i, kapi_smd_set *root)
{
    target *t = &w->sets[i];
    t->cap = 16;
    t->node = kapi_xmalloc(t->cap * sizeof(*t->node));
    t->node[0] = root;
    t->nvalid = 1;
    return t;
}

static void push(walker *w, const kapi_smd_pe *pe)
{
    if (w->depth == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->path = kapi_xrealloc(w->path, w->cap * sizeof(*w->path));
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(w->sets); i++) /* the sets below pe are not known */
        if (w->sets[i].nvalid > w->depth + 1)
            w->sets[i].nvalid = w->depth + 1;
    w->path[w->depth++] = *pe;
}

static void pop(walker *w)
{
    w->depth--;
}

static kapi_smd_path here(const walker *w)
{
    return (kapi_smd_path){w->path, w->depth};
}

/* Inserts the current path into t's set, as kapi_smd_set_insert does. */
static void insert_here(walker *w, target *t)
{
    size_t n = w->depth;
    if (n == 0)
        return; /* the whole object: nobody owns it */
    if (n > t->cap) {
        t->cap = 2 * n;
        t->node = kapi_xrealloc(t->node, t->cap * sizeof(*t->node));
    }
    for (; t->nvalid < n; t->nvalid++)
        t->node[t->nvalid] =
            kapi_smd_set_descend(w->a, t->node[t->nvalid - 1], &w->path[t->nvalid - 1]);
    kapi_smd_set_insert(w->a, t->node[n - 1], (kapi_smd_path){&w->path[n - 1], 1});
}

/* An error at the current path: "<path>: <message>" (the message alone at the root). */
static void KAPI_PRINTF(2, 3) fail(walker *w, const char *fmt, ...)
{
    if (w->quiet)
        return;
    if (w->nerrs++)
        kapi_buf_puts(&w->errs, "\n  ");
    if (w->depth) {
        kapi_smd_path_format(&w->errs, here(w));
        kapi_buf_puts(&w->errs, ": ");
    }
    va_list ap;
    va_start(ap, fmt);
    kapi_buf_vprintf(&w->errs, fmt, ap);
    va_end(ap);
}

/* ---- values ---- */

/* The atom SMD picks for v of type t (deduceAtom): the one matching v's kind when t
 * allows it, else all that t allows. NULL (absent) and null match none. */
static unsigned atom_for(const kapi_smd_type *t, const json_t *v)
{
    unsigned want = 0;
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
        want = KAPI_SMD_ATOM_MAP;
        break;
    case JSON_ARRAY:
        want = KAPI_SMD_ATOM_LIST;
        break;
    case JSON_NULL:
        break;
    default:
        want = KAPI_SMD_ATOM_SCALAR;
    }
    return (t->atoms & want) ? want : t->atoms;
}

/* value.Equals: numbers by value (an int and a float as floats), objects by members,
 * arrays item by item. */
static bool equal(const json_t *x, const json_t *y)
{
    if (json_is_number(x) && json_is_number(y)) {
        if (json_is_integer(x) && json_is_integer(y))
            return json_integer_value(x) == json_integer_value(y);
        return json_number_value(x) == json_number_value(y);
    }
    if (json_typeof(x) != json_typeof(y))
        return false;
    if (json_is_array(x)) {
        if (json_array_size(x) != json_array_size(y))
            return false;
        for (size_t i = 0; i < json_array_size(x); i++)
            if (!equal(json_array_get(x, i), json_array_get(y, i)))
                return false;
        return true;
    }
    if (json_is_object(x)) {
        const char *k;
        size_t len;
        json_t *v;
        if (json_object_size(x) != json_object_size(y))
            return false;
        json_object_keylen_foreach((json_t *)x, k, len, v)
        {
            const json_t *o = json_object_getn(y, k, len);
            if (!o || !equal(v, o))
                return false;
        }
        return true;
    }
    return json_equal((json_t *)x, (json_t *)y);
}

/* fmt's %v of a value.Value holding v: &{<v with %v>}. */
static void value_v(kapi_buf *b, const json_t *v)
{
    kapi_buf_puts(b, "&{");
    kapi_go_put_fmt(b, v, 'v');
    kapi_buf_putc(b, '}');
}

/* An error naming v as fmt's %v of a value.Value prints it: "expected map, got &{x}". */
static void fail_value(walker *w, const char *what, const json_t *v)
{
    kapi_buf b;
    kapi_buf_init(&b);
    value_v(&b, v);
    fail(w, "%s%s", what, b.ptr);
    kapi_buf_dispose(&b);
}

/* The scalar check of validateScalar; true when v passes. */
static bool scalar_ok(walker *w, const kapi_smd_type *t, const json_t *v, const char *side)
{
    kapi_buf b;
    if (!v || json_is_null(v))
        return true;
    switch (t->scalar) {
    case KAPI_SMD_NUMERIC:
        if (json_is_number(v))
            return true;
        fail(w, "%sexpected numeric (int or float), got %s", side, kapi_go_type_name(v));
        return false;
    case KAPI_SMD_STRING_SCALAR:
        if (json_is_string(v))
            return true;
        kapi_buf_init(&b);
        kapi_go_sharp_v(&b, v, KAPI_GO_JSON_MAP);
        fail(w, "%sexpected string, got &value.valueUnstructured{Value:%s}", side, b.ptr);
        kapi_buf_dispose(&b);
        return false;
    case KAPI_SMD_BOOLEAN:
        if (json_is_boolean(v))
            return true;
        fail_value(w, kapi_arena_printf(w->a, "%sexpected boolean, got ", side), v);
        return false;
    default:
        return true;
    }
}

/* ---- path elements ---- */

/* The step to member key of map type t; *ft gets the member's type (NULL when t neither
 * declares it nor takes other members), and the name points at t's own when declared. */
static kapi_smd_pe field_pe(walker *w, const kapi_smd_type *t, const char *key, size_t len,
                            const kapi_smd_type **ft, bool *declared)
{
    kapi_str name = {key, len};
    const kapi_smd_type_field *f = kapi_smd_type_find(t, name);
    *ft = f ? f->type : t->map_elem;
    *declared = f != NULL;
    if (f)
        name = f->name;
    else
        name.ptr = kapi_arena_strndup(w->a, key, len);
    return (kapi_smd_pe){.kind = KAPI_SMD_PE_FIELD, .name = name};
}

static int field_cmp(const void *a, const void *b)
{
    const kapi_smd_field *x = a, *y = b;
    int c = memcmp(x->name.ptr, y->name.ptr, x->name.len < y->name.len ? x->name.len : y->name.len);
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

/* listItemToPathElement: a list map item by its key fields (a missing one takes its
 * field's default), a set item by its value, any other item by its index. False, with
 * *why set, for an item that cannot be one. */
static bool item_pe(walker *w, const kapi_smd_type *t, size_t i, const json_t *item,
                    kapi_smd_pe *pe, const char **why)
{
    *pe = (kapi_smd_pe){.kind = KAPI_SMD_PE_INDEX, .index = (int64_t)i};
    if (t->list_atomic)
        return true;
    if (t->nkeys == 0) {
        *why = json_is_object(item)
                   ? "associative list without keys has an element that's a map type"
               : json_is_array(item) ? "not supported: associative list with lists as elements"
               : json_is_null(item)
                   ? "associative list without keys has an element that's an explicit null"
                   : NULL;
        if (*why)
            return false;
        *pe = (kapi_smd_pe){.kind = KAPI_SMD_PE_VALUE, .value = kapi_smd_value_of(w->a, item)};
        return true;
    }
    if (!json_is_object(item)) {
        *why = json_is_null(item) ? "associative list with keys may not have a null element"
                                  : "associative list with keys may not have non-map elements";
        return false;
    }
    kapi_smd_field *keys = kapi_arena_alloc(w->a, t->nkeys * sizeof(*keys));
    for (size_t k = 0; k < t->nkeys; k++) {
        const json_t *v = json_object_get(item, t->keys[k]);
        if (!v) {
            const kapi_smd_type_field *f =
                t->list_elem ? kapi_smd_type_find(t->list_elem, kapi_str_c(t->keys[k])) : NULL;
            v = f ? f->default_value : NULL;
        }
        if (!v) {
            *why = kapi_arena_printf(w->a,
                                     "associative list with keys has an element that omits key "
                                     "field \"%s\" (and doesn't have default value)",
                                     t->keys[k]);
            return false;
        }
        keys[k] = (kapi_smd_field){kapi_str_c(t->keys[k]), kapi_smd_value_of(w->a, v)};
    }
    qsort(keys, t->nkeys, sizeof(*keys), field_cmp);
    *pe = (kapi_smd_pe){.kind = KAPI_SMD_PE_KEY, .keys = keys, .nkeys = t->nkeys};
    return true;
}

/* The path elements of a list's items, with their positions, in list order; items that
 * are not valid elements, or repeat one, are errors and left out (indexListPathElements). */
typedef struct indexed {
    kapi_smd_pe pe;
    const json_t *item;
} indexed;

typedef struct item_index {
    indexed *order;   /* list order */
    indexed **sorted; /* by pe, for lookups */
    size_t n;
} item_index;

static const indexed *index_find(const item_index *x, const kapi_smd_pe *pe)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = kapi_smd_pe_cmp(pe, &x->sorted[mid]->pe);
        if (c == 0)
            return x->sorted[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static void index_items(walker *w, const kapi_smd_type *t, const json_t *list, item_index *x)
{
    size_t n = json_array_size(list);
    x->order = kapi_arena_alloc(w->a, (n + 1) * sizeof(*x->order));
    x->sorted = kapi_arena_alloc(w->a, (n + 1) * sizeof(*x->sorted));
    x->n = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(list, i);
        const char *why = NULL;
        kapi_smd_pe pe;
        kapi_buf s;
        if (!item_pe(w, t, i, item, &pe, &why)) {
            fail(w, "element %zu: %s", i, why);
            continue;
        }
        /* a linear insert keeps the sorted view; lists are short */
        size_t lo = 0, hi = x->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (kapi_smd_pe_cmp(&x->sorted[mid]->pe, &pe) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < x->n && kapi_smd_pe_cmp(&x->sorted[lo]->pe, &pe) == 0) {
            kapi_buf_init(&s);
            kapi_smd_path_format(&s, (kapi_smd_path){&pe, 1});
            fail(w, "duplicate entries for key %s", s.ptr);
            kapi_buf_dispose(&s);
            continue;
        }
        x->order[x->n] = (indexed){pe, item};
        memmove(x->sorted + lo + 1, x->sorted + lo, (x->n - lo) * sizeof(*x->sorted));
        x->sorted[lo] = &x->order[x->n];
        x->n++;
    }
}

/* ---- validate (typed.AsTyped) ---- */

static void validate(walker *w, const kapi_smd_type *t, const json_t *v);

static void validate_map(walker *w, const kapi_smd_type *t, const json_t *v)
{
    const char *key;
    size_t len;
    json_t *val;
    if (json_is_null(v))
        return;
    if (!json_is_object(v)) {
        fail_value(w, "expected map, got ", v);
        return;
    }
    json_object_keylen_foreach((json_t *)v, key, len, val)
    {
        const kapi_smd_type *ft;
        bool declared;
        kapi_smd_pe pe = field_pe(w, t, key, len, &ft, &declared);
        push(w, &pe);
        if (!ft) {
            fail(w, "field not declared in schema");
            pop(w);
            return;
        }
        validate(w, ft, val);
        pop(w);
    }
}

static void validate_list(walker *w, const kapi_smd_type *t, const json_t *v)
{
    if (json_is_null(v))
        return;
    if (!json_is_array(v)) {
        fail_value(w, "expected list, got ", v);
        return;
    }
    kapi_smd_set *seen = kapi_smd_set_new(w->a);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *item = json_array_get(v, i);
        kapi_smd_pe pe = {.kind = KAPI_SMD_PE_INDEX, .index = (int64_t)i};
        const char *why = NULL;
        if (!t->list_atomic) {
            if (!item_pe(w, t, i, item, &pe, &why)) {
                fail(w, "element %zu: %s", i, why);
                return;
            }
            kapi_smd_path p = {&pe, 1};
            if (kapi_smd_set_has(seen, p)) {
                kapi_buf s;
                kapi_buf_init(&s);
                kapi_smd_path_format(&s, p);
                fail(w, "duplicate entries for key %s", s.ptr);
                kapi_buf_dispose(&s);
            }
            kapi_smd_set_insert(w->a, seen, p);
        }
        push(w, &pe);
        validate(w, t->list_elem, item);
        pop(w);
    }
}

static void validate(walker *w, const kapi_smd_type *t, const json_t *v)
{
    unsigned atom = atom_for(t, v);
    if (atom & KAPI_SMD_ATOM_MAP)
        validate_map(w, t, v);
    else if (atom & KAPI_SMD_ATOM_SCALAR)
        scalar_ok(w, t, v, "");
    else if (atom & KAPI_SMD_ATOM_LIST)
        validate_list(w, t, v);
}

kapi_smd_errors kapi_smd_validate(kapi_arena *a, const kapi_smd_type *t, const json_t *v)
{
    walker w;
    walker_init(&w, a);
    validate(&w, t, v);
    return walker_finish(&w);
}

/* ---- to set (TypedValue.ToFieldSet) ---- */

static void to_set(walker *w, target *s, const kapi_smd_type *t, const json_t *v);

static void to_set_map(walker *w, target *s, const kapi_smd_type *t, const json_t *v)
{
    const char *key;
    size_t len;
    json_t *val;
    if (t->map_atomic) {
        insert_here(w, s);
        return;
    }
    json_object_keylen_foreach((json_t *)v, key, len, val)
    {
        const kapi_smd_type *ft;
        bool declared;
        kapi_smd_pe pe = field_pe(w, t, key, len, &ft, &declared);
        push(w, &pe);
        if (ft)
            to_set(w, s, ft, val);
        if (json_is_null(val) || (json_is_object(val) && json_object_size(val) == 0) || !declared)
            insert_here(w, s);
        pop(w);
    }
}

static void to_set_list(walker *w, target *s, const kapi_smd_type *t, const json_t *v)
{
    if (t->list_atomic) {
        insert_here(w, s);
        return;
    }
    if (!json_is_array(v))
        return;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *item = json_array_get(v, i);
        const char *why;
        kapi_smd_pe pe;
        if (!item_pe(w, t, i, item, &pe, &why))
            pe = (kapi_smd_pe){.kind = KAPI_SMD_PE_FIELD, .name = KAPI_STR("")};
        push(w, &pe);
        to_set(w, s, t->list_elem, item);
        insert_here(w, s);
        pop(w);
    }
}

static void to_set(walker *w, target *s, const kapi_smd_type *t, const json_t *v)
{
    unsigned atom = atom_for(t, v);
    if (atom & KAPI_SMD_ATOM_MAP) {
        if (t->map_atomic || json_is_object(v))
            to_set_map(w, s, t, v);
    } else if (atom & KAPI_SMD_ATOM_SCALAR) {
        insert_here(w, s);
    } else if (atom & KAPI_SMD_ATOM_LIST) {
        to_set_list(w, s, t, v);
    }
}

kapi_smd_set *kapi_smd_to_set(kapi_arena *a, const kapi_smd_type *t, const json_t *v)
{
    walker w;
    walker_init(&w, a);
    kapi_smd_set *s = kapi_smd_set_new(a);
    to_set(&w, target_init(&w, 0, s), t, v);
    walker_finish(&w);
    return s;
}

/* ---- compare and merge (merge.go) ---- */

/* One walk of two values: compare records what changed at each leaf and after each
 * other node; merge builds the value rhs gives when laid over lhs. */
typedef struct mwalk {
    walker w;
    kapi_smd_comparison *cmp; /* compare, or NULL */
    bool build;               /* merge: make the output */
} mwalk;

/* compare's targets */
enum { ADDED, MODIFIED, REMOVED };

/* The rule at a leaf: compare's, or ruleKeepRHS. */
static json_t *leaf(mwalk *m, const json_t *lhs, const json_t *rhs)
{
    if (m->cmp) {
        target *into = !lhs               ? &m->w.sets[ADDED]
                       : !rhs             ? &m->w.sets[REMOVED]
                       : !equal(rhs, lhs) ? &m->w.sets[MODIFIED]
                                          : NULL;
        if (into)
            insert_here(&m->w, into);
    }
    if (!m->build)
        return NULL;
    return json_incref((json_t *)(rhs ? rhs : lhs));
}

/* The hook after a node that is not a leaf (compare's postItemHook). */
static void after_node(mwalk *m, const json_t *lhs, const json_t *rhs)
{
    if (!m->cmp)
        return;
    if (!lhs)
        insert_here(&m->w, &m->w.sets[ADDED]);
    else if (!rhs)
        insert_here(&m->w, &m->w.sets[REMOVED]);
}

static json_t *merge(mwalk *m, const kapi_smd_type *t, const json_t *lhs, const json_t *rhs);

static json_t *merge_item(mwalk *m, const kapi_smd_type *t, const kapi_smd_pe *pe,
                          const json_t *lhs, const json_t *rhs)
{
    bool quiet = m->w.quiet;
    m->w.quiet = true; /* SMD loses a list item's errors (a shadowed variable) */
    push(&m->w, pe);
    json_t *out = merge(m, t->list_elem, lhs, rhs);
    pop(&m->w);
    m->w.quiet = quiet;
    return out;
}

static void append_out(json_t *list, json_t *item)
{
    if (list && item)
        json_array_append_new(list, item);
    else
        json_decref(item);
}

/* visitListItems: the items of both lists, merged in an order that keeps rhs's order and
 * puts lhs-only items where they stood. */
static json_t *merge_items(mwalk *m, const kapi_smd_type *t, const json_t *lhs, const json_t *rhs)
{
    item_index l = {0}, r = {0};
    index_items(&m->w, t, rhs, &r);
    index_items(&m->w, t, lhs, &l);
    const indexed **shared = kapi_arena_alloc(m->w.a, (r.n + 1) * sizeof(*shared));
    size_t nshared = 0, next = 0;
    for (size_t i = 0; i < r.n; i++)
        if (index_find(&l, &r.order[i].pe))
            shared[nshared++] = &r.order[i];
    const indexed *want = nshared ? shared[next++] : NULL;
    json_t *out = m->build ? json_array() : NULL;
    size_t li = 0, ri = 0;
    while (li < l.n || ri < r.n) {
        if (li < l.n && ri < r.n) {
            const kapi_smd_pe *pe = &l.order[li].pe;
            if (kapi_smd_pe_cmp(pe, &r.order[ri].pe) == 0) {
                append_out(out, merge_item(m, t, pe, l.order[li].item, r.order[ri].item));
                li++;
                ri++;
                want = next < nshared ? shared[next++] : NULL;
                continue;
            }
            if (index_find(&r, pe) && want && kapi_smd_pe_cmp(&want->pe, pe) != 0) {
                li++;
                continue;
            }
        }
        if (li < l.n && !index_find(&r, &l.order[li].pe)) {
            append_out(out, merge_item(m, t, &l.order[li].pe, l.order[li].item, NULL));
            li++;
            continue;
        }
        if (ri < r.n) {
            const indexed *x = &r.order[ri];
            const indexed *y = index_find(&l, &x->pe);
            append_out(out, merge_item(m, t, &x->pe, y ? y->item : NULL, x->item));
            ri++;
            if (want && kapi_smd_pe_cmp(&want->pe, &x->pe) == 0)
                want = next < nshared ? shared[next++] : NULL;
        }
    }
    if (out && json_array_size(out) == 0) {
        json_decref(out);
        out = NULL;
    }
    return out;
}

static const json_t *as_list(const json_t *v)
{
    return json_is_array(v) ? v : NULL;
}

static const json_t *as_map(const json_t *v)
{
    return json_is_object(v) ? v : NULL;
}

static json_t *merge_list(mwalk *m, const kapi_smd_type *t, const json_t *lhs, const json_t *rhs)
{
    const json_t *l = as_list(lhs), *r = as_list(rhs);
    bool empty = json_array_size(l) == 0 && json_array_size(r) == 0;
    if (t->list_atomic || empty)
        return leaf(m, lhs, rhs);
    return merge_items(m, t, l, r);
}

/* The member key of a map, merged: the field's type, or the map's element type. */
static void merge_member(mwalk *m, const kapi_smd_type *t, json_t *out, const char *key, size_t len,
                         const json_t *lv, const json_t *rv)
{
    const kapi_smd_type *ft;
    bool declared;
    kapi_smd_pe pe = field_pe(&m->w, t, key, len, &ft, &declared);
    push(&m->w, &pe);
    json_t *v = NULL;
    if (ft)
        v = merge(m, ft, lv, rv);
    else
        fail(&m->w, "schema error: invalid atom: inlined");
    pop(&m->w);
    if (out && v)
        json_object_setn_new_nocheck(out, key, len, v);
    else
        json_decref(v);
}

/* The member key of object o (NULL when none, or no object): the one at iterator *at
 * when o lists it there (the two objects compared often list their members in the same
 * order), which moves *at past it; else the one a lookup finds. */
static const json_t *member_at(const json_t *o, void **at, const char *key, size_t len)
{
    if (*at && json_object_iter_key_len(*at) == len &&
        memcmp(json_object_iter_key(*at), key, len) == 0) {
        const json_t *v = json_object_iter_value(*at);
        *at = json_object_iter_next((json_t *)o, *at);
        return v;
    }
    return o ? json_object_getn(o, key, len) : NULL;
}

/* The members lhs and rhs both have, as the walk of lhs finds them, for the walk of rhs
 * to pass over: by name when they all fit in names, else by looking them up in lhs. */
typedef struct shared_members {
    size_t n; /* not yet passed over */
    kapi_str names[16];
    bool looked_up;
    const json_t *l;
    void *at; /* the next member of l, for member_at */
} shared_members;

static void shared_add(shared_members *sh, const char *key, size_t len)
{
    if (sh->n < KAPI_ARRAY_LEN(sh->names))
        sh->names[sh->n] = (kapi_str){key, len};
    sh->n++;
}

/* Whether rhs's member key is one of lhs's, which is then passed over. */
static bool shared_pass(shared_members *sh, const char *key, size_t len)
{
    if (sh->looked_up) {
        bool found = member_at(sh->l, &sh->at, key, len) != NULL;
        sh->n -= found;
        return found;
    }
    for (size_t i = 0; i < sh->n; i++) {
        if (sh->names[i].len == len && memcmp(sh->names[i].ptr, key, len) == 0) {
            sh->names[i] = sh->names[--sh->n];
            return true;
        }
    }
    return false;
}

static json_t *merge_map(mwalk *m, const kapi_smd_type *t, const json_t *lhs, const json_t *rhs)
{
    const json_t *l = as_map(lhs), *r = as_map(rhs);
    bool empty = json_object_size(l) == 0 && json_object_size(r) == 0;
    const char *key;
    size_t len;
    json_t *v;
    if (t->map_atomic || empty)
        return leaf(m, lhs, rhs);
    json_t *out = m->build ? json_object() : NULL;
    shared_members sh = {.l = l};
    void *at = l ? json_object_iter((json_t *)r) : NULL;
    json_object_keylen_foreach((json_t *)l, key, len, v)
    {
        const json_t *rv = member_at(r, &at, key, len);
        if (rv)
            shared_add(&sh, key, len);
        merge_member(m, t, out, key, len, v, rv);
    }
    if (sh.n > KAPI_ARRAY_LEN(sh.names)) {
        sh.looked_up = true;
        sh.at = json_object_iter((json_t *)l);
    }
    json_object_keylen_foreach((json_t *)r, key, len, v)
    {
        if (!sh.n || !shared_pass(&sh, key, len))
            merge_member(m, t, out, key, len, NULL, v);
    }
    if (out && json_object_size(out) == 0) {
        json_decref(out);
        out = NULL;
    }
    return out;
}

/* handleAtom for one side's atom; *is_leaf tells whether the node was a leaf. */
static json_t *handle(mwalk *m, const kapi_smd_type *t, unsigned atom, const json_t *lhs,
                      const json_t *rhs, bool *is_leaf)
{
    *is_leaf = false;
    if (atom & KAPI_SMD_ATOM_MAP) {
        *is_leaf = t->map_atomic ||
                   (json_object_size(as_map(lhs)) == 0 && json_object_size(as_map(rhs)) == 0);
        return merge_map(m, t, lhs, rhs);
    }
    if (atom & KAPI_SMD_ATOM_SCALAR) {
        bool ok = scalar_ok(&m->w, t, lhs, "lhs: ");
        ok = scalar_ok(&m->w, t, rhs, "rhs: ") && ok;
        *is_leaf = ok;
        return ok ? leaf(m, lhs, rhs) : NULL;
    }
    if (atom & KAPI_SMD_ATOM_LIST) {
        *is_leaf = t->list_atomic ||
                   (json_array_size(as_list(lhs)) == 0 && json_array_size(as_list(rhs)) == 0);
        return merge_list(m, t, lhs, rhs);
    }
    fail(&m->w, "schema error: invalid atom: inlined");
    return NULL;
}

static json_t *merge(mwalk *m, const kapi_smd_type *t, const json_t *lhs, const json_t *rhs)
{
    unsigned al = atom_for(t, lhs), ar = atom_for(t, rhs);
    bool is_leaf;
    json_t *out;
    if (!rhs) {
        out = handle(m, t, al, lhs, rhs, &is_leaf);
    } else if (!lhs || al == ar) {
        out = handle(m, t, ar, lhs, rhs, &is_leaf);
    } else {
        bool build = m->build;
        m->build = false; /* the lhs view's output is dropped, as Go drops its copy's */
        json_decref(handle(m, t, al, lhs, rhs, &is_leaf));
        m->build = build;
        out = handle(m, t, ar, lhs, rhs, &is_leaf);
    }
    if (!is_leaf)
        after_node(m, lhs, rhs);
    return out;
}

kapi_smd_errors kapi_smd_compare(kapi_arena *a, const kapi_smd_type *t, const json_t *lhs,
                                 const json_t *rhs, kapi_smd_comparison *out)
{
    mwalk m = {.cmp = out};
    walker_init(&m.w, a);
    out->added = kapi_smd_set_new(a);
    out->modified = kapi_smd_set_new(a);
    out->removed = kapi_smd_set_new(a);
    target_init(&m.w, ADDED, out->added);
    target_init(&m.w, MODIFIED, out->modified);
    target_init(&m.w, REMOVED, out->removed);
    if (lhs || rhs)
        merge(&m, t, lhs, rhs);
    else
        fail(&m.w, "at least one of lhs and rhs must be provided");
    return walker_finish(&m.w);
}

kapi_smd_errors kapi_smd_merge(kapi_arena *a, const kapi_smd_type *t, const json_t *lhs,
                               const json_t *rhs, json_t **out)
{
    mwalk m = {.build = true};
    walker_init(&m.w, a);
    *out = NULL;
    if (lhs || rhs)
        *out = merge(&m, t, lhs, rhs);
    else
        fail(&m.w, "at least one of lhs and rhs must be provided");
    kapi_smd_errors errs = walker_finish(&m.w);
    if (errs) {
        json_decref(*out);
        *out = NULL;
    }
    return errs;
}

/* ---- remove (remove.go) ---- */

static json_t *remove_items(walker *w, const kapi_smd_type *t, const json_t *v,
                            const kapi_smd_set *s);

static json_t *remove_list(walker *w, const kapi_smd_type *t, const json_t *v,
                           const kapi_smd_set *s)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || t->list_atomic)
        return NULL;
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *item = json_array_get(v, i);
        const char *why;
        kapi_smd_pe pe;
        if (!item_pe(w, t, i, item, &pe, &why))
            pe = (kapi_smd_pe){.kind = KAPI_SMD_PE_FIELD, .name = KAPI_STR("")};
        if (kapi_smd_set_has(s, (kapi_smd_path){&pe, 1}))
            continue;
        const kapi_smd_set *sub = kapi_smd_set_child(s, &pe);
        json_t *kept =
            kapi_smd_set_empty(sub) ? json_incref(item) : remove_items(w, t->list_elem, item, sub);
        json_array_append_new(out, kept ? kept : json_null());
    }
    if (json_array_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *remove_map(walker *w, const kapi_smd_type *t, const json_t *v, const kapi_smd_set *s)
{
    const char *key;
    size_t len;
    json_t *val;
    if (!json_is_object(v) || json_object_size(v) == 0 || t->map_atomic)
        return NULL;
    json_t *out = json_object();
    json_object_keylen_foreach((json_t *)v, key, len, val)
    {
        const kapi_smd_type *ft;
        bool declared;
        kapi_smd_pe pe = field_pe(w, t, key, len, &ft, &declared);
        if (kapi_smd_set_has(s, (kapi_smd_path){&pe, 1}))
            continue;
        const kapi_smd_set *sub = kapi_smd_set_child(s, &pe);
        json_t *kept =
            kapi_smd_set_empty(sub) || !ft ? json_incref(val) : remove_items(w, ft, val, sub);
        json_object_setn_new_nocheck(out, key, len, kept ? kept : json_null());
    }
    if (json_object_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *remove_items(walker *w, const kapi_smd_type *t, const json_t *v,
                            const kapi_smd_set *s)
{
    unsigned atom = atom_for(t, v);
    if (atom & KAPI_SMD_ATOM_MAP)
        return remove_map(w, t, v, s);
    if (atom & KAPI_SMD_ATOM_SCALAR)
        return json_incref((json_t *)v);
    if (atom & KAPI_SMD_ATOM_LIST)
        return remove_list(w, t, v, s);
    return NULL;
}

json_t *kapi_smd_remove(kapi_arena *a, const kapi_smd_type *t, const json_t *v,
                        const kapi_smd_set *s)
{
    walker w;
    walker_init(&w, a);
    json_t *out = remove_items(&w, t, v, s);
    walker_finish(&w);
    return out;
}

/* ---- Set.EnsureNamedFieldsAreMembers ---- */

kapi_smd_set *kapi_smd_set_with_named_fields(kapi_arena *a, const kapi_smd_type *t,
                                             const kapi_smd_set *s)
{
    kapi_smd_set *out = kapi_smd_set_new(a);
    bool map = t && (t->atoms & KAPI_SMD_ATOM_MAP);
    bool list = t && (t->atoms & KAPI_SMD_ATOM_LIST);
    for (size_t i = 0; i < s->nmembers; i++)
        kapi_smd_set_insert(a, out, (kapi_smd_path){&s->members[i], 1});
    for (size_t i = 0; i < s->nchildren; i++) {
        const kapi_smd_pe *pe = &s->children[i].pe;
        const kapi_smd_type *ct = NULL;
        if (pe->kind == KAPI_SMD_PE_FIELD && map) {
            const kapi_smd_type_field *f = kapi_smd_type_find(t, pe->name);
            ct = f ? f->type : t->map_elem;
            if (f)
                kapi_smd_set_insert(a, out, (kapi_smd_path){pe, 1});
        } else if (pe->kind == KAPI_SMD_PE_KEY && list) {
            ct = t->list_elem;
        }
        kapi_smd_set_graft(a, out, pe, kapi_smd_set_with_named_fields(a, ct, s->children[i].set));
    }
    return out;
}
