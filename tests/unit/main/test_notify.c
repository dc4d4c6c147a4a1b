/* Unit tests for src/main/notify.c: sd_notify's datagram, to a path or an abstract socket. */
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "main/main.h"
#include "test.h"

/* A datagram socket bound at name ("@..." abstract, else a path); NOTIFY_SOCKET names it. */
static int listen_at(const char *name)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK(fd >= 0 && len < sizeof(sun.sun_path));
    memcpy(sun.sun_path, name, len);
    if (name[0] == '@')
        sun.sun_path[0] = '\0';
    CHECK(bind(fd, (struct sockaddr *)&sun,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (name[0] != '@'))) == 0);
    setenv("NOTIFY_SOCKET", name, 1);
    return fd;
}

static void check_receives(int fd, const char *want)
{
    char got[64] = "";
    ssize_t n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);
    CHECK(n == (ssize_t)strlen(want));
    CHECK_STR_EQ(got, want);
}

TEST(notify_abstract_and_path_sockets)
{
    char abstract[64], path[4096];
    snprintf(abstract, sizeof(abstract), "@kapi-unit-%d", (int)getpid());
    int fd = listen_at(abstract);
    CHECK(kapi_notify("READY=1"));
    check_receives(fd, "READY=1");
    close(fd);
    snprintf(path, sizeof(path), "%s/notify", test_tmpdir());
    fd = listen_at(path);
    CHECK(kapi_notify("STOPPING=1"));
    check_receives(fd, "STOPPING=1");
    close(fd);
}

TEST(notify_unset_or_bad)
{
    unsetenv("NOTIFY_SOCKET");
    CHECK(kapi_notify("READY=1")); /* not under systemd: nothing to do */
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    CHECK(!kapi_notify("READY=1"));
    setenv("NOTIFY_SOCKET", "@kapi-unit-nobody-listens", 1);
    CHECK(!kapi_notify("READY=1"));
}
