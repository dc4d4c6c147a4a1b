/*
 * main/options: the flag table, and the command line, config file and help read from it.
 */
#include "main/main.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/version.h"
#include "codec/go.h"
#include "codec/yaml.h"
#include "controllers/controllers.h"
#include "http/http.h"
#include "webhook/webhook.h"

/* The groups of `kapi --help`, in kube-apiserver's order and with its names (a group
 * without flags is not shown), kube-controller-manager's flags under "Controllers". */
#define GROUPS(XX)                                                                                 \
    XX(GENERIC, "Generic")                                                                         \
    XX(ETCD, "Etcd")                                                                               \
    XX(SERVING, "Secure serving")                                                                  \
    XX(AUDIT, "Auditing")                                                                          \
    XX(AUTHN, "Authentication")                                                                    \
    XX(AUTHZ, "Authorization")                                                                     \
    XX(CONTROLLERS, "Controllers")                                                                 \
    XX(METRICS, "Metrics")                                                                         \
    XX(LOGS, "Logs")                                                                               \
    XX(MISC, "Misc")                                                                               \
    XX(GLOBAL, "Global")

typedef enum group {
#define XX(id, title) G_##id,
    GROUPS(XX)
#undef XX
        GROUP_COUNT
} group;

static const char *const group_titles[] = {
#define XX(id, title) title,
    GROUPS(XX)
#undef XX
};

typedef struct flag flag;

/* Sets the flag from one value (a command-line argument or a config file's scalar,
 * which the setter may keep and modify); returns why it cannot, to free, or NULL. */
typedef char *set_fn(kapi_options *o, const flag *f, char *value);

/* A flag's traits (its traits member). */
enum {
    LIST = 1,    /* each item of a config file list is one value (a repeatable flag) */
    CMDLINE = 2, /* the command line only (--config, --help, --version) */
};

struct flag {
    const char *name;
    char shorthand; /* -h; 0: none */
    group group;
    /* The value's kind as pflag shows it ("string", "int", "duration", "strings" for a
     * comma-separated list, "stringArray" for a repeated flag); NULL: a bool, which
     * takes no argument (`--flag` is `--flag=true`). */
    const char *type;
    /* The default, set through set before the config file and the command line are read,
     * and shown by --help; NULL: none (or one that depends on other flags, which the help
     * text tells). */
    const char *def;
    const char *help;
    set_fn *set;
    size_t off; /* the field the generic setters set */
    int traits;
};

#define AT(field) offsetof(kapi_options, field)
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define FIELD(o, f, type) ((type *)((char *)(o) + (f)->off))

/* The controllers --controllers names (kube-controller-manager's names), all on by
 * default; the CRD controller is kube-apiserver's and always runs, and nodeipam (the
 * ClusterCIDR allocator) runs only with --allocate-node-cidrs, as in kube. */
static const char *const controller_names[] = {
    "clusterrole-aggregation", "cronjob", "garbagecollector", "namespace", "nodeipam",
    "serviceaccount"};

static void strings_add(kapi_strings *s, const char *v)
{
    s->v = kapi_xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
    s->v[s->n++] = v;
}

/* A StringSlice flag's value: its comma-separated items, the empty ones dropped. */
static void strings_add_list(kapi_strings *s, char *list)
{
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save))
        strings_add(s, item);
}

static char *set_string(kapi_options *o, const flag *f, char *value)
{
    *FIELD(o, f, const char *) = value;
    return NULL;
}

/* A Go bool (strconv.ParseBool). */
static char *parse_bool(const char *value, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(yes); i++) {
        if (strcmp(value, yes[i]) == 0 || strcmp(value, no[i]) == 0) {
            *out = strcmp(value, yes[i]) == 0;
            return NULL;
        }
    }
    return kapi_xstrdup("not a bool (true or false)");
}

static char *set_bool(kapi_options *o, const flag *f, char *value)
{
    return parse_bool(value, FIELD(o, f, bool));
}

/* A decimal number from lo to hi. */
static char *parse_long(const char *value, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (!*value || *end || errno || n < lo || n > hi)
        return kapi_xprintf("not a number from %ld to %ld", lo, hi);
    *out = n;
    return NULL;
}

/* A count (requests, streams): 0 to INT_MAX. */
static char *set_count(kapi_options *o, const flag *f, char *value)
{
    return parse_long(value, 0, INT_MAX, FIELD(o, f, long));
}

static char *set_port(kapi_options *o, const flag *f, char *value)
{
    long port;
    char *why = parse_long(value, 0, 65535, &port);
    (void)f;
    if (!why)
        o->port = (int)port;
    return why;
}

static char *set_history(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    return parse_long(value, 1, 86400, &o->history_seconds);
}

/* A repeated flag (StringArray). */
static char *set_array(kapi_options *o, const flag *f, char *value)
{
    strings_add(FIELD(o, f, kapi_strings), value);
    return NULL;
}

