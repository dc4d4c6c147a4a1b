/*
 * etcd/client: the client's I/O thread, its one connection (TCP, TLS, nghttp2), endpoint
 * failover, and unary calls.
 *
 * A call lives on its caller's stack: the caller queues it (c->queued) and waits on its
 * condition variable; the I/O thread gives it a stream on the connection, and ends it
 * (finish) exactly once, by its answer, its deadline, a broken connection or the
 * client's end. nghttp2 never points at a call or a watch: it points at a kapi_etcd__strm
 * the I/O thread owns (c->streams), whose owner is cut off (detached) when the call or
 * watch is done with it, so a late callback finds nothing to touch. Streams are freed
 * when nghttp2 closes them or the connection is dropped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/fiber.h"
#include "etcd/etcd_int.h"

#define MS 1000000LL
#define DEFAULT_CALL_TIMEOUT_MS 10000
#define DEFAULT_CONNECT_TIMEOUT_MS 2000
#define DEFAULT_KEEPALIVE_MS 10000
#define DEFAULT_MAX_SEND (2u << 20)
#define DEFAULT_MAX_RECV (64u << 20)
#define DEFAULT_WATCH_QUEUE (16u << 20)
/* Our HTTP/2 receive windows: per stream, and for the connection. */
#define STREAM_WINDOW (1 << 20)
#define CONN_WINDOW (16 << 20)
/* Bytes taken from nghttp2 before they are written to the socket, and read at a time. */
#define OUT_CHUNK (64 * 1024)
#define READ_CHUNK (64 * 1024)
/* The pause after a round of endpoints none of which could be reached: 50 ms, doubling, at
 * most 1 s. */
#define BACKOFF_MIN (50 * MS)
#define BACKOFF_MAX (1000 * MS)
/* The I/O thread wakes at least this often. */
#define TICK (1000 * MS)

typedef struct endpoint {
    char *url;       /* as given, trimmed */
    char *host;      /* for getaddrinfo, and TLS name or address checks */
    char *port;      /* "2379" */
    char *authority; /* host:port, IPv6 in brackets */
    bool tls;
} endpoint;

typedef enum conn_state { CONN_NONE, CONN_TCP, CONN_TLS, CONN_READY } conn_state;

/* A stream on the connection: what nghttp2 points at (its stream user data). */
struct kapi_etcd__strm {
    kapi_etcd__link link; /* in c->streams */
    int32_t id;
    void *owner; /* the call or the watch; NULL once detached */
    bool watch;
    bool sent;    /* its HEADERS went out: etcd may act on it */
    kapi_buf out; /* what it sends: out[out_off..] not yet handed to nghttp2 */
    size_t out_off;
    kapi_buf in; /* DATA received and not yet framed into messages */
    int http_status;
    int grpc_status; /* -1 until a header block says */
    char *grpc_message;
    bool too_large;
    size_t unconsumed; /* watches: bytes whose stream window is held back */
};

typedef struct call {
    kapi_etcd__link link; /* in c->queued while it waits for a stream */
    kapi_etcd__strm *s;   /* its stream while it has one */
    const char *path;
    kapi_buf req; /* the framed request, kept for a resend on another connection */
    int64_t deadline;
    kapi_park done; /* posted once the call has ended: its caller, woken alone, reads it then */
    kapi_etcd_rc rc;
    char *why;         /* heap: what went wrong */
    const char *where; /* the endpoint it ended on */
    kapi_buf body;     /* the answer's bytes, on OK */
} call;

struct kapi_etcd_client {
    endpoint *eps;
    size_t neps;
    SSL_CTX *tls;
    int64_t call_timeout, connect_timeout, keepalive;
    size_t max_send, max_recv, watch_queue;
    pthread_t thread;
    int wake; /* an eventfd the I/O thread polls */

    pthread_mutex_t mu;
    kapi_etcd__link queued;  /* calls waiting for a stream, oldest first */
    kapi_etcd__link watches; /* the watches the I/O thread holds */
    bool dirty;              /* someone queued work since the I/O thread last looked */
    bool sleeping;           /* the I/O thread is in poll: a kick writes c->wake */
    bool closing;
    size_t cur; /* the endpoint in use or being tried */

    /* The I/O thread's. */
    conn_state state;
    int fd;
    SSL *ssl;
    nghttp2_session *h2;
    int64_t conn_deadline; /* of the attempt under way */
    int64_t retry_at;      /* no attempt before it */
    unsigned fails;        /* attempts failed in a row */
    bool draining;         /* no new streams; dropped once its calls are done */
    bool want_write;       /* the socket (or TLS) waits to be writable */
    kapi_buf outb;         /* bytes nghttp2 made: outb[outb_off..] not yet written */
    size_t outb_off;
    kapi_etcd__link streams;
    int64_t last_recv;    /* when the connection last received bytes */
    int64_t ping_at;      /* when the unanswered PING went; 0: none */
    char last_error[256]; /* why the last connection or attempt ended */
    char drain_why[200];  /* why the connection is draining */
};

/* ---- lists ---- */

static void list_init(kapi_etcd__link *l)
{
    l->prev = l->next = l;
}

static bool list_empty(const kapi_etcd__link *l)
{
    return l->next == l;
}

static void list_insert(kapi_etcd__link *after, kapi_etcd__link *e)
{
    e->prev = after;
    e->next = after->next;
    after->next->prev = e;
    after->next = e;
}

static void list_remove(kapi_etcd__link *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    list_init(e);
}

#define CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* ---- errors ---- */

static const struct {
    const char *name;
    kapi_status status;
} rc_table[] = {{"ok", KAPI_STATUS_INTERNAL_ERROR},
#define XX(name, status, text) {text, KAPI_STATUS_##status},
                KAPI_ETCD_RC_MAP(XX)
#undef XX
};

const char *kapi_etcd_rc_name(kapi_etcd_rc rc)
{
    return (size_t)rc < KAPI_ARRAY_LEN(rc_table) ? rc_table[rc].name : "?";
}

void kapi_etcd__error(kapi_error **err, kapi_etcd_rc rc, const char *where, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    kapi_buf b;
    kapi_buf_init(&b);
    va_start(ap, fmt);
    kapi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    *err = kapi_error_new(rc_table[rc].status, "etcd %s: %s", where, b.ptr);
    kapi_buf_dispose(&b);
}

static void set_last_error(kapi_etcd_client *c, const char *fmt, ...) KAPI_PRINTF(2, 3);
static void set_last_error(kapi_etcd_client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
    va_end(ap);
}

