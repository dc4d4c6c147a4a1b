/*
 * kapi-bench: the command line. Finds the server (a kapi it starts, a kubeconfig, or
 * flags), runs the scenarios in order in a namespace of its own, prints the Markdown
 * table and writes the JSON. Exits 1 when a scenario failed (errors, lost events, a
 * missing object, a server that does not speak HTTP/2 to an h2 scenario), never because
 * a target was missed.
 */
#include "bench.h"

#include <getopt.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct options {
    const char *kapi, *kubeconfig, *context, *server, *token, *ca_file, *json, *only;
    bool insecure;
    double scale;
    size_t h2_streams;                            /* 0: the size's own */
    const char *kapi_flags[KAPI_BENCH_MAX_FLAGS]; /* --kapi-flag: more of kapi's flags */
    size_t nkapi_flags;
    pid_t cpu_pids[KAPI_BENCH_MAX_PIDS]; /* --cpu-pid: counted as the server's CPU */
    size_t ncpu_pids;
} options;

/* What a scenario runs on. */
typedef enum server_need {
    ANY_SERVER, /* the target, whichever it is */
    OUR_KAPI,   /* the kapi the harness started, with the others; skipped on any other */
    OWN_KAPIS,  /* kapis it starts itself, after the others (needs --kapi) */
} server_need;

typedef struct scenario {
    const char *name;
    kapi_bench_scenario_fn fn;
    server_need needs;
} scenario;

static const scenario scenarios[] = {
    {"create", kapi_bench_scenario_create, ANY_SERVER},
    {"get", kapi_bench_scenario_get, ANY_SERVER},
    {"get-rbac", kapi_bench_scenario_get_rbac, OUR_KAPI},
    {"get-pb", kapi_bench_scenario_get_protobuf, ANY_SERVER},
    {"get-h2", kapi_bench_scenario_get_h2, ANY_SERVER},
    {"get-metrics", kapi_bench_scenario_get_metrics, ANY_SERVER},
    {"update", kapi_bench_scenario_update, ANY_SERVER},
    {"apply", kapi_bench_scenario_apply, ANY_SERVER},
    {"list", kapi_bench_scenario_list, ANY_SERVER},
    {"watch", kapi_bench_scenario_watch, ANY_SERVER},
    {"watch-pb", kapi_bench_scenario_watch_protobuf, ANY_SERVER},
    {"watch-h2", kapi_bench_scenario_watch_h2, ANY_SERVER},
    {"crd", kapi_bench_scenario_crd, ANY_SERVER},
    {"cel", kapi_bench_scenario_cel, ANY_SERVER},
    {"cronjob", kapi_bench_scenario_cronjob, ANY_SERVER},
    {"allocator", kapi_bench_scenario_allocator, ANY_SERVER},
    {"memory", kapi_bench_scenario_memory_start, OWN_KAPIS},
};

static void usage(FILE *f)
{
    fputs("usage: kapi-bench (--kapi BIN | --kubeconfig FILE [--context NAME] |\n"
          "                   --server URL [--token T] [--certificate-authority F]\n"
          "                   [--insecure-skip-tls-verify])\n"
          "                  [--quick | --smoke | --scale X] [--json FILE] [--only a,b]\n"
          "                  [--h2-streams N] [--kapi-flag FLAG]... [--cpu-pid PID]...\n"
          "  --kapi BIN     start BIN on a temporary data dir; adds the get-rbac, memory\n"
          "                 and start scenarios\n"
          "  --kubeconfig   any Kubernetes API server (default: $KUBECONFIG)\n"
          "  --quick        every scenario at a tenth of its size (--scale 0.1)\n"
          "  --smoke        a few hundred requests per scenario (--scale 0.01)\n"
          "  --only         scenarios to run, of create,get,get-rbac,get-pb,get-h2,\n"
          "                 get-metrics,update,apply,list,watch,watch-pb,watch-h2,crd,cel,\n"
          "                 cronjob,allocator,memory (get-metrics: get while /metrics is\n"
          "                 scraped every second)\n"
          "                 (the default: all of these; the -h2 ones over HTTP/2, ALPN h2)\n"
          "  --h2-streams   get-h2's requests in flight per HTTP/2 connection (default 8:\n"
          "                 get's 32 over 4 connections); watch-h2's watchers share 32\n"
          "                 connections\n"
          "  --kapi-flag    one more flag for the kapi --kapi starts (repeatable), e.g.\n"
          "                 --kapi-flag=--etcd-servers=http://127.0.0.1:2379\n"
          "  --cpu-pid      a process whose CPU counts as the server's in the CPU per\n"
          "                 request figures (repeatable): etcd under a kapi or a\n"
          "                 kube-apiserver, or a kube-apiserver itself\n",
          f);
}

