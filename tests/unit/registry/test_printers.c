/* Unit tests for registry/printers: kube's human durations, the CRD rules of a jsonPath
 * column by type, the computed cells of the built-in printers (CronJob, ClusterCIDR,
 * Event, RoleBinding, the default table) and the columns' loading. Cells are compared as compact
 * JSON. */
#include <jansson.h>

#include "codec/json.h"
#include "registry/registry_int.h"
#include "test.h"

#define S 1000000000LL
/* 2023-01-02T03:04:05Z, the "now" of these tests. */
#define NOW (1672628645LL * S)

TEST(registry_human_duration)
{
    static const struct {
        long long secs;
        const char *human, *short_;
    } cases[] = {
        {-5, "<invalid>", "<invalid>"},
        {-1, "0s", "0s"},
        {0, "0s", "0s"},
        {59, "59s", "59s"},
        {61, "61s", "1m"},
        {125, "2m5s", "2m"},
        {600, "10m", "10m"},
        {179 * 60, "179m", "2h"},
        {3 * 3600 + 60, "3h1m", "3h"},
        {8 * 3600 + 59, "8h", "8h"},
        {47 * 3600, "47h", "1d"},
        {3 * 86400 + 3600, "3d1h", "3d"},
        {9 * 86400, "9d", "9d"},
        {800LL * 86400, "2y70d", "2y"},
        {3000LL * 86400, "8y", "8y"},
    };
    char out[32];
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_human_duration(out, cases[i].secs * S);
        CHECK_STR_EQ(out, cases[i].human);
        kapi_short_human_duration(out, cases[i].secs * S);
        CHECK_STR_EQ(out, cases[i].short_);
    }
}

/* A built-in type whose columns come from a def's printerColumns (JSON text). */
static void load(kapi_type *t, const char *columns)
{
    memset(t, 0, sizeof(*t));
    t->builtin = true;
    json_t *def = json_object();
    json_object_set_new(def, "printerColumns", kapi_json_parse(columns, strlen(columns), NULL));
    t->def = def;
    kapi_error *err = kapi_registry__load_columns(t, "test", def);
    CHECK(err == NULL);
}

static void unload(kapi_type *t)
{
    kapi_registry__free_columns(t);
    json_decref(t->def);
}

