/*
 * index: the in-memory index of the latest state, key -> kapi_obj in byte order.
 *
 * An AVL tree: inserts and removals are O(log n) and its height stays under 1.45 log2 n,
 * so recursion and the iterator's fixed stack are bounded. Every node counts the nodes of
 * its subtree, which makes "how many keys lie between two bounds" O(log n): a list sizes
 * its result and its `remaining` without walking the keys it does not return.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

/* Height bound of an AVL tree of 2^64 nodes is ~92. */
#define MAX_HEIGHT 96

struct kapi_store__node {
    kapi_store__node *l, *r;
    kapi_obj *obj;
    size_t klen; /* the key is obj->key */
    size_t size; /* nodes in this subtree */
    int height;
};

typedef kapi_store__node node;

/* How a node's key is compared with a bound when counting. */
typedef enum bound_mode {
    BOUND_LT,     /* keys < bound */
    BOUND_LE,     /* keys <= bound */
    BOUND_PREFIX, /* keys < bound, or starting with it: everything up to the prefix's end */
} bound_mode;

static int cmp_key(const char *a, size_t alen, kapi_str b)
{
    size_t n = alen < b.len ? alen : b.len;
    int c = n ? memcmp(a, b.ptr, n) : 0;
    if (c)
        return c;
    return alen < b.len ? -1 : alen > b.len;
}

static int node_cmp(const node *n, kapi_str k)
{
    return cmp_key(n->obj->key, n->klen, k);
}

static bool node_has_prefix(const node *n, kapi_str prefix)
{
    return prefix.len == 0 ||
           (n->klen >= prefix.len && memcmp(n->obj->key, prefix.ptr, prefix.len) == 0);
}

static int height(const node *n)
{
    return n ? n->height : 0;
}

static size_t size(const node *n)
{
    return n ? n->size : 0;
}

static void fix(node *n)
{
    int hl = height(n->l), hr = height(n->r);
    n->height = 1 + (hl > hr ? hl : hr);
    n->size = 1 + size(n->l) + size(n->r);
}

static node *rotate_right(node *n)
{
    node *l = n->l;
    n->l = l->r;
    l->r = n;
    fix(n);
    fix(l);
    return l;
}

static node *rotate_left(node *n)
{
    node *r = n->r;
    n->r = r->l;
    r->l = n;
    fix(n);
    fix(r);
    return r;
}

static node *balance(node *n)
{
    fix(n);
    int bf = height(n->l) - height(n->r);
    if (bf > 1) {
        if (height(n->l->l) < height(n->l->r))
            n->l = rotate_left(n->l);
        return rotate_right(n);
    }
    if (bf < -1) {
        if (height(n->r->r) < height(n->r->l))
            n->r = rotate_right(n->r);
        return rotate_left(n);
    }
    return n;
}

static node *node_new(kapi_obj *o, size_t klen)
{
    node *n = kapi_xcalloc(1, sizeof(*n));
    n->obj = o;
    n->klen = klen;
    n->size = 1;
    n->height = 1;
    return n;
}

static node *insert(node *n, kapi_obj *o, kapi_str key)
{
    if (!n)
        return node_new(o, key.len);
    int c = node_cmp(n, key);
    if (c == 0) {
        kapi_obj_unref(n->obj);
        n->obj = o;
        return n;
    }
    if (c > 0)
        n->l = insert(n->l, o, key);
    else
        n->r = insert(n->r, o, key);
    return balance(n);
}

/* Detaches the leftmost node of n into *out; returns what replaces n. */
static node *detach_min(node *n, node **out)
{
    if (!n->l) {
        *out = n;
        return n->r;
    }
    n->l = detach_min(n->l, out);
    return balance(n);
}

static node *unlink_node(node *n)
{
    node *repl = NULL;
    if (!n->l || !n->r) {
        repl = n->l ? n->l : n->r;
    } else {
        node *right = detach_min(n->r, &repl);
        repl->l = n->l;
        repl->r = right;
        repl = balance(repl);
    }
    kapi_obj_unref(n->obj);
    free(n);
    return repl;
}

