/*
 * kapi: the command line, start-up and shutdown. Wires the modules together: the store
 * and the registry under the API pipeline, the pipeline as the HTTP server's handler.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "api/api.h"
#include "codec/go.h"
#include "codec/json.h"
#include "controllers/controllers.h"
#include "log/log.h"

#define WORKERS 64

/* A flag kube-apiserver takes more than once (StringArray) or as a comma-separated list
 * (StringSlice): its values in order, pointing into argv. */
typedef struct strings {
    const char **v;
    size_t n;
} strings;

typedef struct options {
    const char *data_dir, *bind_address, *cert_file, *key_file, *token_file, *client_ca_file;
    /* ServiceAccount tokens: kube-apiserver's --service-account-* and --api-audiences */
    strings sa_issuers, sa_key_files, api_audiences;
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
    /* kube-controller-manager's --allocate-node-cidrs: run the ClusterCIDR allocator */
    bool allocate_node_cidrs;
    /* --webhook-resolve HOST:PORT:ADDRESS: where a webhook's host is reached (kapi runs
     * no Services, so a service reference's name.namespace.svc is resolved so or by the
     * system) */
    strings webhook_resolve;
    /* kube-controller-manager's --controllers (default "*"), and the clock test hook
     * --controllers-clock-file (a Go duration added to the controllers' clock; read at
     * start and on SIGHUP) */
    strings controllers;
    const char *clock_file;
    /* klog's -v and component-base's --logging-format; --audit-log-path ("-": stdout) and
     * --audit-policy-file */
    int verbosity;
    kapi_log_format log_format;
    const char *audit_log_path, *audit_policy_file;
    long audit_max_mb, audit_max_backups; /* --audit-log-maxsize, --audit-log-maxbackup */
    /* the flags given, in order, for the start-up log */
    struct given_flag {
        const char *name, *value; /* value NULL: none */
    } * given;
    size_t ngiven;
} options;

/* The controllers --controllers names (kube-controller-manager's names), all on by
 * default; the CRD controller is kube-apiserver's and always runs, and nodeipam (the
 * ClusterCIDR allocator) runs only with --allocate-node-cidrs, as in kube. */
static const char *const controller_names[] = {
    "clusterrole-aggregation", "cronjob", "garbagecollector", "namespace", "nodeipam",
    "serviceaccount"};

/* The in-process controllers: started when this instance leads (at once without
 * --leader-elect), stopped when it stops leading. */
typedef struct controllers {
    kapi_api *api;
    bool elected; /* they run only while the elector leads */
    kapi_leader *elector;
    const strings *enabled; /* --controllers */
    kapi_controller *namespaces, *crds, *serviceaccounts, *aggregation, *cronjobs, *gc;
    kapi_controller *clustercidr; /* nodeipam, with --allocate-node-cidrs */
    bool allocate_node_cidrs;
} controllers;

typedef struct server {
    uv_loop_t loop;
    uv_signal_t sigterm, sigint, sighup;
    const char *clock_file;
    kapi_http_server *http;
    kapi_api *api;
    bool stopping;
} server;

static void usage(FILE *f)
{
    fputs("usage: kapi [--data-dir DIR] [--bind-address 127.0.0.1] [--secure-port 6443]\n"
          "            [--tls-cert-file F --tls-private-key-file F] [--client-ca-file F]\n"
          "            [--token-auth-file F] [--watch-history SECONDS] [--event-ttl 1h0m0s]\n"
          "            [--max-requests-inflight 400] [--max-mutating-requests-inflight 200]\n"
          "            [--request-timeout 1m0s] [--http2-max-streams-per-connection 1000]\n"
          "            [--service-account-issuer URL]... [--service-account-signing-key-file F]\n"
          "            [--service-account-key-file F]... [--api-audiences A,B]\n"
          "            [--service-account-max-token-expiration DURATION]\n"
          "            [--service-account-jwks-uri URL]\n"
          "            [--authorization-mode RBAC] [--anonymous-auth=true]\n"
          "            [--etcd-servers URL,URL --etcd-prefix /registry]\n"
          "            [--etcd-cafile F] [--etcd-certfile F --etcd-keyfile F]\n"
          "            [--etcd-compaction-interval 5m0s]\n"
          "            [--leader-elect] [--leader-elect-lease-duration 15s]\n"
          "            [--leader-elect-renew-deadline 10s] [--leader-elect-retry-period 2s]\n"
          "            [--allocate-node-cidrs]\n"
          "            [--webhook-resolve HOST:PORT:ADDRESS]...\n"
          "            [--controllers *,-cronjob] [--controllers-clock-file F]\n"
          "            [-v N] [--logging-format text|json] [--audit-log-path F|-]\n"
          "            [--audit-policy-file F] [--audit-log-maxsize MB]\n"
          "            [--audit-log-maxbackup N]\n",
          f);
}

static void strings_add(strings *s, const char *v)
{
    s->v = kapi_xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
    s->v[s->n++] = v;
}

/* A StringSlice flag's value: its comma-separated items, the empty ones dropped. */
static void strings_add_list(strings *s, char *list)
{
    for (char *item = strtok(list, ","); item; item = strtok(NULL, ","))
        strings_add(s, item);
}

