/*
 * metrics/process: the process collector (client_golang's process_* metrics, read from
 * /proc/self as it reads them), and kapi_threads for Go's go_threads.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics/metrics.h"

static kapi_metric cpu = KAPI_METRIC_COUNTER_DEF(
    "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", NULL);
static kapi_metric rss =
    KAPI_METRIC_GAUGE_DEF("process_resident_memory_bytes", "Resident memory size in bytes.", NULL);
static kapi_metric vsize =
    KAPI_METRIC_GAUGE_DEF("process_virtual_memory_bytes", "Virtual memory size in bytes.", NULL);
static kapi_metric open_fds =
    KAPI_METRIC_GAUGE_DEF("process_open_fds", "Number of open file descriptors.", NULL);
static kapi_metric max_fds =
    KAPI_METRIC_GAUGE_DEF("process_max_fds", "Maximum number of open file descriptors.", NULL);
static kapi_metric start_time = KAPI_METRIC_GAUGE_DEF(
    "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", NULL);
static kapi_metric threads = KAPI_METRIC_GAUGE_DEF(
    "kapi_threads", "Number of OS threads of the process (what go_threads is for Go).", NULL);

static const char *const none[1];

/* /proc/stat's btime: the boot time, in seconds since the epoch; 0 if unknown. */
static double boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    double t = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "btime ", 6) == 0)
            t = strtod(line + 6, NULL);
    if (f)
        fclose(f);
    return t;
}

static double count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    double n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - (d != NULL); /* the directory's own descriptor */
}

static void collect(void *ctx)
{
    (void)ctx;
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long long utime, stime, starttime, vsz;
    long nthreads, rss_pages;
    /* The fields after the command: state (3) ... utime (14), stime (15), num_threads (20),
     * starttime (22), vsize (23), rss (24). */
    if (p && sscanf(p + 2,
                    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %ld "
                    "%*d %llu %llu %ld",
                    &utime, &stime, &nthreads, &starttime, &vsz, &rss_pages) == 6) {
        double tick = (double)sysconf(_SC_CLK_TCK);
        kapi_metrics_set(&cpu, none, (double)(utime + stime) / tick);
        kapi_metrics_set(&rss, none, (double)rss_pages * (double)sysconf(_SC_PAGESIZE));
        kapi_metrics_set(&vsize, none, (double)vsz);
        kapi_metrics_set(&threads, none, (double)nthreads);
        kapi_metrics_set(&start_time, none, boot_time() + (double)starttime / tick);
    }
    kapi_metrics_set(&open_fds, none, count_fds());
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        kapi_metrics_set(&max_fds, none, (double)rl.rlim_cur);
}

void kapi_metrics_process_init(void)
{
    kapi_metrics_collector_add(collect, NULL);
}
