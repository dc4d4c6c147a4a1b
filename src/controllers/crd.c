/*
 * controllers/crd: naming and establishing CustomResourceDefinitions (kube-apiserver's
 * apiextensions naming and establishing controllers), and their deletion (its finalizer
 * controller), a client of the api.
 *
 * A CRD whose spec.names differ from its status.acceptedNames has each name accepted
 * unless another CRD of its group (or an earlier name of its own) holds it: plural,
 * singular and short names among the group's resource names, kind and listKind among its
 * kinds. A conflict leaves the old accepted name and sets NamesAccepted False with
 * kube's reason (PluralConflict, ..., "\"x\" is already in use"); such a CRD is not
 * Established, so not served, until the conflict goes. Once NamesAccepted is True the CRD
 * is Established (a second /status write, as kube's establishing controller makes).
 *
 * A CRD stored before kapi held schemas to the structural rules gets kube's
 * NonStructuralSchema condition (Violations, with the causes), which goes when its
 * schemas are mended.
 *
 * A deleted CRD (its cleanup finalizer set by the delete) has its custom resources
 * deleted, each waiting for its own finalizers; once none is left the finalizer goes (a
 * /status write, as the apiextensions finalizer controller's UpdateStatus), and with it
 * the CRD. The controller watches the CRDs; while one waits for its custom resources a
 * pass follows every RETRY_MS.
 *
 * These controllers are kube-apiserver's own, so their writes are its loopback client's
 * (kapi_api_loopback_user, recorded in managedFields as "kube-apiserver"), not
 * kube-controller-manager's.
 */
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"
#include "controllers/controllers.h"
#include "schema/field.h"
#include "schema/schema.h"

#define RETRY_MS 100
#define RESYNC_MS 30000

static const kapi_type *crd_type(kapi_api *api)
{
    return kapi_registry_crds(kapi_api_registry(api));
}

/* Writes crd's status (crd kept); on success crd takes the new resourceVersion, so that
 * a second write in the same pass is not refused as stale. */
static void write_status(kapi_api *api, const kapi_type *t, json_t *crd)
{
    json_t *out = NULL;
    kapi_error *err =
        kapi_api_update(api, &kapi_api_loopback_user, t, "status", json_incref(crd), &out);
    const json_t *rv = kapi_json_path(out, "metadata.resourceVersion");
    if (!err && rv)
        json_object_set(kapi_json_object_ensure(crd, "metadata"), "resourceVersion", (json_t *)rv);
    kapi_error_free(err);
    json_decref(out);
}

/* ---- naming (kube's NamingConditionController and EstablishingController) ---- */

/* The string at path in v, "" when absent. */
static const char *sval(const json_t *v, const char *path)
{
    const char *s = kapi_json_path_str(v, path);
    return s ? s : "";
}

/* Whether a CRD of group (self included) has accepted name among its resource names
 * (plural, singular, short names) or, with kinds, its kinds (kind, listKind). self counts
 * too, with the names it has accepted so far. */
static bool name_used(const json_t *items, const char *group, const char *name, bool kinds)
{
    static const char *const resource_keys[] = {"plural", "singular"};
    static const char *const kind_keys[] = {"kind", "listKind"};
    const char *const *keys = kinds ? kind_keys : resource_keys;
    size_t i;
    json_t *crd;
    json_array_foreach(items, i, crd)
    {
        if (strcmp(sval(crd, "spec.group"), group) != 0)
            continue;
        const json_t *accepted = kapi_json_path(crd, "status.acceptedNames");
        for (size_t k = 0; k < 2; k++)
            if (strcmp(sval(accepted, keys[k]), name) == 0)
                return true;
        const json_t *shorts = json_object_get(accepted, "shortNames");
        for (size_t j = 0; !kinds && j < json_array_size(shorts); j++)
            if (strcmp(json_string_value(json_array_get(shorts, j)) ?: "", name) == 0)
                return true;
    }
    return false;
}

