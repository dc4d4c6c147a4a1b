/*
 * smd/update: each manager's set through a write (smd.h, "the updater"), a port of
 * structured-merge-diff's merge.Updater and typed.ReconcileFieldSetWithSchema.
 *
 * An update gives its manager what changed and takes it from the others; an apply merges
 * the applied configuration over the live object, lets the applier own exactly what it
 * applied, prunes what it applied before and no longer does (unless another manager
 * owns it), and refuses to change another manager's fields without force.
 *
 * Objects are compared in the version of each manager's set: the updater's converter
 * shows the object in that version once per version and call ("seen").
 */
#include "smd/smd.h"

#include <stdlib.h>
#include <string.h>

/* ---- managers ---- */

kapi_smd_manager *kapi_smd_managers_get(const kapi_smd_managers *ms, const char *id)
{
    for (size_t i = 0; i < ms->n; i++)
        if (strcmp(ms->m[i].id, id) == 0)
            return &ms->m[i];
    return NULL;
}

void kapi_smd_managers_put(kapi_arena *a, kapi_smd_managers *ms, const kapi_smd_manager *m)
{
    kapi_smd_manager *have = kapi_smd_managers_get(ms, m->id);
    if (have) {
        *have = *m;
        return;
    }
    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? 2 * ms->cap : 8;
        kapi_smd_manager *grown = kapi_arena_alloc(a, cap * sizeof(*grown));
        if (ms->n)
            memcpy(grown, ms->m, ms->n * sizeof(*grown));
        ms->m = grown;
        ms->cap = cap;
    }
    ms->m[ms->n++] = *m;
}

void kapi_smd_managers_remove(kapi_smd_managers *ms, const char *id)
{
    kapi_smd_manager *m = kapi_smd_managers_get(ms, id);
    if (!m)
        return;
    size_t i = (size_t)(m - ms->m);
    memmove(ms->m + i, ms->m + i + 1, (ms->n - i - 1) * sizeof(*ms->m));
    ms->n--;
}

/* ---- the object in each version ---- */

/* The old and new object as seen in one version, and what changed there. */
typedef struct seen {
    const char *version;
    kapi_smd_view view;
    json_t *old, *obj; /* owned */
    bool missing;      /* the object has no such version */
    bool compared;
    kapi_smd_comparison cmp;
} seen;

typedef struct call {
    kapi_arena *a;
    const kapi_smd_updater *u;
    seen *seen;
    size_t nseen, seen_cap;
    const char *errors;
} call;

static void call_dispose(call *c)
{
    for (size_t i = 0; i < c->nseen; i++) {
        json_decref(c->seen[i].old);
        json_decref(c->seen[i].obj);
    }
    free(c->seen);
}

/* obj in version v (a new reference, *view its view), or NULL for a missing version. */
static json_t *convert(call *c, const json_t *obj, const char *v, kapi_smd_view *view)
{
    if (strcmp(v, c->u->version) == 0) {
        *view = c->u->view;
        return json_incref((json_t *)obj);
    }
    if (!c->u->convert)
        return NULL;
    return c->u->convert(c->u->ctx, obj, v, view);
}

/* The objects of this call (old, obj) seen in version v, each converted the first time
 * it is asked for (reconcile asks for the old object's view only). */
static seen *seen_in(call *c, const json_t *old, const json_t *obj, const char *v)
{
    seen *s = NULL;
    for (size_t i = 0; i < c->nseen && !s; i++)
        if (strcmp(c->seen[i].version, v) == 0)
            s = &c->seen[i];
    if (!s) {
        if (c->nseen == c->seen_cap) {
            c->seen_cap = c->seen_cap ? 2 * c->seen_cap : 4;
            c->seen = kapi_xrealloc(c->seen, c->seen_cap * sizeof(*c->seen));
        }
        s = &c->seen[c->nseen++];
        *s = (seen){.version = v};
    }
    if (old && !s->old && !s->missing) {
        s->old = convert(c, old, v, &s->view);
        s->missing = !s->old;
    }
    if (obj && !s->obj && !s->missing) {
        s->obj = convert(c, obj, v, &s->view);
        s->missing = !s->obj;
    }
    return s;
}

