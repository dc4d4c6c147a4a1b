/*
 * cidr: IP blocks in CIDR notation, read and written as Go's net package does
 * (ParseCIDRSloppy, IPNet.String), and a range cut into equal per-Node blocks, as
 * kube-controller-manager's multicidrset does for a ClusterCIDR.
 *
 * A block set knows which of its blocks are taken, one bit each. It hands out the first
 * free block at or after the one after the last it handed out (wrapping), so a block
 * just released is not handed out again at once. Occupying or releasing a block larger
 * than a Node's marks every Node block it covers. A set is not thread-safe: its owner
 * serialises everything.
 */
#ifndef KAPI_CIDR_H
#define KAPI_CIDR_H

#include "base/base.h"

/* The longest text of a block: an IPv6 address, a slash, three digits, the NUL. */
#define KAPI_CIDR_TEXT 48

/* A block: its network address (masked) and prefix length. */
typedef struct kapi_cidr {
    uint8_t addr[16]; /* big-endian; an IPv4 address in addr[0..4) */
    int bits;         /* 32 (IPv4) or 128 (IPv6) */
    int prefix;       /* the mask's leading ones, 0..bits */
    bool v4;          /* IPv4 as Go's To4 sees it: an IPv4-mapped IPv6 address too */
} kapi_cidr;

/* Reads s as Go's ParseCIDRSloppy (IPv4 fields may have leading zeros); false when it is
 * not a CIDR. The address is masked to the prefix. */
bool kapi_cidr_parse(const char *s, kapi_cidr *out);
/* Writes c as Go's IPNet.String: "10.0.1.0/24", "fd00::100/120". */
void kapi_cidr_format(const kapi_cidr *c, char out[KAPI_CIDR_TEXT]);
/* True when a and b (of one size) share an address: one contains the other. */
bool kapi_cidr_overlaps(const kapi_cidr *a, const kapi_cidr *b);

/* A range cut into blocks of host_bits host bits. */
typedef struct kapi_cidr_set {
    kapi_cidr range;
    int node_prefix; /* each block's prefix: range.bits - host_bits */
    uint64_t max;    /* how many blocks: 2^(node_prefix - range.prefix) */
    uint64_t used;   /* how many are taken */
    uint64_t next;   /* where the search for a free block starts */
    uint8_t *taken;  /* one bit a block; owned */
} kapi_cidr_set;

/* The most IPv6 blocks a range may be cut into is 2^16 (multicidrset's
 * clusterSubnetMaxDiff); IPv4 has no such limit. */
#define KAPI_CIDR_MAX_DIFF 16

/* Cuts range into blocks of host_bits host bits; false when host_bits does not fit in
 * the range, or an IPv6 range would have more than 2^KAPI_CIDR_MAX_DIFF blocks. */
bool kapi_cidr_set_init(kapi_cidr_set *s, const kapi_cidr *range, int host_bits);
void kapi_cidr_set_dispose(kapi_cidr_set *s);
/* Block i (< s->max). */
void kapi_cidr_set_block(const kapi_cidr_set *s, uint64_t i, kapi_cidr *out);
/* The index of the first free block from s->next on, wrapping, and moves s->next past
 * it; false when every block is taken. The block stays free until occupied. */
bool kapi_cidr_set_next(kapi_cidr_set *s, uint64_t *out);
/* Marks every block c covers taken (released); false when c and the range do not
 * overlap, or c is of the other family. */
bool kapi_cidr_set_occupy(kapi_cidr_set *s, const kapi_cidr *c);
bool kapi_cidr_set_release(kapi_cidr_set *s, const kapi_cidr *c);
/* True when a block of s that c covers is taken (c may be of any size, or outside the
 * range: then false). */
bool kapi_cidr_set_any_taken(const kapi_cidr_set *s, const kapi_cidr *c);

#endif
