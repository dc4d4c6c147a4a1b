/* Unit tests for src/schema/field.c and meta.c: Go's rendering of values, the cause texts,
 * the 422 message, the value rules and ObjectMeta validation, with 1.26's exact words. */
#include "codec/go.h"
#include "schema/field.h"
#include "test.h"

static char *quoted(const char *s, size_t n)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_quote(&b, s, n);
    return kapi_buf_detach(&b, NULL);
}

TEST(field_go_quote)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "\"plain\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"a\nb\t", "\"a\\nb\\t\""},
        {"\x01\x7f", "\"\\x01\\x7f\""},
        {"h\xc3\xa9", "\"h\xc3\xa9\""},
        {"\xff", "\"\\xff\""},
        {"\xc2\x85", "\"\\u0085\""},
        {"\xe2\x80\x8b", "\"\\u200b\""},
        /* format characters past the BMP, and the tag block: not printable in Go */
        {"\xf0\x91\x82\xbd", "\"\\U000110bd\""},
        {"\xf3\xa0\x80\x81", "\"\\U000e0001\""},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        char *q = quoted(cases[i].in, strlen(cases[i].in));
        CHECK_STR_EQ(q, cases[i].out);
        free(q);
    }
}

TEST(field_go_value)
{
    static const struct {
        const char *json, *out;
    } cases[] = {
        {"\"x\"", "\"x\""},
        {"-5", "-5"},
        {"true", "true"},
        {"null", "\"null\""},
        {"1.5", "1.5"},
        {"100.0", "100"},
        {"1000000.0", "1e+06"},
        {"1234567.0", "1.234567e+06"},
        {"0.0001", "0.0001"},
        {"0.00001", "1e-05"},
        /* field.Error's fallback for other Go values: %#v */
        {"[1,\"a\"]", "[]interface {}{1, \"a\"}"},
        {"{\"b\":null,\"a\":{}}",
         "map[string]interface {}{\"a\":map[string]interface {}{}, \"b\":interface {}(nil)}"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_go_value(&b, v);
        CHECK_STR_EQ(b.ptr, cases[i].out);
        kapi_buf_dispose(&b);
        json_decref(v);
    }
}

TEST(field_gofmt)
{
    kapi_buf b;
    kapi_buf_init(&b);
    json_t *sel =
        json_loads("{\"matchLabels\":{\"b\":\"2\",\"a\":\"1\"},\"matchExpressions\":[]}", 0, NULL);
    kapi_gofmt(&b, &kapi_go_label_selector, sel);
    CHECK_STR_EQ(b.ptr, "v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"1\", \"b\":\"2\"}, "
                        "MatchExpressions:[]v1.LabelSelectorRequirement{}}");
    json_decref(sel);
    kapi_buf_clear(&b);
    kapi_gofmt_time(&b, "2024-01-02T03:04:05.120Z");
    CHECK_STR_EQ(b.ptr, "2024-01-02 03:04:05.12 +0000 UTC");
    kapi_buf_clear(&b);
    kapi_gofmt_time(&b, "2024-01-02T01:00:00+02:00");
    CHECK_STR_EQ(b.ptr, "2024-01-01 23:00:00 +0000 UTC");
    kapi_buf_clear(&b);
    kapi_gofmt_time(&b, NULL);
    CHECK_STR_EQ(b.ptr, "0001-01-01 00:00:00 +0000 UTC");
    kapi_buf_dispose(&b);
}

/* An ObjectMeta as %#v prints it: int64 bare, a metav1.Time by its GoString (the zero
 * time when absent), a *metav1.Time <nil> when absent. */
TEST(field_gofmt_object_meta)
{
    kapi_buf b;
    kapi_buf_init(&b);
    json_t *meta = json_loads("{\"name\":\"n\",\"generation\":7,\"deletionTimestamp\":"
                              "\"2024-02-29T23:59:58.5Z\",\"managedFields\":[{\"manager\":\"m\"}]}",
                              0, NULL);
    kapi_gofmt(&b, &kapi_go_object_meta, meta);
    CHECK_STR_EQ(b.ptr,
                 "v1.ObjectMeta{Name:\"n\", GenerateName:\"\", Namespace:\"\", SelfLink:\"\", "
                 "UID:\"\", ResourceVersion:\"\", Generation:7, CreationTimestamp:time.Date(1, "
                 "time.January, 1, 0, 0, 0, 0, time.UTC), DeletionTimestamp:time.Date(2024, "
                 "time.February, 29, 23, 59, 58, 500000000, time.UTC), "
                 "DeletionGracePeriodSeconds:(*int64)(nil), Labels:map[string]string(nil), "
                 "Annotations:map[string]string(nil), OwnerReferences:[]v1.OwnerReference(nil), "
                 "Finalizers:[]string(nil), ManagedFields:[]v1.ManagedFieldsEntry{"
                 "v1.ManagedFieldsEntry{Manager:\"m\", Operation:\"\", APIVersion:\"\", "
                 "Time:<nil>, FieldsType:\"\", FieldsV1:(*v1.FieldsV1)(nil), Subresource:\"\"}}}");
    json_decref(meta);
    kapi_buf_dispose(&b);
}

TEST(field_cause_texts)
{
    static const char *const valid[] = {"a", "b", NULL};
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "x");
    kapi_field_required(err, "a", NULL);
    kapi_field_required(err, "a", "why");
    kapi_field_forbidden(err, "b", "no");
    kapi_field_invalid_int(err, "c", -1, "must be greater than or equal to %d", 0);
    kapi_field_invalid_str(err, "d", "v", "%s", "");
    kapi_field_invalid_omit(err, "e", "detail");
    kapi_field_not_supported(err, "f", "z", valid);
    kapi_field_too_long(err, "g", 262144);
    kapi_field_too_many(err, "i", 5, 4);
    kapi_field_too_many(err, "j", -1, -1);
    kapi_field_duplicate(err, "k", "x");
    kapi_field_not_found(err, "l", "y", NULL);
    static const char *const want[][3] = {
        {"FieldValueRequired", "a", "Required value"},
        {"FieldValueRequired", "a", "Required value: why"},
        {"FieldValueForbidden", "b", "Forbidden: no"},
        {"FieldValueInvalid", "c", "Invalid value: -1: must be greater than or equal to 0"},
        {"FieldValueInvalid", "d", "Invalid value: \"v\""},
        {"FieldValueInvalid", "e", "Invalid value: detail"},
        {"FieldValueNotSupported", "f", "Unsupported value: \"z\": supported values: \"a\", \"b\""},
        {"FieldValueTooLong", "g", "Too long: must have at most 262144 bytes"},
        {"FieldValueTooMany", "i", "Too many: 5: must have at most 4 items"},
        {"FieldValueTooMany", "j", "Too many: has too many items"},
        {"FieldValueDuplicate", "k", "Duplicate value: \"x\""},
        {"FieldValueNotFound", "l", "Not found: \"y\""},
    };
    CHECK_INT_EQ(err->ncauses, KAPI_ARRAY_LEN(want));
    for (size_t i = 0; i < KAPI_ARRAY_LEN(want); i++) {
        CHECK_STR_EQ(err->causes[i].reason, want[i][0]);
        CHECK_STR_EQ(err->causes[i].field, want[i][1]);
        CHECK_STR_EQ(err->causes[i].message, want[i][2]);
    }
    kapi_error_free(err);
}