/* What changed in version s, without the fields nobody owns there (ExcludeFields). */
static kapi_smd_comparison *changes(call *c, seen *s)
{
    if (s->compared)
        return &s->cmp;
    s->compared = true;
    const char *err = kapi_smd_compare(c->a, s->view.type, s->old, s->obj, &s->cmp);
    if (err && !c->errors)
        c->errors = kapi_arena_printf(c->a, "failed to compare objects: %s", err);
    const kapi_smd_set *ignored = s->view.ignored;
    if (ignored && !kapi_smd_set_empty(ignored)) {
        s->cmp.removed = kapi_smd_set_recursive_difference(c->a, s->cmp.removed, ignored);
        s->cmp.modified = kapi_smd_set_recursive_difference(c->a, s->cmp.modified, ignored);
        s->cmp.added = kapi_smd_set_recursive_difference(c->a, s->cmp.added, ignored);
    }
    return &s->cmp;
}

/* ---- reconcile (typed.ReconcileFieldSetWithSchema) ---- */

typedef struct reconciler {
    kapi_arena *a;
    kapi_smd_pe *path;
    size_t depth, cap;
    kapi_smd_set *remove, *add;
} reconciler;

static void reconcile_node(reconciler *r, const kapi_smd_type *t, const kapi_smd_set *s,
                           bool atomic);

/* The node at the current path is owned whole: its children go, it stays a member. */
static void own_whole(reconciler *r)
{
    kapi_smd_path p = {r->path, r->depth};
    kapi_smd_set_insert(r->a, r->remove, p);
    kapi_smd_set_insert(r->a, r->add, p);
}

/* The step pe (a member when member), with sub the set below it (NULL for none). */
static void reconcile_child(reconciler *r, const kapi_smd_type *t, const kapi_smd_pe *pe,
                            const kapi_smd_set *sub, bool member)
{
    const kapi_smd_type *ct = NULL;
    if (t->atoms & KAPI_SMD_ATOM_MAP) {
        const kapi_smd_type_field *f =
            pe->kind == KAPI_SMD_PE_FIELD ? kapi_smd_type_find(t, pe->name) : NULL;
        ct = f ? f->type : t->map_elem;
        if (!ct)
            return; /* a field the schema does not know is left alone */
    } else {
        ct = t->list_elem;
    }
    if (r->depth == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->path = kapi_xrealloc(r->path, r->cap * sizeof(*r->path));
    }
    r->path[r->depth++] = *pe;
    reconcile_node(r, ct, sub, member && !sub);
    r->depth--;
}

/* visitMapItems / visitListItems: children that are not members, then members (both
 * sorted, so one pass pairs a step's member and child). */
static void reconcile_items(reconciler *r, const kapi_smd_type *t, const kapi_smd_set *s)
{
    for (size_t i = 0, j = 0; i < s->nchildren; i++) {
        const kapi_smd_pe *pe = &s->children[i].pe;
        while (j < s->nmembers && kapi_smd_pe_cmp(&s->members[j], pe) < 0)
            j++;
        if (j == s->nmembers || kapi_smd_pe_cmp(&s->members[j], pe) != 0)
            reconcile_child(r, t, pe, s->children[i].set, false);
    }
    for (size_t j = 0, i = 0; j < s->nmembers; j++) {
        const kapi_smd_pe *pe = &s->members[j];
        while (i < s->nchildren && kapi_smd_pe_cmp(&s->children[i].pe, pe) < 0)
            i++;
        bool both = i < s->nchildren && kapi_smd_pe_cmp(&s->children[i].pe, pe) == 0;
        reconcile_child(r, t, pe, both ? s->children[i].set : NULL, true);
    }
}

static void reconcile_node(reconciler *r, const kapi_smd_type *t, const kapi_smd_set *s,
                           bool atomic)
{
    if (t->atoms & KAPI_SMD_ATOM_MAP) {
        if (t->nfields == 0 && t->map_elem &&
            t->map_elem->atoms == (KAPI_SMD_ATOM_SCALAR | KAPI_SMD_ATOM_LIST | KAPI_SMD_ATOM_MAP) &&
            !t->map_elem->map_atomic)
            return; /* an untyped deduced map */
        if (!atomic && t->map_atomic) {
            if (s && !kapi_smd_set_empty(s))
                own_whole(r);
            return;
        }
        if (s)
            reconcile_items(r, t, s);
    } else if (t->atoms & KAPI_SMD_ATOM_LIST) {
        if (!atomic && t->list_atomic) {
            own_whole(r);
            return;
        }
        if (s)
            reconcile_items(r, t, s);
    }
}

