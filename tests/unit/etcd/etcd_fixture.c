/* etcd_fixture: see etcd_fixture.h. */
#include "etcd_fixture.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define ETCD_BIN "/usr/bin/etcd"
#define MS 1000000LL

/* Ports are taken below the kernel's ephemeral range (32768 and up by default), so that no
 * outgoing connection (etcd's peers dial each other) takes a port between its choice here
 * and the member's bind; and none is handed out twice in one run. */
#define PORT_LOW 20000
#define PORT_SPAN 12000

int etcd_fixture_free_port(void)
{
    static unsigned char given[PORT_SPAN];
    static unsigned seed;
    if (!seed)
        seed = (unsigned)getpid() ^ (unsigned)kapi_time_mono_ns();
    for (int tries = 0; tries < 1000; tries++) {
        int k = rand_r(&seed) % PORT_SPAN;
        if (given[k])
            continue;
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons(PORT_LOW + k),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (fd >= 0)
            close(fd);
        if (ok) {
            given[k] = 1;
            return PORT_LOW + k;
        }
    }
    test_fail(__FILE__, __LINE__, "no free port in %d..%d", PORT_LOW, PORT_LOW + PORT_SPAN - 1);
}

/* A CA, and one certificate for 127.0.0.1 that etcd serves and the client presents. */
static void make_certs(etcd_fixture *f)
{
    char cmd[2048];
    snprintf(f->tls_dir, sizeof(f->tls_dir), "%s/tls", test_tmpdir());
    snprintf(cmd, sizeof(cmd),
             "set -e; mkdir -p %s; cd %s;"
             "K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';"
             "openssl req -x509 $K -keyout ca.key -out ca.crt -subj /CN=kapi-test-ca -days 1;"
             "openssl req -x509 $K -keyout other-ca.key -out other-ca.crt -subj /CN=other "
             "-days 1;"
             "openssl req $K -keyout node.key -out node.csr -subj /CN=kapi-test;"
             "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' "
             "> ext.cnf;"
             "openssl x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-out node.crt -days 1 -extfile ext.cnf",
             f->tls_dir, f->tls_dir);
    char *full = kapi_xprintf("(%s) >%s/openssl.log 2>&1", cmd, test_tmpdir());
    int rc = system(full);
    free(full);
    if (rc != 0)
        test_fail(__FILE__, __LINE__, "openssl could not make the test certificates (see %s)",
                  test_tmpdir());
}

static void add(const char **argv, int *n, const char *a)
{
    argv[(*n)++] = a;
}

static void spawn(etcd_fixture *f, int i)
{
    etcd_member *m = &f->m[i];
    char peer[64], ca[400], cert[400], key[400], log[400];
    const char *argv[48];
    int n = 0;
    snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", m->peer_port);
    snprintf(ca, sizeof(ca), "%s/ca.crt", f->tls_dir);
    snprintf(cert, sizeof(cert), "%s/node.crt", f->tls_dir);
    snprintf(key, sizeof(key), "%s/node.key", f->tls_dir);
    snprintf(log, sizeof(log), "%s.log", m->dir);
    const char *base[] = {ETCD_BIN,    "--name",
                          m->name,     "--data-dir",
                          m->dir,      "--listen-client-urls",
                          m->url,      "--advertise-client-urls",
                          m->url,      "--listen-peer-urls",
                          peer,        "--initial-advertise-peer-urls",
                          peer,        "--initial-cluster",
                          f->cluster,  "--initial-cluster-token",
                          "kapi-test", "--heartbeat-interval",
                          "25",        "--election-timeout",
                          "250",       "--logger",
                          "zap",       "--log-outputs",
                          "stderr",    "--log-level",
                          "error"};
    for (size_t j = 0; j < KAPI_ARRAY_LEN(base); j++)
        add(argv, &n, base[j]);
    if (f->tls) {
        const char *t[] = {"--cert-file",       cert, "--key-file",        key,
                           "--trusted-ca-file", ca,   "--client-cert-auth"};
        for (size_t j = 0; j < KAPI_ARRAY_LEN(t); j++)
            add(argv, &n, t[j]);
    }
    for (int j = 0; f->extra[j]; j++)
        add(argv, &n, f->extra[j]);
    argv[n] = NULL;
    fflush(stdout);
    m->pid = fork();
    if (m->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(ETCD_BIN, (char *const *)argv);
        _exit(127);
    }
}

/* The last 2 KiB of member m's log (a static buffer), for a failure message. */
static const char *log_tail(const etcd_member *m)
{
    static char tail[2049];
    char path[400];
    snprintf(path, sizeof(path), "%s.log", m->dir);
    size_t n = 0;
    FILE *fp = fopen(path, "r");
    if (fp) {
        if (fseek(fp, -2048, SEEK_END) != 0)
            rewind(fp);
        n = fread(tail, 1, sizeof(tail) - 1, fp);
        fclose(fp);
    }
    tail[n] = 0;
    return n ? tail : "(empty)";
}

