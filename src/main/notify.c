/*
 * main/notify: systemd's readiness protocol (sd_notify(3)), a datagram to $NOTIFY_SOCKET.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "main/main.h"

bool kapi_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len = path ? strlen(path) : 0;
    if (!path)
        return true;
    if (len < 2 || len >= sizeof(sun.sun_path) || (path[0] != '/' && path[0] != '@')) {
        errno = EINVAL;
        return false;
    }
    memcpy(sun.sun_path, path, len);
    if (path[0] == '@')
        sun.sun_path[0] = '\0'; /* the abstract namespace: no NUL after the name */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    ssize_t sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sun,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
    close(fd);
    return sent == (ssize_t)strlen(state);
}