kapi_smd_set *kapi_smd_reconcile(kapi_arena *a, const kapi_smd_type *t, kapi_smd_set *s)
{
    reconciler r = {.a = a, .remove = kapi_smd_set_new(a), .add = kapi_smd_set_new(a)};
    reconcile_node(&r, t, s, false);
    free(r.path);
    if (kapi_smd_set_empty(r.remove) && kapi_smd_set_empty(r.add))
        return s;
    return kapi_smd_set_union(a, kapi_smd_set_recursive_difference(a, s, r.remove), r.add);
}

/* Every manager's set made to suit the schema of its version; managers whose version
 * the object no longer has are dropped. */
static void reconcile_all(call *c, const json_t *live, kapi_smd_managers *ms)
{
    for (size_t i = 0; i < ms->n;) {
        seen *s = seen_in(c, live, NULL, ms->m[i].api_version);
        if (s->missing || !s->view.type) {
            kapi_smd_managers_remove(ms, ms->m[i].id);
            continue;
        }
        ms->m[i].set = kapi_smd_reconcile(c->a, s->view.type, ms->m[i].set);
        i++;
    }
}

/* ---- update ---- */

typedef struct taking {
    const char *id;
    kapi_smd_set *set;
} taking;

static void add_conflicts(call *c, const char *manager, const kapi_smd_set *s,
                          kapi_smd_conflicts *out);

/* Updater.update: what changed from old to obj is taken from every other manager (a
 * conflict unless force); what went is taken from all of them. Returns what changed in
 * the updater's version, or NULL when stopped (c->errors, or conflicts). */
static kapi_smd_comparison *update(call *c, const json_t *old, const json_t *obj,
                                   kapi_smd_managers *ms, const char *workflow, bool force,
                                   kapi_smd_conflicts *conflicts)
{
    seen *mine = seen_in(c, old, obj, c->u->version);
    kapi_smd_comparison *cmp = changes(c, mine);
    if (c->errors)
        return NULL;
    taking *lost = kapi_arena_alloc(c->a, (ms->n + 1) * sizeof(*lost));
    taking *gone = kapi_arena_alloc(c->a, (ms->n + 1) * sizeof(*gone));
    size_t nlost = 0, ngone = 0;
    for (size_t i = 0; i < ms->n;) {
        kapi_smd_manager *m = &ms->m[i];
        if (strcmp(m->id, workflow) == 0) {
            i++;
            continue;
        }
        seen *s = seen_in(c, old, obj, m->api_version);
        if (s->missing) {
            kapi_smd_managers_remove(ms, m->id);
            continue;
        }
        kapi_smd_comparison *mc = changes(c, s);
        if (c->errors)
            return NULL;
        kapi_smd_set *hit = kapi_smd_set_intersection(
            c->a, m->set, kapi_smd_set_union(c->a, mc->modified, mc->added));
        if (!kapi_smd_set_empty(hit))
            lost[nlost++] = (taking){m->id, hit};
        if (!kapi_smd_set_empty(mc->removed))
            gone[ngone++] = (taking){m->id, mc->removed};
        i++;
    }
    if (!force && nlost) {
        for (size_t i = 0; i < nlost; i++)
            add_conflicts(c, lost[i].id, lost[i].set, conflicts);
        return NULL;
    }
    for (size_t i = 0; i < nlost; i++) {
        kapi_smd_manager *m = kapi_smd_managers_get(ms, lost[i].id);
        m->set = kapi_smd_set_difference(c->a, m->set, lost[i].set);
    }
    for (size_t i = 0; i < ngone; i++) {
        kapi_smd_manager *m = kapi_smd_managers_get(ms, gone[i].id);
        m->set = kapi_smd_set_difference(c->a, m->set, gone[i].set);
    }
    for (size_t i = 0; i < ms->n;) {
        if (kapi_smd_set_empty(ms->m[i].set))
            kapi_smd_managers_remove(ms, ms->m[i].id);
        else
            i++;
    }
    return cmp;
}

typedef struct conflict_ctx {
    call *c;
    const char *manager;
    kapi_smd_conflicts *out;
} conflict_ctx;

