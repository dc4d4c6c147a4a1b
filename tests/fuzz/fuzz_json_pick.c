/*
 * fuzz_json_pick: picking members of a stored object's metadata (codec/json_pick), which
 * the garbage collector does for every write, against the whole parse: for every text
 * kapi_json_parse accepts, both must give the same members; so must the pick that stops at
 * the first metadata, for every such text in which no name repeats, and so must the texts
 * of top-level members (kapi_json_member_texts), parsed.
 */
#include "codec/json.h"
#include "codec/json_pick.h"
#include "fuzz.h"

static const char *const keys[] = {"uid", "name", "finalizers", "ownerReferences", NULL};
static const char *const top[] = {"kind", "metadata", "spec", NULL};

/* The texts kapi_json_member_texts gives for top, parsed, against the members of all. */
static void check_texts(const uint8_t *data, size_t size, const json_t *all)
{
    kapi_str texts[3];
    if (!kapi_json_member_texts((const char *)data, size, top, texts))
        return;
    for (size_t i = 0; top[i]; i++) {
        const json_t *want = json_object_get(all, top[i]);
        json_t *got = texts[i].ptr ? kapi_json_parse(texts[i].ptr, texts[i].len, NULL) : NULL;
        if (!(want == NULL ? got == NULL : got && json_equal(want, got))) {
            fprintf(stderr, "the text of member %s differs from the parse's\n", top[i]);
            abort();
        }
        json_decref(got);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    json_t *got = kapi_json_pick((const char *)data, size, "metadata", keys);
    json_t *first = kapi_json_pick_unique((const char *)data, size, "metadata", keys);
    kapi_dups dups;
    kapi_dups_init(&dups);
    json_t *all = kapi_json_parse_dups((const char *)data, size, NULL, &dups);
    const json_t *meta = json_object_get(all, "metadata");
    if (json_is_object(all)) {
        json_t *want = NULL;
        if (json_is_object(meta)) {
            want = json_object();
            for (const char *const *k = keys; *k; k++)
                if (json_object_get(meta, *k))
                    json_object_set_nocheck(want, *k, json_object_get(meta, *k));
        }
        if (!(want == NULL ? got == NULL : json_equal(want, got))) {
            fprintf(stderr, "picked members differ from the parse's\n");
            abort();
        }
        if (dups.n == 0 && !(want == NULL ? first == NULL : json_equal(want, first))) {
            fprintf(stderr, "members picked at the first metadata differ from the parse's\n");
            abort();
        }
        json_decref(want);
        if (dups.n == 0)
            check_texts(data, size, all);
    }
    kapi_dups_dispose(&dups);
    json_decref(all);
    json_decref(got);
    json_decref(first);
    return 0;
}