/* A comma-separated list that the flag's repeats add to (StringSlice). */
static char *set_slice(kapi_options *o, const flag *f, char *value)
{
    strings_add_list(FIELD(o, f, kapi_strings), value);
    return NULL;
}

/* A Go duration, in nanoseconds. */
static char *parse_duration(const char *value, int64_t *ns)
{
    return kapi_go_parse_duration(kapi_str_c(value), ns);
}

/* A positive Go duration in whole milliseconds. */
static char *parse_positive_ms(const char *value, int *out)
{
    int64_t ns;
    char *why = parse_duration(value, &ns);
    if (!why && (ns <= 0 || ns / 1000000 >= INT_MAX))
        why = kapi_xstrdup(ns <= 0 ? "must be greater than zero" : "too long");
    if (!why)
        *out = (int)((ns + 999999) / 1000000);
    return why;
}

/* --event-ttl, --leader-elect-*. */
static char *set_positive_ms(kapi_options *o, const flag *f, char *value)
{
    return parse_positive_ms(value, FIELD(o, f, int));
}

static char *set_request_timeout(kapi_options *o, const flag *f, char *value)
{
    int ms;
    char *why = parse_positive_ms(value, &ms);
    (void)f;
    if (!why)
        o->request_timeout_ms = (unsigned)ms;
    return why;
}

/* --etcd-compaction-interval: 0 (never) or a positive Go duration, in whole seconds. */
static char *set_compaction(kapi_options *o, const flag *f, char *value)
{
    int64_t ns;
    char *why = parse_duration(value, &ns);
    (void)f;
    if (!why && ns < 0)
        why = kapi_xstrdup("must not be negative");
    if (!why)
        o->etcd.compaction_interval_s = (ns + 999999999) / 1000000000;
    return why;
}

/* --service-account-max-token-expiration: 0 or from 1 hour to 2^32 seconds (kube's
 * bounds), in whole seconds. */
static char *set_max_expiration(kapi_options *o, const flag *f, char *value)
{
    int64_t ns;
    char *why = parse_duration(value, &ns);
    (void)f;
    if (why)
        return why;
    o->sa_max_expiration = ns / 1000000000;
    if (ns == 0 || (ns >= 3600 * 1000000000LL && o->sa_max_expiration <= ((int64_t)1 << 32)))
        return NULL;
    return kapi_xstrdup("must be between 1 hour and 2^32 seconds");
}

/* --service-account-issuer, as kube validates it: not empty, not given twice. */
static char *set_issuer(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    if (!*value)
        return kapi_xstrdup("should not be an empty string");
    for (size_t i = 0; i < o->sa_issuers.n; i++)
        if (strcmp(o->sa_issuers.v[i], value) == 0)
            return kapi_xstrdup("is already specified");
    strings_add(&o->sa_issuers, value);
    return NULL;
}

static char *set_jwks_uri(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    if (strncasecmp(value, "https://", 8) != 0)
        return kapi_xstrdup("requires https scheme");
    o->sa_jwks_uri = value;
    return NULL;
}

/* --authorization-mode: a comma-separated list of AlwaysAllow, AlwaysDeny and RBAC, each
 * at most once, in the order they are tried. */
static char *set_modes(kapi_options *o, const flag *f, char *value)
{
    static const struct {
        const char *name;
        kapi_authz_mode mode;
    } known[] = {{"AlwaysAllow", KAPI_AUTHZ_ALWAYS_ALLOW},
                 {"AlwaysDeny", KAPI_AUTHZ_ALWAYS_DENY},
                 {"RBAC", KAPI_AUTHZ_RBAC}};
    kapi_str rest = kapi_str_c(value), item;
    (void)f;
    o->nauthz_modes = 0;
    while (rest.len > 0 || o->nauthz_modes == 0) {
        size_t k = 0;
        kapi_str_cut(&rest, ',', &item);
        while (k < KAPI_ARRAY_LEN(known) && !kapi_str_eqc(item, known[k].name))
            k++;
        if (k == KAPI_ARRAY_LEN(known))
            return kapi_xprintf("authorization-mode %.*s is not a valid mode (AlwaysAllow, "
                                "AlwaysDeny, RBAC)",
                                (int)item.len, item.ptr);
        for (size_t i = 0; i < o->nauthz_modes; i++)
            if (o->authz_modes[i] == known[k].mode)
                return kapi_xprintf("%s specified more than once", known[k].name);
        o->authz_modes[o->nauthz_modes++] = known[k].mode;
    }
    return NULL;
}

static char *set_etcd_servers(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    o->etcd.servers = *value ? value : NULL;
    return NULL;
}

static char *set_leader_elect(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    o->leader_elect_given = true;
    return parse_bool(value, &o->leader_elect);
}

