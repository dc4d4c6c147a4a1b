/*
 * api/audit: what is recorded of each request once it is answered: kube-apiserver's
 * httplog line at -v=2 ("HTTP" verb= URI= latency= userAgent= audit-ID= srcIP= resp=) and,
 * with --audit-log-path, an audit.k8s.io/v1 Event at the Metadata level (stage
 * ResponseComplete), one JSON line each, as kube-apiserver's log backend writes them.
 *
 * The audit file is written by a thread of its own: a request appends its line to a
 * buffer under a lock and goes on; it waits only while MAX_PENDING bytes are not written
 * yet (a disk slower than the requests), as kube's blocking backend makes it wait.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "log/log.h"

#define MAX_PENDING (4 * 1024 * 1024)
/* The largest --audit-policy-file read. */
#define MAX_POLICY (1024 * 1024)

struct kapi_audit {
    int fd;
    bool own_fd; /* not stdout */
    char *path;  /* owned */
    int64_t size, max_bytes;
    int max_backups;
    int64_t backup_ms;         /* the time in the last backup's name */
    kapi_audit_policy *policy; /* NULL: every request at Metadata */
    pthread_mutex_t mu;
    pthread_cond_t work, room;
    kapi_buf pending;
    bool stop;
    pthread_t thread;
};

/* Where the file's name splits for its backups: "dir/audit.log" has the prefix
 * "dir/audit" and the extension ".log". */
static size_t ext_at(const char *path)
{
    const char *base = strrchr(path, '/'), *dot = strrchr(path, '.');
    base = base ? base + 1 : path;
    return dot && dot > base ? (size_t)(dot - path) : strlen(path);
}

/* A rotated file's name for the time ms (UTC): "<prefix>-2006-01-02T15-04-05.000<ext>". */
static char *backup_name(const char *path, int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    size_t at = ext_at(path);
    gmtime_r(&secs, &tm);
    return kapi_xprintf("%.*s-%04d-%02d-%02dT%02d-%02d-%02d.%03d%s", (int)at, path,
                        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                        tm.tm_sec, (int)(ms % 1000), path + at);
}

static int by_name(const struct dirent **x, const struct dirent **y)
{
    return strcmp((*x)->d_name, (*y)->d_name);
}

/* Removes the oldest backups past max_backups (their names sort by time). */
static void prune(const kapi_audit *a)
{
    const char *slash = strrchr(a->path, '/');
    char *dir = slash ? kapi_xstrndup(a->path, (size_t)(slash - a->path + 1)) : kapi_xstrdup("./");
    const char *base = slash ? slash + 1 : a->path;
    size_t at = ext_at(base), stamp = strlen("-2006-01-02T15-04-05.000");
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name), kept = 0;
    for (int i = n - 1; i >= 0; i--) {
        const char *name = names[i]->d_name;
        bool backup = strlen(name) == strlen(base) + stamp && strncmp(name, base, at) == 0 &&
                      name[at] == '-' && strcmp(name + at + stamp, base + at) == 0;
        if (backup && ++kept > a->max_backups) {
            char *file = kapi_xprintf("%s%s", dir, name);
            if (unlink(file) != 0)
                KAPI_LOG_ERRORS(strerror(errno), "Cannot remove an old audit log",
                                KAPI_LOG_STR("path", file));
            free(file);
        }
        free(names[i]);
    }
    free(n >= 0 ? names : NULL);
    free(dir);
}

