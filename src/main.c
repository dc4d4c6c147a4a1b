/*
 * kapi: start-up, signals and shutdown (the command line is src/main/options.c). Wires the
 * modules together: the store and the registry under the API pipeline, the pipeline as the
 * HTTP server's handler.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mimalloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "api/api.h"
#include "base/version.h"
#include "codec/go.h"
#include "codec/json.h"
#include "controllers/controllers.h"
#include "main/main.h"

#define WORKERS 64

/* The in-process controllers: started when this instance leads (at once without
 * --leader-elect), stopped when it stops leading. */
typedef struct controllers {
    kapi_api *api;
    bool elected; /* they run only while the elector leads */
    kapi_leader *elector;
    const kapi_strings *enabled; /* --controllers */
    kapi_controller *namespaces, *crds, *serviceaccounts, *aggregation, *cronjobs, *gc;
    kapi_controller *clustercidr; /* nodeipam, with --allocate-node-cidrs */
    bool allocate_node_cidrs;
    const json_t *default_cluster_cidr; /* the spec of --cluster-cidr's, or NULL */
} controllers;

typedef struct server {
    uv_loop_t loop;
    uv_signal_t sigterm, sigint, sighup;
    const char *clock_file, *token_file;
    /* The kubeconfig trusts --tls-cert-file itself when given: rewritten when it is
     * reloaded (NULL: it trusts the generated CA, which a reload leaves alone). */
    const char *kubeconfig, *url, *trusted_cert;
    kapi_http_server *http;
    kapi_api *api;
    kapi_auth *auth;
    bool stopping;
} server;

static void on_http_closed(void *ctx)
{
    server *s = ctx;
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sighup, NULL);
}

/* A reload's outcome on stderr: what failed and why (the old one stays), or that it took. */
static void reloaded(const char *what, kapi_error *err)
{
    if (err)
        KAPI_LOG_WARNING("SIGHUP: %s not reloaded, the old one stays: %s", what, err->message);
    else
        KAPI_LOG_INFO(0, "SIGHUP: %s reloaded", what);
    kapi_error_free(err);
}

/* SIGHUP: the serving certificate and key and the token file are read again (open
 * connections keep theirs); the clock file too (the test hook moves the controllers'
 * clock). */