/* --service-account-issuer, as kube validates it: not empty, not given twice. */
static bool add_issuer(options *o, const char *arg)
{
    for (size_t i = 0; i < o->sa_issuers.n; i++)
        if (strcmp(o->sa_issuers.v[i], arg) == 0) {
            fprintf(stderr, "kapi: service-account-issuer \"%s\" is already specified\n", arg);
            return false;
        }
    if (!*arg) {
        fputs("kapi: service-account-issuer should not be an empty string\n", stderr);
        return false;
    }
    strings_add(&o->sa_issuers, arg);
    return true;
}

/* --service-account-max-token-expiration: a Go duration, 0 or from 1 hour to 2^32
 * seconds (kube's bounds), in whole seconds. */
static bool parse_max_expiration(const char *arg, int64_t *out)
{
    int64_t ns;
    char *why = kapi_go_parse_duration(kapi_str_c(arg), &ns);
    if (why) {
        fprintf(stderr, "kapi: --service-account-max-token-expiration: %s\n", why);
        free(why);
        return false;
    }
    *out = ns / 1000000000;
    if (ns == 0 || (ns >= 3600 * 1000000000LL && *out <= ((int64_t)1 << 32)))
        return true;
    fputs("kapi: the service-account-max-token-expiration must be between 1 hour and 2^32 "
          "seconds\n",
          stderr);
    return false;
}

/* --service-account-jwks-uri: an https URL. */
static bool check_jwks_uri(const char *arg)
{
    if (strncasecmp(arg, "https://", 8) == 0)
        return true;
    fprintf(stderr, "kapi: service-account-jwks-uri requires https scheme, parsed as: %s\n", arg);
    return false;
}

/* A count flag: a decimal number of what (requests, streams) from 0 to INT_MAX. */
static bool parse_count(const char *flag, const char *what, const char *arg, long *out)
{
    char *end;
    *out = strtol(arg, &end, 10);
    if (*arg && !*end && *out >= 0 && *out <= INT_MAX)
        return true;
    fprintf(stderr, "kapi: --%s: not a number of %s (0 or more): %s\n", flag, what, arg);
    return false;
}

/* --authorization-mode: a comma-separated list of AlwaysAllow, AlwaysDeny and RBAC, each
 * at most once, in the order they are asked (kube-apiserver's words for a bad one). */
static bool parse_modes(const char *arg, options *o)
{
    static const struct {
        const char *name;
        kapi_authz_mode mode;
    } known[] = {{"AlwaysAllow", KAPI_AUTHZ_ALWAYS_ALLOW},
                 {"AlwaysDeny", KAPI_AUTHZ_ALWAYS_DENY},
                 {"RBAC", KAPI_AUTHZ_RBAC}};
    kapi_str rest = kapi_str_c(arg), item;
    o->nauthz_modes = 0;
    while (rest.len > 0 || o->nauthz_modes == 0) {
        size_t k = 0;
        kapi_str_cut(&rest, ',', &item);
        while (k < KAPI_ARRAY_LEN(known) && !kapi_str_eqc(item, known[k].name))
            k++;
        if (k == KAPI_ARRAY_LEN(known)) {
            fprintf(stderr,
                    "kapi: --authorization-mode: authorization-mode %.*s is not a valid "
                    "mode (AlwaysAllow, AlwaysDeny, RBAC)\n",
                    (int)item.len, item.ptr);
            return false;
        }
        for (size_t i = 0; i < o->nauthz_modes; i++) {
            if (o->authz_modes[i] == known[k].mode) {
                fprintf(stderr, "kapi: --authorization-mode: %s specified more than once\n",
                        known[k].name);
                return false;
            }
        }
        o->authz_modes[o->nauthz_modes++] = known[k].mode;
    }
    return true;
}

/* A Go bool flag's value (strconv.ParseBool). */
static bool parse_bool(const char *flag, const char *arg, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(yes); i++) {
        if (strcmp(arg, yes[i]) == 0 || strcmp(arg, no[i]) == 0) {
            *out = strcmp(arg, yes[i]) == 0;
            return true;
        }
    }
    fprintf(stderr, "kapi: --%s: not a bool: %s\n", flag, arg);
    return false;
}

/* kube-controller-manager's IsControllerEnabled: named, or "-name", or "*" for all. */
static bool controller_enabled(const strings *list, const char *name)
{
    bool star = false;
    for (size_t i = 0; i < list->n; i++) {
        const char *v = list->v[i];
        if (strcmp(v, name) == 0 || (v[0] == '-' && strcmp(v + 1, name) == 0))
            return v[0] != '-';
        star |= strcmp(v, "*") == 0;
    }
    return star;
}

/* --controllers: each item "*" or a known name, "-" before it or not (kube's check). */
static bool check_controllers(const strings *list)
{
    for (size_t i = 0; i < list->n; i++) {
        const char *v = list->v[i] + (list->v[i][0] == '-');
        bool known = strcmp(list->v[i], "*") == 0;
        for (size_t k = 0; k < KAPI_ARRAY_LEN(controller_names); k++)
            known |= strcmp(v, controller_names[k]) == 0;
        if (!known) {
            fprintf(stderr, "kapi: --controllers: \"%s\" is not in the list of known controllers\n",
                    v);
            return false;
        }
    }
    return true;
}

/* The test hook: the Go duration in the clock file (the whole file, spaces around it
 * allowed) becomes the controllers' clock offset. */
