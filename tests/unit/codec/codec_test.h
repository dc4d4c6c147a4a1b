/* Helpers shared by the codec tests: data files read at run time. */
#ifndef KAPI_CODEC_TEST_H
#define KAPI_CODEC_TEST_H

#include <jansson.h>

/* The cases of a JSON-lines file (one object per line; '#' lines are comments), as an
 * array; a missing or broken file fails the test. */
json_t *codec_test_cases(const char *path);
/* The recorded responses (or requests) of the golden corpus, from $KAPI_TESTDATA/golden,
 * else ../shared/testdata/golden; NULL when the corpus is not there. */
json_t *codec_test_golden(const char *file);
/* The entry of a golden file with this id; fails the test when absent. */
const json_t *codec_test_golden_id(const json_t *rows, const char *id);

#endif
