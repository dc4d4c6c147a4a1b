/*
 * controllers/gc: the garbage collector (reference sections 3 and 4.3; kube-controller-
 * manager's garbagecollector), a client of the api.
 *
 * The graph. Every stored type but Events is watched (the built-in ones from the start,
 * the custom resources of each CRD from when the CRD is seen, until it goes; kube leaves
 * Events out too); each object is a node
 * keyed by its uid, with its owner references (uid, apiVersion, kind, name,
 * blockOwnerDeletion) and the nodes that name it as owner (its dependents). An owner
 * named before it is seen is a virtual node, which holds its dependents until the owner
 * is observed or they go. The watches' callbacks only queue the change (a reference to
 * the stored object) and wake the controller; its thread applies the changes to the
 * graph and marks the nodes they concern dirty, then acts on each dirty node:
 *
 * - being deleted with the orphan finalizer (attemptToOrphan): its uid is removed from
 *   the owner references of each dependent, then the finalizer from it;
 * - being deleted with foregroundDeletion (processDeletingDependentsItem): its
 *   dependents were marked when it began (each is deleted, below); once none with
 *   blockOwnerDeletion is left the finalizer goes, which lets the object go;
 * - otherwise, with owners (attemptToDeleteItem): each owner is solid (exists with that
 *   uid), dangling (absent, or another uid: a live read, as kube's isDangling), or waiting
 *   for its dependents' deletion (foregroundDeletion). With a solid owner the others'
 *   references are removed; without one the object is deleted, in the foreground when a
 *   waiting owner waits on it and it has dependents of its own, else with the policy its
 *   finalizers name (Background by default).
 *
 * The graph decides who to look at; the writes rest on live reads (kapi_api_get) at their
 * resourceVersion, so a stale graph never removes a reference or finalizer by mistake: a
 * refused write (conflict) marks the node again and the pass asks to be retried. A node
 * whose owners the graph all knows as present and not deleting in the foreground is left
 * alone without a read. A watch that loses changes (its RESET) is re-listed, and the
 * type's nodes not listed any more are taken as deleted.
 *
 * Writes are kube-controller-manager's (kapi_controllers_user).
 */
#include "controllers/controllers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "codec/json.h"
#include "codec/json_pick.h"

#define RETRY_MS 200
#define RESYNC_MS 30000

#define FIN_ORPHAN "orphan"
#define FIN_FOREGROUND "foregroundDeletion"

/* An owner reference as the graph keeps it (the live object's are read for the rest). */
typedef struct gc_owner {
    char *uid;
    bool block; /* blockOwnerDeletion */
} gc_owner;

typedef struct gc_node gc_node;
struct gc_node {
    char *uid;             /* the graph's key */
    const kapi_type *type; /* a reference; NULL while virtual */
    char *ns, *name;       /* ns "" when cluster-scoped */
    gc_owner *owners;
    size_t nowners;
    gc_node **deps; /* the nodes naming this one as owner */
    size_t ndeps, capdeps;
    bool observed;   /* seen in a watch (else virtual: only named as an owner) */
    bool deleting;   /* deletionTimestamp set */
    bool orphan, fg; /* the orphan, foregroundDeletion finalizers */
};

typedef struct gc gc;

/* A watch of one stored type (its storage prefix); custom types come and go with CRDs. */
typedef struct gc_watch {
    gc *g;
    /* a reference; a custom type's is replaced by its CRD's newer one (under types_mu,
     * as the watch reads it on the store's thread) */
    const kapi_type *type;
    kapi_store_watch *w;
    bool seen; /* the CRD was listed by the last sync (custom types) */
} gc_watch;

struct gc {
    kapi_controller *c;
    kapi_api *api;
    kapi_map *nodes; /* uid -> gc_node */
    kapi_map *dirty; /* uid -> NULL: nodes to act on */
    /* uid -> NULL: nodes with an owner of a kind not served, acted on again once a new
     * kind is (kube retries them until the kind resolves) */
    kapi_map *unresolved;
    gc_watch **watches;
    size_t nwatches, capwatches;
    pthread_mutex_t types_mu; /* the custom watches' type */
    bool started, crds_changed;
};

