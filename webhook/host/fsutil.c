#include "host/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads fd to its end into out; name is what messages call it. */
static int fsutil_read_fd(int fd, const char *name, struct dynbuf *out, char *err, size_t errlen)
{
    char chunk[16384];
    int rc = ERR_OK;

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
    return rc;
}

int fsutil_read(const char *path, struct dynbuf *out, char *err, size_t errlen)
{
    int is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return err_set(err, errlen, ERR_FAIL, "cannot open %s: %s", path, strerror(errno));
    rc = fsutil_read_fd(fd, is_stdin ? "the input" : path, out, err, errlen);
    if (!is_stdin)
        close(fd);
    return rc;
}

int fsutil_read_regular(const char *path, struct dynbuf *out, char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    int rc;

    if (fd < 0)
        return err_set(err, errlen, ERR_FAIL, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0)
        rc = err_set(err, errlen, ERR_FAIL, "cannot stat %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = err_set(err, errlen, ERR_FAIL,
                     "cannot read %s: not a regular file (a FIFO or a device?); put a file there",
                     path);
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        rc = err_set(err, errlen, ERR_FAIL, "cannot read %s: %s", path, strerror(errno));
    else
        rc = fsutil_read_fd(fd, path, out, err, errlen);
    close(fd);
    return rc;
}

int fsutil_read_small(const char *path, char *buf, size_t size, size_t *len, char *err,
                      size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    size_t got = 0;
    int rc = ERR_FAIL;
    char extra;

    *len = 0;
    if (size > 0)
        buf[0] = '\0';
    if (fd < 0)
        return err_set(err, errlen, ERR_FAIL, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        err_set(err, errlen, ERR_FAIL, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(err, errlen, ERR_FAIL, "cannot read %s: not a regular file", path);
        goto out;
    }
    while (got + 1 < size) {
        ssize_t n = read(fd, buf + got, size - 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_set(err, errlen, ERR_FAIL, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    *len = got;
    rc = ERR_OK;
    /* Full: one more byte tells a file of exactly size - 1 bytes from a longer one. */
    if (got + 1 >= size) {
        ssize_t n;

        do
            n = read(fd, &extra, 1);
        while (n < 0 && errno == EINTR);
        if (n != 0)
            rc = err_set(err, errlen, ERR_TOO_BIG, "%s is larger than %zu bytes", path, size - 1);
    }
out:
    close(fd);
    return rc;
}

/* The temporary name: ".BASE.XXXXXX" beside path. */
static char *fsutil_tmp_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    size_t n = strlen(path) + sizeof(".XXXXXX") + 1;
    char *tmp = malloc(n);

    if (tmp)
        snprintf(tmp, n, "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
    return tmp;
}

int fsutil_write_replace(const char *path, const void *data, size_t len, unsigned mode, char *err,
                         size_t errlen)
{
    char *tmp = fsutil_tmp_name(path);
    const char *p = data;
    int fd = -1, created = 0, rc = ERR_FAIL;

    if (tmp == NULL)
        return err_set(err, errlen, ERR_NOMEM, "out of memory writing %s", path);
    if ((fd = mkstemp(tmp)) < 0) {
        err_set(err, errlen, ERR_FAIL, "cannot create a file beside %s: %s", path, strerror(errno));
        goto out;
    }
    created = 1;
    if (fchmod(fd, (mode_t)mode) != 0) {
        err_set(err, errlen, ERR_FAIL, "cannot chmod %s: %s", tmp, strerror(errno));
        goto out;
    }
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_set(err, errlen, ERR_FAIL, "cannot write %s: %s", tmp, strerror(errno));
            goto out;
        }
        p += n;
        len -= (size_t)n;
    }
    rc = close(fd);
    fd = -1;
    if (rc != 0) {
        rc = err_set(err, errlen, ERR_FAIL, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        rc = err_set(err, errlen, ERR_FAIL, "cannot rename %s to %s: %s", tmp, path,
                     strerror(errno));
        goto out;
    }
    created = 0;
out:
    if (fd >= 0)
        close(fd);
    if (created)
        unlink(tmp);
    free(tmp);
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