static int parse_options(options *o, int argc, char **argv)
{
    enum {
        KAPI = 1,
        KUBECONFIG,
        CONTEXT,
        SERVER,
        TOKEN,
        CA,
        INSECURE,
        QUICK,
        SMOKE,
        SCALE,
        JSON,
        ONLY,
        H2_STREAMS,
        KAPI_FLAG,
        CPU_PID,
        HELP
    };
    static const struct option longs[] = {
        {"kapi", required_argument, NULL, KAPI},
        {"kubeconfig", required_argument, NULL, KUBECONFIG},
        {"context", required_argument, NULL, CONTEXT},
        {"server", required_argument, NULL, SERVER},
        {"token", required_argument, NULL, TOKEN},
        {"certificate-authority", required_argument, NULL, CA},
        {"insecure-skip-tls-verify", no_argument, NULL, INSECURE},
        {"quick", no_argument, NULL, QUICK},
        {"smoke", no_argument, NULL, SMOKE},
        {"scale", required_argument, NULL, SCALE},
        {"json", required_argument, NULL, JSON},
        {"only", required_argument, NULL, ONLY},
        {"h2-streams", required_argument, NULL, H2_STREAMS},
        {"kapi-flag", required_argument, NULL, KAPI_FLAG},
        {"cpu-pid", required_argument, NULL, CPU_PID},
        {"help", no_argument, NULL, HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    char *end;
    *o = (options){.scale = 1};
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case KAPI:
            o->kapi = optarg;
            break;
        case KUBECONFIG:
            o->kubeconfig = optarg;
            break;
        case CONTEXT:
            o->context = optarg;
            break;
        case SERVER:
            o->server = optarg;
            break;
        case TOKEN:
            o->token = optarg;
            break;
        case CA:
            o->ca_file = optarg;
            break;
        case INSECURE:
            o->insecure = true;
            break;
        case QUICK:
            o->scale = 0.1;
            break;
        case SMOKE:
            o->scale = 0.01;
            break;
        case SCALE:
            o->scale = strtod(optarg, &end);
            if (*end || !(o->scale > 0 && o->scale <= 10)) {
                fprintf(stderr, "kapi-bench: --scale: not a number in (0, 10]: %s\n", optarg);
                return 2;
            }
            break;
        case JSON:
            o->json = optarg;
            break;
        case ONLY:
            o->only = optarg;
            break;
        case H2_STREAMS:
            o->h2_streams = strtoul(optarg, &end, 10);
            if (*end || o->h2_streams < 1 || o->h2_streams > 1000) {
                fprintf(stderr, "kapi-bench: --h2-streams: not a number in [1, 1000]: %s\n",
                        optarg);
                return 2;
            }
            break;
        case KAPI_FLAG:
            if (o->nkapi_flags == KAPI_BENCH_MAX_FLAGS) {
                fprintf(stderr, "kapi-bench: at most %d --kapi-flag\n", KAPI_BENCH_MAX_FLAGS);
                return 2;
            }
            o->kapi_flags[o->nkapi_flags++] = optarg;
            break;
        case CPU_PID: {
            long pid = strtol(optarg, &end, 10);
            if (*end || pid <= 0 || o->ncpu_pids == KAPI_BENCH_MAX_PIDS) {
                fprintf(stderr, "kapi-bench: --cpu-pid: not a pid, or more than %d: %s\n",
                        KAPI_BENCH_MAX_PIDS, optarg);
                return 2;
            }
            o->cpu_pids[o->ncpu_pids++] = (pid_t)pid;
            break;
        }
        case HELP:
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc || (o->kapi && (o->kubeconfig || o->server)) ||
        (o->kubeconfig && o->server)) {
        usage(stderr);
        return 2;
    }
    if (!o->kapi && !o->server && !o->kubeconfig)
        o->kubeconfig = getenv("KUBECONFIG");
    if (!o->kapi && !o->server && !o->kubeconfig) {
        fputs("kapi-bench: which server? (--kapi, --kubeconfig or --server)\n", stderr);
        return 2;
    }
    return 0;
}

static bool selected(const options *o, const char *name)
{
    if (!o->only)
        return true;
    size_t n = strlen(name);
    for (const char *p = o->only; *p; p += strcspn(p, ",")) {
        p += *p == ',';
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

/* The target from --server and friends, or from a kubeconfig (the first of a list). */
static int load_target(const options *o, kapi_bench_target *t, kapi_buf *err)
{
    if (!o->server) {
        char *path = kapi_xstrndup(o->kubeconfig, strcspn(o->kubeconfig, ":"));
        int rc = kapi_bench_kubeconfig_load(t, path, o->context, err);
        free(path);
        return rc;
    }
    if (kapi_bench_target_set_server(t, o->server, err) < 0 ||
        (o->ca_file && kapi_bench_read_file(o->ca_file, &t->ca_pem, err) < 0))
        return -1;
    t->token = o->token ? kapi_xstrdup(o->token) : NULL;
    t->insecure = o->insecure;
    return 0;
}

static int make_namespace(kapi_bench_client *cl, const char *name)
{
    char *body = kapi_xprintf("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                              "\"metadata\":{\"name\":\"%s\"}}",
                              name);
    kapi_buf answer;
    kapi_buf_init(&answer);
    int status =
        kapi_bench_request(cl, "POST", "/api/v1/namespaces", "application/json", body, &answer);
    if (status != 201)
        fprintf(stderr, "kapi-bench: create namespace %s: %d %.300s\n", name, status, answer.ptr);
    kapi_buf_dispose(&answer);
    free(body);
    return status == 201 ? 0 : -1;
}

static void delete_namespace(kapi_bench_client *cl, const char *name)
{
    char *path = kapi_xprintf("/api/v1/namespaces/%s", name);
    int status = kapi_bench_request(cl, "DELETE", path, NULL, NULL, NULL);
    if (status != 200 && status != 202)
        fprintf(stderr, "kapi-bench: delete namespace %s: %d\n", name, status);
    free(path);
}

/* Scenarios 1-5 against the target, in namespaces of their own; failures counted. */
static int run_api_scenarios(const options *o, kapi_bench_run *r, bool owned)
{
    char suffix[6];
    int failed = 0;
    kapi_random_suffix(suffix, 5);
    snprintf(r->ns, sizeof(r->ns), "kapi-bench-%s", suffix);
    snprintf(r->watch_ns, sizeof(r->watch_ns), "kapi-bench-%s-watch", suffix);
    if (make_namespace(r->client, r->ns) < 0 || make_namespace(r->client, r->watch_ns) < 0)
        return 1;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(scenarios); i++) {
        const scenario *s = &scenarios[i];
        bool runs = s->needs == ANY_SERVER || (s->needs == OUR_KAPI && r->server);
        if (runs && selected(o, s->name)) {
            fprintf(stderr, "kapi-bench: == %s\n", s->name);
            failed += s->fn(r) < 0;
        }
    }
    if (!owned) { /* a server we started goes away with its data dir */
        delete_namespace(r->client, r->ns);
        delete_namespace(r->client, r->watch_ns);
    }
    return failed;
}

/* The server under test: the kapi we start, or the target. */
static int connect_server(const options *o, kapi_bench_server *s, kapi_bench_target *t,
                          kapi_bench_client **cl, kapi_buf *err)
{
    double ms;
    if (o->kapi) {
        if (kapi_bench_server_init(s, o->kapi, err) < 0)
            return -1;
        s->flags = o->kapi_flags;
        s->nflags = o->nkapi_flags;
        if (kapi_bench_server_start(s, &ms, err) < 0)
            return -1;
        char *kubeconfig = kapi_xprintf("%s/kubeconfig", s->data_dir);
        int rc = kapi_bench_kubeconfig_load(t, kubeconfig, NULL, err);
        free(kubeconfig);
        if (rc < 0)
            return -1;
    } else if (load_target(o, t, err) < 0) {
        return -1;
    }
    return kapi_bench_client_new(cl, t, err);
}

static void print_machine(const options *o, const kapi_bench_target *t)
{
    char line[256], model[200] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof(line), f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(model, sizeof(model), "%.*s", (int)strcspn(colon + 2, "\n"), colon + 2);
            break;
        }
    }
    if (f)
        fclose(f);
    printf("kapi-bench: %s, scale %g; %ld cores, %s\n\n",
           o->kapi ? "kapi started by the harness" : t->server, o->scale,
           sysconf(_SC_NPROCESSORS_ONLN), model);
}

