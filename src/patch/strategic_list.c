/*
 * patch/strategic_list: the list half of a strategic merge patch, as apimachinery 1.26's
 * strategicpatch merges lists for kube-apiserver: lists of maps merged by their merge key
 * with the "$patch": "delete" | "replace" items, lists of primitives merged as sets (or
 * thinned by a $deleteFromPrimitiveList), and the order of the result: the
 * $setElementOrder list's, then the patch's, then the document's (mergeSortedSlice).
 *
 * Lists are values here: a merge builds new lists and leaves the document's as it was.
 * apimachinery shifts and appends into a Go slice in place, and where the slice has spare
 * capacity a list it reads later as the server's order is rewritten; that depends on how
 * the object was decoded and is not modelled (the suite's skips name the cases).
 */
#include "codec/go.h"
#include "patch/patch_int.h"

#include <stdlib.h>
#include <string.h>

#define DIRECTIVE "$patch"
#define ORDER_PREFIX "$setElementOrder"

/* ---- lookups ---- */

/* The merge key's value of a map item (NULL, Go's nil, when absent); the item itself for
 * a list of primitives. */
static const json_t *item_value(const json_t *item, const char *key, kapi_patch__gotype kind)
{
    if (kind != KAPI_PATCH_GO_MAP)
        return item;
    return json_is_object(item) ? json_object_get(item, key) : NULL;
}

/* index: where val is in list (by merge key for maps), or -1. */
static long index_of(const json_t *list, const json_t *val, const char *key,
                     kapi_patch__gotype kind)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (kapi_patch__go_eq(item_value(val, key, kind),
                              item_value(json_array_get(list, i), key, kind)))
            return (long)i;
    return -1;
}

/* findMapInSliceBasedOnKeyValue: the index of the first map of list whose key is value. */
static kapi_error *find_map(long *out, const json_t *list, const char *key, const json_t *value)
{
    *out = -1;
    for (size_t i = 0; i < json_array_size(list) && *out < 0; i++) {
        json_t *item = json_array_get(list, i), *v;
        if (!json_is_object(item))
            return kapi_error_new(KAPI_STATUS_UNKNOWN, "value for key %zu is not a map", i);
        if ((v = json_object_get(item, key)) != NULL && kapi_patch__go_eq(v, value))
            *out = (long)i;
    }
    return NULL;
}

/* The merge key's value of a map item that must have one. */
static kapi_error *merge_value(const json_t **out, const json_t *item, const char *key)
{
    *out = NULL;
    if (!json_is_object(item))
        return kapi_patch__bad_arg_type("map[string]interface {}", item);
    if ((*out = json_object_get(item, key)) == NULL)
        return kapi_patch__no_merge_key(item, key);
    return NULL;
}

/* A map item with a "$patch" member. */
static bool has_directive(const json_t *item)
{
    return json_is_object(item) && json_object_get(item, DIRECTIVE);
}

/* A map item whose "$patch" is "delete". */
static bool is_delete(const json_t *item)
{
    json_t *d = json_object_get(item, DIRECTIVE);
    return json_is_string(d) && strcmp(json_string_value(d), "delete") == 0;
}

/* ---- element types ---- */

/* The items of both lists as a Go []interface{} list prints: "[[a b] [c]]". */
static void put_lists(kapi_buf *b, const json_t *a, const json_t *c)
{
    kapi_buf_putc(b, '[');
    kapi_go_put_fmt(b, a, 'v');
    kapi_buf_putc(b, ' ');
    kapi_go_put_fmt(b, c, 'v');
    kapi_buf_putc(b, ']');
}

/* "list element types are not identical: [[a b] [map[c:1]]]". */
static kapi_error *not_identical(const json_t *a, const json_t *b)
{
    kapi_buf m;
    kapi_buf_init(&m);
    put_lists(&m, a, b);
    kapi_error *err =
        kapi_error_new(KAPI_STATUS_UNKNOWN, "list element types are not identical: %s", m.ptr);
    kapi_buf_dispose(&m);
    return err;
}

