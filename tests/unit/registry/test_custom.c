/* Unit tests for custom resource types (registry/custom.c): the kapi_type a CRD version
 * becomes, the decode walk (pruning, defaults, metadata as ObjectMeta), the status rules, the
 * conversion between versions, validation in 1.26's order and words, and the holds that keep a type
 * alive. */
#include <jansson.h>
#include <string.h>

#include "codec/json.h"
#include "registry/registry.h"
#include "test.h"

static const char crd_json[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"gizmos.unit.example.com\"},"
    "\"spec\":{\"group\":\"unit.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"gizmos\",\"kind\":\"Gizmo\",\"listKind\":\"GizmoCollection\","
    "\"shortNames\":[\"gz\"]},"
    "\"versions\":["
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,"
    "\"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.replicas\","
    "\"statusReplicasPath\":\".status.replicas\"}},"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"properties\":{"
    "\"size\":{\"type\":\"string\",\"enum\":[\"S\",\"M\"]},"
    "\"replicas\":{\"type\":\"integer\",\"default\":1,\"maximum\":10}}},"
    "\"status\":{\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"}}}}}}},"
    "{\"name\":\"v1alpha1\",\"served\":true,\"storage\":false,\"deprecated\":true,"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"string\"},"
    "\"old\":{\"type\":\"string\"}}}}}}}]}}";

static const kapi_registry *registry(void)
{
    static kapi_registry *r;
    if (!r)
        kapi_error_free(kapi_registry_new(&r));
    return r;
}

static const kapi_type *gizmo(const char *version)
{
    json_t *crd = json_loads(crd_json, 0, NULL);
    const kapi_type *t = NULL;
    kapi_error *err = kapi_custom_type_new(registry(), crd, version, &t);
    json_decref(crd);
    CHECK(err == NULL);
    kapi_error_free(err);
    return t;
}

static json_t *obj(const char *text)
{
    return json_loads(text, 0, NULL);
}

TEST(custom_type_facts)
{
    const kapi_type *t = gizmo("v1");
    CHECK_STR_EQ(t->group_version, "unit.example.com/v1");
    CHECK_STR_EQ(t->kind, "Gizmo");
    CHECK_STR_EQ(t->list_kind, "GizmoCollection");
    CHECK(t->namespaced && t->generation && t->conditional_update);
    CHECK_STR_EQ(t->short_names[0], "gz");
    CHECK(kapi_type_subresource(t, KAPI_STR("status")) != NULL);
    CHECK(kapi_type_subresource(t, KAPI_STR("scale")) != NULL);
    CHECK_STR_EQ(t->storage_group, "unit.example.com");
    CHECK_STR_EQ(t->storage_resource, "gizmos");
    CHECK(t->custom->warning == NULL);
    /* the storage version converts too: an object may be stored in another version */
    CHECK(t->strategy->from_storage != NULL);
    const char *path;
    kapi_error *err = kapi_type_field_label(&path, t, "spec.size");
    CHECK_STR_EQ(err->message, "field label not supported: spec.size");
    kapi_error_free(err);
    kapi_type_unref(t);

    t = gizmo("v1alpha1");
    CHECK_STR_EQ(t->custom->warning,
                 "unit.example.com/v1alpha1 Gizmo is deprecated; use unit.example.com/v1 Gizmo");
    CHECK(kapi_type_subresource(t, KAPI_STR("status")) == NULL);
    CHECK(t->strategy->to_storage != NULL);
    kapi_type_unref(t);

    json_t *crd = json_loads(crd_json, 0, NULL);
    const kapi_type *none = NULL;
    err = kapi_custom_type_new(registry(), crd, "v9", &none);
    CHECK(err != NULL && none == NULL);
    kapi_error_free(err);
    json_decref(crd);
}

