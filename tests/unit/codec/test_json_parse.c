/* codec/json_parse: the fast path of kapi_json_parse against jansson's json_loadb. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "codec/codec_int.h"
#include "codec/json.h"
#include "codec_test.h"
#include "json_same.h"
#include "test.h"

#define FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

/* What a case expects of the fast path. */
typedef enum expect {
    TAKEN,   /* it returns jansson's tree */
    REFUSED, /* jansson refuses the text, so the fast path must give up */
    WIDE,    /* an integer beyond int64 that jansson refuses: the fast path reads Go's real */
} expect;

typedef struct json_case {
    const char *text;
    size_t len;
    expect want;
} json_case;

/* A case by its literal, so that NUL bytes count. */
#define CASE(s, w)                                                                                 \
    {                                                                                              \
        s, sizeof(s) - 1, w                                                                        \
    }

/* Whether kapi_json_duplicates finds a repeated key in the text. */
static bool scan_repeats(const char *text, size_t len)
{
    kapi_dups d;
    kapi_dups_init(&d);
    bool found = kapi_json_duplicates(text, len, &d) > 0;
    kapi_dups_dispose(&d);
    return found;
}

/* Checks one text: the fast path never returns a value jansson would not, and returns
 * jansson's own tree when it returns one, saying whether a key repeats as the scan for
 * duplicates does. A failure names the line and the case. */
static void check_text(const char *text, size_t len, expect want, int line, size_t i)
{
    json_error_t je;
    json_t *slow = json_loadb(text, len, FLAGS, &je);
    bool repeats;
    json_t *fast = kapi_codec__json_parse(text, len, &repeats);
    const char *fail = NULL;
    if (want == WIDE) {
        char *copy = kapi_xstrndup(text, len);
        json_t *real = json_real(strtod(copy, NULL));
        free(copy);
        if (slow || !strstr(je.text, "too big"))
            fail = "jansson does not refuse it as too big an integer";
        else if (!fast || !json_same(fast, real))
            fail = "the fast path does not read it as the real strtod makes of it";
        json_decref(real);
        slow = NULL;
    } else if (want == REFUSED && slow)
        fail = "jansson takes what the case says it refuses";
    else if (want == TAKEN && !slow)
        fail = "jansson refuses the case";
    else if (fast && !slow)
        fail = "the fast path takes what jansson refuses";
    else if (want == TAKEN && !fast)
        fail = "the fast path gave up";
    else if (fast && (!json_equal(fast, slow) || !json_same(fast, slow)))
        fail = "the fast path's tree differs from jansson's";
    else if (fast && repeats != scan_repeats(text, len))
        fail = "the fast path and the scan for duplicates disagree on a repeated key";
    if (fail)
        test_fail(__FILE__, line, "case %zu: %s: `%.*s`", i, fail, len > 200 ? 200 : (int)len,
                  text);
    json_decref(fast);
    json_decref(slow);
}

static void check_cases(const json_case *cases, size_t n, int line)
{
    for (size_t i = 0; i < n; i++)
        check_text(cases[i].text, cases[i].len, cases[i].want, line, i);
}