/* gRPC status codes: what each means for the call, when its message is none of those
 * grpc_messages names. */
static const kapi_etcd_rc grpc_codes[] = {
    [1] = KAPI_ETCD_UNKNOWN,  /* Canceled */
    [2] = KAPI_ETCD_UNKNOWN,  /* Unknown */
    [3] = KAPI_ETCD_REFUSED,  /* InvalidArgument */
    [4] = KAPI_ETCD_UNKNOWN,  /* DeadlineExceeded */
    [5] = KAPI_ETCD_REFUSED,  /* NotFound */
    [6] = KAPI_ETCD_REFUSED,  /* AlreadyExists */
    [7] = KAPI_ETCD_REFUSED,  /* PermissionDenied */
    [8] = KAPI_ETCD_REFUSED,  /* ResourceExhausted */
    [9] = KAPI_ETCD_REFUSED,  /* FailedPrecondition */
    [10] = KAPI_ETCD_UNKNOWN, /* Aborted */
    [11] = KAPI_ETCD_REFUSED, /* OutOfRange */
    [12] = KAPI_ETCD_REFUSED, /* Unimplemented */
    [13] = KAPI_ETCD_UNKNOWN, /* Internal */
    [14] = KAPI_ETCD_UNKNOWN, /* Unavailable */
    [15] = KAPI_ETCD_UNKNOWN, /* DataLoss */
    [16] = KAPI_ETCD_REFUSED, /* Unauthenticated */
};

/* etcd's messages (rpctypes) that say more than their code; rotate: this member cannot
 * serve, the client moves to the next endpoint. */
static const struct {
    const char *text;
    kapi_etcd_rc rc;
    bool rotate;
} grpc_messages[] = {
    {"required revision has been compacted", KAPI_ETCD_COMPACTED, false},
    {"required revision is a future revision", KAPI_ETCD_FUTURE_REV, false},
    {"request is too large", KAPI_ETCD_TOO_LARGE, false},
    {"received message larger than max", KAPI_ETCD_TOO_LARGE, false},
    {"etcdserver: too many requests", KAPI_ETCD_UNAVAILABLE, false},
    {"etcdserver: no leader", KAPI_ETCD_UNKNOWN, true},
    {"etcdserver: server stopped", KAPI_ETCD_UNKNOWN, true},
    {"etcdserver: not capable", KAPI_ETCD_UNKNOWN, true},
    {"etcdserver: unhealthy cluster", KAPI_ETCD_UNKNOWN, true},
};

/* The rc of a gRPC status; *rotate when the member should be left. */
static kapi_etcd_rc grpc_rc(int code, const char *message, bool *rotate)
{
    *rotate = false;
    for (size_t i = 0; message && i < KAPI_ARRAY_LEN(grpc_messages); i++) {
        if (strstr(message, grpc_messages[i].text)) {
            *rotate = grpc_messages[i].rotate;
            return grpc_messages[i].rc;
        }
    }
    if (code > 0 && (size_t)code < KAPI_ARRAY_LEN(grpc_codes))
        return grpc_codes[code];
    return KAPI_ETCD_PROTOCOL;
}

/* What a closed stream came to, and why (heap) when not OK. */
static kapi_etcd_rc outcome(kapi_etcd_client *c, const kapi_etcd__strm *s, uint32_t h2_error,
                            char **why)
{
    bool rotate;
    *why = NULL;
    if (s->too_large) {
        *why = kapi_xprintf("an answer message over %zu bytes", c->max_recv);
        return KAPI_ETCD_TOO_LARGE;
    }
    if (s->grpc_status == 0 && s->http_status == 200)
        return KAPI_ETCD_OK;
    if (s->grpc_status > 0) {
        kapi_etcd_rc rc = grpc_rc(s->grpc_status, s->grpc_message, &rotate);
        if (rotate && !c->draining)
            snprintf(c->drain_why, sizeof(c->drain_why), "the member cannot serve: %s",
                     s->grpc_message);
        c->draining |= rotate;
        *why = kapi_xprintf("gRPC status %d: %s", s->grpc_status,
                            s->grpc_message ? s->grpc_message : "");
        return rc;
    }
    if (s->http_status != 200 && s->http_status != 0) {
        *why = kapi_xprintf("HTTP status %d", s->http_status);
        return KAPI_ETCD_PROTOCOL;
    }
    if (h2_error != NGHTTP2_NO_ERROR) {
        *why = kapi_xprintf("stream reset: %s", nghttp2_http2_strerror(h2_error));
        return KAPI_ETCD_UNKNOWN;
    }
    *why = kapi_xstrdup("the answer ended without a grpc-status");
    return KAPI_ETCD_PROTOCOL;
}

/* ---- endpoints and TLS ---- */

static void endpoint_dispose(endpoint *e)
{
    free(e->url);
    free(e->host);
    free(e->port);
    free(e->authority);
}

/* One URL of the list, trimmed: scheme://host[:port][/]. */
static kapi_error *endpoint_parse(endpoint *e, kapi_str url)
{
    while (url.len && (url.ptr[0] == ' ' || url.ptr[0] == '\t'))
        url.ptr++, url.len--;
    while (url.len && (url.ptr[url.len - 1] == ' ' || url.ptr[url.len - 1] == '/'))
        url.len--;
    e->url = kapi_xstrndup(url.ptr, url.len);
    kapi_str rest = url;
    if (kapi_str_has_prefix(url, "http://")) {
        rest.ptr += 7, rest.len -= 7;
    } else if (kapi_str_has_prefix(url, "https://")) {
        rest.ptr += 8, rest.len -= 8;
        e->tls = true;
    } else {
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "etcd endpoint \"%s\": not an http:// or https:// URL", e->url);
    }
    const char *colon = memrchr(rest.ptr, ':', rest.len);
    const char *bracket = memrchr(rest.ptr, ']', rest.len);
    size_t hlen = colon && (!bracket || colon > bracket) ? (size_t)(colon - rest.ptr) : rest.len;
    e->port =
        hlen < rest.len ? kapi_xstrndup(colon + 1, rest.len - hlen - 1) : kapi_xstrdup("2379");
    e->authority = kapi_xprintf("%.*s:%s", (int)hlen, rest.ptr, e->port);
    if (hlen >= 2 && rest.ptr[0] == '[' && rest.ptr[hlen - 1] == ']')
        e->host = kapi_xstrndup(rest.ptr + 1, hlen - 2);
    else
        e->host = kapi_xstrndup(rest.ptr, hlen);
    if (!e->host[0] || !e->port[0] || strspn(e->port, "0123456789") != strlen(e->port))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "etcd endpoint \"%s\": no host or port",
                              e->url);
    return NULL;
}