TEST(custom_decode_prunes_and_defaults)
{
    const kapi_type *t = gizmo("v1");
    kapi_arena a;
    kapi_arena_init(&a);
    json_t *o = obj("{\"apiVersion\":\"unit.example.com/v1\",\"kind\":\"Gizmo\","
                    "\"metadata\":{\"name\":\"g\",\"bogus\":1},\"spec\":{\"size\":5,\"x\":1},"
                    "\"top\":true}");
    kapi_schema_walk w = {.arena = &a, .go_types = true, .defaults = true, .reorder = true};
    kapi_error *err = t->strategy->decode(t, o, &w);
    CHECK(err == NULL);
    CHECK_INT_EQ(w.nunknown, 3); /* kube's order: metadata's, then pruning's sorted */
    CHECK_STR_EQ(w.unknown[0], "metadata.bogus");
    CHECK_STR_EQ(w.unknown[1], "spec.x");
    CHECK_STR_EQ(w.unknown[2], "top");
    /* a wrong type is left for validation; the default is filled in */
    CHECK_INT_EQ(json_integer_value(kapi_json_path(o, "spec.size")), 5);
    CHECK_INT_EQ(json_integer_value(kapi_json_path(o, "spec.replicas")), 1);
    CHECK_STR_EQ(kapi_json_path_str(o, "kind"), "Gizmo");
    json_decref(o);
    kapi_arena_dispose(&a);
    kapi_type_unref(t);
}

/* An embedded resource keeps its apiVersion, kind and metadata (ObjectMeta's fields only,
 * nothing added), its unknown fields reported after the rest, as kube-apiserver 1.26
 * reports them for the same object. */
TEST(custom_decode_embedded_resources)
{
    static const char boxes[] =
        "{\"metadata\":{\"name\":\"boxes.unit.example.com\"},\"spec\":{\"group\":"
        "\"unit.example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"boxes\","
        "\"kind\":\"Box\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{"
        "\"type\":\"object\",\"properties\":{\"template\":{\"type\":\"object\","
        "\"x-kubernetes-embedded-resource\":true,\"properties\":{\"spec\":{\"type\":"
        "\"object\",\"properties\":{\"size\":{\"type\":\"string\"}}}}}}}}}}}]}}";
    json_t *crd = json_loads(boxes, 0, NULL);
    const kapi_type *t = NULL;
    CHECK(kapi_custom_type_new(registry(), crd, "v1", &t) == NULL);
    json_decref(crd);
    kapi_arena a;
    kapi_arena_init(&a);
    json_t *o = obj("{\"apiVersion\":\"unit.example.com/v1\",\"kind\":\"Box\",\"metadata\":{"
                    "\"name\":\"b\"},\"spec\":{\"template\":{\"apiVersion\":\"v1\",\"kind\":"
                    "\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"},\"bogus\":1},"
                    "\"spec\":{\"size\":\"M\",\"extra\":1},\"other\":2}}}");
    kapi_schema_walk w = {.arena = &a, .go_types = true, .defaults = true};
    CHECK(t->strategy->decode(t, o, &w) == NULL);
    CHECK_INT_EQ(w.nunknown, 3);
    CHECK_STR_EQ(w.unknown[0], "spec.template.other");
    CHECK_STR_EQ(w.unknown[1], "spec.template.spec.extra");
    CHECK_STR_EQ(w.unknown[2], "spec.template.metadata.bogus");
    char *got = json_dumps(kapi_json_path(o, "spec.template"), JSON_SORT_KEYS | JSON_COMPACT);
    CHECK_STR_EQ(got, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"labels\":{"
                      "\"a\":\"b\"},\"name\":\"p\"},\"spec\":{\"size\":\"M\"}}");
    free(got);
    json_decref(o);
    kapi_arena_dispose(&a);
    kapi_type_unref(t);
}

