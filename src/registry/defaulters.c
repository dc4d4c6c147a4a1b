/*
 * registry/defaulters: the defaulting Kubernetes does with a condition, which a schema's
 * "default" cannot say. Each is named by the x-kapi-defaulter of a definition in
 * src/schema/defs and runs after that object's members are walked and its static
 * defaults applied.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json.h"
#include "registry/registry.h"
#include "schema/quantity.h"

/* The pull policy of an image reference: Always for :latest or no tag and no digest,
 * else IfNotPresent (also for a reference that does not parse, as Kubernetes does). */
static const char *pull_policy(const char *image)
{
    if (!*image)
        return "IfNotPresent";
    const char *digest = strchr(image, '@');
    size_t name_len = digest ? (size_t)(digest - image) : strlen(image);
    const char *slash = memrchr(image, '/', name_len);
    const char *colon = memrchr(slash ? slash : image, ':', name_len - (slash ? slash - image : 0));
    size_t repo_len = colon ? (size_t)(colon - image) : name_len;
    for (size_t i = 0; i < repo_len; i++)
        if (isupper((unsigned char)image[i]))
            return "IfNotPresent";
    if (!colon)
        return digest ? "IfNotPresent" : "Always";
    size_t tag_len = name_len - repo_len - 1;
    return tag_len == 6 && strncmp(colon + 1, "latest", 6) == 0 ? "Always" : "IfNotPresent";
}

static void container(json_t *obj)
{
    if (json_object_get(obj, "imagePullPolicy"))
        return;
    const char *image = json_string_value(json_object_get(obj, "image"));
    json_object_set_new_nocheck(obj, "imagePullPolicy",
                                json_string(pull_policy(image ? image : "")));
}

/* With the host's network, a container port is also the host port. */
static void host_ports(json_t *containers)
{
    size_t i, j;
    json_t *c, *port;
    json_array_foreach(containers, i, c)
    {
        json_array_foreach(json_object_get(c, "ports"), j, port)
        {
            json_int_t hp = json_integer_value(json_object_get(port, "hostPort"));
            json_t *cp = json_object_get(port, "containerPort");
            if (hp == 0 && cp)
                json_object_set_nocheck(port, "hostPort", cp);
        }
    }
}

/* Resource amounts finer than a thousandth are rounded up to one (Kubernetes keeps
 * this for compatibility rather than rejecting them). */
static void round_resource_list(json_t *list)
{
    const char *key;
    json_t *v;
    json_object_foreach(list, key, v)
    {
        kapi_quantity q;
        if (!json_is_string(v) || !kapi_quantity_parse(&q, json_string_value(v)))
            continue;
        kapi_quantity_round_up(&q, -3);
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_quantity_format(&b, &q);
        json_string_set(v, b.ptr);
        kapi_buf_dispose(&b);
    }
}

static void resource_requirements(json_t *obj)
{
    round_resource_list(json_object_get(obj, "limits"));
    round_resource_list(json_object_get(obj, "requests"));
}

/* serviceAccount is the deprecated alias of serviceAccountName, kept equal to it by the
 * conversions every write goes through: when only the alias is set it names the account,
 * when both are, serviceAccountName wins, and the alias then repeats it. */
static void service_account(json_t *obj)
{
    const char *name = kapi_json_path_str(obj, "serviceAccountName");
    const char *alias = kapi_json_path_str(obj, "serviceAccount");
    if ((!name || !*name) && alias && *alias) {
        json_object_set_new_nocheck(obj, "serviceAccountName", json_string(alias));
        name = alias;
    }
    if (name && *name)
        json_object_set_new_nocheck(obj, "serviceAccount", json_string(name));
    else
        json_object_del(obj, "serviceAccount");
}

static void pod_spec(json_t *obj)
{
    service_account(obj);
    round_resource_list(json_object_get(obj, "overhead"));
    if (!json_is_true(json_object_get(obj, "hostNetwork")))
        return;
    host_ports(json_object_get(obj, "containers"));
    host_ports(json_object_get(obj, "initContainers"));
}

/* A volume that names no source is an emptyDir. */
static void volume(json_t *obj)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) if (strcmp(key, "name") != 0) return;
    json_object_set_new_nocheck(obj, "emptyDir", json_object());
}

/* Every namespace carries its own name as the kubernetes.io/metadata.name label. */
static void namespace(json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = kapi_json_path_str(meta, "name");
    if (!name || !*name)
        return;
    json_object_set_new_nocheck(kapi_json_object_ensure(meta, "labels"),
                                "kubernetes.io/metadata.name", json_string(name));
}

/* v1's podCIDR and podCIDRs, as a write's round trip through the internal type leaves
 * them: podCIDR, when set, wins over a podCIDRs that disagrees or is missing; podCIDR is
 * then podCIDRs[0]. */
static void node_spec(json_t *obj)
{
    const char *one = json_string_value(json_object_get(obj, "podCIDR"));
    json_t *all = json_object_get(obj, "podCIDRs");
    const char *first = json_string_value(json_array_get(all, 0));
    if (one && *one && (!first || strcmp(first, one) != 0))
        json_object_set_new_nocheck(obj, "podCIDRs", json_pack("[s]", one));
    first = json_string_value(json_array_get(json_object_get(obj, "podCIDRs"), 0));
    if (first)
        json_object_set_new_nocheck(obj, "podCIDR", json_string(first));
}

