/*
 * fuzz_yaml: YAML bodies (codec/yaml): read as kube-apiserver reads them, with their
 * repeated keys; what reads is written back as a YAML answer and as JSON, and the YAML
 * kapi writes must read again (an answer a client cannot parse is a defect) unless the
 * value has a key "<<": go-yaml v2 writes it plain, as a merge key, and so does kapi.
 */
#include "codec/yaml.h"
#include "fuzz.h"

/* True if v or anything in it is an object with the key "<<". */
static bool has_merge_key(const json_t *v)
{
    const char *key;
    json_t *m;
    size_t i;
    if (json_is_object(v) && json_object_get(v, "<<"))
        return true;
    json_object_foreach((json_t *)v, key, m)
    {
        if (has_merge_key(m))
            return true;
    }
    json_array_foreach(v, i, m)
    {
        if (has_merge_key(m))
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    json_t *v = NULL;
    kapi_dups dups;
    kapi_dups_init(&dups);
    kapi_error *err = kapi_yaml_parse((const char *)data, size, &v, &dups);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_yaml_strict_message(&b, &dups);
    if (!err) {
        kapi_buf_clear(&b);
        kapi_yaml_encode(&b, v);
        json_t *again = NULL;
        kapi_error *err2 = kapi_yaml_parse(b.ptr, b.len, &again, NULL);
        if (err2 && !has_merge_key(v)) {
            fprintf(stderr, "kapi's YAML does not read back: %s\n%s\n", err2->message, b.ptr);
            abort();
        }
        kapi_error_free(err2);
        json_decref(again);
        kapi_buf_clear(&b);
        kapi_json_encode(&b, v);
    }
    kapi_buf_dispose(&b);
    fuzz_status(err);
    json_decref(v);
    kapi_dups_dispose(&dups);
    return 0;
}
