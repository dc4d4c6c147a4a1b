/*
 * smd/manager: metadata.managedFields as kube-apiserver's fieldmanager keeps them (smd.h,
 * "the field manager"), a port of its layers, outermost first:
 *
 *   FieldManager         decodes the entries (the request's or the live object's),
 *                        encodes them back sorted; apply conflicts become a 409
 *   lastAppliedUpdater   kubectl's server-side apply keeps the last-applied annotation
 *   lastAppliedManager   kubectl's conflicts with what it applied client-side are forced
 *   skipNonApplied       updates leave an untracked object untracked; a first apply
 *                        makes "before-first-apply" own what was there
 *   capManagers          at most ten update entries ("ancient-changes" takes the rest)
 *   buildManagerInfo     the manager's identifier (name, operation, version, subresource)
 *   managedFieldsUpdater an update's changes join the manager's entry, stamped now
 *   stripMeta            apiVersion, kind and server-set metadata are owned by nobody
 *   structured           the updater (update.c) on the typed objects
 *
 * Managers are known by their identifier, the JSON kube-apiserver makes of an entry
 * without its time and fields (an apply's without its version); conflicts name them as
 * kube-apiserver prints them.
 */
#include "smd/smd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/go.h"
#include "codec/json.h"

#define MAX_UPDATE_MANAGERS 10

/* What is known of one manager beyond its set: when it last changed, and the entry it
 * was decoded from with that entry's set, version and time, which encoding reuses
 * while they are unchanged. */
typedef struct record {
    const char *id;
    const char *manager, *subresource; /* the id's members */
    const char *time;                  /* RFC 3339, or NULL */
    const json_t *entry; /* the stored object's entry, or NULL (a request's is re-encoded) */
    const kapi_smd_set *set;
    const char *version, *entry_time;
} record;

/* The managers of an object and when each last changed (fieldmanager.Managed). */
typedef struct managed {
    kapi_smd_managers ms;
    record *recs;
    size_t nrecs, recs_cap;
} managed;

static record *record_of(kapi_arena *a, managed *m, const char *id)
{
    for (size_t i = 0; i < m->nrecs; i++)
        if (strcmp(m->recs[i].id, id) == 0)
            return &m->recs[i];
    if (!a)
        return NULL;
    if (m->nrecs == m->recs_cap) {
        size_t cap = m->recs_cap ? 2 * m->recs_cap : 8;
        record *grown = kapi_arena_alloc(a, cap * sizeof(*grown));
        if (m->nrecs)
            memcpy(grown, m->recs, m->nrecs * sizeof(*grown));
        m->recs = grown;
        m->recs_cap = cap;
    }
    m->recs[m->nrecs] = (record){.id = id};
    return &m->recs[m->nrecs++];
}

static const char *time_of(const managed *m, const char *id)
{
    const record *r = record_of(NULL, (managed *)m, id);
    return r ? r->time : NULL;
}

static void set_time(kapi_arena *a, managed *m, const char *id, const char *t)
{
    record_of(a, m, id)->time = t;
}

/* ---- identifiers (internal.BuildManagerIdentifier) ---- */

/* Appends "key":v; key is a quoted literal ("\"manager\":"), written as it is. */
static void put_member(kapi_buf *b, bool *first, const char *key, const char *v)
{
    if (!v || !*v)
        return;
    kapi_buf_putc(b, *first ? '{' : ',');
    *first = false;
    kapi_buf_puts(b, key);
    kapi_json_put_string(b, v, strlen(v));
}

/* The JSON of an entry's manager, operation, version (none for an apply) and
 * subresource, as encoding/json writes a ManagedFieldsEntry with only those. */
static const char *identifier(kapi_arena *a, const char *manager, const char *operation,
                              const char *version, const char *subresource)
{
    kapi_buf b;
    bool first = true;
    kapi_buf_init(&b);
    put_member(&b, &first, "\"manager\":", manager);
    put_member(&b, &first, "\"operation\":", operation);
    if (strcmp(operation, "Apply") != 0)
        put_member(&b, &first, "\"apiVersion\":", version);
    put_member(&b, &first, "\"subresource\":", subresource);
    kapi_buf_puts(&b, first ? "{}" : "}");
    const char *id = kapi_arena_strndup(a, b.ptr, b.len);
    kapi_buf_dispose(&b);
    return id;
}

