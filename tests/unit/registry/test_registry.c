/* Unit tests for the registry's index (registry/registry.c): lookups by group, version
 * and plural, whole and by length, and the groups and versions it serves. */
#include "registry/registry.h"
#include "test.h"

static kapi_registry *load(void)
{
    kapi_registry *r = NULL;
    kapi_error_free(kapi_registry_new(&r));
    return r;
}

TEST(registry_lookup_every_type)
{
    kapi_registry *r = load();
    CHECK(r != NULL && kapi_registry_count(r) > 0);
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const kapi_type *t = kapi_registry_at(r, i);
        CHECK(kapi_registry_lookup(r, kapi_str_c(t->group), kapi_str_c(t->version),
                                   kapi_str_c(t->plural)) == t);
        CHECK(kapi_registry_has_group(r, kapi_str_c(t->group)));
        CHECK(kapi_registry_has_group_version(r, kapi_str_c(t->group), kapi_str_c(t->version)));
    }
    kapi_registry_free(r);
}

TEST(registry_lookup_misses)
{
    kapi_registry *r = load();
    const kapi_type *cj =
        kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs"));
    CHECK(cj != NULL && strcmp(cj->kind, "CronJob") == 0);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR(""), KAPI_STR("")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v2"), KAPI_STR("cronjobs")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("cronjobs")) == NULL);
    /* By length: a NUL inside or a prefix is another name. */
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjobs\0x")) ==
          NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR("batch"), KAPI_STR("v1"), KAPI_STR("cronjob")) == NULL);
    CHECK(kapi_registry_lookup(r, KAPI_STR(""), KAPI_STR("v1"), KAPI_STR("namespaces")) != NULL);
    CHECK(kapi_registry_has_group(r, KAPI_STR("")));
    CHECK(kapi_registry_has_group(r, KAPI_STR("batch")));
    CHECK(!kapi_registry_has_group(r, KAPI_STR("batc")));
    CHECK(kapi_registry_has_group_version(r, KAPI_STR("batch"), KAPI_STR("v1")));
    CHECK(!kapi_registry_has_group_version(r, KAPI_STR("batch"), KAPI_STR("")));
    CHECK(!kapi_registry_has_group_version(r, KAPI_STR("batch"), KAPI_STR("v9")));
    kapi_registry_free(r);
}