/* equalToAcceptedOrFresh: NULL, or the conflict ("\"x\" is already in use", heap). */
static char *conflict(const json_t *items, const char *group, const char *requested,
                      const char *accepted, bool kinds)
{
    if (strcmp(requested, accepted) == 0 || !name_used(items, group, requested, kinds))
        return NULL;
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_quote(&b, requested, strlen(requested));
    kapi_buf_puts(&b, " is already in use");
    return kapi_buf_detach(&b, NULL);
}

typedef struct naming {
    json_t *names;      /* the accepted names to be */
    const char *reason; /* NULL: no conflict */
    char *message;      /* heap */
} naming;

static void name_conflict(naming *n, const char *reason, char *message)
{
    n->reason = reason;
    free(n->message);
    n->message = message;
}

/* One name of spec.names (key): accepted when it does not conflict. */
static void take_name(naming *n, const json_t *items, const json_t *crd, const char *key,
                      const char *reason, bool kinds)
{
    const char *group = sval(crd, "spec.group");
    const char *requested = sval(kapi_json_path(crd, "spec.names"), key);
    const char *accepted = sval(kapi_json_path(crd, "status.acceptedNames"), key);
    char *why = conflict(items, group, requested, accepted, kinds);
    if (why)
        name_conflict(n, reason, why);
    else
        json_object_set_new_nocheck(n->names, key, json_string(requested));
}

/* The short names: each new one must be free; all are taken or none. */
static void take_short_names(naming *n, const json_t *items, const json_t *crd)
{
    const json_t *requested = kapi_json_path(crd, "spec.names.shortNames");
    const json_t *accepted = kapi_json_path(crd, "status.acceptedNames.shortNames");
    const char *group = sval(crd, "spec.group");
    if (json_equal(requested, accepted) || (!requested && !accepted))
        return;
    kapi_buf errs;
    kapi_buf_init(&errs);
    size_t nerrs = 0;
    for (size_t i = 0; i < json_array_size(requested); i++) {
        const char *name = json_string_value(json_array_get(requested, i)) ?: "";
        bool had = false;
        for (size_t j = 0; j < json_array_size(accepted) && !had; j++)
            had = strcmp(json_string_value(json_array_get(accepted, j)) ?: "", name) == 0;
        char *why = had ? NULL : conflict(items, group, name, "", false);
        if (why)
            kapi_buf_printf(&errs, "%s%s", nerrs++ ? ", " : "", why);
        free(why);
    }
    if (nerrs) { /* Go's aggregate: one error as it is, several in brackets */
        char *text = kapi_buf_detach(&errs, NULL);
        name_conflict(n, "ShortNamesConflict", nerrs > 1 ? kapi_xprintf("[%s]", text) : text);
        if (nerrs > 1)
            free(text);
        return;
    }
    kapi_buf_dispose(&errs);
    if (requested)
        json_object_set_nocheck(n->names, "shortNames", (json_t *)requested);
    else
        json_object_del(n->names, "shortNames");
}

/* calculateNamesAndConditions: crd's accepted names and its NamesAccepted and Established
 * conditions, written when they change. crd is updated in place (taken), so that the
 * CRDs named after it in this pass see what it accepted. */
