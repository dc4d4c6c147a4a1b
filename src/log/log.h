/*
 * log: the server's log, in the formats Kubernetes components write.
 *
 * - text (the default): klog's lines, "I1126 12:00:00.000000    1234 file.c:42] message",
 *   the severity letter (I, W, E), month and day, the time with microseconds, the
 *   thread id right-aligned in seven columns, the source file's base name and line;
 *   structured lines (klog's InfoS) quote the message and append key="value" pairs.
 * - json (--logging-format=json): one object per line as component-base's JSON logger
 *   writes it: {"ts":<epoch milliseconds>,"caller":"file.c:42","msg":"...","v":0,...}
 *   with the key/value pairs after; an error line has "err" and no "v".
 *
 * Verbosity is klog's -v: a line at level v is written when v <= the level set; warnings
 * and errors always. The KAPI_LOG_* macros test the level before they evaluate their
 * arguments, so a line that is off costs one comparison. Every line is one write(2) under
 * a lock: lines of different threads never interleave. State is process-wide, set once at
 * start (kapi_log_setup) before the threads that log exist.
 */
#ifndef KAPI_LOG_H
#define KAPI_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

/* The formats of --logging-format. */
typedef enum kapi_log_format {
    KAPI_LOG_TEXT,
    KAPI_LOG_JSON,
} kapi_log_format;

/* klog's severities, in its order. */
typedef enum kapi_log_severity {
    KAPI_LOG_SEV_INFO,
    KAPI_LOG_SEV_WARNING,
    KAPI_LOG_SEV_ERROR,
} kapi_log_severity;

/* A key/value pair of a structured line: a string (s; NULL prints as "<nil>") or, when
 * is_num, the integer n (unquoted). */
typedef struct kapi_log_kv {
    const char *key;
    kapi_str s;
    long long n;
    bool is_num;
} kapi_log_kv;

#define KAPI_LOG_STR(k, v) kapi_log_str((k), (v))
#define KAPI_LOG_STRN(k, v) ((kapi_log_kv){(k), (v), 0, false})
#define KAPI_LOG_INT(k, v) ((kapi_log_kv){(k), KAPI_STR_NULL, (long long)(v), true})

static inline kapi_log_kv kapi_log_str(const char *key, const char *v)
{
    return (kapi_log_kv){key, v ? kapi_str_c(v) : KAPI_STR_NULL, 0, false};
}

/* The verbosity (-v); read by the macros, set by kapi_log_setup. */
extern int kapi_log__verbosity;

/* Sets the verbosity, the format and the file descriptor lines go to (2 by default). */
void kapi_log_setup(int verbosity, kapi_log_format format, int fd);
/* The format a --logging-format value names ("text", "json"); false if none. */
bool kapi_log_parse_format(const char *name, kapi_log_format *out);
/* True when lines at level v are written. */
#define KAPI_LOG_V(v) ((v) <= kapi_log__verbosity)

/* printf-style lines (klog's Infof, Warningf, Errorf): the message is the formatted text. */
#define KAPI_LOG_INFO(v, ...)                                                                      \
    do {                                                                                           \
        if (KAPI_LOG_V(v))                                                                         \
            kapi_log__printf(KAPI_LOG_SEV_INFO, (v), __FILE__, __LINE__, __VA_ARGS__);             \
    } while (0)
#define KAPI_LOG_WARNING(...)                                                                      \
    kapi_log__printf(KAPI_LOG_SEV_WARNING, 0, __FILE__, __LINE__, __VA_ARGS__)
#define KAPI_LOG_ERROR(...) kapi_log__printf(KAPI_LOG_SEV_ERROR, 0, __FILE__, __LINE__, __VA_ARGS__)

/* Structured lines (klog's InfoS, ErrorS): a constant message and key/value pairs made
 * with KAPI_LOG_STR and KAPI_LOG_INT; ErrorS's err is a string, NULL for none. */
#define KAPI_LOG_INFOS(v, msg, ...)                                                                \
    do {                                                                                           \
        if (KAPI_LOG_V(v)) {                                                                       \
            const kapi_log_kv kvs_[] = {{NULL, {NULL, 0}, 0, false}, __VA_ARGS__};                 \
            kapi_log__structured(KAPI_LOG_SEV_INFO, (v), __FILE__, __LINE__, (msg), NULL,          \
                                 kvs_ + 1, KAPI_ARRAY_LEN(kvs_) - 1);                              \
        }                                                                                          \
    } while (0)
#define KAPI_LOG_ERRORS(err, msg, ...)                                                             \
    do {                                                                                           \
        const kapi_log_kv kvs_[] = {{NULL, {NULL, 0}, 0, false}, __VA_ARGS__};                     \
        kapi_log__structured(KAPI_LOG_SEV_ERROR, 0, __FILE__, __LINE__, (msg), (err), kvs_ + 1,    \
                             KAPI_ARRAY_LEN(kvs_) - 1);                                            \
    } while (0)

void kapi_log__printf(kapi_log_severity sev, int v, const char *file, int line, const char *fmt,
                      ...) KAPI_PRINTF(5, 6);
void kapi_log__structured(kapi_log_severity sev, int v, const char *file, int line, const char *msg,
                          const char *err, const kapi_log_kv *kvs, size_t n);

/* Appends one line (with its newline) as the logger formats it, with the wall-clock time
 * now_ns and thread id tid: what the macros write, for the tests. */
void kapi_log_format_line(kapi_buf *out, kapi_log_format format, kapi_log_severity sev, int v,
                          int64_t now_ns, long tid, const char *file, int line, const char *msg,
                          bool quoted, const char *err, const kapi_log_kv *kvs, size_t n);

/* Appends s as a JSON string (quotes included), escaped as Go's zap encoder escapes it:
 * '"', '\\' and control characters escaped, bytes that are not UTF-8 as \ufffd. */
void kapi_log_json_string(kapi_buf *out, kapi_str s);

#endif
