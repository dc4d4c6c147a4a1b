/*
 * controllers/clustercidr: kube-controller-manager's multi-CIDR range allocator (1.26's
 * MultiCIDRRangeAllocator), a client of the api. It gives each Node without
 * spec.podCIDRs a block of perNodeHostBits host bits from a ClusterCIDR whose node
 * selector picks it: from ipv4, from ipv6, or one from each (dual-stack, IPv4 first).
 *
 * A pass lists the ClusterCIDRs and the Nodes and rebuilds the state from them: each
 * Node's Pod CIDRs are marked taken in the ClusterCIDR it got them from (the first, in
 * the order below, that holds them all), so the state survives a restart and a deleted
 * Node's blocks are free at the next pass. Then each Node without Pod CIDRs gets blocks
 * from the matching ClusterCIDRs in kube's order (the most requirements matched, then the
 * fewest blocks, then the smallest blocks, then the selector and the range as text;
 * ClusterCIDRs without a selector, which match every Node, last), skipping blocks that
 * overlap one taken in another ClusterCIDR. The blocks of a pass are decided in turn on
 * the controller's thread; then the Nodes are written, at their resourceVersions, from
 * up to WRITERS threads that share the store's group commits, and the pass ends when all
 * are written, so the next one sees them: no block goes to two Nodes however many are
 * created at once. A Node no ClusterCIDR can serve (none matches, or all that match are
 * full) gets kube's event, Normal CIDRNotAvailable "Node <name> status is now:
 * CIDRNotAvailable", once per Node.
 *
 * Selector terms are ORed and a term's requirements ANDed (a term without requirements
 * matches nothing), as a NodeSelector means everywhere else; 1.26's allocator ANDs the
 * requirements of all terms together.
 *
 * With kube-controller-manager's --cluster-cidr, the allocator makes the ClusterCIDR
 * "default-cluster-cidr" of it at its start when there is none of that name (no node
 * selector: it serves every Node no other ClusterCIDR picks).
 *
 * A ClusterCIDR whose ranges cannot be cut (an IPv6 range into more than 2^16 blocks) is
 * not used; one there at the controller's start gets kube's Warning event.
 *
 * A ClusterCIDR gets the networking.k8s.io/cluster-cidr-finalizer; once it is being
 * deleted it gives no new blocks, and the finalizer goes (and the ClusterCIDR with it)
 * when no Node has blocks from it.
 */
#include "controllers/controllers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cidr.h"
#include "codec/json.h"
#include "log/log.h"

#define RETRY_MS 500
#define RESYNC_MS 30000
#define FINALIZER "networking.k8s.io/cluster-cidr-finalizer"
#define COMPONENT "multiCIDRRangeAllocator"
#define NOT_AVAILABLE "CIDRNotAvailable"
/* kube's reason, a sentence */
#define INVALID "InvalidClusterCIDR encountered while regenerating ClusterCIDR during bootstrap."
#define WRITERS 8 /* threads writing the Nodes a pass gave blocks */
#define DEFAULT_NAME "default-cluster-cidr"
#define MIN_HOST_BITS 4 /* minPerNodeHostBits */

/* One ClusterCIDR during a pass. */
typedef struct range {
    json_t *obj;                /* as listed (borrowed from the pass's list) */
    bool terminating;           /* being deleted: no new blocks */
    bool has[2];                /* ipv4 ([0]), ipv6 ([1]) given */
    kapi_cidr_set set[2];       /* the blocks of each */
    size_t nodes;               /* Nodes with blocks in it */
    char *key;                  /* the selector as canonical JSON, owned */
    char label[KAPI_CIDR_TEXT]; /* the IPv4 range, else the IPv6 one, as text */
    int match;                  /* for the Node at hand: kapi_controllers__node_selector_match */
} range;

typedef struct state {
    kapi_controller *c;
    kapi_api *api;
    const kapi_type *nodes, *cidrs, *events;
    range *r;
    size_t n;
    range **order;       /* scratch: r's members sorted for one Node */
    json_t *writes;      /* the Nodes given blocks, to be written */
    size_t next, failed; /* the writers' place in writes, and their failures */
    pthread_mutex_t mu;  /* over next and failed */
} state;