static void on_sighup(uv_signal_t *h, int signum)
{
    server *s = h->data;
    (void)signum;
    struct timespec now;
    char reloading[64];
    clock_gettime(CLOCK_MONOTONIC, &now);
    snprintf(reloading, sizeof(reloading), "RELOADING=1\nMONOTONIC_USEC=%lld",
             (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000);
    kapi_notify(reloading);
    kapi_error *err = kapi_http_server_reload_tls(s->http);
    bool took = err == NULL;
    reloaded("serving certificate", err);
    if (took && s->trusted_cert &&
        (err = kapi_kubeconfig_write(s->kubeconfig, s->url, s->trusted_cert,
                                     kapi_auth_admin_token(s->auth))) != NULL) {
        KAPI_LOG_WARNING("SIGHUP: the kubeconfig still trusts the old certificate: %s",
                         err->message);
        kapi_error_free(err);
    }
    if (s->token_file)
        reloaded("token file", kapi_auth_reload_tokens(s->auth));
    char *why = s->clock_file ? kapi_options_read_clock_file(s->clock_file) : NULL;
    if (why)
        KAPI_LOG_WARNING("--controllers-clock-file %s", why);
    free(why);
    kapi_notify("READY=1");
}

static void on_signal(uv_signal_t *h, int signum)
{
    server *s = h->data;
    (void)signum;
    if (s->stopping)
        return;
    s->stopping = true;
    kapi_notify("STOPPING=1");
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
    if (kapi_options_controller_enabled(c->enabled, "namespace"))
        c->namespaces = kapi_namespace_controller_start(c->api);
    c->crds = kapi_crd_controller_start(c->api);
    if (kapi_options_controller_enabled(c->enabled, "serviceaccount"))
        c->serviceaccounts = kapi_serviceaccount_controller_start(c->api);
    if (kapi_options_controller_enabled(c->enabled, "clusterrole-aggregation"))
        c->aggregation = kapi_rbac_aggregation_controller_start(c->api);
    if (kapi_options_controller_enabled(c->enabled, "cronjob"))
        c->cronjobs = kapi_cronjob_controller_start(c->api);
    if (kapi_options_controller_enabled(c->enabled, "garbagecollector"))
        c->gc = kapi_gc_controller_start(c->api);
    if (c->allocate_node_cidrs && kapi_options_controller_enabled(c->enabled, "nodeipam"))
        c->clustercidr = kapi_clustercidr_controller_start(c->api, c->default_cluster_cidr);
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
static void controllers_start(controllers *c, const kapi_options *o, const char *identity)
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

static kapi_error *share_identity(const kapi_options *o, kapi_store *store)
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
static kapi_error *open_audit(const kapi_options *o, kapi_audit **out)
{
    kapi_audit_config c = {.path = o->audit_log_path,
                           .policy_file = o->audit_policy_file,
                           .max_bytes = (int64_t)o->audit_max_mb * 1024 * 1024,
                           .max_backups = (int)o->audit_max_backups};
    *out = NULL;
    return o->audit_log_path ? kapi_audit_new(out, &c) : NULL;
}

/* The start-up lines: the version, the flags given, the store and the data dir. */
static void log_start(const kapi_options *o)
{
    KAPI_LOG_INFO(0, "Version: %s (Kubernetes %s)", kapi_version, KAPI_KUBE_VERSION);
    for (size_t i = 0; i < o->ngiven; i++)
        KAPI_LOG_INFO(0, "FLAG: --%s=\"%s\"", o->given[i].name, o->given[i].value);
    KAPI_LOG_INFO(0, "data dir: %s", o->data_dir);
    if (o->etcd.servers)
        KAPI_LOG_INFO(0, "store: etcd at %s, prefix %s", o->etcd.servers, o->etcd.prefix);
    else
        KAPI_LOG_INFO(0, "store: sqlite at %s/kapi.db", o->data_dir);
}

static int run(const kapi_options *o)
{
    server s = {0};
    kapi_pki pki = {0};
    kapi_auth *auth = NULL;
    kapi_registry *reg = NULL;
    kapi_store *store = NULL;
    kapi_store_expirer *events = NULL;
    controllers cs = {0};
    kapi_error *err = NULL;
    kapi_audit *audit = NULL;
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
        .refused = kapi_api_refused,
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
    cs.default_cluster_cidr = o->default_cluster_cidr;
    hc.handler_ctx = s.api;
    if ((err = kapi_http_server_new(&s.http, &s.loop, &hc)) != NULL)
        goto done_loop;
    int port = kapi_http_server_port(s.http);
    address = kapi_xprintf(v6 ? "[%s]:%d" : "%s:%d", host, port);
    url = kapi_xprintf("https://%s", address);
    /* Known only once bound (--secure-port 0); no request is served before the loop runs. */
    kapi_api_set_server_address(s.api, address);
    KAPI_LOG_INFO(0, "Serving securely on %s", address);
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
    s.token_file = o->token_file;
    s.auth = auth;
    s.kubeconfig = kubeconfig;
    s.url = url;
    s.trusted_cert = o->cert_file;
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_signal_start(&s.sighup, on_sighup, SIGHUP);
    mi_collect(true); /* the start's peak (bootstrap, compiled types) given back */
    char abs[PATH_MAX];
    printf("kapi: serving on %s\nexport KUBECONFIG=%s\n", url,
           realpath(kubeconfig, abs) ? abs : kubeconfig);
    fflush(stdout);
    if (!kapi_notify("READY=1"))
        KAPI_LOG_WARNING("NOTIFY_SOCKET %s: %s", getenv("NOTIFY_SOCKET"), strerror(errno));
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
    kapi_options o;
    int rc = kapi_options_parse(&o, argc, argv);
    if (rc < 0) {
        kapi_log_setup((int)o.verbosity, o.log_format, 2);
        signal(SIGPIPE, SIG_IGN);
        rc = run(&o);
    }
    kapi_options_dispose(&o);
    return rc;
}