static char *set_webhook_resolve(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    if (!kapi_webhook_resolve_valid(value))
        return kapi_xstrdup("not HOST:PORT:ADDRESS");
    strings_add(&o->webhook_resolve, value);
    return NULL;
}

/* --controllers: each item "*" or a known name, "-" before it or not (kube's check). */
static char *set_controllers(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    o->controllers.n = 0;
    strings_add_list(&o->controllers, value);
    for (size_t i = 0; i < o->controllers.n; i++) {
        const char *v = o->controllers.v[i];
        bool known = strcmp(v, "*") == 0;
        v += v[0] == '-';
        for (size_t k = 0; k < KAPI_ARRAY_LEN(controller_names); k++)
            known |= strcmp(v, controller_names[k]) == 0;
        if (!known)
            return kapi_xprintf("\"%s\" is not in the list of known controllers", v);
    }
    return NULL;
}

char *kapi_options_read_clock_file(const char *path)
{
    char text[64] = "";
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    int64_t ns;
    if (!f)
        return kapi_xprintf("%s: %s", path, strerror(errno));
    fclose(f);
    text[n] = '\0';
    kapi_str d = kapi_str_c(text);
    while (d.len && strchr(" \t\r\n", d.ptr[d.len - 1]))
        d.len--;
    while (d.len && strchr(" \t\r\n", d.ptr[0]))
        d.ptr++, d.len--;
    char *why = kapi_go_parse_duration(d, &ns);
    if (why) {
        char *in = kapi_xprintf("%s: %s", path, why);
        free(why);
        return in;
    }
    kapi_controllers_set_clock_offset(ns / 1000000);
    return NULL;
}

static char *set_clock_file(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    o->clock_file = value;
    return kapi_options_read_clock_file(value);
}

static char *set_verbosity(kapi_options *o, const flag *f, char *value)
{
    return parse_long(value, 0, INT_MAX, FIELD(o, f, long));
}

static char *set_log_format(kapi_options *o, const flag *f, char *value)
{
    (void)f;
    return kapi_log_parse_format(value, &o->log_format)
               ? NULL
               : kapi_xstrdup("supported values: \"json\", \"text\"");
}

/* The table. Help texts say what the value means in kapi; where kapi differs from
 * kube-apiserver the text says so. */
