/*
 * registry/validate_pod: core's ValidatePodTemplateSpec (Kubernetes 1.26) for the pod
 * templates of workload types (a CronJob's jobTemplate.spec.template).
 *
 * Kubernetes validates after defaulting; a field the defaulter always sets
 * (restartPolicy, dnsPolicy, terminationMessagePolicy, imagePullPolicy, port protocols,
 * probe thresholds, the fieldRef apiVersion, ...) is read here as its default when it is
 * absent or empty, so the causes are the same whether or not defaults were applied.
 *
 * Covered: volumes (names and the common sources), containers and init containers
 * (names, image, termination message policy, ports, env, envFrom, volume mounts and
 * devices, pull policy, resources, probes, lifecycle), host port conflicts, restart and
 * DNS policy, node selector, service account, node name, active deadline, hostname,
 * subdomain, tolerations, priority class, runtime class, preemption policy, and
 * ephemeral containers (forbidden in a template). Not covered yet: security contexts,
 * affinity, DNS config, topology spread, readiness and scheduling gates, host aliases,
 * OS-specific rules and the rarer volume sources (their presence still counts).
 *
 * Every write of a workload validates its whole template again, and most templates set
 * few of the lists: a list's validator takes the object holding it and builds its field
 * path (and its scratch objects) only when the list has items.
 */
#include <stdio.h>
#include <stdlib.h>

#include "registry/registry_int.h"

typedef struct pctx {
    kapi_error *err;
    kapi_arena *a;
    const json_t *volumes; /* name -> source, the valid volumes of the pod */
} pctx;

static const char *P(pctx *c, const char *parent, const char *name)
{
    return kapi_path_child(c->a, parent, name);
}

static const char *I(pctx *c, const char *parent, size_t i)
{
    return kapi_path_index(c->a, parent, i);
}

/* A string member read as its default when absent or empty. */
static const char *def_str(const json_t *o, const char *key, const char *dflt)
{
    const char *s = kapi_registry__str(o, key);
    return *s ? s : dflt;
}

/* An integer member read as its default when absent or 0. */
static long long def_int(const json_t *o, const char *key, long long dflt)
{
    long long v = kapi_registry__int(o, key);
    return v ? v : dflt;
}

static void invalid_each(pctx *c, const char *path, const char *v,
                         size_t (*rule)(const char *, const char **))
{
    const char *msgs[KAPI_MSGS_MAX];
    size_t n = rule(v, msgs);
    kapi_field_invalid_each(c->err, path, v, msgs, n);
}

/* One of a closed set; "" is Required. valid is NULL-terminated. The member key of the
 * object at parent, whose path is built only for a cause. */
static void enum_field(pctx *c, const char *parent, const char *key, const char *v,
                       const char *const *valid)
{
    if (!*v)
        kapi_field_required(c->err, P(c, parent, key), "");
    else if (!kapi_cstr_in(v, valid))
        kapi_field_not_supported(c->err, P(c, parent, key), v, valid);
}

/* ---- volumes ---- */

static const char file_mode_msg[] = "must be a number between 0 and 0777 (octal), both inclusive";

static void file_mode(pctx *c, const json_t *o, const char *key, const char *path)
{
    if (!kapi_registry__has(o, key))
        return;
    long long m = kapi_registry__int(o, key);
    if (m > 0777 || m < 0)
        kapi_field_invalid_int(c->err, P(c, path, key), m, "%s", file_mode_msg);
}

/* validatePathNoBacksteps */
static void no_backsteps(pctx *c, const char *path, const char *v)
{
    const char *p = v;
    while (true) {
        size_t n = strcspn(p, "/");
        if (n == 2 && strncmp(p, "..", 2) == 0) {
            kapi_field_invalid_str(c->err, path, v, "must not contain '..'");
            return;
        }
        if (!p[n])
            return;
        p += n + 1;
    }
}

/* validateLocalDescendingPath */
static void local_descending(pctx *c, const char *path, const char *v)
{
    if (v[0] == '/')
        kapi_field_invalid_str(c->err, path, v, "must be a relative path");
    no_backsteps(c, path, v);
}

/* validateKeyToPath over the items of a secret or config map volume. */
static void key_to_paths(pctx *c, const json_t *items, const char *path)
{
    for (size_t i = 0; i < json_array_size(items); i++) {
        const json_t *kp = json_array_get(items, i);
        const char *at = I(c, path, i), *p = kapi_registry__str(kp, "path");
        if (!*kapi_registry__str(kp, "key"))
            kapi_field_required(c->err, P(c, at, "key"), "");
        if (!*p)
            kapi_field_required(c->err, P(c, at, "path"), "");
        local_descending(c, P(c, at, "path"), p);
        if (strncmp(p, "..", 2) == 0 && strncmp(p, "../", 3) != 0)
            kapi_field_invalid_str(c->err, P(c, at, "path"), p, "must not start with '..'");
        file_mode(c, kp, "mode", at);
    }
}

static void volume_source(pctx *c, const char *key, const json_t *src, const char *path)
{
    static const char *const host_path_types[] = {
        "",     "BlockDevice",  "CharDevice", "Directory", "DirectoryOrCreate",
        "File", "FileOrCreate", "Socket",     NULL};
    if (strcmp(key, "hostPath") == 0) {
        const char *p = kapi_registry__str(src, "path");
        if (!*p) {
            kapi_field_required(c->err, P(c, path, "path"), "");
            return;
        }
        no_backsteps(c, P(c, path, "path"), p);
        if (kapi_registry__has(src, "type") &&
            !kapi_cstr_in(kapi_registry__str(src, "type"), host_path_types))
            kapi_field_not_supported(c->err, P(c, path, "type"), kapi_registry__str(src, "type"),
                                     host_path_types);
    } else if (strcmp(key, "secret") == 0 || strcmp(key, "configMap") == 0) {
        const char *name_key = key[0] == 's' ? "secretName" : "name";
        if (!*kapi_registry__str(src, name_key))
            kapi_field_required(c->err, P(c, path, name_key), "");
        file_mode(c, src, "defaultMode", path);
        key_to_paths(c, json_object_get(src, "items"), P(c, path, "items"));
    } else if (strcmp(key, "persistentVolumeClaim") == 0) {
        if (!*kapi_registry__str(src, "claimName"))
            kapi_field_required(c->err, P(c, path, "claimName"), "");
    } else if (strcmp(key, "nfs") == 0) {
        if (!*kapi_registry__str(src, "server"))
            kapi_field_required(c->err, P(c, path, "server"), "");
        if (!*kapi_registry__str(src, "path"))
            kapi_field_required(c->err, P(c, path, "path"), "");
        else if (kapi_registry__str(src, "path")[0] != '/')
            kapi_field_invalid_str(c->err, P(c, path, "path"), kapi_registry__str(src, "path"),
                                   "must be an absolute path");
    } else if (strcmp(key, "gitRepo") == 0) {
        if (!*kapi_registry__str(src, "repository"))
            kapi_field_required(c->err, P(c, path, "repository"), "");
        local_descending(c, P(c, path, "directory"), kapi_registry__str(src, "directory"));
    }
}