/* sliceElementType: the one Go type of every item of both lists (a list first is 422). */
static kapi_error *element_type(kapi_patch__gotype *out, const json_t *a, const json_t *b)
{
    size_t na = json_array_size(a), n = na + json_array_size(b);
    for (size_t k = 0; k < n; k++) {
        kapi_patch__gotype t =
            kapi_patch__gotype_of(k < na ? json_array_get(a, k) : json_array_get(b, k - na));
        if (k == 0 && t == KAPI_PATCH_GO_SLICE)
            return kapi_patch__rejected();
        if (k > 0 && t != *out)
            return not_identical(a, b);
        *out = t;
    }
    return n ? NULL : kapi_error_new(KAPI_STATUS_UNKNOWN, "no elements in any of the given slices");
}

/* ---- ordering ---- */

/* What a sort of items by their place in order compares. */
typedef struct by_order {
    json_t *items;
    const json_t *order;
    const char *key;
    kapi_patch__gotype kind;
} by_order;

/* normalizeSliceOrder's less: by place in order when both items are there; otherwise
 * "less" (not a strict order: kapi_patch__sort_stable sorts as Go does with it). */
static bool order_less(void *ctx, size_t i, size_t j)
{
    const by_order *o = ctx;
    long ii = index_of(o->order, json_array_get(o->items, i), o->key, o->kind);
    long ij = ii >= 0 ? index_of(o->order, json_array_get(o->items, j), o->key, o->kind) : -1;
    return ii < 0 || ij < 0 || ii < ij;
}

static void order_swap(void *ctx, size_t i, size_t j)
{
    const by_order *o = ctx;
    json_t *a = json_incref(json_array_get(o->items, i));
    json_array_set(o->items, i, json_array_get(o->items, j));
    json_array_set_new(o->items, j, a);
}

/* validateMergeKeyInLists: every map of list has the merge key. */
static kapi_error *check_merge_keys(const json_t *list, const char *key)
{
    const json_t *v;
    kapi_error *err;
    for (size_t i = 0; i < json_array_size(list); i++)
        if ((err = merge_value(&v, json_array_get(list, i), key)) != NULL)
            return err;
    return NULL;
}

/* normalizeSliceOrder: items (a new list in *out) sorted by their place in order; map items
 * that delete go last. */
static kapi_error *sort_by(json_t **out, const json_t *items, const json_t *order, const char *key,
                           kapi_patch__gotype kind)
{
    kapi_error *err;
    json_t *keep = json_array(), *drop = json_array(), *item;
    size_t i;
    if (kind == KAPI_PATCH_GO_MAP &&
        ((err = check_merge_keys(items, key)) != NULL || (err = check_merge_keys(order, key)))) {
        json_decref(keep);
        json_decref(drop);
        return err;
    }
    json_array_foreach(items, i, item)
        json_array_append(kind == KAPI_PATCH_GO_MAP && is_delete(item) ? drop : keep, item);
    by_order o = {keep, order, key, kind};
    kapi_patch__sort_stable(json_array_size(keep), order_less, order_swap, &o);
    json_array_extend(keep, drop);
    json_decref(drop);
    *out = keep;
    return NULL;
}

/* mergeSortedSlice: the server's items (left) interleaved into the patch's (right), each
 * before the first patch item that comes after it in the server's order. */
static json_t *merge_sorted(const json_t *left, const json_t *right, const json_t *server_order,
                            const char *key, kapi_patch__gotype kind)
{
    json_t *out = json_array();
    size_t i = 0, j = 0, nl = json_array_size(left), nr = json_array_size(right);
    while (i < nl || j < nr) {
        bool take_left = j >= nr;
        if (i < nl && j < nr) {
            long li = index_of(server_order, json_array_get(left, i), key, kind);
            long ri = index_of(server_order, json_array_get(right, j), key, kind);
            take_left = li >= 0 && ri >= 0 && li < ri;
        }
        json_array_append(out, take_left ? json_array_get(left, i++) : json_array_get(right, j++));
    }
    return out;
}

/* normalizeElementOrder: the patch's items in patch_order, the server's in server_order,
 * merged. */