static const flag flags[] = {
    {"config", 0, G_GENERIC, "string", NULL,
     "A YAML file of settings: a mapping of these flags' names (without --) to values, "
     "strings, numbers, bools or lists (secure-port: 6443, etcd-servers: [a, b]). A flag "
     "given on the command line replaces the file's setting of it.",
     set_string, AT(config_file), CMDLINE},
    {"data-dir", 0, G_GENERIC, "string", "kapi-data",
     "The directory of the SQLite store (kapi.db), the generated CA, serving certificate and "
     "keys, the admin token and the kubeconfig. Private: created 0700, its files 0600.",
     set_string, AT(data_dir), 0},
    {"max-requests-inflight", 0, G_GENERIC, "int", "400",
     "The reads served or waiting for a worker at once; more are answered 429 with "
     "Retry-After: 1. 0: no limit.",
     set_count, AT(max_inflight), 0},
    {"max-mutating-requests-inflight", 0, G_GENERIC, "int", "200",
     "The same for writes (create, update, patch, delete, deletecollection). Watches count "
     "against neither.",
     set_count, AT(max_mutating_inflight), 0},
    {"request-timeout", 0, G_GENERIC, "duration", "1m0s",
     "The longest any request but a watch may take; the timeout query parameter shortens it. "
     "At the deadline kapi answers 504 Timeout.",
     set_request_timeout, 0, 0},
    {"webhook-resolve", 0, G_GENERIC, "stringArray", NULL,
     "HOST:PORT:ADDRESS, as curl's --resolve: a webhook at HOST:PORT is reached at ADDRESS "
     "(kapi runs no Services; the certificate is still verified for HOST). Repeatable.",
     set_webhook_resolve, 0, LIST},
    {"etcd-servers", 0, G_ETCD, "strings", NULL,
     "etcd 3.4+ client URLs (http:// or https://), comma separated: the store is etcd, "
     "shared with other kapi instances, instead of SQLite in the data dir.",
     set_etcd_servers, 0, 0},
    {"etcd-prefix", 0, G_ETCD, "string", "/registry",
     "The prefix of every key in etcd, kube-apiserver's layout under it.", set_string,
     AT(etcd.prefix), 0},
    {"etcd-cafile", 0, G_ETCD, "string", NULL,
     "The CA file that verifies etcd's serving certificate.", set_string, AT(etcd.ca_file), 0},
    {"etcd-certfile", 0, G_ETCD, "string", NULL,
     "The client certificate kapi presents to etcd (with --etcd-keyfile).", set_string,
     AT(etcd.cert_file), 0},
    {"etcd-keyfile", 0, G_ETCD, "string", NULL, "The key of --etcd-certfile.", set_string,
     AT(etcd.key_file), 0},
    {"etcd-compaction-interval", 0, G_ETCD, "duration", "5m0s",
     "How often one instance compacts etcd to the revision of one interval before. 0: never.",
     set_compaction, 0, 0},
    {"watch-history", 0, G_ETCD, "int", "300",
     "Seconds of changes kept for watches, reads at a past resourceVersion and continue "
     "tokens, across restarts (1 to 86400); older ones answer 410 Expired. kapi's own.",
     set_history, 0, 0},
    {"bind-address", 0, G_SERVING, "string", "127.0.0.1",
     "The IP address to listen on (0.0.0.0 or ::: every interface).", set_string, AT(bind_address),
     0},
    {"secure-port", 0, G_SERVING, "int", "6443", "The HTTPS port. 0: a free one.", set_port, 0, 0},
    {"tls-cert-file", 0, G_SERVING, "string", NULL,
     "The serving certificate (PEM, with its chain) instead of the one generated in the data "
     "dir; the kubeconfig then trusts this file. Reloaded on SIGHUP.",
     set_string, AT(cert_file), 0},
    {"tls-private-key-file", 0, G_SERVING, "string", NULL,
     "The key of --tls-cert-file. Reloaded on SIGHUP.", set_string, AT(key_file), 0},
    {"http2-max-streams-per-connection", 0, G_SERVING, "int",
     STRINGIFY(KAPI_HTTP_HTTP2_MAX_STREAMS),
     "The concurrent streams one HTTP/2 connection may open. 0: Go's default, 250.", set_count,
     AT(http2_max_streams), 0},
    {"anonymous-auth", 0, G_AUTHN, NULL, "true",
     "A request without credentials is system:anonymous in system:unauthenticated; false: "
     "it gets 401.",
     set_bool, AT(anonymous), 0},
    {"api-audiences", 0, G_AUTHN, "strings", NULL,
     "The audiences a ServiceAccount token must be meant for, comma separated. Default: the "
     "issuers.",
     set_slice, AT(api_audiences), 0},
    {"client-ca-file", 0, G_AUTHN, "string", NULL,
     "Accept client certificates signed by this CA: the user is the CN, the groups the O.",
     set_string, AT(client_ca_file), 0},
    {"service-account-issuer", 0, G_AUTHN, "stringArray", NULL,
     "The iss of the ServiceAccount tokens kapi issues; repeat it to accept tokens of more "
     "issuers (the first signs). Default: https://kubernetes.default.svc.cluster.local "
     "(kubeadm's).",
     set_issuer, 0, LIST},
    {"service-account-jwks-uri", 0, G_AUTHN, "string", NULL,
     "The jwks_uri of /.well-known/openid-configuration (https). Default: "
     "https://<server address>/openid/v1/jwks.",
     set_jwks_uri, 0, 0},
    {"service-account-key-file", 0, G_AUTHN, "stringArray", NULL,
     "PEM files of the keys that verify ServiceAccount tokens; repeatable. Default: the "
     "signing key's public half.",
     set_array, AT(sa_key_files), LIST},
    {"service-account-max-token-expiration", 0, G_AUTHN, "duration", NULL,
     "The longest a TokenRequest may ask for, from 1h to 2^32 s; a longer one gets this.",
     set_max_expiration, 0, 0},
    {"service-account-signing-key-file", 0, G_AUTHN, "string", NULL,
     "The PEM private key (RSA or ECDSA) ServiceAccount tokens are signed with. Default: "
     "sa.key in the data dir, generated (ECDSA P-256).",
     set_string, AT(sa_signing_key), 0},
    {"token-auth-file", 0, G_AUTHN, "string", NULL,
     "Static bearer tokens, a CSV of token,user,uid,\"group1,group2\". Reloaded on SIGHUP.",
     set_string, AT(token_file), 0},
    {"authorization-mode", 0, G_AUTHZ, "strings", "RBAC",
     "Authorizers tried in order after system:masters (always allowed), comma separated: "
     "RBAC, AlwaysAllow, AlwaysDeny.",
     set_modes, 0, 0},
    {"allocate-node-cidrs", 0, G_CONTROLLERS, NULL, NULL,
     "Run the multi-CIDR range allocator: a Node without spec.podCIDRs gets Pod CIDRs from a "
     "matching ClusterCIDR.",
     set_bool, AT(allocate_node_cidrs), 0},
    {"cluster-cidr", 0, G_CONTROLLERS, "string", NULL,
     "With --allocate-node-cidrs: the Pod range of the cluster, one CIDR or an IPv4 and an "
     "IPv6 one comma separated. The allocator makes the ClusterCIDR default-cluster-cidr of "
     "it at its start, serving every Node no other ClusterCIDR picks.",
     set_string, AT(cluster_cidr), 0},
    {"node-cidr-mask-size", 0, G_CONTROLLERS, "int32", NULL,
     "The prefix length of a Node's block of a single-stack --cluster-cidr. Default: 24 for "
     "IPv4, 64 for IPv6.",
     set_count, AT(node_cidr_mask), 0},
    {"node-cidr-mask-size-ipv4", 0, G_CONTROLLERS, "int32", NULL,
     "The prefix length of a Node's IPv4 block of --cluster-cidr. Default: 24.", set_count,
     AT(node_cidr_mask_v4), 0},
    {"node-cidr-mask-size-ipv6", 0, G_CONTROLLERS, "int32", NULL,
     "The prefix length of a Node's IPv6 block of --cluster-cidr. Default: 64.", set_count,
     AT(node_cidr_mask_v6), 0},
    {"controllers", 0, G_CONTROLLERS, "strings", "*",
     "The controllers to run, comma separated: '*' for all, 'name' to run one, '-name' to "
     "leave one out. Names: clusterrole-aggregation, cronjob, garbagecollector, namespace, "
     "nodeipam, serviceaccount.",
     set_controllers, 0, 0},
    {"controllers-clock-file", 0, G_CONTROLLERS, "string", NULL,
     "A test hook: a file holding a Go duration added to the controllers' clock; read at "
     "start and on SIGHUP.",
     set_clock_file, 0, 0},
    {"leader-elect", 0, G_CONTROLLERS, NULL, NULL,
     "Run the controllers only while this instance holds the Lease "
     "kube-system/kube-controller-manager. Default: true with --etcd-servers, else false.",
     set_leader_elect, 0, 0},
    {"leader-elect-lease-duration", 0, G_CONTROLLERS, "duration", "15s",
     "How long the others wait after the lease was last renewed before they take it.",
     set_positive_ms, AT(lease_ms), 0},
    {"leader-elect-renew-deadline", 0, G_CONTROLLERS, "duration", "10s",
     "How long the leader tries to renew before it stops its controllers; less than the lease "
     "duration.",
     set_positive_ms, AT(renew_ms), 0},
    {"leader-elect-retry-period", 0, G_CONTROLLERS, "duration", "2s",
     "How often the leader renews and the others try.", set_positive_ms, AT(retry_ms), 0},
    {"event-ttl", 0, G_MISC, "duration", "1h0m0s", "How long an Event stays after its last write.",
     set_positive_ms, AT(event_ttl_ms), 0},
    {"audit-log-path", 0, G_AUDIT, "string", NULL,
     "Write an audit.k8s.io/v1 Event of each request (Metadata level) as a JSON line to this "
     "file; '-': standard output.",
     set_string, AT(audit_log_path), 0},
    {"audit-policy-file", 0, G_AUDIT, "string", NULL,
     "kube's audit Policy (YAML or JSON): which requests are audited (None or Metadata; "
     "Request and RequestResponse are written at Metadata). Without it every request is.",
     set_string, AT(audit_policy_file), 0},
    {"audit-log-maxsize", 0, G_AUDIT, "int", NULL,
     "Megabytes of the audit log before it is rotated (a backup named as lumberjack names "
     "them). 0: never.",
     set_count, AT(audit_max_mb), 0},
    {"audit-log-maxbackup", 0, G_AUDIT, "int", NULL,
     "How many rotated audit logs are kept, the oldest removed. 0: all.", set_count,
     AT(audit_max_backups), 0},
    {"logging-format", 0, G_LOGS, "string", "text",
     "How stderr's log lines are written: text (klog's) or json (component-base's).",
     set_log_format, 0, 0},
    {"v", 'v', G_LOGS, "Level", "0",
     "The log's verbosity: errors, warnings and level 0 always; 2 adds a line per request.",
     set_verbosity, AT(verbosity), 0},
    {"help", 'h', G_GLOBAL, NULL, NULL, "Print this help and exit.", set_bool, AT(help), CMDLINE},
    {"version", 0, G_GLOBAL, NULL, NULL,
     "Print kapi's version, the Kubernetes version it serves, its commit and build date, and "
     "exit.",
     set_bool, AT(version), CMDLINE},
};

