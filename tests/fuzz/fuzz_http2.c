/*
 * fuzz_http2: the bytes an HTTP/2 client sends after its connection preface, read by the
 * http layer's HTTP/2 protocol (src/http/h2.c over nghttp2) on a connection without a
 * socket: frames, header blocks, bodies, resets, window updates, GOAWAY, in any order and
 * cut anywhere (fuzz_conn.h: the server, the pieces, the checks).
 */
#include "fuzz_conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_conn_run(data, size, &kapi_http__h2, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
}