/* The volume sources, in the order validateVolumeSource visits them. */
static const char *const volume_sources[] = {"emptyDir",
                                             "hostPath",
                                             "gitRepo",
                                             "gcePersistentDisk",
                                             "awsElasticBlockStore",
                                             "secret",
                                             "nfs",
                                             "iscsi",
                                             "glusterfs",
                                             "flocker",
                                             "persistentVolumeClaim",
                                             "rbd",
                                             "quobyte",
                                             "cinder",
                                             "cephfs",
                                             "downwardAPI",
                                             "fc",
                                             "azureFile",
                                             "vsphereVolume",
                                             "azureDisk",
                                             "photonPersistentDisk",
                                             "portworxVolume",
                                             "scaleIO",
                                             "configMap",
                                             "storageos",
                                             "projected",
                                             "flexVolume",
                                             "csi",
                                             "ephemeral",
                                             NULL};

/* validateVolumeSource: exactly one source, and that source's own rules. */
static size_t volume_sources_check(pctx *c, const json_t *vol, const char *path)
{
    size_t before = c->err->ncauses, n = 0;
    for (size_t i = 0; volume_sources[i]; i++) {
        const json_t *src = json_object_get(vol, volume_sources[i]);
        if (!src || json_is_null(src))
            continue;
        const char *at = P(c, path, volume_sources[i]);
        if (n++ > 0)
            kapi_field_forbidden(c->err, at, "may not specify more than 1 volume type");
        else
            volume_source(c, volume_sources[i], src, at);
    }
    if (n == 0)
        kapi_field_required(c->err, path, "must specify a volume type");
    return c->err->ncauses - before;
}

/* ValidateVolumes: records the valid volumes (those without causes) in c->volumes. */
static void validate_volumes(pctx *c, const json_t *spec, const char *spec_path, json_t *valid)
{
    const json_t *vols = json_object_get(spec, "volumes");
    if (json_array_size(vols) == 0)
        return;
    const char *path = P(c, spec_path, "volumes");
    for (size_t i = 0; i < json_array_size(vols); i++) {
        const json_t *vol = json_array_get(vols, i);
        const char *at = I(c, path, i), *name = kapi_registry__str(vol, "name");
        size_t before = c->err->ncauses;
        volume_sources_check(c, vol, at);
        if (!*name)
            kapi_field_required(c->err, P(c, at, "name"), "");
        else
            invalid_each(c, P(c, at, "name"), name, kapi_is_dns1123_label);
        if (json_object_get(valid, name))
            kapi_field_duplicate(c->err, P(c, at, "name"), name);
        if (c->err->ncauses == before)
            json_object_set_nocheck(valid, name, (json_t *)vol);
    }
}

/* ---- containers ---- */

static void container_ports(pctx *c, const json_t *ctr, const char *ctr_path)
{
    static const char *const protocols[] = {"SCTP", "TCP", "UDP", NULL};
    const char *msgs[KAPI_MSGS_MAX];
    const json_t *ports = json_object_get(ctr, "ports");
    if (json_array_size(ports) == 0)
        return;
    const char *path = P(c, ctr_path, "ports");
    json_t *names = json_object();
    for (size_t i = 0; i < json_array_size(ports); i++) {
        const json_t *p = json_array_get(ports, i);
        const char *at = I(c, path, i), *name = kapi_registry__str(p, "name");
        if (*name) {
            size_t n = kapi_is_port_name(name, msgs);
            if (n)
                kapi_field_invalid_each(c->err, P(c, at, "name"), name, msgs, n);
            else if (json_object_get(names, name))
                kapi_field_duplicate(c->err, P(c, at, "name"), name);
            else
                json_object_set_new_nocheck(names, name, json_true());
        }
        long long cp = kapi_registry__int(p, "containerPort"),
                  hp = kapi_registry__int(p, "hostPort");
        if (cp == 0)
            kapi_field_required(c->err, P(c, at, "containerPort"), "");
        else if (kapi_is_port_num(cp, msgs))
            kapi_field_invalid_int(c->err, P(c, at, "containerPort"), cp, "%s", msgs[0]);
        if (hp != 0 && kapi_is_port_num(hp, msgs))
            kapi_field_invalid_int(c->err, P(c, at, "hostPort"), hp, "%s", msgs[0]);
        const char *proto = def_str(p, "protocol", "TCP");
        if (!kapi_cstr_in(proto, protocols))
            kapi_field_not_supported(c->err, P(c, at, "protocol"), proto, protocols);
    }
    json_decref(names);
}

/* SplitMaybeSubscriptedPath: "metadata.labels['x']" into path and subscript. */
static bool split_subscript(const char *fp, char **path, char **sub)
{
    size_t n = strlen(fp);
    const char *open = strstr(fp, "['");
    if (n < 2 || strcmp(fp + n - 2, "']") != 0 || !open || open == fp || open + 2 > fp + n - 2)
        return false;
    *path = kapi_xstrndup(fp, (size_t)(open - fp));
    *sub = kapi_xstrndup(open + 2, (size_t)(fp + n - 2 - (open + 2)));
    return true;
}

