/*
 * main: what kapi's main() needs beside the library: the command line and config file
 * (options.c) and systemd's readiness notification (notify.c).
 *
 * The command line and config file come from one table of flags.
 *
 * Each flag is one entry of the table in options.c: its name, the group `kapi --help`
 * lists it under (kube-apiserver's and kube-controller-manager's groups), the kind of its
 * value, the default shown, its help text and the function that sets it. Parsing, the
 * help (and the man page made from it) and the config file all read that table, so a new
 * flag is one entry there and one field here.
 *
 * The command line is read as Go's pflag reads kube-apiserver's: `--flag=value` or
 * `--flag value`, a bool as `--flag` (true) or `--flag=false` (never `--flag false`), a
 * shorthand as `-h`. `--config FILE` is a YAML mapping of the same flag names to values
 * (strings, numbers, bools, or lists for the flags that take several); a flag given on the
 * command line replaces the file's setting of it.
 *
 * Values point into argv or into copies this module owns (kapi_options_dispose frees them).
 */
#ifndef KAPI_MAIN_H
#define KAPI_MAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "api/api.h"
#include "log/log.h"
#include "store/store.h"

/* A flag kube-apiserver takes more than once (StringArray) or as a comma-separated list
 * (StringSlice): its values in order. */
typedef struct kapi_strings {
    const char **v;
    size_t n;
} kapi_strings;

typedef struct kapi_options {
    const char *data_dir, *bind_address, *cert_file, *key_file, *token_file, *client_ca_file;
    /* ServiceAccount tokens: kube-apiserver's --service-account-* and --api-audiences */
    kapi_strings sa_issuers, sa_key_files, api_audiences;
    const char *sa_signing_key, *sa_jwks_uri;
    int64_t sa_max_expiration; /* seconds; 0: none */
    int port;
    long history_seconds; /* --watch-history: the changes kept for watches and past reads */
    int event_ttl_ms;     /* --event-ttl: how long an Event stays after its last write */
    /* kube-apiserver's --max-requests-inflight, --max-mutating-requests-inflight (0: no
     * limit) and --request-timeout */
    long max_inflight, max_mutating_inflight;
    unsigned request_timeout_ms;
    long http2_max_streams; /* --http2-max-streams-per-connection (0: Go's 250) */
    kapi_authz_mode authz_modes[KAPI_AUTHZ_MAX_MODES]; /* --authorization-mode */
    size_t nauthz_modes;
    bool anonymous; /* --anonymous-auth */
    /* kube-apiserver's --etcd-servers, --etcd-prefix, --etcd-cafile, --etcd-certfile,
     * --etcd-keyfile, --etcd-compaction-interval: the store on etcd instead of SQLite */
    kapi_store_etcd_options etcd;
    /* kube-controller-manager's --leader-elect and its durations (0: the defaults); not
     * given, it is on with etcd (instances share the store) and off on SQLite (one
     * instance owns its data dir, and renewals would only move its revision) */
    bool leader_elect, leader_elect_given;
    int lease_ms, renew_ms, retry_ms;
    /* kube-controller-manager's --allocate-node-cidrs: run the ClusterCIDR allocator;
     * with --cluster-cidr and the --node-cidr-mask-size flags (0: not given), the spec of
     * the default ClusterCIDR it makes (NULL: none; the options own it) */
    bool allocate_node_cidrs;
    const char *cluster_cidr;
    long node_cidr_mask, node_cidr_mask_v4, node_cidr_mask_v6;
    json_t *default_cluster_cidr;
    /* --webhook-resolve HOST:PORT:ADDRESS: where a webhook's host is reached */
    kapi_strings webhook_resolve;
    /* kube-controller-manager's --controllers (default "*"), and the clock test hook
     * --controllers-clock-file (read at start and on SIGHUP) */
    kapi_strings controllers;
    const char *clock_file;
    /* klog's -v and component-base's --logging-format; --audit-log-path ("-": stdout),
     * --audit-policy-file, --audit-log-maxsize (MB) and --audit-log-maxbackup */
    long verbosity;
    kapi_log_format log_format;
    const char *audit_log_path, *audit_policy_file;
    long audit_max_mb, audit_max_backups;
    /* The flags given (config file and command line, in the order applied) and their
     * values as given, for the start-up log. */
    struct kapi_given {
        const char *name, *value;
    } * given;
    size_t ngiven;
    const char *config_file; /* --config */
    bool help, version;      /* --help, --version: print and exit */
    /* The config file's values, which the fields above may point into. */
    char **owned;
    size_t nowned;
} kapi_options;

/* Fills *o from the defaults, the --config file and argv. Returns -1 when kapi should
 * run; otherwise the status to exit with: 0 after printing the help or the version, 1
 * after an error naming the flag (or the file and key) on stderr. Dispose of *o in
 * every case. */
int kapi_options_parse(kapi_options *o, int argc, char **argv);
void kapi_options_dispose(kapi_options *o);

/* Writes `kapi --help`: every flag by group, with its value kind, meaning and default,
 * wrapped to cols columns (0: not wrapped), as kube's cliflag prints its sections. */
void kapi_options_help(FILE *f, int cols);

/* Writes `kapi --version`: kapi's version, the Kubernetes version served, the commit and
 * the build date. */
void kapi_options_version(FILE *f);

/* kube-controller-manager's IsControllerEnabled: named, or "-name", or "*" for all. */
bool kapi_options_controller_enabled(const kapi_strings *list, const char *name);

/* The test hook: the Go duration in the clock file (the whole file, spaces around it
 * allowed) becomes the controllers' clock offset. Returns the reason it could not,
 * to free, or NULL. */
char *kapi_options_read_clock_file(const char *path);

/* systemd's sd_notify protocol without libsystemd: sends state ("READY=1",
 * "STOPPING=1", "RELOADING=1") as one datagram to the unix socket $NOTIFY_SOCKET names (a
 * path, or an abstract socket when it starts with '@'). Does nothing when it is unset
 * (kapi not started by systemd with Type=notify); returns false when it could not send. */
bool kapi_notify(const char *state);

#endif
