/* Unit tests for the pod template rules (registry/validate_pod.c) through a CronJob's job
 * template, and for resource quantities (registry/quantity.c). */
#include "registry/registry_int.h"
#include "validate_cases.h"

#define CJ_BASE                                                                                    \
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"cj\","             \
    "\"namespace\":\"default\"},\"spec\":{\"schedule\":\"0 3 * * *\",\"jobTemplate\":{\"spec\":{"  \
    "\"template\":{\"spec\":{\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"main\","  \
    "\"image\":\"busybox\"}]}}}}}}"
#define CJ "CronJob.batch \"cj\" is invalid: "
#define PS "spec.jobTemplate.spec.template.spec."
#define C0 PS "containers[0]."
/* A patch of the pod spec, and one of the first container. */
#define POD(x) "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":" x "}}}}}"
#define CTR(x) POD("{\"containers\":[" x "]}")
#define MAIN(x) CTR("{\"name\":\"main\",\"image\":\"busybox\"," x "}")

static const vcase container_cases[] = {
    {"valid full container",
     MAIN("\"ports\":[{\"name\":\"http\",\"containerPort\":80}],\"env\":[{\"name\":\"A\","
          "\"value\":\"1\"},{\"name\":\"POD\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
          "\"metadata.name\"}}}],\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
          "\"requests\":{\"cpu\":\"500m\",\"memory\":\"512Mi\"}},\"livenessProbe\":{\"httpGet\":{"
          "\"port\":8080}}"),
     NULL, 0},
    {"no containers", POD("{\"containers\":[]}"), CJ PS "containers: Required value", 1},
    {"no name, no image", CTR("{\"command\":[\"x\"]}"),
     CJ "[" C0 "name: Required value, " C0 "image: Required value]", 2},
    {"name not a label", CTR("{\"name\":\"Main\",\"image\":\"x\"}"),
     CJ C0 "name: Invalid value: \"Main\": " LABEL_MSG, 1},
    {"duplicate names", CTR("{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"a\",\"image\":\"y\"}"),
     CJ PS "containers[1].name: Duplicate value: \"a\"", 1},
    {"ports",
     MAIN("\"ports\":[{\"containerPort\":0},{\"containerPort\":70000,\"protocol\":\"ICMP\"},"
          "{\"name\":\"Web\",\"containerPort\":1}]"),
     CJ "[" C0 "ports[0].containerPort: Required value, " C0
        "ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive, " C0
        "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", "
        "\"UDP\", " C0 "ports[2].name: Invalid value: \"Web\": must contain only alpha-numeric "
        "characters (a-z, 0-9), and hyphens (-)]",
     4},
    {"host port conflict",
     CTR("{\"name\":\"a\",\"image\":\"x\",\"ports\":[{\"containerPort\":80,\"hostPort\":80}]},"
         "{\"name\":\"b\",\"image\":\"x\",\"ports\":[{\"containerPort\":81,\"hostPort\":80}]}"),
     CJ PS "containers[1].ports[0].hostPort: Duplicate value: \"TCP//80\"", 1},
    {"env",
     MAIN("\"env\":[{\"name\":\"1X\"},{\"name\":\"B\",\"valueFrom\":{}},{\"name\":\"C\","
          "\"value\":\"v\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}},"
          "{\"name\":\"D\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.restartPolicy\"}}},"
          "{\"name\":\"E\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.foo\"}}}]"),
     CJ "[" C0 "env[0].name: Invalid value: \"1X\": a valid environment variable name must "
        "consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a "
        "digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
        "validation is '[-._a-zA-Z][-._a-zA-Z0-9]*'), " C0
        "env[1].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, "
        "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`, " C0
        "env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty, " C0
        "env[3].valueFrom.fieldRef.fieldPath: Unsupported value: \"spec.restartPolicy\": "
        "supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", "
        "\"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.podIP\", "
        "\"status.podIPs\", " C0 "env[4].valueFrom.fieldRef.fieldPath: Invalid value: "
        "\"spec.foo\": error converting fieldPath: field label not supported: spec.foo]",
     5},
    {"pull and termination message policies",
     MAIN("\"imagePullPolicy\":\"Sometimes\",\"terminationMessagePolicy\":\"Never\""),
     CJ "[" C0 "terminationMessagePolicy: Unsupported value: \"Never\": supported values: "
        "\"File\", \"FallbackToLogsOnError\", " C0 "imagePullPolicy: Unsupported value: "
        "\"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"]",
     2},
    {"resources",
     MAIN("\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"-1\",\"foo\":\"1\"},"
          "\"requests\":{\"cpu\":\"2000m\",\"example.com/gpu\":\"1\"}}"),
     CJ "[" C0 "resources.limits[foo]: Invalid value: \"foo\": must be a standard resource type "
        "or fully qualified, " C0 "resources.limits[foo]: Invalid value: \"foo\": must be a "
        "standard resource for containers, " C0 "resources.limits[memory]: Invalid value: "
        "\"-1\": must be greater than or equal to 0, " C0 "resources.requests: Invalid value: "
        "\"2\": must be less than or equal to cpu limit, " C0 "resources.limits: Required value: "
        "Limit must be set for non overcommitable resources]",
     5},
    {"probes",
     MAIN("\"livenessProbe\":{\"successThreshold\":2,\"exec\":{}},\"readinessProbe\":{"
          "\"httpGet\":{\"port\":0},\"tcpSocket\":{\"port\":1},\"periodSeconds\":-1}"),
     CJ "[" C0 "livenessProbe.exec.command: Required value, " C0
        "livenessProbe.successThreshold: Invalid value: 2: must be 1, " C0
        "readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive, " C0
        "readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type, " C0
        "readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0]",
     5},
    {"init containers",
     POD("{\"containers\":[{\"name\":\"main\",\"image\":\"x\"}],\"initContainers\":[{\"name\":"
         "\"main\",\"image\":\"x\",\"livenessProbe\":{\"exec\":{\"command\":[\"x\"]}}}]}"),
     CJ "[" PS "initContainers[0].name: Duplicate value: \"main\", " PS
        "initContainers[0].livenessProbe: Forbidden: may not be set for init containers]",
     2},
};