/* identifier(), with the manager and subresource noted in m for encoding. */
static const char *ident(kapi_arena *a, managed *m, const char *manager, const char *operation,
                         const char *version, const char *subresource)
{
    const char *id = identifier(a, manager, operation, version, subresource);
    record *r = record_of(a, m, id);
    r->manager = kapi_arena_strdup(a, manager);
    r->subresource = kapi_arena_strdup(a, subresource);
    return id;
}

/* A member of an identifier (or "" when it has none). */
static const char *id_member(kapi_arena *a, const char *id, const char *key)
{
    json_t *j = json_loads(id, 0, NULL);
    const char *v = json_string_value(json_object_get(j, key));
    const char *out = kapi_arena_strdup(a, v ? v : "");
    json_decref(j);
    return out;
}

/* internal.printManager: how conflicts name a manager. */
static void print_manager(kapi_arena *a, kapi_buf *b, const char *id)
{
    const char *sub = id_member(a, id, "subresource");
    const char *name = id_member(a, id, "manager");
    kapi_go_quote(b, name, strlen(name));
    if (*sub) {
        kapi_buf_puts(b, " with subresource ");
        kapi_go_quote(b, sub, strlen(sub));
    }
    if (strcmp(id_member(a, id, "operation"), "Update") == 0)
        kapi_buf_printf(b, " using %s", id_member(a, id, "apiVersion"));
}

/* ---- decoding and encoding entries (internal/managedfields.go) ---- */

static const char *str_member(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

/* DecodeManagedFields; false (with *why) when an entry is not valid. */
static bool decode(kapi_arena *a, const json_t *entries, bool stored, managed *out,
                   const char **why)
{
    size_t i;
    json_t *e;
    *out = (managed){0};
    json_array_foreach(entries, i, e)
    {
        const char *op = str_member(e, "operation"), *ft = str_member(e, "fieldsType");
        const char *version = str_member(e, "apiVersion");
        if (strcmp(op, "Apply") != 0 && strcmp(op, "Update") != 0) {
            *why = "operation must be `Apply` or `Update`";
            return false;
        }
        if (!*version) {
            *why = "apiVersion must not be empty";
            return false;
        }
        if (strcmp(ft, "FieldsV1") != 0) {
            *why = *ft ? kapi_arena_printf(
                             a, "invalid fieldsType \"%s\" in managed fields entry %zu", ft, i)
                       : kapi_arena_printf(a, "missing fieldsType in managed fields entry %zu", i);
            return false;
        }
        const json_t *fields = json_object_get(e, "fieldsV1");
        kapi_smd_set *set = kapi_smd_set_new(a);
        const char *bad = NULL;
        if (json_is_object(fields) && !kapi_smd_set_from_json(a, fields, &set, &bad)) {
            *why =
                kapi_arena_printf(a, "error decoding versioned set: error decoding set: %s", bad);
            return false;
        }
        const char *id =
            ident(a, out, str_member(e, "manager"), op, version, str_member(e, "subresource"));
        const char *v = kapi_arena_strdup(a, version);
        kapi_smd_managers_put(a, &out->ms,
                              &(kapi_smd_manager){id, v, strcmp(op, "Apply") == 0, set});
        const char *t = json_string_value(json_object_get(e, "time"));
        record *r = record_of(a, out, id);
        r->time = r->entry_time = t ? kapi_arena_strdup(a, t) : NULL;
        r->entry = stored ? e : NULL;
        r->set = set;
        r->version = v;
    }
    return true;
}

/* Seconds since the epoch of an RFC 3339 time ("2006-01-02T15:04:05Z"); 0 for NULL or
 * one that does not read. */
static int64_t unix_seconds(const char *t)
{
    struct tm tm = {0};
    char *end;
    if (!t || !(end = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm)))
        return 0;
    int64_t s = (int64_t)timegm(&tm);
    if (*end == '.')
        while (*++end >= '0' && *end <= '9')
            ;
    if ((*end == '+' || *end == '-') && strlen(end) >= 6) {
        int64_t off = ((end[1] - '0') * 10 + (end[2] - '0')) * 3600 +
                      ((end[4] - '0') * 10 + (end[5] - '0')) * 60;
        s += *end == '+' ? -off : off;
    }
    return s;
}