static bool read_clock_file(const char *path)
{
    char text[64] = "";
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    int64_t ns;
    if (f)
        fclose(f);
    text[n] = '\0';
    kapi_str d = kapi_str_c(text);
    while (d.len && strchr(" \t\r\n", d.ptr[d.len - 1]))
        d.len--;
    while (d.len && strchr(" \t\r\n", d.ptr[0]))
        d.ptr++, d.len--;
    char *why = f ? kapi_go_parse_duration(d, &ns) : kapi_xstrdup(strerror(errno));
    if (why) {
        fprintf(stderr, "kapi: --controllers-clock-file %s: %s\n", path, why);
        free(why);
        return false;
    }
    kapi_controllers_set_clock_offset(ns / 1000000);
    return true;
}

/* --request-timeout: a positive Go duration ("60s", "1m30s"), in milliseconds. */
static bool parse_timeout(const char *arg, unsigned *out)
{
    int64_t ns;
    char *why = kapi_go_parse_duration(kapi_str_c(arg), &ns);
    if (!why && ns > 0 && ns / 1000000 < INT_MAX) {
        *out = (unsigned)((ns + 999999) / 1000000);
        return true;
    }
    fprintf(stderr, "kapi: --request-timeout: %s\n", why ? why : "must be positive");
    free(why);
    return false;
}

/* --etcd-compaction-interval: a Go duration, 0 (never) or positive, in whole seconds. */
static bool parse_compaction_interval(const char *arg, int64_t *out)
{
    int64_t ns;
    char *why = kapi_go_parse_duration(kapi_str_c(arg), &ns);
    if (!why && ns >= 0) {
        *out = ns ? (ns + 999999999) / 1000000000 : 0;
        return true;
    }
    fprintf(stderr, "kapi: --etcd-compaction-interval: %s\n", why ? why : "must not be negative");
    free(why);
    return false;
}

/* A positive Go duration (--leader-elect-*, --event-ttl), in milliseconds. */
static bool parse_positive_ms(const char *flag, const char *arg, int *out)
{
    int64_t ns;
    char *why = kapi_go_parse_duration(kapi_str_c(arg), &ns);
    if (!why && ns > 0 && ns / 1000000 < INT_MAX) {
        *out = (int)((ns + 999999) / 1000000);
        return true;
    }
    fprintf(stderr, "kapi: --%s: %s\n", flag, why ? why : "must be greater than zero");
    free(why);
    return false;
}

/* The leader election flags together, as client-go's NewLeaderElector checks them. */
static bool check_leader_durations(const options *o)
{
    kapi_leader_config c = {
        .lease_ms = o->lease_ms, .renew_ms = o->renew_ms, .retry_ms = o->retry_ms};
    kapi_error *err = o->leader_elect ? kapi_leader_config_check(&c) : NULL;
    if (err)
        fprintf(stderr, "kapi: --leader-elect-*: %s\n", err->message);
    kapi_error_free(err);
    return err == NULL;
}

/* -v N, --v=N: klog's verbosity, a number from 0 ("-v=2" reaches getopt as "=2"). */
static bool parse_verbosity(const char *arg, int *out)
{
    char *end;
    const char *digits = arg + (arg[0] == '=');
    long v = strtol(digits, &end, 10);
    if (*digits && !*end && v >= 0 && v <= INT_MAX) {
        *out = (int)v;
        return true;
    }
    fprintf(stderr, "kapi: -v: not a verbosity level (0 or more): %s\n", arg);
    return false;
}

static void add_given(options *o, const char *name, const char *value)
{
    o->given = kapi_xrealloc(o->given, (o->ngiven + 1) * sizeof(*o->given));
    o->given[o->ngiven++] = (struct given_flag){name, value};
}

