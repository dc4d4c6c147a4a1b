/* Unit tests for what discovery lists (registry/discovery.c): the named groups, built-in
 * and from stored CRDs, their versions in preference order, and the APIResource facts of
 * the CRDs serving a group version. */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "test.h"

/* A cluster-scoped CRD with two versions, v1beta1 not served, short names and
 * categories, no singular name, and a status subresource on v1; a namespaced CRD of the
 * same group serving v2alpha1 and v1 with a scale subresource; a CRD that serves nothing
 * in a group of its own, stored before them. */
static const char crds_json[] =
    "[{\"metadata\":{\"name\":\"specters.quiet.example.com\"},"
    "\"spec\":{\"group\":\"quiet.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"specters\",\"kind\":\"Specter\"},"
    "\"versions\":[{\"name\":\"v1\",\"served\":false,\"storage\":true}]}},"
    "{\"metadata\":{\"name\":\"dials.unit.example.com\"},"
    "\"spec\":{\"group\":\"unit.example.com\",\"scope\":\"Cluster\","
    "\"names\":{\"plural\":\"dials\",\"kind\":\"BigDial\",\"shortNames\":[\"dl\",\"dd\"],"
    "\"categories\":[\"all\",\"knobs\"]},"
    "\"versions\":[{\"name\":\"v1beta1\",\"served\":false,\"storage\":false},"
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}}}]}},"
    "{\"metadata\":{\"name\":\"gizmos.unit.example.com\"},"
    "\"spec\":{\"group\":\"unit.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"gizmos\",\"singular\":\"gizmo\",\"kind\":\"Gizmo\"},"
    "\"versions\":[{\"name\":\"v2alpha1\",\"served\":true,\"storage\":false},"
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"scale\":{"
    "\"specReplicasPath\":\".spec.replicas\",\"statusReplicasPath\":\".status.replicas\"}}}]}}]";

/* crds as the CRD controller leaves them: their names accepted (the singular name the
 * kind's, in lower case, where the spec has none) and Established. */