static uint64_t str_hash(const void *key, uint64_t seed)
{
    return kapi_map_hash_bytes(key, strlen(key), seed);
}

static bool str_equal(const void *a, const void *b)
{
    return strcmp(a, b) == 0;
}

static const kapi_map_type node_map = {str_hash, str_equal, NULL, NULL};
static const kapi_map_type dirty_map = {str_hash, str_equal, free, NULL};

/* ---- the graph ---- */

static void mark(gc *g, const char *uid)
{
    if (!kapi_map_has(g->dirty, uid))
        kapi_map_put(g->dirty, kapi_xstrdup(uid), NULL);
}

static void owners_clear(gc_node *n)
{
    for (size_t i = 0; i < n->nowners; i++) {
        free(n->owners[i].uid);
    }
    free(n->owners);
    n->owners = NULL;
    n->nowners = 0;
}

static void node_free(gc_node *n)
{
    owners_clear(n);
    kapi_type_unref(n->type);
    free(n->deps);
    free(n->ns);
    free(n->name);
    free(n->uid);
    free(n);
}

static gc_node *node_get(gc *g, const char *uid, bool create)
{
    gc_node *n = kapi_map_get(g->nodes, uid);
    if (!n && create) {
        n = kapi_xcalloc(1, sizeof(*n));
        n->uid = kapi_xstrdup(uid);
        kapi_map_put(g->nodes, n->uid, n);
    }
    return n;
}

/* Drops a virtual node nothing names any more. */
static void node_maybe_drop(gc *g, gc_node *n)
{
    if (n->observed || n->ndeps)
        return;
    kapi_map_remove(g->nodes, n->uid);
    node_free(n);
}

static void dep_add(gc_node *owner, gc_node *dep)
{
    for (size_t i = 0; i < owner->ndeps; i++)
        if (owner->deps[i] == dep)
            return;
    if (owner->ndeps == owner->capdeps) {
        owner->capdeps = owner->capdeps ? owner->capdeps * 2 : 4;
        owner->deps = kapi_xrealloc(owner->deps, owner->capdeps * sizeof(*owner->deps));
    }
    owner->deps[owner->ndeps++] = dep;
}

static void dep_remove(gc_node *owner, gc_node *dep)
{
    for (size_t i = 0; i < owner->ndeps; i++)
        if (owner->deps[i] == dep) {
            owner->deps[i] = owner->deps[--owner->ndeps];
            return;
        }
}

/* Unlinks n from its owners: an owner deleting its dependents in the foreground is
 * marked (it may be done waiting), a virtual one nothing names goes. */
static void unlink_owners(gc *g, gc_node *n)
{
    for (size_t i = 0; i < n->nowners; i++) {
        gc_node *o = node_get(g, n->owners[i].uid, false);
        if (!o)
            continue;
        dep_remove(o, n);
        if (o->deleting && o->fg)
            mark(g, o->uid);
        node_maybe_drop(g, o);
    }
    owners_clear(n);
}

static char *member(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return kapi_xstrdup(s ? s : "");
}

/* Links n to the owners its metadata names; a node with an owner not observed is marked
 * (whether that owner exists is a live read). */
static void link_owners(gc *g, gc_node *n, const json_t *meta)
{
    const json_t *refs = json_object_get(meta, "ownerReferences");
    size_t i;
    const json_t *ref;
    n->owners = kapi_xcalloc(json_array_size(refs) + 1, sizeof(*n->owners));
    json_array_foreach(refs, i, ref)
    {
        const char *uid = json_string_value(json_object_get(ref, "uid"));
        if (!uid || !*uid)
            continue;
        gc_owner *o = &n->owners[n->nowners++];
        o->uid = kapi_xstrdup(uid);
        o->block = json_is_true(json_object_get(ref, "blockOwnerDeletion"));
        gc_node *owner = node_get(g, uid, true);
        dep_add(owner, n);
        if (!owner->observed || (owner->deleting && owner->fg))
            mark(g, n->uid);
    }
}

