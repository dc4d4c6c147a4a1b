#include "webhook/webhook.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dlfcn.h>
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
    char **entries; /* the --webhook-resolve entries */
    size_t nentries;
    struct curl_slist *resolve; /* the entries as libcurl takes them, made by the first call */
};

/* libcurl, loaded by the first call rather than linked: linking it maps some twenty more
 * libraries into every kapi (GnuTLS among them, whose constructor runs at start), 4.3 MB
 * of RSS and a part of the start, for a client most uses never call. */
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_reset)(CURL *c);
    void (*easy_cleanup)(CURL *c);
    CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
    CURLcode (*easy_perform)(CURL *c);
    const char *(*easy_strerror)(CURLcode rc);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} curl;
static char *curl_missing; /* why libcurl could not be loaded, or NULL */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

/* A function of the library h, or NULL (and curl_missing says which). */
static void *curl_fn(void *h, const char *name)
{
    void *f = dlsym(h, name);
    if (!f && !curl_missing)
        curl_missing = kapi_xprintf("libcurl.so.4 has no %s", name);
    return f;
}

static void curl_load(void)
{
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        curl_missing = kapi_xstrdup(e ? e : "cannot load libcurl.so.4");
        return;
    }
    /* POSIX: a function's address from dlsym is used through a function pointer. */
    *(void **)&curl.global_init = curl_fn(h, "curl_global_init");
    *(void **)&curl.easy_init = curl_fn(h, "curl_easy_init");
    *(void **)&curl.easy_reset = curl_fn(h, "curl_easy_reset");
    *(void **)&curl.easy_cleanup = curl_fn(h, "curl_easy_cleanup");
    *(void **)&curl.easy_setopt = curl_fn(h, "curl_easy_setopt");
    *(void **)&curl.easy_getinfo = curl_fn(h, "curl_easy_getinfo");
    *(void **)&curl.easy_perform = curl_fn(h, "curl_easy_perform");
    *(void **)&curl.easy_strerror = curl_fn(h, "curl_easy_strerror");
    *(void **)&curl.slist_append = curl_fn(h, "curl_slist_append");
    *(void **)&curl.slist_free_all = curl_fn(h, "curl_slist_free_all");
    if (!curl_missing && curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        curl_missing = kapi_xstrdup("libcurl did not initialize");
}

kapi_webhook *kapi_webhook_new(void)
{
    kapi_webhook *w = kapi_xcalloc(1, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    return w;
}

void kapi_webhook_free(kapi_webhook *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nidle; i++)
        curl.easy_cleanup(w->idle[i]);
    if (w->resolve)
        curl.slist_free_all(w->resolve);
    for (size_t i = 0; i < w->nentries; i++)
        free(w->entries[i]);
    free(w->entries);
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
    w->entries = kapi_xrealloc(w->entries, (w->nentries + 1) * sizeof(*w->entries));
    w->entries[w->nentries++] = kapi_xstrdup(entry);
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

/* An idle handle or a new one (NULL when libcurl cannot make one); the resolve entries
 * turned into libcurl's list by the first call. */
static CURL *take(kapi_webhook *w)
{
    CURL *c = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->nidle)
        c = w->idle[--w->nidle];
    if (!w->resolve)
        for (size_t i = 0; i < w->nentries; i++)
            w->resolve = curl.slist_append(w->resolve, w->entries[i]);
    pthread_mutex_unlock(&w->mu);
    if (c) {
        curl.easy_reset(c);
        return c;
    }
    return curl.easy_init();
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
        curl.easy_cleanup(c);
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
        curl.easy_getinfo(c, CURLINFO_PRIMARY_IP, &ip);
        curl.easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
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
        kapi_buf_puts(why, *detail ? detail : curl.easy_strerror(rc));
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
    pthread_once(&curl_once, curl_load);
    CURL *c = curl_missing ? NULL : take(w);
    if (!c) {
        kapi_buf_printf(why, "Post \"%s\": %s", url.ptr,
                        curl_missing ? curl_missing : "libcurl cannot make a handle");
        kapi_buf_dispose(&url);
        kapi_buf_dispose(&ca);
        return false;
    }
    char detail[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = curl.slist_append(NULL, "Content-Type: application/json");
    headers = curl.slist_append(headers, "Accept: application/json, */*");
    curl.easy_setopt(c, CURLOPT_URL, url.ptr);
    curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(c, CURLOPT_POST, 1L);
    curl.easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl.easy_setopt(c, CURLOPT_USERAGENT, "kube-apiserver-admission");
    curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_s * 1000);
    curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl.easy_setopt(c, CURLOPT_WRITEDATA, &answer->body);
    curl.easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    if (w->resolve)
        curl.easy_setopt(c, CURLOPT_RESOLVE, w->resolve);
    if (ca.len) {
        /* the bundle alone, as Go's client trusts only the roots it is given */
        struct curl_blob blob = {ca.ptr, ca.len, CURL_BLOB_COPY};
        curl.easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
        curl.easy_setopt(c, CURLOPT_CAPATH, NULL);
    }
    CURLcode rc = curl.easy_perform(c);
    if (rc == CURLE_OK) {
        char *type = NULL;
        curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer->status);
        curl.easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
        answer->text = type && strncasecmp(type, "text/", 5) == 0;
    } else {
        kapi_buf_printf(why, "Post \"%s\": ", url.ptr);
        explain(why, c, rc, url.ptr, detail);
    }
    curl.slist_free_all(headers);
    give_back(w, c);
    kapi_buf_dispose(&url);
    kapi_buf_dispose(&ca);
    return rc == CURLE_OK;
}