TEST(validate_pod_containers)
{
    vcase_run("batch", "v1", "cronjobs", CJ_BASE, NULL, container_cases,
              KAPI_ARRAY_LEN(container_cases));
}

static const vcase volume_cases[] = {
    {"valid volumes",
     POD("{\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}},{\"name\":\"conf\",\"configMap\":{"
         "\"name\":\"c\"}}],\"containers\":[{\"name\":\"main\",\"image\":\"x\",\"volumeMounts\":[{"
         "\"name\":\"data\",\"mountPath\":\"/data\"}]}]}"),
     NULL, 0},
    {"volume sources",
     POD("{\"volumes\":[{\"name\":\"a\"},{\"name\":\"b\",\"emptyDir\":{},\"hostPath\":{\"path\":"
         "\"/x\"}},{\"name\":\"c\",\"secret\":{}},{\"name\":\"c\",\"emptyDir\":{}},{\"name\":"
         "\"D\",\"hostPath\":{\"path\":\"/a/../b\"}}]}"),
     CJ "[" PS "volumes[0]: Required value: must specify a volume type, " PS
        "volumes[1].hostPath: Forbidden: may not specify more than 1 volume type, " PS
        "volumes[2].secret.secretName: Required value, " PS
        "volumes[4].hostPath.path: Invalid value: \"/a/../b\": must not contain '..', " PS
        "volumes[4].name: Invalid value: \"D\": " LABEL_MSG "]",
     5},
    {"mounts",
     MAIN("\"volumeMounts\":[{\"name\":\"nope\",\"mountPath\":\"/a\"},{\"name\":\"nope\","
          "\"mountPath\":\"/a\"}]"),
     CJ "[" C0 "volumeMounts[0].name: Not found: \"nope\", " C0
        "volumeMounts[1].name: Not found: \"nope\", " C0
        "volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique]",
     3},
};