static bool has_string(const json_t *array, const char *s)
{
    size_t i;
    const json_t *v;
    json_array_foreach(array, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

/* An object of t was created or changed (meta: its metadata). */
static void observe_put(gc *g, const kapi_type *t, const json_t *meta)
{
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (!uid || !*uid)
        return;
    gc_node *n = node_get(g, uid, true);
    bool was_fg = n->deleting && n->fg;
    if (!n->observed) {
        n->observed = true;
        n->type = kapi_type_ref(t);
        n->ns = member(meta, "namespace");
        n->name = member(meta, "name");
    }
    const json_t *fins = json_object_get(meta, "finalizers");
    n->deleting = json_object_get(meta, "deletionTimestamp") != NULL;
    n->orphan = has_string(fins, FIN_ORPHAN);
    n->fg = has_string(fins, FIN_FOREGROUND);
    unlink_owners(g, n);
    link_owners(g, n, meta);
    if (n->deleting && (n->orphan || n->fg))
        mark(g, n->uid);
    for (size_t i = 0; n->deleting && n->fg && !was_fg && i < n->ndeps; i++)
        mark(g, n->deps[i]->uid);
}

/* The object uid went: its dependents are marked (their owner may be dangling) and it
 * stays as a virtual node while they name it. */
static void observe_delete(gc *g, const char *uid)
{
    gc_node *n = node_get(g, uid, false);
    if (!n || !n->observed)
        return;
    for (size_t i = 0; i < n->ndeps; i++)
        mark(g, n->deps[i]->uid);
    kapi_map_remove(g->unresolved, uid);
    unlink_owners(g, n);
    n->observed = n->deleting = n->orphan = n->fg = false;
    kapi_type_unref(n->type);
    n->type = NULL;
    free(n->ns);
    free(n->name);
    n->ns = n->name = NULL;
    node_maybe_drop(g, n);
}

/* ---- the watches ---- */

/* A watch's callback, on the store's thread: the change is queued, nothing parsed. */
static bool watched(void *ctx, const kapi_store_event *ev)
{
    gc_watch *w = ctx;
    pthread_mutex_lock(&w->g->types_mu);
    kapi_controllers__queue(w->g->c, w->type, ev);
    pthread_mutex_unlock(&w->g->types_mu);
    return true;
}

/* What the graph reads of a stored object's metadata, picked from its bytes (every write
 * of every type comes here: parsing whole objects cost more than the rest of the pass;
 * kapi wrote them, each name once, so the scan ends with metadata), or NULL. */
static json_t *parse_meta(const kapi_obj *o)
{
    static const char *const keys[] = {
        "uid", "namespace", "name", "finalizers", "deletionTimestamp", "ownerReferences", NULL};
    return kapi_json_pick_unique(o->data, o->len, "metadata", keys);
}

static bool is_crds(gc *g, const kapi_type *t)
{
    return t == kapi_registry_crds(kapi_api_registry(g->api));
}

/* A list's objects going into the graph. */
typedef struct listing {
    gc *g;
    const kapi_type *t;
    kapi_map *uids; /* or NULL */
} listing;

static void listed(void *ctx, const kapi_obj *o)
{
    listing *l = ctx;
    json_t *meta = parse_meta(o);
    if (!meta)
        return;
    observe_put(l->g, l->t, meta);
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (l->uids && uid && !kapi_map_has(l->uids, uid))
        kapi_map_put(l->uids, kapi_xstrdup(uid), NULL);
    json_decref(meta);
}

/* Lists t into the graph; *uids (may be NULL) gets the uids listed. Each object's
 * metadata is picked from its stored bytes, as a watch's changes are (a whole parse of a
 * list of 100,000 Events held some 700 MB at once, which mimalloc kept after). Returns
 * the revision read at, or -1 when the list failed. */
static int64_t list_type(gc *g, const kapi_type *t, kapi_map *uids)
{
    int64_t rev = 0;
    listing l = {g, t, uids};
    kapi_error *err = kapi_api_list_stored(g->api, t, KAPI_STR(""), listed, &l, &rev);
    if (err) {
        kapi_error_free(err);
        return -1;
    }
    if (is_crds(g, t))
        g->crds_changed = true;
    return rev;
}

/* Lists t into the graph and watches it from there; false when either failed. */
static bool watch_type(gc *g, const kapi_type *t)
{
    int64_t rev = list_type(g, t, NULL);
    gc_watch *w = kapi_xcalloc(1, sizeof(*w));
    w->g = g;
    w->type = kapi_type_ref(t);
    w->seen = true;
    if (rev < 0 ||
        kapi_api_watch_start(g->api, t, KAPI_STR(""), rev, watched, w, &w->w) != KAPI_STORE_OK) {
        kapi_type_unref(w->type);
        free(w);
        return false;
    }
    if (g->nwatches == g->capwatches) {
        g->capwatches = g->capwatches ? g->capwatches * 2 : 32;
        g->watches = kapi_xrealloc(g->watches, g->capwatches * sizeof(*g->watches));
    }
    g->watches[g->nwatches++] = w;
    return true;
}

static void watch_free(gc *g, gc_watch *w)
{
    kapi_api_watch_stop(g->api, w->w);
    kapi_type_unref(w->type);
    free(w);
}

static bool same_storage(const kapi_type *a, const kapi_type *b)
{
    return strcmp(a->storage_prefix, b->storage_prefix) == 0;
}

/* The watch of t's storage, or NULL. */
static gc_watch *watch_of(gc *g, const kapi_type *t)
{
    for (size_t i = 0; i < g->nwatches; i++)
        if (same_storage(g->watches[i]->type, t))
            return g->watches[i];
    return NULL;
}

/* Events, which kube's collector leaves out (DefaultIgnoredResources: core and
 * events.k8s.io events): they are not in the graph, so one whose owner goes stays (its
 * ttl removes it), and as an owner an Event is read live, as an unseen kind is. Their
 * types take no finalizers of the collector's (default policy Unsupported). */
static bool ignored(const kapi_type *t)
{
    return strcmp(t->plural, "events") == 0 &&
           (!*t->group || strcmp(t->group, "events.k8s.io") == 0);
}

/* The built-in types but Events: each stored one once (two served types may share a
 * storage). False when one could not be watched (tried again at the next pass). */
static bool watch_builtin(gc *g)
{
    const kapi_registry *reg = kapi_api_registry(g->api);
    bool ok = true;
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const kapi_type *t = kapi_registry_at(reg, i);
        if (t->persisted && !ignored(t) && !watch_of(g, t))
            ok &= watch_type(g, t);
    }
    return ok;
}

/* w, still listed, takes its CRD's type as built now: the one it was started with is of
 * the CRD as it was then (each write of a CRD builds its type anew), and holding it kept
 * two of every type alive. */
static void take_type(gc *g, gc_watch *w, const kapi_type *t)
{
    w->seen = true;
    if (w->type == t)
        return;
    const kapi_type *old = w->type;
    pthread_mutex_lock(&g->types_mu);
    w->type = kapi_type_ref(t);
    pthread_mutex_unlock(&g->types_mu);
    kapi_type_unref(old);
}

/* The storage types of the CRDs listed (references), each CRD parsed and dropped in
 * turn: a list of them all parsed held every CRD's schemas at once, at every CRD change,
 * and the allocator kept that peak (some 90 KB of RSS per CRD over 200 CRDs). */
typedef struct crd_types {
    gc *g;
    const kapi_type **t;
    size_t n, cap;
} crd_types;

static void crd_listed(void *ctx, const kapi_obj *o)
{
    crd_types *c = ctx;
    json_t *crd = kapi_json_parse(o->data, o->len, NULL);
    const kapi_type *t = NULL;
    if (crd)
        kapi_error_free(kapi_controllers__storage_type(c->g->api, crd, &t));
    json_decref(crd);
    if (!t)
        return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->t = kapi_xrealloc(c->t, c->cap * sizeof(*c->t));
    }
    c->t[c->n++] = t;
}