TEST(codec_json_parse_numbers)
{
    static const json_case cases[] = {
        CASE("0", TAKEN),
        CASE("-0", TAKEN), /* an integer 0, not a real -0 */
        CASE("7", TAKEN),
        CASE("-12", TAKEN),
        CASE("123456789012345678", TAKEN),
        CASE("1234567890123456789", TAKEN),
        CASE("9223372036854775807", TAKEN),
        CASE("-9223372036854775808", TAKEN),
        CASE("9223372036854775808", WIDE),
        CASE("-9223372036854775809", WIDE),
        CASE("9999999999999999999", WIDE),
        CASE("18446744073709551616", WIDE),
        CASE("100000000000000000000", WIDE), /* Go's JSON for the float64 1e20 */
        CASE("123456789012345678901234567890", WIDE),
        CASE("0.0", TAKEN),
        CASE("-0.0", TAKEN),
        CASE("1.5", TAKEN),
        CASE("1E+2", TAKEN),
        CASE("1e2", TAKEN),
        CASE("1E-2", TAKEN),
        CASE("0e0", TAKEN),
        CASE("-0.000001", TAKEN),
        CASE("0.1", TAKEN),
        CASE("3.141592653589793238462643383279", TAKEN),
        CASE("1e308", TAKEN),
        CASE("1.7976931348623157e308", TAKEN),
        CASE("-1.7976931348623157e308", TAKEN),
        CASE("2.2250738585072014e-308", TAKEN),
        CASE("4.9e-324", TAKEN),
        CASE("1e-400", TAKEN), /* underflows to 0: jansson refuses only overflow */
        CASE("1e309", REFUSED),
        CASE("-1e309", REFUSED),
        CASE("1.7976931348623159e308", REFUSED),
        CASE("1e99999999999999999999", REFUSED),
        /* Longer than the fast path's buffer for a real, so copied to the heap. */
        CASE("1.00000000000000000000000000000000000000000000000000000000000000000001", TAKEN),
        CASE("-0."
             "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
             "000000000000000000000000000000000000001e-200",
             TAKEN),
        CASE("1234567890123456789012345678901234567890123456789012345678901234567890e238", TAKEN),
        CASE("1234567890123456789012345678901234567890123456789012345678901234567890e240", REFUSED),
        CASE("01", REFUSED),
        CASE("-01", REFUSED),
        CASE("00", REFUSED),
        CASE("-", REFUSED),
        CASE("+1", REFUSED),
        CASE("1.", REFUSED),
        CASE(".5", REFUSED),
        CASE("1.e5", REFUSED),
        CASE("1e", REFUSED),
        CASE("1e+", REFUSED),
        CASE("1E-", REFUSED),
        CASE("0x10", REFUSED),
        CASE("1.5.3", REFUSED),
        CASE("- 1", REFUSED),
        CASE("NaN", REFUSED),
        CASE("Infinity", REFUSED),
        CASE("-Infinity", REFUSED),
        CASE("[1e309]", REFUSED),
        CASE("[-0,0.0,1E+2,9223372036854775807]", TAKEN),
    };
    check_cases(cases, KAPI_ARRAY_LEN(cases), __LINE__);
    json_t *v = kapi_codec__json_parse("-0", 2, NULL);
    CHECK(json_is_integer(v) && json_integer_value(v) == 0);
    json_decref(v);
    v = kapi_codec__json_parse("-9223372036854775808", 20, NULL);
    CHECK(json_is_integer(v) && json_integer_value(v) == INT64_MIN);
    json_decref(v);
    v = kapi_codec__json_parse("1E+2", 4, NULL);
    CHECK(json_is_real(v) && json_real_value(v) == 100.0);
    json_decref(v);
}