static int parse_options(options *o, int argc, char **argv)
{
    enum {
        DATA_DIR = 1,
        BIND,
        PORT,
        CERT,
        KEY,
        TOKENS,
        CLIENT_CA,
        HISTORY,
        MAX_INFLIGHT,
        MAX_MUTATING,
        REQUEST_TIMEOUT,
        HTTP2_STREAMS,
        SA_ISSUER,
        SA_SIGNING_KEY,
        SA_KEY,
        SA_MAX_EXPIRATION,
        SA_JWKS_URI,
        API_AUDIENCES,
        AUTHZ_MODE,
        ANONYMOUS,
        ETCD_SERVERS,
        ETCD_PREFIX,
        ETCD_CA,
        ETCD_CERT,
        ETCD_KEY,
        ETCD_COMPACTION,
        LEADER_ELECT,
        LEASE_DURATION,
        RENEW_DEADLINE,
        RETRY_PERIOD,
        ALLOCATE_NODE_CIDRS,
        WEBHOOK_RESOLVE,
        EVENT_TTL,
        CONTROLLERS,
        CLOCK_FILE,
        HELP,
        VERBOSITY = 'v',
        LOGGING_FORMAT = 256,
        AUDIT_LOG_PATH,
        AUDIT_POLICY_FILE,
        AUDIT_MAXSIZE,
        AUDIT_MAXBACKUP,
    };
    static const struct option longs[] = {
        {"data-dir", required_argument, NULL, DATA_DIR},
        {"bind-address", required_argument, NULL, BIND},
        {"secure-port", required_argument, NULL, PORT},
        {"tls-cert-file", required_argument, NULL, CERT},
        {"tls-private-key-file", required_argument, NULL, KEY},
        {"token-auth-file", required_argument, NULL, TOKENS},
        {"client-ca-file", required_argument, NULL, CLIENT_CA},
        {"watch-history", required_argument, NULL, HISTORY},
        {"max-requests-inflight", required_argument, NULL, MAX_INFLIGHT},
        {"max-mutating-requests-inflight", required_argument, NULL, MAX_MUTATING},
        {"request-timeout", required_argument, NULL, REQUEST_TIMEOUT},
        {"http2-max-streams-per-connection", required_argument, NULL, HTTP2_STREAMS},
        {"service-account-issuer", required_argument, NULL, SA_ISSUER},
        {"service-account-signing-key-file", required_argument, NULL, SA_SIGNING_KEY},
        {"service-account-key-file", required_argument, NULL, SA_KEY},
        {"service-account-max-token-expiration", required_argument, NULL, SA_MAX_EXPIRATION},
        {"service-account-jwks-uri", required_argument, NULL, SA_JWKS_URI},
        {"api-audiences", required_argument, NULL, API_AUDIENCES},
        {"authorization-mode", required_argument, NULL, AUTHZ_MODE},
        {"anonymous-auth", optional_argument, NULL, ANONYMOUS},
        {"etcd-servers", required_argument, NULL, ETCD_SERVERS},
        {"etcd-prefix", required_argument, NULL, ETCD_PREFIX},
        {"etcd-cafile", required_argument, NULL, ETCD_CA},
        {"etcd-certfile", required_argument, NULL, ETCD_CERT},
        {"etcd-keyfile", required_argument, NULL, ETCD_KEY},
        {"etcd-compaction-interval", required_argument, NULL, ETCD_COMPACTION},
        {"leader-elect", optional_argument, NULL, LEADER_ELECT},
        {"leader-elect-lease-duration", required_argument, NULL, LEASE_DURATION},
        {"leader-elect-renew-deadline", required_argument, NULL, RENEW_DEADLINE},
        {"leader-elect-retry-period", required_argument, NULL, RETRY_PERIOD},
        {"allocate-node-cidrs", optional_argument, NULL, ALLOCATE_NODE_CIDRS},
        {"webhook-resolve", required_argument, NULL, WEBHOOK_RESOLVE},
        {"event-ttl", required_argument, NULL, EVENT_TTL},
        {"controllers", required_argument, NULL, CONTROLLERS},
        {"controllers-clock-file", required_argument, NULL, CLOCK_FILE},
        {"help", no_argument, NULL, HELP},
        {"v", required_argument, NULL, VERBOSITY},
        {"logging-format", required_argument, NULL, LOGGING_FORMAT},
        {"audit-log-path", required_argument, NULL, AUDIT_LOG_PATH},
        {"audit-policy-file", required_argument, NULL, AUDIT_POLICY_FILE},
        {"audit-log-maxsize", required_argument, NULL, AUDIT_MAXSIZE},
        {"audit-log-maxbackup", required_argument, NULL, AUDIT_MAXBACKUP},
        {NULL, 0, NULL, 0},
    };
    *o = (options){.data_dir = "kapi-data",
                   .bind_address = "127.0.0.1",
                   .port = 6443,
                   .history_seconds = 300,
                   .event_ttl_ms = 3600000,
                   .max_inflight = 400,
                   .max_mutating_inflight = 200,
                   .request_timeout_ms = 60000,
                   .http2_max_streams = KAPI_HTTP_HTTP2_MAX_STREAMS,
                   .authz_modes = {KAPI_AUTHZ_RBAC},
                   .nauthz_modes = 1,
                   .anonymous = true,
                   .etcd = {.prefix = "/registry", .compaction_interval_s = 300}};
    int c;
    char *end;
    int flag = 0;
    while ((c = getopt_long(argc, argv, "hv:", longs, &flag)) != -1) {
        if (c != '?' && c != 'h')
            add_given(o, c == 'v' ? "v" : longs[flag].name,
                      c == 'v' && *optarg == '=' ? optarg + 1 : optarg);
        switch (c) {
        case DATA_DIR:
            o->data_dir = optarg;
            break;
        case BIND:
            o->bind_address = optarg;
            break;
        case PORT:
            o->port = (int)strtol(optarg, &end, 10);
            if (*end || o->port < 0 || o->port > 65535) {
                fprintf(stderr, "kapi: --secure-port: not a port: %s\n", optarg);
                return 2;
            }
            break;
        case CERT:
            o->cert_file = optarg;
            break;
        case KEY:
            o->key_file = optarg;
            break;
        case TOKENS:
            o->token_file = optarg;
            break;
        case CLIENT_CA:
            o->client_ca_file = optarg;
            break;
        case HISTORY:
            o->history_seconds = strtol(optarg, &end, 10);
            if (*end || o->history_seconds < 1 || o->history_seconds > 86400) {
                fprintf(stderr, "kapi: --watch-history: not a number of seconds (1-86400): %s\n",
                        optarg);
                return 2;
            }
            break;
        case MAX_INFLIGHT:
            if (!parse_count("max-requests-inflight", "requests", optarg, &o->max_inflight))
                return 2;
            break;
        case MAX_MUTATING:
            if (!parse_count("max-mutating-requests-inflight", "requests", optarg,
                             &o->max_mutating_inflight))
                return 2;
            break;
        case REQUEST_TIMEOUT:
            if (!parse_timeout(optarg, &o->request_timeout_ms))
                return 2;
            break;
        case HTTP2_STREAMS:
            if (!parse_count("http2-max-streams-per-connection", "streams", optarg,
                             &o->http2_max_streams))
                return 2;
            break;
        case SA_ISSUER:
            if (!add_issuer(o, optarg))
                return 2;
            break;
        case SA_SIGNING_KEY:
            o->sa_signing_key = optarg;
            break;
        case SA_KEY:
            strings_add(&o->sa_key_files, optarg);
            break;
        case SA_MAX_EXPIRATION:
            if (!parse_max_expiration(optarg, &o->sa_max_expiration))
                return 2;
            break;
        case SA_JWKS_URI:
            if (!check_jwks_uri(optarg))
                return 2;
            o->sa_jwks_uri = optarg;
            break;
        case API_AUDIENCES:
            strings_add_list(&o->api_audiences, optarg);
            break;
        case AUTHZ_MODE:
            if (!parse_modes(optarg, o))
                return 2;
            break;
        case ANONYMOUS:
            if (optarg && !parse_bool("anonymous-auth", optarg, &o->anonymous))
                return 2;
            if (!optarg)
                o->anonymous = true;
            break;
        case ETCD_SERVERS:
            o->etcd.servers = *optarg ? optarg : NULL;
            break;
        case ETCD_PREFIX:
            o->etcd.prefix = optarg;
            break;
        case ETCD_CA:
            o->etcd.ca_file = optarg;
            break;
        case ETCD_CERT:
            o->etcd.cert_file = optarg;
            break;
        case ETCD_KEY:
            o->etcd.key_file = optarg;
            break;
        case ETCD_COMPACTION:
            if (!parse_compaction_interval(optarg, &o->etcd.compaction_interval_s))
                return 2;
            break;
        case LEADER_ELECT:
            if (optarg && !parse_bool("leader-elect", optarg, &o->leader_elect))
                return 2;
            if (!optarg)
                o->leader_elect = true;
            o->leader_elect_given = true;
            break;
        case LEASE_DURATION:
            if (!parse_positive_ms("leader-elect-lease-duration", optarg, &o->lease_ms))
                return 2;
            break;
        case RENEW_DEADLINE:
            if (!parse_positive_ms("leader-elect-renew-deadline", optarg, &o->renew_ms))
                return 2;
            break;
        case RETRY_PERIOD:
            if (!parse_positive_ms("leader-elect-retry-period", optarg, &o->retry_ms))
                return 2;
            break;
        case ALLOCATE_NODE_CIDRS:
            o->allocate_node_cidrs = true;
            if (optarg && !parse_bool("allocate-node-cidrs", optarg, &o->allocate_node_cidrs))
                return 2;
            break;
        case WEBHOOK_RESOLVE:
            if (!kapi_webhook_resolve_valid(optarg)) {
                fprintf(stderr, "kapi: --webhook-resolve: not HOST:PORT:ADDRESS: %s\n", optarg);
                return 2;
            }
            strings_add(&o->webhook_resolve, optarg);
            break;
        case EVENT_TTL:
            if (!parse_positive_ms("event-ttl", optarg, &o->event_ttl_ms))
                return 2;
            break;
        case CONTROLLERS:
            o->controllers.n = 0;
            strings_add_list(&o->controllers, optarg);
            if (!check_controllers(&o->controllers))
                return 2;
            break;
        case CLOCK_FILE:
            if (!read_clock_file(optarg))
                return 2;
            o->clock_file = optarg;
            break;
        case VERBOSITY:
            if (!parse_verbosity(optarg, &o->verbosity))
                return 2;
            break;
        case LOGGING_FORMAT:
            if (!kapi_log_parse_format(optarg, &o->log_format)) {
                fprintf(stderr,
                        "kapi: --logging-format: Unsupported value: \"%s\": supported values: "
                        "\"json\", \"text\"\n",
                        optarg);
                return 2;
            }
            break;
        case AUDIT_LOG_PATH:
            o->audit_log_path = optarg;
            break;
        case AUDIT_POLICY_FILE:
            o->audit_policy_file = optarg;
            break;
        case AUDIT_MAXSIZE:
            if (!parse_count("audit-log-maxsize", "megabytes", optarg, &o->audit_max_mb))
                return 2;
            break;
        case AUDIT_MAXBACKUP:
            if (!parse_count("audit-log-maxbackup", "files", optarg, &o->audit_max_backups))
                return 2;
            break;
        case HELP:
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc || !o->cert_file != !o->key_file || !o->etcd.cert_file != !o->etcd.key_file) {
        if (!o->cert_file != !o->key_file)
            fputs("kapi: --tls-cert-file and --tls-private-key-file go together\n", stderr);
        if (!o->etcd.cert_file != !o->etcd.key_file)
            fputs("kapi: --etcd-certfile and --etcd-keyfile go together\n", stderr);
        usage(stderr);
        return 2;
    }
    if (!o->leader_elect_given)
        o->leader_elect = o->etcd.servers != NULL;
    if (!o->controllers.n)
        strings_add(&o->controllers, "*");
    return check_leader_durations(o) ? 0 : 2;
}

static void on_http_closed(void *ctx)
{
    server *s = ctx;
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sighup, NULL);
}

