/*
 * fuzz_stamp: the etcd backend's reading of a stored value (kapi_store__rv_place), which
 * finds where the revision goes in bytes etcd hands back, whoever wrote them. Whatever it
 * finds must lie inside the bytes, between the quotes of a string; the object stamped
 * there must hold the revision's digits at its rv_off.
 */
#include "fuzz.h"
#include "store/store_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    kapi_str v = {(const char *)data, size};
    size_t start = 0, end = 0;
    if (!kapi_store__rv_place(v, &start, &end))
        return 0;
    if (start == 0 || start > end || end >= size || data[start - 1] != '"' || data[end] != '"') {
        fprintf(stderr, "a resourceVersion place out of its string: [%zu, %zu) of %zu\n", start,
                end, size);
        abort();
    }
    kapi_obj *o = kapi_store__obj_new(KAPI_STR("/k"), 12345, 1, (kapi_str){v.ptr, start},
                                      (kapi_str){v.ptr + end, size - end});
    if (o->rv_off != start || o->rv_len != 5 || memcmp(o->data + o->rv_off, "12345", 5) != 0) {
        fprintf(stderr, "the revision is not where it was stamped\n");
        abort();
    }
    kapi_obj_unref(o);
    return 0;
}