TEST(codec_json_parse_strings)
{
    static const json_case cases[] = {
        CASE("\"\"", TAKEN),
        CASE("\"abc\"", TAKEN),
        CASE("\"a string longer than eight bytes, so read a word at a time\"", TAKEN),
        CASE("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", TAKEN),
        CASE("\"twelve bytes\\u0041and an escape past the first word\\n\"", TAKEN),
        CASE("\"\\u0041\\u00e9\\u00E9\\u20ac\\uFFFF\"", TAKEN),
        CASE("\"\\ud83d\\ude00\"", TAKEN), /* a surrogate pair: U+1F600 */
        CASE("\"\\uDBFF\\uDFFF\"", TAKEN), /* U+10FFFF */
        CASE("\"\\u0000\"", TAKEN),        /* NUL in a value: JSON_ALLOW_NUL */
        CASE("\"a\\u0000b\"", TAKEN),
        CASE("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", TAKEN),
        CASE("\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"", TAKEN),
        CASE("\"\x7f\"", TAKEN), /* DEL is not a control character to JSON */
        CASE("\"eight by\xc3\xa9 and then more bytes\"", TAKEN),
        CASE("\"abc", REFUSED),
        CASE("\"abc\\\"", REFUSED),
        CASE("\"\\", REFUSED),
        CASE("\"a\nb\"", REFUSED),
        CASE("\"\x01\"", REFUSED),
        CASE("\"\x1f\"", REFUSED),
        CASE("\"a\0b\"", REFUSED), /* a raw NUL is a control character */
        CASE("\"a\tb\"", REFUSED),
        CASE("\"\\x\"", REFUSED),
        CASE("\"\\U0041\"", REFUSED),
        CASE("\"\\u12\"", REFUSED),
        CASE("\"\\u12g4\"", REFUSED),
        CASE("\"\\u004", REFUSED),
        CASE("\"\\ud800\"", REFUSED),        /* a high surrogate alone */
        CASE("\"\\udc00\"", REFUSED),        /* a low surrogate alone */
        CASE("\"\\ude00\\ud83d\"", REFUSED), /* a pair the wrong way round */
        CASE("\"\\ud800\\u0041\"", REFUSED), /* a high surrogate and no low one */
        CASE("\"\\ud800\\ud800\"", REFUSED),
        CASE("\"\\ud800x\"", REFUSED),
        CASE("\"\\ud800\\n\"", REFUSED),
        CASE("\"\\ud800\\", REFUSED),
        CASE("\"\xff\"", REFUSED),
        CASE("\"\x80\"", REFUSED),             /* a continuation byte first */
        CASE("\"\xc0\xaf\"", REFUSED),         /* overlong '/' */
        CASE("\"\xc1\xbf\"", REFUSED),         /* overlong */
        CASE("\"\xe0\x80\xaf\"", REFUSED),     /* overlong, three bytes */
        CASE("\"\xe0\x9f\xbf\"", REFUSED),     /* overlong U+07FF */
        CASE("\"\xf0\x80\x80\xaf\"", REFUSED), /* overlong, four bytes */
        CASE("\"\xf0\x8f\xbf\xbf\"", REFUSED), /* overlong U+FFFF */
        CASE("\"\xed\xa0\x80\"", REFUSED),     /* a surrogate written in UTF-8 */
        CASE("\"\xed\xbf\xbf\"", REFUSED),
        CASE("\"\xf4\x90\x80\x80\"", REFUSED), /* above U+10FFFF */
        CASE("\"\xf5\x80\x80\x80\"", REFUSED),
        CASE("\"\xf8\x88\x80\x80\x80\"", REFUSED),
        CASE("\"\xc3\"", REFUSED), /* cut short by the quote */
        CASE("\"\xe2\x82\"", REFUSED),
        CASE("\"\xc3", REFUSED), /* cut short by the end */
        CASE("\"\xf0\x9f\x98", REFUSED),
        CASE("\"\xc3\x28\"", REFUSED),
        CASE("[\"ok\", \"x\xffy\"]", REFUSED),
    };
    check_cases(cases, KAPI_ARRAY_LEN(cases), __LINE__);
    json_t *v = kapi_codec__json_parse("\"a\\u0000b\\ud83d\\ude00\"", 22, NULL);
    CHECK(json_string_length(v) == 7 &&
          memcmp(json_string_value(v), "a\0b\xf0\x9f\x98\x80", 7) == 0);
    json_decref(v);
}

TEST(codec_json_parse_structure)
{
    static const json_case cases[] = {
        CASE("true", TAKEN),
        CASE("false", TAKEN),
        CASE("null", TAKEN),
        CASE(" \t\r\n true \n\t\r ", TAKEN),
        CASE("{}", TAKEN),
        CASE("[]", TAKEN),
        CASE(" { } ", TAKEN),
        CASE("[ ]", TAKEN),
        CASE("{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":{\"e\":[true,false]}}", TAKEN),
        CASE("{ \"a\" : 1 , \"b\" :\n[ 1 ,\t2 ] }", TAKEN),
        CASE("[[],{},[[]],\"\",0]", TAKEN),
        CASE("{\"a\":1,\"b\":2,\"a\":3}", TAKEN),               /* a repeated key */
        CASE("{\"a\":1,\"\\u0061\":{\"x\":2},\"b\":3}", TAKEN), /* repeated, escaped */
        CASE("{\"a\":{\"b\":1},\"a\":{\"c\":2}}", TAKEN),
        CASE("[{\"x\":[]},{\"a\":1,\"a\":2}]", TAKEN),            /* repeated in an element */
        CASE("{\"x\":{\"y\":{\"c\":1,\"d\":2,\"c\":3}}}", TAKEN), /* repeated deep down */
        CASE("{\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},\"f:image\":{}}}", TAKEN),
        CASE("{\"\":\"\"}", TAKEN),
        CASE("{\"caf\xc3\xa9\":\"\\u00e9\"}", TAKEN),
        CASE("{\"long key with an \\\"escape\\\" in it\":{\"and another \\t one\":1}}", TAKEN),
        CASE("{\"v\":\"a\\u0000b\"}", TAKEN), /* NUL in a value */
        CASE("{\"a\\u0000b\":1}", REFUSED),   /* NUL in a key */
        CASE("{\"\\u0000\":1}", REFUSED),
        CASE("", REFUSED),
        CASE(" \n\t", REFUSED),
        CASE("tru", REFUSED),
        CASE("truex", REFUSED),
        CASE("true1", REFUSED),
        CASE("nul", REFUSED),
        CASE("nulll", REFUSED),
        CASE("True", REFUSED),
        CASE("[", REFUSED),
        CASE("{", REFUSED),
        CASE("]", REFUSED),
        CASE("}", REFUSED),
        CASE("[1", REFUSED),
        CASE("[1,", REFUSED),
        CASE("[1,]", REFUSED),
        CASE("[,1]", REFUSED),
        CASE("[1 2]", REFUSED),
        CASE("[1,,2]", REFUSED),
        CASE("[1}", REFUSED),
        CASE("{\"a\":1]", REFUSED),
        CASE("{\"a\"}", REFUSED),
        CASE("{\"a\":}", REFUSED),
        CASE("{\"a\" 1}", REFUSED),
        CASE("{\"a\":1,}", REFUSED),
        CASE("{,}", REFUSED),
        CASE("{\"a\":1 \"b\":2}", REFUSED),
        CASE("{a:1}", REFUSED),
        CASE("{'a':1}", REFUSED),
        CASE("{1:1}", REFUSED),
        CASE("{\"a\":", REFUSED),
        CASE("{\"a", REFUSED),
        CASE("1 2", REFUSED),
        CASE("[1]x", REFUSED),
        CASE("{}{}", REFUSED),
        CASE("[1]\0", REFUSED), /* a NUL after the value */
        CASE("\0", REFUSED),
        CASE("\xef\xbb\xbf{}", REFUSED), /* a byte order mark */
        CASE("\xc3\xa9", REFUSED),
        CASE("[1]\f", REFUSED), /* form feed is not JSON whitespace */
        CASE("\v1", REFUSED),
        CASE("/* */ 1", REFUSED),
    };
    check_cases(cases, KAPI_ARRAY_LEN(cases), __LINE__);
}

TEST(codec_json_parse_repeated_key_keeps_first_place)
{
    const char doc[] = "{\"a\":1,\"b\":2,\"\\u0061\":3}";
    bool repeats = false;
    json_t *v = kapi_codec__json_parse(doc, sizeof(doc) - 1, &repeats);
    CHECK(v != NULL);
    CHECK(repeats);
    CHECK_INT_EQ(json_object_size(v), 2);
    void *it = json_object_iter(v);
    CHECK_STR_EQ(json_object_iter_key(it), "a");
    CHECK_INT_EQ(json_integer_value(json_object_iter_value(it)), 3);
    it = json_object_iter_next(v, it);
    CHECK_STR_EQ(json_object_iter_key(it), "b");
    json_decref(v);
}

/* Arrays (or objects, {"a": ...}) nested depth deep around inner. */
static char *nested(size_t depth, bool objects, const char *inner, size_t *len)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < depth; i++)
        kapi_buf_puts(&b, objects ? "{\"a\":" : "[");
    kapi_buf_puts(&b, inner);
    for (size_t i = 0; i < depth; i++)
        kapi_buf_putc(&b, objects ? '}' : ']');
    return kapi_buf_detach(&b, len);
}

