/* h2client: see h2client.h. */
#include "h2client.h"

#include <string.h>

#include "test.h"

static h2c_stream *find(h2_client *h, int32_t id)
{
    for (int i = 0; i < h->n; i++)
        if (h->streams[i].id == id)
            return &h->streams[i];
    return NULL;
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *user)
{
    h2_client *h = user;
    (void)s, (void)flags;
    client_send(&h->c, (const char *)data, len);
    return (ssize_t)len;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    h2c_stream *st = find(user, f->hd.stream_id);
    (void)s, (void)flags;
    if (!st)
        return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        st->status = atoi((const char *)value);
        return 0;
    }
    kapi_buf_put(&st->head, (const char *)name, namelen);
    kapi_buf_puts(&st->head, ": ");
    kapi_buf_put(&st->head, (const char *)value, valuelen);
    kapi_buf_putc(&st->head, '\n');
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *user)
{
    h2c_stream *st = find(user, id);
    (void)flags;
    if (!st)
        return 0;
    kapi_buf_put(&st->body, (const char *)data, len);
    if (!st->hold)
        nghttp2_session_consume(s, id, len);
    else
        nghttp2_session_consume_connection(s, len); /* only the stream's window closes */
    return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
    h2_client *h = user;
    h2c_stream *st = find(h, f->hd.stream_id);
    (void)s;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        h->goaway = true;
        h->goaway_code = f->goaway.error_code;
    } else if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
        for (size_t i = 0; i < f->settings.niv; i++)
            if (f->settings.iv[i].settings_id == NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                h->max_streams = f->settings.iv[i].value;
    } else if (f->hd.type == NGHTTP2_RST_STREAM && st) {
        st->reset = true;
        st->reset_code = f->rst_stream.error_code;
    }
    if (st && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
        (f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS))
        st->done = true;
    return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
    h2c_stream *st = find(user, id);
    (void)s;
    if (st && !st->done && !st->reset) {
        st->reset = true; /* refused or reset before anything arrived */
        st->reset_code = code;
    }
    return 0;
}

void h2c_connect(h2_client *h, int port)
{
    static const unsigned char alpn[] = "\x02h2\x08http/1.1";
    const unsigned char *proto;
    unsigned proto_len;
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    memset(h, 0, sizeof(*h));
    client_connect_alpn(&h->c, port, NULL, NULL, alpn, sizeof(alpn) - 1);
    SSL_get0_alpn_selected(h->c.ssl, &proto, &proto_len);
    CHECK(proto_len == 2 && memcmp(proto, "h2", 2) == 0);
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, on_send);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_max_send_header_block_length(opt, 4u << 20);
    CHECK(nghttp2_session_client_new2(&h->session, cb, h, opt) == 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, NULL, 0);
    while (h->max_streams == 0 && h2c_pump(h))
        ;
    CHECK(h->max_streams > 0);
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
    h2c_stream *st = src->ptr;
    size_t n = st->req_len - st->req_off < len ? st->req_len - st->req_off : len;
    (void)s, (void)id, (void)user;
    memcpy(buf, st->req_body + st->req_off, n);
    st->req_off += n;
    if (st->req_off == st->req_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static nghttp2_nv nv(const char *name, const char *value)
{
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                        NGHTTP2_NV_FLAG_NONE};
}

int h2c_request(h2_client *h, const char *method, const char *path, const char *const *headers,
                const char *body, size_t body_len)
{
    nghttp2_nv nva[512];
    size_t n = 0;
    h2c_stream *st;
    nghttp2_data_provider prd;
    CHECK(h->n < H2C_MAX_STREAMS);
    st = &h->streams[h->n];
    memset(st, 0, sizeof(*st));
    kapi_buf_init(&st->head);
    kapi_buf_init(&st->body);
    nva[n++] = nv(":method", method);
    nva[n++] = nv(":path", path);
    nva[n++] = nv(":scheme", "https");
    nva[n++] = nv(":authority", "127.0.0.1");
    for (size_t i = 0; headers && headers[i] && n < KAPI_ARRAY_LEN(nva); i += 2)
        nva[n++] = nv(headers[i], headers[i + 1]);
    st->req_body = body;
    st->req_len = body_len;
    prd = (nghttp2_data_provider){.source.ptr = st, .read_callback = read_body};
    st->id = nghttp2_submit_request(h->session, NULL, nva, n, body ? &prd : NULL, NULL);
    CHECK(st->id > 0);
    nghttp2_session_send(h->session);
    return h->n++;
}

bool h2c_pump(h2_client *h)
{
    char buf[16384];
    int k;
    nghttp2_session_send(h->session);
    k = SSL_read(h->c.ssl, buf, sizeof(buf));
    if (k <= 0) {
        h->eof = true;
        return false;
    }
    CHECK(nghttp2_session_mem_recv(h->session, (const uint8_t *)buf, (size_t)k) == k);
    nghttp2_session_send(h->session);
    return true;
}

bool h2c_wait(h2_client *h, int i)
{
    while (!h->streams[i].done && !h->streams[i].reset)
        if (!h2c_pump(h))
            return false;
    return true;
}

void h2c_close(h2_client *h)
{
    for (int i = 0; i < h->n; i++) {
        kapi_buf_dispose(&h->streams[i].head);
        kapi_buf_dispose(&h->streams[i].body);
    }
    nghttp2_session_del(h->session);
    client_close(&h->c);
}