static kapi_error *endpoints_parse(kapi_etcd_client *c, const char *servers)
{
    kapi_str list = kapi_str_c(servers), one;
    kapi_error *err = NULL;
    while (list.len && !err) {
        kapi_str_cut(&list, ',', &one);
        c->eps = kapi_xrealloc(c->eps, (c->neps + 1) * sizeof(*c->eps));
        memset(&c->eps[c->neps], 0, sizeof(*c->eps));
        err = endpoint_parse(&c->eps[c->neps++], one);
    }
    if (!err && c->neps == 0)
        err = kapi_error_new(KAPI_STATUS_BAD_REQUEST, "etcd: no endpoint in \"%s\"",
                             servers ? servers : "");
    return err;
}

static kapi_error *tls_error(const char *what, const char *file)
{
    char buf[256];
    ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
    ERR_clear_error();
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST, "etcd TLS: %s %s: %s", what, file, buf);
}

/* The TLS context every https:// endpoint shares: verify etcd, offer a client
 * certificate, ALPN h2. */
static kapi_error *tls_setup(kapi_etcd_client *c, const kapi_etcd_options *o)
{
    static const unsigned char alpn[] = "\x02h2";
    if ((o->cert_file == NULL) != (o->key_file == NULL))
        return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                              "etcd TLS: a client certificate needs its key, and a key its "
                              "certificate");
    c->tls = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(c->tls, TLS1_2_VERSION);
    SSL_CTX_set_verify(c->tls, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(c->tls, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_alpn_protos(c->tls, alpn, sizeof(alpn) - 1);
    if (o->ca_file ? SSL_CTX_load_verify_locations(c->tls, o->ca_file, NULL) != 1
                   : SSL_CTX_set_default_verify_paths(c->tls) != 1)
        return tls_error("CA file", o->ca_file ? o->ca_file : "(system)");
    if (o->cert_file && SSL_CTX_use_certificate_chain_file(c->tls, o->cert_file) != 1)
        return tls_error("certificate", o->cert_file);
    if (o->key_file && SSL_CTX_use_PrivateKey_file(c->tls, o->key_file, SSL_FILETYPE_PEM) != 1)
        return tls_error("key", o->key_file);
    if (o->key_file && SSL_CTX_check_private_key(c->tls) != 1)
        return tls_error("key does not match the certificate", o->key_file);
    return NULL;
}

/* ---- waking the I/O thread ---- */

void kapi_etcd__kick(kapi_etcd_client *c)
{
    c->dirty = true;
    if (c->sleeping) {
        uint64_t one = 1;
        c->sleeping = false;
        if (write(c->wake, &one, sizeof(one)) < 0)
            abort(); /* an eventfd write fails only on overflow, after 2^64 - 1 kicks */
    }
}

pthread_mutex_t *kapi_etcd__mu(kapi_etcd_client *c)
{
    return &c->mu;
}

size_t kapi_etcd__watch_queue_bytes(const kapi_etcd_client *c)
{
    return c->watch_queue;
}

int64_t kapi_etcd__call_timeout_ns(const kapi_etcd_client *c)
{
    return c->call_timeout;
}

/* ---- calls: ending, requeueing ---- */

/* Ends call k (after it has left every list; c->mu held): the last the I/O thread
 * touches of it. why (heap) is taken. */
static void finish_locked(kapi_etcd_client *c, call *k, kapi_etcd_rc rc, char *why)
{
    k->rc = rc;
    k->why = why;
    k->where = c->eps[c->cur].url;
    kapi_park_post(&k->done);
}

static void finish(kapi_etcd_client *c, call *k, kapi_etcd_rc rc, char *why)
{
    pthread_mutex_lock(&c->mu);
    finish_locked(c, k, rc, why);
    pthread_mutex_unlock(&c->mu);
}

/* A call whose stream went away unsent (or refused): it waits for the next stream. */
static void requeue(kapi_etcd_client *c, call *k)
{
    k->s = NULL;
    pthread_mutex_lock(&c->mu);
    list_insert(&c->queued, &k->link);
    c->dirty = true;
    pthread_mutex_unlock(&c->mu);
}

static void strm_free(kapi_etcd__strm *s)
{
    list_remove(&s->link);
    kapi_buf_dispose(&s->out);
    kapi_buf_dispose(&s->in);
    free(s->grpc_message);
    free(s);
}

/* ---- watches, the I/O side ---- */

/* Ends w's stream side: rc, unless it has ended already; the consumer is woken. */
static void watch_end(kapi_etcd_client *c, kapi_etcd_watch *w, kapi_etcd_rc rc, char *why)
{
    pthread_mutex_lock(&c->mu);
    if (w->end == KAPI_ETCD_OK) {
        w->end = rc;
        w->end_why = why;
        why = NULL;
    }
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&c->mu);
    free(why);
}

/* The rc a watch ends with when its stream closes: a transport failure, or etcd ending
 * the stream itself (no leader, shutting down), is BROKEN. */
static kapi_etcd_rc watch_rc(kapi_etcd_rc rc)
{
    return rc == KAPI_ETCD_OK || rc == KAPI_ETCD_UNKNOWN || rc == KAPI_ETCD_UNAVAILABLE
               ? KAPI_ETCD_BROKEN
               : rc;
}

/* Queues the complete messages of w's stream for the consumer. False on a message this
 * client cannot take (compressed, or over max_recv). */
static bool watch_frame(kapi_etcd_client *c, kapi_etcd_watch *w, kapi_etcd__strm *s)
{
    size_t off = 0;
    bool ok = true;
    while (ok && s->in.len - off >= KAPI_ETCD__PREFIX) {
        const unsigned char *p = (const unsigned char *)s->in.ptr + off;
        size_t n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
        ok = p[0] == 0 && n <= c->max_recv;
        if (!ok || s->in.len - off - KAPI_ETCD__PREFIX < n)
            break;
        kapi_etcd__msg *m = kapi_xmalloc(sizeof(*m) + n);
        m->next = NULL;
        m->len = n;
        memcpy(m->bytes, p + KAPI_ETCD__PREFIX, n);
        pthread_mutex_lock(&c->mu);
        bool was_empty = !w->head; /* else the consumer is not waiting */
        *(w->tail ? &w->tail->next : &w->head) = m;
        w->tail = m;
        w->queued += n;
        pthread_mutex_unlock(&c->mu);
        if (was_empty) /* after the unlock: woken, it does not wait for the lock (the
                        * watch is freed only by this thread) */
            pthread_cond_signal(&w->cv);
        off += KAPI_ETCD__PREFIX + n;
    }
    memmove(s->in.ptr, s->in.ptr + off, s->in.len - off);
    s->in.len -= off;
    s->in.ptr[s->in.len] = '\0';
    return ok;
}