/* The row of obj (JSON text) as JSON text, in a static buffer. */
static const char *row(const kapi_type *t, const char *obj)
{
    static char out[1024];
    json_t *o = kapi_json_parse(obj, strlen(obj), NULL);
    json_t *cells = kapi_type_table_cells(t, o, NOW);
    char *text = json_dumps(cells, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(out, sizeof(out), "%s", text);
    free(text);
    json_decref(cells);
    json_decref(o);
    return out;
}

TEST(registry_printer_crd_columns)
{
    kapi_type t;
    load(&t, "[{\"name\":\"S\",\"type\":\"string\",\"jsonPath\":\".spec.s\"},"
             "{\"name\":\"I\",\"type\":\"integer\",\"jsonPath\":\".spec.n\"},"
             "{\"name\":\"N\",\"type\":\"number\",\"jsonPath\":\".spec.n\"},"
             "{\"name\":\"B\",\"type\":\"boolean\",\"jsonPath\":\".spec.b\"},"
             "{\"name\":\"D\",\"type\":\"date\",\"jsonPath\":\".spec.d\"},"
             "{\"name\":\"P\",\"type\":\"string\",\"jsonPath\":\".spec.ports[-1]['na.me']\"},"
             "{\"name\":\"W\",\"type\":\"string\",\"jsonPath\":\".spec.ports[*].port\"},"
             "{\"name\":\"F\",\"type\":\"string\",\"jsonPath\":"
             "\".spec.c[?(@.type == 'Ready')].status\"}]");
    CHECK_STR_EQ(t.columns[0].description, "The value at .spec.s in the object.");
    CHECK_STR_EQ(row(&t,
                     "{\"spec\":{\"s\":\"x\",\"n\":2.5,\"b\":true,\"d\":\"2023-01-02T03:00:00Z\","
                     "\"ports\":[{\"port\":80},{\"na.me\":\"b\",\"port\":81}]}}"),
                 "[\"x\",2,2.5,true,\"4m\",\"b\",\"80\",null]");
    /* missing values and values of another type are null; a string column prints others */
    CHECK_STR_EQ(row(&t, "{\"spec\":{\"s\":[\"a\",{\"z\":1,\"a\":\"<\"}],\"n\":\"3\",\"b\":1,"
                         "\"d\":\"yesterday\",\"ports\":[]}}"),
                 "[\"[\\\"a\\\",{\\\"a\\\":\\\"\\\\u003c\\\",\\\"z\\\":1}]\",null,null,null,"
                 "\"<invalid>\",null,null,null]");
    CHECK_STR_EQ(row(&t, "{\"spec\":{\"s\":null,\"n\":7,\"d\":\"0001-01-01T00:00:00Z\"}}"),
                 "[\"<no value>\",7,7.0,null,\"<unknown>\",null,null,null]");
    CHECK_STR_EQ(row(&t, "{\"spec\":{\"s\":1.5e+06}}"),
                 "[\"1.5e+06\",null,null,null,null,null,null,null]");
    /* a filter: the first element that passes; one of another kind fails the path */
    CHECK_STR_EQ(row(&t, "{\"spec\":{\"c\":[{\"type\":\"A\",\"status\":\"x\"},{\"type\":"
                         "\"Ready\",\"status\":\"True\"}]}}"),
                 "[null,null,null,null,null,null,null,\"True\"]");
    CHECK_STR_EQ(row(&t, "{\"spec\":{\"c\":[{\"type\":1},{\"type\":\"Ready\",\"status\":"
                         "\"True\"}]}}"),
                 "[null,null,null,null,null,null,null,null]");
    unload(&t);
}

TEST(registry_printer_bad_columns)
{
    static const char *const bad[] = {
        "[{\"name\":\"A\",\"type\":\"string\",\"jsonPath\":\"spec.a\"}]",
        "[{\"name\":\"A\",\"type\":\"string\",\"jsonPath\":\".spec[x]\"}]",
        "[{\"name\":\"A\",\"type\":\"string\",\"jsonPath\":\".c[?(@.t > 1)]\"}]",
        "[{\"name\":\"A\",\"type\":\"string\",\"cell\":\"nosuch\"}]",
        "[{\"name\":\"A\",\"type\":\"string\"}]",
        "[{\"type\":\"string\",\"jsonPath\":\".a\"}]",
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(bad); i++) {
        kapi_type t;
        memset(&t, 0, sizeof(t));
        t.builtin = true;
        t.def = json_object();
        json_object_set_new(t.def, "printerColumns", kapi_json_parse(bad[i], strlen(bad[i]), NULL));
        kapi_error *err = kapi_registry__load_columns(&t, "test", t.def);
        CHECK(err != NULL);
        kapi_error_free(err);
        unload(&t);
    }
}

/* An empty list is a built-in type with no Table (the reviews: kube answers 406), not
 * kube's default table. */
TEST(registry_printer_no_table)
{
    kapi_type t;
    memset(&t, 0, sizeof(t));
    t.builtin = true;
    t.def = json_object();
    json_object_set_new(t.def, "printerColumns", json_array());
    CHECK(kapi_registry__load_columns(&t, "test", t.def) == NULL);
    CHECK_INT_EQ(t.ncolumns, 0);
    CHECK(!t.default_table);
    unload(&t);
    kapi_registry *reg;
    CHECK(kapi_registry_new(&reg) == NULL);
    const kapi_type *sar = kapi_registry_lookup(reg, KAPI_STR("authorization.k8s.io"),
                                                KAPI_STR("v1"), KAPI_STR("subjectaccessreviews"));
    CHECK(sar && sar->ncolumns == 0 && !sar->default_table);
    kapi_registry_free(reg);
}

/* The built-in type group/plural of the registry. */
static const kapi_type *builtin(kapi_registry **reg, const char *group, const char *plural)
{
    CHECK(kapi_registry_new(reg) == NULL);
    const kapi_type *t =
        kapi_registry_lookup(*reg, kapi_str_c(group), KAPI_STR(""), kapi_str_c(plural));
    for (size_t i = 0; !t && i < kapi_registry_count(*reg); i++) {
        const kapi_type *x = kapi_registry_at(*reg, i);
        if (strcmp(x->group, group) == 0 && strcmp(x->plural, plural) == 0)
            t = x;
    }
    CHECK(t != NULL);
    return t;
}

TEST(registry_printer_cronjob)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "batch", "cronjobs");
    CHECK(t->builtin);
    CHECK_STR_EQ(t->go_type, "batch.CronJob");
    CHECK_INT_EQ(t->ncolumns, 9);
    CHECK_STR_EQ(
        row(t, "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":\"2023-01-01T00:00:00Z\"},"
               "\"spec\":{\"schedule\":\"* * * * *\",\"suspend\":false,\"jobTemplate\":"
               "{\"spec\":{\"selector\":{\"matchLabels\":{\"b\":\"1\",\"a\":\"2\"},"
               "\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\",\"values\":"
               "[\"y\",\"x\"]},{\"key\":\"c\",\"operator\":\"DoesNotExist\"}]},"
               "\"template\":{\"spec\":{\"containers\":[{\"name\":\"m\",\"image\":\"i:1\"},"
               "{\"name\":\"n\",\"image\":\"j\"}]}}}}},"
               "\"status\":{\"active\":[{},{}],\"lastScheduleTime\":\"2023-01-02T03:00:00Z\"}}"),
        "[\"c\",\"* * * * *\",\"False\",2,\"4m5s\",\"27h\",\"m,n\",\"i:1,j\","
        "\"a=2,a notin (x,y),b=1,!c\"]");
    CHECK_STR_EQ(
        row(t, "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"jobTemplate\":{\"spec\":"
               "{\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}}}}}"),
        "[\"c\",\"\",\"<unset>\",0,\"<none>\",\"<unknown>\",\"\",\"\",\"<error>\"]");
    kapi_registry_free(reg);
}

