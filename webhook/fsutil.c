#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fsutil_read(const char *path, struct dynbuf *out, char *err, size_t errlen)
{
    int is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    char chunk[16384];
    int rc = -1, add;

    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        if ((add = dynbuf_add(out, chunk, (size_t)n)) == ERR_NOMEM) {
            snprintf(err, errlen, "out of memory reading %s", is_stdin ? "input" : path);
            goto out;
        }
        if (add) {
            snprintf(err, errlen, "%s is larger than %zu bytes", is_stdin ? "input" : path,
                     out->cap);
            goto out;
        }
    }
    rc = 0;
out:
    if (!is_stdin)
        close(fd);
    return rc;
}

int fsutil_identity(const char *path, struct fsutil_identity *id)
{
    struct stat st;

    memset(id, 0, sizeof(*id));
    if (stat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    id->exists = 1;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    return 0;
}

int fsutil_identity_equal(const struct fsutil_identity *a, const struct fsutil_identity *b)
{
    return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns;
}