/* allocatable defaults to capacity. */
static void node_status(json_t *obj)
{
    json_t *capacity = json_object_get(obj, "capacity");
    if (capacity && !json_object_get(obj, "allocatable"))
        json_object_set_new_nocheck(obj, "allocatable", kapi_json_copy(capacity));
}

static void job(json_t *obj)
{
    json_t *spec = kapi_json_object_ensure(obj, "spec");
    json_t *completions = json_object_get(spec, "completions");
    if (!completions && !json_object_get(spec, "parallelism")) {
        json_object_set_new_nocheck(spec, "completions", json_integer(1));
        json_object_set_new_nocheck(spec, "parallelism", json_integer(1));
    } else if (!json_object_get(spec, "parallelism")) {
        json_object_set_new_nocheck(spec, "parallelism", json_integer(1));
    }
    if (!json_object_get(spec, "backoffLimit"))
        json_object_set_new_nocheck(spec, "backoffLimit", json_integer(6));
    if (!json_object_get(spec, "completionMode"))
        json_object_set_new_nocheck(spec, "completionMode", json_string_nocheck("NonIndexed"));
    if (!json_object_get(spec, "suspend"))
        json_object_set_new_nocheck(spec, "suspend", json_false());
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    json_t *tmpl_labels = kapi_json_path(spec, "template.metadata.labels");
    if (json_object_size(json_object_get(meta, "labels")) == 0 && json_object_size(tmpl_labels))
        json_object_set_new_nocheck(meta, "labels", kapi_json_copy(tmpl_labels));
    size_t i;
    json_t *rule, *cond;
    json_array_foreach(kapi_json_path(spec, "podFailurePolicy.rules"), i, rule)
    {
        size_t j;
        json_array_foreach(json_object_get(rule, "onPodConditions"), j, cond)
        {
            const char *st = json_string_value(json_object_get(cond, "status"));
            if (!st || !*st)
                json_object_set_new_nocheck(cond, "status", json_string_nocheck("True"));
        }
    }
}

/* A CRD's stored versions start with its storage version. */
static void crd(json_t *obj)
{
    json_t *status = json_object_get(obj, "status");
    if (json_array_size(json_object_get(status, "storedVersions")))
        return;
    size_t i;
    json_t *v;
    json_array_foreach(kapi_json_path(obj, "spec.versions"), i, v)
    {
        if (json_is_true(json_object_get(v, "storage")) && json_object_get(v, "name")) {
            json_object_set_new_nocheck(kapi_json_object_ensure(obj, "status"), "storedVersions",
                                        json_pack("[O]", json_object_get(v, "name")));
            return;
        }
    }
}

/* names.singular is the lower-cased kind, names.listKind the kind + "List". */
static void crd_spec(json_t *obj)
{
    json_t *names = json_object_get(obj, "names");
    const char *kind = kapi_json_path_str(names, "kind");
    if (!json_is_object(names) || !kind || !*kind)
        return;
    const char *singular = kapi_json_path_str(names, "singular");
    if (!singular || !*singular) {
        char *lower = kapi_xstrdup(kind);
        for (char *p = lower; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        json_object_set_new_nocheck(names, "singular", json_string(lower));
        free(lower);
    }
    const char *list = kapi_json_path_str(names, "listKind");
    if (!list || !*list)
        json_object_set_new_nocheck(names, "listKind", json_sprintf("%sList", kind));
}

#define RBAC_GROUP "rbac.authorization.k8s.io"

/* A binding's roleRef is in the RBAC group unless it names a group. */
static void role_ref(json_t *obj)
{
    const char *group = json_string_value(json_object_get(obj, "apiGroup"));
    if (!group || !*group)
        json_object_set_new_nocheck(obj, "apiGroup", json_string_nocheck(RBAC_GROUP));
}

/* A User or Group subject is in the RBAC group unless it names a group (a ServiceAccount
 * stays in the core group, ""). */
static void subject(json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *group = json_string_value(json_object_get(obj, "apiGroup"));
    if ((group && *group) || !kind || (strcmp(kind, "User") != 0 && strcmp(kind, "Group") != 0))
        return;
    json_object_set_new_nocheck(obj, "apiGroup", json_string_nocheck(RBAC_GROUP));
}

void kapi_registry__defaulters(kapi_schema_set *s)
{
    static const struct {
        const char *name;
        kapi_schema_defaulter_fn fn;
    } all[] = {
        {"core.v1.Container", container},
        {"core.v1.PodSpec", pod_spec},
        {"core.v1.ResourceRequirements", resource_requirements},
        {"core.v1.Volume", volume},
        {"core.v1.Namespace", namespace},
        {"core.v1.NodeSpec", node_spec},
        {"core.v1.NodeStatus", node_status},
        {"batch.v1.Job", job},
        {"apiextensions.v1.CustomResourceDefinition", crd},
        {"apiextensions.v1.CustomResourceDefinitionSpec", crd_spec},
        {"rbac.v1.RoleRef", role_ref},
        {"rbac.v1.Subject", subject},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(all); i++)
        kapi_schema_set_defaulter(s, all[i].name, all[i].fn);
}