/* Watches the custom resources of every CRD listed, and stops watching those of CRDs
 * gone; false when one could not be watched. */
static bool sync_custom(gc *g)
{
    const kapi_type *crdt = kapi_registry_crds(kapi_api_registry(g->api));
    crd_types crds = {.g = g};
    size_t i, watched = g->nwatches;
    kapi_error *err = kapi_api_list_stored(g->api, crdt, KAPI_STR(""), crd_listed, &crds, NULL);
    bool listed = !err, ok = listed;
    kapi_error_free(err);
    for (i = 0; listed && i < g->nwatches; i++)
        g->watches[i]->seen = !g->watches[i]->type->custom;
    for (i = 0; listed && i < crds.n; i++) {
        gc_watch *w = watch_of(g, crds.t[i]);
        if (w)
            take_type(g, w, crds.t[i]);
        else
            ok &= watch_type(g, crds.t[i]);
    }
    for (i = 0; i < crds.n; i++)
        kapi_type_unref(crds.t[i]);
    free(crds.t);
    if (g->nwatches > watched) { /* a new kind: the unresolved owners are looked at again */
        kapi_map_iter it = {0};
        void *uid;
        while (kapi_map_next(g->unresolved, &it, &uid, NULL))
            mark(g, uid);
        kapi_map_free(g->unresolved);
        g->unresolved = kapi_map_new(&dirty_map);
    }
    for (i = 0; ok && i < g->nwatches;)
        if (g->watches[i]->seen)
            i++;
        else {
            watch_free(g, g->watches[i]);
            g->watches[i] = g->watches[--g->nwatches];
        }
    return ok;
}

