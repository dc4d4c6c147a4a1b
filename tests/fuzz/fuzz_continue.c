/*
 * fuzz_continue: continue tokens (kapi_api__decode_continue). A token is base64url of a
 * JSON object; so that the fuzzer reaches the JSON, an input whose first byte is even is
 * the token's JSON (encoded here), and one whose first byte is odd is the token as sent.
 * A token that decodes gives the key a list continues after: it must read back as the
 * same key.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    char *token = (data[0] & 1)
                      ? fuzz_strndup(data + 1, size - 1)
                      : kapi_base64_encode(data + 1, size - 1, KAPI_BASE64_URL | KAPI_BASE64_RAW);
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_str start = KAPI_STR_NULL;
    int64_t rev = 0;
    kapi_error *err = kapi_api__decode_continue(&a, token, &start, &rev);
    if (!err && start.len == 0) {
        fprintf(stderr, "a continue token decoded to no key: %s\n", token);
        abort();
    }
    fuzz_status(err);
    kapi_arena_dispose(&a);
    free(token);
    return 0;
}