/* printNode: Ready / NotReady / Unknown and SchedulingDisabled, roles from both labels
 * sorted and unique, the first address of each type, <unknown> for missing node info. */
TEST(registry_printer_node)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "", "nodes");
    CHECK_INT_EQ(t->ncolumns, 10);
    CHECK_STR_EQ(
        row(t, "{\"metadata\":{\"name\":\"n\",\"creationTimestamp\":\"2023-01-01T00:00:00Z\","
               "\"labels\":{\"node-role.kubernetes.io/worker\":\"\",\"kubernetes.io/role\":"
               "\"worker\",\"node-role.kubernetes.io/a\":\"x\",\"node-role.kubernetes.io/\":"
               "\"\"}},\"spec\":{\"unschedulable\":true},\"status\":{\"conditions\":[{\"type\":"
               "\"Ready\",\"status\":\"Unknown\"}],\"addresses\":[{\"type\":\"ExternalIP\","
               "\"address\":\"1.2.3.4\"},{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"},"
               "{\"type\":\"InternalIP\",\"address\":\"10.0.0.2\"}],\"nodeInfo\":{"
               "\"kubeletVersion\":\"v1.26.1\",\"osImage\":\"Debian\"}}}"),
        "[\"n\",\"NotReady,SchedulingDisabled\",\"a,worker\",\"27h\",\"v1.26.1\",\"10.0.0.1\","
        "\"1.2.3.4\",\"Debian\",\"<unknown>\",\"<unknown>\"]");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"n\"}}"),
                 "[\"n\",\"Unknown\",\"<none>\",\"<unknown>\",\"\",\"<none>\",\"<none>\","
                 "\"<unknown>\",\"<unknown>\",\"<unknown>\"]");
    kapi_registry_free(reg);
}

/* printJob: completions with and without spec.completions, the duration to completion
 * or to now, and empty before the Job starts. */
TEST(registry_printer_job)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "batch", "jobs");
    CHECK_INT_EQ(t->ncolumns, 7);
    CHECK_STR_EQ(
        row(t, "{\"metadata\":{\"name\":\"j\",\"creationTimestamp\":\"2023-01-01T00:00:00Z\"},"
               "\"spec\":{\"completions\":3,\"parallelism\":2,\"selector\":{\"matchLabels\":"
               "{\"controller-uid\":\"u\"}},\"template\":{\"spec\":{\"containers\":[{\"name\":"
               "\"m\",\"image\":\"i:1\"}]}}},\"status\":{\"succeeded\":2,\"startTime\":"
               "\"2023-01-01T00:00:00Z\",\"completionTime\":\"2023-01-01T00:01:05Z\"}}"),
        "[\"j\",\"2/3\",\"65s\",\"27h\",\"m\",\"i:1\",\"controller-uid=u\"]");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":4},"
                        "\"status\":{\"startTime\":\"2023-01-02T03:00:00Z\"}}"),
                 "[\"j\",\"0/1 of 4\",\"4m5s\",\"<unknown>\",\"\",\"\",\"<none>\"]");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":1}}"),
                 "[\"j\",\"0/1\",\"\",\"<unknown>\",\"\",\"\",\"<none>\"]");
    kapi_registry_free(reg);
}

