/*
 * respond: complete responses, whatever the protocol. The handler's thread has the
 * exchange's protocol encode the status and headers and posts them with the body chunks
 * to the loop thread, where the protocol writes the head (with the body's length) and
 * the chunks into the conn's queue, which takes them as the socket drains. Also the chunk
 * helpers, reason phrases and header lookup.
 */
#include <string.h>
#include <strings.h>

#include "http/http_int.h"

static const struct {
    int code;
    const char *reason;
} reasons[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {203, "Non-Authoritative Information"},
    {204, "No Content"},
    {206, "Partial Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Request Entity Too Large"},
    {414, "Request-URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Requested Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {422, "Unprocessable Entity"},
    {426, "Upgrade Required"},
    {428, "Precondition Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *kapi_http__reason(int status)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(reasons); i++)
        if (reasons[i].code == status)
            return reasons[i].reason;
    return "Unknown";
}

const char *kapi_http_header_get(const kapi_http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

kapi_http_chunk kapi_http_chunk_copy(const void *p, size_t n)
{
    char *copy = kapi_xmalloc(n);
    if (n)
        memcpy(copy, p, n);
    return kapi_http_chunk_take(copy, n);
}

kapi_http_chunk kapi_http_chunk_take(char *p, size_t n)
{
    return (kapi_http_chunk){.ptr = p, .len = n, .release = free, .owner = p};
}

void kapi_http__chunks_release(kapi_http_chunk *chunks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (chunks[i].release)
            chunks[i].release(chunks[i].owner);
    free(chunks);
}

void kapi_http__msg_free(kapi_http_msg *m)
{
    kapi_http__chunks_release(m->chunks, m->nchunks);
    kapi_buf_dispose(&m->head);
    if (m->stream)
        kapi_http__stream_unref(m->stream);
    free(m);
}

/* Headers the http layer writes itself; the handler's are dropped. */
static bool reserved_header(const char *name)
{
    static const char *const reserved[] = {"content-length", "transfer-encoding", "connection"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(reserved); i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return true;
    return false;
}

/* A header that would split the response (CR or LF) is dropped, never written. */
static bool unsafe_header(const kapi_http_header *h)
{
    return !h->name || !h->value || strpbrk(h->name, "\r\n:") || strpbrk(h->value, "\r\n");
}

bool kapi_http__header_allowed(const kapi_http_header *h)
{
    return !unsafe_header(h) && !reserved_header(h->name);
}

kapi_http_msg *kapi_http__msg_new(kapi_http_msg_kind kind, kapi_http_exchange *ex, int status,
                                  const kapi_http_header *headers, size_t nheaders)
{
    kapi_http_msg *m = kapi_xcalloc(1, sizeof(*m));
    m->kind = kind;
    m->ex = ex;
    if (status < 100 || status > 999)
        status = 500; /* a handler's bug: still a valid status */
    m->status = status;
    kapi_buf_init(&m->head);
    ex->proto->encode_head(&m->head, status, headers, nheaders);
    return m;
}

void kapi_http_respond(kapi_http_request *pub, int status, const kapi_http_header *headers,
                       size_t nheaders, const kapi_http_chunk *body, size_t nchunks)
{
    kapi_http_exchange *ex = (kapi_http_exchange *)pub;
    kapi_http_msg *m = kapi_http__msg_new(KAPI_HTTP__MSG_RESPONSE, ex, status, headers, nheaders);
    m->chunks = kapi_xmalloc(nchunks * sizeof(*m->chunks));
    m->nchunks = nchunks;
    for (size_t i = 0; i < nchunks; i++) {
        m->chunks[i] = body[i];
        m->body_len += body[i].len;
    }
    kapi_http__post(ex->conn->srv, m);
}

/* What releases the chunks of a complete answer once all of its bytes are taken: its
 * chunks may share memory (one may own what the next points into). */
typedef struct answer_chunks {
    kapi_http_chunk *chunks;
    size_t n;
} answer_chunks;

static void release_answer_chunks(void *p)
{
    answer_chunks *a = p;
    kapi_http__chunks_release(a->chunks, a->n);
    free(a);
}

void kapi_http__write_answer(kapi_http_exchange *ex, int status, kapi_buf *head, size_t body_len,
                             kapi_http_chunk *body, size_t nchunks)
{
    answer_chunks *a;
    ex->proto->write_head(ex, status, head, body_len);
    for (size_t i = 0; i < nchunks; i++) {
        kapi_http_out piece = {.chunk = {body[i].ptr, body[i].len, NULL, NULL}};
        ex->proto->write_body(ex, &piece, 1);
    }
    if (!body)
        return;
    a = kapi_xmalloc(sizeof(*a));
    *a = (answer_chunks){body, nchunks};
    kapi_http_out release = {.chunk = {"", 0, release_answer_chunks, a}};
    ex->proto->write_body(ex, &release, 1);
}

/* 1xx, 204 and 304 answers carry no body, nor does any answer to HEAD. */
static bool has_no_body(int status, const char *method)
{
    return status < 200 || status == 204 || status == 304 || strcmp(method, "HEAD") == 0;
}

void kapi_http__on_response(kapi_http_msg *m)
{
    kapi_http_exchange *ex = m->ex;
    kapi_conn *c = ex->conn;
    bool close_after = ex->close_after || c->srv->shutting_down;
    if (c->dead || c->closing || ex->answered) { /* answered: timed out (conn.c) */
        kapi_http__msg_free(m);
        kapi_http__conn_request_done(ex, true);
        return;
    }
    ex->close_after = close_after;
    if (has_no_body(m->status, ex->pub.method)) {
        kapi_http__chunks_release(m->chunks, m->nchunks);
        m->chunks = NULL;
        m->nchunks = 0;
    }
    kapi_http__write_answer(ex, m->status, &m->head, m->body_len, m->chunks, m->nchunks);
    m->chunks = NULL; /* the conn's queue owns them now */
    m->nchunks = 0;
    kapi_http__msg_free(m);
    kapi_http__conn_flush(c);
    kapi_http__conn_request_done(ex, close_after);
}