/* SIGHUP: the clock file is read again (the test hook moves the controllers' clock). */
static void on_sighup(uv_signal_t *h, int signum)
{
    server *s = h->data;
    (void)signum;
    if (s->clock_file)
        read_clock_file(s->clock_file);
}

static void on_signal(uv_signal_t *h, int signum)
{
    server *s = h->data;
    (void)signum;
    if (s->stopping)
        return;
    s->stopping = true;
    KAPI_LOG_INFO(0, "shutting down");
    kapi_api_set_shutting_down(s->api);
    kapi_http_server_shutdown(s->http, on_http_closed, s);
}

/* OnStartedLeading: kube-controller-manager's controllers, and the CRD controllers, which
 * kube-apiserver runs in every instance but issue 17 elects too. */
static void controllers_started(void *ctx)
{
    controllers *c = ctx;
    if (c->elected)
        KAPI_LOG_INFO(0, "leading: the controllers run in this instance");
    if (controller_enabled(c->enabled, "namespace"))
        c->namespaces = kapi_namespace_controller_start(c->api);
    c->crds = kapi_crd_controller_start(c->api);
    if (controller_enabled(c->enabled, "serviceaccount"))
        c->serviceaccounts = kapi_serviceaccount_controller_start(c->api);
    if (controller_enabled(c->enabled, "clusterrole-aggregation"))
        c->aggregation = kapi_rbac_aggregation_controller_start(c->api);
    if (controller_enabled(c->enabled, "cronjob"))
        c->cronjobs = kapi_cronjob_controller_start(c->api);
    if (controller_enabled(c->enabled, "garbagecollector"))
        c->gc = kapi_gc_controller_start(c->api);
    if (c->allocate_node_cidrs && controller_enabled(c->enabled, "nodeipam"))
        c->clustercidr = kapi_clustercidr_controller_start(c->api);
}