static node *remove_key(node *n, kapi_str key)
{
    if (!n)
        return NULL;
    int c = node_cmp(n, key);
    if (c == 0)
        return unlink_node(n);
    if (c > 0)
        n->l = remove_key(n->l, key);
    else
        n->r = remove_key(n->r, key);
    return balance(n);
}

static void free_tree(node *n)
{
    if (!n)
        return;
    free_tree(n->l);
    free_tree(n->r);
    kapi_obj_unref(n->obj);
    free(n);
}

static bool before_bound(const node *n, kapi_str bound, bound_mode mode)
{
    if (mode == BOUND_PREFIX) {
        size_t m = n->klen < bound.len ? n->klen : bound.len;
        int c = m ? memcmp(n->obj->key, bound.ptr, m) : 0;
        return c <= 0; /* equal on the shorter length: below the prefix or under it */
    }
    int c = node_cmp(n, bound);
    return mode == BOUND_LT ? c < 0 : c <= 0;
}

/* The number of keys before the bound (the predicate holds for a prefix of the order). */
static size_t count_before(const node *n, kapi_str bound, bound_mode mode)
{
    size_t count = 0;
    while (n) {
        if (before_bound(n, bound, mode)) {
            count += size(n->l) + 1;
            n = n->r;
        } else {
            n = n->l;
        }
    }
    return count;
}

/* An in-order iterator from a lower bound, with an explicit stack. */
typedef struct iter {
    const node *stack[MAX_HEIGHT];
    int top;
} iter;

static void iter_seek(iter *it, const node *n, kapi_str k, bool strict)
{
    it->top = 0;
    while (n) {
        int c = node_cmp(n, k);
        if (c > 0 || (c == 0 && !strict)) {
            it->stack[it->top++] = n;
            n = n->l;
        } else {
            n = n->r;
        }
    }
}

static const node *iter_next(iter *it)
{
    if (it->top == 0)
        return NULL;
    const node *t = it->stack[--it->top];
    for (const node *n = t->r; n; n = n->l)
        it->stack[it->top++] = n;
    return t;
}

void kapi_store__index_init(kapi_store__index *ix)
{
    ix->root = NULL;
}

void kapi_store__index_dispose(kapi_store__index *ix)
{
    free_tree(ix->root);
    ix->root = NULL;
}

size_t kapi_store__index_count(const kapi_store__index *ix)
{
    return size(ix->root);
}

kapi_obj *kapi_store__index_get(const kapi_store__index *ix, kapi_str key)
{
    const node *n = ix->root;
    while (n) {
        int c = node_cmp(n, key);
        if (c == 0)
            return n->obj;
        n = c > 0 ? n->l : n->r;
    }
    return NULL;
}

void kapi_store__index_put(kapi_store__index *ix, kapi_obj *o)
{
    ix->root = insert(ix->root, o, kapi_obj_key(o));
}

void kapi_store__index_remove(kapi_store__index *ix, kapi_str key)
{
    ix->root = remove_key(ix->root, key);
}

void kapi_store__index_list(const kapi_store__index *ix, kapi_str prefix, kapi_str start_after,
                            size_t limit, kapi_store_list_result *out)
{
    kapi_str lower = prefix;
    bool strict = false;
    if (start_after.len && cmp_key(start_after.ptr, start_after.len, prefix) >= 0) {
        lower = start_after;
        strict = true;
    }
    size_t end = count_before(ix->root, prefix, BOUND_PREFIX);
    size_t begin = count_before(ix->root, lower, strict ? BOUND_LE : BOUND_LT);
    size_t avail = end > begin ? end - begin : 0;
    size_t n = limit && limit < avail ? limit : avail;

    out->items = n ? kapi_xmalloc(n * sizeof(*out->items)) : NULL;
    out->n = 0;
    out->remaining = avail - n;
    iter it;
    iter_seek(&it, ix->root, lower, strict);
    for (const node *nd; out->n < n && (nd = iter_next(&it)) != NULL;) {
        if (!node_has_prefix(nd, prefix))
            break;
        out->items[out->n++] = kapi_obj_ref(nd->obj);
    }
}