/* ---- node selectors ---- */

/* A base-10 int64, as strconv.ParseInt reads it. */
static bool parse_int(const char *s, long long *out)
{
    char *end;
    if (!s || !*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
        return false;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno == 0 && *end == '\0';
}

/* labels.Requirement.Matches of one NodeSelectorRequirement; value NULL when the label
 * (or field) is absent. */
static bool requirement_matches(const json_t *rq, const char *value)
{
    const char *op = kapi_json_path_str(rq, "operator");
    const json_t *values = json_object_get(rq, "values");
    long long have, want;
    op = op ? op : "";
    if (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0)
        return (value != NULL) == (op[0] == 'E');
    if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0)
        return (value && kapi_json_array_has_string(values, value)) ==
               (op[0] == 'I' && op[1] == 'n');
    if ((strcmp(op, "Gt") != 0 && strcmp(op, "Lt") != 0) || json_array_size(values) != 1 ||
        !parse_int(value, &have) || !parse_int(json_string_value(json_array_get(values, 0)), &want))
        return false;
    return op[0] == 'G' ? have > want : have < want;
}

/* The requirement count of term, or -1 when it does not pick node (or has none). */
static int term_match(const json_t *term, const json_t *node)
{
    const json_t *exprs = json_object_get(term, "matchExpressions");
    const json_t *fields = json_object_get(term, "matchFields");
    const json_t *labels = kapi_json_path(node, "metadata.labels");
    size_t i;
    json_t *rq;
    json_array_foreach(exprs, i, rq)
    {
        const char *key = kapi_json_path_str(rq, "key");
        if (!requirement_matches(rq, json_string_value(json_object_get(labels, key ? key : ""))))
            return -1;
    }
    json_array_foreach(fields, i, rq)
    {
        const char *key = kapi_json_path_str(rq, "key");
        bool name = key && strcmp(key, "metadata.name") == 0;
        if (!requirement_matches(rq, name ? kapi_json_path_str(node, "metadata.name") : NULL))
            return -1;
    }
    size_t n = json_array_size(exprs) + json_array_size(fields);
    return n ? (int)n : -1;
}

int kapi_controllers__node_selector_match(const json_t *sel, const json_t *node)
{
    const json_t *terms = json_object_get(sel, "nodeSelectorTerms");
    int best = -1;
    size_t i;
    json_t *term;
    if (json_array_size(terms) == 0)
        return 0;
    json_array_foreach(terms, i, term)
    {
        int m = term_match(term, node);
        best = m > best ? m : best;
    }
    return best;
}

/* ---- the ClusterCIDRs of a pass ---- */

/* Fills r from the ClusterCIDR obj; NULL, or why its ranges cannot be cut as
 * perNodeHostBits says, in kube's words (a heap string): createClusterCIDRSet refuses
 * it, and it is not used. */