TEST(custom_status_rules)
{
    const kapi_type *t = gizmo("v1");
    json_t *o = obj("{\"metadata\":{\"name\":\"g\"},\"spec\":{},\"status\":{\"replicas\":3}}");
    kapi_type_prepare_create(t, o);
    CHECK(json_object_get(o, "status") == NULL);
    json_t *old = obj("{\"metadata\":{\"name\":\"g\",\"generation\":4},\"spec\":{\"size\":\"S\"},"
                      "\"status\":{\"replicas\":2}}");
    json_t *upd = obj("{\"metadata\":{\"name\":\"g\",\"labels\":{\"a\":\"b\"}},"
                      "\"spec\":{\"size\":\"M\"},\"status\":{\"replicas\":9}}");
    kapi_type_prepare_update(t, upd, old);
    CHECK_INT_EQ(json_integer_value(kapi_json_path(upd, "status.replicas")), 2);
    CHECK_STR_EQ(kapi_json_path_str(upd, "spec.size"), "M");
    /* a status write keeps everything else, metadata included */
    json_t *st = obj("{\"metadata\":{\"name\":\"g\",\"labels\":{\"a\":\"b\"}},"
                     "\"spec\":{\"size\":\"M\"},\"status\":{\"replicas\":9}}");
    kapi_type_prepare_subresource(t, "status", st, old);
    CHECK_INT_EQ(json_integer_value(kapi_json_path(st, "status.replicas")), 9);
    CHECK_STR_EQ(kapi_json_path_str(st, "spec.size"), "S");
    CHECK(kapi_json_path(st, "metadata.labels") == NULL);
    json_decref(o);
    json_decref(old);
    json_decref(upd);
    json_decref(st);
    kapi_type_unref(t);
}

TEST(custom_conversion)
{
    const kapi_type *t = gizmo("v1alpha1");
    json_t *o = obj("{\"apiVersion\":\"unit.example.com/v1alpha1\",\"kind\":\"Gizmo\","
                    "\"metadata\":{\"name\":\"g\"},\"spec\":{\"size\":\"S\",\"old\":\"x\"}}");
    json_t *stored = json_incref(o);
    CHECK(kapi_type_to_storage(t, &stored) == NULL);
    CHECK_STR_EQ(kapi_json_path_str(stored, "apiVersion"), "unit.example.com/v1");
    CHECK(kapi_json_path(stored, "spec.old") == NULL);
    CHECK_INT_EQ(json_integer_value(kapi_json_path(stored, "spec.replicas")), 1);
    /* the caller's object is left as it was */
    CHECK_STR_EQ(kapi_json_path_str(o, "spec.old"), "x");
    json_t *back = stored;
    CHECK(kapi_type_from_storage(t, &back, 1) == NULL);
    CHECK_STR_EQ(kapi_json_path_str(back, "apiVersion"), "unit.example.com/v1alpha1");
    CHECK(kapi_json_path(back, "spec.replicas") == NULL);
    /* an object already of the version is left as it is */
    json_t *same = json_incref(back);
    CHECK(kapi_type_from_storage(t, &same, 1) == NULL);
    CHECK(same == back);
    json_decref(same);
    json_decref(back);
    json_decref(o);
    kapi_type_unref(t);
}

TEST(custom_validation_order)
{
    const kapi_type *t = gizmo("v1");
    json_t *o = obj("{\"apiVersion\":\"unit.example.com/v1\",\"kind\":\"Gizmo\","
                    "\"metadata\":{\"name\":\"g\",\"namespace\":\"ns\"},"
                    "\"spec\":{\"size\":\"XL\",\"replicas\":-1}}");
    kapi_error *err = kapi_type_validate(t, o, NULL);
    CHECK(err != NULL);
    CHECK_STR_EQ(err->message,
                 "Gizmo.unit.example.com \"g\" is invalid: [.spec.replicas: Invalid value: -1: "
                 "should be a non-negative integer, spec.size: Unsupported value: \"XL\": "
                 "supported values: \"S\", \"M\"]");
    kapi_error_free(err);
    json_object_set_new(o, "kind", json_string("Other"));
    err = kapi_type_validate(t, o, NULL);
    CHECK_STR_EQ(err->message,
                 "Other.unit.example.com \"g\" is invalid: kind: Invalid value: \"Other\": must be "
                 "Gizmo");
    kapi_error_free(err);
    json_object_set_new(o, "kind", json_string("Gizmo"));
    json_object_set_new(json_object_get(o, "spec"), "replicas", json_string("two"));
    json_object_set_new(json_object_get(o, "spec"), "size", json_string("S"));
    err = kapi_type_validate(t, o, NULL);
    CHECK(strstr(err->message, ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: "
                               "two is of the type string, expected int64") != NULL);
    kapi_error_free(err);
    json_decref(o);
    kapi_type_unref(t);
}

