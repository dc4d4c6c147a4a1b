/* codec/json: encoding as Go's encoding/json writes what jansson holds. */
#include <string.h>

#include "codec/json.h"
#include "test.h"

TEST(codec_json_encode_key_with_nul)
{
    /* A key is written by its length: a NUL byte inside it is escaped, not an end. */
    json_t *v = json_object();
    json_object_setn_new_nocheck(v, "a\0<", 3, json_integer(1));
    json_object_set_new(v, "b", json_object());
    json_object_setn_new_nocheck(json_object_get(v, "b"), "\0", 1, json_null());
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, v);
    CHECK_STR_EQ(b.ptr, "{\"a\\u0000\\u003c\":1,\"b\":{\"\\u0000\":null}}");
    kapi_buf_dispose(&b);
    json_decref(v);
}

TEST(codec_json_encode_integers_at_the_edges)
{
    json_t *v =
        json_pack("[I,I,I,I,b,n]", (json_int_t)0, (json_int_t)-7, (json_int_t)9223372036854775807LL,
                  (json_int_t)(-9223372036854775807LL - 1), 1);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_json_encode(&b, v);
    CHECK_STR_EQ(b.ptr, "[0,-7,9223372036854775807,-9223372036854775808,true,null]");
    kapi_buf_dispose(&b);
    json_decref(v);
}