static char *range_init(range *r, json_t *obj)
{
    static const char *const fields[] = {"spec.ipv4", "spec.ipv6"}, *const family[] = {"IPv4",
                                                                                       "IPv6"};
    memset(r, 0, sizeof(*r));
    r->obj = obj;
    r->terminating = kapi_json_path(obj, "metadata.deletionTimestamp") != NULL;
    int bits = (int)json_integer_value(kapi_json_path(obj, "spec.perNodeHostBits"));
    for (int f = 0; f < 2; f++) {
        const char *s = kapi_json_path_str(obj, fields[f]);
        kapi_cidr c;
        char text[KAPI_CIDR_TEXT];
        if (!s || !*s)
            continue;
        if (!kapi_cidr_parse(s, &c) || (c.bits == 32) != (f == 0))
            return kapi_xprintf("invalid ClusterCIDR: unable to parse provided %s CIDR: invalid "
                                "CIDR address: %s",
                                family[f], s);
        kapi_cidr_format(&c, text);
        if (!kapi_cidr_set_init(&r->set[f], &c, bits))
            return kapi_xprintf("invalid ClusterCIDR: unable to create %s cidrSet: Creation of "
                                "New CIDR Set failed for %s. PerNodeMaskSize %d is too big for "
                                "CIDR Mask %d, Maximum difference allowed is %d",
                                family[f], text, c.bits - bits, c.prefix, KAPI_CIDR_MAX_DIFF);
        r->has[f] = true;
        if (!*r->label)
            memcpy(r->label, text, sizeof(text));
    }
    const json_t *sel = kapi_json_path(obj, "spec.nodeSelector");
    r->key = json_dumps(sel ? sel : json_null(), JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    return r->has[0] || r->has[1]
               ? NULL
               : kapi_xstrdup("invalid ClusterCIDR: must provide IPv4 and/or IPv6 config");
}

static void range_dispose(range *r)
{
    for (int f = 0; f < 2; f++)
        if (r->has[f])
            kapi_cidr_set_dispose(&r->set[f]);
    free(r->key);
}

/* The fewest blocks of r's ranges (PriorityQueueItem.maxAllocatable). */
static uint64_t fewest(const range *r)
{
    uint64_t a = r->has[0] ? r->set[0].max : UINT64_MAX;
    uint64_t b = r->has[1] ? r->set[1].max : UINT64_MAX;
    return a < b ? a : b;
}

/* kube's PriorityQueue.Less, with a selector without terms (match 0) after every
 * matching one and the ClusterCIDRs that do not match (-1) last. */
static int by_priority(const void *pa, const void *pb)
{
    const range *a = *(range *const *)pa, *b = *(range *const *)pb;
    int ma = a->match == 0 ? -1 : a->match < 0 ? -2 : a->match;
    int mb = b->match == 0 ? -1 : b->match < 0 ? -2 : b->match;
    if (ma != mb)
        return ma > mb ? -1 : 1;
    if (fewest(a) != fewest(b))
        return fewest(a) < fewest(b) ? -1 : 1;
    int pa_ = a->set[a->has[0] ? 0 : 1].node_prefix, pb_ = b->set[b->has[0] ? 0 : 1].node_prefix;
    if (pa_ != pb_)
        return pa_ > pb_ ? -1 : 1;
    int k = strcmp(a->key, b->key);
    return k ? k : strcmp(a->label, b->label);
}

/* st->order gets the ClusterCIDRs in their order for node. */
static void order_for(state *st, const json_t *node)
{
    for (size_t i = 0; i < st->n; i++) {
        range *r = &st->r[i];
        r->match = kapi_controllers__node_selector_match(
            kapi_json_path(r->obj, "spec.nodeSelector"), node);
        st->order[i] = r;
    }
    qsort(st->order, st->n, sizeof(*st->order), by_priority);
}

/* ---- writes ---- */

/* Writes obj (taken) back at its resourceVersion; false when that failed. */
static bool write_back(state *st, const kapi_type *t, json_t *obj)
{
    kapi_error *err = kapi_api_update(st->api, &kapi_controllers_user, t, "", obj, NULL);
    kapi_error_free(err);
    return err == NULL;
}

static bool has_finalizer(const json_t *obj)
{
    return kapi_json_array_has_string(kapi_json_path(obj, "metadata.finalizers"), FINALIZER);
}

/* Adds (or removes) the finalizer of r's ClusterCIDR; false when the write failed. */
static bool set_finalizer(state *st, range *r, bool on)
{
    json_t *obj = json_deep_copy(r->obj);
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    json_t *fins = json_object_get(meta, "finalizers"), *kept = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(fins, i, f)
    {
        if (!json_is_string(f) || strcmp(json_string_value(f), FINALIZER) != 0)
            json_array_append(kept, f);
    }
    if (on)
        json_array_append_new(kept, json_string(FINALIZER));
    json_object_set_new_nocheck(meta, "finalizers", kept);
    return write_back(st, st->cidrs, obj);
}

/* kube's RecordNodeStatusChange(node, "CIDRNotAvailable"), once per Node: the event's
 * name comes from the Node's uid, so a later pass finds it there. */
static void not_available(state *st, const json_t *node)
{
    const char *name = kapi_json_path_str(node, "metadata.name");
    const char *uid = kapi_json_path_str(node, "metadata.uid");
    char suffix[17] = "", now[32];
    size_t n = 0;
    for (const char *p = uid ? uid : ""; *p && n < 16; p++)
        if (*p != '-')
            suffix[n++] = *p;
    suffix[n] = '\0';
    kapi_time_rfc3339(now, kapi_time_now_ns() / 1000000000);
    json_t *ev = json_pack(
        "{s:s,s:s,s:{s:s++,s:s},s:{s:s,s:s,s:s,s:s},s:s,s:s++,s:{s:s},s:s,s:s,s:i,s:s,s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", name, ".", suffix, "namespace",
        "default", "involvedObject", "kind", "Node", "name", name, "uid", uid ? uid : "",
        "apiVersion", "v1", "reason", NOT_AVAILABLE, "message", "Node ", name,
        " status is now: " NOT_AVAILABLE, "source", "component", COMPONENT, "firstTimestamp", now,
        "lastTimestamp", now, "count", 1, "type", "Normal", "reportingComponent", COMPONENT);
    kapi_error *err =
        kapi_api_create(st->api, &kapi_controllers_user, st->events, KAPI_STR("default"), ev, NULL);
    kapi_error_free(err);
}

/* ---- the default ClusterCIDR (--cluster-cidr) ---- */

/* setNodeCIDRMaskSizes: the mask size of each of the n CIDRs (IPv6 ones where v6[i]). */
static char *mask_sizes(size_t n, const bool *v6, int mask, int mask_v4, int mask_v6, int *out)
{
    int m4 = 24, m6 = 64;
    if (n > 1) {
        if (mask)
            return kapi_xstrdup("usage of --node-cidr-mask-size is not allowed with dual-stack "
                                "clusters");
        m4 = mask_v4 ? mask_v4 : m4;
        m6 = mask_v6 ? mask_v6 : m6;
    } else if (mask) {
        if (mask_v4 || mask_v6)
            return kapi_xstrdup("usage of --node-cidr-mask-size-ipv4 and "
                                "--node-cidr-mask-size-ipv6 is not allowed if "
                                "--node-cidr-mask-size is set. For dual-stack clusters please "
                                "unset it and use IPFamily specific flags");
        m4 = m6 = mask;
    } else {
        if (mask_v4 && v6[0])
            return kapi_xstrdup("usage of --node-cidr-mask-size-ipv4 is not allowed for a "
                                "single-stack IPv6 cluster");
        if (mask_v6 && !v6[0])
            return kapi_xstrdup("usage of --node-cidr-mask-size-ipv6 is not allowed for a "
                                "single-stack IPv4 cluster");
        m4 = mask_v4 ? mask_v4 : m4;
        m6 = mask_v6 ? mask_v6 : m6;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = v6[i] ? m6 : m4;
    return NULL;
}

char *kapi_clustercidr_default_spec(const char *cidrs, int mask, int mask_v4, int mask_v6,
                                    json_t **spec)
{
    *spec = NULL;
    if (!cidrs || !*cidrs)
        return NULL;
    /* validateCIDRs: each a CIDR, at most two, two of two families */
    char *list = kapi_xstrdup(cidrs), *save = NULL;
    kapi_cidr c[2];
    bool v6[2], fam[2] = {false, false};
    size_t n = 0;
    char *why = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok && !why; tok = strtok_r(NULL, ",", &save)) {
        kapi_cidr one;
        if (!kapi_cidr_parse(tok, &one)) {
            why = kapi_xprintf("failed to parse cidr value:\"%s\" with error:invalid CIDR "
                               "address: %s",
                               tok, tok);
            break;
        }
        fam[!one.v4] = true;
        if (n < 2)
            c[n] = one, v6[n] = !one.v4;
        n++;
    }
    free(list);
    if (!why && n > 1 && !(fam[0] && fam[1]))
        why = kapi_xprintf("len of ClusterCIDRs==%zu and they are not configured as dual stack "
                           "(at least one from each IPFamily",
                           n);
    else if (!why && n > 2)
        why = kapi_xprintf("length of clusterCIDRs is:%zu more than max allowed of 2", n);
    if (why)
        return why;
    int masks[2];
    if ((why = mask_sizes(n, v6, mask, mask_v4, mask_v6, masks)))
        return why;
    /* createDefaultClusterCIDR */
    json_t *s = json_object();
    int bits = MIN_HOST_BITS, bits4 = INT32_MIN, bits6 = INT32_MIN;
    for (size_t i = 0; i < n; i++) {
        char text[KAPI_CIDR_TEXT];
        kapi_cidr_format(&c[i], text);
        json_object_set_new_nocheck(s, v6[i] ? "ipv6" : "ipv4", json_string(text));
        int *host = v6[i] ? &bits6 : &bits4;
        *host = (v6[i] ? 128 : 32) - masks[i];
        if (n == 1 && *host > MIN_HOST_BITS)
            bits = *host;
    }
    if (n == 2) {
        if (bits4 >= MIN_HOST_BITS && bits4 <= bits6)
            bits = bits4;
        else if (bits6 >= MIN_HOST_BITS && bits6 <= 32)
            bits = bits6;
    }
    json_object_set_new_nocheck(s, "perNodeHostBits", json_integer(bits));
    *spec = s;
    return NULL;
}

/* At the allocator's start, the default ClusterCIDR is made unless one of its name is
 * listed (with the finalizer, as kube's createClusterCIDR writes it); false when the
 * create failed otherwise than by a name taken. */
static bool make_default(state *st, const json_t *spec, const json_t *cidrs)
{
    size_t i;
    json_t *obj;
    json_array_foreach(cidrs, i, obj)
    {
        const char *name = kapi_json_path_str(obj, "metadata.name");
        if (name && strcmp(name, DEFAULT_NAME) == 0)
            return true;
    }
    obj = json_pack("{s:s,s:s,s:{s:s,s:[s]},s:O}", "apiVersion", "networking.k8s.io/v1alpha1",
                    "kind", "ClusterCIDR", "metadata", "name", DEFAULT_NAME, "finalizers",
                    FINALIZER, "spec", spec);
    kapi_error *err =
        kapi_api_create(st->api, &kapi_controllers_user, st->cidrs, KAPI_STR(""), obj, NULL);
    bool ok = !err || err->status == KAPI_STATUS_ALREADY_EXISTS;
    if (!ok)
        KAPI_LOG_WARNING("clustercidr: %s: %s", DEFAULT_NAME, err->message);
    kapi_error_free(err);
    return ok;
}

/* ---- a pass ---- */

/* Marks the Pod CIDRs of node taken in the first ClusterCIDR, in node's order, that holds
 * them all. */
static void occupy(state *st, const json_t *node, const json_t *cidrs)
{
    kapi_cidr c[2];
    size_t n = json_array_size(cidrs);
    if (n > 2)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(cidrs, i));
        if (!kapi_cidr_parse(s ? s : "", &c[i]))
            return;
    }
    order_for(st, node);
    for (size_t k = 0; k < st->n; k++) {
        range *r = st->order[k];
        bool holds = true;
        for (size_t i = 0; i < n; i++) {
            int f = c[i].bits == 32 ? 0 : 1;
            holds = holds && r->has[f] && kapi_cidr_overlaps(&c[i], &r->set[f].range);
        }
        if (!holds)
            continue;
        for (size_t i = 0; i < n; i++)
            kapi_cidr_set_occupy(&r->set[c[i].bits == 32 ? 0 : 1], &c[i]);
        r->nodes++;
        return;
    }
}

