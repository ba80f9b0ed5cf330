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

/* 1 when any path's identity moved since last seen; the new ones are kept. */
static int filewatch_any_changed(struct filewatch *w)
{
    int changed = 0;

    for (size_t i = 0; i < w->n_paths; i++) {
        struct fsutil_identity now;

        if (fsutil_identity(w->paths[i], &now) != 0 || fsutil_identity_equal(&now, &w->last[i]))
            continue;
        w->last[i] = now;
        changed = 1;
    }
    return changed;
}

static void *filewatch_main(void *arg)
{
    struct filewatch *w = arg;
    struct pollfd fds[2] = {{.fd = w->stop_pipe[0], .events = POLLIN},
                            {.fd = w->inotify_fd, .events = POLLIN}};

    for (;;) {
        int n = poll(fds, w->inotify_fd >= 0 ? 2 : 1, w->interval_ms);

        if (n < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break;
        if (w->inotify_fd >= 0 && fds[1].revents)
            filewatch_drain(w->inotify_fd);
        if (filewatch_any_changed(w))
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
    for (size_t i = 0; i < w->n_paths; i++) {
        snprintf(dir, sizeof(dir), "%s", w->paths[i]);
        if (inotify_add_watch(w->inotify_fd, dirname(dir), FILEWATCH_EVENTS) < 0) {
            close(w->inotify_fd);
            w->inotify_fd = -1;
            return;
        }
    }
}

/* Sets w up and records the identities; the thread is not started. */
static int filewatch_prepare(struct filewatch *w, const char *const *paths, size_t n_paths,
                             int interval_ms, void (*changed)(void *ctx), void *ctx, char *err,
                             size_t errlen)
{
    memset(w, 0, sizeof(*w));
    w->interval_ms = interval_ms;
    w->changed = changed;
    w->ctx = ctx;
    w->inotify_fd = -1;
    w->stop_pipe[0] = w->stop_pipe[1] = -1;
    w->armed = 1;
    if (n_paths == 0 || n_paths > FILEWATCH_MAX_PATHS) {
        snprintf(err, errlen, "cannot watch %zu files at once", n_paths);
        return -1;
    }
    for (size_t i = 0; i < n_paths; i++) {
        w->paths[i] = paths[i];
        fsutil_identity(paths[i], &w->last[i]);
    }
    w->n_paths = n_paths;
    if (pipe2(w->stop_pipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot watch %s: %s", paths[0], strerror(errno));
        return -1;
    }
    filewatch_add_inotify(w);
    return 0;
}

static int filewatch_run(struct filewatch *w, char *err, size_t errlen)
{
    if (pthread_create(&w->thread, NULL, filewatch_main, w) != 0) {
        snprintf(err, errlen, "cannot start the watcher for %s", w->paths[0]);
        filewatch_stop(w);
        return -1;
    }
    w->started = 1;
    return 0;
}

int filewatch_start(struct filewatch *w, const char *const *paths, size_t n_paths, int interval_ms,
                    void (*changed)(void *ctx), void *ctx, char *err, size_t errlen)
{
    if (filewatch_prepare(w, paths, n_paths, interval_ms, changed, ctx, err, errlen))
        return -1;
    return filewatch_run(w, err, errlen);
}

int filewatch_load_and_start(struct filewatch *w, const char *const *paths, size_t n_paths,
                             int interval_ms, void (*changed)(void *ctx), void *ctx, char *err,
                             size_t errlen)
{
    if (filewatch_prepare(w, paths, n_paths, interval_ms, changed, ctx, err, errlen))
        return -1;
    changed(ctx);
    return filewatch_run(w, err, errlen);
}

void filewatch_stop(struct filewatch *w)
{
    if (w->started) {
        ssize_t ignored = write(w->stop_pipe[1], "x", 1);

        (void)ignored;
        pthread_join(w->thread, NULL);
        w->started = 0;
    }
    /* A zeroed watch holds 0s, not descriptors: descriptor 0 is not ours. */
    if (!w->armed)
        return;
    for (int i = 0; i < 2; i++)
        if (w->stop_pipe[i] >= 0)
            close(w->stop_pipe[i]);
    if (w->inotify_fd >= 0)
        close(w->inotify_fd);
    w->stop_pipe[0] = w->stop_pipe[1] = w->inotify_fd = -1;
}