static int write_json(const char *path, const kapi_bench_report *rep)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_bench_report_json(rep, &b);
    FILE *f = fopen(path, "w");
    int rc = f && fwrite(b.ptr, 1, b.len, f) == b.len ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc < 0)
        fprintf(stderr, "kapi-bench: cannot write %s\n", path);
    kapi_buf_dispose(&b);
    return rc;
}

/* Many watchers need many descriptors, here and in a kapi we start (it inherits them). */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int run(const options *o)
{
    kapi_bench_server s = {.pid = -1};
    kapi_bench_target t;
    kapi_bench_report rep;
    kapi_bench_run r = {.report = &rep, .kapi_bin = o->kapi};
    kapi_buf err, table;
    int failed = 0;
    kapi_buf_init(&err);
    kapi_buf_init(&table);
    kapi_bench_target_init(&t);
    kapi_bench_report_init(&rep);
    kapi_bench_sizes_scale(&r.size, o->scale);
    if (o->h2_streams)
        r.size.h2_streams = o->h2_streams;
    if (connect_server(o, &s, &t, &r.client, &err) < 0) {
        fprintf(stderr, "kapi-bench: %s\n", err.ptr);
        failed = 1;
        goto done;
    }
    r.target = &t;
    r.server = o->kapi ? &s : NULL;
    memcpy(r.cpu_pids, o->cpu_pids, sizeof(r.cpu_pids));
    r.ncpu_pids = o->ncpu_pids;
    failed += run_api_scenarios(o, &r, o->kapi != NULL);
    kapi_bench_client_free(r.client);
    r.client = NULL;
    kapi_bench_server_dispose(&s);
    if (o->kapi && selected(o, "memory")) {
        fputs("kapi-bench: == memory and start\n", stderr);
        failed += kapi_bench_scenario_memory_start(&r) < 0;
    }
    print_machine(o, &t);
    kapi_bench_report_markdown(&rep, &table);
    fputs(table.ptr, stdout);
    if (o->json && write_json(o->json, &rep) < 0)
        failed++;
    if (failed)
        fprintf(stderr, "kapi-bench: %d scenario(s) failed\n", failed);
done:
    kapi_bench_client_free(r.client);
    kapi_bench_server_dispose(&s);
    kapi_bench_target_dispose(&t);
    kapi_bench_report_dispose(&rep);
    kapi_buf_dispose(&err);
    kapi_buf_dispose(&table);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(&o, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    setvbuf(stderr, NULL, _IOLBF, 0);
    return run(&o);
}