static const flag *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(flags); i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return &flags[i];
    return NULL;
}

static const flag *find_shorthand(char c)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(flags); i++)
        if (flags[i].shorthand && flags[i].shorthand == c)
            return &flags[i];
    return NULL;
}

/* One flag of the command line, and its value. */
typedef struct assignment {
    const flag *flag;
    char *value;
} assignment;

/* The flag of one argument, "--name[=value]" or "-c[[=]value]", and *value the value
 * in it (NULL when none); NULL, with the error printed, when no flag has that name. */
static const flag *arg_flag(char *arg, char **value)
{
    const flag *f;
    if (arg[1] != '-') {
        f = find_shorthand(arg[1]);
        *value = arg[2] ? arg + 2 + (arg[2] == '=') : NULL;
        if (!f)
            fprintf(stderr, "Error: unknown shorthand flag: '%c' in %s\n", arg[1], arg);
        return f;
    }
    char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    f = find_flag(name, len);
    *value = eq ? eq + 1 : NULL;
    if (!f)
        fprintf(stderr, "Error: unknown flag: --%.*s\n", (int)len, name);
    return f;
}

/* Splits argv into assignments (sets[0..*n)), as pflag does; false, with the error
 * printed, on an unknown flag, a missing value or an argument that is not a flag. */
