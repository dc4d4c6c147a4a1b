/*
 * fuzz_metrics_accept: the Accept header of GET /metrics (kapi_metrics_negotiate), any
 * bytes up to the first NUL. It must never read past the header, and must answer
 * OpenMetrics only for a header that names application/openmetrics-text.
 */
#include "fuzz.h"
#include "metrics/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    char *accept = kapi_xstrndup((const char *)data, size);
    kapi_metrics_format f = kapi_metrics_negotiate(accept);
    if (f != KAPI_METRICS_TEXT &&
        (f != KAPI_METRICS_OPENMETRICS || !strstr(accept, "application/openmetrics-text")))
        abort();
    free(accept);
    return 0;
}
