/* codec/gofmt: Go's %v and %s of decoded JSON values, as kube-apiserver's messages print
 * them. */
#include "codec/go.h"
#include "codec/json.h"
#include "test.h"

static void check_fmt(const char *json, char verb, const char *want)
{
    json_error_t jerr;
    json_t *v = json_loads(json, JSON_DECODE_ANY, &jerr);
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_go_put_fmt(&b, v, verb);
    CHECK_STR_EQ(b.ptr, want);
    kapi_buf_dispose(&b);
    json_decref(v);
}

TEST(codec_go_fmt)
{
    check_fmt("{\"spec\":{\"bogus\":1}}", 'v', "map[spec:map[bogus:1]]");
    check_fmt("{\"b\":[1,\"x\",null],\"a\":true,\"$patch\":\"bogus\"}", 'v',
              "map[$patch:bogus a:true b:[1 x <nil>]]");
    check_fmt("[1.5,1e21,1000000.0,0.0001,0.00001,-0.0]", 'v', "[1.5 1e+21 1e+06 0.0001 1e-05 -0]");
    check_fmt("null", 'v', "<nil>");
    check_fmt("\"bogus\"", 's', "bogus");
    check_fmt("1", 's', "%!s(int64=1)");
    check_fmt("2.5", 's', "%!s(float64=2.5)");
    check_fmt("false", 's', "%!s(bool=false)");
    check_fmt("null", 's', "%!s(<nil>)");
    check_fmt("{\"a\":null,\"b\":1}", 's', "map[a:<nil> b:%!s(int64=1)]");
}