static kapi_error *normalize(json_t **out, const json_t *patch_items, const json_t *server_items,
                             const json_t *patch_order, const json_t *server_order, const char *key,
                             kapi_patch__gotype kind)
{
    json_t *p = NULL, *s = NULL;
    kapi_error *err = sort_by(&p, patch_items, patch_order, key, kind);
    if (!err)
        err = sort_by(&s, server_items, server_order, key, kind);
    if (!err)
        *out = merge_sorted(s, p, server_order, key, kind);
    json_decref(p);
    json_decref(s);
    return err;
}

/* partitionMapsByPresentInList / partitionPrimitivesByPresentInList: the items of list
 * that by has (*in) and the others (*out), as new lists. */
static kapi_error *partition(json_t **in, json_t **out, const json_t *list, const json_t *by,
                             const char *key)
{
    kapi_error *err = NULL;
    const json_t *v;
    long at = -1;
    *in = json_array();
    *out = json_array();
    for (size_t i = 0; i < json_array_size(list) && !err; i++) {
        json_t *item = json_array_get(list, i);
        if (!*key)
            at = index_of(by, item, "", KAPI_PATCH_GO_STRING);
        else if ((err = merge_value(&v, item, key)) == NULL)
            err = find_map(&at, by, key, v);
        json_array_append(at >= 0 ? *in : *out, item);
    }
    return err;
}

/* Orders merged as strategicpatch does after a merge: the items by has, in by's order,
 * with the others placed among them by server_order (normalizeElementOrder). */
static kapi_error *order_merged(json_t **out, const json_t *merged, const json_t *by,
                                const json_t *server_order, const char *key,
                                kapi_patch__gotype kind)
{
    json_t *in = NULL, *rest = NULL;
    kapi_error *err = partition(&in, &rest, merged, by, key);
    if (!err)
        err = normalize(out, in, rest, by, server_order, key, kind);
    json_decref(in);
    json_decref(rest);
    return err;
}

/* ---- lists of primitives ---- */

/* One round of deduplicateScalars: each later repeat of item i is replaced by the item at
 * length, which is dropped. Returns the new last index. */
static long drop_repeats(json_t *list, long i, long length)
{
    for (long j = i + 1; j <= length; j++) {
        if (!kapi_patch__go_eq(json_array_get(list, (size_t)i), json_array_get(list, (size_t)j)))
            continue;
        json_array_set(list, (size_t)j, json_array_get(list, (size_t)length));
        json_array_remove(list, (size_t)length--);
        j--;
    }
    return length;
}

/* deduplicateScalars: drops repeats in place (the order this leaves is Go's). */
static void dedupe(json_t *list)
{
    long length = (long)json_array_size(list) - 1;
    for (long i = 0; i < length; i++)
        length = drop_repeats(list, i, length);
}

/* deleteFromSlice: the items of list that to_delete does not have. */
static json_t *without(const json_t *list, const json_t *to_delete)
{
    json_t *out = json_array(), *item;
    size_t i;
    json_array_foreach(list, i, item)
    {
        if (index_of(to_delete, item, "", KAPI_PATCH_GO_STRING) < 0)
            json_array_append(out, item);
    }
    return out;
}

static kapi_error *merge_primitives(json_t **out, json_t *orig, json_t *patch,
                                    kapi_patch__gotype kind, bool delete_list)
{
    if (delete_list) {
        *out = without(orig, patch);
        return NULL;
    }
    json_t *both = json_array();
    json_array_extend(both, orig);
    json_array_extend(both, patch);
    dedupe(both);
    kapi_error *err = order_merged(out, both, patch, orig, "", kind);
    json_decref(both);
    return err;
}

/* ---- lists of maps ---- */

/*
 * Go's backing array of the document's list. deleteMatchingEntries shifts the list in
 * place and mergeSliceWithoutSpecialElements then appends into the room that frees, so the
 * document's list, which $setElementOrder later reads as the server's order, shows those
 * writes: after deleting a and adding c, [a b] reads [b c]. kube-apiserver's document comes
 * from runtime.DefaultUnstructuredConverter (capacity = length), so the writes stop at the
 * first append that finds the array full (append then moves to a new array).
 */
typedef struct backing {
    json_t *items; /* the array, as long as the document's list */
    size_t len;    /* the length of the slice that works on it */
    bool moved;    /* an append has moved the slice to a new array */
} backing;