TEST(codec_json_parse_depth)
{
    /* jansson counts the top-level value as depth 1 and reads up to JSON_PARSER_MAX_DEPTH:
     * 2048 empty arrays deep, or a scalar inside 2047. */
    static const struct {
        size_t depth;
        bool objects;
        const char *inner;
        expect want;
    } cases[] = {
        {JSON_PARSER_MAX_DEPTH, false, "", TAKEN},
        {JSON_PARSER_MAX_DEPTH - 1, false, "1", TAKEN},
        {JSON_PARSER_MAX_DEPTH - 1, true, "{}", TAKEN},
        {JSON_PARSER_MAX_DEPTH - 1, true, "\"x\"", TAKEN},
        {JSON_PARSER_MAX_DEPTH, false, "1", REFUSED},
        {JSON_PARSER_MAX_DEPTH, false, "[]", REFUSED},
        {JSON_PARSER_MAX_DEPTH, true, "{}", REFUSED},
        {JSON_PARSER_MAX_DEPTH, true, "1", REFUSED},
        {100000, false, "", REFUSED},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        size_t len;
        char *text = nested(cases[i].depth, cases[i].objects, cases[i].inner, &len);
        check_text(text, len, cases[i].want, __LINE__, i);
        free(text);
    }
}

/* A CronJob as kube-apiserver stores it, managedFields and all. */
static const char cronjob[] =
    "{\"kind\":\"CronJob\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"cj-web-1\","
    "\"namespace\":\"golden-a\",\"uid\":\"6f1c2a7e-9b0d-4c3e-8f21-5a4b3c2d1e0f\","
    "\"resourceVersion\":\"123456\",\"generation\":1,\"creationTimestamp\":"
    "\"2024-05-01T12:00:00Z\",\"labels\":{\"app\":\"web\",\"tier\":\"frontend\"},"
    "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":"
    "\"{\\\"apiVersion\\\":\\\"batch/v1\\\",\\\"kind\\\":\\\"CronJob\\\"}\\n\"},"
    "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Update\",\"apiVersion\":"
    "\"batch/v1\",\"time\":\"2024-05-01T12:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
    "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{},\"f:tier\":{}}},\"f:spec\":{"
    "\"f:jobTemplate\":{\"f:spec\":{\"f:template\":{\"f:spec\":{\"f:containers\":{"
    "\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},\"f:command\":{},\"f:image\":{},"
    "\"f:name\":{}}}}}}},\"f:schedule\":{},\"f:suspend\":{}}}}]},\"spec\":{\"schedule\":"
    "\"0 3 29 2 *\",\"concurrencyPolicy\":\"Allow\",\"suspend\":true,\"jobTemplate\":{"
    "\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"template\":{\"metadata\":{"
    "\"creationTimestamp\":null},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":"
    "\"busybox:1.36\",\"command\":[\"echo\",\"h\\u00e9\"],\"resources\":{\"limits\":{"
    "\"cpu\":\"500m\",\"memory\":\"128Mi\"}},\"terminationMessagePath\":"
    "\"/dev/termination-log\",\"imagePullPolicy\":\"IfNotPresent\"}],\"restartPolicy\":"
    "\"OnFailure\",\"terminationGracePeriodSeconds\":30,\"securityContext\":{}}}}},"
    "\"successfulJobsHistoryLimit\":3,\"failedJobsHistoryLimit\":1,\"ratio\":0.25},"
    "\"status\":{}}";