/* True when blk overlaps a block taken in a ClusterCIDR other than r. */
static bool taken_elsewhere(const state *st, const range *r, int f, const kapi_cidr *blk)
{
    for (size_t i = 0; i < st->n; i++) {
        const range *q = &st->r[i];
        if (q != r && q->has[f] && kapi_cidr_set_any_taken(&q->set[f], blk))
            return true;
    }
    return false;
}

/* A free block of family f of r, taken; false when r has none left. */
static bool take(state *st, range *r, int f, kapi_cidr *out)
{
    kapi_cidr_set *s = &r->set[f];
    uint64_t i;
    for (uint64_t tries = 0; tries < s->max && kapi_cidr_set_next(s, &i); tries++) {
        kapi_cidr_set_block(s, i, out);
        if (!taken_elsewhere(st, r, f, out)) {
            kapi_cidr_set_occupy(s, out);
            return true;
        }
    }
    return false;
}

/* Gives node blocks: the Node with them goes to st->writes; without, its event. */
static void allocate(state *st, json_t *node)
{
    order_for(st, node);
    for (size_t k = 0; k < st->n; k++) {
        range *r = st->order[k];
        kapi_cidr blk[2];
        bool got[2] = {false, false};
        if (r->match < 0 || r->terminating)
            break;
        for (int f = 0; f < 2; f++)
            got[f] = r->has[f] && take(st, r, f, &blk[f]);
        if (got[0] != r->has[0] || got[1] != r->has[1]) {
            for (int f = 0; f < 2; f++)
                if (got[f])
                    kapi_cidr_set_release(&r->set[f], &blk[f]);
            continue;
        }
        json_t *copy = json_deep_copy(node);
        json_t *spec = kapi_json_object_ensure(copy, "spec"), *list = json_array();
        for (int f = 0; f < 2; f++) {
            char text[KAPI_CIDR_TEXT];
            if (!got[f])
                continue;
            kapi_cidr_format(&blk[f], text);
            json_array_append_new(list, json_string(text));
        }
        json_object_set_nocheck(spec, "podCIDR", json_array_get(list, 0));
        json_object_set_new_nocheck(spec, "podCIDRs", list);
        json_array_append_new(st->writes, copy);
        r->nodes++;
        return;
    }
    not_available(st, node);
}