/* validateObjectFieldSelector for env (the downward API of a container). */
static void field_ref(pctx *c, const json_t *fs, const char *path)
{
    static const char *const env_paths[] = {
        "metadata.name", "metadata.namespace",      "metadata.uid",
        "spec.nodeName", "spec.serviceAccountName", "status.hostIP",
        "status.podIP",  "status.podIPs",           NULL};
    static const char *const known[] = {"metadata.annotations",
                                        "metadata.labels",
                                        "metadata.name",
                                        "metadata.namespace",
                                        "metadata.uid",
                                        "spec.nodeName",
                                        "spec.restartPolicy",
                                        "spec.serviceAccountName",
                                        "spec.schedulerName",
                                        "status.phase",
                                        "status.hostIP",
                                        "status.podIP",
                                        "status.podIPs",
                                        "spec.host",
                                        NULL};
    const char *av = def_str(fs, "apiVersion", "v1"), *fp = kapi_registry__str(fs, "fieldPath");
    char *sp, *sub;
    if (!*fp) {
        kapi_field_required(c->err, P(c, path, "fieldPath"), "");
        return;
    }
    if (strcmp(av, "v1") != 0) {
        kapi_field_invalid_str(c->err, P(c, path, "fieldPath"), fp,
                               "error converting fieldPath: unsupported pod version: %s", av);
        return;
    }
    if (split_subscript(fp, &sp, &sub)) {
        bool ann = strcmp(sp, "metadata.annotations") == 0;
        if (ann || strcmp(sp, "metadata.labels") == 0) {
            for (char *ch = sub; ann && *ch; ch++)
                *ch = (char)(*ch >= 'A' && *ch <= 'Z' ? *ch - 'A' + 'a' : *ch);
            invalid_each(c, path, sub, kapi_is_qualified_name);
        } else {
            kapi_field_invalid_str(c->err, P(c, path, "fieldPath"), fp,
                                   "error converting fieldPath: field label does not support "
                                   "subscript: %s",
                                   fp);
        }
        free(sp);
        free(sub);
        return;
    }
    if (!kapi_cstr_in(fp, known))
        kapi_field_invalid_str(c->err, P(c, path, "fieldPath"), fp,
                               "error converting fieldPath: field label not supported: %s", fp);
    else if (!kapi_cstr_in(strcmp(fp, "spec.host") == 0 ? "spec.nodeName" : fp, env_paths))
        kapi_field_not_supported(c->err, P(c, path, "fieldPath"), fp, env_paths);
}

static void resource_field_ref(pctx *c, const json_t *fs, const char *path)
{
    static const char *const exprs[] = {"limits.cpu",
                                        "limits.ephemeral-storage",
                                        "limits.memory",
                                        "requests.cpu",
                                        "requests.ephemeral-storage",
                                        "requests.memory",
                                        NULL};
    const char *r = kapi_registry__str(fs, "resource");
    if (!*r)
        kapi_field_required(c->err, P(c, path, "resource"), "");
    else if (!kapi_cstr_in(r, exprs) && strncmp(r, "requests.hugepages-", 19) != 0 &&
             strncmp(r, "limits.hugepages-", 17) != 0)
        kapi_field_not_supported(c->err, P(c, path, "resource"), r, exprs);
}

/* validateConfigMapKeySelector / validateSecretKeySelector */
static void key_selector(pctx *c, const json_t *s, const char *path)
{
    const char *name = kapi_registry__str(s, "name"), *key = kapi_registry__str(s, "key");
    invalid_each(c, P(c, path, "name"), name, kapi_is_dns1123_subdomain);
    if (!*key)
        kapi_field_required(c->err, P(c, path, "key"), "");
    else
        invalid_each(c, P(c, path, "key"), key, kapi_is_config_map_key);
}

static void env_value_from(pctx *c, const json_t *ev, const char *path)
{
    const json_t *vf = json_object_get(ev, "valueFrom");
    int n = 0;
    if (!vf || json_is_null(vf))
        return;
    if (kapi_registry__has(vf, "fieldRef") && ++n)
        field_ref(c, json_object_get(vf, "fieldRef"), P(c, path, "fieldRef"));
    if (kapi_registry__has(vf, "resourceFieldRef") && ++n)
        resource_field_ref(c, json_object_get(vf, "resourceFieldRef"),
                           P(c, path, "resourceFieldRef"));
    if (kapi_registry__has(vf, "configMapKeyRef") && ++n)
        key_selector(c, json_object_get(vf, "configMapKeyRef"), P(c, path, "configMapKeyRef"));
    if (kapi_registry__has(vf, "secretKeyRef") && ++n)
        key_selector(c, json_object_get(vf, "secretKeyRef"), P(c, path, "secretKeyRef"));
    if (n == 0)
        kapi_field_invalid_str(c->err, path, "",
                               "must specify one of: `fieldRef`, `resourceFieldRef`, "
                               "`configMapKeyRef` or `secretKeyRef`");
    else if (*kapi_registry__str(ev, "value"))
        kapi_field_invalid_str(c->err, path, "", "may not be specified when `value` is not empty");
    else if (n > 1)
        kapi_field_invalid_str(c->err, path, "",
                               "may not have more than one field specified at a time");
}

static void validate_env(pctx *c, const json_t *ctr, const char *ctr_path)
{
    const json_t *env = json_object_get(ctr, "env");
    if (json_array_size(env) == 0)
        return;
    const char *path = P(c, ctr_path, "env");
    for (size_t i = 0; i < json_array_size(env); i++) {
        const json_t *ev = json_array_get(env, i);
        const char *at = I(c, path, i), *name = kapi_registry__str(ev, "name");
        if (!*name)
            kapi_field_required(c->err, P(c, at, "name"), "");
        else
            invalid_each(c, P(c, at, "name"), name, kapi_is_env_var_name);
        env_value_from(c, ev, P(c, at, "valueFrom"));
    }
}

static void validate_env_from(pctx *c, const json_t *ctr, const char *ctr_path)
{
    static const char *const refs[] = {"configMapRef", "secretRef"};
    const json_t *env = json_object_get(ctr, "envFrom");
    if (json_array_size(env) == 0)
        return;
    const char *path = P(c, ctr_path, "envFrom");
    for (size_t i = 0; i < json_array_size(env); i++) {
        const json_t *ev = json_array_get(env, i);
        const char *at = I(c, path, i), *prefix = kapi_registry__str(ev, "prefix");
        int n = 0;
        if (*prefix)
            invalid_each(c, P(c, at, "prefix"), prefix, kapi_is_env_var_name);
        for (size_t r = 0; r < KAPI_ARRAY_LEN(refs); r++) {
            if (!kapi_registry__has(ev, refs[r]))
                continue;
            n++;
            const char *rp = P(c, at, refs[r]);
            const char *name = kapi_registry__str(json_object_get(ev, refs[r]), "name");
            if (!*name)
                kapi_field_required(c->err, P(c, rp, "name"), "");
            else
                invalid_each(c, P(c, rp, "name"), name, kapi_is_dns1123_subdomain);
        }
        if (n == 0)
            kapi_field_invalid_str(c->err, path, "",
                                   "must specify one of: `configMapRef` or `secretRef`");
        else if (n > 1)
            kapi_field_invalid_str(c->err, path, "",
                                   "may not have more than one field specified at a time");
    }
}

