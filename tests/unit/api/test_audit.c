/* Unit tests for src/api/audit.c's file: every line written once and whole, rotation past
 * --audit-log-maxsize under lumberjack's backup names, --audit-log-maxbackup kept. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_int.h"
#include "test.h"

/* Lines "line N" padded to 100 bytes with their newline. */
static void append_lines(kapi_audit *a, int from, int to)
{
    for (int i = from; i <= to; i++) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_buf_printf(&b, "line %-94d\n", i);
        kapi_api__audit_append(a, &b);
        kapi_buf_dispose(&b);
    }
}

/* The files of dir, sorted, each as "name:first line number-last". */
static char *files(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    kapi_buf out;
    kapi_buf_init(&out);
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (name[0] != '.') {
            char *path = kapi_xprintf("%s/%s", dir, name);
            size_t len;
            char *text = test_slurp(path, &len);
            bool dated = strncmp(name, "audit-", 6) == 0 && strlen(name) == 33;
            kapi_buf_printf(&out, "%s%s:%zu:%d-%d", out.len ? " " : "", dated ? "backup" : name,
                            len, atoi(text + 5), len ? atoi(text + len - 95) : 0);
            free(text);
            free(path);
        }
        free(names[i]);
    }
    free(names);
    return kapi_buf_detach(&out, NULL);
}

TEST(audit_file_rotation)
{
    char *dir = kapi_xprintf("%s/rot", test_tmpdir());
    char *path = kapi_xprintf("%s/audit.log", dir);
    CHECK(mkdir(dir, 0700) == 0);
    kapi_audit *a;
    kapi_audit_config c = {.path = path, .max_bytes = 250, .max_backups = 2};
    CHECK(kapi_audit_new(&a, &c) == NULL);
    append_lines(a, 1, 10);
    kapi_audit_free(a);
    char *got = files(dir);
    /* two lines a file; of the four rotated ones, the newest two */
    CHECK_STR_EQ(got, "backup:200:5-6 backup:200:7-8 audit.log:200:9-10");
    free(got);
    /* Opened again, it goes on from the file's size. Four rotations in a millisecond took
     * names up to 3 ms ahead of the clock: past them, the next backup's name sorts last. */
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    c.max_bytes = 300;
    c.max_backups = 0;
    CHECK(kapi_audit_new(&a, &c) == NULL);
    append_lines(a, 11, 13);
    kapi_audit_free(a);
    got = files(dir);
    CHECK_STR_EQ(got, "backup:200:5-6 backup:200:7-8 backup:300:9-11 audit.log:200:12-13");
    free(got);
    free(path);
    free(dir);
}

/* Without a maximum, one file with every line in order. */
TEST(audit_file_plain)
{
    char *path = kapi_xprintf("%s/plain.log", test_tmpdir());
    kapi_audit *a;
    kapi_audit_config c = {.path = path};
    CHECK(kapi_audit_new(&a, &c) == NULL);
    append_lines(a, 1, 1000);
    kapi_audit_free(a);
    size_t len;
    char *text = test_slurp(path, &len);
    CHECK_INT_EQ(len, 100000);
    CHECK_INT_EQ(atoi(text + 5), 1);
    CHECK_INT_EQ(atoi(text + 99905), 1000);
    free(text);
    free(path);
}

/* An audit log that cannot be opened, or a policy that does not check, is an error. */
TEST(audit_file_errors)
{
    kapi_audit *a = NULL;
    kapi_audit_config c = {.path = "/nonexistent/dir/audit.log"};
    kapi_error *err = kapi_audit_new(&a, &c);
    CHECK(err != NULL);
    if (err)
        CHECK_STR_EQ(err->message,
                     "--audit-log-path /nonexistent/dir/audit.log: No such file or directory");
    kapi_error_free(err);
    char *policy = kapi_xprintf("%s/policy.yaml", test_tmpdir());
    FILE *f = fopen(policy, "w");
    fputs("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n", f);
    fclose(f);
    c = (kapi_audit_config){.path = "-", .policy_file = policy};
    err = kapi_audit_new(&a, &c);
    CHECK(err != NULL &&
          strstr(err->message, "policy.yaml: rules.level: Unsupported value") != NULL);
    kapi_error_free(err);
    free(policy);
}