/* An entry as encodeManagerVersionedSet makes it, with its sort keys. */
typedef struct entry {
    const char *manager, *operation, *version, *subresource, *time;
    int64_t seconds;
    const kapi_smd_set *set;
    const json_t *kept; /* the stored entry, unchanged */
} entry;

static int entry_cmp(const void *x, const void *y)
{
    const entry *p = x, *q = y;
    int c = strcmp(p->operation, q->operation);
    if (c)
        return c;
    if (p->seconds != q->seconds)
        return p->seconds < q->seconds ? -1 : 1;
    if ((c = strcmp(p->manager, q->manager)) != 0)
        return c;
    if ((c = strcmp(p->version, q->version)) != 0)
        return c;
    return strcmp(p->subresource, q->subresource);
}

static void set_str(json_t *o, const char *key, const char *v)
{
    if (v && *v)
        json_object_set_new_nocheck(o, key, json_string(v));
}

/* EncodeObjectManagedFields: obj's metadata.managedFields from m, sorted as
 * sortEncodedManagedFields sorts them (none when m is empty). An entry of the stored
 * object whose set, version and time did not change is kept as it was. */
static void encode(kapi_arena *a, const managed *m, json_t *obj)
{
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    if (m->ms.n == 0) {
        json_object_del(meta, "managedFields");
        return;
    }
    entry *es = kapi_arena_alloc(a, m->ms.n * sizeof(*es));
    for (size_t i = 0; i < m->ms.n; i++) {
        const kapi_smd_manager *mg = &m->ms.m[i];
        const record *r = record_of(NULL, (managed *)m, mg->id);
        es[i] = (entry){
            .manager = r->manager,
            .operation = mg->applied ? "Apply" : "Update",
            .version = mg->api_version,
            .subresource = r->subresource,
            .time = r->time,
            .seconds = m->ms.n > 1 ? unix_seconds(r->time) : 0, /* a sort key only */
            .set = mg->set,
        };
        if (r->entry && r->set == mg->set && r->time == r->entry_time &&
            strcmp(r->version, mg->api_version) == 0)
            es[i].kept = r->entry;
    }
    qsort(es, m->ms.n, sizeof(*es), entry_cmp);
    json_t *list = json_array();
    for (size_t i = 0; i < m->ms.n; i++) {
        if (es[i].kept) {
            json_array_append(list, (json_t *)es[i].kept);
            continue;
        }
        json_t *e = json_object();
        set_str(e, "manager", es[i].manager);
        set_str(e, "operation", es[i].operation);
        set_str(e, "apiVersion", es[i].version);
        set_str(e, "time", es[i].time);
        json_object_set_new_nocheck(e, "fieldsType", json_string_nocheck("FieldsV1"));
        json_object_set_new_nocheck(e, "fieldsV1", kapi_smd_set_to_jansson(es[i].set));
        set_str(e, "subresource", es[i].subresource);
        json_array_append_new(list, e);
    }
    json_object_set_new_nocheck(meta, "managedFields", list);
}

/* isResetManagedFields: [] or [{}] asks for no managedFields at all. */
static bool is_reset(const json_t *entries)
{
    if (!json_is_array(entries))
        return false;
    size_t n = json_array_size(entries);
    const json_t *e = json_array_get(entries, 0);
    return n == 0 || (n == 1 && json_is_object(e) && json_object_size(e) == 0);
}

static const json_t *managed_fields(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "managedFields");
}

static bool has_uid(const json_t *obj)
{
    const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
    return uid && *uid;
}

/* ---- the inner layers ---- */

/* stripMeta's set, the fields nobody owns: built once, in an arena of its own. */
static kapi_arena strip_arena;
static kapi_smd_set *strip_fields;

