/*
 * fuzz_h1: the bytes an HTTP/1.1 client sends, read by the http layer's HTTP/1.1 protocol
 * (src/http/h1.c over http_parser) on a connection without a socket: request lines,
 * headers (each cut anywhere, as the reader borrows what arrives whole and copies what
 * does not), bodies with a length or chunked, pipelined requests, upgrades, garbage
 * (fuzz_conn.h: the server, the pieces, the checks).
 */
#include "fuzz_conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_conn_run(data, size, NULL, "");
}