/* Renames the file to its backup name and starts a new one. */
static void rotate(kapi_audit *a)
{
    struct stat st;
    int64_t ms = kapi_time_now_ns() / 1000000;
    /* Two rotations in one millisecond: the later name sorts after (past the last one,
     * which pruning may have removed, and past any file there). */
    a->backup_ms = ms > a->backup_ms ? ms : a->backup_ms + 1;
    char *backup = backup_name(a->path, a->backup_ms);
    while (stat(backup, &st) == 0) {
        free(backup);
        backup = backup_name(a->path, ++a->backup_ms);
    }
    close(a->fd);
    if (rename(a->path, backup) != 0)
        KAPI_LOG_ERRORS(strerror(errno), "Cannot rotate the audit log",
                        KAPI_LOG_STR("path", a->path));
    a->fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0600);
    if (a->fd < 0)
        KAPI_LOG_ERRORS(strerror(errno), "Cannot open the audit log",
                        KAPI_LOG_STR("path", a->path));
    a->size = 0;
    free(backup);
    if (a->max_backups > 0)
        prune(a);
}

/* Writes whole lines, rotating before a line that would take the file past max_bytes
 * (a line longer than that alone goes to a fresh file). */
static void write_lines(kapi_audit *a, const char *p, size_t n)
{
    while (n > 0) {
        size_t take = n;
        if (a->max_bytes > 0) {
            int64_t room = a->max_bytes - a->size;
            take = room > 0 ? (size_t)(room < (int64_t)n ? room : (int64_t)n) : 0;
            while (take > 0 && p[take - 1] != '\n')
                take--;
            if (take == 0 && a->size > 0) {
                rotate(a);
                continue;
            }
            if (take == 0)
                take = (size_t)((const char *)memchr(p, '\n', n) + 1 - p);
        }
        if (!kapi_write_all(a->fd, p, take))
            KAPI_LOG_ERRORS(strerror(errno), "Cannot write the audit log");
        a->size += (int64_t)take;
        p += take;
        n -= take;
    }
}

static void *writer_main(void *arg)
{
    kapi_audit *a = arg;
    kapi_buf out;
    kapi_buf_init(&out);
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->pending.len && !a->stop)
            pthread_cond_wait(&a->work, &a->mu);
        if (!a->pending.len)
            break;
        kapi_buf swap = out;
        out = a->pending;
        a->pending = swap;
        pthread_cond_broadcast(&a->room);
        pthread_mutex_unlock(&a->mu);
        write_lines(a, out.ptr, out.len);
        kapi_buf_clear(&out);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    kapi_buf_dispose(&out);
    return NULL;
}

/* Reads the policy file (at most MAX_POLICY bytes). */
static kapi_error *read_policy(const char *file, kapi_audit_policy **out)
{
    kapi_buf b;
    char chunk[8192];
    size_t got;
    FILE *f = fopen(file, "r");
    *out = NULL;
    if (!f)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "--audit-policy-file %s: %s", file,
                              strerror(errno));
    kapi_buf_init(&b);
    while (b.len <= MAX_POLICY && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        kapi_buf_put(&b, chunk, got);
    fclose(f);
    kapi_error *err = b.len > MAX_POLICY ? kapi_error_new(KAPI_STATUS_BAD_REQUEST, "too large")
                                         : kapi_api__audit_policy_parse(b.ptr, b.len, out);
    kapi_buf_dispose(&b);
    if (err) {
        kapi_error *wrapped = kapi_error_new(KAPI_STATUS_INTERNAL_ERROR,
                                             "--audit-policy-file %s: %s", file, err->message);
        kapi_error_free(err);
        return wrapped;
    }
    return NULL;
}

kapi_error *kapi_audit_new(kapi_audit **out, const kapi_audit_config *cfg)
{
    kapi_audit_policy *policy = NULL;
    kapi_error *err = cfg->policy_file ? read_policy(cfg->policy_file, &policy) : NULL;
    struct stat st;
    if (err)
        return err;
    bool to_stdout = strcmp(cfg->path, "-") == 0;
    int fd = to_stdout ? 1 : open(cfg->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        kapi_api__audit_policy_free(policy);
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "--audit-log-path %s: %s", cfg->path,
                              strerror(errno));
    }
    kapi_audit *a = kapi_xcalloc(1, sizeof(*a));
    a->policy = policy;
    a->fd = fd;
    a->own_fd = !to_stdout;
    a->path = kapi_xstrdup(cfg->path);
    a->size = fstat(fd, &st) == 0 ? st.st_size : 0;
    a->max_bytes = to_stdout ? 0 : cfg->max_bytes;
    a->max_backups = cfg->max_backups;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work, NULL);
    pthread_cond_init(&a->room, NULL);
    kapi_buf_init(&a->pending);
    if (pthread_create(&a->thread, NULL, writer_main, a) != 0) {
        KAPI_LOG_ERROR("cannot start the audit log writer");
        abort();
    }
    pthread_setname_np(a->thread, "kapi-audit");
    *out = a;
    return NULL;
}