/* Gives back the stream window of what w received while its queue is within bounds;
 * past them, holds it back (etcd then waits) until the consumer takes some. */
static void watch_window(kapi_etcd_client *c, kapi_etcd_watch *w, kapi_etcd__strm *s)
{
    size_t give = 0;
    pthread_mutex_lock(&c->mu);
    w->stalled = w->queued > c->watch_queue;
    if (!w->stalled) {
        give = s->unconsumed;
        s->unconsumed = 0;
    }
    pthread_mutex_unlock(&c->mu);
    if (give)
        nghttp2_session_consume_stream(c->h2, s->id, give);
}

/* ---- nghttp2 callbacks ---- */

static kapi_etcd__strm *strm_of(nghttp2_session *h2, int32_t id)
{
    return nghttp2_session_get_stream_user_data(h2, id);
}

/* grpc-message is percent-encoded. */
static char *percent_decode(const uint8_t *v, size_t n)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++) {
        int hi = i + 2 < n && v[i] == '%' ? kapi_hex_value((char)v[i + 1]) : -1;
        int lo = hi >= 0 ? kapi_hex_value((char)v[i + 2]) : -1;
        if (lo >= 0) {
            kapi_buf_putc(&b, (char)(hi << 4 | lo));
            i += 2;
        } else {
            kapi_buf_putc(&b, (char)v[i]);
        }
    }
    return kapi_buf_detach(&b, NULL);
}

/* A status header's decimal value, as atoi reads it (leading digits; 0 for none), of at
 * most 9 digits. */
static int status_value(const uint8_t *value, size_t len)
{
    int v = 0;
    for (size_t i = 0; i < len && i < 9 && value[i] >= '0' && value[i] <= '9'; i++)
        v = v * 10 + (value[i] - '0');
    return v;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    kapi_etcd__strm *s = strm_of(h2, f->hd.stream_id);
    kapi_str n = {(const char *)name, namelen};
    (void)flags, (void)user;
    if (!s)
        return 0;
    if (kapi_str_eqc(n, ":status"))
        s->http_status = status_value(value, valuelen);
    else if (kapi_str_eqc(n, "grpc-status"))
        s->grpc_status = status_value(value, valuelen);
    else if (kapi_str_eqc(n, "grpc-message") && !s->grpc_message)
        s->grpc_message = percent_decode(value, valuelen);
    return 0;
}

/* A call's answer is within bounds: its message's announced length is checked as soon
 * as the prefix is in, so that nothing larger is buffered. */
static bool within_bounds(kapi_etcd_client *c, const kapi_etcd__strm *s)
{
    const unsigned char *p = (const unsigned char *)s->in.ptr;
    if (s->in.len < KAPI_ETCD__PREFIX)
        return true;
    size_t n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
    return n <= c->max_recv && s->in.len <= c->max_recv + KAPI_ETCD__PREFIX;
}

static int on_data(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *user)
{
    kapi_etcd_client *c = user;
    kapi_etcd__strm *s = strm_of(h2, id);
    (void)flags;
    nghttp2_session_consume_connection(h2, len);
    if (!s || !s->owner || s->too_large || !s->watch)
        nghttp2_session_consume_stream(h2, id, len);
    else
        s->unconsumed += len;
    if (!s || !s->owner || s->too_large)
        return 0;
    kapi_buf_put(&s->in, data, len);
    s->too_large = s->watch ? !watch_frame(c, s->owner, s) : !within_bounds(c, s);
    if (s->too_large)
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    else if (s->watch)
        watch_window(c, s->owner, s);
    return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    kapi_etcd_client *c = user;
    (void)h2;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->draining = true;
        snprintf(c->drain_why, sizeof(c->drain_why), "etcd sent GOAWAY (%s)",
                 nghttp2_http2_strerror(f->goaway.error_code));
    } else if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) {
        c->ping_at = 0;
    }
    return 0;
}

static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    kapi_etcd__strm *s = f->hd.type == NGHTTP2_HEADERS ? strm_of(h2, f->hd.stream_id) : NULL;
    (void)user;
    if (s)
        s->sent = true;
    return 0;
}

/* A call's stream closed: its answer, or a resend when etcd never took it. */
static void call_closed(kapi_etcd_client *c, call *k, kapi_etcd__strm *s, uint32_t code)
{
    char *why;
    if (!s->sent || (code == NGHTTP2_REFUSED_STREAM && s->grpc_status < 0)) {
        requeue(c, k);
        return;
    }
    kapi_etcd_rc rc = outcome(c, s, code, &why);
    if (rc == KAPI_ETCD_OK) {
        k->body = s->in;
        kapi_buf_init(&s->in);
    }
    finish(c, k, rc, why);
}

/* A watch's stream closed: the watch ends, unless etcd never took it (then it waits for
 * the next stream). */
static void watch_closed(kapi_etcd_client *c, kapi_etcd_watch *w, kapi_etcd__strm *s, uint32_t code)
{
    char *why;
    w->s = NULL;
    if (!s->sent || (code == NGHTTP2_REFUSED_STREAM && s->grpc_status < 0 && !s->http_status))
        return;
    kapi_etcd_rc rc = watch_rc(outcome(c, s, code, &why));
    watch_end(c, w, rc, why ? why : kapi_xstrdup("etcd ended the watch stream"));
}

static int on_stream_close(nghttp2_session *h2, int32_t id, uint32_t code, void *user)
{
    kapi_etcd_client *c = user;
    kapi_etcd__strm *s = strm_of(h2, id);
    if (!s)
        return 0;
    nghttp2_session_set_stream_user_data(h2, id, NULL);
    if (s->owner && s->watch)
        watch_closed(c, s->owner, s, code);
    else if (s->owner)
        call_closed(c, s->owner, s, code);
    strm_free(s);
    return 0;
}

/* The request body: calls end after theirs; a watch's stays open, waiting for more. */
static ssize_t read_body(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
    kapi_etcd__strm *s = src->ptr;
    size_t n = s->out.len - s->out_off;
    (void)h2, (void)id, (void)user;
    if (!s->owner) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    if (n > len)
        n = len;
    memcpy(buf, s->out.ptr + s->out_off, n);
    s->out_off += n;
    if (s->out_off < s->out.len)
        return (ssize_t)n;
    if (!s->watch) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
    }
    kapi_buf_clear(&s->out);
    s->out_off = 0;
    return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
}

