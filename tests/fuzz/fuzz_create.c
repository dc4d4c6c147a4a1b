/*
 * fuzz_create: a create body of every stored built-in type, through the api's own create
 * path: decoded (JSON, YAML or protobuf) and checked against the type's schema, defaulted,
 * validated and encoded for storage (kapi_api__decode_object, kapi_api__write of a create
 * with dryRun), then written back as the client reads it (JSON, YAML, Table cells), and
 * validated again as an update of itself. What would be stored must parse again.
 *
 * The first byte picks: bits 0-2 and 7 the type (fuzz_stored_type: sixteen picks for the
 * fourteen types), bits 3-4 the Content-Type, bits 5-6 fieldValidation. The rest is the
 * body.
 */
#include "codec/protobuf.h"
#include "codec/yaml.h"
#include "fuzz.h"

static const char *const content_types[] = {"application/json", KAPI_YAML_MEDIA_TYPE,
                                            KAPI_PROTOBUF_MEDIA_TYPE, "application/json"};
static const char *const validations[] = {"dryRun=All", "dryRun=All&fieldValidation=Strict",
                                          "dryRun=All&fieldValidation=Ignore",
                                          "dryRun=All&fieldValidation=Warn"};

/* The object as it would be stored must read back: every later write parses it. */
static void reads_back(const json_t *stored)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, stored);
    char *why = NULL;
    json_t *again = kapi_json_parse(b.ptr, b.len, &why);
    if (!again) {
        fprintf(stderr, "a stored object does not parse again: %s\n%s\n", why, b.ptr);
        abort();
    }
    json_decref(again);
    kapi_buf_dispose(&b);
}

/* The dry-run result as a get answers it: JSON, YAML and a Table row. */
static void encode_answer(const kapi_type *t, json_t *stored)
{
    reads_back(stored);
    json_t *v = json_incref(stored);
    kapi_error_free(kapi_type_from_storage(t, &v, 1)); /* built-in types': cannot fail */
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, v);
    kapi_yaml_encode(&b, v);
    json_decref(kapi_type_table_cells(t, v, kapi_time_now_ns()));
    kapi_buf_dispose(&b);
    json_decref(v);
}

/* The same body as an update of the object it created. */
static void update_of(fuzz_req *f, const json_t *old)
{
    json_t *obj = NULL;
    kapi_write_opts opts = {.dry_run = true};
    kapi_error *err = kapi_api__decode_object(&f->r, &opts, &obj);
    if (!err) {
        kapi_type_prepare_update(f->r.type, obj, old);
        err = kapi_type_validate(f->r.type, obj, old);
    }
    fuzz_status(err);
    json_decref(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    kapi_api *api = fuzz_api();
    const kapi_type *t = fuzz_stored_type((data[0] & 7) | (data[0] >> 7) << 3);
    fuzz_req f;
    fuzz_req_init(&f, "POST", KAPI_STR("/"), kapi_str_c(validations[(data[0] >> 5) & 3]),
                  content_types[(data[0] >> 3) & 3], NULL, data + 1, size - 1);
    f.r.api = api;
    f.r.type = t;
    f.r.info.verb = "create";
    kapi_error *err = kapi_api__parse_request(&f.r);
    kapi_write_opts opts;
    kapi_write w;
    json_t *dry = NULL;
    if (!err)
        err = kapi_api__write_options(&f.r, "CreateOptions", false, &opts);
    f.r.info.ns = t->namespaced ? KAPI_STR("default") : KAPI_STR("");
    kapi_api__write_init(&w, &f.r, KAPI_WRITE_CREATE);
    w.dry_run = true;
    if (!err)
        err = kapi_api__decode_object(&f.r, &opts, &w.obj);
    if (!err && (err = kapi_api__write(&w)) == NULL)
        dry = w.unstored;
    if (!err) {
        encode_answer(t, dry);
        update_of(&f, dry);
    }
    fuzz_status(err);
    json_decref(dry);
    fuzz_req_dispose(&f);
    return 0;
}