/* After a RESET of t's watch: t re-listed, and its nodes not listed taken as deleted. */
static void relist(gc *g, const kapi_type *t)
{
    kapi_map *uids = kapi_map_new(&dirty_map);
    if (list_type(g, t, uids) >= 0) {
        kapi_map_iter it = {0};
        void *key, *val;
        size_t n = 0, cap = kapi_map_count(g->nodes);
        char **gone = kapi_xcalloc(cap + 1, sizeof(*gone));
        while (kapi_map_next(g->nodes, &it, &key, &val)) {
            gc_node *node = val;
            if (node->observed && same_storage(node->type, t) && !kapi_map_has(uids, key))
                gone[n++] = kapi_xstrdup(key);
        }
        for (size_t i = 0; i < n; i++) {
            observe_delete(g, gone[i]);
            free(gone[i]);
        }
        free(gone);
    }
    kapi_map_free(uids);
}

/* Applies the queued changes to the graph; when some were lost, every watched type is
 * listed again first. */
static void apply_changes(gc *g)
{
    size_t n;
    bool lost;
    kapi_controller_change *changes = kapi_controllers__take(g->c, &n, &lost);
    if (lost) {
        for (size_t i = 0; i < g->nwatches; i++)
            relist(g, g->watches[i]->type);
        g->crds_changed = true;
    }
    for (size_t i = 0; i < n; i++) {
        kapi_controller_change *ch = &changes[i];
        json_t *meta = ch->obj ? parse_meta(ch->obj) : NULL;
        const char *uid = json_string_value(json_object_get(meta, "uid"));
        if (ch->what == KAPI_STORE_EVENT_RESET)
            relist(g, ch->type);
        else if (ch->what == KAPI_STORE_EVENT_DELETE && uid)
            observe_delete(g, uid);
        else if (meta)
            observe_put(g, ch->type, meta);
        if (is_crds(g, ch->type))
            g->crds_changed = true;
        json_decref(meta);
    }
    kapi_controllers__changes_free(changes, n);
}

/* ---- acting on a node ---- */

static bool is_kind(const kapi_type *t, kapi_str group, const char *kind)
{
    return strlen(t->group) == group.len && strncmp(t->group, group.ptr, group.len) == 0 &&
           strcmp(t->kind, kind) == 0;
}

/* The type an owner reference names by its apiVersion's group and its kind, or NULL
 * when none is served (a custom kind whose CRD is not seen). */