static bool scan_argv(int argc, char **argv, assignment *sets, size_t *n)
{
    *n = 0;
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i], *value;
        const flag *f;
        if (arg[0] != '-' || !arg[1] || strcmp(arg, "--") == 0) {
            fprintf(stderr, "Error: unexpected argument \"%s\": kapi takes flags only\n",
                    strcmp(arg, "--") == 0 && i + 1 < argc ? argv[i + 1] : arg);
            return false;
        }
        if ((f = arg_flag(arg, &value)) == NULL)
            return false;
        if (!value && !f->type)
            value = "true";
        else if (!value && i + 1 < argc)
            value = argv[++i];
        if (!value) {
            fprintf(stderr, "Error: flag needs an argument: --%s\n", f->name);
            return false;
        }
        sets[(*n)++] = (assignment){f, value};
    }
    return true;
}

/* Sets f from value (the setter may cut it up: the error shows a copy). */
static char *own(kapi_options *o, char *s);

static bool apply(kapi_options *o, const flag *f, char *value, const char *file)
{
    char *shown = kapi_xstrdup(value);
    char *why = f->set(o, f, value);
    if (!why && !(f->traits & CMDLINE)) {
        o->given = kapi_xrealloc(o->given, (o->ngiven + 1) * sizeof(*o->given));
        o->given[o->ngiven++] = (struct kapi_given){f->name, own(o, kapi_xstrdup(shown))};
    }
    if (why && file)
        fprintf(stderr, "Error: config file %s: key \"%s\": invalid value \"%s\": %s\n", file,
                f->name, shown, why);
    else if (why)
        fprintf(stderr, "Error: invalid argument \"%s\" for \"--%s\" flag: %s\n", shown, f->name,
                why);
    free(shown);
    free(why);
    return why == NULL;
}

static char *own(kapi_options *o, char *s)
{
    o->owned = kapi_xrealloc(o->owned, (o->nowned + 1) * sizeof(*o->owned));
    return o->owned[o->nowned++] = s;
}

/* A scalar of the config file as the flag's text; NULL for a mapping, a list or null. */
static char *scalar_text(const json_t *v)
{
    if (json_is_string(v))
        return kapi_xstrdup(json_string_value(v));
    if (json_is_integer(v))
        return kapi_xprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    if (json_is_real(v))
        return kapi_xprintf("%.17g", json_real_value(v));
    if (json_is_boolean(v))
        return kapi_xstrdup(json_is_true(v) ? "true" : "false");
    return NULL;
}

/* A scalar of the config file (a list's item too) as one value of f. */
static bool apply_scalar(kapi_options *o, const flag *f, const json_t *v, const char *file)
{
    char *text = scalar_text(v);
    if (!text)
        fprintf(stderr,
                "Error: config file %s: key \"%s\": not a string, number or bool, nor a list of "
                "them\n",
                file, f->name);
    return text && apply(o, f, own(o, text), file);
}

/* A list for a repeatable flag: each item is one value. */
static bool apply_each(kapi_options *o, const flag *f, const json_t *list, const char *file)
{
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        if (!apply_scalar(o, f, item, file))
            return false;
    }
    return true;
}

/* A config file value: a scalar, or a list, whose items are one value each for a
 * repeatable flag and are joined with commas for the others. */
static bool apply_value(kapi_options *o, const flag *f, const json_t *v, const char *file)
{
    size_t i;
    json_t *item;
    if (!json_is_array(v))
        return apply_scalar(o, f, v, file);
    if (f->traits & LIST)
        return apply_each(o, f, v, file);
    kapi_buf joined;
    kapi_buf_init(&joined);
    json_array_foreach(v, i, item)
    {
        char *text = scalar_text(item);
        if (!text) {
            kapi_buf_dispose(&joined);
            return apply_scalar(o, f, item, file); /* says why, and fails */
        }
        kapi_buf_printf(&joined, "%s%s", i ? "," : "", text);
        free(text);
    }
    bool ok = apply(o, f, own(o, kapi_xstrdup(joined.ptr)), file);
    kapi_buf_dispose(&joined);
    return ok;
}

