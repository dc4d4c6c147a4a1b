/* Unit tests for the field labels of the built-in types (registry.c, the type files'
 * "fieldLabels"): which labels each type's fieldSelector accepts, the stored path each
 * reads, and the three messages kube-apiserver 1.26 refuses the others with. */
#include <jansson.h>

#include "registry/registry.h"
#include "test.h"

#define NOT_KNOWN " is not a known field selector: only \"metadata.name\", \"metadata.namespace\""

typedef struct label_case {
    const char *group, *plural, *label;
    const char *want; /* the stored path, or the error message when error is set */
    bool error;
} label_case;

static const label_case cases[] = {
    /* core/v1 Namespace: pkg/apis/core/v1/conversion.go */
    {"", "namespaces", "metadata.name", "metadata.name", false},
    {"", "namespaces", "status.phase", "status.phase", false},
    {"", "namespaces", "metadata.namespace", "field label not supported: metadata.namespace", true},
    {"", "namespaces", "name", "field label not supported: name", true},
    /* core/v1 Event: the core names; source falls back to reportingComponent */
    {"", "events", "metadata.namespace", "metadata.namespace", false},
    {"", "events", "involvedObject.name", "involvedObject.name", false},
    {"", "events", "involvedObject.fieldPath", "involvedObject.fieldPath", false},
    {"", "events", "reportingComponent", "reportingComponent", false},
    {"", "events", "source", "source.component|reportingComponent", false},
    {"", "events", "type", "type", false},
    {"", "events", "regarding.name", "field label not supported: regarding.name", true},
    {"", "events", "reportingController", "field label not supported: reportingController", true},
    {"", "events", "message", "field label not supported: message", true},
    /* events.k8s.io/v1 Event: the events names, mapped to the stored core fields */
    {"events.k8s.io", "events", "regarding.name", "involvedObject.name", false},
    {"events.k8s.io", "events", "regarding.uid", "involvedObject.uid", false},
    {"events.k8s.io", "events", "reportingController", "reportingComponent", false},
    {"events.k8s.io", "events", "source", "source.component|reportingComponent", false},
    {"events.k8s.io", "events", "reason", "reason", false},
    {"events.k8s.io", "events", "involvedObject.name",
     "field label not supported: involvedObject.name", true},
    {"events.k8s.io", "events", "reportingComponent",
     "field label not supported: reportingComponent", true},
    /* batch/v1 Job: pkg/apis/batch/v1/conversion.go; status.successful is Go's int, 0 when
     * succeeded is absent */
    {"batch", "jobs", "metadata.namespace", "metadata.namespace", false},
    {"batch", "jobs", "status.successful", "status.succeeded|=0", false},
    {"batch", "jobs", "spec.x", "field label \"spec.x\" not supported for Job", true},
    /* types without a conversion func: runtime.DefaultMetaV1FieldSelectorConversion */
    {"batch", "cronjobs", "metadata.name", "metadata.name", false},
    {"batch", "cronjobs", "metadata.namespace", "metadata.namespace", false},
    {"batch", "cronjobs", "spec.schedule", "\"spec.schedule\"" NOT_KNOWN, true},
    {"batch", "cronjobs", "a\"b\n", "\"a\\\"b\\n\"" NOT_KNOWN, true},
    {"batch", "cronjobs", "", "\"\"" NOT_KNOWN, true},
    {"networking.k8s.io", "clustercidrs", "metadata.namespace", "metadata.namespace", false},
    {"networking.k8s.io", "clustercidrs", "spec.ipv4", "\"spec.ipv4\"" NOT_KNOWN, true},
    {"apiextensions.k8s.io", "customresourcedefinitions", "metadata.name", "metadata.name", false},
    {"apiextensions.k8s.io", "customresourcedefinitions", "spec.group", "\"spec.group\"" NOT_KNOWN,
     true},
};

static const kapi_type *find(const kapi_registry *r, const char *group, const char *plural)
{
    for (size_t i = 0; i < kapi_registry_count(r); i++) {
        const kapi_type *t = kapi_registry_at(r, i);
        if (strcmp(t->group, group) == 0 && strcmp(t->plural, plural) == 0)
            return t;
    }
    test_fail(__FILE__, __LINE__, "no type %s %s", group, plural);
}

TEST(registry_field_labels)
{
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        const label_case *c = &cases[i];
        const char *path = NULL;
        kapi_error *err = kapi_type_field_label(&path, find(reg, c->group, c->plural), c->label);
        const char *got = err ? err->message : path;
        if (c->error != (err != NULL) || strcmp(got, c->want) != 0)
            test_fail(__FILE__, __LINE__, "%s %s %s:\n got: %s\nwant: %s", c->group, c->plural,
                      c->label, got, c->want);
        CHECK(!err || err->status == KAPI_STATUS_BAD_REQUEST);
        kapi_error_free(err);
    }
    for (size_t i = 0; i < kapi_registry_count(reg); i++) {
        const char *path;
        CHECK(kapi_type_field_label(&path, kapi_registry_at(reg, i), "metadata.name") == NULL);
        CHECK_STR_EQ(path, "metadata.name");
    }
    kapi_registry_free(reg);
}

/* A stored object's field, for kapi_fieldsel_matches. */
static const char *stored_field(void *ctx, const char *path)
{
    static char scratch[KAPI_FIELD_VALUE_SCRATCH];
    return kapi_fieldsel_value(ctx, path, scratch);
}

TEST(registry_field_selector)
{
    kapi_registry *reg;
    kapi_fieldsel *s;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *ev = find(reg, "events.k8s.io", "events");
    json_t *stored = json_loads("{\"metadata\":{\"name\":\"e\",\"namespace\":\"ns\"},"
                                "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
                                "\"reportingComponent\":\"kubelet\",\"type\":\"Normal\"}",
                                0, NULL);
    CHECK(stored != NULL);

    CHECK(kapi_fieldsel_parse(&s, "type=Normal,regarding.name=p,source=kubelet") == NULL);
    CHECK(kapi_type_field_selector(ev, s) == NULL);
    CHECK_STR_EQ(s->reqs[0].field, "involvedObject.name");
    CHECK_STR_EQ(s->reqs[1].field, "source.component|reportingComponent");
    CHECK_STR_EQ(s->reqs[2].field, "type");
    CHECK(kapi_fieldsel_matches(s, stored_field, stored));
    kapi_fieldsel_free(s);

    CHECK(kapi_fieldsel_parse(&s, "regarding.kind!=Pod") == NULL);
    CHECK(kapi_type_field_selector(ev, s) == NULL);
    CHECK(!kapi_fieldsel_matches(s, stored_field, stored));
    kapi_fieldsel_free(s);

    /* the first unsupported label in sorted order is the one reported */
    CHECK(kapi_fieldsel_parse(&s, "zzz=1,involvedObject.name=p") == NULL);
    kapi_error *err = kapi_type_field_selector(ev, s);
    CHECK(err != NULL);
    CHECK_STR_EQ(err->message, "field label not supported: involvedObject.name");
    kapi_error_free(err);
    kapi_fieldsel_free(s);

    CHECK(kapi_fieldsel_parse(&s, "spec.schedule=x,metadata.name=a") == NULL);
    err = kapi_type_field_selector(find(reg, "batch", "cronjobs"), s);
    CHECK(err != NULL);
    CHECK_STR_EQ(err->message, "\"spec.schedule\"" NOT_KNOWN);
    kapi_error_free(err);
    kapi_fieldsel_free(s);

    json_decref(stored);
    kapi_registry_free(reg);
}