/* The writers share st->writes: each takes the next Node until none is left. Their
 * writes land in the store's group commits together, so many new Nodes cost a few
 * commits, not one each. A write that fails (the Node changed or went meanwhile) leaves
 * its blocks to the next pass, which starts again from the Nodes. */
static void *writer(void *arg)
{
    state *st = arg;
    for (;;) {
        json_t *node = NULL;
        pthread_mutex_lock(&st->mu);
        if (!kapi_controllers__stopping(st->c) && st->next < json_array_size(st->writes))
            node = json_incref(json_array_get(st->writes, st->next++));
        pthread_mutex_unlock(&st->mu);
        if (!node)
            return NULL;
        bool ok = write_back(st, st->nodes, node);
        pthread_mutex_lock(&st->mu);
        st->failed += !ok;
        pthread_mutex_unlock(&st->mu);
    }
}

/* Writes st->writes from up to WRITERS threads; false when a write failed. */
static bool write_nodes(state *st)
{
    pthread_t threads[WRITERS];
    size_t started = 0, n = json_array_size(st->writes);
    pthread_mutex_init(&st->mu, NULL);
    for (; started < WRITERS && started + 1 < n; started++)
        if (pthread_create(&threads[started], NULL, writer, st) != 0)
            break;
    writer(st);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_destroy(&st->mu);
    return st->failed == 0;
}