static void add_conflict(kapi_smd_path p, void *ctx)
{
    conflict_ctx *x = ctx;
    kapi_smd_conflicts *out = x->out;
    if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 8;
        kapi_smd_conflict *grown = kapi_arena_alloc(x->c->a, cap * sizeof(*grown));
        if (out->n)
            memcpy(grown, out->c, out->n * sizeof(*grown));
        out->c = grown;
        out->cap = cap;
    }
    kapi_smd_pe *pe = kapi_arena_alloc(x->c->a, (p.n + 1) * sizeof(*pe));
    memcpy(pe, p.pe, p.n * sizeof(*pe));
    out->c[out->n++] = (kapi_smd_conflict){x->manager, {pe, p.n}};
}

/* ConflictsFromManagers: each path of s, owned by manager. */
static void add_conflicts(call *c, const char *manager, const kapi_smd_set *s,
                          kapi_smd_conflicts *out)
{
    conflict_ctx x = {c, manager, out};
    kapi_smd_set_iterate(s, add_conflict, &x);
}

kapi_smd_errors kapi_smd_update(kapi_arena *a, const kapi_smd_updater *u, const json_t *live,
                                const json_t *obj, kapi_smd_managers *ms, const char *manager)
{
    call c = {.a = a, .u = u};
    kapi_smd_conflicts none = {0};
    reconcile_all(&c, live, ms);
    kapi_smd_comparison *cmp = update(&c, live, obj, ms, manager, true, &none);
    if (cmp) {
        kapi_smd_manager *m = kapi_smd_managers_get(ms, manager);
        kapi_smd_manager mine = {.id = manager, .api_version = u->version};
        kapi_smd_set *set = m ? m->set : NULL;
        if (set) {
            set = kapi_smd_set_union(a, kapi_smd_set_union(a, set, cmp->modified), cmp->added);
            set = kapi_smd_set_difference(a, set, cmp->removed);
            if (u->view.ignored)
                set = kapi_smd_set_recursive_difference(a, set, u->view.ignored);
        } else {
            /* A manager new to the object (every create's) gets what changed as it is: no
             * path is both removed and added or modified, and changes() took the ignored
             * fields out already. */
            set = kapi_smd_set_union(a, cmp->modified, cmp->added);
        }
        mine.set = set;
        if (kapi_smd_set_empty(set))
            kapi_smd_managers_remove(ms, manager);
        else
            kapi_smd_managers_put(a, ms, &mine);
    }
    call_dispose(&c);
    return c.errors;
}

/* ---- apply ---- */

/* A typed value of the prune: an object (owned; NULL for an empty one) in a version. */
typedef struct tv {
    json_t *v;
    const char *version;
    kapi_smd_view view;
} tv;

/* t in version v (t itself when it is already there); false for a missing version. */
static bool tv_in(call *c, tv *t, const char *v)
{
    if (strcmp(t->version, v) == 0)
        return true;
    if (!t->v)
        t->v = json_object();
    kapi_smd_view view;
    json_t *conv = convert(c, t->v, v, &view);
    if (!conv)
        return false;
    json_decref(t->v);
    *t = (tv){conv, v, view};
    return true;
}

/* t without the paths of s. */
static void tv_remove(call *c, tv *t, const kapi_smd_set *s)
{
    json_t *out = t->v ? kapi_smd_remove(c->a, t->view.type, t->v, s) : NULL;
    json_decref(t->v);
    t->v = out;
}

static kapi_smd_set *named(call *c, const tv *t, const kapi_smd_set *s)
{
    return kapi_smd_set_with_named_fields(c->a, t->view.type, s);
}

static kapi_smd_set *tv_set(call *c, const tv *t)
{
    return t->v ? kapi_smd_to_set(c->a, t->view.type, t->v) : kapi_smd_set_new(c->a);
}

/* addBackOwnedItemsForVersion: what merged holds and someone owns in version v goes back
 * into pruned. */
static void add_back_owned(call *c, tv *merged, tv *pruned, const char *v,
                           const kapi_smd_set *managed)
{
    if (!tv_in(c, merged, v) || !tv_in(c, pruned, v))
        return;
    kapi_smd_set *keep =
        kapi_smd_set_union(c->a, named(c, pruned, tv_set(c, pruned)), named(c, merged, managed));
    kapi_smd_set *drop = kapi_smd_set_difference(c->a, named(c, merged, tv_set(c, merged)), keep);
    json_decref(pruned->v);
    pruned->v = merged->v ? kapi_smd_remove(c->a, merged->view.type, merged->v, drop) : NULL;
}