/* The member key of each element of list, as an object mapping it to its other member. */
static json_t *list_map(const json_t *list, const char *key, const char *val)
{
    json_t *m = json_object();
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *e = json_array_get(list, i);
        json_object_set_new_nocheck(m, kapi_registry__str(e, key),
                                    json_string(kapi_registry__str(e, val)));
    }
    return m;
}

static bool map_has_value(const json_t *m, const char *v)
{
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)m, k, x) if (strcmp(json_string_value(x), v) == 0) return true;
    return false;
}

/* ValidateVolumeMounts */
static void volume_mounts(pctx *c, const json_t *ctr, const char *ctr_path)
{
    const json_t *mounts = json_object_get(ctr, "volumeMounts");
    if (json_array_size(mounts) == 0)
        return;
    const char *path = P(c, ctr_path, "volumeMounts");
    json_t *devices = list_map(json_object_get(ctr, "volumeDevices"), "name", "devicePath");
    json_t *seen = json_object();
    for (size_t i = 0; i < json_array_size(mounts); i++) {
        const json_t *m = json_array_get(mounts, i);
        const char *at = I(c, path, i), *name = kapi_registry__str(m, "name");
        const char *mp = kapi_registry__str(m, "mountPath");
        if (!*name)
            kapi_field_required(c->err, P(c, at, "name"), "");
        if (!json_object_get(c->volumes, name))
            kapi_field_not_found(c->err, P(c, at, "name"), name, NULL);
        if (!*mp)
            kapi_field_required(c->err, P(c, at, "mountPath"), "");
        if (json_object_get(seen, mp))
            kapi_field_invalid_str(c->err, P(c, at, "mountPath"), mp, "must be unique");
        json_object_set_new_nocheck(seen, mp, json_true());
        if (json_object_get(devices, name))
            kapi_field_invalid_str(c->err, P(c, at, "name"), name,
                                   "must not already exist in volumeDevices");
        if (map_has_value(devices, mp))
            kapi_field_invalid_str(c->err, P(c, at, "mountPath"), mp,
                                   "must not already exist as a path in volumeDevices");
        const char *sub = kapi_registry__str(m, "subPath"),
                   *expr = kapi_registry__str(m, "subPathExpr");
        if (*sub)
            local_descending(c, P(c, path, "subPath"), sub);
        if (*expr && *sub)
            kapi_field_invalid_str(c->err, P(c, at, "subPathExpr"), expr,
                                   "subPathExpr and subPath are mutually exclusive");
        if (*expr)
            local_descending(c, P(c, path, "subPathExpr"), expr);
    }
    json_decref(seen);
    json_decref(devices);
}

/* ValidateVolumeDevices */
static void volume_devices(pctx *c, const json_t *ctr, const char *ctr_path)
{
    const json_t *devs = json_object_get(ctr, "volumeDevices");
    if (json_array_size(devs) == 0)
        return;
    const char *path = P(c, ctr_path, "volumeDevices");
    json_t *mounts = list_map(json_object_get(ctr, "volumeMounts"), "name", "mountPath");
    json_t *paths = json_object(), *names = json_object();
    for (size_t i = 0; i < json_array_size(devs); i++) {
        const json_t *d = json_array_get(devs, i);
        const char *at = I(c, path, i), *name = kapi_registry__str(d, "name");
        const char *dp = kapi_registry__str(d, "devicePath");
        const json_t *vol = json_object_get(c->volumes, name);
        if (!*name)
            kapi_field_required(c->err, P(c, at, "name"), "");
        if (!vol)
            kapi_field_not_found(c->err, P(c, at, "name"), name, NULL);
        else if (!kapi_registry__has(vol, "persistentVolumeClaim") &&
                 !kapi_registry__has(vol, "ephemeral"))
            kapi_field_invalid_str(c->err, P(c, at, "name"), name,
                                   "can only use volume source type of PersistentVolumeClaim or "
                                   "Ephemeral for block mode");
        if (json_object_get(names, name))
            kapi_field_invalid_str(c->err, P(c, at, "name"), name, "must be unique");
        json_object_set_new_nocheck(names, name, json_true());
        if (!*dp)
            kapi_field_required(c->err, P(c, at, "devicePath"), "");
        if (json_object_get(paths, dp))
            kapi_field_invalid_str(c->err, P(c, at, "devicePath"), dp, "must be unique");
        json_object_set_new_nocheck(paths, dp, json_true());
        if (*dp)
            no_backsteps(c, P(c, at, "devicePath"), dp);
        if (json_object_get(mounts, name))
            kapi_field_invalid_str(c->err, P(c, at, "name"), name,
                                   "must not already exist in volumeMounts");
        if (map_has_value(mounts, dp))
            kapi_field_invalid_str(c->err, P(c, at, "devicePath"), dp,
                                   "must not already exist as a path in volumeMounts");
    }
    json_decref(paths);
    json_decref(names);
    json_decref(mounts);
}

/* ---- resources ---- */

static bool is_native(const char *name)
{
    return !strchr(name, '/') || strstr(name, "kubernetes.io/");
}

static bool is_extended(const char *name)
{
    const char *msgs[KAPI_MSGS_MAX];
    if (is_native(name) || strncmp(name, "requests.", 9) == 0)
        return false;
    char *quota = kapi_xprintf("requests.%s", name);
    bool ok = kapi_is_qualified_name(quota, msgs) == 0;
    free(quota);
    return ok;
}

static bool is_hugepages(const char *name)
{
    return strncmp(name, "hugepages-", 10) == 0;
}

