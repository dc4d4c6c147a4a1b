/*
 * log: klog's text lines and component-base's JSON lines, one write(2) each (log.h).
 */
#include "log/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/go.h"

/* A longer line is cut here (and still ends with its newline). */
#define MAX_LINE (64 * 1024)

int kapi_log__verbosity;
static kapi_log_format log_format = KAPI_LOG_TEXT;
static int log_fd = 2;
static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;

void kapi_log_setup(int verbosity, kapi_log_format format, int fd)
{
    kapi_log__verbosity = verbosity;
    log_format = format;
    log_fd = fd;
}

bool kapi_log_parse_format(const char *name, kapi_log_format *out)
{
    static const char *const names[] = {[KAPI_LOG_TEXT] = "text", [KAPI_LOG_JSON] = "json"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(names); i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (kapi_log_format)i;
            return true;
        }
    }
    return false;
}

void kapi_log_json_string(kapi_buf *out, kapi_str s)
{
    kapi_buf_putc(out, '"');
    for (size_t i = 0; i < s.len;) {
        unsigned char c = (unsigned char)s.ptr[i];
        size_t w = 1;
        if (c >= 0x80) {
            if (kapi_go_rune(s.ptr + i, s.len - i, &w) < 0)
                kapi_buf_puts(out, "\\ufffd");
            else
                kapi_buf_put(out, s.ptr + i, w);
        } else if (c == '"' || c == '\\') {
            kapi_buf_putc(out, '\\');
            kapi_buf_putc(out, (char)c);
        } else if (c == '\n' || c == '\r' || c == '\t') {
            kapi_buf_putc(out, '\\');
            kapi_buf_putc(out, c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        } else if (c < 0x20) {
            kapi_buf_printf(out, "\\u%04x", c);
        } else {
            kapi_buf_putc(out, (char)c);
        }
        i += w;
    }
    kapi_buf_putc(out, '"');
}

/* klog's writeStringValue: a value with a line break as an indented block, "=<\n\tline\n >";
 * else Go-quoted. */
static void text_value(kapi_buf *out, kapi_str s)
{
    const char *nl = s.len ? memchr(s.ptr, '\n', s.len) : NULL;
    if (!nl) {
        kapi_buf_putc(out, '=');
        kapi_go_quote(out, s.ptr ? s.ptr : "", s.len);
        return;
    }
    kapi_buf_puts(out, "=<\n");
    while (s.len) {
        kapi_str line;
        bool last = !kapi_str_cut(&s, '\n', &line);
        kapi_buf_putc(out, '\t');
        kapi_buf_put(out, line.ptr, line.len);
        if (!last || line.len)
            kapi_buf_putc(out, '\n');
    }
    kapi_buf_puts(out, " >");
}

static void put_kv(kapi_buf *out, kapi_log_format format, const kapi_log_kv *kv)
{
    kapi_str nil = KAPI_STR("<nil>");
    if (format == KAPI_LOG_TEXT) {
        kapi_buf_putc(out, ' ');
        kapi_buf_puts(out, kv->key);
        if (kv->is_num)
            kapi_buf_printf(out, "=%lld", kv->n);
        else
            text_value(out, kv->s.ptr ? kv->s : nil);
        return;
    }
    kapi_buf_putc(out, ',');
    kapi_log_json_string(out, kapi_str_c(kv->key));
    kapi_buf_putc(out, ':');
    if (kv->is_num)
        kapi_buf_printf(out, "%lld", kv->n);
    else if (kv->s.ptr)
        kapi_log_json_string(out, kv->s);
    else
        kapi_buf_puts(out, "null");
}

static const char *base_name(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}

/* klog's header: "Lmmdd hh:mm:ss.uuuuuu threadid file:line] ". */
static void text_header(kapi_buf *out, kapi_log_severity sev, int64_t now_ns, long tid,
                        const char *file, int line)
{
    static const char letters[] = "IWE";
    time_t secs = (time_t)(now_ns / 1000000000);
    struct tm tm;
    localtime_r(&secs, &tm);
    kapi_buf_printf(out, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %s:%d] ", letters[sev],
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    (long)(now_ns % 1000000000 / 1000), tid, base_name(file), line);
}

void kapi_log_format_line(kapi_buf *out, kapi_log_format format, kapi_log_severity sev, int v,
                          int64_t now_ns, long tid, const char *file, int line, const char *msg,
                          bool quoted, const char *err, const kapi_log_kv *kvs, size_t n)
{
    if (format == KAPI_LOG_TEXT) {
        text_header(out, sev, now_ns, tid, file, line);
        if (quoted)
            kapi_go_quote(out, msg, strlen(msg));
        else
            kapi_buf_puts(out, msg);
        if (err) {
            kapi_log_kv e = KAPI_LOG_STR("err", err);
            put_kv(out, format, &e);
        }
    } else {
        kapi_buf_printf(out, "{\"ts\":%lld.%03lld,\"caller\":", (long long)(now_ns / 1000000),
                        (long long)(now_ns % 1000000 / 1000));
        char caller[256];
        snprintf(caller, sizeof(caller), "%s:%d", base_name(file), line);
        kapi_log_json_string(out, kapi_str_c(caller));
        kapi_buf_puts(out, ",\"msg\":");
        kapi_log_json_string(out, kapi_str_c(msg));
        if (sev != KAPI_LOG_SEV_ERROR)
            kapi_buf_printf(out, ",\"v\":%d", v);
    }
    for (size_t i = 0; i < n; i++)
        put_kv(out, format, &kvs[i]);
    if (format == KAPI_LOG_JSON && err) {
        kapi_log_kv e = KAPI_LOG_STR("err", err);
        put_kv(out, format, &e);
    }
    if (format == KAPI_LOG_JSON)
        kapi_buf_putc(out, '}');
    if (out->len == 0 || out->ptr[out->len - 1] != '\n')
        kapi_buf_putc(out, '\n');
}

/* The line in one write(2), under the lock (a short write goes on with the rest). */
static void emit(kapi_buf *b)
{
    if (b->len > MAX_LINE) {
        b->len = MAX_LINE;
        b->ptr[MAX_LINE - 1] = '\n';
    }
    pthread_mutex_lock(&write_mu);
    kapi_write_all(log_fd, b->ptr, b->len); /* nowhere to say it failed */
    pthread_mutex_unlock(&write_mu);
}

static void write_line(kapi_log_severity sev, int v, const char *file, int line, const char *msg,
                       bool quoted, const char *err, const kapi_log_kv *kvs, size_t n)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_log_format_line(&b, log_format, sev, v, kapi_time_now_ns(), (long)gettid(), file, line,
                         msg, quoted, err, kvs, n);
    emit(&b);
    kapi_buf_dispose(&b);
}

void kapi_log__printf(kapi_log_severity sev, int v, const char *file, int line, const char *fmt,
                      ...)
{
    kapi_buf msg;
    va_list ap;
    kapi_buf_init(&msg);
    va_start(ap, fmt);
    kapi_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    write_line(sev, v, file, line, msg.ptr, false, NULL, NULL, 0);
    kapi_buf_dispose(&msg);
}

void kapi_log__structured(kapi_log_severity sev, int v, const char *file, int line, const char *msg,
                          const char *err, const kapi_log_kv *kvs, size_t n)
{
    write_line(sev, v, file, line, msg, true, err, kvs, n);
}