TEST(registry_printer_clustercidr)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "networking.k8s.io", "clustercidrs");
    CHECK_STR_EQ(
        row(t, "{\"metadata\":{\"name\":\"cc\",\"creationTimestamp\":\"2023-01-02T03:04:00Z\"},"
               "\"spec\":{\"perNodeHostBits\":8,\"ipv6\":\"fd00::/64\",\"nodeSelector\":"
               "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"os\",\"operator\":"
               "\"In\",\"values\":[\"linux\",\"bsd\"]},{\"key\":\"x\",\"operator\":"
               "\"Exists\"}]},{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
               "\"In\",\"values\":[\"n\"]}]}]}}}"),
        "[\"cc\",\"8\",\"<none>\",\"fd00::/64\",\"5s\",\"MatchExpressions: [{os In "
        "[linux bsd]} {x Exists []}],MatchFields: [{metadata.name In [n]}]\"]");
    kapi_registry_free(reg);
}

TEST(registry_printer_events)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "events.k8s.io", "events");
    CHECK_STR_EQ(t->go_type, "core.Event");
    /* the storage view (core names) */
    CHECK_STR_EQ(
        row(t, "{\"metadata\":{\"name\":\"e\"},\"involvedObject\":{\"kind\":\"CronJob\","
               "\"name\":\"cj\",\"fieldPath\":\"spec\"},\"type\":\"Normal\",\"reason\":\"R\","
               "\"message\":\" hi \\n\",\"firstTimestamp\":\"2023-01-02T02:04:05Z\","
               "\"lastTimestamp\":\"2023-01-02T03:04:04Z\",\"count\":3,"
               "\"source\":{\"component\":\"c\",\"host\":\"h\"}}"),
        "[\"1s\",\"Normal\",\"R\",\"cronjob/cj\",\"spec\",\"c, h\",\"hi\",\"60m\",3,\"e\"]");
    /* a new-style event: eventTime, series, reporting fields; a bare one */
    CHECK_STR_EQ(
        row(t, "{\"metadata\":{\"name\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\"},"
               "\"eventTime\":\"2023-01-02T03:03:05.123456Z\",\"reportingComponent\":\"rc\","
               "\"series\":{\"count\":4,\"lastObservedTime\":\"2023-01-02T03:04:00.000000Z\"}}"),
        "[\"5s\",\"\",\"\",\"pod\",\"\",\"rc\",\"\",\"59s\",4,\"e\"]");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"e\"}}"),
                 "[\"<unknown>\",\"\",\"\",\"\",\"\",\"\",\"\",\"<unknown>\",1,\"e\"]");
    kapi_registry_free(reg);
}

TEST(registry_printer_default_table)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "apiextensions.k8s.io", "customresourcedefinitions");
    CHECK(t->default_table);
    CHECK_INT_EQ(t->ncolumns, 2);
    CHECK_STR_EQ(t->columns[1].name, "Created At");
    CHECK_STR_EQ(t->columns[1].type, "date");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"x\",\"creationTimestamp\":"
                        "\"2023-01-02T04:04:05+01:00\"}}"),
                 "[\"x\",\"2023-01-02T03:04:05Z\"]");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"x\"}}"), "[\"x\",\"0001-01-01T00:00:00Z\"]");
    kapi_registry_free(reg);
}

/* RoleBinding and ClusterRoleBinding: the role as Kind/name, then the subjects of each
 * kind in their order (a ServiceAccount as namespace/name, its namespace possibly empty);
 * a subject of another kind shows nowhere. Roles have kube's default table. */