/* validateContainerResourceName */
static void resource_name(pctx *c, const char *name, const char *path)
{
    static const char *const standard[] = {"cpu",
                                           "memory",
                                           "ephemeral-storage",
                                           "requests.cpu",
                                           "requests.memory",
                                           "requests.ephemeral-storage",
                                           "limits.cpu",
                                           "limits.memory",
                                           "limits.ephemeral-storage",
                                           "pods",
                                           "resourcequotas",
                                           "services",
                                           "replicationcontrollers",
                                           "secrets",
                                           "persistentvolumeclaims",
                                           "configmaps",
                                           "services.nodeports",
                                           "services.loadbalancers",
                                           "requests.storage",
                                           NULL};
    static const char *const container[] = {"cpu", "memory", "ephemeral-storage", NULL};
    const char *msgs[KAPI_MSGS_MAX];
    size_t n = kapi_is_qualified_name(name, msgs);
    bool slash = strchr(name, '/') != NULL;
    if (n) {
        kapi_field_invalid_each(c->err, path, name, msgs, n);
    } else if (!slash && !kapi_cstr_in(name, standard) &&
               strncmp(name, "requests.hugepages-", 19)) {
        kapi_field_invalid_str(c->err, path, name,
                               "must be a standard resource type or fully "
                               "qualified");
    }
    if (!slash && !kapi_cstr_in(name, container) && !is_hugepages(name))
        kapi_field_invalid_str(c->err, path, name, "must be a standard resource for containers");
    else if (slash && !is_native(name) && !is_extended(name))
        kapi_field_invalid_str(c->err, path, name,
                               "doesn't follow extended resource name standard");
}

/* Reads a quantity member (a string, or a bare number); false when it is not one (the
 * decoder reports that). */
static bool read_quantity(const json_t *v, kapi_quantity *q)
{
    char num[32];
    const char *s = json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        s = num;
    }
    return s && kapi_quantity_parse(q, s);
}

/* helper.IsIntegerResourceName: counted resources and extended ones. */
static bool is_integer_resource(const char *name)
{
    static const char *const counted[] = {"pods",
                                          "resourcequotas",
                                          "services",
                                          "replicationcontrollers",
                                          "secrets",
                                          "configmaps",
                                          "persistentvolumeclaims",
                                          "services.nodeports",
                                          "services.loadbalancers"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(counted); i++)
        if (strcmp(name, counted[i]) == 0)
            return true;
    return is_extended(name);
}

/* ValidateResourceQuantityValue: not negative (shown with its canonical text), a whole
 * number for integer resources (shown as Go's %#v of the Quantity, whose cached string s
 * ParseQuantity keeps when text, as written, is already canonical). */
static void resource_value(kapi_error *err, const char *name, const char *text,
                           const kapi_quantity *q, const char *path)
{
    kapi_quantity zero = {0, 0, KAPI_Q_DECIMAL_SI};
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_quantity_format(&b, q);
    if (kapi_quantity_cmp(q, &zero) < 0)
        kapi_field_invalid_str(err, path, b.ptr, "must be greater than or equal to 0");
    if (is_integer_resource(name) && !kapi_quantity_is_integer(q)) {
        static const char *const formats[] = {"DecimalSI", "BinarySI", "DecimalExponent"};
        bool cached = text && strcmp(text, b.ptr) == 0;
        char *v =
            kapi_xprintf("resource.Quantity{i:resource.int64Amount{value:%lld, scale:%d}, "
                         "d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"%s\", "
                         "Format:\"%s\"}",
                         (long long)q->mant, q->exp10, cached ? text : "", formats[q->format]);
        kapi_field_invalid_raw(err, path, v, "must be an integer");
        free(v);
    }
    kapi_buf_dispose(&b);
}

void kapi_registry__resource_quantity(kapi_error *err, const char *name, const json_t *v,
                                      const char *path)
{
    kapi_quantity q;
    if (read_quantity(v, &q))
        resource_value(err, name, json_string_value(v), &q, path);
}

static const char **sorted_keys(const json_t *o, size_t *n)
{
    size_t i = 0;
    const char *k;
    json_t *v;
    *n = json_object_size(o);
    const char **keys = kapi_xcalloc(*n ? *n : 1, sizeof(*keys));
    json_object_foreach((json_t *)o, k, v) keys[i++] = k;
    for (size_t x = 1; x < *n; x++)
        for (size_t y = x; y > 0 && strcmp(keys[y - 1], keys[y]) > 0; y--) {
            const char *t = keys[y];
            keys[y] = keys[y - 1];
            keys[y - 1] = t;
        }
    return keys;
}

static bool cpu_or_memory(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0;
}

/* request <= limit, and equal for resources that cannot be overcommitted. */
static void request_vs_limit(pctx *c, const char *name, const kapi_quantity *q, const json_t *lim,
                             const char *lp, const char *rp)
{
    kapi_quantity l;
    const json_t *lv = json_object_get(lim, name);
    bool overcommit = is_native(name) && !is_hugepages(name);
    if (!lv) {
        if (!overcommit)
            kapi_field_required(c->err, lp, "Limit must be set for non overcommitable resources");
        return;
    }
    if (!read_quantity(lv, &l))
        return;
    int cmp = kapi_quantity_cmp(q, &l);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_quantity_format(&b, q);
    if (cmp != 0 && !overcommit)
        kapi_field_invalid_str(c->err, rp, b.ptr, "must be equal to %s limit", name);
    else if (cmp > 0)
        kapi_field_invalid_str(c->err, rp, b.ptr, "must be less than or equal to %s limit", name);
    kapi_buf_dispose(&b);
}

/* ValidateResourceRequirements (resource names visited in sorted order; Go's is random). */
static void resources(pctx *c, const json_t *ctr, const char *ctr_path)
{
    const json_t *res = json_object_get(ctr, "resources");
    const json_t *lim = json_object_get(res, "limits"), *req = json_object_get(res, "requests");
    if (json_object_size(lim) == 0 && json_object_size(req) == 0)
        return;
    const char *path = P(c, ctr_path, "resources");
    const char *lp = P(c, path, "limits"), *rp = P(c, path, "requests");
    bool cm = false, huge = false;
    size_t n;
    kapi_quantity q;
    const char **keys = sorted_keys(lim, &n);
    for (size_t i = 0; i < n; i++) {
        const char *at = kapi_path_key(c->a, lp, keys[i]);
        resource_name(c, keys[i], at);
        if (read_quantity(json_object_get(lim, keys[i]), &q))
            resource_value(c->err, keys[i], json_string_value(json_object_get(lim, keys[i])), &q,
                           at);
        huge = huge || is_hugepages(keys[i]);
        cm = cm || cpu_or_memory(keys[i]);
    }
    free(keys);
    keys = sorted_keys(req, &n);
    for (size_t i = 0; i < n; i++) {
        const char *at = kapi_path_key(c->a, rp, keys[i]);
        resource_name(c, keys[i], at);
        if (read_quantity(json_object_get(req, keys[i]), &q)) {
            resource_value(c->err, keys[i], json_string_value(json_object_get(req, keys[i])), &q,
                           at);
            request_vs_limit(c, keys[i], &q, lim, lp, rp);
        }
        huge = huge || is_hugepages(keys[i]);
        cm = cm || cpu_or_memory(keys[i]);
    }
    free(keys);
    if (!cm && huge)
        kapi_field_forbidden(c->err, path, "HugePages require cpu or memory");
}

