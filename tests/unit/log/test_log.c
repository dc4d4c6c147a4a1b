/* Unit tests for src/log: klog's text header and key/values, the JSON logger's fields and
 * string escaping, the verbosity test and --logging-format's names. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log/log.h"
#include "test.h"

/* 2024-11-26T12:00:00.001234Z */
static const int64_t when = 1732622400001234567LL;

static char *line(kapi_log_format f, kapi_log_severity sev, int v, const char *msg, bool quoted,
                  const char *err, const kapi_log_kv *kvs, size_t n)
{
    kapi_buf b;
    kapi_buf_init(&b);
    setenv("TZ", "UTC", 1);
    tzset();
    kapi_log_format_line(&b, f, sev, v, when, 1234, "src/api/handler.c", 42, msg, quoted, err, kvs,
                         n);
    return kapi_buf_detach(&b, NULL);
}

#define CHECK_LINE(got, want)                                                                      \
    do {                                                                                           \
        char *got_ = (got);                                                                        \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

/* klog's header: severity, MMDD, time with microseconds, the id in seven columns, the
 * base name of the file; a printf-style message bare, one newline at the end. */
TEST(log_text_header)
{
    CHECK_LINE(line(KAPI_LOG_TEXT, KAPI_LOG_SEV_INFO, 0, "serving", false, NULL, NULL, 0),
               "I1126 12:00:00.001234    1234 handler.c:42] serving\n");
    CHECK_LINE(line(KAPI_LOG_TEXT, KAPI_LOG_SEV_WARNING, 0, "careful\n", false, NULL, NULL, 0),
               "W1126 12:00:00.001234    1234 handler.c:42] careful\n");
    CHECK_LINE(line(KAPI_LOG_TEXT, KAPI_LOG_SEV_ERROR, 0, "broken", false, NULL, NULL, 0),
               "E1126 12:00:00.001234    1234 handler.c:42] broken\n");
}

/* InfoS: the message quoted, strings quoted as Go quotes them, numbers bare, a value with
 * line breaks as klog's indented block, an error as err=. */
TEST(log_text_key_values)
{
    const kapi_log_kv kvs[] = {KAPI_LOG_STR("verb", "GET"), KAPI_LOG_STR("URI", "/api?x=\"1\""),
                               KAPI_LOG_INT("resp", 200), KAPI_LOG_STR("none", NULL),
                               KAPI_LOG_STRN("ns", ((kapi_str){"abcdef", 3}))};
    CHECK_LINE(line(KAPI_LOG_TEXT, KAPI_LOG_SEV_INFO, 2, "HTTP", true, NULL, kvs, 5),
               "I1126 12:00:00.001234    1234 handler.c:42] \"HTTP\" verb=\"GET\" "
               "URI=\"/api?x=\\\"1\\\"\" resp=200 none=\"<nil>\" ns=\"abc\"\n");
    const kapi_log_kv multi[] = {KAPI_LOG_STR("text", "a\n\nb"), KAPI_LOG_STR("end", "c\n")};
    CHECK_LINE(
        line(KAPI_LOG_TEXT, KAPI_LOG_SEV_ERROR, 0, "two\tlines", true, "it failed", multi, 2),
        "E1126 12:00:00.001234    1234 handler.c:42] \"two\\tlines\" err=\"it failed\" "
        "text=<\n\ta\n\t\n\tb\n > end=<\n\tc\n >\n");
}

/* The JSON logger: ts in epoch milliseconds, caller, msg, v (none on an error), the pairs
 * in order, err last. */
TEST(log_json_fields)
{
    const kapi_log_kv kvs[] = {KAPI_LOG_STR("verb", "GET"), KAPI_LOG_INT("resp", 404),
                               KAPI_LOG_STR("none", NULL)};
    CHECK_LINE(line(KAPI_LOG_JSON, KAPI_LOG_SEV_INFO, 2, "HTTP", true, NULL, kvs, 3),
               "{\"ts\":1732622400001.234,\"caller\":\"handler.c:42\",\"msg\":\"HTTP\",\"v\":2,"
               "\"verb\":\"GET\",\"resp\":404,\"none\":null}\n");
    CHECK_LINE(line(KAPI_LOG_JSON, KAPI_LOG_SEV_ERROR, 0, "store", true, "gone", kvs, 1),
               "{\"ts\":1732622400001.234,\"caller\":\"handler.c:42\",\"msg\":\"store\","
               "\"verb\":\"GET\",\"err\":\"gone\"}\n");
    CHECK_LINE(line(KAPI_LOG_JSON, KAPI_LOG_SEV_WARNING, 0, "50% \"done\"\n", false, NULL, NULL, 0),
               "{\"ts\":1732622400001.234,\"caller\":\"handler.c:42\",\"msg\":\"50% "
               "\\\"done\\\"\\n\",\"v\":0}\n");
}

/* JSON strings: quotes, backslashes and control characters escaped, UTF-8 kept, bytes that
 * are not UTF-8 replaced. */
TEST(log_json_escaping)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain", "\"plain\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"\n\r\t\x01\x1f", "\"\\n\\r\\t\\u0001\\u001f\""},
        {"caf\xc3\xa9 \xe2\x82\xac", "\"caf\xc3\xa9 \xe2\x82\xac\""},
        {"bad\xff\xc3", "\"bad\\ufffd\\ufffd\""},
        {"<&>", "\"<&>\""},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_log_json_string(&b, kapi_str_c(cases[i].in));
        CHECK_STR_EQ(b.ptr, cases[i].want);
        kapi_buf_dispose(&b);
    }
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_log_json_string(&b, (kapi_str){"a\0b", 3});
    CHECK_STR_EQ(b.ptr, "\"a\\u0000b\"");
    kapi_buf_dispose(&b);
}

/* A line over the level set is not formatted: its arguments are not evaluated. */
static int evaluated;
static const char *counted(void)
{
    evaluated++;
    return "x";
}

TEST(log_verbosity)
{
    int fds[2];
    char got[512] = "";
    CHECK(pipe(fds) == 0);
    kapi_log_setup(1, KAPI_LOG_TEXT, fds[1]);
    evaluated = 0;
    KAPI_LOG_INFO(2, "off %s", counted());
    KAPI_LOG_INFOS(2, "off", KAPI_LOG_STR("k", counted()));
    CHECK_INT_EQ(evaluated, 0);
    KAPI_LOG_INFO(1, "on %s", counted());
    KAPI_LOG_WARNING("warned %d", 3);
    KAPI_LOG_INFOS(0, "structured", KAPI_LOG_INT("n", 7));
    CHECK_INT_EQ(evaluated, 1);
    kapi_log_setup(0, KAPI_LOG_TEXT, 2);
    close(fds[1]);
    ssize_t n = read(fds[0], got, sizeof(got) - 1);
    close(fds[0]);
    CHECK(n > 0);
    got[n > 0 ? n : 0] = '\0';
    CHECK(strstr(got, "] on x\nW") != NULL);
    CHECK(strstr(got, "] warned 3\nI") != NULL);
    CHECK(strstr(got, "] \"structured\" n=7\n") != NULL);
    CHECK(strstr(got, "off") == NULL);
}

TEST(log_parse_format)
{
    kapi_log_format f = KAPI_LOG_TEXT;
    CHECK(kapi_log_parse_format("json", &f) && f == KAPI_LOG_JSON);
    CHECK(kapi_log_parse_format("text", &f) && f == KAPI_LOG_TEXT);
    CHECK(!kapi_log_parse_format("JSON", &f));
    CHECK(!kapi_log_parse_format("", &f));
}
