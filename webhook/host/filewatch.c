#include "host/filewatch.h"

#include "base/err.h"
#include "host/fsutil.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define FILEWATCH_EVENTS                                                                           \
    (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB |            \
     IN_DELETE_SELF | IN_MOVE_SELF)

/* In every live watch and nowhere else: a stopped or stray pointer fails the
 * assert instead of corrupting memory. */
#define FILEWATCH_MAGIC 0x66776174u /* "fwat" */

struct filewatch {
    unsigned magic;
    char paths[FILEWATCH_MAX_PATHS][PATH_MAX];
    size_t n_paths;
    int interval_ms;
    void (*changed)(void *ctx);
    void *ctx;
    pthread_t thread;
    int started;
    int inotify_fd; /* -1: none, the interval alone catches changes */
    int stop_pipe[2];
    struct fsutil_identity last[FILEWATCH_MAX_PATHS];
};

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

/* Compares first, then waits: a change since init (during the caller's
 * first load) is called back at once. */
static void *filewatch_main(void *arg)
{
    struct filewatch *w = arg;
    struct pollfd fds[2] = {{.fd = w->stop_pipe[0], .events = POLLIN},
                            {.fd = w->inotify_fd, .events = POLLIN}};

    for (;;) {
        int n;

        if (filewatch_any_changed(w))
            w->changed(w->ctx);
        n = poll(fds, w->inotify_fd >= 0 ? 2 : 1, w->interval_ms);
        if (n < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break;
        if (w->inotify_fd >= 0 && fds[1].revents)
            filewatch_drain(w->inotify_fd);
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
        memcpy(dir, w->paths[i], sizeof(dir));
        if (inotify_add_watch(w->inotify_fd, dirname(dir), FILEWATCH_EVENTS) < 0) {
            close(w->inotify_fd);
            w->inotify_fd = -1;
            return;
        }
    }
}

static int filewatch_set_paths(struct filewatch *w, const char *const *paths, size_t n_paths,
                               char *err, size_t errlen)
{
    if (n_paths == 0 || n_paths > FILEWATCH_MAX_PATHS)
        return err_set(err, errlen, ERR_FAIL, "cannot watch %zu files at once (1 to %d)", n_paths,
                       FILEWATCH_MAX_PATHS);
    for (size_t i = 0; i < n_paths; i++) {
        size_t len = strlen(paths[i]);

        if (len >= sizeof(w->paths[i]))
            return err_set(err, errlen, ERR_TOO_BIG, "cannot watch %.200s...: the path is too long",
                           paths[i]);
        memcpy(w->paths[i], paths[i], len + 1);
    }
    w->n_paths = n_paths;
    return ERR_OK;
}

int filewatch_init(struct filewatch **out, const char *const *paths, size_t n_paths,
                   int interval_ms, void (*changed)(void *ctx), void *ctx, char *err, size_t errlen)
{
    struct filewatch *w = calloc(1, sizeof(*w));
    int rc;

    *out = NULL;
    if (!w)
        return err_set(err, errlen, ERR_NOMEM, "cannot watch %s: out of memory",
                       n_paths ? paths[0] : "files");
    w->interval_ms = interval_ms;
    w->changed = changed;
    w->ctx = ctx;
    w->inotify_fd = -1;
    w->stop_pipe[0] = w->stop_pipe[1] = -1;
    w->magic = FILEWATCH_MAGIC;
    if ((rc = filewatch_set_paths(w, paths, n_paths, err, errlen)) != ERR_OK)
        goto fail;
    for (size_t i = 0; i < w->n_paths; i++)
        fsutil_identity(w->paths[i], &w->last[i]);
    if (pipe2(w->stop_pipe, O_CLOEXEC) != 0) {
        rc = err_set(err, errlen, ERR_FAIL, "cannot watch %s: %s", w->paths[0], strerror(errno));
        goto fail;
    }
    filewatch_add_inotify(w);
    *out = w;
    return ERR_OK;
fail:
    filewatch_stop(&w);
    return rc;
}

int filewatch_start(struct filewatch *w, char *err, size_t errlen)
{
    assert(w->magic == FILEWATCH_MAGIC);
    if (w->started)
        return err_set(err, errlen, ERR_FAIL, "the watch of %s is running already", w->paths[0]);
    if (pthread_create(&w->thread, NULL, filewatch_main, w) != 0)
        return err_set(err, errlen, ERR_FAIL, "cannot start the watcher for %s", w->paths[0]);
    w->started = 1;
    return ERR_OK;
}

void filewatch_stop(struct filewatch **wp)
{
    struct filewatch *w = *wp;

    if (!w)
        return;
    assert(w->magic == FILEWATCH_MAGIC);
    if (w->started) {
        ssize_t ignored = write(w->stop_pipe[1], "x", 1);

        (void)ignored;
        pthread_join(w->thread, NULL);
    }
    for (int i = 0; i < 2; i++)
        if (w->stop_pipe[i] >= 0)
            close(w->stop_pipe[i]);
    if (w->inotify_fd >= 0)
        close(w->inotify_fd);
    w->magic = 0;
    free(w);
    *wp = NULL;
}