static const kapi_type *owner_type(gc *g, const char *api_version, const char *kind)
{
    const char *slash = strchr(api_version, '/');
    kapi_str group = {api_version, slash ? (size_t)(slash - api_version) : 0};
    const kapi_registry *reg = kapi_api_registry(g->api);
    for (size_t i = 0; i < kapi_registry_count(reg); i++)
        if (is_kind(kapi_registry_at(reg, i), group, kind))
            return kapi_registry_at(reg, i);
    for (size_t i = 0; i < g->nwatches; i++)
        if (is_kind(g->watches[i]->type, group, kind))
            return g->watches[i]->type;
    return NULL;
}

static kapi_str cstr(const char *s)
{
    return (kapi_str){s, strlen(s)};
}

/* The object n is, read now: NULL when it is gone or another object took its name. */
static json_t *read_node(gc *g, const gc_node *n)
{
    json_t *obj = NULL;
    kapi_error_free(kapi_api_get(g->api, n->type, cstr(n->ns), cstr(n->name), &obj));
    const char *uid = kapi_json_path_str(obj, "metadata.uid");
    if (obj && (!uid || strcmp(uid, n->uid) != 0)) {
        json_decref(obj);
        obj = NULL;
    }
    return obj;
}

/* Writes obj (taken), changed from what read_node read; false when refused (a conflict
 * is tried again). A write to an object gone meanwhile is done. */
static bool write_back(gc *g, const gc_node *n, json_t *obj)
{
    kapi_error *err = kapi_api_update(g->api, &kapi_controllers_user, n->type, "", obj, NULL);
    bool ok = !err || err->status == KAPI_STATUS_NOT_FOUND;
    kapi_error_free(err);
    return ok;
}

/* Removes the finalizer fin from n (removeFinalizer); false when it must be tried again. */
static bool remove_finalizer(gc *g, const gc_node *n, const char *fin)
{
    json_t *obj = read_node(g, n);
    json_t *fins = kapi_json_path(obj, "metadata.finalizers");
    bool found = false;
    for (size_t i = 0; i < json_array_size(fins); i++)
        if (strcmp(json_string_value(json_array_get(fins, i)) ?: "", fin) == 0) {
            json_array_remove(fins, i--);
            found = true;
        }
    if (!found) {
        json_decref(obj);
        return true;
    }
    return write_back(g, n, obj);
}

static bool among(const char *const *uids, size_t n, const char *uid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(uids[i], uid) == 0)
            return true;
    return false;
}

/* Removes from dep's owner references those to uids[0..n) (or, with unblock, sets their
 * blockOwnerDeletion false); false when it must be tried again. */
static bool edit_owner_refs(gc *g, const gc_node *dep, const char *const *uids, size_t n,
                            bool unblock)
{
    json_t *obj = read_node(g, dep);
    json_t *refs = kapi_json_path(obj, "metadata.ownerReferences");
    bool changed = false;
    for (size_t i = 0; i < json_array_size(refs); i++) {
        json_t *ref = json_array_get(refs, i);
        if (!among(uids, n, json_string_value(json_object_get(ref, "uid")) ?: ""))
            continue;
        changed = true;
        if (unblock)
            json_object_set_new_nocheck(ref, "blockOwnerDeletion", json_false());
        else
            json_array_remove(refs, i--);
    }
    if (json_is_array(refs) && json_array_size(refs) == 0)
        json_object_del(kapi_json_path(obj, "metadata"), "ownerReferences");
    if (!changed) {
        json_decref(obj);
        return true;
    }
    return write_back(g, dep, obj);
}

/* attemptToOrphan: n's uid leaves its dependents' owner references, then its orphan
 * finalizer goes; false when it must be tried again. */
static bool orphan_dependents(gc *g, const gc_node *n)
{
    const char *const uids[] = {n->uid};
    bool ok = true;
    for (size_t i = 0; i < n->ndeps; i++)
        if (n->deps[i]->observed)
            ok &= edit_owner_refs(g, n->deps[i], uids, 1, false);
    return ok && remove_finalizer(g, n, FIN_ORPHAN);
}

/* The reference of dep to owner blocks the owner's deletion. */
static bool blocks(const gc_node *dep, const gc_node *owner)
{
    for (size_t i = 0; i < dep->nowners; i++)
        if (dep->owners[i].block && strcmp(dep->owners[i].uid, owner->uid) == 0)
            return true;
    return false;
}

