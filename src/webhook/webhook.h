/*
 * webhook: the HTTPS client kapi calls webhooks with, as kube-apiserver's webhook client
 * manager calls them (k8s.io/apiserver/pkg/util/webhook). A webhook is named by a
 * WebhookClientConfig:
 *
 *   - url: called as it is (https only; kube's validation refuses the rest);
 *   - service {namespace, name, port (443), path}: called at
 *     https://<name>.<namespace>.svc:<port><path>. kapi runs no Services, so that name is
 *     resolved by the system (/etc/hosts) or by an entry of kapi_webhook_resolve
 *     (kapi's --webhook-resolve flag);
 *   - caBundle (base64 of PEM): the roots the server's certificate is verified with, else
 *     the system's; the name verified is the URL's host.
 *
 * A call POSTs a JSON body with a deadline (the timeout is also sent as the URL's
 * ?timeout= as client-go sends it) and gives back the status and body of the answer, or
 * the failure in the words of Go's http client ("Post \"https://...\": dial tcp
 * 127.0.0.1:9443: connect: connection refused"), which kube-apiserver puts in its errors.
 *
 * libcurl (OpenSSL flavour) does the HTTP and TLS: see DESIGN.md "Webhooks" for why.
 * Connections are kept for reuse in a small pool of handles. Thread-safe: any number of
 * threads may call at once; each call blocks its thread until the answer or the deadline.
 */
#ifndef KAPI_WEBHOOK_H
#define KAPI_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"

typedef struct kapi_webhook kapi_webhook;

/* The most a webhook's answer may hold; a longer one fails the call. */
#define KAPI_WEBHOOK_MAX_ANSWER (256u << 20)

kapi_webhook *kapi_webhook_new(void);
void kapi_webhook_free(kapi_webhook *w);

/* True when entry is of the form "HOST:PORT:ADDRESS" (an IPv6 address in brackets). */
bool kapi_webhook_resolve_valid(const char *entry);
/* Makes HOST:PORT reach ADDRESS, as curl's --resolve, for a valid entry. Only before the
 * first call. */
void kapi_webhook_resolve(kapi_webhook *w, const char *entry);

/* The URL a WebhookClientConfig names (a heap string), or NULL when it names none. */
char *kapi_webhook_url(const json_t *client_config);

/* What a webhook answered. */
typedef struct kapi_webhook_answer {
    long status;
    bool text; /* its Content-Type is text/... */
    kapi_buf body;
} kapi_webhook_answer;

/* POSTs body (JSON, len bytes) to the webhook of client_config within timeout_s seconds.
 * True when it answered (into answer, whose body is initialized by the caller); false
 * when the call failed, with Go's error text in why. */
bool kapi_webhook_post(kapi_webhook *w, const json_t *client_config, int timeout_s,
                       const char *body, size_t len, kapi_webhook_answer *answer, kapi_buf *why);

#endif
