/*
 * registry/validate_networking: ClusterCIDR (networking.k8s.io/v1alpha1) as Kubernetes
 * 1.26 validates it: DNS-label names, the node selector, at least one of spec.ipv4 and
 * spec.ipv6, each a CIDR of its family (Go's net.ParseCIDR, leading zeros allowed in
 * IPv4), and perNodeHostBits between 4 and the block's host bits. Causes name the
 * families "spec.IPv4" / "spec.IPv6" (Go's IPFamily strings), as 1.26 does; an IPv6 block
 * in ipv4 therefore also gets "must be less than or equal to -32". On update the whole
 * spec is immutable (spec.nodeSelector, spec.perNodeHostBits, spec.ipv4, spec.ipv6).
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/cidr.h"
#include "registry/registry_int.h"

/* validateCIDRConfig */
static void cidr_config(kapi_error *err, kapi_arena *a, const char *cidr, long long phb,
                        int max_bits, const char *family)
{
    kapi_cidr c;
    const char *fpath = kapi_path_child(a, "spec", family);
    if (!kapi_cidr_parse(cidr, &c)) {
        kapi_field_invalid_str(err, fpath, cidr, "must be a valid CIDR: %s", cidr);
        return;
    }
    if (max_bits == 32 && !c.v4)
        kapi_field_invalid_str(err, fpath, cidr, "must be a valid IPv4 CIDR");
    if (max_bits == 128 && c.v4)
        kapi_field_invalid_str(err, fpath, cidr, "must be a valid IPv6 CIDR");
    long long max = max_bits - c.prefix;
    if (phb < 4)
        kapi_field_invalid_int(err, "spec.perNodeHostBits", phb,
                               "must be greater than or equal to 4");
    if (phb > max)
        kapi_field_invalid_int(err, "spec.perNodeHostBits", phb,
                               "must be less than or equal to %lld", max);
}

static void cidr_spec(kapi_error *err, kapi_arena *a, const json_t *spec)
{
    const char *v4 = kapi_registry__str(spec, "ipv4"), *v6 = kapi_registry__str(spec, "ipv6");
    long long phb = kapi_registry__int(spec, "perNodeHostBits");
    if (kapi_registry__has(spec, "nodeSelector"))
        kapi_registry__validate_node_selector(err, a, json_object_get(spec, "nodeSelector"),
                                              "spec.nodeSelector");
    if (!*v4 && !*v6) {
        kapi_field_required(err, "spec", "one or both of `ipv4` and `ipv6` must be specified");
        return;
    }
    if (*v4)
        cidr_config(err, a, v4, phb, 32, "IPv4");
    if (*v6)
        cidr_config(err, a, v6, phb, 128, "IPv6");
}

/* validateClusterCIDRUpdateSpec: every field immutable, each rendered as Go renders it. */
static void cidr_spec_update(kapi_error *err, const json_t *spec, const json_t *old)
{
    const json_t *ns = json_object_get(spec, "nodeSelector");
    const json_t *old_ns = json_object_get(old, "nodeSelector");
    bool nil = !ns || json_is_null(ns), old_nil = !old_ns || json_is_null(old_ns);
    if (nil != old_nil || (!nil && !json_equal((json_t *)ns, (json_t *)old_ns))) {
        kapi_buf b;
        kapi_buf_init(&b);
        if (nil)
            kapi_buf_puts(&b, "\"null\"");
        else
            kapi_gofmt(&b, &kapi_registry__go_node_selector, ns);
        kapi_field_invalid_raw(err, "spec.nodeSelector", b.ptr, "field is immutable");
        kapi_buf_dispose(&b);
    }
    if (kapi_registry__int(spec, "perNodeHostBits") != kapi_registry__int(old, "perNodeHostBits"))
        kapi_field_invalid_int(err, "spec.perNodeHostBits",
                               kapi_registry__int(spec, "perNodeHostBits"), "field is immutable");
    static const char *const cidrs[] = {"ipv4", "ipv6"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cidrs); i++) {
        const char *now = kapi_registry__str(spec, cidrs[i]);
        if (strcmp(now, kapi_registry__str(old, cidrs[i])) != 0) {
            char path[16];
            snprintf(path, sizeof(path), "spec.%s", cidrs[i]);
            kapi_field_invalid_str(err, path, now, "field is immutable");
        }
    }
}

void kapi_registry__validate_clustercidr(const kapi_type *t, const json_t *obj, const json_t *old,
                                         kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_registry__validate_meta_as(t, obj, old, true, err);
    if (old)
        cidr_spec_update(err, json_object_get(obj, "spec"), json_object_get(old, "spec"));
    else
        cidr_spec(err, &a, json_object_get(obj, "spec"));
    kapi_arena_dispose(&a);
}
