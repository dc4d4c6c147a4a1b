/* Unit tests for smd.h's field manager and updater: the steps of
 * tests/data/smd/manager.json, each as kube-apiserver 1.26 answered it. */
#include "codec/json.h"
#include "smd/smd.h"
#include "test.h"

static const char meta_schema[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"namespace\":{\"type\":\"string\"},\"uid\":{\"type\":\"string\"},"
    "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"managedFields\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}}}";

/* The set of one top-level field name. */
static kapi_smd_set *one_field(kapi_arena *a, const char *name)
{
    kapi_smd_set *s = kapi_smd_set_new(a);
    kapi_smd_pe pe = {.kind = KAPI_SMD_PE_FIELD, .name = kapi_str_c(name)};
    kapi_smd_set_insert(a, s, (kapi_smd_path){&pe, 1});
    return s;
}

static char *encode(const json_t *v)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, v);
    return kapi_buf_detach(&b, NULL);
}

/* obj's managedFields as "manager operation[ subresource]" -> fieldsV1. */
static json_t *managed_of(const json_t *obj)
{
    json_t *out = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "managedFields"), i, e)
    {
        const char *sub = kapi_json_path_str(e, "subresource");
        char *key =
            kapi_xprintf("%s %s%s%s", kapi_json_path_str(e, "manager"),
                         kapi_json_path_str(e, "operation"), sub ? " " : "", sub ? sub : "");
        json_object_set(out, key, json_object_get(e, "fieldsV1"));
        free(key);
    }
    return out;
}

static void check_error(const json_t *want, kapi_error *err)
{
    CHECK(err != NULL);
    CHECK_INT_EQ(kapi_status_code(err->status), json_integer_value(json_object_get(want, "code")));
    CHECK_STR_EQ(err->message, kapi_json_path_str(want, "message"));
    const json_t *causes = json_object_get(want, "causes");
    CHECK_INT_EQ(err->ncauses, json_array_size(causes));
    for (size_t i = 0; i < err->ncauses; i++) {
        const json_t *c = json_array_get(causes, i);
        CHECK_STR_EQ(err->causes[i].reason, kapi_json_path_str(c, "reason"));
        CHECK_STR_EQ(err->causes[i].message, kapi_json_path_str(c, "message"));
        CHECK_STR_EQ(err->causes[i].field, kapi_json_path_str(c, "field"));
    }
}

static void check_result(const json_t *step, const json_t *obj)
{
    char *got = encode(json_object_get(obj, "spec"));
    char *want = encode(json_object_get(step, "spec"));
    json_t *have = managed_of(obj);
    if (!json_equal(json_object_get(obj, "spec"), json_object_get(step, "spec")))
        CHECK_STR_EQ(got, want); /* members in any order; fails showing both */
    const char *key;
    json_t *fields;
    CHECK_INT_EQ(json_object_size(have), json_object_size(json_object_get(step, "managed")));
    json_object_foreach(json_object_get(step, "managed"), key, fields)
    {
        char *w = encode(fields), *h = encode(json_object_get(have, key));
        CHECK_STR_EQ(h, w);
        free(w);
        free(h);
    }
    json_decref(have);
    free(got);
    free(want);
}

TEST(smd_manager_steps_as_kube_apiserver)
{
    json_error_t je;
    json_t *doc = json_load_file("tests/data/smd/manager.json", 0, &je);
    CHECK(doc != NULL);
    kapi_schema_root *root = NULL, *meta_root = NULL;
    json_t *meta_src = json_loads(meta_schema, 0, NULL);
    CHECK(kapi_schema_compile(json_object_get(doc, "schema"), &root) == NULL);
    CHECK(kapi_schema_compile(meta_src, &meta_root) == NULL);
    kapi_smd_types *ts = kapi_smd_types_new();
    const kapi_smd_type *meta = kapi_smd_type_of(ts, kapi_schema_root_node(meta_root));
    const kapi_smd_type *t = kapi_smd_type_custom(ts, kapi_schema_root_node(root), meta);
    json_t *zero = json_pack("{s:s,s:s}", "apiVersion", "t.example.com/v1", "kind", "Thing");
    json_t *live = NULL;
    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(doc, "steps"), i, step)
    {
        kapi_arena a;
        kapi_arena_init(&a);
        const char *sub = kapi_json_path_str(step, "subresource");
        kapi_smd_fm fm = {
            .updater = {.version = "t.example.com/v1",
                        .view = {t, one_field(&a, sub ? "spec" : "status")}},
            .group_version = "t.example.com/v1",
            .kind = "Thing",
            .subresource = sub ? sub : "",
            .empty = zero,
        };
        const char *manager = kapi_json_path_str(step, "manager");
        json_t *out = NULL;
        kapi_error *err = NULL;
        if (strcmp(kapi_json_path_str(step, "op"), "apply") == 0) {
            err = kapi_smd_fm_apply(&a, &fm, live, json_object_get(step, "body"), manager,
                                    json_is_true(json_object_get(step, "force")),
                                    "2026-01-02T03:04:05Z", &out);
        } else {
            out = json_deep_copy(json_object_get(step, "object"));
            kapi_smd_fm_update(&a, &fm, live, out, manager, "2026-01-02T03:04:05Z");
        }
        if (json_object_get(step, "error")) {
            check_error(json_object_get(step, "error"), err);
            kapi_error_free(err);
        } else {
            CHECK(err == NULL);
            check_result(step, out);
            json_decref(live);
            live = json_incref(out);
        }
        json_decref(out);
        kapi_arena_dispose(&a);
    }
    json_decref(live);
    json_decref(zero);
    json_decref(meta_src);
    kapi_smd_types_free(ts);
    kapi_schema_root_free(root);
    kapi_schema_root_free(meta_root);
    json_decref(doc);
}
