/*
 * server: a kapi the harness starts itself, on a temporary data dir and a free port.
 *
 * Start time is measured from just before fork to the first /readyz that answers 200 "ok".
 * /readyz is polled with a blocking socket and TLS without verification (it needs no
 * credentials, and on a first start the CA does not exist until kapi made it), once per
 * millisecond while the port refuses connections.
 *
 * kapi's admin token is in system:masters, which RBAC never evaluates. So that a scenario
 * can measure requests that it does evaluate, kapi also gets a --token-auth-file listing
 * KAPI_BENCH_READER (in no group) with a token made for this run; what that user may do
 * is for the scenario to grant. It runs the ClusterCIDR allocator (--allocate-node-cidrs),
 * which the allocator scenario measures, as kube-controller-manager runs it in clusters
 * that give Nodes Pod CIDRs.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 60000
#define TOKEN_FILE "tokens.csv"
/* The controllers' clock offset kapi reads (--controllers-clock-file), 0 s until a
 * scenario moves it. */
#define CLOCK_FILE "clock"
#define TOKEN_BYTES 16

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Writes TOKEN_FILE in s->dir: KAPI_BENCH_READER with a new random token (uid the name). */
static int write_tokens(kapi_bench_server *s, kapi_buf *err)
{
    unsigned char raw[TOKEN_BYTES];
    char hex[2 * TOKEN_BYTES + 1];
    kapi_random_bytes(raw, sizeof(raw));
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    char *path = kapi_xprintf("%s/" TOKEN_FILE, s->dir);
    FILE *f = fopen(path, "w");
    int rc = f && fprintf(f, "%s,%s,%s\n", hex, KAPI_BENCH_READER, KAPI_BENCH_READER) > 0 ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc < 0)
        kapi_buf_printf(err, "%s: %s", path, strerror(errno));
    else
        s->reader_token = kapi_xstrdup(hex);
    free(path);
    return rc;
}

/* Writes the controllers' clock offset (a Go duration, seconds with a fraction) to the
 * file the kapi reads; 0, or -1 with errno. */
static int write_clock(const kapi_bench_server *s, double offset_s)
{
    char *path = kapi_xprintf("%s/" CLOCK_FILE, s->dir);
    FILE *f = fopen(path, "w");
    free(path);
    if (!f)
        return -1;
    int ok = fprintf(f, "%.3fs\n", offset_s) > 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int kapi_bench_server_init(kapi_bench_server *s, const char *bin, kapi_buf *err)
{
    char tmpl[] = "/tmp/kapi-bench-XXXXXX";
    *s = (kapi_bench_server){.bin = bin, .pid = -1};
    if (access(bin, X_OK) != 0) {
        kapi_buf_printf(err, "%s: %s", bin, strerror(errno));
        return -1;
    }
    if (!mkdtemp(tmpl) || (s->port = free_port()) < 0) {
        kapi_buf_printf(err, "temporary dir or port: %s", strerror(errno));
        return -1;
    }
    s->dir = kapi_xstrdup(tmpl);
    s->data_dir = kapi_xprintf("%s/data", tmpl);
    if (write_clock(s, 0) < 0) {
        kapi_buf_printf(err, "%s/" CLOCK_FILE ": %s", tmpl, strerror(errno));
        return -1;
    }
    return write_tokens(s, err);
}

void kapi_bench_server_set_clock(kapi_bench_server *s, double offset_s)
{
    if (write_clock(s, offset_s) == 0 && s->pid > 0)
        kill(s->pid, SIGHUP);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path); /* best effort: a leftover file in /tmp is no failure */
    return 0;
}