/* Occupies every Node's blocks, then allocates to those without and writes them; false
 * when a write failed (try again soon). */
static bool nodes_pass(state *st, json_t *nodes)
{
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        const json_t *cidrs = kapi_json_path(node, "spec.podCIDRs");
        if (json_array_size(cidrs))
            occupy(st, node, cidrs);
    }
    json_array_foreach(nodes, i, node)
    {
        if (kapi_controllers__stopping(st->c))
            break;
        if (json_array_size(kapi_json_path(node, "spec.podCIDRs")) ||
            kapi_json_path(node, "metadata.deletionTimestamp"))
            continue;
        allocate(st, node);
    }
    return write_nodes(st);
}

/* What the allocator keeps across passes. */
typedef struct allocator {
    bool booted;          /* the first pass (kube's start) is done */
    json_t *default_spec; /* of the default ClusterCIDR, or NULL */
} allocator;

static void allocator_free(void *p)
{
    allocator *al = p;
    json_decref(al->default_spec);
    free(al);
}

static bool pass(kapi_controller *c)
{
    allocator *al = kapi_controllers__ctx(c);
    bool *booted = &al->booted;
    state st = {.c = c, .api = kapi_controllers__api(c)};
    const kapi_registry *reg = kapi_api_registry(st.api);
    st.nodes = kapi_registry_lookup(reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("nodes"));
    st.events = kapi_registry_lookup(reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("events"));
    st.cidrs = kapi_registry_lookup(reg, KAPI_STR("networking.k8s.io"), KAPI_STR("v1alpha1"),
                                    KAPI_STR("clustercidrs"));
    json_t *cidrs = NULL, *nodes = NULL;
    kapi_error *err = kapi_api_list(st.api, st.cidrs, KAPI_STR(""), &cidrs, NULL);
    if (!err)
        err = kapi_api_list(st.api, st.nodes, KAPI_STR(""), &nodes, NULL);
    if (err) {
        kapi_error_free(err);
        json_decref(cidrs);
        return true;
    }
    if (!*booted && al->default_spec && !make_default(&st, al->default_spec, cidrs)) {
        json_decref(cidrs);
        json_decref(nodes);
        return true;
    }
    st.writes = json_array();
    st.r = kapi_xcalloc(json_array_size(cidrs) + 1, sizeof(*st.r));
    st.order = kapi_xcalloc(json_array_size(cidrs) + 1, sizeof(*st.order));
    bool ok = true;
    size_t i;
    json_t *obj;
    json_array_foreach(cidrs, i, obj)
    {
        char *why = range_init(&st.r[st.n], obj);
        if (!why) {
            st.n++;
            continue;
        }
        range_dispose(&st.r[st.n]);
        if (!*booted) /* kube regenerates them at its start, with this event */
            kapi_controllers__event(st.api, obj, "networking.k8s.io/v1alpha1", "ClusterCIDR",
                                    COMPONENT, "Warning", INVALID, why);
        free(why);
    }
    *booted = true;
    for (i = 0; i < st.n && !kapi_controllers__stopping(c); i++)
        if (!st.r[i].terminating && !has_finalizer(st.r[i].obj))
            ok &= set_finalizer(&st, &st.r[i], true);
    ok &= nodes_pass(&st, nodes);
    for (i = 0; i < st.n && !kapi_controllers__stopping(c); i++)
        if (st.r[i].terminating && st.r[i].nodes == 0 && has_finalizer(st.r[i].obj))
            ok &= set_finalizer(&st, &st.r[i], false);
    for (i = 0; i < st.n; i++)
        range_dispose(&st.r[i]);
    free(st.r);
    free(st.order);
    json_decref(st.writes);
    json_decref(cidrs);
    json_decref(nodes);
    return !ok;
}