static void build_strip_set(void)
{
    kapi_arena *a = &strip_arena;
    static const char *const metadata[] = {"name",       "namespace",     "creationTimestamp",
                                           "selfLink",   "uid",           "clusterName",
                                           "generation", "managedFields", "resourceVersion"};
    static const char *const top[] = {"apiVersion", "kind", "metadata"};
    kapi_smd_set *s = kapi_smd_set_new(a);
    kapi_smd_pe p[2] = {{.kind = KAPI_SMD_PE_FIELD}, {.kind = KAPI_SMD_PE_FIELD}};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(top); i++) {
        p[0].name = kapi_str_c(top[i]);
        kapi_smd_set_insert(a, s, (kapi_smd_path){p, 1});
    }
    p[0].name = KAPI_STR("metadata");
    for (size_t i = 0; i < KAPI_ARRAY_LEN(metadata); i++) {
        p[1].name = kapi_str_c(metadata[i]);
        kapi_smd_set_insert(a, s, (kapi_smd_path){p, 2});
    }
    strip_fields = s;
}

/* The strip set, shared by every thread: set operations only read their arguments. */
static const kapi_smd_set *strip_set(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_strip_set);
    return strip_fields;
}

static void strip(kapi_arena *a, managed *m, const char *id)
{
    kapi_smd_manager *mg = kapi_smd_managers_get(&m->ms, id);
    if (!mg)
        return;
    mg->set = kapi_smd_set_difference(a, mg->set, strip_set());
    if (kapi_smd_set_empty(mg->set))
        kapi_smd_managers_remove(&m->ms, id);
}

typedef struct cap_entry {
    const char *id;
    int64_t seconds;
} cap_entry;

static int cap_cmp(const void *x, const void *y)
{
    const cap_entry *p = x, *q = y;
    if (p->seconds != q->seconds)
        return p->seconds < q->seconds ? -1 : 1;
    return strcmp(p->id, q->id);
}

/* capManagers: the oldest update entries beyond ten go into their version's
 * "ancient-changes" entry. */
static void cap_updaters(kapi_arena *a, managed *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->ms.n; i++)
        n += !m->ms.m[i].applied;
    if (n <= MAX_UPDATE_MANAGERS)
        return;
    cap_entry *u = kapi_arena_alloc(a, n * sizeof(*u));
    n = 0;
    for (size_t i = 0; i < m->ms.n; i++)
        if (!m->ms.m[i].applied)
            u[n++] = (cap_entry){m->ms.m[i].id, unix_seconds(time_of(m, m->ms.m[i].id))};
    qsort(u, n, sizeof(*u), cap_cmp);
    const char **first_version = kapi_arena_alloc(a, n * sizeof(*first_version));
    const char **first_id = kapi_arena_alloc(a, n * sizeof(*first_id));
    size_t nfirst = 0, length = n;
    for (size_t i = 0; i < n && length > MAX_UPDATE_MANAGERS; i++) {
        kapi_smd_manager mg = *kapi_smd_managers_get(&m->ms, u[i].id);
        const char *t = time_of(m, u[i].id);
        const char *bucket = ident(a, m, "ancient-changes", "Update", mg.api_version, "");
        size_t f = 0;
        while (f < nfirst && strcmp(first_version[f], mg.api_version) != 0)
            f++;
        if (f == nfirst) {
            first_version[nfirst] = mg.api_version;
            first_id[nfirst++] = u[i].id;
            continue;
        }
        kapi_smd_manager *b = kapi_smd_managers_get(&m->ms, bucket);
        if (!b) {
            kapi_smd_manager moved = *kapi_smd_managers_get(&m->ms, first_id[f]);
            kapi_smd_managers_remove(&m->ms, first_id[f]);
            moved.id = bucket;
            kapi_smd_managers_put(a, &m->ms, &moved);
            b = kapi_smd_managers_get(&m->ms, bucket);
        }
        b->set = kapi_smd_set_union(a, mg.set, b->set);
        b->api_version = mg.api_version;
        b->applied = mg.applied;
        kapi_smd_managers_remove(&m->ms, u[i].id);
        length--;
        set_time(a, m, bucket, t);
    }
}

/* buildManagerInfo + managedFieldsUpdater + stripMeta + structured, for an update:
 * manager's entry gains what changed from live to obj. False when the updater failed. */