void kapi_audit_free(kapi_audit *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_signal(&a->work);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    if (a->own_fd && a->fd >= 0)
        close(a->fd);
    free(a->path);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->room);
    pthread_mutex_destroy(&a->mu);
    kapi_buf_dispose(&a->pending);
    kapi_api__audit_policy_free(a->policy);
    free(a);
}

void kapi_api__audit_append(kapi_audit *a, const kapi_buf *line)
{
    pthread_mutex_lock(&a->mu);
    while (a->pending.len >= MAX_PENDING && !a->stop)
        pthread_cond_wait(&a->room, &a->mu);
    kapi_buf_put(&a->pending, line->ptr, line->len);
    pthread_cond_signal(&a->work);
    pthread_mutex_unlock(&a->mu);
}

void kapi_api__audit_start(kapi_req *r)
{
    const char *given = kapi_http_header_get(r->http, "audit-id");
    if (given && *given && strlen(given) < sizeof(r->audit_id))
        strcpy(r->audit_id, given);
    else
        kapi_uuid_v4(r->audit_id);
    r->received_ns = kapi_time_now_ns();
}

void kapi_api__audit_object(kapi_req *r, const json_t *obj)
{
    if (!r->api->audit)
        return;
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    if (!r->info.name.len && name && *name)
        r->object_name = kapi_arena_strdup(&r->arena, name);
    if (uid && *uid)
        r->object_uid = kapi_arena_strdup(&r->arena, uid);
    if (rv && *rv)
        r->object_rv = kapi_arena_strdup(&r->arena, rv);
}

/* metav1.MicroTime: "2006-01-02T15:04:05.000000Z". */
static void put_micro_time(kapi_buf *b, int64_t ns)
{
    time_t secs = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    kapi_buf_printf(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
                    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(ns % 1000000000 / 1000));
}

static void put_field(kapi_buf *b, const char *name, kapi_str value)
{
    kapi_buf_printf(b, "\"%s\":", name);
    kapi_log_json_string(b, value);
}

/* authentication/v1 UserInfo: username, uid and groups when set. */
static void put_user(kapi_buf *b, const char *name, const kapi_user *u)
{
    kapi_buf_printf(b, ",\"%s\":{", name);
    if (u && u->name) {
        put_field(b, "username", kapi_str_c(u->name));
        if (u->uid && *u->uid) {
            kapi_buf_putc(b, ',');
            put_field(b, "uid", kapi_str_c(u->uid));
        }
        if (u->groups && *u->groups) {
            kapi_buf_puts(b, ",\"groups\":[");
            for (const char *const *g = u->groups; *g; g++) {
                if (g != u->groups)
                    kapi_buf_putc(b, ',');
                kapi_log_json_string(b, kapi_str_c(*g));
            }
            kapi_buf_putc(b, ']');
        }
    }
    kapi_buf_putc(b, '}');
}

/* The request's verb as kube's audit names it: the resource verb, else the method in
 * lower case (a non-resource request, or one whose path did not parse). */
static const char *audit_verb(const kapi_req *r, char *lower, size_t size)
{
    if (r->info.is_resource && r->info.verb && *r->info.verb)
        return r->info.verb;
    size_t i = 0;
    for (; r->http->method[i] && i + 1 < size; i++)
        lower[i] = (char)(r->http->method[i] | 0x20);
    lower[i] = '\0';
    return lower;
}