TEST(field_finish_invalid)
{
    kapi_error *err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "x");
    kapi_field_finish_invalid(err, "CronJob", "batch", "a\"b");
    CHECK_STR_EQ(err->message, "CronJob.batch \"a\\\"b\" is invalid");
    CHECK_INT_EQ(err->status, KAPI_STATUS_INVALID);
    kapi_field_required(err, "spec.x", NULL);
    kapi_field_finish_invalid(err, "Namespace", "", "n");
    CHECK_STR_EQ(err->message, "Namespace \"n\" is invalid: spec.x: Required value");
    kapi_field_required(err, "spec.x", NULL); /* the same text again: shown once */
    kapi_field_finish_invalid(err, "Namespace", "", "n");
    CHECK_STR_EQ(err->message, "Namespace \"n\" is invalid: spec.x: Required value");
    CHECK_INT_EQ(err->ncauses, 2);
    kapi_field_forbidden(err, "spec.y", "no");
    kapi_field_finish_invalid(err, "Namespace", "", NULL);
    CHECK_STR_EQ(err->message,
                 "Namespace \"\" is invalid: [spec.x: Required value, spec.y: Forbidden: no]");
    CHECK(err->name == NULL && err->group == NULL);
    CHECK_STR_EQ(err->kind, "Namespace");
    kapi_error_free(err);
}