/* ---- opening streams ---- */

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NO_COPY_NAME     \
    }

/* A new stream for path with the bytes req; a call's carries its deadline as
 * grpc-timeout, a watch's asks etcd to end it when the member loses its leader. NULL when
 * the connection can take no more streams (it is then drained). */
static kapi_etcd__strm *strm_open(kapi_etcd_client *c, const char *path, const kapi_buf *req,
                                  int64_t timeout, void *owner, bool watch)
{
    const endpoint *e = &c->eps[c->cur];
    char grpc_timeout[24];
    long long ms = timeout / MS + 1;
    snprintf(grpc_timeout, sizeof(grpc_timeout), "%lldm", ms > 99999999 ? 99999999 : ms);
    nghttp2_nv nv[] = {NV(":method", "POST"),
                       NV(":scheme", e->tls ? "https" : "http"),
                       NV(":authority", e->authority),
                       NV(":path", path),
                       NV("content-type", "application/grpc"),
                       NV("te", "trailers"),
                       NV("user-agent", "kapi-etcd"),
                       NV("grpc-timeout", grpc_timeout)};
    if (watch)
        nv[KAPI_ARRAY_LEN(nv) - 1] = (nghttp2_nv)NV("hasleader", "true");
    kapi_etcd__strm *s = kapi_xcalloc(1, sizeof(*s));
    s->owner = owner;
    s->watch = watch;
    s->grpc_status = -1;
    kapi_buf_init(&s->out);
    kapi_buf_init(&s->in);
    kapi_buf_put(&s->out, req->ptr, req->len);
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_body};
    s->id = nghttp2_submit_request(c->h2, NULL, nv, KAPI_ARRAY_LEN(nv), &prd, s);
    list_insert(c->streams.prev, &s->link);
    if (s->id > 0)
        return s;
    c->draining = true; /* stream ids ran out: a new connection starts them again */
    snprintf(c->drain_why, sizeof(c->drain_why), "HTTP/2 stream ids ran out");
    strm_free(s);
    return NULL;
}

/* Gives each queued call a stream (c->mu held). */
static void open_calls(kapi_etcd_client *c, int64_t now)
{
    while (!list_empty(&c->queued) && !c->draining) {
        call *k = CONTAINER(c->queued.next, call, link);
        k->s = strm_open(c, k->path, &k->req, k->deadline - now, k, false);
        if (k->s)
            list_remove(&k->link);
    }
}

/* Cuts a stream off from its owner and resets it. */
static void strm_detach(kapi_etcd_client *c, kapi_etcd__strm *s)
{
    s->owner = NULL;
    nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
}

/* A watch's stream work (c->mu held): open it, send progress requests, give back window,
 * or let it go once its consumer has. True when the I/O thread let go of w. */
static bool service_watch(kapi_etcd_client *c, kapi_etcd_watch *w, int64_t now)
{
    bool ready = c->state == CONN_READY && !c->draining;
    if (w->freed) {
        if (w->s)
            strm_detach(c, w->s);
        w->s = NULL;
        list_remove(&w->link);
        return kapi_etcd__watch_release(w);
    }
    if (!w->s && w->end == KAPI_ETCD_OK && ready)
        w->s = strm_open(c, "/etcdserverpb.Watch/Watch", &w->create, 0, w, true);
    if (!w->s && w->end == KAPI_ETCD_OK && now >= w->open_by) {
        w->end = KAPI_ETCD_UNAVAILABLE;
        w->end_why = kapi_xprintf("no endpoint took the watch in time (%s)", c->last_error);
        pthread_cond_signal(&w->cv);
    }
    for (; w->s && w->progress > 0; w->progress--) {
        kapi_etcd__watch_progress_req(&w->s->out);
        nghttp2_session_resume_data(c->h2, w->s->id);
    }
    if (w->s && w->s->unconsumed && w->queued <= c->watch_queue) {
        nghttp2_session_consume_stream(c->h2, w->s->id, w->s->unconsumed);
        w->s->unconsumed = 0;
        w->stalled = false;
    }
    return false;
}

/* ---- the connection ---- */

/* Drops the connection: calls sent on it end UNKNOWN, unsent ones wait for the next;
 * watches that were sent end BROKEN. The next attempt goes to the next endpoint. */
static void conn_drop(kapi_etcd_client *c, int64_t now, const char *why)
{
    while (!list_empty(&c->streams)) {
        kapi_etcd__strm *s = CONTAINER(c->streams.next, kapi_etcd__strm, link);
        call *k = s->owner && !s->watch ? s->owner : NULL;
        kapi_etcd_watch *w = s->owner && s->watch ? s->owner : NULL;
        if (k && s->sent)
            finish(c, k, KAPI_ETCD_UNKNOWN, kapi_xprintf("connection lost: %s", why));
        else if (k)
            requeue(c, k);
        if (w)
            w->s = NULL;
        if (w && s->sent)
            watch_end(c, w, KAPI_ETCD_BROKEN, kapi_xprintf("connection lost: %s", why));
        strm_free(s);
    }
    if (c->state == CONN_READY)
        set_last_error(c, "%s: %s", c->eps[c->cur].url, why);
    nghttp2_session_del(c->h2);
    SSL_free(c->ssl);
    if (c->fd >= 0)
        close(c->fd);
    c->h2 = NULL;
    c->ssl = NULL;
    c->fd = -1;
    c->state = CONN_NONE;
    c->draining = c->want_write = false;
    c->ping_at = 0;
    kapi_buf_clear(&c->outb);
    c->outb_off = 0;
    pthread_mutex_lock(&c->mu);
    c->cur = (c->cur + 1) % c->neps;
    pthread_mutex_unlock(&c->mu);
    c->retry_at = now;
}

/* An attempt failed: the next endpoint, after a pause once a whole round has failed. */
static void conn_failed(kapi_etcd_client *c, int64_t now, const char *fmt, ...) KAPI_PRINTF(3, 4);
static void conn_failed(kapi_etcd_client *c, int64_t now, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    set_last_error(c, "%s: %s", c->eps[c->cur].url, what);
    conn_drop(c, now, what);
    c->fails++;
    if (c->fails % c->neps == 0) {
        unsigned round = c->fails / c->neps - 1;
        int64_t pause = round > 5 ? BACKOFF_MAX : BACKOFF_MIN << round;
        c->retry_at = now + (pause < BACKOFF_MAX ? pause : BACKOFF_MAX);
    }
}