static bool update_entries(kapi_arena *a, const kapi_smd_fm *fm, managed *m, const json_t *live,
                           const json_t *obj, const char *manager, const char *now)
{
    static const char current[] = "current-operation";
    const char *id =
        ident(a, m, *manager ? manager : "unknown", "Update", fm->group_version, fm->subresource);
    if (kapi_smd_update(a, &fm->updater, live, obj, &m->ms, current))
        return false;
    strip(a, m, current);
    kapi_smd_manager *cur = kapi_smd_managers_get(&m->ms, current);
    if (cur) {
        kapi_smd_manager mine = *cur;
        kapi_smd_managers_remove(&m->ms, current);
        kapi_smd_manager *prev = kapi_smd_managers_get(&m->ms, id);
        if (prev)
            mine.set = kapi_smd_set_union(a, mine.set, prev->set);
        mine.id = id;
        kapi_smd_managers_put(a, &m->ms, &mine);
        set_time(a, m, id, now);
    }
    cap_updaters(a, m);
    return true;
}

void kapi_smd_fm_update(kapi_arena *a, const kapi_smd_fm *fm, const json_t *live, json_t *obj,
                        const char *manager, const char *now)
{
    managed m;
    const char *why;
    const json_t *theirs = managed_fields(obj), *base = live ? live : fm->empty;
    bool ok;
    if (*fm->subresource || !theirs || json_is_null(theirs))
        ok = false;
    else if (is_reset(theirs))
        ok = (m = (managed){0}, true);
    else
        ok = decode(a, theirs, false, &m, &why) && m.ms.n > 0;
    if (!ok && !decode(a, managed_fields(live), true, &m, &why))
        m = (managed){0};
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    json_object_del(meta, "managedFields");
    if (m.ms.n == 0 && has_uid(base))
        return; /* skipNonApplied: an untracked object stays untracked */
    if (!update_entries(a, fm, &m, base, obj, manager, now))
        return; /* UpdateNoErrors: no managedFields rather than wrong ones */
    encode(a, &m, obj);
}

void kapi_smd_fm_disown(kapi_arena *a, const json_t *live, json_t *obj, kapi_smd_path path)
{
    managed m;
    const char *why;
    if (!decode(a, managed_fields(live), true, &m, &why))
        return;
    kapi_smd_set *gone = kapi_smd_set_new(a);
    kapi_smd_set_insert(a, gone, path);
    for (size_t i = 0; i < m.ms.n;) {
        kapi_smd_manager *mg = &m.ms.m[i];
        if (kapi_smd_set_has(mg->set, path))
            mg->set = kapi_smd_set_difference(a, mg->set, gone);
        if (kapi_smd_set_empty(mg->set))
            kapi_smd_managers_remove(&m.ms, mg->id);
        else
            i++;
    }
    encode(a, &m, obj);
}

/* ---- apply ---- */

/* objectGVKNN: "<namespace>/<name>; <group>/<version>, Kind=<kind>" of the apply body. */
static const char *gvknn(kapi_arena *a, const json_t *config)
{
    const json_t *meta = json_object_get(config, "metadata");
    const char *av = str_member(config, "apiVersion");
    const char *slash = strchr(av, '/');
    return kapi_arena_printf(a, "%s/%s; %s%s, Kind=%s", str_member(meta, "namespace"),
                             str_member(meta, "name"), slash ? "" : "/", av,
                             str_member(config, "kind"));
}

/* An error kube-apiserver answers as a bare 500 (no reason): an error of the apply that
 * is not an API status. */
static kapi_error *internal(const char *msg)
{
    return kapi_error_new(KAPI_STATUS_UNKNOWN, "%s", msg);
}

/* structuredMergeManager.Apply, under stripMeta and managedFieldsUpdater: *out is the
 * applied object (a new reference), or live's content when nothing changed. */
