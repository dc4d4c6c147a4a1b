/*
 * fuzz_json: kapi_json_parse's fast path (codec/json_parse.c) against jansson's json_loadb,
 * which it stands in for. Whenever the fast path returns a value, jansson must return the
 * same tree (types, integer and real apart, the bits of each real, member order); whenever
 * jansson refuses a text, the fast path must have given up, unless jansson's reason is an
 * integer beyond int64, which the fast path reads as a real (json_parse.c); and it must say
 * a key repeats exactly when kapi_json_duplicates finds one. kapi_json_parse itself must
 * return jansson's tree for every text jansson reads.
 */
#include "../unit/codec/json_same.h"
#include "codec/codec_int.h"
#include "codec/json.h"
#include "fuzz.h"

static void differs(const char *what, const uint8_t *data, size_t size, const char *why)
{
    fprintf(stderr, "%s (%s) on %zu bytes: %.*s\n", what, why, size, (int)(size > 512 ? 512 : size),
            (const char *)data);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    const char *p = (const char *)data;
    json_error_t je;
    json_t *slow = json_loadb(p, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    bool repeats;
    json_t *fast = kapi_codec__json_parse(p, size, &repeats);
    if (fast && !slow && !strstr(je.text, "too big"))
        differs("the fast path takes what jansson refuses", data, size, je.text);
    if (fast && slow && (!json_equal(fast, slow) || !json_same(fast, slow)))
        differs("the fast path's tree is not jansson's", data, size, "");
    if (fast) {
        kapi_dups d;
        kapi_dups_init(&d);
        if (repeats != (kapi_json_duplicates(p, size, &d) > 0))
            differs("the fast path and the scan for duplicates disagree", data, size, "");
        kapi_dups_dispose(&d);
    }
    json_t *v = kapi_json_parse(p, size, NULL);
    if (slow && (!v || !json_same(v, slow)))
        differs("kapi_json_parse does not return jansson's tree", data, size, "");
    json_decref(v);
    json_decref(fast);
    json_decref(slow);
    return 0;
}
