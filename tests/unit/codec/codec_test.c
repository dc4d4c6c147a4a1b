/* Data files for the codec tests. */
#include "codec_test.h"

#include "base/base.h"
#include "test.h"

static json_t *read_lines(const char *path, bool must)
{
    size_t len;
    char *text = test_slurp(path, &len);
    if (!text) {
        if (must)
            test_fail(__FILE__, __LINE__, "cannot read %s", path);
        return NULL;
    }
    json_t *rows = json_array();
    for (char *line = text, *next; line < text + len; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        if (line[0] == '#' || line[0] == '\n' || line == next)
            continue;
        json_error_t jerr;
        json_t *row = json_loadb(line, (size_t)(next - line), JSON_ALLOW_NUL, &jerr);
        if (!row)
            test_fail(__FILE__, __LINE__, "%s: %s", path, jerr.text);
        json_array_append_new(rows, row);
    }
    free(text);
    return rows;
}

json_t *codec_test_cases(const char *path)
{
    return read_lines(path, true);
}

json_t *codec_test_golden(const char *file)
{
    const char *dir = getenv("KAPI_TESTDATA");
    char *path = dir ? kapi_xprintf("%s/golden/%s", dir, file)
                     : kapi_xprintf("../shared/testdata/golden/%s", file);
    json_t *rows = read_lines(path, false);
    free(path);
    return rows;
}

const json_t *codec_test_golden_id(const json_t *rows, const char *id)
{
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *rid = json_string_value(json_object_get(row, "id"));
        if (rid && strcmp(rid, id) == 0)
            return row;
    }
    test_fail(__FILE__, __LINE__, "golden id %s not found", id);
}