static kapi_error *apply_entries(kapi_arena *a, const kapi_smd_fm *fm, managed *m,
                                 const json_t *base, const json_t *config, const char *manager,
                                 bool force, const char *now, json_t **out,
                                 kapi_smd_conflicts *conflicts)
{
    const char *av = str_member(config, "apiVersion");
    const json_t *meta = json_object_get(config, "metadata");
    *out = NULL;
    if (strcmp(av, fm->group_version) != 0)
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "Incorrect version specified in apply patch. Specified patch "
                              "version: %s, expected: %s",
                              av, fm->group_version);
    if (json_is_array(json_object_get(meta, "managedFields")))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "metadata.managedFields must be nil");
    if (strcmp(str_member(config, "kind"), fm->kind) != 0)
        return internal(kapi_arena_printf(
            a, "failed to create typed patch object (%s): no corresponding type for %s",
            gvknn(a, config), strchr(gvknn(a, config), ';') + 2));
    kapi_smd_errors errs = kapi_smd_validate(a, fm->updater.view.type, config);
    if (errs)
        return internal(kapi_arena_printf(a, "failed to create typed patch object (%s): %s",
                                          gvknn(a, config), errs));
    const char *id = ident(a, m, manager, "Apply", fm->group_version, fm->subresource);
    json_t *applied = NULL;
    errs = kapi_smd_apply(a, &fm->updater, base, config, &m->ms, id, force, &applied, conflicts);
    if (errs)
        return internal(errs);
    if (conflicts->n)
        return NULL;
    strip(a, m, id);
    if (applied) {
        set_time(a, m, id, now);
        *out = applied;
    } else {
        *out = kapi_json_copy(base);
        json_object_del(kapi_json_object_ensure(*out, "metadata"), "managedFields");
    }
    return NULL;
}