/* One in-place delete of the item at the slice's index at. */
static void backing_delete(backing *b, size_t at)
{
    if (!b || b->moved)
        return;
    for (size_t j = at; j + 1 < b->len; j++)
        json_array_set(b->items, j, json_array_get(b->items, j + 1));
    b->len--;
}

/* One append of item to the slice. */
static void backing_append(backing *b, json_t *item)
{
    if (!b || b->moved)
        return;
    if (b->len < json_array_size(b->items))
        json_array_set(b->items, b->len++, item);
    else
        b->moved = true;
}

/* deleteMatchingEntries: drops every map of list whose key is value. */
static kapi_error *delete_matching(json_t *list, const char *key, const json_t *value, backing *b)
{
    long at;
    kapi_error *err;
    while ((err = find_map(&at, list, key, value)) == NULL && at >= 0) {
        json_array_remove(list, (size_t)at);
        backing_delete(b, (size_t)at);
    }
    return err;
}

/* One "$patch" item of a merging list: delete drops the items with its key, replace makes
 * the patch's other items the list. */
static kapi_error *special_item(json_t *orig, bool *replace, const json_t *item, const char *key,
                                backing *b)
{
    const json_t *d = json_object_get(item, DIRECTIVE), *v;
    const char *name = json_is_string(d) ? json_string_value(d) : "";
    kapi_error *err;
    if (strcmp(name, "delete") == 0)
        return (err = merge_value(&v, item, key)) ? err : delete_matching(orig, key, v, b);
    if (strcmp(name, "replace") == 0) {
        *replace = true;
        return NULL;
    }
    if (strcmp(name, "merge") == 0)
        return kapi_error_new(KAPI_STATUS_UNKNOWN,
                              "merging lists cannot yet be specified in the patch");
    return kapi_patch__bad_patch_type(d, item);
}

/* mergeSliceWithSpecialElements: the document's list after the patch's "$patch" items
 * (*o) and the patch's other items (*p); after a replace, those items and nothing. */
static kapi_error *apply_special(json_t **o, json_t **p, const json_t *orig, const json_t *patch,
                                 const char *key, backing *b)
{
    bool replace = false;
    kapi_error *err = NULL;
    *o = json_array();
    *p = json_array();
    json_array_extend(*o, (json_t *)orig);
    for (size_t i = 0; i < json_array_size(patch) && !err; i++) {
        json_t *item = json_array_get(patch, i);
        if (!has_directive(item))
            json_array_append(*p, item);
        else
            err = special_item(*o, &replace, item, key, b);
    }
    if (!err && replace) {
        json_decref(*o);
        *o = *p;
        *p = json_array();
        if (b)
            b->moved = true; /* the list is the patch's now */
    }
    return err;
}

/* mergeSliceWithoutSpecialElements: each patch item merged into the item with its key, or
 * appended. */
static kapi_error *merge_items(json_t *merged, const json_t *patch, const kapi_patch__meta *m,
                               backing *b)
{
    kapi_error *err = NULL;
    const json_t *v;
    json_t *res;
    long at;
    for (size_t i = 0; i < json_array_size(patch) && !err; i++) {
        json_t *item = json_array_get(patch, i);
        if ((err = merge_value(&v, item, m->merge_key)) != NULL ||
            (err = find_map(&at, merged, m->merge_key, v)) != NULL)
            break;
        if (at < 0) {
            json_array_append(merged, item);
            backing_append(b, item);
        } else if ((err = kapi_patch__merge_map(&res, json_array_get(merged, (size_t)at), item,
                                                m->schema)) == NULL) {
            json_array_set_new(merged, (size_t)at, res);
        }
    }
    return err;
}

static kapi_error *merge_maps(json_t **out, json_t *orig, json_t *patch, const kapi_patch__meta *m,
                              backing *b)
{
    json_t *o = NULL, *p = NULL, *merged = NULL;
    kapi_error *err;
    if (!*m->merge_key)
        return kapi_error_new(KAPI_STATUS_UNKNOWN, "cannot merge lists without merge key for %s",
                              m->kind);
    if ((err = apply_special(&o, &p, orig, patch, m->merge_key, b)) == NULL) {
        merged = json_array();
        json_array_extend(merged, o);
        if ((err = merge_items(merged, p, m, b)) == NULL)
            err = order_merged(out, merged, p, o, m->merge_key, KAPI_PATCH_GO_MAP);
    }
    json_decref(o);
    json_decref(p);
    json_decref(merged);
    return err;
}