void kapi_bench_server_dispose(kapi_bench_server *s)
{
    kapi_bench_server_stop(s, SIGTERM);
    if (s->dir)
        nftw(s->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(s->dir);
    free(s->data_dir);
    free(s->reader_token);
    *s = (kapi_bench_server){.pid = -1};
}

/* One GET /readyz: 1 when it answered ok, 0 when not yet, -1 when the port refused. */
static int readyz_once(SSL_CTX *ctx, int port)
{
    static const char req[] = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Connection: close\r\n\r\n";
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval limit = {.tv_sec = 2};
    char answer[1024] = "";
    const char *body = NULL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), got = 0, n, rc = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1 && SSL_write(ssl, req, sizeof(req) - 1) > 0) {
        /* Until the body "ok" is in (whether or not the server closes after it). */
        while (got < (int)sizeof(answer) - 1 && !(body && strlen(body + 4) >= 2) &&
               (n = SSL_read(ssl, answer + got, (int)sizeof(answer) - 1 - got)) > 0) {
            got += n;
            answer[got] = '\0';
            body = strstr(answer, "\r\n\r\n");
        }
        rc = strncmp(answer, "HTTP/1.1 200", 12) == 0 && body && strcmp(body + 4, "ok") == 0;
    }
    SSL_free(ssl);
    close(fd);
    return rc;
}

static pid_t spawn(kapi_bench_server *s)
{
    char port[16], *log = kapi_xprintf("%s/kapi.log", s->dir);
    char *tokens = kapi_xprintf("%s/" TOKEN_FILE, s->dir);
    char *clock = kapi_xprintf("%s/" CLOCK_FILE, s->dir);
    snprintf(port, sizeof(port), "%d", s->port);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        const char *argv[11 + KAPI_BENCH_MAX_FLAGS] = {
            s->bin,      "--data-dir",
            s->data_dir, "--secure-port",
            port,        "--token-auth-file",
            tokens,      "--controllers-clock-file",
            clock,       "--allocate-node-cidrs",
        };
        for (size_t i = 0; i < s->nflags && i < KAPI_BENCH_MAX_FLAGS; i++)
            argv[10 + i] = s->flags[i];
        execv(s->bin, (char *const *)argv);
        _exit(127);
    }
    free(log);
    free(tokens);
    free(clock);
    return pid;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int kapi_bench_server_start(kapi_bench_server *s, double *ms, kapi_buf *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    int status, rc = -1;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    int64_t t0 = kapi_time_mono_ns();
    s->pid = spawn(s);
    while (s->pid > 0 && kapi_time_mono_ns() - t0 < (int64_t)READY_TIMEOUT_MS * 1000000) {
        int ready = readyz_once(ctx, s->port);
        if (ready == 1) {
            *ms = (double)(kapi_time_mono_ns() - t0) / 1e6;
            rc = 0;
            break;
        }
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            kapi_buf_printf(err, "kapi exited (status %d) before it was ready; see %s/kapi.log",
                            status, s->dir);
            s->pid = -1;
            break;
        }
        if (ready < 0)
            sleep_ms(1);
    }
    if (rc < 0 && err->len == 0)
        kapi_buf_printf(err, "kapi was not ready in %d ms; see %s/kapi.log", READY_TIMEOUT_MS,
                        s->dir);
    SSL_CTX_free(ctx);
    return rc;
}

void kapi_bench_server_stop(kapi_bench_server *s, int sig)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, sig);
    waitpid(s->pid, NULL, 0);
    s->pid = -1;
}

/* The number after `key` in a /proc file, or -1. */
static long long proc_field(pid_t pid, const char *file, const char *key)
{
    char path[64], line[256];
    long long v = -1;
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, strlen(key)) == 0) {
            v = strtoll(line + strlen(key), NULL, 10);
            break;
        }
    }
    if (f)
        fclose(f);
    return v;
}

long long kapi_bench_server_rss(const kapi_bench_server *s)
{
    long long kb = s->pid > 0 ? proc_field(s->pid, "status", "VmRSS:") : -1;
    return kb < 0 ? -1 : kb * 1024;
}

static double pid_cpu(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long long utime = 0, stime = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double kapi_bench_server_cpu(const kapi_bench_server *s)
{
    return pid_cpu(s->pid);
}

double kapi_bench_run_cpu(const kapi_bench_run *r)
{
    double sum = r->server ? kapi_bench_server_cpu(r->server) : 0;
    if (sum < 0)
        return -1;
    for (size_t i = 0; i < r->ncpu_pids; i++) {
        double c = pid_cpu(r->cpu_pids[i]);
        if (c < 0)
            return -1;
        sum += c;
    }
    return r->server || r->ncpu_pids ? sum : -1;
}