static int str_ptr_cmp(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* internal.NewConflictError. */
static kapi_error *conflict_error(kapi_arena *a, const kapi_smd_conflicts *cs)
{
    kapi_buf msg, who, path;
    kapi_buf_init(&msg);
    kapi_buf_init(&who);
    kapi_buf_init(&path);
    kapi_error *err = kapi_error_new(KAPI_STATUS_CONFLICT, "conflict");
    kapi_error_details(err, NULL, NULL, NULL);
    for (size_t i = 0; i < cs->n; i++) {
        kapi_buf_clear(&who);
        kapi_buf_clear(&path);
        print_manager(a, &who, cs->c[i].manager);
        kapi_smd_path_format(&path, cs->c[i].path);
        kapi_error_add_cause(err, "FieldManagerConflict", path.ptr, "conflict with %s", who.ptr);
    }
    if (cs->n == 1) {
        kapi_buf_printf(&msg, "Apply failed with 1 conflict: conflict with %s: %s", who.ptr,
                        path.ptr);
    } else {
        /* each manager in the order of its identifier, its paths in conflict order */
        const char **ids = kapi_arena_alloc(a, cs->n * sizeof(*ids));
        size_t nids = 0;
        for (size_t i = 0; i < cs->n; i++) {
            size_t j = 0;
            while (j < nids && strcmp(ids[j], cs->c[i].manager) != 0)
                j++;
            if (j == nids)
                ids[nids++] = cs->c[i].manager;
        }
        qsort(ids, nids, sizeof(*ids), str_ptr_cmp);
        kapi_buf_printf(&msg, "Apply failed with %zu conflicts: ", cs->n);
        for (size_t j = 0; j < nids; j++) {
            kapi_buf_clear(&who);
            print_manager(a, &who, ids[j]);
            kapi_buf_printf(&msg, "%sconflicts with %s:", j ? "\n" : "", who.ptr);
            for (size_t i = 0; i < cs->n; i++) {
                if (strcmp(cs->c[i].manager, ids[j]) != 0)
                    continue;
                kapi_buf_clear(&path);
                kapi_smd_path_format(&path, cs->c[i].path);
                kapi_buf_printf(&msg, "\n- %s", path.ptr);
            }
        }
    }
    free(err->message);
    err->message = kapi_buf_detach(&msg, NULL);
    kapi_buf_dispose(&who);
    kapi_buf_dispose(&path);
    return err;
}

/* ---- kubectl's last-applied annotation ---- */

#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"
#define MAX_ANNOTATIONS_SIZE (256 * 1024)

static const char *last_applied(const json_t *obj)
{
    const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const char *v = json_string_value(json_object_get(ann, LAST_APPLIED));
    return v && *v ? v : NULL;
}

/* lastAppliedManager.allowedConflictsFromLastApplied: what kubectl applied client-side
 * and still stands in live, or NULL when there is no such configuration. */
static kapi_smd_set *allowed_conflicts(kapi_arena *a, const kapi_smd_fm *fm, const json_t *live)
{
    const char *text = last_applied(live);
    if (!text)
        return NULL;
    json_t *cfg = json_loads(text, 0, NULL);
    kapi_smd_set *allowed = NULL;
    const kapi_smd_type *t = fm->updater.view.type;
    kapi_smd_comparison cmp;
    if (cfg && strcmp(str_member(cfg, "apiVersion"), fm->group_version) == 0 &&
        strcmp(str_member(cfg, "kind"), fm->kind) == 0 && !kapi_smd_validate(a, t, cfg) &&
        !kapi_smd_compare(a, t, cfg, live, &cmp)) {
        allowed = kapi_smd_to_set(a, t, cfg);
        allowed = kapi_smd_set_difference(a, allowed, cmp.modified);
        allowed = kapi_smd_set_difference(a, allowed, cmp.added);
        allowed = kapi_smd_set_difference(a, allowed, cmp.removed);
    }
    json_decref(cfg);
    return allowed;
}

/* lastAppliedUpdater: the annotation becomes the applied configuration (without the
 * annotation itself), as UnstructuredJSONScheme encodes it; dropped when the
 * annotations would grow past their size limit. */
static void update_last_applied(json_t *obj, const json_t *config)
{
    json_t *copy = kapi_json_copy(config);
    json_t *cann = json_object_get(json_object_get(copy, "metadata"), "annotations");
    json_object_del(cann, LAST_APPLIED);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_json(&b, copy);
    kapi_buf_putc(&b, '\n');
    json_decref(copy);
    json_t *ann = kapi_json_object_ensure(kapi_json_object_ensure(obj, "metadata"), "annotations");
    json_object_set_new_nocheck(ann, LAST_APPLIED, json_stringn(b.ptr, b.len));
    kapi_buf_dispose(&b);
    size_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach(ann, k, v) total += strlen(k) + json_string_length(v);
    if (total > MAX_ANNOTATIONS_SIZE)
        json_object_del(ann, LAST_APPLIED);
}

/* The conflicts whose path allowed does not hold (conflictsDifference). */
static kapi_smd_conflicts not_allowed(kapi_arena *a, const kapi_smd_conflicts *cs,
                                      const kapi_smd_set *allowed)
{
    kapi_smd_conflicts out = {kapi_arena_alloc(a, (cs->n + 1) * sizeof(*out.c)), 0, cs->n + 1};
    for (size_t i = 0; i < cs->n; i++)
        if (!kapi_smd_set_has(allowed, cs->c[i].path))
            out.c[out.n++] = cs->c[i];
    return out;
}

/* skipNonApplied's apply, then the layers below it: a first apply makes
 * "before-first-apply" own what the object already holds. */
static kapi_error *apply_layers(kapi_arena *a, const kapi_smd_fm *fm, managed *m,
                                const json_t *base, const json_t *config, const char *manager,
                                bool force, const char *now, json_t **out, kapi_smd_conflicts *cs)
{
    if (m->ms.n == 0 && !update_entries(a, fm, m, fm->empty, base, "before-first-apply", now))
        return internal("failed to create manager for existing fields: failed to update "
                        "ManagedFields");
    return apply_entries(a, fm, m, base, config, manager, force, now, out, cs);
}

kapi_error *kapi_smd_fm_apply(kapi_arena *a, const kapi_smd_fm *fm, const json_t *live,
                              const json_t *config, const char *manager, bool force,
                              const char *now, json_t **out)
{
    const json_t *base = live ? live : fm->empty;
    const char *why;
    managed m;
    kapi_smd_conflicts cs = {0};
    *out = NULL;
    if (!decode(a, managed_fields(live), true, &m, &why))
        return internal(kapi_arena_printf(a, "failed to decode managed fields: %s", why));
    kapi_error *err = apply_layers(a, fm, &m, base, config, manager, force, now, out, &cs);
    if (!err && cs.n && strcmp(manager, "kubectl") == 0) {
        kapi_smd_set *allowed = live ? allowed_conflicts(a, fm, live) : NULL;
        if (allowed) {
            cs = not_allowed(a, &cs, allowed);
            if (!cs.n)
                err = apply_layers(a, fm, &m, base, config, manager, true, now, out, &cs);
        }
    }
    if (err)
        return err;
    if (cs.n)
        return conflict_error(a, &cs);
    if (strcmp(manager, "kubectl") == 0 && last_applied(*out))
        update_last_applied(*out, config);
    encode(a, &m, *out);
    return NULL;
}
