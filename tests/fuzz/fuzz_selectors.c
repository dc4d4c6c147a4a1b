/*
 * fuzz_selectors: labelSelector and fieldSelector, through the list's filter
 * (kapi_api__filter_new: both parsed, the field labels checked and rewritten for the
 * type), matched against a stored object; then the parsers alone against hand-made
 * labels and field values.
 *
 * The first byte picks the type (fuzz_stored_type); the rest is the label selector,
 * a newline, and the field selector.
 */
#include "fuzz.h"
#include "select/select.h"

/* Field values of an Event-like object for kapi_fieldsel_matches. */
static const char *event_value(void *ctx, const char *path)
{
    static char scratch[KAPI_FIELD_VALUE_SCRATCH];
    return kapi_fieldsel_value(ctx, path, scratch);
}

static void parsers_alone(const char *labels, const char *fields)
{
    static const char sample[] =
        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\",\"tier\":\"5\",\"x.io/"
        "k\":\"\"}},"
        "\"involvedObject\":{\"name\":\"p\",\"uid\":\"u\"},\"count\":3,\"reason\":\"r\"}";
    json_t *obj = json_loads(sample, 0, NULL);
    kapi_labelsel *ls = NULL;
    kapi_fieldsel *fs = NULL;
    fuzz_status(kapi_labelsel_parse(&ls, labels));
    if (ls)
        kapi_labelsel_matches(ls, kapi_json_path(obj, "metadata.labels"));
    fuzz_status(kapi_fieldsel_parse(&fs, fields));
    if (fs)
        kapi_fieldsel_matches(fs, event_value, obj);
    kapi_labelsel_free(ls);
    kapi_fieldsel_free(fs);
    json_decref(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    kapi_api *api = fuzz_api();
    char *text = fuzz_strndup(data + 1, size - 1);
    char *nl = strchr(text, '\n');
    const char *fields = "";
    if (nl) {
        *nl = '\0';
        fields = nl + 1;
    }
    kapi_query_param q[] = {{"labelSelector", text}, {"fieldSelector", fields}};
    fuzz_req f;
    fuzz_req_init(&f, "GET", KAPI_STR("/"), KAPI_STR(""), NULL, NULL, NULL, 0);
    f.r.api = api;
    f.r.type = fuzz_stored_type(data[0]);
    f.r.query = q;
    f.r.nquery = 2;
    kapi_filter *filter = NULL;
    kapi_error *err =
        kapi_api__filter_new(&f.r, (data[0] & 0x80) ? KAPI_STR("default") : KAPI_STR(""), &filter);
    if (!err && filter) {
        kapi_obj *o = NULL;
        if (kapi_store_get(api->store, KAPI_STR("/namespaces/default"), &o) == KAPI_STORE_OK) {
            kapi_api__filter_match(filter, o);
            kapi_obj_unref(o);
        }
        kapi_api__filter_free(filter);
    }
    fuzz_status(err);
    parsers_alone(text, fields);
    fuzz_req_dispose(&f);
    free(text);
    return 0;
}
