#include "webhook/webhook.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/json.h"

/* The idle handles kept: each keeps its connections open for the next call. */
#define POOL 8

struct kapi_webhook {
    pthread_mutex_t mu;
    CURL *idle[POOL];
    size_t nidle;
    struct curl_slist *resolve; /* the --webhook-resolve entries */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

kapi_webhook *kapi_webhook_new(void)
{
    pthread_once(&global_once, global_init);
    kapi_webhook *w = kapi_xcalloc(1, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    return w;
}

void kapi_webhook_free(kapi_webhook *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nidle; i++)
        curl_easy_cleanup(w->idle[i]);
    curl_slist_free_all(w->resolve);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

bool kapi_webhook_resolve_valid(const char *entry)
{
    /* HOST:PORT:ADDRESS, the port a number, the address not empty */
    const char *colon = strchr(entry, ':');
    if (!colon || colon == entry)
        return false;
    const char *p = colon + 1;
    size_t digits = strspn(p, "0123456789");
    return digits > 0 && digits <= 5 && p[digits] == ':' && p[digits + 1] && atoi(p) <= 65535;
}

void kapi_webhook_resolve(kapi_webhook *w, const char *entry)
{
    w->resolve = curl_slist_append(w->resolve, entry);
}

char *kapi_webhook_url(const json_t *cfg)
{
    const char *url = kapi_json_path_str(cfg, "url");
    if (url)
        return kapi_xstrdup(url);
    const json_t *svc = json_object_get(cfg, "service");
    if (!json_is_object(svc))
        return NULL;
    const json_t *port = json_object_get(svc, "port");
    return kapi_xprintf("https://%s.%s.svc:%lld%s", kapi_json_path_str(svc, "name") ?: "",
                        kapi_json_path_str(svc, "namespace") ?: "",
                        json_is_integer(port) ? (long long)json_integer_value(port) : 443LL,
                        kapi_json_path_str(svc, "path") ?: "");
}

static CURL *take(kapi_webhook *w)
{
    CURL *c = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->nidle)
        c = w->idle[--w->nidle];
    pthread_mutex_unlock(&w->mu);
    if (c) {
        curl_easy_reset(c);
        return c;
    }
    return curl_easy_init();
}

static void give_back(kapi_webhook *w, CURL *c)
{
    pthread_mutex_lock(&w->mu);
    if (w->nidle < POOL) {
        w->idle[w->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    if (c)
        curl_easy_cleanup(c);
}

/* The answer's body, bounded. */
static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    kapi_buf *b = ctx;
    if (b->len + n * size > KAPI_WEBHOOK_MAX_ANSWER)
        return 0; /* fails the transfer: CURLE_WRITE_ERROR */
    kapi_buf_put(b, p, n * size);
    return n * size;
}

/* The text of an errno as Go's syscall.Errno gives it: strerror's, lowercased first. */
static void put_errno(kapi_buf *b, long e)
{
    size_t at = b->len;
    kapi_buf_puts(b, e ? strerror((int)e) : "connection refused");
    b->ptr[at] = (char)tolower((unsigned char)b->ptr[at]);
}

/* The host of url (between "://" and the port or path), and its port (443 when it
 * names none). */
static kapi_str url_host(const char *url, long *port)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = *h == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/?#");
    *port = h[n] == ':' ? strtol(h + n + 1, NULL, 10) : 443;
    return (kapi_str){h, n};
}

/* Why a call failed, as Go's http client says it after "Post \"<url>\": ". */
static void explain(kapi_buf *why, CURL *c, CURLcode rc, const char *url, const char *detail)
{
    char *ip = NULL;
    long port, os_errno = 0;
    kapi_str host = url_host(url, &port);
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
        kapi_buf_printf(why, "dial tcp: lookup %.*s: no such host", KAPI_STR_FMT(host));
        break;
    case CURLE_COULDNT_CONNECT:
        curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &ip);
        curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
        if (ip && *ip)
            kapi_buf_printf(
                why,
                strchr(ip, ':') ? "dial tcp [%s]:%ld: connect: " : "dial tcp %s:%ld: connect: ", ip,
                port);
        else
            kapi_buf_printf(why, "dial tcp %.*s:%ld: connect: ", KAPI_STR_FMT(host), port);
        put_errno(why, os_errno);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        kapi_buf_puts(why, "net/http: request canceled (Client.Timeout exceeded while awaiting "
                           "headers)");
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
        if (strstr(detail, "subject name") || strstr(detail, "host name"))
            kapi_buf_printf(why, "x509: certificate is not valid for %.*s", KAPI_STR_FMT(host));
        else
            kapi_buf_puts(why, "x509: certificate signed by unknown authority");
        break;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        kapi_buf_puts(why, "EOF");
        break;
    case CURLE_WRITE_ERROR:
        kapi_buf_printf(why, "the answer is longer than %u bytes", KAPI_WEBHOOK_MAX_ANSWER);
        break;
    case CURLE_UNSUPPORTED_PROTOCOL:
        kapi_buf_puts(why, "unsupported protocol scheme");
        break;
    default:
        kapi_buf_puts(why, *detail ? detail : curl_easy_strerror(rc));
        break;
    }
}

/* Go's time.Duration text of whole seconds. */
static void put_duration(kapi_buf *b, int s)
{
    if (s >= 3600)
        kapi_buf_printf(b, "%dh%dm%ds", s / 3600, s / 60 % 60, s % 60);
    else if (s >= 60)
        kapi_buf_printf(b, "%dm%ds", s / 60, s % 60);
    else
        kapi_buf_printf(b, "%ds", s);
}

bool kapi_webhook_post(kapi_webhook *w, const json_t *cfg, int timeout_s, const char *body,
                       size_t len, kapi_webhook_answer *answer, kapi_buf *why)
{
    char *base = kapi_webhook_url(cfg);
    if (!base) {
        kapi_buf_puts(why, "the webhook has neither url nor service");
        return false;
    }
    kapi_buf url, ca;
    kapi_buf_init(&url);
    kapi_buf_init(&ca);
    kapi_buf_printf(&url, "%s?timeout=", base);
    put_duration(&url, timeout_s);
    free(base);
    const char *bundle = kapi_json_path_str(cfg, "caBundle");
    if (bundle && *bundle &&
        kapi_base64_decode(bundle, strlen(bundle), KAPI_BASE64_STD, &ca) >= 0) {
        kapi_buf_printf(why, "Post \"%s\": invalid caBundle", url.ptr);
        kapi_buf_dispose(&url);
        kapi_buf_dispose(&ca);
        return false;
    }
    CURL *c = take(w);
    char detail[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json, */*");
    curl_easy_setopt(c, CURLOPT_URL, url.ptr);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kube-apiserver-admission");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_s * 1000);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer->body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    if (w->resolve)
        curl_easy_setopt(c, CURLOPT_RESOLVE, w->resolve);
    if (ca.len) {
        /* the bundle alone, as Go's client trusts only the roots it is given */
        struct curl_blob blob = {ca.ptr, ca.len, CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
        curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) {
        char *type = NULL;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer->status);
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
        answer->text = type && strncasecmp(type, "text/", 5) == 0;
    } else {
        kapi_buf_printf(why, "Post \"%s\": ", url.ptr);
        explain(why, c, rc, url.ptr, detail);
    }
    curl_slist_free_all(headers);
    give_back(w, c);
    kapi_buf_dispose(&url);
    kapi_buf_dispose(&ca);
    return rc == CURLE_OK;
}