static void name(kapi_api *api, const kapi_type *t, const json_t *items, json_t *crd)
{
    char buf[32];
    const char *now = kapi_time_rfc3339(buf, kapi_time_now_ns() / 1000000000);
    json_t *accepted = kapi_json_path(crd, "status.acceptedNames");
    naming n = {.names = json_is_object(accepted) ? json_deep_copy(accepted) : json_object()};
    take_name(&n, items, crd, "plural", "PluralConflict", false);
    take_name(&n, items, crd, "singular", "SingularConflict", false);
    take_short_names(&n, items, crd);
    take_name(&n, items, crd, "kind", "KindConflict", true);
    take_name(&n, items, crd, "listKind", "ListKindConflict", true);
    const json_t *categories = kapi_json_path(crd, "spec.names.categories");
    if (categories)
        json_object_set_nocheck(n.names, "categories", (json_t *)categories);
    else
        json_object_del(n.names, "categories");
    const char *status = n.reason ? "False" : "True";
    bool same = json_equal(n.names, accepted) &&
                strcmp(kapi_crd_condition_status(crd, "NamesAccepted"), status) == 0;
    if (!same) {
        json_object_set_new_nocheck(kapi_json_object_ensure(crd, "status"), "acceptedNames",
                                    n.names);
        n.names = NULL;
        kapi_crd_set_condition(crd, "NamesAccepted", status, n.reason ? n.reason : "NoConflicts",
                               n.reason ? n.message : "no conflicts found", now);
        if (!kapi_crd_condition(crd, "Established")) {
            if (!n.reason)
                kapi_crd_set_condition(crd, "Established", "False", "Installing",
                                       "the initial names have been accepted", now);
            else if (!*kapi_crd_condition_status(crd, "Established"))
                kapi_crd_set_condition(crd, "Established", "False", "NotAccepted",
                                       "not all names are accepted", now);
        }
        write_status(api, t, crd);
    }
    json_decref(n.names);
    free(n.message);
    json_decref(crd);
}

/* Establishes crd (taken) once its names are accepted. */
static void establish(kapi_api *api, const kapi_type *t, json_t *crd)
{
    char buf[32];
    const char *now = kapi_time_rfc3339(buf, kapi_time_now_ns() / 1000000000);
    kapi_crd_set_condition(crd, "Established", "True", "InitialNamesAccepted",
                           "the initial names have been accepted", now);
    write_status(api, t, crd);
    json_decref(crd);
}

/* ---- NonStructuralSchema (kube's nonstructuralschema ConditionController) ----
 * Only a CRD stored before the structural rules (or with preserveUnknownFields) can have
 * it: a new one is refused at validation. */

/* The condition crd should have: status, reason and message (heap), or false for none. */
static bool non_structural(const json_t *crd, const char **status, const char **reason,
                           char **message)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_error *errs = kapi_error_new(KAPI_STATUS_INVALID, "nonstructural");
    const json_t *versions = kapi_json_path(crd, "spec.versions");
    *message = NULL;
    if (json_is_true(kapi_json_path(crd, "spec.preserveUnknownFields")))
        kapi_field_invalid_raw(errs, "spec.preserveUnknownFields", "true", "must be false");
    for (size_t i = 0; i < json_array_size(versions) && !*message; i++) {
        const json_t *v = json_array_get(versions, i);
        const json_t *s = kapi_json_path(v, "schema.openAPIV3Schema");
        if (!json_is_object(s))
            continue;
        const char *path =
            kapi_path_child(&a, kapi_path_index(&a, "spec.versions", i), "schema.openAPIV3Schema");
        const char *why = kapi_schema_crd_structural_causes(s, path, errs);
        if (why) {
            *status = "Unknown";
            *reason = "StructuralError";
            *message = kapi_xprintf("failed to check validation schema for version %s: %s",
                                    sval(v, "name"), why);
        }
    }
    if (!*message && errs->ncauses) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_field_aggregate(&b, errs);
        *status = "True";
        *reason = "Violations";
        *message = kapi_buf_detach(&b, NULL);
    }
    kapi_error_free(errs);
    kapi_arena_dispose(&a);
    return *message != NULL;
}

/* Sets or removes crd's NonStructuralSchema condition (crd taken), writing when it changes. */
static void check_structural(kapi_api *api, const kapi_type *t, json_t *crd)
{
    const char *status = NULL, *reason = NULL;
    char *message = NULL;
    bool want = non_structural(crd, &status, &reason, &message);
    const char *has = kapi_crd_condition_status(crd, "NonStructuralSchema");
    json_t *cond = NULL;
    size_t i;
    json_t *each;
    json_array_foreach(kapi_json_path(crd, "status.conditions"), i, each)
    {
        if (strcmp(sval(each, "type"), "NonStructuralSchema") == 0)
            cond = each;
    }
    bool same = want ? cond && strcmp(has, status) == 0 &&
                           strcmp(sval(cond, "reason"), reason) == 0 &&
                           strcmp(sval(cond, "message"), message) == 0
                     : cond == NULL;
    if (!same) {
        char buf[32];
        if (want)
            kapi_crd_set_condition(crd, "NonStructuralSchema", status, reason, message,
                                   kapi_time_rfc3339(buf, kapi_time_now_ns() / 1000000000));
        else
            kapi_crd_remove_condition(crd, "NonStructuralSchema");
        write_status(api, t, crd);
    }
    free(message);
    json_decref(crd);
}