TEST(validate_pod_volumes)
{
    vcase_run("batch", "v1", "cronjobs", CJ_BASE, NULL, volume_cases, KAPI_ARRAY_LEN(volume_cases));
}

static const vcase spec_cases[] = {
    {"pod spec fields",
     POD("{\"dnsPolicy\":\"Bogus\",\"activeDeadlineSeconds\":0,\"hostname\":\"Host\","
         "\"nodeSelector\":{\"a/b/c\":\"x\"},\"serviceAccountName\":\"Bad_SA\","
         "\"preemptionPolicy\":\"Sometimes\"}"),
     CJ "[" PS "dnsPolicy: Unsupported value: \"Bogus\": supported values: "
        "\"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\", " PS
        "nodeSelector: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
        "'/' (e.g. 'example.com/MyName'), " PS
        "serviceAccountName: Invalid value: \"Bad_SA\": " SUBDOMAIN_MSG ", " PS
        "activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive, " PS
        "hostname: Invalid value: \"Host\": " LABEL_MSG ", " PS
        "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: "
        "\"PreemptLowerPriority\", \"Never\"]",
     6},
    {"tolerations",
     POD("{\"tolerations\":[{\"operator\":\"Equal\"},{\"key\":\"k\",\"operator\":\"Exists\","
         "\"value\":\"v\"},{\"key\":\"k\",\"effect\":\"Sometimes\",\"tolerationSeconds\":5}]}"),
     CJ "[" PS "tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when "
        "`key` is empty, which means \"match all values and all keys\", " PS
        "tolerations[1].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", "
        "Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when "
        "`operator` is 'Exists', " PS "tolerations[2].effect: Invalid value: \"Sometimes\": "
        "effect must be 'NoExecute' when `tolerationSeconds` is set, " PS
        "tolerations[2].effect: Unsupported value: \"Sometimes\": supported values: "
        "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"]",
     4},
    {"template labels and ephemeral containers",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":"
     "\"bad value\"}},\"spec\":{\"ephemeralContainers\":[{\"name\":\"e\"}]}}}}}}",
     CJ "[spec.jobTemplate.spec.template.labels: Invalid value: \"bad value\": " LABEL_VALUE_MSG
        ", " PS "ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template]",
     2},
};

TEST(validate_pod_spec)
{
    vcase_run("batch", "v1", "cronjobs", CJ_BASE, NULL, spec_cases, KAPI_ARRAY_LEN(spec_cases));
}

TEST(quantity_canonical_text)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"1000m", "1"},     {"1.5", "1500m"},       {"1536", "1536"},   {"1.5Ki", "1536"},
        {"1Gi", "1Gi"},     {"2048Ki", "2Mi"},      {"0.5Gi", "512Mi"}, {"1.5Gi", "1536Mi"},
        {"1e3", "1e3"},     {"100M", "100M"},       {"12000", "12k"},   {"0.1", "100m"},
        {"1n", "1n"},       {"0.0000000001", "1n"}, {"-1", "-1"},       {"0", "0"},
        {"512Ki", "512Ki"}, {"0.5Ki", "512"},       {"+5", "5"},        {"1.1", "1100m"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_quantity q;
        kapi_buf b;
        CHECK(kapi_quantity_parse(&q, cases[i].in));
        kapi_buf_init(&b);
        kapi_quantity_format(&b, &q);
        CHECK_STR_EQ(b.ptr, cases[i].out);
        kapi_buf_dispose(&b);
    }
    static const char *const bad[] = {"", "abc", "1.2.3", "1Qi", "1e", "--1", "1 Gi"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(bad); i++) {
        kapi_quantity q;
        CHECK(!kapi_quantity_parse(&q, bad[i]));
    }
    kapi_quantity a, b;
    CHECK(kapi_quantity_parse(&a, "1Gi") && kapi_quantity_parse(&b, "1000M"));
    CHECK_INT_EQ(kapi_quantity_cmp(&a, &b), 1);
    CHECK(kapi_quantity_parse(&a, "500m") && kapi_quantity_parse(&b, "0.5"));
    CHECK_INT_EQ(kapi_quantity_cmp(&a, &b), 0);
}
