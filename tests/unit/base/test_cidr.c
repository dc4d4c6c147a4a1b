/* Unit tests for src/base/cidr: Go's CIDR parsing and text, overlap, and the per-Node
 * block sets of IPv4 and IPv6 ranges (block counts, order, exhaustion, release, blocks
 * larger than a Node's). */
#include <stdlib.h>
#include <string.h>

#include "base/cidr.h"
#include "test.h"

static const char *text(const kapi_cidr *c)
{
    static char out[KAPI_CIDR_TEXT];
    kapi_cidr_format(c, out);
    return out;
}

static kapi_cidr parse(const char *s)
{
    kapi_cidr c;
    CHECK(kapi_cidr_parse(s, &c));
    return c;
}

TEST(cidr_parse)
{
    kapi_cidr c = parse("10.1.2.3/16");
    CHECK_STR_EQ(text(&c), "10.1.0.0/16");
    CHECK(c.v4 && c.bits == 32 && c.prefix == 16);
    c = parse("010.001.0.0/8");
    CHECK_STR_EQ(text(&c), "10.0.0.0/8");
    c = parse("FD00:0:0:0:0:0:0:1/64");
    CHECK_STR_EQ(text(&c), "fd00::/64");
    CHECK(!c.v4 && c.bits == 128);
    c = parse("::ffff:10.0.0.0/104");
    CHECK(c.v4 && c.bits == 128);
    CHECK_STR_EQ(text(&c), "10.0.0.0/8"); /* as Go prints it */
    c = parse("::ffff:10.1.0.0/12");      /* masked to ::, which is not IPv4 */
    CHECK(!c.v4);
    CHECK_STR_EQ(text(&c), "::/12");
    const char *bad[] = {"10.0.0.0",    "10.0.0.0/33", "10.0.0/8",   "10.0.0.256/8", "x/8",
                         "10.0.0.0/-1", "10.0.0.0/",   "fd00::/129", "10.0.0.0/8 "};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(bad); i++)
        CHECK(!kapi_cidr_parse(bad[i], &c));
}

TEST(cidr_overlaps)
{
    kapi_cidr a = parse("10.0.0.0/8"), b = parse("10.1.0.0/16"), d = parse("11.0.0.0/16");
    kapi_cidr v6 = parse("::/0");
    CHECK(kapi_cidr_overlaps(&a, &b) && kapi_cidr_overlaps(&b, &a));
    CHECK(!kapi_cidr_overlaps(&a, &d));
    CHECK(!kapi_cidr_overlaps(&a, &v6));
}

/* A /24 cut into /26 blocks: four, in address order, then none; a released block comes
 * back only after the others were offered. */
TEST(cidr_set_ipv4)
{
    kapi_cidr r = parse("10.0.0.0/24"), blk;
    kapi_cidr_set s;
    uint64_t i;
    CHECK(kapi_cidr_set_init(&s, &r, 6));
    CHECK_INT_EQ(s.max, 4);
    const char *want[] = {"10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/26", "10.0.0.192/26"};
    for (size_t k = 0; k < 4; k++) {
        CHECK(kapi_cidr_set_next(&s, &i));
        kapi_cidr_set_block(&s, i, &blk);
        CHECK_STR_EQ(text(&blk), want[k]);
        CHECK(kapi_cidr_set_occupy(&s, &blk));
    }
    CHECK_INT_EQ(s.used, 4);
    CHECK(!kapi_cidr_set_next(&s, &i));
    blk = parse("10.0.0.64/26");
    CHECK(kapi_cidr_set_release(&s, &blk));
    CHECK(kapi_cidr_set_next(&s, &i));
    CHECK_INT_EQ(i, 1);
    /* a block twice the size takes two; one outside the range is refused */
    blk = parse("10.0.0.128/25");
    CHECK(kapi_cidr_set_release(&s, &blk));
    CHECK_INT_EQ(s.used, 1);
    CHECK(kapi_cidr_set_occupy(&s, &blk));
    CHECK_INT_EQ(s.used, 3);
    blk = parse("10.0.1.0/26");
    CHECK(!kapi_cidr_set_occupy(&s, &blk));
    blk = parse("fd00::/120");
    CHECK(!kapi_cidr_set_occupy(&s, &blk));
    kapi_cidr_set_dispose(&s);
    /* host bits larger than the range's */
    CHECK(!kapi_cidr_set_init(&s, &r, 9));
}

/* IPv6: blocks across the 64-bit halves, and the 2^16 limit of multicidrset. */
TEST(cidr_set_ipv6)
{
    kapi_cidr r = parse("fd00:1::/56"), blk;
    kapi_cidr_set s;
    uint64_t i;
    CHECK(kapi_cidr_set_init(&s, &r, 64));
    CHECK_INT_EQ(s.max, 256);
    kapi_cidr_set_block(&s, 255, &blk);
    CHECK_STR_EQ(text(&blk), "fd00:1:0:ff::/64");
    CHECK(kapi_cidr_set_occupy(&s, &blk));
    s.next = 255;
    CHECK(kapi_cidr_set_next(&s, &i));
    CHECK_INT_EQ(i, 0);
    kapi_cidr_set_dispose(&s);
    r = parse("fd00::/104");
    CHECK(kapi_cidr_set_init(&s, &r, 8));
    CHECK_INT_EQ(s.max, 65536);
    kapi_cidr_set_block(&s, 65535, &blk);
    CHECK_STR_EQ(text(&blk), "fd00::ff:ff00/120");
    kapi_cidr_set_dispose(&s);
    r = parse("fd00::/103");
    CHECK(!kapi_cidr_set_init(&s, &r, 8));
}

/* Every block of a range once, then exhaustion: 2^12 IPv4 blocks. */
TEST(cidr_set_exhaustion)
{
    kapi_cidr r = parse("10.0.0.0/16"), blk;
    kapi_cidr_set s;
    uint64_t i;
    CHECK(kapi_cidr_set_init(&s, &r, 4));
    for (uint64_t k = 0; k < 4096; k++) {
        CHECK(kapi_cidr_set_next(&s, &i));
        CHECK_INT_EQ(i, k);
        kapi_cidr_set_block(&s, i, &blk);
        CHECK(kapi_cidr_set_occupy(&s, &blk));
    }
    kapi_cidr_set_block(&s, 4095, &blk);
    CHECK_STR_EQ(text(&blk), "10.0.255.240/28");
    CHECK(!kapi_cidr_set_next(&s, &i));
    kapi_cidr_set_dispose(&s);
}