/* The address of "ip:port" or "[ip]:port". */
static kapi_str source_ip(const char *remote)
{
    kapi_str s = kapi_str_c(remote);
    if (s.len && s.ptr[0] == '[') {
        const char *end = memchr(s.ptr, ']', s.len);
        return end ? (kapi_str){s.ptr + 1, (size_t)(end - s.ptr - 1)} : s;
    }
    const char *colon = strrchr(remote, ':');
    return colon ? (kapi_str){s.ptr, (size_t)(colon - s.ptr)} : s;
}

/* ",key":"value" when value is set. */
static void put_optional(kapi_buf *b, const char *key, const char *value)
{
    if (!value)
        return;
    kapi_buf_putc(b, ',');
    put_field(b, key, kapi_str_c(value));
}

static void put_object_ref(kapi_buf *b, const kapi_req *r)
{
    const kapi_reqinfo *in = &r->info;
    kapi_buf_puts(b, ",\"objectRef\":{");
    put_field(b, "resource", kapi_str_c(in->resource));
    if (in->ns.len) {
        kapi_buf_putc(b, ',');
        put_field(b, "namespace", in->ns);
    }
    if (in->name.len) {
        kapi_buf_putc(b, ',');
        put_field(b, "name", in->name);
    }
    put_optional(b, "name", r->object_name);
    put_optional(b, "uid", r->object_uid);
    if (*in->group) {
        kapi_buf_putc(b, ',');
        put_field(b, "apiGroup", kapi_str_c(in->group));
    }
    put_optional(b, "apiVersion", in->version);
    put_optional(b, "resourceVersion", r->object_rv);
    if (*in->subresource) {
        kapi_buf_putc(b, ',');
        put_field(b, "subresource", kapi_str_c(in->subresource));
    }
    kapi_buf_putc(b, '}');
}

/* responseStatus: the code, and for an error the Status's status, message and reason. */
static void put_response_status(kapi_buf *b, const kapi_req *r, int status)
{
    kapi_buf_puts(b, ",\"responseStatus\":{\"metadata\":{}");
    if (r->failure) {
        kapi_buf_puts(b, ",\"status\":\"Failure\",");
        put_field(b, "message", kapi_str_c(r->failure->message));
        const char *reason = kapi_status_reason(r->failure->status);
        if (reason && *reason) {
            kapi_buf_putc(b, ',');
            put_field(b, "reason", kapi_str_c(reason));
        }
    }
    kapi_buf_printf(b, ",\"code\":%d}", status);
}

/* The Event of a stage: ResponseComplete with the answer's status, or RequestReceived
 * (status 0: no responseStatus; no annotations, as authorization has not run). */
static void put_event(kapi_buf *b, const kapi_req *r, int status, const char *verb, kapi_str uri)
{
    const char *agent = kapi_http_header_get(r->http, "user-agent");
    kapi_buf_puts(b, "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":"
                     "\"Metadata\",");
    put_field(b, "auditID", kapi_str_c(r->audit_id));
    kapi_buf_printf(b, ",\"stage\":\"%s\",", status ? "ResponseComplete" : "RequestReceived");
    put_field(b, "requestURI", uri);
    kapi_buf_putc(b, ',');
    put_field(b, "verb", kapi_str_c(verb));
    put_user(b, "user", r->authenticated ? r->authenticated : &r->user);
    if (r->authenticated)
        put_user(b, "impersonatedUser", &r->user);
    kapi_buf_puts(b, ",\"sourceIPs\":[");
    kapi_log_json_string(b, source_ip(r->http->remote_addr));
    kapi_buf_putc(b, ']');
    if (agent) {
        kapi_buf_putc(b, ',');
        put_field(b, "userAgent", kapi_str_c(agent));
    }
    if (r->info.is_resource && r->info.resource && *r->info.resource)
        put_object_ref(b, r);
    if (status)
        put_response_status(b, r, status);
    kapi_buf_puts(b, ",\"requestReceivedTimestamp\":");
    put_micro_time(b, r->received_ns);
    kapi_buf_puts(b, ",\"stageTimestamp\":");
    put_micro_time(b, kapi_time_now_ns());
    if (r->decision) {
        kapi_buf_puts(b, ",\"annotations\":{");
        put_field(b, "authorization.k8s.io/decision", kapi_str_c(r->decision));
        if (r->reason && *r->reason) {
            kapi_buf_putc(b, ',');
            put_field(b, "authorization.k8s.io/reason", kapi_str_c(r->reason));
        }
        kapi_buf_putc(b, '}');
    }
    kapi_buf_puts(b, "}\n");
}