/* Deletes the custom resources of crd; true when none is left. */
static bool delete_instances(kapi_controller *c, const json_t *crd)
{
    static const kapi_delete_opts background = {.propagation = "Background", .grace = -1};
    kapi_api *api = kapi_controllers__api(c);
    const kapi_type *t = NULL;
    json_t *items = NULL, *item;
    size_t i;
    kapi_error *err = kapi_controllers__storage_type(api, crd, &t);
    if (err) {
        kapi_error_free(err);
        return true; /* a CRD that never served has no instances */
    }
    err = kapi_api_list(api, t, KAPI_STR(""), &items, NULL);
    bool empty = !err && json_array_size(items) == 0;
    kapi_error_free(err);
    json_array_foreach(items, i, item)
    {
        if (kapi_controllers__stopping(c))
            break;
        kapi_error_free(kapi_api_delete(
            api, &kapi_api_loopback_user, t, kapi_controllers__str(item, "metadata.namespace"),
            kapi_controllers__str(item, "metadata.name"), &background, NULL, NULL));
    }
    json_decref(items);
    kapi_type_unref(t);
    return empty;
}

/* crd (taken; being deleted): its custom resources go, then its cleanup finalizer. */
static void clean_up(kapi_controller *c, const kapi_type *t, json_t *crd)
{
    json_t *fins = kapi_json_path(crd, "metadata.finalizers");
    size_t at = json_array_size(fins);
    for (size_t i = 0; i < json_array_size(fins); i++)
        if (strcmp(json_string_value(json_array_get(fins, i)) ?: "", KAPI_CRD_CLEANUP) == 0)
            at = i;
    if (at < json_array_size(fins) && delete_instances(c, crd)) {
        json_array_remove(fins, at);
        kapi_error_free(kapi_api_update(kapi_controllers__api(c), &kapi_api_loopback_user, t,
                                        "status", json_incref(crd), NULL));
    }
    json_decref(crd);
}

/* Acts on each CRD as its parsed object says (never on a search of its bytes, which a
 * label or an annotation could hold). */
static bool pass(kapi_controller *c)
{
    kapi_api *api = kapi_controllers__api(c);
    const kapi_type *t = crd_type(api);
    json_t *items = NULL, *crd;
    size_t i;
    bool waiting = false;
    kapi_error_free(kapi_api_list(api, t, KAPI_STR(""), &items, NULL));
    json_array_foreach(items, i, crd)
    {
        if (kapi_controllers__stopping(c))
            break;
        if (kapi_json_path(crd, "metadata.deletionTimestamp")) {
            clean_up(c, t, json_incref(crd));
            waiting = true;
            continue;
        }
        check_structural(api, t, json_incref(crd));
        if (!json_equal(kapi_json_path(crd, "spec.names"),
                        kapi_json_path(crd, "status.acceptedNames")))
            name(api, t, items, json_incref(crd));
        if (kapi_crd_condition(crd, "NamesAccepted") && !kapi_crd_condition(crd, "Established"))
            establish(api, t, json_incref(crd));
    }
    json_decref(items);
    return waiting;
}

kapi_controller *kapi_crd_controller_start(kapi_api *api)
{
    const kapi_type *watched[] = {crd_type(api), NULL};
    return kapi_controllers__start(api, "crd", watched, RETRY_MS, RESYNC_MS, pass);
}