/* A pass is called for by a ClusterCIDR's change, a Node's deletion (its blocks are
 * free) and a Node written without Pod CIDRs; not by the status writes of Nodes that
 * have them (kubelets' heartbeats), which a pass would only list every Node for. The
 * stored JSON has the member "podCIDRs":[ nowhere but in spec: a string holds no bare
 * quote, and managed fields write "f:podCIDRs". */
static bool calls_for_pass(const kapi_type *t, const kapi_store_event *ev)
{
    static const char member[] = "\"podCIDRs\":[";
    if (strcmp(t->plural, "nodes") != 0 || ev->type == KAPI_STORE_EVENT_DELETE ||
        ev->type == KAPI_STORE_EVENT_RESET)
        return ev->type != KAPI_STORE_EVENT_PROGRESS;
    return ev->type == KAPI_STORE_EVENT_PUT &&
           !memmem(ev->obj->data, ev->obj->len, member, sizeof(member) - 1);
}

kapi_controller *kapi_clustercidr_controller_start(kapi_api *api, const json_t *default_spec)
{
    allocator *al = kapi_xcalloc(1, sizeof(*al));
    al->default_spec = json_incref((json_t *)default_spec);
    const kapi_registry *reg = kapi_api_registry(api);
    const kapi_type *watched[] = {
        kapi_registry_lookup(reg, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("nodes")),
        kapi_registry_lookup(reg, KAPI_STR("networking.k8s.io"), KAPI_STR("v1alpha1"),
                             KAPI_STR("clustercidrs")),
        NULL};
    return kapi_controllers__start_filtered(api, "clustercidr", watched, RETRY_MS, RESYNC_MS, pass,
                                            calls_for_pass, al, allocator_free);
}