/* mergeSlice; b, when not NULL, follows the writes to the document's list (a list of
 * primitives is copied by append, its capacity being its length). */
static kapi_error *merge_slice(json_t **out, json_t *orig, json_t *patch, const kapi_patch__meta *m,
                               bool delete_list, backing *b)
{
    kapi_patch__gotype kind;
    kapi_error *err;
    if (!json_array_size(orig) && !json_array_size(patch)) {
        *out = json_incref(orig);
        return NULL;
    }
    if ((err = element_type(&kind, orig, patch)) != NULL)
        return err;
    if (kind != KAPI_PATCH_GO_MAP)
        return merge_primitives(out, orig, patch, kind, delete_list);
    return merge_maps(out, orig, patch, m, b);
}

/* mergeSliceHandler, following the writes to the document's list in b (NULL: not). */
static kapi_error *merge_list(json_t **out, json_t *orig, json_t *patch, const kapi_patch__meta *m,
                              bool delete_list, backing *b)
{
    if (strcmp(m->strategy, "merge") == 0)
        return merge_slice(out, orig, patch, m, delete_list, b);
    *out = json_incref(patch);
    return NULL;
}

kapi_error *kapi_patch__merge_list(json_t **out, json_t *orig, json_t *patch,
                                   const kapi_patch__meta *m, bool delete_list)
{
    return merge_list(out, orig, patch, m, delete_list, NULL);
}

/* ---- $setElementOrder ---- */

/* mergeKeyValueEqual: two items are the same item (by merge key for maps). */
static kapi_error *same_item(bool *out, const json_t *a, const json_t *b, const char *key)
{
    const json_t *va, *vb;
    kapi_error *err;
    if (!*key) {
        *out = kapi_patch__go_eq(a, b);
        return NULL;
    }
    if ((err = merge_value(&va, a, key)) != NULL || (err = merge_value(&vb, b, key)) != NULL)
        return err;
    *out = kapi_patch__go_eq(va, vb);
    return NULL;
}

/* "The order in patch list: ... doesn't match $setElementOrder list: ...". */
static kapi_error *order_mismatch(const json_t *patch_list, const json_t *order)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "The order in patch list:\n");
    kapi_go_put_fmt(&b, patch_list, 'v');
    kapi_buf_puts(&b, "\n doesn't match " ORDER_PREFIX " list:\n");
    kapi_go_put_fmt(&b, order, 'v');
    kapi_buf_putc(&b, '\n');
    kapi_error *err = kapi_error_new(KAPI_STATUS_UNKNOWN, "%s", b.ptr);
    kapi_buf_dispose(&b);
    return err;
}

/* extractToDeleteItems' first half: the map items of list that do not delete. */
static kapi_error *non_deleting(json_t **out, const json_t *list)
{
    json_t *item;
    size_t i;
    *out = json_array();
    json_array_foreach(list, i, item)
    {
        if (!json_is_object(item))
            return kapi_patch__bad_arg_type("map[string]interface {}", item);
        if (!is_delete(item))
            json_array_append(*out, item);
    }
    return NULL;
}

/* validatePatchWithSetOrderList: the patch's items (but the deleting maps) come in the
 * order list's order and the order list has them all; other "$patch" items are skipped. */
static kapi_error *check_order(const json_t *patch_list, const json_t *order, const char *key)
{
    json_t *items = NULL;
    size_t pi = 0, oi = 0, no = json_array_size(order);
    bool same;
    if (!no || !json_array_size(patch_list))
        return NULL;
    kapi_error *err = *key ? non_deleting(&items, patch_list) : NULL;
    if (!*key)
        items = json_incref((json_t *)patch_list);
    while (!err && pi < json_array_size(items) && oi < no) {
        json_t *item = json_array_get(items, pi);
        if (has_directive(item)) {
            pi++;
        } else if ((err = same_item(&same, item, json_array_get(order, oi), key)) == NULL) {
            pi += same;
            oi++;
        }
    }
    if (!err && pi < json_array_size(items) && oi >= no)
        err = order_mismatch(patch_list, order);
    json_decref(items);
    return err;
}

