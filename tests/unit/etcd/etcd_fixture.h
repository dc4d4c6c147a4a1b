/*
 * etcd_fixture: real etcd members for the etcd client's tests. Each test starts its own
 * cluster (one or three members, /usr/bin/etcd from Debian's etcd-server) on free
 * loopback ports with its data in the test's scratch directory; the members die with the
 * test (PR_SET_PDEATHSIG), so a failed test leaves none behind. A missing etcd fails the
 * test, saying so. Raft runs with a 10 ms heartbeat and a 100 ms election timeout so
 * that a member is ready, or a new leader elected, in well under a second.
 */
#ifndef KAPI_TEST_ETCD_FIXTURE_H
#define KAPI_TEST_ETCD_FIXTURE_H

#include <sys/types.h>

#include "etcd/etcd.h"

#define ETCD_FIXTURE_MAX 3

typedef struct etcd_member {
    pid_t pid;
    int client_port, peer_port;
    char name[8];
    char url[64];  /* its client URL */
    char dir[300]; /* its data dir */
} etcd_member;

typedef struct etcd_fixture {
    etcd_member m[ETCD_FIXTURE_MAX];
    int n;
    bool tls;          /* https, certificates in tls_dir, client certificates required */
    char servers[256]; /* the members' client URLs, comma-separated */
    char cluster[512]; /* --initial-cluster */
    char tls_dir[300];
    const char *extra[4]; /* more etcd flags, NULL-terminated */
} etcd_fixture;

/* Starts f->n members (1 when 0) with f->tls and f->extra as set, and waits until every
 * one answers a linearizable read. */
void etcd_fixture_start(etcd_fixture *f);
/* Kills member i with SIGKILL and reaps it. */
void etcd_fixture_kill(etcd_fixture *f, int i);
/* Starts member i again on its ports and data, and waits until it answers. */
void etcd_fixture_restart(etcd_fixture *f, int i);
/* Kills every member. */
void etcd_fixture_stop(etcd_fixture *f);
/* A new client of servers (a comma list) with the fixture's TLS files and short
 * timeouts: calls 3 s, connect 1 s. */
kapi_etcd_client *etcd_fixture_client(const etcd_fixture *f, const char *servers);
/* A port nothing listens on (bound, then closed). */
int etcd_fixture_free_port(void);

/* Writes key = value (a Txn with one put and no compares); returns its revision. */
int64_t etcd_put(kapi_etcd_client *c, const char *key, const char *value);
/* The value of key at revision rev (0: the latest) as a heap string; NULL when absent. */
char *etcd_get(kapi_etcd_client *c, const char *key, int64_t rev);

#endif