/* processDeletingDependentsItem: once no dependent blocks n its foregroundDeletion
 * finalizer goes; until then the blocking dependents not yet being deleted are marked
 * (their deletion is attempted) and n waits for their deletes, which mark it again. */
static bool delete_dependents(gc *g, const gc_node *n)
{
    size_t blocking = 0;
    for (size_t i = 0; i < n->ndeps; i++) {
        gc_node *dep = n->deps[i];
        if (!dep->observed || !blocks(dep, n))
            continue;
        blocking++;
        if (!dep->deleting)
            mark(g, dep->uid);
    }
    return blocking || remove_finalizer(g, n, FIN_FOREGROUND);
}

/* True when the graph knows every owner of n as present and not waiting for its
 * dependents: nothing to read or do. */
static bool owners_solid(gc *g, const gc_node *n)
{
    for (size_t i = 0; i < n->nowners; i++) {
        const gc_node *o = node_get(g, n->owners[i].uid, false);
        if (!o || !o->observed || (o->deleting && o->fg))
            return false;
    }
    return true;
}

/* The owners of an object, sorted by what they are (classifyReferences); the uids are
 * borrowed from the object read. */
typedef struct gc_owners {
    const char **dangling, **waiting; /* the uids of each kind */
    size_t ndangling, nwaiting, nsolid;
} gc_owners;

/* Where the owner ref (of n) is: solid, dangling (absent, or another object by its name:
 * kube's isDangling, a live read) or waiting (deleting its dependents in the foreground).
 * An owner of a kind not served counts as solid, nothing being known against it, and n
 * is looked at again when a new kind is served. */
static void classify(gc *g, const gc_node *n, const json_t *ref, gc_owners *out)
{
    const char *uid = json_string_value(json_object_get(ref, "uid")) ?: "";
    const gc_node *known = node_get(g, uid, false);
    const kapi_type *t = known && known->observed
                             ? known->type
                             : owner_type(g, kapi_json_path_str(ref, "apiVersion") ?: "",
                                          kapi_json_path_str(ref, "kind") ?: "");
    if (!t) {
        if (!kapi_map_has(g->unresolved, n->uid))
            kapi_map_put(g->unresolved, kapi_xstrdup(n->uid), NULL);
        out->nsolid++;
        return;
    }
    json_t *owner = NULL;
    const char *name = kapi_json_path_str(ref, "name") ?: "";
    kapi_error_free(
        kapi_api_get(g->api, t, t->namespaced ? cstr(n->ns) : KAPI_STR(""), cstr(name), &owner));
    const char *got = kapi_json_path_str(owner, "metadata.uid");
    if (!owner || !got || strcmp(got, uid) != 0)
        out->dangling[out->ndangling++] = uid;
    else if (kapi_json_path(owner, "metadata.deletionTimestamp") &&
             has_string(kapi_json_path(owner, "metadata.finalizers"), FIN_FOREGROUND))
        out->waiting[out->nwaiting++] = uid;
    else
        out->nsolid++;
    json_decref(owner);
}

/* Deletes n (its uid a precondition) with the propagation policy; false when it must
 * be tried again. */
static bool delete_node(gc *g, const gc_node *n, const char *policy)
{
    kapi_delete_opts d = {.propagation = policy, .pre_uid = n->uid, .grace = -1};
    kapi_error *err = kapi_api_delete(g->api, &kapi_controllers_user, n->type, cstr(n->ns),
                                      cstr(n->name), &d, NULL, NULL);
    bool ok = !err || err->status == KAPI_STATUS_NOT_FOUND || err->status == KAPI_STATUS_CONFLICT;
    kapi_error_free(err);
    return ok;
}

/* With owners waiting for n and dependents of its own, n goes in the foreground too;
 * when one of those dependents is itself waiting for its dependents (a cycle), n's
 * references to the waiting owners stop blocking them first (kube's
 * unblockOwnerReferences). */
