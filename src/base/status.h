/*
 * status: kapi's one error type (DESIGN.md invariant 5).
 *
 * A failure is made where it is found, with the status it maps to, its message and its
 * field causes, and travels up unchanged; the API edge renders it as a metav1.Status.
 * Functions that can fail return a kapi_error * (NULL on success) that the caller owns:
 *
 *     kapi_error *err;
 *     if ((err = step(...)) != NULL)
 *         goto done;
 */
#ifndef KAPI_STATUS_H
#define KAPI_STATUS_H

#include "base/base.h"

/* name, HTTP code, Status.reason. UNKNOWN is metav1.StatusReasonUnknown: the 500 with no
 * reason that kube-apiserver answers for an error it did not classify (a strategic merge
 * patch's directive errors, for one); its Status body has no "reason" member. */
#define KAPI_STATUS_MAP(XX)                                                                        \
    XX(BAD_REQUEST, 400, "BadRequest")                                                             \
    XX(UNAUTHORIZED, 401, "Unauthorized")                                                          \
    XX(FORBIDDEN, 403, "Forbidden")                                                                \
    XX(NOT_FOUND, 404, "NotFound")                                                                 \
    XX(METHOD_NOT_ALLOWED, 405, "MethodNotAllowed")                                                \
    XX(NOT_ACCEPTABLE, 406, "NotAcceptable")                                                       \
    XX(ALREADY_EXISTS, 409, "AlreadyExists")                                                       \
    XX(CONFLICT, 409, "Conflict")                                                                  \
    XX(GONE, 410, "Gone")                                                                          \
    XX(EXPIRED, 410, "Expired")                                                                    \
    XX(REQUEST_ENTITY_TOO_LARGE, 413, "RequestEntityTooLarge")                                     \
    XX(UNSUPPORTED_MEDIA_TYPE, 415, "UnsupportedMediaType")                                        \
    XX(INVALID, 422, "Invalid")                                                                    \
    XX(TOO_MANY_REQUESTS, 429, "TooManyRequests")                                                  \
    XX(INTERNAL_ERROR, 500, "InternalError")                                                       \
    XX(UNKNOWN, 500, "")                                                                           \
    XX(SERVICE_UNAVAILABLE, 503, "ServiceUnavailable")                                             \
    XX(TIMEOUT, 504, "Timeout")

typedef enum kapi_status {
#define XX(name, code, reason) KAPI_STATUS_##name,
    KAPI_STATUS_MAP(XX)
#undef XX
        KAPI_STATUS__COUNT
} kapi_status;

/* The HTTP code and the Status.reason of a status. */
int kapi_status_code(kapi_status s);
const char *kapi_status_reason(kapi_status s);

/* One entry of Status.details.causes. */
typedef struct kapi_cause {
    char *reason; /* FieldValueInvalid, FieldValueRequired, ... */
    char *message;
    char *field; /* "spec.schedule"; NULL when the cause names no field */
} kapi_cause;

typedef struct kapi_error {
    kapi_status status;
    char *message;
    /* Status.details: rendered when has_details, each member only when non-NULL. */
    bool has_details;
    char *name, *group, *kind;
    kapi_cause *causes;
    size_t ncauses, causes_cap;
    int retry_after;     /* seconds; > 0 adds a Retry-After header and details.retryAfterSeconds */
    char *list_continue; /* heap; Status.metadata.continue (an expired list's fresh token) */
} kapi_error;

kapi_error *kapi_error_new(kapi_status status, const char *fmt, ...) KAPI_PRINTF(2, 3);
void kapi_error_free(kapi_error *err);
/* Sets details (name, group, kind; NULL or "" leaves a member out) and has_details. */
void kapi_error_details(kapi_error *err, const char *name, const char *group, const char *kind);
void kapi_error_add_cause(kapi_error *err, const char *reason, const char *field, const char *fmt,
                          ...) KAPI_PRINTF(4, 5);

#endif
