/* Helpers shared by the patch tests (patch_test.h). */
#include "patch_test.h"

#include "base/base.h"
#include "codec/json.h"
#include "test.h"

json_t *patch_test_load(const char *rel)
{
    const char *dir = getenv("KAPI_TESTDATA");
    char *path = kapi_xprintf("%s/%s", dir ? dir : "../shared/testdata", rel);
    json_error_t jerr;
    json_t *v = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!v)
        test_fail(__FILE__, __LINE__, "cannot load %s: %s", path, jerr.text);
    free(path);
    return v;
}

json_t *patch_test_json(const char *text)
{
    char *s = kapi_xstrdup(text), *err = NULL;
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_t *v = kapi_json_parse(s, strlen(s), &err);
    if (!v)
        test_fail(__FILE__, __LINE__, "bad test JSON %s: %s", text, err);
    free(s);
    return v;
}

int patch_test_same(const json_t *got, const json_t *want, const char *where)
{
    if (got && want && json_equal((json_t *)got, (json_t *)want))
        return 1;
    char *g = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    char *w = want ? json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    printf("  %s:\n    got  %s\n    want %s\n", where, g ? g : "(none)", w ? w : "(none)");
    free(g);
    free(w);
    return 0;
}
