#include "filewatch.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define FILEWATCH_EVENTS                                                                           \
    (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB |            \
     IN_DELETE_SELF | IN_MOVE_SELF)

static void filewatch_drain(int fd)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
}

static void *filewatch_main(void *arg)
{
    struct filewatch *w = arg;
    struct pollfd fds[2] = {{.fd = w->stop_pipe[0], .events = POLLIN},
                            {.fd = w->inotify_fd, .events = POLLIN}};

    for (;;) {
        struct fsutil_identity now;
        int n = poll(fds, w->inotify_fd >= 0 ? 2 : 1, w->interval_ms);

        if (n < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break;
        if (w->inotify_fd >= 0 && fds[1].revents)
            filewatch_drain(w->inotify_fd);
        if (fsutil_identity(w->path, &now) != 0 || fsutil_identity_equal(&now, &w->last))
            continue;
        w->last = now;
        w->changed(w->ctx);
    }
    return NULL;
}

/* inotify is an optimisation: without it the interval still catches changes. */
static void filewatch_add_inotify(struct filewatch *w)
{
    char dir[PATH_MAX];

    w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->inotify_fd < 0)
        return;
    snprintf(dir, sizeof(dir), "%s", w->path);
    if (inotify_add_watch(w->inotify_fd, dirname(dir), FILEWATCH_EVENTS) < 0) {
        close(w->inotify_fd);
        w->inotify_fd = -1;
    }
}

int filewatch_start(struct filewatch *w, const char *path, int interval_ms,
                    void (*changed)(void *ctx), void *ctx, char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    w->path = path;
    w->interval_ms = interval_ms;
    w->changed = changed;
    w->ctx = ctx;
    w->inotify_fd = -1;
    w->stop_pipe[0] = w->stop_pipe[1] = -1;
    fsutil_identity(path, &w->last);
    if (pipe2(w->stop_pipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot watch %s: %s", path, strerror(errno));
        return -1;
    }
    filewatch_add_inotify(w);
    if (pthread_create(&w->thread, NULL, filewatch_main, w) != 0) {
        snprintf(err, errlen, "cannot start the watcher for %s", path);
        filewatch_stop(w);
        return -1;
    }
    w->started = 1;
    return 0;
}

void filewatch_stop(struct filewatch *w)
{
    if (w->started) {
        ssize_t ignored = write(w->stop_pipe[1], "x", 1);

        (void)ignored;
        pthread_join(w->thread, NULL);
        w->started = 0;
    }
    for (int i = 0; i < 2; i++)
        if (w->stop_pipe[i] >= 0)
            close(w->stop_pipe[i]);
    if (w->inotify_fd >= 0)
        close(w->inotify_fd);
    w->stop_pipe[0] = w->stop_pipe[1] = w->inotify_fd = -1;
}
