/* test: the unit-test runner (see test.h). */
#include "test.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

#define MAX_TESTS 1024
#define TIMEOUT_SECONDS 60

static struct {
    const char *name;
    test_fn fn;
} tests[MAX_TESTS];
static int ntests;
static char tmpdir[256];

void test_register(const char *name, test_fn fn)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        exit(2);
    }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    ntests++;
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stdout, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    _exit(1);
}

const char *test_tmpdir(void)
{
    return tmpdir;
}

char *test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    kapi_buf b;
    char chunk[65536];
    size_t n;
    kapi_buf_init(&b);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        kapi_buf_put(&b, chunk, n);
    fclose(f);
    return kapi_buf_detach(&b, len);
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[1024];
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

static int run_one(int i)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/kapi-test-%d-%d", (int)getpid(), i);
    mkdir(tmpdir, 0700);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(TIMEOUT_SECONDS);
        tests[i].fn();
        exit(0); /* not _exit: LeakSanitizer reports at exit */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    remove_tree(tmpdir);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 1;
    if (WIFSIGNALED(status))
        printf("  (killed by signal %d%s)\n", WTERMSIG(status),
               WTERMSIG(status) == SIGALRM ? ": timeout" : "");
    return 0;
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0, failed = 0;
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < ntests; i++) {
        if (filter && !strstr(tests[i].name, filter))
            continue;
        if (run_one(i)) {
            printf("PASS %s\n", tests[i].name);
            passed++;
        } else {
            printf("FAIL %s\n", tests[i].name);
            failed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