static void session_new(kapi_etcd_client *c)
{
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_option_new(&opt);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    int rv = nghttp2_session_client_new2(&c->h2, cb, c, opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(opt);
    if (rv != 0)
        abort(); /* nghttp2 fails here only when out of memory */
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                   {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW}};
    nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, KAPI_ARRAY_LEN(iv));
    nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW);
}

static void conn_ready(kapi_etcd_client *c, int64_t now)
{
    session_new(c);
    c->state = CONN_READY;
    c->fails = 0;
    c->last_recv = now;
}

static void tls_step(kapi_etcd_client *c, int64_t now)
{
    const unsigned char *proto = NULL;
    unsigned plen = 0;
    int r = SSL_do_handshake(c->ssl), e = r == 1 ? 0 : SSL_get_error(c->ssl, r);
    c->want_write = e == SSL_ERROR_WANT_WRITE;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return;
    if (r != 1) {
        long v = SSL_get_verify_result(c->ssl);
        char buf[160];
        ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
        ERR_clear_error();
        conn_failed(c, now, "TLS handshake: %s",
                    v != X509_V_OK ? X509_verify_cert_error_string(v) : buf);
        return;
    }
    SSL_get0_alpn_selected(c->ssl, &proto, &plen);
    if (plen != 2 || memcmp(proto, "h2", 2) != 0) {
        conn_failed(c, now, "TLS: the server did not choose ALPN h2");
        return;
    }
    conn_ready(c, now);
}

static void tls_start(kapi_etcd_client *c, int64_t now)
{
    const endpoint *e = &c->eps[c->cur];
    unsigned char addr[16];
    c->ssl = SSL_new(c->tls);
    SSL_set_fd(c->ssl, c->fd);
    SSL_set_connect_state(c->ssl);
    if (inet_pton(AF_INET, e->host, addr) == 1 || inet_pton(AF_INET6, e->host, addr) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), e->host);
    } else {
        SSL_set_tlsext_host_name(c->ssl, e->host);
        SSL_set1_host(c->ssl, e->host);
    }
    c->state = CONN_TLS;
    tls_step(c, now);
}

/* The TCP connect finished (or failed). */
static void tcp_step(kapi_etcd_client *c, int64_t now)
{
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0)
        conn_failed(c, now, "connect: %s", strerror(err));
    else if (c->eps[c->cur].tls)
        tls_start(c, now);
    else
        conn_ready(c, now);
}