TEST(custom_holds)
{
    const kapi_type *t = gizmo("v1");
    CHECK(kapi_type_ref(t) == t);
    kapi_type_unref(t);
    CHECK_STR_EQ(t->kind, "Gizmo"); /* still held once */
    kapi_type_unref(t);
    const kapi_type *builtin = kapi_registry_at(registry(), 0);
    CHECK(kapi_type_ref(builtin) == builtin);
    kapi_type_unref(builtin);
    kapi_type_unref(builtin);
    CHECK(builtin->kind != NULL);
}

/* The registry's cache of custom types: keyed by CRD name and version, valid for the
 * revision a type was built from, replaced by a newer one only, holding what it gives. */
TEST(custom_cache_by_revision)
{
    kapi_registry *r = NULL;
    CHECK(kapi_registry_new(&r) == NULL);
    json_t *crd = json_loads(crd_json, 0, NULL);
    json_object_set_new(
        crd, "status",
        json_pack("{s:[{s:s,s:s}]}", "conditions", "type", "Established", "status", "True"));
    kapi_custom_state st = {false, false};
    const char *name = "gizmos.unit.example.com";
    CHECK(kapi_registry_custom_cached(r, name, "v1", 5, &st) == NULL);
    const kapi_type *t5 = NULL;
    CHECK(kapi_registry_custom_build(r, crd, 5, "v1", &t5, &st) == NULL);
    CHECK(t5 != NULL && st.served && !st.terminating);
    kapi_custom_state again = {false, true};
    const kapi_type *c = kapi_registry_custom_cached(r, name, "v1", 5, &again);
    CHECK(c == t5 && again.served && !again.terminating);
    kapi_type_unref(c);
    CHECK(kapi_registry_custom_cached(r, name, "v1", 6, &st) == NULL);
    CHECK(kapi_registry_custom_cached(r, name, "v1alpha1", 5, &st) == NULL);
    /* A newer revision replaces the type; the old one lives while held. */
    json_object_set_new(crd, "status",
                        json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "conditions", "type", "Established",
                                  "status", "True", "type", "Terminating", "status", "True"));
    const kapi_type *t7 = NULL;
    CHECK(kapi_registry_custom_build(r, crd, 7, "v1", &t7, &st) == NULL);
    CHECK(t7 != t5 && st.terminating);
    CHECK(strcmp(t5->plural, "gizmos") == 0);
    CHECK(kapi_registry_custom_cached(r, name, "v1", 5, &st) == NULL);
    /* An older revision built late does not replace the newer one. */
    const kapi_type *late = NULL;
    CHECK(kapi_registry_custom_build(r, crd, 6, "v1", &late, &st) == NULL);
    c = kapi_registry_custom_cached(r, name, "v1", 7, &st);
    CHECK(c == t7);
    kapi_type_unref(c);
    const kapi_type *storage = NULL;
    CHECK(kapi_registry_custom_storage_type(r, crd, 7, &storage) == NULL);
    CHECK(storage == t7);
    kapi_type_unref(storage);
    kapi_type_unref(late);
    kapi_type_unref(t5);
    kapi_type_unref(t7);
    json_decref(crd);
    kapi_registry_free(r);
}