extern const struct {
    const char *name;
    const unsigned char *data;
    size_t len;
} kapi_embedded_files[];

/* Each line of a golden file, a recorded request or answer, must take the fast path. */
static void check_golden_lines(const char *file)
{
    const char *dir = getenv("KAPI_TESTDATA");
    char *path = kapi_xprintf("%s/golden/%s", dir ? dir : "../shared/testdata", file);
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f)
        return; /* the corpus is not there; the cases above still run */
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    size_t i = 0;
    while ((n = getline(&line, &cap, f)) > 0)
        check_text(line, (size_t)n, TAKEN, __LINE__, i++);
    free(line);
    fclose(f);
}

TEST(codec_json_parse_kubernetes_objects)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_bench__event_body(&b, "default", "ev-00001", 1);
    check_text(b.ptr, b.len, TAKEN, __LINE__, 0);
    kapi_buf_dispose(&b);
    check_text(cronjob, sizeof(cronjob) - 1, TAKEN, __LINE__, 0);
    /* The type files and schema definitions kapi embeds: indented, long descriptions. */
    for (size_t i = 0; kapi_embedded_files[i].name; i++)
        check_text((const char *)kapi_embedded_files[i].data, kapi_embedded_files[i].len, TAKEN,
                   __LINE__, i);
    check_golden_lines("requests.jsonl");
    check_golden_lines("responses.jsonl");
}

TEST(codec_json_parse_reads_no_further_than_n)
{
    /* Each prefix of a document on the heap, exactly its length, so that a sanitizer sees
     * any read past the end; only the whole document parses. */
    size_t len = sizeof(cronjob) - 1;
    for (size_t n = 0; n <= len; n++) {
        char *p = kapi_xmalloc(n ? n : 1);
        memcpy(p, cronjob, n);
        json_t *v = kapi_codec__json_parse(p, n, NULL);
        CHECK((v != NULL) == (n == len));
        json_decref(v);
        free(p);
    }
}

TEST(codec_json_parse_errors_stay_janssons)
{
    /* A text the fast path gives up on still gets jansson's reading and Go's words. */
    char *err = NULL;
    CHECK(kapi_json_parse("[x]", 3, &err) == NULL);
    CHECK_STR_EQ(err, "invalid character 'x' looking for beginning of value");
    free(err);
    json_t *v = kapi_json_parse("{\"a\":\"x\xffy\"}", 11, NULL);
    CHECK_STR_EQ(json_string_value(json_object_get(v, "a")), "x\xef\xbf\xbdy");
    json_decref(v);
}
