/*
 * fuzz_cidr: CIDR blocks as ClusterCIDR specs and Node podCIDRs give them (base/cidr). Each
 * input is a block, optionally followed by a newline and a second one and then a byte of
 * host bits. A block that reads must print as text that reads back to the same text; two
 * blocks that overlap overlap either way round; a range cut into blocks hands out only
 * blocks inside it, each once, until it is full.
 */
#include "base/cidr.h"
#include "fuzz.h"

/* The most blocks a range is cut into here: the bitmap stays small. */
#define MAX_BLOCKS_LOG2 12

static void fail(const char *what)
{
    fprintf(stderr, "%s\n", what);
    abort();
}

/* A block's text reads back as a block with the same text (an IPv4-mapped IPv6 block
 * prints as IPv4, as Go prints it, so the block itself may change size). */
static void round_trip(const kapi_cidr *c)
{
    char text[KAPI_CIDR_TEXT], again[KAPI_CIDR_TEXT];
    kapi_cidr_format(c, text);
    kapi_cidr back;
    if (!kapi_cidr_parse(text, &back))
        fail("a block's text does not read");
    kapi_cidr_format(&back, again);
    if (strcmp(text, again) != 0 || back.v4 != c->v4)
        fail("a block's text does not read back to itself");
}

static void cut(const kapi_cidr *range, const kapi_cidr *other, int host_bits)
{
    kapi_cidr_set s;
    if (range->bits - host_bits - range->prefix > MAX_BLOCKS_LOG2 ||
        !kapi_cidr_set_init(&s, range, host_bits))
        return;
    uint64_t i, handed = 0;
    while (kapi_cidr_set_next(&s, &i)) {
        kapi_cidr block;
        if (i >= s.max)
            fail("a block index past the range");
        kapi_cidr_set_block(&s, i, &block);
        round_trip(&block);
        if (!kapi_cidr_overlaps(range, &block) || kapi_cidr_set_any_taken(&s, &block))
            fail("a block handed out is outside the range or taken");
        if (!kapi_cidr_set_occupy(&s, &block) || ++handed > s.max)
            fail("a block handed out twice");
    }
    if (s.used != s.max)
        fail("a range with free blocks says it is full");
    if (kapi_cidr_set_release(&s, other) !=
        (other->bits == range->bits && kapi_cidr_overlaps(range, other)))
        fail("a release disagrees with overlap");
    kapi_cidr_set_occupy(&s, other);
    kapi_cidr_set_dispose(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char text[257];
    memcpy(text, data, size);
    text[size] = 0;
    char *second = strchr(text, '\n');
    if (second)
        *second++ = 0;
    kapi_cidr a, b;
    if (!kapi_cidr_parse(text, &a))
        return 0;
    round_trip(&a);
    if (!second)
        return 0;
    char *bits = strchr(second, '\n');
    if (bits)
        *bits++ = 0;
    if (!kapi_cidr_parse(second, &b))
        return 0;
    round_trip(&b);
    if (a.bits == b.bits && kapi_cidr_overlaps(&a, &b) != kapi_cidr_overlaps(&b, &a))
        fail("overlap is not symmetric");
    if (bits && *bits)
        cut(&a, &b, (unsigned char)*bits % (a.bits + 1));
    return 0;
}