/* The document's list name and the patch's, checked as mergePatchIntoOriginal checks them
 * (absent lists are NULL), and the list field's patch facts. */
static kapi_error *order_inputs(json_t **ol, json_t **pl, kapi_patch__meta *m, json_t *orig,
                                json_t *patch, const char *name, const json_t *order,
                                const kapi_schema *s)
{
    kapi_error *err;
    *ol = json_object_get(orig, name);
    *pl = json_object_get(patch, name);
    if (*ol && !json_is_array(*ol))
        return kapi_patch__bad_arg_type("[]interface {}", *ol);
    if (*pl && !json_is_array(*pl))
        return kapi_patch__bad_arg_type("[]interface {}", *pl);
    if ((err = kapi_patch__lookup(m, s, name, true)) != NULL)
        return err;
    return *pl ? check_order(*pl, order, m->merge_key) : NULL;
}

/* The merged list put in the $setElementOrder list's order (server, the document's list as
 * the merge left it, or an empty list, giving the order of what the order list lacks) as
 * orig[name]; the patch's list is consumed. ol and pl give the element type. */
static kapi_error *order_into(json_t *orig, json_t *patch, const char *name, const json_t *merged,
                              const json_t *order, const json_t *ol, const json_t *pl,
                              const json_t *server, const char *key)
{
    json_t *in = NULL, *rest = NULL, *res = NULL;
    kapi_patch__gotype kind;
    kapi_error *err = partition(&in, &rest, merged, order, key);
    if (!err)
        err = element_type(&kind, ol, pl);
    if (!err)
        err = normalize(&res, in, rest, order, server, key, kind);
    if (!err) {
        json_object_set_new_nocheck(orig, name, res);
        json_object_del(patch, name);
    }
    json_decref(in);
    json_decref(rest);
    return err;
}

/* One $setElementOrder/<name>: the list merged (or taken whole from the side that has it)
 * and ordered into orig. */
static kapi_error *order_list(json_t *orig, json_t *patch, const char *key, const json_t *order,
                              const kapi_schema *s)
{
    const char *name = NULL;
    json_t *ol = NULL, *pl = NULL, *merged = NULL, *empty;
    kapi_patch__meta m;
    kapi_error *err;
    if (!json_is_array(order))
        return kapi_patch__bad_arg_type("[]interface {}", order);
    if ((err = kapi_patch__directive_list(&name, key, ORDER_PREFIX)) != NULL ||
        (err = order_inputs(&ol, &pl, &m, orig, patch, name, order, s)) != NULL || (!ol && !pl))
        return err;
    empty = json_array();
    backing b = {json_array(), json_array_size(ol), false};
    json_array_extend(b.items, ol ? ol : empty);
    if (ol && pl)
        err = merge_list(&merged, ol, pl, &m, false, &b);
    else
        merged = json_incref(ol ? ol : pl);
    if (!err)
        err = order_into(orig, patch, name, merged, order, ol ? ol : empty, pl ? pl : empty,
                         b.items, m.merge_key);
    json_decref(merged);
    json_decref(empty);
    json_decref(b.items);
    return err;
}

kapi_error *kapi_patch__element_orders(json_t *orig, json_t *patch, const kapi_schema *s)
{
    const char *key;
    json_t *v, *keys = json_array(), *k;
    kapi_error *err = NULL;
    size_t i;
    json_object_foreach(patch, key, v)
    {
        if (strncmp(key, ORDER_PREFIX, strlen(ORDER_PREFIX)) == 0)
            json_array_append_new(keys, json_string(key));
    }
    json_array_foreach(keys, i, k)
    {
        json_t *order = json_incref(json_object_get(patch, json_string_value(k)));
        json_object_del(patch, json_string_value(k));
        err = order_list(orig, patch, json_string_value(k), order, s);
        json_decref(order);
        if (err)
            break;
    }
    json_decref(keys);
    return err;
}
