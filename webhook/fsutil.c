#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fsutil_read(const char *path, struct dynbuf *out, char *err, size_t errlen)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "the input" : path;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    char chunk[16384];
    int rc = ERR_OK;

    if (fd < 0)
        return err_set(err, errlen, ERR_FAIL, "cannot open %s: %s", path, strerror(errno));
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = err_set(err, errlen, ERR_FAIL, "cannot read %s: %s", name, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        rc = dynbuf_add(out, chunk, (size_t)n);
        if (rc == ERR_NOMEM) {
            rc = err_set(err, errlen, ERR_NOMEM, "out of memory reading %s", name);
            break;
        }
        if (rc) {
            rc = err_set(err, errlen, ERR_TOO_BIG, "%s is larger than %zu bytes", name, out->cap);
            break;
        }
    }
    if (!is_stdin)
        close(fd);
    return rc;
}

int fsutil_identity(const char *path, struct fsutil_identity *id)
{
    struct stat st;

    memset(id, 0, sizeof(*id));
    if (stat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? ERR_OK : ERR_FAIL;
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
