/* loopback: exchanges driven without a socket (see loopback.h). */
#include "loopback.h"

#include <string.h>
#include <time.h>

#include "test.h"

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

void loopback_start(loopback *lb, const kapi_http_config *cfg)
{
    kapi_error *err;
    memset(lb, 0, sizeof(*lb));
    kapi_buf_init(&lb->out);
    CHECK(uv_loop_init(&lb->loop) == 0);
    if ((err = kapi_http__server_new_loopback(&lb->srv, &lb->loop, cfg)) != NULL)
        test_fail(__FILE__, __LINE__, "server_new_loopback: %s", err->message);
    uv_timer_init(&lb->loop, &lb->tick);
    uv_timer_start(&lb->tick, on_tick, 5, 5);
    lb->conn = kapi_http__conn_loopback(lb->srv, &lb->out);
}

/* The conn is still among the server's (it is freed only on the loop thread). */
static bool conn_alive(loopback *lb)
{
    for (kapi_conn *c = lb->srv->conns; c; c = c->next)
        if (c == lb->conn)
            return true;
    lb->conn = NULL;
    return false;
}

void loopback_send(loopback *lb, const char *bytes)
{
    CHECK(lb->conn && conn_alive(lb));
    kapi_http__conn_input(lb->conn, bytes, strlen(bytes));
}

void loopback_eof(loopback *lb)
{
    CHECK(lb->conn && conn_alive(lb));
    kapi_http__conn_eof(lb->conn);
}

static int count(const kapi_buf *b, const char *needle)
{
    int n = 0;
    size_t len = strlen(needle);
    for (const char *p = b->ptr;
         b->len && (p = memmem(p, b->len - (size_t)(p - b->ptr), needle, len)) != NULL; p += len)
        n++;
    return n;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool loopback_wait_for(loopback *lb, const char *needle, int n)
{
    uint64_t until = now_ms() + 5000;
    while (count(&lb->out, needle) < n && now_ms() < until)
        uv_run(&lb->loop, UV_RUN_ONCE);
    return count(&lb->out, needle) >= n;
}

bool loopback_wait_closed(loopback *lb)
{
    uint64_t until = now_ms() + 5000;
    while (conn_alive(lb) && now_ms() < until)
        uv_run(&lb->loop, UV_RUN_ONCE);
    return !conn_alive(lb);
}

static void on_done(void *ctx)
{
    loopback *lb = ctx;
    lb->done = true;
}

void loopback_stop(loopback *lb)
{
    uint64_t until = now_ms() + 5000;
    kapi_http_server_shutdown(lb->srv, on_done, lb);
    while (!lb->done && now_ms() < until)
        uv_run(&lb->loop, UV_RUN_ONCE);
    CHECK(lb->done);
    uv_close((uv_handle_t *)&lb->tick, NULL);
    uv_run(&lb->loop, UV_RUN_DEFAULT);
    kapi_http_server_free(lb->srv);
    CHECK_INT_EQ(uv_loop_close(&lb->loop), 0);
    kapi_buf_dispose(&lb->out);
}