/* Waits until member i answers a linearizable read, or fails the test. */
static void wait_ready(etcd_fixture *f, int i)
{
    etcd_member *m = &f->m[i];
    kapi_etcd_client *c = etcd_fixture_client(f, m->url);
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = KAPI_STR("ready?")};
    int64_t until = kapi_time_mono_ns() + 15000 * MS;
    for (;;) {
        kapi_etcd_response *r = NULL;
        int status;
        kapi_etcd_rc rc = kapi_etcd_range(c, &get, kapi_time_mono_ns() + 300 * MS, &r, NULL);
        kapi_etcd_response_free(r);
        if (rc == KAPI_ETCD_OK)
            break;
        if (waitpid(m->pid, &status, WNOHANG) == m->pid)
            test_fail(__FILE__, __LINE__, "etcd %s exited (status %d); the end of its log:\n%s",
                      m->name, status, log_tail(m));
        if (kapi_time_mono_ns() > until)
            test_fail(__FILE__, __LINE__, "etcd %s did not answer in 15 s; the end of its log:\n%s",
                      m->name, log_tail(m));
        struct timespec ts = {0, 20 * MS};
        nanosleep(&ts, NULL);
    }
    kapi_etcd_client_free(c);
}

void etcd_fixture_start(etcd_fixture *f)
{
    if (access(ETCD_BIN, X_OK) != 0)
        test_fail(__FILE__, __LINE__,
                  "etcd is not installed (%s): install Debian's etcd-server "
                  "(scripts/deps.sh test does)",
                  ETCD_BIN);
    if (f->n == 0)
        f->n = 1;
    if (f->tls)
        make_certs(f);
    size_t sl = 0, cl = 0;
    for (int i = 0; i < f->n; i++) {
        etcd_member *m = &f->m[i];
        m->client_port = etcd_fixture_free_port();
        m->peer_port = etcd_fixture_free_port();
        snprintf(m->name, sizeof(m->name), "m%d", i);
        snprintf(m->url, sizeof(m->url), "%s://127.0.0.1:%d", f->tls ? "https" : "http",
                 m->client_port);
        snprintf(m->dir, sizeof(m->dir), "%s/m%d", test_tmpdir(), i);
        sl += snprintf(f->servers + sl, sizeof(f->servers) - sl, "%s%s", i ? "," : "", m->url);
        cl += snprintf(f->cluster + cl, sizeof(f->cluster) - cl, "%s%s=http://127.0.0.1:%d",
                       i ? "," : "", m->name, m->peer_port);
    }
    for (int i = 0; i < f->n; i++)
        spawn(f, i);
    for (int i = 0; i < f->n; i++)
        wait_ready(f, i);
}

void etcd_fixture_kill(etcd_fixture *f, int i)
{
    if (f->m[i].pid <= 0)
        return;
    kill(f->m[i].pid, SIGKILL);
    waitpid(f->m[i].pid, NULL, 0);
    f->m[i].pid = 0;
}

void etcd_fixture_restart(etcd_fixture *f, int i)
{
    etcd_fixture_kill(f, i);
    spawn(f, i);
    wait_ready(f, i);
}

void etcd_fixture_stop(etcd_fixture *f)
{
    for (int i = 0; i < f->n; i++)
        etcd_fixture_kill(f, i);
}

kapi_etcd_client *etcd_fixture_client(const etcd_fixture *f, const char *servers)
{
    char ca[400], cert[400], key[400];
    snprintf(ca, sizeof(ca), "%s/ca.crt", f->tls_dir);
    snprintf(cert, sizeof(cert), "%s/node.crt", f->tls_dir);
    snprintf(key, sizeof(key), "%s/node.key", f->tls_dir);
    kapi_etcd_options o = {.servers = servers, .call_timeout_ms = 3000, .connect_timeout_ms = 1000};
    if (f->tls) {
        o.ca_file = ca;
        o.cert_file = cert;
        o.key_file = key;
    }
    kapi_etcd_client *c;
    kapi_error *err = kapi_etcd_client_new(&c, &o);
    if (err)
        test_fail(__FILE__, __LINE__, "kapi_etcd_client_new: %s", err->message);
    return c;
}

int64_t etcd_put(kapi_etcd_client *c, const char *key, const char *value)
{
    kapi_etcd_op put = {.type = KAPI_ETCD_PUT, .key = kapi_str_c(key), .value = kapi_str_c(value)};
    kapi_etcd_txn_req txn = {.success = &put, .nsuccess = 1};
    kapi_etcd_response *r;
    kapi_error *err = NULL;
    if (kapi_etcd_txn(c, &txn, 0, &r, &err) != KAPI_ETCD_OK)
        test_fail(__FILE__, __LINE__, "put %s: %s", key, err->message);
    int64_t rev = r->revision;
    kapi_etcd_response_free(r);
    return rev;
}

char *etcd_get(kapi_etcd_client *c, const char *key, int64_t rev)
{
    kapi_etcd_op get = {.type = KAPI_ETCD_RANGE, .key = kapi_str_c(key), .revision = rev};
    kapi_etcd_response *r;
    kapi_error *err = NULL;
    if (kapi_etcd_range(c, &get, 0, &r, &err) != KAPI_ETCD_OK)
        test_fail(__FILE__, __LINE__, "get %s: %s", key, err->message);
    char *v = r->ops[0].nkvs ? kapi_xstrndup(r->ops[0].kvs[0].value.ptr, r->ops[0].kvs[0].value.len)
                             : NULL;
    kapi_etcd_response_free(r);
    return v;
}
