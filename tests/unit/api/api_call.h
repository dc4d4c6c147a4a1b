/*
 * api_call: requests to an api_env server as the api unit tests make them: one request
 * per connection, its answer parsed; and a watch read event by event.
 */
#ifndef KAPI_TEST_API_CALL_H
#define KAPI_TEST_API_CALL_H

#include "api_env.h"

typedef struct api_answer {
    int status;
    kapi_buf head; /* status line and headers */
    kapi_buf body; /* de-chunked */
    json_t *json;  /* the body parsed, or NULL when it is not JSON */
} api_answer;

/* Sends method path with the admin token, the extra header lines (each ending in \r\n;
 * "" for none) and body (NULL: none) on a new connection; Content-Type is
 * application/json unless headers name one. Fills *a (the caller disposes it) and returns
 * the status. */
int api_call(api_env *e, const char *method, const char *path, const char *headers,
             const char *body, api_answer *a);
/* api_call with no extra headers, for the status alone. */
int api_status(api_env *e, const char *method, const char *path, const char *body);
void api_answer_dispose(api_answer *a);
/* The string at a dotted path of the answer's JSON (NULL when absent). */
const char *api_str(const api_answer *a, const char *path);
/* The integer at a dotted path of the answer's JSON (0 when absent). */
long long api_int(const api_answer *a, const char *path);

/* A valid CronJob named name in the default namespace's view (no namespace), with
 * meta_extra (e.g. "\"labels\":{\"a\":\"b\"}", or "") added to its metadata; the
 * caller frees it. */
char *api_cronjob(const char *name, const char *meta_extra);

/* Creates the CRD of widgets.example.com/v1 (Widget, namespaced; spec.size a string, with
 * unknown fields pruned) and marks it Established, as the CRD controller would. */
void api_create_widget_crd(api_env *e);

/* A watch: the stream's events, one JSON document each, de-chunked as they come. */
typedef struct api_watch {
    http_client c;
    int status;
    kapi_buf data; /* de-chunked bytes not yet returned as events */
    bool ended;    /* the terminating chunk was read */
} api_watch;

/* Starts a watch (GET path, which holds watch=1) and reads its response head. */
void api_watch_open(api_env *e, const char *path, api_watch *w);
/* The next event (a reference the caller owns), or NULL when the stream ended, or nothing
 * came for 5 s. */
json_t *api_watch_next(api_watch *w);
void api_watch_close(api_watch *w);
/* The event's type ("ADDED", ...) and a string at a dotted path of its object. */
const char *api_event_type(const json_t *ev);
const char *api_event_str(const json_t *ev, const char *path);

#endif