/* OnStoppedLeading: the controllers stop; the elector campaigns again (where
 * kube-controller-manager would exit). */
static void controllers_stopped(void *ctx)
{
    controllers *c = ctx;
    kapi_controller_stop(c->cronjobs);
    kapi_controller_stop(c->gc);
    kapi_controller_stop(c->clustercidr);
    c->clustercidr = NULL;
    kapi_controller_stop(c->serviceaccounts);
    kapi_controller_stop(c->aggregation);
    kapi_controller_stop(c->crds);
    kapi_controller_stop(c->namespaces);
    c->namespaces = c->crds = c->serviceaccounts = c->aggregation = c->cronjobs = c->gc = NULL;
    if (c->elected)
        KAPI_LOG_INFO(0, "not leading: the controllers stopped");
}

/* The elector's identity: kube-controller-manager's "<hostname>_<uuid>", with this data
 * dir's instance id as the UUID, so that an instance restarted after a crash finds the
 * lease naming it and renews it at once, where kube-controller-manager, with a new UUID
 * at each start, waits for its old lease to expire. Two instances must therefore never
 * share a data dir. */
static kapi_error *leader_identity(const char *dir, char **out)
{
    char uuid[37];
    kapi_error *err = kapi_pki_instance_id(uuid, dir);
    *out = err ? NULL : kapi_leader_default_identity(uuid);
    return err;
}

/* Starts the controllers, or the elector that starts them when this instance leads
 * (kube-system exists by now: a free lease is taken at the first try). */
static void controllers_start(controllers *c, const options *o, const char *identity)
{
    if (!o->leader_elect) {
        controllers_started(c);
        return;
    }
    kapi_leader_config lc = {.identity = identity,
                             .lease_ms = o->lease_ms,
                             .renew_ms = o->renew_ms,
                             .retry_ms = o->retry_ms,
                             .release = true,
                             .cb = {controllers_started, controllers_stopped, c}};
    c->elected = true;
    c->elector = kapi_leader_start(c->api, &lc);
    KAPI_LOG_INFO(0, "leader election on lease kube-system/kube-controller-manager as %s",
                  kapi_leader_identity(c->elector));
}

/* Stops the controllers; an elector that leads releases the lease after. */
static void controllers_stop(controllers *c)
{
    if (c->elector)
        kapi_leader_stop(c->elector);
    else
        controllers_stopped(c);
}

static kapi_error *ensure_default_namespaces(kapi_api *api)
{
    static const char *const names[] = {"default", "kube-system", "kube-public", "kube-node-lease"};
    kapi_error *err = NULL;
    for (size_t i = 0; !err && i < KAPI_ARRAY_LEN(names); i++)
        err = kapi_namespace_ensure(api, names[i]);
    return err;
}

/* The data dir holds every stored object, the CA's key and the admin token: only its
 * owner may read it. New files are private through the umask (SQLite's database, journal
 * and shared-memory files, the PKI, the kubeconfig); a dir or files left looser by an
 * older kapi or by hand are tightened at start. */
static kapi_error *private_data_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "\"%s\" is not a directory", dir);
    if ((st.st_mode & 077) && chmod(dir, st.st_mode & 0700) != 0)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "chmod \"%s\": %s", dir, strerror(errno));
    DIR *d = opendir(dir);
    if (!d)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "reading \"%s\": %s", dir,
                              strerror(errno));
    kapi_error *err = NULL;
    struct dirent *e;
    while (!err && (e = readdir(d)) != NULL) {
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            !(st.st_mode & 077))
            continue;
        if (fchmodat(dirfd(d), e->d_name, st.st_mode & 0600, 0) != 0)
            err = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "chmod \"%s/%s\": %s", dir, e->d_name,
                                 strerror(errno));
    }
    closedir(d);
    return err;
}