static bool given(const assignment *sets, size_t n, const flag *f)
{
    for (size_t i = 0; i < n; i++)
        if (sets[i].flag == f)
            return true;
    return false;
}

/* A config file is read whole, up to this size. */
#define MAX_CONFIG (1 << 20)

static char *read_config(const char *file, kapi_buf *out)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return kapi_xstrdup(strerror(errno));
    kapi_buf_grow(out, MAX_CONFIG + 1);
    size_t n = fread(out->ptr, 1, MAX_CONFIG + 1, f);
    bool failed = ferror(f);
    fclose(f);
    if (failed || n > MAX_CONFIG)
        return kapi_xstrdup(failed ? "cannot be read" : "larger than 1 MiB");
    out->len = n;
    out->ptr[n] = '\0';
    return NULL;
}

/* The --config file: every setting but those the command line gives (sets[0..n)). */
static bool load_config(kapi_options *o, const char *file, const assignment *sets, size_t n)
{
    kapi_buf text;
    kapi_buf_init(&text);
    json_t *doc = NULL;
    kapi_error *err = NULL;
    bool ok = false;
    char *why = read_config(file, &text);
    if (!why && (err = kapi_yaml_parse(text.ptr, text.len, &doc, NULL)) != NULL)
        why = kapi_xstrdup(err->message);
    if (why) {
        fprintf(stderr, "Error: config file %s: %s\n", file, why);
        free(why);
        goto done;
    }
    if (!json_is_object(doc) && !json_is_null(doc)) {
        fprintf(stderr, "Error: config file %s: not a mapping of flag names to values\n", file);
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        const flag *f = find_flag(key, strlen(key));
        if (!f || (f->traits & CMDLINE)) {
            fprintf(stderr, "Error: config file %s: unknown key \"%s\"\n", file, key);
            goto done;
        }
        if (!given(sets, n, f) && !apply_value(o, f, v, file))
            goto done;
    }
    ok = true;
done:
    kapi_error_free(err);
    json_decref(doc);
    kapi_buf_dispose(&text);
    return ok;
}

/* The checks of several flags together. */
static bool check_together(kapi_options *o)
{
    const char *why = NULL;
    if (!o->cert_file != !o->key_file)
        why = "--tls-cert-file and --tls-private-key-file go together";
    else if (!o->etcd.cert_file != !o->etcd.key_file)
        why = "--etcd-certfile and --etcd-keyfile go together";
    if (why) {
        fprintf(stderr, "Error: %s\n", why);
        return false;
    }
    if (!o->leader_elect_given)
        o->leader_elect = o->etcd.servers != NULL;
    /* kube-controller-manager reads these only with --allocate-node-cidrs */
    char *cidr_why = o->allocate_node_cidrs
                         ? kapi_clustercidr_default_spec(
                               o->cluster_cidr, (int)o->node_cidr_mask, (int)o->node_cidr_mask_v4,
                               (int)o->node_cidr_mask_v6, &o->default_cluster_cidr)
                         : NULL;
    if (cidr_why) {
        fprintf(stderr, "Error: --cluster-cidr: %s\n", cidr_why);
        free(cidr_why);
        return false;
    }
    kapi_leader_config c = {
        .lease_ms = o->lease_ms, .renew_ms = o->renew_ms, .retry_ms = o->retry_ms};
    kapi_error *err = o->leader_elect ? kapi_leader_config_check(&c) : NULL;
    if (err)
        fprintf(stderr, "Error: --leader-elect-*: %s\n", err->message);
    kapi_error_free(err);
    return err == NULL;
}