/* ---- probes and lifecycle handlers ---- */

/* ValidatePortNumOrName of an int-or-string port (absent is the integer 0). */
static void port_num_or_name(pctx *c, const json_t *port, const char *path)
{
    const char *msgs[KAPI_MSGS_MAX];
    if (json_is_string(port)) {
        invalid_each(c, path, json_string_value(port), kapi_is_port_name);
        return;
    }
    long long p = (long long)json_integer_value(port);
    if (kapi_is_port_num(p, msgs))
        kapi_field_invalid_int(c->err, path, p, "%s", msgs[0]);
}

static void handler_action(pctx *c, const char *kind, const json_t *h, const char *path)
{
    static const char *const schemes[] = {"HTTP", "HTTPS", NULL};
    if (strcmp(kind, "exec") == 0) {
        if (json_array_size(json_object_get(h, "command")) == 0)
            kapi_field_required(c->err, P(c, path, "command"), "");
    } else if (strcmp(kind, "httpGet") == 0) {
        const char *scheme = def_str(h, "scheme", "HTTP");
        port_num_or_name(c, json_object_get(h, "port"), P(c, path, "port"));
        if (!kapi_cstr_in(scheme, schemes))
            kapi_field_not_supported(c->err, P(c, path, "scheme"), scheme, schemes);
        const json_t *hdrs = json_object_get(h, "httpHeaders");
        for (size_t i = 0; i < json_array_size(hdrs); i++) {
            const char *name = kapi_registry__str(json_array_get(hdrs, i), "name");
            bool ok = *name != '\0';
            for (const char *p = name; ok && *p; p++)
                ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-';
            if (!ok)
                kapi_field_invalid_str(c->err, P(c, path, "httpHeaders"), name,
                                       "a valid HTTP header must consist of alphanumeric "
                                       "characters or '-' (e.g. 'X-Header-Name', regex used for "
                                       "validation is '[-A-Za-z0-9]+')");
        }
    } else if (strcmp(kind, "tcpSocket") == 0) {
        port_num_or_name(c, json_object_get(h, "port"), P(c, path, "port"));
    } else {
        json_t *port = json_integer(kapi_registry__int(h, "port"));
        port_num_or_name(c, port, P(c, path, "port"));
        json_decref(port);
    }
}

/* validateHandler: exactly one handler type. grpc is a probe-only handler. */
static void validate_handler(pctx *c, const json_t *h, const char *path, bool probe)
{
    static const char *const kinds[] = {"exec", "httpGet", "tcpSocket", "grpc"};
    int n = 0;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(kinds) - !probe; i++) {
        if (!kapi_registry__has(h, kinds[i]))
            continue;
        const char *at = P(c, path, kinds[i]);
        if (n++ > 0)
            kapi_field_forbidden(c->err, at, "may not specify more than 1 handler type");
        else
            handler_action(c, kinds[i], json_object_get(h, kinds[i]), at);
    }
    if (n == 0)
        kapi_field_required(c->err, path, "must specify a handler type");
}

/* The probe at parent's member key, whose paths are built only when it is set. */
static void validate_probe(pctx *c, const json_t *probe, const char *parent, const char *key)
{
    static const struct {
        const char *key;
        long long dflt;
    } ints[] = {{"initialDelaySeconds", 0},
                {"timeoutSeconds", 1},
                {"periodSeconds", 10},
                {"successThreshold", 1},
                {"failureThreshold", 3}};
    if (!probe || json_is_null(probe))
        return;
    const char *path = P(c, parent, key);
    validate_handler(c, probe, path, true);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ints); i++)
        kapi_registry__nonnegative(c->err, P(c, path, ints[i].key),
                                   def_int(probe, ints[i].key, ints[i].dflt));
    if (kapi_registry__has(probe, "terminationGracePeriodSeconds") &&
        kapi_registry__int(probe, "terminationGracePeriodSeconds") <= 0)
        kapi_field_invalid_int(c->err, P(c, path, "terminationGracePeriodSeconds"),
                               kapi_registry__int(probe, "terminationGracePeriodSeconds"),
                               "must be greater than 0");
}

/* ---- containers ---- */

/* The pull policy the defaulter gives an image: Always for ":latest" or no tag. */
static const char *default_pull_policy(const char *image)
{
    const char *slash = strrchr(image, '/'), *name = slash ? slash + 1 : image;
    const char *at = strchr(name, '@'), *colon = strchr(name, ':');
    if (at)
        return "IfNotPresent";
    if (!colon || strcmp(colon, ":latest") == 0)
        return "Always";
    return "IfNotPresent";
}

/* validateContainerCommon */
static void container_common(pctx *c, const json_t *ctr, const char *path)
{
    static const char *const tmp[] = {"File", "FallbackToLogsOnError", NULL};
    static const char *const pull[] = {"Always", "IfNotPresent", "Never", NULL};
    const char *name = kapi_registry__str(ctr, "name"), *image = kapi_registry__str(ctr, "image");
    if (!*name)
        kapi_field_required(c->err, P(c, path, "name"), "");
    else
        invalid_each(c, P(c, path, "name"), name, kapi_is_dns1123_label);
    if (!*image)
        kapi_field_required(c->err, P(c, path, "image"), "");
    const char *policy = def_str(ctr, "terminationMessagePolicy", "File");
    if (!kapi_cstr_in(policy, tmp))
        kapi_field_not_supported(c->err, P(c, path, "terminationMessagePolicy"), policy, tmp);
    container_ports(c, ctr, path);
    validate_env(c, ctr, path);
    validate_env_from(c, ctr, path);
    volume_mounts(c, ctr, path);
    volume_devices(c, ctr, path);
    const char *pp = def_str(ctr, "imagePullPolicy", default_pull_policy(image));
    if (!kapi_cstr_in(pp, pull))
        kapi_field_not_supported(c->err, P(c, path, "imagePullPolicy"), pp, pull);
    resources(c, ctr, path);
}