/* The messages of a rule for v, joined with " | ". */
static char *rule(size_t (*fn)(const char *, const char **), const char *v)
{
    const char *msgs[KAPI_MSGS_MAX];
    size_t n = fn(v, msgs);
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        kapi_buf_printf(&b, "%s%s", i ? " | " : "", msgs[i]);
    return kapi_buf_detach(&b, NULL);
}

#define CHECK_RULE(fn, v, want)                                                                    \
    do {                                                                                           \
        char *got_ = rule(fn, v);                                                                  \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

TEST(field_value_rules)
{
    CHECK_RULE(kapi_is_dns1123_label, "my-name", "");
    CHECK_RULE(kapi_is_dns1123_subdomain, "a.b-c.d", "");
    CHECK_RULE(kapi_is_dns1123_subdomain, "a..b",
               "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
               "characters, '-' or '.', and must start and end with an alphanumeric character "
               "(e.g. 'example.com', regex used for validation is "
               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    CHECK_RULE(kapi_is_dns1035_label, "a1", "");
    CHECK_RULE(kapi_is_qualified_name, "example.com/My_Name.1", "");
    CHECK_RULE(kapi_is_qualified_name, "/x", "prefix part must be non-empty");
    CHECK_RULE(kapi_is_qualified_name, "x/",
               "name part must be non-empty | name part must consist of alphanumeric characters, "
               "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
               "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
               "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
    CHECK_RULE(kapi_is_qualified_name,
               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
               "name part must be no more than 63 characters");
    CHECK_RULE(kapi_is_label_value, "", "");
    CHECK_RULE(kapi_is_label_value, "a.b_c-d", "");
    CHECK_RULE(kapi_is_env_var_name, "..x", "must not start with '..'");
    CHECK_RULE(kapi_is_config_map_key, ".", "must not be '.'");
    CHECK_RULE(kapi_is_port_name, "-web--",
               "must not contain consecutive hyphens | must not begin or end with a hyphen");
}

TEST(field_name_rules)
{
    const char *msgs[KAPI_MSGS_MAX];
    /* generateName may end with a dash; Go masks it bug for bug ("ab-" checks "aa"). */
    CHECK_INT_EQ(kapi_name_dns_label(NULL, "ab-", true, msgs), 0);
    CHECK_INT_EQ(kapi_name_dns_label(NULL, "ab-", false, msgs), 1);
    CHECK_INT_EQ(kapi_name_dns_subdomain(NULL, "a.-", true, msgs), 0);
    CHECK_INT_EQ(kapi_name_path_segment(NULL, "..", false, msgs), 1);
    CHECK_STR_EQ(msgs[0], "may not be '..'");
    CHECK_INT_EQ(kapi_name_path_segment(NULL, "a/b%", false, msgs), 2);
    CHECK_STR_EQ(msgs[1], "may not contain '%'");
}

static kapi_error *meta_errors(const char *meta_json, const char *old_json, bool namespaced)
{
    kapi_arena a;
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "x");
    json_t *meta = json_loads(meta_json, 0, NULL), *old = NULL;
    kapi_meta_rules rules = {kapi_name_dns_subdomain, NULL, namespaced, true};
    kapi_arena_init(&a);
    if (old_json) {
        old = json_loads(old_json, 0, NULL);
        kapi_meta_validate_update(err, &a, meta, old, "metadata", true);
    } else {
        kapi_meta_validate(err, &a, meta, "metadata", &rules);
    }
    kapi_arena_dispose(&a);
    json_decref(meta);
    json_decref(old);
    return kapi_field_finish_invalid(err, "K", "", "n");
}

#define CHECK_META(meta, old, namespaced, want)                                                    \
    do {                                                                                           \
        kapi_error *e_ = meta_errors(meta, old, namespaced);                                       \
        CHECK_STR_EQ(e_->message, want);                                                           \
        kapi_error_free(e_);                                                                       \
    } while (0)

/* ValidateFieldManager reads runes as Go does: a format character outside the BMP is
 * not printable (once, by a decoder of its own, every 4-byte sequence was U+FFFD). */
TEST(field_manager_runes)
{
    CHECK_META("{\"name\":\"n\",\"managedFields\":[{\"manager\":\"m\\u0007\",\"operation\":"
               "\"Update\",\"fieldsType\":\"FieldsV1\"}]}",
               NULL, false,
               "K \"n\" is invalid: metadata.managedFields[0].manager: Invalid value: "
               "\"m\\a\": invalid character U+0007 (at position 1)");
    CHECK_META("{\"name\":\"n\",\"managedFields\":[{\"manager\":\"h\\u00e9\\udb40\\udc01\","
               "\"operation\":\"Update\",\"fieldsType\":\"FieldsV1\"}]}",
               NULL, false,
               "K \"n\" is invalid: metadata.managedFields[0].manager: Invalid value: "
               "\"h\u00e9\\U000e0001\": invalid character U+E0001 (at position 3)");
    CHECK_META("{\"name\":\"n\",\"managedFields\":[{\"manager\":\"\\ud83d\\ude00\",\"operation\":"
               "\"Update\",\"fieldsType\":\"FieldsV1\"}]}",
               NULL, false, "K \"n\" is invalid");
}

TEST(field_object_meta)
{
    CHECK_META("{\"name\":\"n\",\"namespace\":\"default\"}", NULL, true, "K \"n\" is invalid");
    CHECK_META("{\"namespace\":\"Bad\"}", NULL, true,
               "K \"n\" is invalid: [metadata.name: Required value: name or generateName is "
               "required, metadata.namespace: Invalid value: \"Bad\": a lowercase RFC 1123 label "
               "must consist of lower case alphanumeric characters or '-', and must start and "
               "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
               "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]");
    CHECK_META("{\"name\":\"n\",\"namespace\":\"x\"}", NULL, false,
               "K \"n\" is invalid: metadata.namespace: Forbidden: not allowed on this type");
    CHECK_META("{\"name\":\"n\",\"finalizers\":[\"orphan\",\"foregroundDeletion\"]}", NULL, false,
               "K \"n\" is invalid: metadata.finalizers: Invalid value: []string{\"orphan\", "
               "\"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both "
               "set");
    CHECK_META("{\"name\":\"n\",\"ownerReferences\":[{\"apiVersion\":\"a/b/c\",\"kind\":\"K\"},"
               "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"u\","
               "\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"P\",\"name\":\"p\","
               "\"uid\":\"u\",\"controller\":true}]}",
               NULL, false,
               "K \"n\" is invalid: [metadata.ownerReferences.apiVersion: Invalid value: "
               "\"a/b/c\": version must not be empty, metadata.ownerReferences.name: Invalid "
               "value: \"\": name must not be empty, metadata.ownerReferences.uid: Invalid value: "
               "\"\": uid must not be empty, metadata.ownerReferences: Invalid value: "
               "v1.OwnerReference{APIVersion:\"v1\", Kind:\"Event\", Name:\"e\", UID:\"u\", "
               "Controller:(*bool)(0xc000000000), BlockOwnerDeletion:(*bool)(nil)}: /v1, "
               "Kind=Event is disallowed from being an owner, metadata.ownerReferences: Invalid "
               "value: []v1.OwnerReference{v1.OwnerReference{APIVersion:\"a/b/c\", Kind:\"K\", "
               "Name:\"\", UID:\"\", Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}, "
               "v1.OwnerReference{APIVersion:\"v1\", Kind:\"Event\", Name:\"e\", UID:\"u\", "
               "Controller:(*bool)(0xc000000000), BlockOwnerDeletion:(*bool)(nil)}, "
               "v1.OwnerReference{APIVersion:\"v1\", Kind:\"P\", Name:\"p\", UID:\"u\", "
               "Controller:(*bool)(0xc000000000), BlockOwnerDeletion:(*bool)(nil)}}: Only one "
               "reference can have Controller set to true. Found \"true\" in references for "
               "Event/e and P/p]");
    CHECK_META("{\"name\":\"n\",\"managedFields\":[{\"operation\":\"Patch\",\"fieldsType\":"
               "\"FieldsV2\",\"manager\":\"a\\u0007\"}]}",
               NULL, false,
               "K \"n\" is invalid: [metadata.managedFields[0].operation: Invalid value: "
               "\"Patch\": must be `Apply` or `Update`, metadata.managedFields[0].fieldsType: "
               "Invalid value: \"FieldsV2\": must be `FieldsV1`, "
               "metadata.managedFields[0].manager: Invalid value: \"a\\a\": invalid character "
               "U+0007 (at position 1)]");
}

TEST(field_object_meta_annotations_size)
{
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "x");
    json_t *ann = json_object();
    char *big = kapi_xmalloc(256 * 1024 + 1);
    memset(big, 'v', 256 * 1024);
    big[256 * 1024] = '\0';
    json_object_set_new(ann, "k", json_string(big)); /* 1 + 262144 bytes */
    json_object_set_new(ann, "Example.COM/Key", json_string("x"));
    kapi_meta_validate_annotations(err, ann, "metadata.annotations");
    CHECK_INT_EQ(err->ncauses, 1);
    CHECK_STR_EQ(err->causes[0].message, "Too long: must have at most 262144 bytes");
    free(big);
    json_decref(ann);
    kapi_error_free(err);
}

TEST(field_object_meta_update)
{
    const char *old = "{\"name\":\"n\",\"uid\":\"u1\",\"generation\":2,\"creationTimestamp\":"
                      "\"2024-01-01T00:00:00Z\",\"deletionTimestamp\":\"2024-01-02T00:00:00Z\","
                      "\"finalizers\":[\"a.io/x\"]}";
    CHECK_META("{\"name\":\"n\",\"uid\":\"u1\",\"generation\":2,\"creationTimestamp\":"
               "\"2024-01-01T00:00:00Z\",\"deletionTimestamp\":\"2024-01-02T00:00:00Z\","
               "\"finalizers\":[\"a.io/x\"]}",
               old, false, "K \"n\" is invalid");
    CHECK_META("{\"name\":\"n\",\"uid\":\"u2\",\"generation\":1,\"creationTimestamp\":"
               "\"2024-01-01T00:00:01Z\",\"finalizers\":[\"a.io/x\",\"b.io/y\",\"a.io/z\"]}",
               old, false,
               "K \"n\" is invalid: [metadata.finalizers: Forbidden: no new finalizers can be "
               "added if the object is being deleted, found new finalizers []string{\"a.io/z\", "
               "\"b.io/y\"}, metadata.generation: Invalid value: 1: must not be decremented, "
               "metadata.uid: Invalid value: \"u2\": field is immutable, "
               "metadata.creationTimestamp: Invalid value: 2024-01-01 00:00:01 +0000 UTC: field "
               "is immutable, metadata.deletionTimestamp: Invalid value: \"null\": field is "
               "immutable]");
}
