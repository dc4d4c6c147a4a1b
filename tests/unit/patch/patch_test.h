/* Helpers shared by the patch tests: suite files read at run time, JSON literals. */
#ifndef KAPI_PATCH_TEST_H
#define KAPI_PATCH_TEST_H

#include <jansson.h>

/* The JSON file rel under ../shared/testdata ($KAPI_TESTDATA overrides the directory);
 * a missing or broken file fails the test. */
json_t *patch_test_load(const char *rel);
/* The JSON of a test literal written with ' for " ("{'a':1}"); broken JSON fails the test. */
json_t *patch_test_json(const char *text);
/* Whether a equals b as JSON values (object member order aside); on a difference prints
 * both, prefixed with where. */
int patch_test_same(const json_t *got, const json_t *want, const char *where);

#endif