/* kube's metrics.NormalizedVerb, as httplog writes it: LIST and WATCH for those reads,
 * APPLY for a server-side apply, else the method. */
static const char *log_verb(const kapi_req *r)
{
    static const struct {
        const char *verb, *name;
    } names[] = {{"list", "LIST"}, {"watch", "WATCH"}};
    const char *type = kapi_http_header_get(r->http, "content-type");
    for (size_t i = 0; r->info.is_resource && r->info.verb && i < KAPI_ARRAY_LEN(names); i++)
        if (strcmp(r->info.verb, names[i].verb) == 0)
            return names[i].name;
    if (strcmp(r->http->method, "PATCH") == 0 && type &&
        strncmp(type, "application/apply-patch", 23) == 0)
        return "APPLY";
    return r->http->method;
}

/* The URI the client asked for: the raw path and query. */
static kapi_str request_uri(kapi_req *r)
{
    if (!r->http->query.len)
        return r->http->path;
    return kapi_str_c(kapi_arena_printf(&r->arena, "%.*s?%.*s", KAPI_STR_FMT(r->http->path),
                                        KAPI_STR_FMT(r->http->query)));
}

void kapi_api__log_request(kapi_req *r, int status)
{
    const char *agent = kapi_http_header_get(r->http, "user-agent");
    kapi_buf latency;
    kapi_buf_init(&latency);
    kapi_go_format_duration(&latency, kapi_time_mono_ns() - r->start_ns);
    KAPI_LOG_INFOS(
        2, "HTTP", KAPI_LOG_STR("verb", log_verb(r)), KAPI_LOG_STRN("URI", request_uri(r)),
        KAPI_LOG_STR("latency", latency.ptr), KAPI_LOG_STR("userAgent", agent ? agent : ""),
        KAPI_LOG_STR("audit-ID", r->audit_id), KAPI_LOG_STR("srcIP", r->http->remote_addr),
        KAPI_LOG_STR("user", r->user.name ? r->user.name : ""), KAPI_LOG_INT("resp", status));
    kapi_buf_dispose(&latency);
}

/* The Event of a stage (put_event's status), unless the policy leaves it out. */
static void audit_event(kapi_req *r, kapi_audit *audit, int status)
{
    char lower[16];
    const char *verb = audit_verb(r, lower, sizeof(lower));
    const kapi_user *who = r->authenticated ? r->authenticated : &r->user;
    const char *stage = status ? "ResponseComplete" : "RequestReceived";
    if (audit->policy && !kapi_api__audit_policy_level(audit->policy, who, verb, &r->info,
                                                       r->path ? r->path : "", stage))
        return;
    kapi_buf b;
    kapi_buf_init(&b);
    put_event(&b, r, status, verb, request_uri(r));
    kapi_api__audit_append(audit, &b);
    kapi_buf_dispose(&b);
}

void kapi_api__audit_received(kapi_req *r)
{
    if (r->api->audit)
        audit_event(r, r->api->audit, 0);
}

void kapi_api__answered(kapi_req *r, int status)
{
    if (KAPI_LOG_V(2))
        kapi_api__log_request(r, status);
    if (r->api->audit)
        audit_event(r, r->api->audit, status);
}
