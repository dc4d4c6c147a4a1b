/*
 * fuzz_cel: CEL sources (src/cel), as a CRD's x-kubernetes-validations rule brings them:
 * lexed and parsed with macros expanded, the tree written out as text, or the errors
 * shown as cel-go shows them. No input may crash, trip a sanitizer or leak; a source
 * that parses has no errors, and one that does not has at least one.
 */
#include "cel/cel.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    const char *src = (const char *)data;
    kapi_cel_ast *a = kapi_cel_parse(src, size);
    kapi_buf b;
    kapi_buf_init(&b);
    if ((a->root != NULL) == (a->nissues != 0))
        abort();
    if (a->root)
        kapi_cel_debug(&b, a->root);
    else
        kapi_cel_issues_text(&b, a, src, size);
    kapi_buf_dispose(&b);
    kapi_cel_ast_free(a);
    return 0;
}