static void conn_start(kapi_etcd_client *c, int64_t now)
{
    const endpoint *e = &c->eps[c->cur];
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int one = 1, rv = getaddrinfo(e->host, e->port, &hints, &ai);
    if (rv != 0) {
        conn_failed(c, now, "resolve %s: %s", e->host, gai_strerror(rv));
        return;
    }
    c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    rv = c->fd < 0 ? -1 : connect(c->fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rv != 0 && errno != EINPROGRESS) {
        conn_failed(c, now, "connect: %s", strerror(errno));
        return;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->state = CONN_TCP;
    c->conn_deadline = now + c->connect_timeout;
    if (rv == 0)
        tcp_step(c, now);
}

/* Bytes to the socket: >0 written, 0 would block, -1 failed. */
static ssize_t sock_write(kapi_etcd_client *c, const char *p, size_t n)
{
    if (!c->ssl) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        return w >= 0 ? w : errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
    int w = SSL_write(c->ssl, p, (int)(n > INT32_MAX ? INT32_MAX : n));
    int e = w > 0 ? 0 : SSL_get_error(c->ssl, w);
    ERR_clear_error();
    return w > 0 ? w : e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? 0 : -1;
}

/* Bytes from the socket: >0 read, 0 would block, -1 failed or closed. */
static ssize_t sock_read(kapi_etcd_client *c, char *p, size_t n)
{
    if (!c->ssl) {
        ssize_t r = recv(c->fd, p, n, 0);
        return r > 0 ? r : r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
    int r = SSL_read(c->ssl, p, (int)n);
    int e = r > 0 ? 0 : SSL_get_error(c->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_WRITE)
        c->want_write = true;
    return r > 0 ? r : e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/* Writes what nghttp2 has to send until it has nothing or the socket is full. */
static void conn_flush(kapi_etcd_client *c, int64_t now)
{
    c->want_write = false;
    for (;;) {
        if (c->outb_off == c->outb.len) {
            const uint8_t *data;
            ssize_t n;
            kapi_buf_clear(&c->outb);
            c->outb_off = 0;
            while (c->outb.len < OUT_CHUNK && (n = nghttp2_session_mem_send(c->h2, &data)) > 0)
                kapi_buf_put(&c->outb, data, (size_t)n);
            if (c->outb.len == 0)
                return;
        }
        ssize_t w = sock_write(c, c->outb.ptr + c->outb_off, c->outb.len - c->outb_off);
        if (w < 0) {
            conn_drop(c, now, "write failed");
            return;
        }
        if (w == 0) {
            c->want_write = true;
            return;
        }
        c->outb_off += (size_t)w;
    }
}

/* Reads what the socket has (a bounded amount per turn) into nghttp2. */
static void conn_read(kapi_etcd_client *c, int64_t now)
{
    char local[READ_CHUNK];
    for (int i = 0; i < 16 && c->state == CONN_READY; i++) {
        ssize_t n = sock_read(c, local, sizeof(local));
        if (n == 0)
            return;
        if (n < 0) {
            conn_drop(c, now, "closed by etcd");
            return;
        }
        c->last_recv = now;
        ssize_t rv = nghttp2_session_mem_recv(c->h2, (const uint8_t *)local, (size_t)n);
        if (rv < 0) {
            conn_drop(c, now, nghttp2_strerror((int)rv));
            return;
        }
    }
}

/* What the connection needs each turn: a drop once drained, keepalive, writing. */
static void conn_tend(kapi_etcd_client *c, int64_t now, int64_t *due)
{
    bool calls = false, busy = !list_empty(&c->streams);
    for (kapi_etcd__link *l = c->streams.next; l != &c->streams && !calls; l = l->next)
        calls = CONTAINER(l, kapi_etcd__strm, link)->owner &&
                !CONTAINER(l, kapi_etcd__strm, link)->watch;
    if (c->draining && !calls) {
        conn_drop(c, now, c->drain_why);
        return;
    }
    if (c->ping_at && now - c->ping_at >= c->keepalive) {
        conn_drop(c, now, "no answer to a keepalive PING");
        return;
    }
    if (busy && !c->ping_at && now - c->last_recv >= c->keepalive) {
        nghttp2_submit_ping(c->h2, NGHTTP2_FLAG_NONE, NULL);
        c->ping_at = now;
    }
    if (busy && *due > (c->ping_at ? c->ping_at : c->last_recv) + c->keepalive)
        *due = (c->ping_at ? c->ping_at : c->last_recv) + c->keepalive;
    conn_flush(c, now);
    if (c->state == CONN_READY && !nghttp2_session_want_read(c->h2) &&
        !nghttp2_session_want_write(c->h2))
        conn_drop(c, now, "the HTTP/2 session ended");
}

/* Calls whose deadline passed while they wait for a stream (c->mu held). */
static void expire_queued(kapi_etcd_client *c, int64_t now, int64_t *due)
{
    kapi_etcd__link *l = c->queued.next;
    while (l != &c->queued) {
        call *k = CONTAINER(l, call, link);
        l = l->next;
        if (k->deadline > now) {
            *due = k->deadline < *due ? k->deadline : *due;
            continue;
        }
        list_remove(&k->link);
        finish_locked(c, k, KAPI_ETCD_UNAVAILABLE,
                      kapi_xprintf("no endpoint took the call before its deadline (%s)",
                                   c->last_error[0] ? c->last_error : "no connection yet"));
    }
}

/* Calls whose deadline passed on a stream: reset, and UNKNOWN once sent. */
static void expire_streams(kapi_etcd_client *c, int64_t now, int64_t *due)
{
    for (kapi_etcd__link *l = c->streams.next; l != &c->streams; l = l->next) {
        kapi_etcd__strm *s = CONTAINER(l, kapi_etcd__strm, link);
        call *k = s->owner && !s->watch ? s->owner : NULL;
        if (k && k->deadline > now && k->deadline < *due)
            *due = k->deadline;
        if (!k || k->deadline > now)
            continue;
        strm_detach(c, s);
        finish(c, k, s->sent ? KAPI_ETCD_UNKNOWN : KAPI_ETCD_UNAVAILABLE,
               kapi_xstrdup(s->sent ? "the deadline passed after the call was sent"
                                    : "the deadline passed before the call was sent"));
    }
}

/* Every watch's stream work (c->mu held); the watches the I/O thread let go of for the
 * last time go to *gone. True when some watch waits for a stream. */
static bool service_watches(kapi_etcd_client *c, int64_t now, int64_t *due, kapi_etcd__link *gone)
{
    bool waiting = false;
    kapi_etcd__link *l = c->watches.next;
    while (l != &c->watches) {
        kapi_etcd_watch *w = CONTAINER(l, kapi_etcd_watch, link);
        l = l->next;
        if (service_watch(c, w, now)) {
            list_insert(gone, &w->link);
            continue;
        }
        if (w->freed || w->s || w->end != KAPI_ETCD_OK)
            continue;
        waiting = true;
        *due = w->open_by < *due ? w->open_by : *due;
    }
    return waiting;
}

static void destroy_gone(kapi_etcd__link *gone)
{
    while (!list_empty(gone)) {
        kapi_etcd_watch *w = CONTAINER(gone->next, kapi_etcd_watch, link);
        list_remove(&w->link);
        kapi_etcd__watch_destroy(w);
    }
}

/* Waits until due for the socket, a kick or the time. */
static void io_wait(kapi_etcd_client *c, int64_t due)
{
    struct pollfd p[2] = {{.fd = c->wake, .events = POLLIN}, {.fd = c->fd}};
    int64_t now = kapi_time_mono_ns();
    int timeout = due > now ? (int)((due - now + MS - 1) / MS) : 0;
    /* TLS may hold decrypted bytes the socket no longer signals */
    bool tls_pending = c->state == CONN_READY && c->ssl && SSL_pending(c->ssl) > 0;
    p[1].events = c->state == CONN_TCP ? POLLOUT : POLLIN;
    if (c->want_write)
        p[1].events |= POLLOUT;
    pthread_mutex_lock(&c->mu);
    bool sleep = !c->dirty && !tls_pending;
    c->sleeping = sleep;
    pthread_mutex_unlock(&c->mu);
    poll(p, c->fd >= 0 ? 2 : 1, sleep ? timeout : 0);
    pthread_mutex_lock(&c->mu);
    c->sleeping = false;
    pthread_mutex_unlock(&c->mu);
    uint64_t kicks;
    if (p[0].revents & POLLIN)
        (void)!read(c->wake, &kicks, sizeof(kicks));
    if (c->fd < 0 || (!p[1].revents && !tls_pending))
        return;
    now = kapi_time_mono_ns();
    if (c->state == CONN_TCP)
        tcp_step(c, now);
    else if (c->state == CONN_TLS)
        tls_step(c, now);
    else if (c->state == CONN_READY)
        conn_read(c, now);
}

/* Starts or times out a connection attempt when there is work for one. */
static void conn_attempt(kapi_etcd_client *c, int64_t now, bool work, int64_t *due)
{
    if (c->state == CONN_NONE && work && now >= c->retry_at)
        conn_start(c, now);
    if ((c->state == CONN_TCP || c->state == CONN_TLS) && now >= c->conn_deadline)
        conn_failed(c, now, "no connection within %lld ms", (long long)(c->connect_timeout / MS));
    if (c->state == CONN_TCP || c->state == CONN_TLS)
        *due = c->conn_deadline < *due ? c->conn_deadline : *due;
    if (c->state == CONN_NONE && work)
        *due = c->retry_at < *due ? c->retry_at : *due;
}

/* One turn of the I/O thread; false once the client is closing. */
static bool io_turn(kapi_etcd_client *c)
{
    int64_t now = kapi_time_mono_ns(), due = now + TICK;
    conn_state was = c->state;
    kapi_etcd__link gone;
    list_init(&gone);
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    c->dirty = false;
    expire_queued(c, now, &due);
    if (c->state == CONN_READY)
        open_calls(c, now);
    bool work = service_watches(c, now, &due, &gone) || !list_empty(&c->queued);
    pthread_mutex_unlock(&c->mu);
    destroy_gone(&gone);
    expire_streams(c, now, &due);
    conn_attempt(c, now, work, &due);
    if (c->state == CONN_READY)
        conn_tend(c, now, &due);
    if (c->state == CONN_READY && was != CONN_READY)
        due = now; /* a connection came up: give the waiting their streams now */
    io_wait(c, due);
    return true;
}

/* The client's end: everything still running ends. */
static void io_close(kapi_etcd_client *c)
{
    kapi_etcd__link gone;
    list_init(&gone);
    conn_drop(c, kapi_time_mono_ns(), "the client was closed");
    pthread_mutex_lock(&c->mu);
    while (!list_empty(&c->queued)) {
        call *k = CONTAINER(c->queued.next, call, link);
        list_remove(&k->link);
        finish_locked(c, k, KAPI_ETCD_UNAVAILABLE, kapi_xstrdup("the client was closed"));
    }
    while (!list_empty(&c->watches)) {
        kapi_etcd_watch *w = CONTAINER(c->watches.next, kapi_etcd_watch, link);
        list_remove(&w->link);
        if (w->end == KAPI_ETCD_OK) {
            w->end = KAPI_ETCD_BROKEN;
            w->end_why = kapi_xstrdup("the client was closed");
        }
        pthread_cond_signal(&w->cv);
        if (kapi_etcd__watch_release(w))
            list_insert(&gone, &w->link);
    }
    pthread_mutex_unlock(&c->mu);
    destroy_gone(&gone);
}

static void *io_main(void *arg)
{
    kapi_etcd_client *c = arg;
    while (io_turn(c))
        ;
    io_close(c);
    return NULL;
}

/* ---- the public side ---- */

static void client_dispose(kapi_etcd_client *c)
{
    for (size_t i = 0; i < c->neps; i++)
        endpoint_dispose(&c->eps[i]);
    free(c->eps);
    SSL_CTX_free(c->tls);
    kapi_buf_dispose(&c->outb);
    pthread_mutex_destroy(&c->mu);
    if (c->wake >= 0)
        close(c->wake);
    free(c);
}

static int64_t or_default(int v, int def)
{
    return (int64_t)(v > 0 ? v : def) * MS;
}

static kapi_error *client_setup(kapi_etcd_client *c, const kapi_etcd_options *o)
{
    kapi_error *err = endpoints_parse(c, o->servers);
    bool tls = false;
    for (size_t i = 0; !err && i < c->neps; i++)
        tls |= c->eps[i].tls;
    if (!err && tls)
        err = tls_setup(c, o);
    c->call_timeout = or_default(o->call_timeout_ms, DEFAULT_CALL_TIMEOUT_MS);
    c->connect_timeout = or_default(o->connect_timeout_ms, DEFAULT_CONNECT_TIMEOUT_MS);
    c->keepalive = or_default(o->keepalive_ms, DEFAULT_KEEPALIVE_MS);
    c->max_send = o->max_send_bytes ? o->max_send_bytes : DEFAULT_MAX_SEND;
    c->max_recv = o->max_recv_bytes ? o->max_recv_bytes : DEFAULT_MAX_RECV;
    c->watch_queue = o->watch_queue_bytes ? o->watch_queue_bytes : DEFAULT_WATCH_QUEUE;
    return err;
}

kapi_error *kapi_etcd_client_new(kapi_etcd_client **out, const kapi_etcd_options *o)
{
    kapi_etcd_client *c = kapi_xcalloc(1, sizeof(*c));
    kapi_error *err;
    sigset_t all, old;
    *out = NULL;
    c->fd = c->wake = -1;
    pthread_mutex_init(&c->mu, NULL);
    list_init(&c->queued);
    list_init(&c->watches);
    list_init(&c->streams);
    kapi_buf_init(&c->outb);
    if ((err = client_setup(c, o)) != NULL)
        goto done;
    if ((c->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "etcd: eventfd: %s", strerror(errno));
        goto done;
    }
    /* Signals go to the other threads; a write to a closed TLS socket gives EPIPE here. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rv = pthread_create(&c->thread, NULL, io_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rv != 0)
        err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "etcd: thread: %s", strerror(rv));
    else
        pthread_setname_np(c->thread, "kapi-etcd-io");
done:
    if (err)
        client_dispose(c);
    else
        *out = c;
    return err;
}

void kapi_etcd_client_free(kapi_etcd_client *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    kapi_etcd__kick(c);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    client_dispose(c);
}

const char *kapi_etcd_client_endpoint(kapi_etcd_client *c)
{
    pthread_mutex_lock(&c->mu);
    const char *url = c->eps[c->cur].url;
    pthread_mutex_unlock(&c->mu);
    return url;
}

void kapi_etcd__watch_add(kapi_etcd_client *c, kapi_etcd_watch *w)
{
    pthread_mutex_lock(&c->mu);
    list_insert(c->watches.prev, &w->link);
    kapi_etcd__kick(c);
    pthread_mutex_unlock(&c->mu);
}

bool kapi_etcd__watch_release(kapi_etcd_watch *w)
{
    return --w->refs == 0;
}

/* The one gRPC message of an answer: its length, or false when there is not exactly
 * one, uncompressed. */
static bool one_message(const kapi_buf *b, size_t *len)
{
    const unsigned char *p = (const unsigned char *)b->ptr;
    if (b->len < KAPI_ETCD__PREFIX || p[0] != 0)
        return false;
    *len = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
    return *len == b->len - KAPI_ETCD__PREFIX;
}

kapi_etcd_rc kapi_etcd__call(kapi_etcd_client *c, const char *path, kapi_buf *req, int64_t deadline,
                             char **body, size_t *len, kapi_error **err)
{
    call k = {.path = path, .req = *req};
    kapi_buf_init(req);
    kapi_buf_init(&k.body);
    k.deadline = deadline ? deadline : kapi_time_mono_ns() + c->call_timeout;
    if (k.req.len - KAPI_ETCD__PREFIX > c->max_send) {
        k.rc = KAPI_ETCD_TOO_LARGE;
        k.why = kapi_xprintf("a request of %zu bytes, over the bound of %zu",
                             k.req.len - KAPI_ETCD__PREFIX, c->max_send);
        k.where = kapi_etcd_client_endpoint(c);
        goto done;
    }
    kapi_park_init(&k.done);
    pthread_mutex_lock(&c->mu);
    list_insert(c->queued.prev, &k.link);
    kapi_etcd__kick(c);
    pthread_mutex_unlock(&c->mu);
    kapi_park_wait(&k.done);
    kapi_park_dispose(&k.done);
    if (k.rc == KAPI_ETCD_OK && !one_message(&k.body, len)) {
        k.rc = KAPI_ETCD_PROTOCOL;
        k.why = kapi_xstrdup("the answer is not one uncompressed gRPC message");
    }
done:
    if (k.rc == KAPI_ETCD_OK)
        *body = kapi_buf_detach(&k.body, NULL);
    else
        kapi_etcd__error(err, k.rc, k.where, "%s", k.why);
    free(k.why);
    kapi_buf_dispose(&k.req);
    kapi_buf_dispose(&k.body);
    return k.rc;
}