/* The terminal's width when out is one; 0 (no wrapping) otherwise, as kube's cliflag. */
static int terminal_columns(FILE *out)
{
    struct winsize ws;
    if (!isatty(fileno(out)) || ioctl(fileno(out), TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
}

/* Every flag's default, through its setter (on a copy: setters may cut their value up). */
static void set_defaults(kapi_options *o)
{
    for (size_t i = 0; i < KAPI_ARRAY_LEN(flags); i++) {
        if (!flags[i].def)
            continue;
        char *why = flags[i].set(o, &flags[i], own(o, kapi_xstrdup(flags[i].def)));
        assert(why == NULL); /* the table's defaults are valid values */
        free(why);
    }
}

int kapi_options_parse(kapi_options *o, int argc, char **argv)
{
    *o = (kapi_options){0};
    set_defaults(o);
    assignment *sets = kapi_xmalloc((size_t)(argc + 1) * sizeof(*sets));
    size_t n;
    int rc = 1;
    if (!scan_argv(argc, argv, sets, &n))
        goto done;
    /* --help and --version first: they answer whatever else the command line holds. */
    for (size_t i = 0; i < n; i++)
        if ((sets[i].flag->traits & CMDLINE) && !apply(o, sets[i].flag, sets[i].value, NULL))
            goto done;
    if (o->help || o->version) {
        if (o->help)
            kapi_options_help(stdout, terminal_columns(stdout));
        else
            kapi_options_version(stdout);
        rc = 0;
        goto done;
    }
    if (o->config_file && !load_config(o, o->config_file, sets, n))
        goto done;
    for (size_t i = 0; i < n; i++)
        if (!(sets[i].flag->traits & CMDLINE) && !apply(o, sets[i].flag, sets[i].value, NULL))
            goto done;
    rc = check_together(o) ? -1 : 1;
done:
    free(sets);
    return rc;
}

void kapi_options_dispose(kapi_options *o)
{
    free(o->sa_issuers.v);
    free(o->sa_key_files.v);
    free(o->api_audiences.v);
    free(o->webhook_resolve.v);
    free(o->controllers.v);
    free(o->given);
    json_decref(o->default_cluster_cidr);
    for (size_t i = 0; i < o->nowned; i++)
        free(o->owned[i]);
    free(o->owned);
}

bool kapi_options_controller_enabled(const kapi_strings *list, const char *name)
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

/* A flag's first column: "  -h, --help" or "      --secure-port int". */
static void flag_head(kapi_buf *b, const flag *f)
{
    if (f->shorthand)
        kapi_buf_printf(b, "  -%c, --%s", f->shorthand, f->name);
    else
        kapi_buf_printf(b, "      --%s", f->name);
    if (f->type)
        kapi_buf_printf(b, " %s", f->type);
}

/* Writes text from column indent, wrapped at cols (pflag's wrap: not below 24 columns of
 * text, continuation lines at indent). */
static void wrap(FILE *out, const char *text, int indent, int cols)
{
    int width = cols - indent;
    if (cols == 0 || width < 24) {
        fprintf(out, "%s\n", text);
        return;
    }
    const char *p = text;
    while (*p) {
        int len = (int)strlen(p);
        int cut = len;
        if (len > width) {
            cut = width;
            while (cut > 0 && p[cut] != ' ')
                cut--;
            if (cut == 0)
                cut = (int)strcspn(p, " ");
        }
        fprintf(out, "%.*s\n", cut, p);
        p += cut;
        while (*p == ' ')
            p++;
        if (*p)
            fprintf(out, "%*s", indent, "");
    }
}

/* A flag's help and its default as pflag shows it: a string quoted, a list in [ ]. */
static char *help_text(const flag *f)
{
    const char *type = f->type ? f->type : "";
    if (!f->def)
        return kapi_xstrdup(f->help);
    if (strcmp(type, "string") == 0)
        return kapi_xprintf("%s (default \"%s\")", f->help, f->def);
    if (strncmp(type, "string", 6) == 0)
        return kapi_xprintf("%s (default [%s])", f->help, f->def);
    return kapi_xprintf("%s (default %s)", f->help, f->def);
}

static void help_group(FILE *out, group g, int cols)
{
    size_t width = 0;
    kapi_buf head;
    kapi_buf_init(&head);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(flags); i++) {
        if (flags[i].group != g)
            continue;
        kapi_buf_clear(&head);
        flag_head(&head, &flags[i]);
        width = head.len > width ? head.len : width;
    }
    if (!width) {
        kapi_buf_dispose(&head);
        return;
    }
    fprintf(out, "%s flags:\n\n", group_titles[g]);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(flags); i++) {
        if (flags[i].group != g)
            continue;
        kapi_buf_clear(&head);
        flag_head(&head, &flags[i]);
        char *text = help_text(&flags[i]);
        fprintf(out, "%s%*s", head.ptr, (int)(width - head.len + 3), "");
        wrap(out, text, (int)width + 3, cols);
        free(text);
    }
    fputc('\n', out);
    kapi_buf_dispose(&head);
}

void kapi_options_help(FILE *out, int cols)
{
    wrap(out,
         "kapi serves the Kubernetes API as kube-apiserver " KAPI_KUBE_VERSION
         " does, from one binary, on an embedded SQLite store or on etcd, with the core "
         "controllers built in. Every setting is a flag below, or a key of the --config file.",
         0, cols);
    fputs("\nUsage:\n  kapi [flags]\n\n", out);
    for (group g = 0; g < GROUP_COUNT; g++)
        help_group(out, g, cols);
}

void kapi_options_version(FILE *out)
{
    fprintf(out, "kapi %s\nKubernetes: %s\ngit commit: %s (%s)\nbuild date: %s\nplatform: %s\n",
            kapi_version, KAPI_KUBE_VERSION, *kapi_git_commit ? kapi_git_commit : "unknown",
            *kapi_git_tree_state ? kapi_git_tree_state : "not a git checkout", kapi_build_date,
            KAPI_PLATFORM);
}
