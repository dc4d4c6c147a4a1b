/* Whether two jansson trees are the same, more strictly than json_equal: shared by the
 * tests of kapi_json_parse's fast path (test_json_parse.c) and its fuzz target
 * (tests/fuzz/fuzz_json.c). */
#ifndef KAPI_JSON_SAME_H
#define KAPI_JSON_SAME_H

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

/* True when a and b hold the same types (integer and real apart), the same integers, the
 * same bits in each real, the same string bytes, and the same members in the same order;
 * json_equal ignores member order and compares an integer and a real as unequal only by
 * type. */
static inline bool json_same(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
        for (; ia && ib; ia = json_object_iter_next((json_t *)a, ia),
                         ib = json_object_iter_next((json_t *)b, ib)) {
            size_t n = json_object_iter_key_len(ia);
            if (n != json_object_iter_key_len(ib) ||
                memcmp(json_object_iter_key(ia), json_object_iter_key(ib), n) != 0 ||
                !json_same(json_object_iter_value(ia), json_object_iter_value(ib)))
                return false;
        }
        return !ia && !ib && json_object_size(a) == json_object_size(b);
    }
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (!json_same(json_array_get(a, i), json_array_get(b, i)))
                return false;
        }
        return true;
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_REAL: {
        double x = json_real_value(a), y = json_real_value(b);
        return memcmp(&x, &y, sizeof(x)) == 0;
    }
    default:
        return true; /* true, false, null */
    }
}

#endif