static kapi_error *share_through_store(void *ctx, kapi_str mine, kapi_buf *theirs)
{
    return kapi_store_share(ctx, "identity", mine, theirs);
}

/* Instances on one etcd are one cluster: they share the files of the data dir that no
 * flag gives (kapi_auth_share_identity). */
/* Events go ttl_ms after their last write (--event-ttl), as kube-apiserver's etcd leases
 * make them go; core/v1 and events.k8s.io/v1 Events share their keys. */
static kapi_store_expirer *expire_events(const kapi_registry *reg, kapi_store *store, int ttl_ms)
{
    const kapi_type *t =
        kapi_registry_lookup(reg, kapi_str_c(""), kapi_str_c("v1"), kapi_str_c("events"));
    if (!t)
        return NULL;
    kapi_arena a;
    kapi_arena_init(&a);
    kapi_store_expirer *x =
        kapi_store_expire_start(store, kapi_type_key(&a, t, KAPI_STR(""), KAPI_STR("")), ttl_ms);
    kapi_arena_dispose(&a);
    return x;
}

static kapi_error *share_identity(const options *o, kapi_store *store)
{
    const char *names[6];
    size_t n = 0;
    names[n++] = "ca.crt";
    names[n++] = "ca.key";
    if (!o->cert_file) {
        names[n++] = "server.crt";
        names[n++] = "server.key";
    }
    names[n++] = "admin-token";
    if (!o->sa_signing_key)
        names[n++] = "sa.key";
    return kapi_auth_share_identity(o->data_dir, names, n, share_through_store, store);
}

/* The address clients use: a wildcard bind is reached through loopback. */
static const char *client_host(const char *bind)
{
    return strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0 || !*bind ? "127.0.0.1" : bind;
}

/* The audit log of --audit-log-path and its companions, or none. */
static kapi_error *open_audit(const options *o, kapi_audit **out)
{
    kapi_audit_config c = {.path = o->audit_log_path,
                           .policy_file = o->audit_policy_file,
                           .max_bytes = (int64_t)o->audit_max_mb * 1024 * 1024,
                           .max_backups = (int)o->audit_max_backups};
    *out = NULL;
    return o->audit_log_path ? kapi_audit_new(out, &c) : NULL;
}

/* The start-up lines: the version, the flags given, the store and the data dir. */
static void log_start(const options *o)
{
    KAPI_LOG_INFO(0, "Version: v1.26.0+kapi");
    for (size_t i = 0; i < o->ngiven; i++)
        KAPI_LOG_INFO(0, "FLAG: --%s=\"%s\"", o->given[i].name,
                      o->given[i].value ? o->given[i].value : "true");
    KAPI_LOG_INFO(0, "data dir: %s", o->data_dir);
    if (o->etcd.servers)
        KAPI_LOG_INFO(0, "store: etcd at %s, prefix %s", o->etcd.servers, o->etcd.prefix);
    else
        KAPI_LOG_INFO(0, "store: sqlite at %s/kapi.db", o->data_dir);
}