/* AccumulateUniqueHostPorts over containers, into seen ("protocol/hostIP/port"). */
static void host_ports(pctx *c, const json_t *ctrs, const char *path, json_t *seen)
{
    for (size_t i = 0; i < json_array_size(ctrs); i++) {
        const json_t *ports = json_object_get(json_array_get(ctrs, i), "ports");
        for (size_t j = 0; j < json_array_size(ports); j++) {
            const json_t *p = json_array_get(ports, j);
            long long hp = kapi_registry__int(p, "hostPort");
            if (hp == 0)
                continue;
            char *key = kapi_xprintf("%s/%s/%lld", def_str(p, "protocol", "TCP"),
                                     kapi_registry__str(p, "hostIP"), hp);
            if (json_object_get(seen, key)) {
                const char *pp = P(c, I(c, path, i), "ports");
                kapi_field_duplicate(c->err, P(c, I(c, pp, j), "hostPort"), key);
            } else {
                json_object_set_new_nocheck(seen, key, json_true());
            }
            free(key);
        }
    }
}

/* validateContainers */
static void containers(pctx *c, const json_t *ctrs, const char *path)
{
    json_t *names = json_object(), *seen = json_object();
    if (json_array_size(ctrs) == 0) {
        kapi_field_required(c->err, path, "");
        goto done;
    }
    for (size_t i = 0; i < json_array_size(ctrs); i++) {
        const json_t *ctr = json_array_get(ctrs, i);
        const char *at = I(c, path, i), *name = kapi_registry__str(ctr, "name");
        container_common(c, ctr, at);
        if (json_object_get(names, name))
            kapi_field_duplicate(c->err, P(c, at, "name"), name);
        json_object_set_new_nocheck(names, name, json_true());
        const json_t *lc = json_object_get(ctr, "lifecycle");
        if (kapi_registry__has(lc, "postStart"))
            validate_handler(c, json_object_get(lc, "postStart"),
                             P(c, P(c, at, "lifecycle"), "postStart"), false);
        if (kapi_registry__has(lc, "preStop"))
            validate_handler(c, json_object_get(lc, "preStop"),
                             P(c, P(c, at, "lifecycle"), "preStop"), false);
        const json_t *live = json_object_get(ctr, "livenessProbe");
        const json_t *ready = json_object_get(ctr, "readinessProbe");
        const json_t *start = json_object_get(ctr, "startupProbe");
        validate_probe(c, live, at, "livenessProbe");
        if (kapi_registry__has(ctr, "livenessProbe") && def_int(live, "successThreshold", 1) != 1)
            kapi_field_invalid_int(c->err, P(c, P(c, at, "livenessProbe"), "successThreshold"),
                                   kapi_registry__int(live, "successThreshold"), "must be 1");
        validate_probe(c, ready, at, "readinessProbe");
        if (kapi_registry__has(ready, "terminationGracePeriodSeconds")) {
            kapi_buf b;
            kapi_buf_init(&b);
            kapi_buf_printf(&b, "%lld", kapi_registry__int(ready, "terminationGracePeriodSeconds"));
            kapi_field_invalid_raw(
                c->err, P(c, P(c, at, "readinessProbe"), "terminationGracePeriodSeconds"), b.ptr,
                "must not be set for readinessProbes");
            kapi_buf_dispose(&b);
        }
        validate_probe(c, start, at, "startupProbe");
        if (kapi_registry__has(ctr, "startupProbe") && def_int(start, "successThreshold", 1) != 1)
            kapi_field_invalid_int(c->err, P(c, P(c, at, "startupProbe"), "successThreshold"),
                                   kapi_registry__int(start, "successThreshold"), "must be 1");
    }
    host_ports(c, ctrs, path, seen);
done:
    json_decref(names);
    json_decref(seen);
}

/* validateInitContainers: names unique across regular and init containers, probes and
 * lifecycle forbidden, host ports checked one container at a time. */
static void init_containers(pctx *c, const json_t *spec, const json_t *regular,
                            const char *spec_path)
{
    static const char *const forbidden[] = {"lifecycle", "livenessProbe", "readinessProbe",
                                            "startupProbe"};
    const json_t *ctrs = json_object_get(spec, "initContainers");
    if (json_array_size(ctrs) == 0)
        return;
    const char *path = P(c, spec_path, "initContainers");
    json_t *names = json_object();
    for (size_t i = 0; i < json_array_size(regular); i++)
        json_object_set_new_nocheck(names, kapi_registry__str(json_array_get(regular, i), "name"),
                                    json_true());
    for (size_t i = 0; i < json_array_size(ctrs); i++) {
        const json_t *ctr = json_array_get(ctrs, i);
        const char *at = I(c, path, i), *name = kapi_registry__str(ctr, "name");
        container_common(c, ctr, at);
        if (json_object_get(names, name))
            kapi_field_duplicate(c->err, P(c, at, "name"), name);
        else if (*name)
            json_object_set_new_nocheck(names, name, json_true());
        json_t *one = json_array(), *seen = json_object();
        json_array_append(one, (json_t *)ctr);
        host_ports(c, one, path, seen);
        json_decref(one);
        json_decref(seen);
        for (size_t f = 0; f < KAPI_ARRAY_LEN(forbidden); f++)
            if (kapi_registry__has(ctr, forbidden[f]))
                kapi_field_forbidden(c->err, P(c, at, forbidden[f]),
                                     "may not be set for init containers");
    }
    json_decref(names);
}

/* ---- the pod spec ---- */

static const kapi_gofield toleration_fields[] = {
    {"Key", "key", KAPI_GO_STRING, NULL, NULL},
    {"Operator", "operator", KAPI_GO_STRING, NULL, NULL},
    {"Value", "value", KAPI_GO_STRING, NULL, NULL},
    {"Effect", "effect", KAPI_GO_STRING, NULL, NULL},
    {"TolerationSeconds", "tolerationSeconds", KAPI_GO_PTR, NULL, "int64"},
};
static const kapi_gotype go_toleration = {"core.Toleration", toleration_fields,
                                          KAPI_ARRAY_LEN(toleration_fields)};