TEST(registry_printer_rbac)
{
    static const char *const plurals[] = {"rolebindings", "clusterrolebindings"};
    kapi_registry *reg;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(plurals); i++) {
        const kapi_type *t = builtin(&reg, "rbac.authorization.k8s.io", plurals[i]);
        CHECK_INT_EQ(t->ncolumns, 6);
        CHECK_INT_EQ(t->columns[3].priority, 1);
        CHECK_STR_EQ(
            row(t, "{\"metadata\":{\"name\":\"b\",\"creationTimestamp\":\"2023-01-02T03:03:05Z\"},"
                   "\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"},{\"kind\":"
                   "\"ServiceAccount\",\"name\":\"sa\",\"namespace\":\"ci\"},{\"kind\":\"Robot\","
                   "\"name\":\"r\"},{\"kind\":\"User\",\"name\":\"bob\"},{\"kind\":"
                   "\"ServiceAccount\",\"name\":\"default\"}],\"roleRef\":{\"kind\":\"Role\","
                   "\"name\":\"reader\"}}"),
            "[\"b\",\"Role/reader\",\"60s\",\"alice, bob\",\"\",\"ci/sa, /default\"]");
        CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"b\"}}"),
                     "[\"b\",\"/\",\"<unknown>\",\"\",\"\",\"\"]");
        kapi_registry_free(reg);
    }
    const kapi_type *t = builtin(&reg, "rbac.authorization.k8s.io", "clusterroles");
    CHECK(t->default_table);
    kapi_registry_free(reg);
}

TEST(registry_printer_custom_resource_columns)
{
    kapi_type t;
    memset(&t, 0, sizeof(t));
    t.def = json_object();
    const char *apc = "[{\"name\":\"Size\",\"type\":\"string\",\"jsonPath\":\".spec.size\","
                      "\"description\":\"the size\"},{\"name\":\"Tags\",\"type\":\"string\","
                      "\"jsonPath\":\".spec.tags\",\"priority\":1}]";
    json_object_set_new(t.def, "printerColumns", kapi_json_parse(apc, strlen(apc), NULL));
    CHECK(kapi_registry__load_columns(&t, "w", t.def) == NULL);
    CHECK_INT_EQ(t.ncolumns, 3);
    CHECK_STR_EQ(t.columns[0].name, "Name");
    CHECK_STR_EQ(t.columns[0].format, "name");
    CHECK_STR_EQ(t.columns[1].description, "the size");
    CHECK_INT_EQ(t.columns[2].priority, 1);
    CHECK_STR_EQ(row(&t, "{\"metadata\":{\"name\":\"w1\"},\"spec\":{\"tags\":[\"a\",\"b\"]}}"),
                 "[\"w1\",null,\"[\\\"a\\\",\\\"b\\\"]\"]");
    unload(&t);
    /* no additionalPrinterColumns: Name and Age */
    memset(&t, 0, sizeof(t));
    t.def = json_object();
    CHECK(kapi_registry__load_columns(&t, "w", t.def) == NULL);
    CHECK(!t.default_table);
    CHECK_INT_EQ(t.ncolumns, 2);
    CHECK_STR_EQ(t.columns[1].name, "Age");
    CHECK_STR_EQ(t.columns[1].type, "date");
    CHECK_STR_EQ(row(&t, "{\"metadata\":{\"name\":\"w1\",\"creationTimestamp\":"
                         "\"2023-01-02T03:00:05Z\"}}"),
                 "[\"w1\",\"4m\"]");
    unload(&t);
}

TEST(registry_printer_serviceaccount)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "", "serviceaccounts");
    CHECK_STR_EQ(row(t,
                     "{\"metadata\":{\"name\":\"robot\",\"creationTimestamp\":"
                     "\"2023-01-02T03:04:00Z\"},\"secrets\":[{\"name\":\"a\"},{\"name\":\"b\"}]}"),
                 "[\"robot\",2,\"5s\"]");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"default\",\"creationTimestamp\":"
                        "\"2023-01-02T03:04:00Z\"}}"),
                 "[\"default\",0,\"5s\"]");
    kapi_registry_free(reg);
}

/* Lease: kube's coordination printer, Name, Holder (empty when nobody holds it) and Age. */
TEST(registry_printer_lease)
{
    kapi_registry *reg;
    const kapi_type *t = builtin(&reg, "coordination.k8s.io", "leases");
    CHECK(!t->default_table);
    CHECK_INT_EQ(t->ncolumns, 3);
    CHECK_STR_EQ(t->columns[1].name, "Holder");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"kube-controller-manager\",\"creationTimestamp\":"
                        "\"2023-01-02T03:04:00Z\"},\"spec\":{\"holderIdentity\":\"host_1\","
                        "\"leaseDurationSeconds\":15}}"),
                 "[\"kube-controller-manager\",\"host_1\",\"5s\"]");
    CHECK_STR_EQ(row(t, "{\"metadata\":{\"name\":\"free\",\"creationTimestamp\":"
                        "\"2023-01-02T03:04:00Z\"},\"spec\":{}}"),
                 "[\"free\",\"\",\"5s\"]");
    kapi_registry_free(reg);
}