static bool delete_in_foreground(gc *g, const gc_node *n, const gc_owners *o)
{
    for (size_t i = 0; i < n->ndeps; i++)
        if (n->deps[i]->deleting && n->deps[i]->fg) {
            if (!edit_owner_refs(g, n, o->waiting, o->nwaiting, true))
                return false;
            break;
        }
    return delete_node(g, n, "Foreground");
}

/* attemptToDeleteItem for n, not being deleted, with owners; false when it must be
 * tried again. */
static bool attempt_delete(gc *g, const gc_node *n)
{
    if (owners_solid(g, n))
        return true;
    json_t *obj = read_node(g, n);
    const json_t *refs = kapi_json_path(obj, "metadata.ownerReferences");
    size_t nrefs = json_array_size(refs), i;
    const json_t *ref;
    gc_owners o = {kapi_xcalloc(nrefs + 1, sizeof(char *)), kapi_xcalloc(nrefs + 1, sizeof(char *)),
                   0, 0, 0};
    json_array_foreach(refs, i, ref)
    {
        classify(g, n, ref, &o);
    }
    bool ok = true;
    if (!obj || nrefs == 0)
        ok = true;
    else if (o.nsolid) { /* the others' references go */
        ok = edit_owner_refs(g, n, o.dangling, o.ndangling, false) &&
             edit_owner_refs(g, n, o.waiting, o.nwaiting, false);
    } else if (o.nwaiting && n->ndeps)
        ok = delete_in_foreground(g, n, &o);
    else {
        const json_t *fins = kapi_json_path(obj, "metadata.finalizers");
        ok = delete_node(g, n,
                         has_string(fins, FIN_ORPHAN)       ? "Orphan"
                         : has_string(fins, FIN_FOREGROUND) ? "Foreground"
                                                            : "Background");
    }
    free(o.dangling);
    free(o.waiting);
    json_decref(obj);
    return ok;
}

/* Acts on the node uid; false when it must be tried again. */
static bool act(gc *g, const char *uid)
{
    const gc_node *n = node_get(g, uid, false);
    if (!n || !n->observed)
        return true;
    if (n->deleting)
        return n->orphan ? orphan_dependents(g, n) : !n->fg || delete_dependents(g, n);
    return n->nowners == 0 || attempt_delete(g, n);
}

static bool pass(kapi_controller *c)
{
    gc *g = kapi_controllers__ctx(c);
    g->c = c;
    if (!g->started)
        g->started = watch_builtin(g);
    apply_changes(g);
    if (g->crds_changed)
        g->crds_changed = !sync_custom(g);
    kapi_map *work = g->dirty;
    g->dirty = kapi_map_new(&dirty_map);
    kapi_map_iter it = {0};
    void *uid;
    while (kapi_map_next(work, &it, &uid, NULL))
        if (kapi_controllers__stopping(c) || !act(g, uid))
            mark(g, uid);
    kapi_map_free(work);
    return !g->started || g->crds_changed || kapi_map_count(g->dirty) > 0;
}

static void dispose(void *ctx)
{
    gc *g = ctx;
    for (size_t i = 0; i < g->nwatches; i++)
        watch_free(g, g->watches[i]);
    free(g->watches);
    kapi_map_iter it = {0};
    void *n;
    while (kapi_map_next(g->nodes, &it, NULL, &n))
        node_free(n);
    kapi_map_free(g->nodes);
    kapi_map_free(g->dirty);
    kapi_map_free(g->unresolved);
    pthread_mutex_destroy(&g->types_mu);
    free(g);
}

kapi_controller *kapi_gc_controller_start(kapi_api *api)
{
    gc *g = kapi_xcalloc(1, sizeof(*g));
    g->api = api;
    g->nodes = kapi_map_new(&node_map);
    g->dirty = kapi_map_new(&dirty_map);
    g->unresolved = kapi_map_new(&dirty_map);
    pthread_mutex_init(&g->types_mu, NULL);
    const kapi_type *none[] = {NULL};
    return kapi_controllers__start_with(api, "garbage-collector", none, RETRY_MS, RESYNC_MS, pass,
                                        g, dispose);
}