static json_t *established(json_t *crds)
{
    size_t i;
    json_t *crd;
    json_array_foreach(crds, i, crd)
    {
        json_t *names = json_deep_copy(json_object_get(json_object_get(crd, "spec"), "names"));
        if (!json_object_get(names, "singular")) {
            char *lower = kapi_xstrdup(json_string_value(json_object_get(names, "kind")));
            for (char *c = lower; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            json_object_set_new(names, "singular", json_string(lower));
            free(lower);
        }
        json_object_set_new(crd, "status", json_pack("{s:o}", "acceptedNames", names));
        kapi_crd_set_condition(crd, "Established", "True", "InitialNamesAccepted", "ok",
                               "2024-01-02T03:04:05Z");
    }
    return crds;
}

static const kapi_registry *registry(void)
{
    static kapi_registry *r;
    if (!r)
        kapi_error_free(kapi_registry_new(&r));
    return r;
}

static size_t count(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

TEST(served_groups_and_versions)
{
    json_t *crds = json_loads(crds_json, 0, NULL);
    kapi_served s;
    /* Nothing of a CRD is served before it is Established. */
    kapi_registry_served(registry(), crds, &s);
    CHECK(kapi_served_find(&s, "unit.example.com") == NULL);
    kapi_served_dispose(&s);
    kapi_registry_served(registry(), established(crds), &s);
    json_decref(crds);

    /* The built-in groups first, in registry order; then the CRDs' group; none for the
     * group whose only version is not served. */
    CHECK(s.ngroups > 1);
    CHECK_STR_EQ(s.groups[s.ngroups - 1].name, "unit.example.com");
    CHECK(kapi_served_find(&s, "quiet.example.com") == NULL);
    CHECK(kapi_served_find(&s, "") == NULL);
    const kapi_served_group *batch = kapi_served_find(&s, "batch");
    CHECK(batch != NULL && batch->nversions == 1);
    CHECK_STR_EQ(batch->versions[0], "v1");

    /* Every served version of the group once, GA before alpha; v1beta1 is not served. */
    const kapi_served_group *g = kapi_served_find(&s, "unit.example.com");
    CHECK(g != NULL);
    CHECK_INT_EQ(g->nversions, 2);
    CHECK_STR_EQ(g->versions[0], "v1");
    CHECK_STR_EQ(g->versions[1], "v2alpha1");
    kapi_served_dispose(&s);
}

TEST(crd_resources_of_a_group_version)
{
    json_t *crds = established(json_loads(crds_json, 0, NULL));
    kapi_crd_resources l;
    kapi_registry_crd_resources(crds, "unit.example.com", "v1", &l);

    /* The CRDs' order: dials, then gizmos. */
    CHECK_INT_EQ(l.n, 2);
    const kapi_crd_resource *dial = &l.items[0];
    CHECK_STR_EQ(dial->group, "unit.example.com");
    CHECK_STR_EQ(dial->version, "v1");
    CHECK_STR_EQ(dial->plural, "dials");
    CHECK_STR_EQ(dial->kind, "BigDial");
    CHECK_STR_EQ(dial->singular, "bigdial"); /* the accepted one */
    CHECK(!dial->namespaced);
    CHECK_INT_EQ(count(dial->short_names), 2);
    CHECK_STR_EQ(dial->short_names[1], "dd");
    CHECK_INT_EQ(count(dial->categories), 2);
    CHECK_STR_EQ(dial->categories[0], "all");
    CHECK_STR_EQ(dial->categories[1], "knobs");
    CHECK_INT_EQ(count(dial->verbs), 8);
    CHECK_STR_EQ(dial->verbs[0], "delete");
    CHECK_STR_EQ(dial->verbs[7], "watch");
    char *hash = kapi_registry_storage_hash("unit.example.com", "v1", "BigDial");
    CHECK_STR_EQ(dial->storage_version_hash, hash);
    free(hash);
    CHECK_INT_EQ(dial->nsubresources, 1);
    CHECK_STR_EQ(dial->subresources[0].name, "status");
    CHECK(dial->subresources[0].kind == NULL);
    CHECK_INT_EQ(count(dial->subresources[0].verbs), 3);

    /* The scale subresource is autoscaling/v1 Scale. */
    const kapi_crd_resource *ga = &l.items[1];
    CHECK_STR_EQ(ga->plural, "gizmos");
    CHECK_STR_EQ(ga->singular, "gizmo");
    CHECK(ga->namespaced);
    CHECK_INT_EQ(count(ga->short_names), 0);
    CHECK_INT_EQ(ga->nsubresources, 1);
    CHECK_STR_EQ(ga->subresources[0].name, "scale");
    CHECK_STR_EQ(ga->subresources[0].group, "autoscaling");
    CHECK_STR_EQ(ga->subresources[0].version, "v1");
    CHECK_STR_EQ(ga->subresources[0].kind, "Scale");
    kapi_crd_resources_dispose(&l);

    /* A version not in storage hashes the storage version, and has its own subresources;
     * a version not served lists nothing. */
    kapi_registry_crd_resources(crds, "unit.example.com", "v2alpha1", &l);
    CHECK_INT_EQ(l.n, 1);
    CHECK_STR_EQ(l.items[0].plural, "gizmos");
    CHECK_INT_EQ(l.items[0].nsubresources, 0);
    hash = kapi_registry_storage_hash("unit.example.com", "v1", "Gizmo");
    CHECK_STR_EQ(l.items[0].storage_version_hash, hash);
    free(hash);
    kapi_crd_resources_dispose(&l);
    kapi_registry_crd_resources(crds, "unit.example.com", "v1beta1", &l);
    CHECK_INT_EQ(l.n, 0);
    kapi_crd_resources_dispose(&l);
    kapi_registry_crd_resources(crds, "quiet.example.com", "v1", &l);
    CHECK_INT_EQ(l.n, 0);
    kapi_crd_resources_dispose(&l);
    json_decref(crds);
}

/* The type a request names is built only when the CRD serves that plural at that version
 * and is Established. */
TEST(custom_serving_needs_established_and_served)
{
    json_t *crds = json_loads(crds_json, 0, NULL);
    json_t *dials = json_deep_copy(json_array_get(crds, 1));
    json_decref(crds);
    const kapi_type *t = NULL;
    kapi_custom_state state;
    kapi_error *err = kapi_registry_custom_serving(registry(), dials, 1, "dials", "v1", &t, &state);
    CHECK(err == NULL && t == NULL); /* not Established yet */
    kapi_crd_set_condition(dials, "Established", "True", "InitialNamesAccepted", "ok",
                           "2024-01-02T03:04:05Z");
    err = kapi_registry_custom_serving(registry(), dials, 2, "dials", "v1beta1", &t, &state);
    CHECK(err == NULL && t == NULL); /* not served */
    err = kapi_registry_custom_serving(registry(), dials, 2, "gizmos", "v1", &t, &state);
    CHECK(err == NULL && t == NULL); /* another plural */
    err = kapi_registry_custom_serving(registry(), dials, 2, "dials", "v1", &t, &state);
    CHECK(err == NULL && t != NULL);
    CHECK(state.served && !state.terminating);
    CHECK_STR_EQ(t->kind, "BigDial");
    kapi_type_unref(t);
    json_decref(dials);
}