static int run(const options *o)
{
    server s = {0};
    kapi_pki pki = {0};
    kapi_auth *auth = NULL;
    kapi_registry *reg = NULL;
    kapi_store *store = NULL;
    kapi_store_expirer *events = NULL;
    kapi_audit *audit = NULL;
    controllers cs = {0};
    kapi_error *err = NULL;
    char *db = kapi_xprintf("%s/kapi.db", o->data_dir);
    char *kubeconfig = kapi_xprintf("%s/kubeconfig", o->data_dir);
    char *address = NULL, *url = NULL, *sa_key = NULL, *identity = NULL;
    int rc = 1;

    umask(077);
    log_start(o);
    if ((err = kapi_pki_ensure(&pki, o->data_dir, o->bind_address)) != NULL ||
        (!o->sa_signing_key && (err = kapi_pki_sa_key(&sa_key, o->data_dir)) != NULL) ||
        (err = private_data_dir(o->data_dir)) != NULL || (err = open_audit(o, &audit)) != NULL ||
        (o->leader_elect && (err = leader_identity(o->data_dir, &identity)) != NULL))
        goto done;
    kapi_auth_config auth_config = {
        .dir = o->data_dir,
        .token_file = o->token_file,
        .sa = {.issuers = o->sa_issuers.v,
               .nissuers = o->sa_issuers.n,
               .signing_key_file = o->sa_signing_key ? o->sa_signing_key : sa_key,
               .key_files = o->sa_key_files.v,
               .nkey_files = o->sa_key_files.n,
               .audiences = o->api_audiences.v,
               .naudiences = o->api_audiences.n,
               .max_expiration = o->sa_max_expiration,
               .jwks_uri = o->sa_jwks_uri},
    };
    if ((err = kapi_registry_new(&reg)) != NULL)
        goto done;
    for (size_t i = 0; i < o->webhook_resolve.n; i++)
        kapi_webhook_resolve(kapi_registry_webhooks(reg), o->webhook_resolve.v[i]);
    kapi_arena keys;
    kapi_arena_init(&keys);
    kapi_store_options so = {.path = db, .history_seconds = o->history_seconds, .etcd = o->etcd};
    so.rekeys = kapi_registry_rekeys(reg, &keys, &so.nrekeys);
    err = kapi_store_open(&store, &so);
    kapi_arena_dispose(&keys);
    if (err || (o->etcd.servers && (err = share_identity(o, store)) != NULL) ||
        (err = kapi_auth_new(&auth, &auth_config)) != NULL)
        goto done;
    events = expire_events(reg, store, o->event_ttl_ms);
    if (!kapi_jwt_verifies_own(kapi_auth_jwt(auth)))
        KAPI_LOG_WARNING("no --service-account-key-file holds the signing key's public half: the "
                         "ServiceAccount tokens kapi issues will not authenticate");
    uv_loop_init(&s.loop);
    const char *host = client_host(o->bind_address);
    bool v6 = strchr(host, ':') != NULL;
    kapi_http_config hc = {
        .bind_address = o->bind_address,
        .port = o->port,
        .cert_file = o->cert_file ? o->cert_file : pki.server_cert,
        .key_file = o->key_file ? o->key_file : pki.server_key,
        .client_ca_file = o->client_ca_file,
        .max_body = KAPI_API_MAX_BODY,
        .workers = WORKERS,
        .handler = kapi_api_handle,
        .classify = kapi_api_classify,
        .max_inflight = {[KAPI_HTTP_READ] = (unsigned)o->max_inflight,
                         [KAPI_HTTP_MUTATE] = (unsigned)o->max_mutating_inflight},
        .request_timeout_ms = o->request_timeout_ms,
        /* kube-apiserver's 0 is Go's default */
        .http2_max_streams = o->http2_max_streams ? (unsigned)o->http2_max_streams : 250,
        .busy = kapi_api_busy_answer,
        .timeout = kapi_api_timeout_answer,
    };
    kapi_api_config ac = {.store = store,
                          .registry = reg,
                          .auth = auth,
                          .request_timeout_ms = o->request_timeout_ms,
                          .nauthz_modes = o->nauthz_modes,
                          .anonymous = o->anonymous,
                          .audit = audit};
    memcpy(ac.authz_modes, o->authz_modes, sizeof(ac.authz_modes));
    s.api = kapi_api_new(&ac);
    cs.api = s.api;
    cs.enabled = &o->controllers;
    cs.allocate_node_cidrs = o->allocate_node_cidrs;
    hc.handler_ctx = s.api;
    if ((err = kapi_http_server_new(&s.http, &s.loop, &hc)) != NULL)
        goto done_loop;
    int port = kapi_http_server_port(s.http);
    address = kapi_xprintf(v6 ? "[%s]:%d" : "%s:%d", host, port);
    url = kapi_xprintf("https://%s", address);
    /* Known only once bound (--secure-port 0); no request is served before the loop runs. */
    kapi_api_set_server_address(s.api, address);
    if ((err = ensure_default_namespaces(s.api)) == NULL)
        controllers_start(&cs, o, identity);
    if (err || (err = kapi_rbac_bootstrap(s.api)) != NULL ||
        (err = kapi_kubeconfig_write(kubeconfig, url, o->cert_file ? o->cert_file : pki.ca_cert,
                                     kapi_auth_admin_token(auth))) != NULL) {
        kapi_http_server_shutdown(s.http, NULL, NULL);
        uv_run(&s.loop, UV_RUN_DEFAULT);
        goto done_loop;
    }
    uv_signal_init(&s.loop, &s.sigterm);
    uv_signal_init(&s.loop, &s.sigint);
    uv_signal_init(&s.loop, &s.sighup);
    s.sigterm.data = s.sigint.data = s.sighup.data = &s;
    s.clock_file = o->clock_file;
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_signal_start(&s.sighup, on_sighup, SIGHUP);
    KAPI_LOG_INFO(0, "Serving securely on %s", address);
    char abs[PATH_MAX];
    printf("kapi: serving on %s\nexport KUBECONFIG=%s\n", url,
           realpath(kubeconfig, abs) ? abs : kubeconfig);
    fflush(stdout);
    uv_run(&s.loop, UV_RUN_DEFAULT);
    rc = 0;
done_loop:
    if (s.http)
        kapi_http_server_free(s.http);
    uv_loop_close(&s.loop);
done:
    if (err) {
        KAPI_LOG_ERROR("%s", err->message);
        kapi_error_free(err);
    }
    if (cs.api)
        controllers_stop(&cs);
    kapi_api_free(s.api);
    kapi_audit_free(audit);
    kapi_store_expire_stop(events);
    kapi_store_free(store);
    kapi_registry_free(reg);
    kapi_auth_free(auth);
    kapi_pki_dispose(&pki);
    free(db);
    free(kubeconfig);
    free(address);
    free(url);
    free(sa_key);
    free(identity);
    return rc;
}

int main(int argc, char **argv)
{
    kapi_json_setup();
    options o;
    int rc = parse_options(&o, argc, argv);
    if (!rc) {
        kapi_log_setup(o.verbosity, o.log_format, 2);
        signal(SIGPIPE, SIG_IGN);
        rc = run(&o);
    } else {
        rc = rc == 1 ? 0 : rc;
    }
    free(o.sa_issuers.v);
    free(o.sa_key_files.v);
    free(o.api_audiences.v);
    free(o.webhook_resolve.v);
    free(o.controllers.v);
    free(o.given);
    return rc;
}