/* Updater.prune: what the applier applied before (last) and no longer does goes, unless
 * some manager owns it; merged is taken and the pruned object returned (in the
 * updater's version), or NULL with c->errors set. */
static bool prune(call *c, tv *merged, const kapi_smd_managers *ms, const kapi_smd_manager *last)
{
    if (!last || kapi_smd_set_empty(last->set))
        return true;
    tv m = *merged;
    if (!tv_in(c, &m, last->api_version)) {
        *merged = m;
        return true;
    }
    tv pruned = {json_incref(m.v), m.version, m.view};
    tv_remove(c, &pruned, named(c, &m, last->set));
    /* addBackOwnedItems: the pruned object's version first, then the others, each with
     * the union of the sets expressed in it */
    tv work = {json_incref(m.v), m.version, m.view};
    const char **versions = kapi_arena_alloc(c->a, (ms->n + 2) * sizeof(*versions));
    size_t nv = 0;
    versions[nv++] = pruned.version;
    for (size_t i = 0; i < ms->n; i++) {
        bool have = false;
        for (size_t j = 0; j < nv && !have; j++)
            have = strcmp(versions[j], ms->m[i].api_version) == 0;
        if (!have)
            versions[nv++] = ms->m[i].api_version;
    }
    for (size_t j = 0; j < nv; j++) {
        kapi_smd_set *managed = kapi_smd_set_new(c->a);
        bool any = false;
        for (size_t i = 0; i < ms->n; i++)
            if (strcmp(ms->m[i].api_version, versions[j]) == 0) {
                managed = kapi_smd_set_union(c->a, managed, ms->m[i].set);
                any = true;
            }
        if (any)
            add_back_owned(c, &work, &pruned, versions[j], managed);
    }
    json_decref(work.v);
    /* addBackDanglingItems: in the last applied version, what the merged object holds,
     * the pruned one lost and the applier had applied is removed for good */
    if (tv_in(c, &pruned, last->api_version)) {
        kapi_smd_set *gone =
            kapi_smd_set_intersection(c->a,
                                      kapi_smd_set_difference(c->a, named(c, &m, tv_set(c, &m)),
                                                              named(c, &m, tv_set(c, &pruned))),
                                      named(c, &m, last->set));
        json_decref(pruned.v);
        pruned =
            (tv){m.v ? kapi_smd_remove(c->a, m.view.type, m.v, gone) : NULL, m.version, m.view};
    }
    json_decref(m.v);
    if (!tv_in(c, &pruned, c->u->version)) {
        json_decref(pruned.v);
        c->errors = "failed to prune fields: the object has no version it was applied in";
        return false;
    }
    *merged = pruned;
    return true;
}

kapi_smd_errors kapi_smd_apply(kapi_arena *a, const kapi_smd_updater *u, const json_t *live,
                               const json_t *config, kapi_smd_managers *ms, const char *manager,
                               bool force, json_t **out, kapi_smd_conflicts *conflicts)
{
    call c = {.a = a, .u = u};
    json_t *merged = NULL;
    *out = NULL;
    reconcile_all(&c, live, ms);
    const char *err = kapi_smd_merge(a, u->view.type, live, config, &merged);
    if (err) {
        c.errors = kapi_arena_printf(a, "failed to merge config: %s", err);
        goto done;
    }
    kapi_smd_manager *had = kapi_smd_managers_get(ms, manager);
    kapi_smd_manager last = had ? *had : (kapi_smd_manager){0};
    kapi_smd_set *set = kapi_smd_to_set(a, u->view.type, config);
    if (u->view.ignored)
        set = kapi_smd_set_recursive_difference(a, set, u->view.ignored);
    kapi_smd_managers_put(a, ms, &(kapi_smd_manager){manager, u->version, true, set});
    tv m = {merged, u->version, u->view};
    merged = NULL;
    if (!prune(&c, &m, ms, had ? &last : NULL))
        goto done;
    merged = m.v;
    kapi_smd_comparison *cmp = update(&c, live, merged, ms, manager, force, conflicts);
    if (!cmp)
        goto done;
    if (!kapi_smd_set_empty(cmp->added) || !kapi_smd_set_empty(cmp->modified) ||
        !kapi_smd_set_empty(cmp->removed)) {
        *out = merged;
        merged = NULL;
    }
done:
    json_decref(merged);
    call_dispose(&c);
    return c.errors;
}