/* ValidateTolerations */
static void tolerations(pctx *c, const json_t *spec, const char *spec_path)
{
    static const char *const ops[] = {"Equal", "Exists", NULL};
    static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};
    const char *msgs[KAPI_MSGS_MAX];
    const json_t *tols = json_object_get(spec, "tolerations");
    if (json_array_size(tols) == 0)
        return;
    const char *path = P(c, spec_path, "tolerations");
    for (size_t i = 0; i < json_array_size(tols); i++) {
        const json_t *t = json_array_get(tols, i);
        const char *at = I(c, path, i), *key = kapi_registry__str(t, "key");
        const char *op = kapi_registry__str(t, "operator"), *value = kapi_registry__str(t, "value");
        const char *effect = kapi_registry__str(t, "effect");
        if (*key)
            invalid_each(c, P(c, at, "key"), key, kapi_is_qualified_name);
        if (!*key && strcmp(op, "Exists") != 0)
            kapi_field_invalid_str(c->err, P(c, at, "operator"), op,
                                   "operator must be Exists when `key` is empty, which means "
                                   "\"match all values and all keys\"");
        if (kapi_registry__has(t, "tolerationSeconds") && strcmp(effect, "NoExecute") != 0)
            kapi_field_invalid_str(c->err, P(c, at, "effect"), effect,
                                   "effect must be 'NoExecute' when `tolerationSeconds` is set");
        if (!*op || strcmp(op, "Equal") == 0) {
            size_t n = kapi_is_label_value(value, msgs);
            if (n == 1)
                kapi_field_invalid_str(c->err, P(c, at, "operator"), value, "%s", msgs[0]);
            else if (n == 2)
                kapi_field_invalid_str(c->err, P(c, at, "operator"), value, "%s;%s", msgs[0],
                                       msgs[1]);
        } else if (strcmp(op, "Exists") == 0) {
            if (*value) {
                kapi_buf b;
                kapi_buf_init(&b);
                kapi_gofmt(&b, &go_toleration, t);
                kapi_field_invalid_raw(c->err, P(c, at, "operator"), b.ptr,
                                       "value must be empty when `operator` is 'Exists'");
                kapi_buf_dispose(&b);
            }
        } else {
            kapi_field_not_supported(c->err, P(c, at, "operator"), op, ops);
        }
        if (*effect && !kapi_cstr_in(effect, effects))
            kapi_field_not_supported(c->err, P(c, at, "effect"), effect, effects);
    }
}

static void subdomain_name(pctx *c, const json_t *spec, const char *key, const char *path)
{
    const char *v = kapi_registry__str(spec, key);
    if (*v)
        invalid_each(c, P(c, path, key), v, kapi_is_dns1123_subdomain);
}

/* ValidatePodSpec */
static void pod_spec(pctx *c, const json_t *spec, const char *path)
{
    static const char *const restart[] = {"Always", "OnFailure", "Never", NULL};
    static const char *const dns[] = {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None",
                                      NULL};
    static const char *const preempt[] = {"PreemptLowerPriority", "Never", NULL};
    json_t *vols = json_object();
    c->volumes = vols;
    validate_volumes(c, spec, path, vols);
    const json_t *ctrs = json_object_get(spec, "containers");
    containers(c, ctrs, P(c, path, "containers"));
    init_containers(c, spec, ctrs, path);
    enum_field(c, path, "restartPolicy", def_str(spec, "restartPolicy", "Always"), restart);
    enum_field(c, path, "dnsPolicy", def_str(spec, "dnsPolicy", "ClusterFirst"), dns);
    kapi_meta_validate_labels(c->err, json_object_get(spec, "nodeSelector"),
                              P(c, path, "nodeSelector"));
    subdomain_name(c, spec, "serviceAccountName", path);
    subdomain_name(c, spec, "nodeName", path);
    if (kapi_registry__has(spec, "activeDeadlineSeconds")) {
        long long v = kapi_registry__int(spec, "activeDeadlineSeconds");
        if (v < 1 || v > 2147483647)
            kapi_field_invalid_int(c->err, P(c, path, "activeDeadlineSeconds"), v,
                                   "must be between 1 and 2147483647, inclusive");
    }
    if (*kapi_registry__str(spec, "hostname"))
        invalid_each(c, P(c, path, "hostname"), kapi_registry__str(spec, "hostname"),
                     kapi_is_dns1123_label);
    if (*kapi_registry__str(spec, "subdomain"))
        invalid_each(c, P(c, path, "subdomain"), kapi_registry__str(spec, "subdomain"),
                     kapi_is_dns1123_label);
    tolerations(c, spec, path);
    subdomain_name(c, spec, "priorityClassName", path);
    if (kapi_registry__has(spec, "runtimeClassName"))
        invalid_each(c, P(c, path, "runtimeClassName"),
                     kapi_registry__str(spec, "runtimeClassName"), kapi_is_dns1123_subdomain);
    if (kapi_registry__has(spec, "preemptionPolicy"))
        enum_field(c, path, "preemptionPolicy", kapi_registry__str(spec, "preemptionPolicy"),
                   preempt);
    c->volumes = NULL;
    json_decref(vols);
}

void kapi_registry__validate_pod_template(kapi_error *err, kapi_arena *a, const json_t *tmpl,
                                          const char *path)
{
    pctx c = {err, a, NULL};
    const json_t *meta = json_object_get(tmpl, "metadata");
    const char *spec_path = P(&c, path, "spec");
    kapi_meta_validate_labels(err, json_object_get(meta, "labels"), P(&c, path, "labels"));
    kapi_meta_validate_annotations(err, json_object_get(meta, "annotations"),
                                   P(&c, path, "annotations"));
    pod_spec(&c, json_object_get(tmpl, "spec"), spec_path);
    if (json_array_size(kapi_registry__has(tmpl, "spec")
                            ? json_object_get(json_object_get(tmpl, "spec"), "ephemeralContainers")
                            : NULL) > 0)
        kapi_field_forbidden(err, P(&c, spec_path, "ephemeralContainers"),
                             "ephemeral containers not allowed in pod template");
}
