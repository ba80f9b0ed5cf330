/* fsutil: whole-file reads with a size cap, and file identity for change
 * detection.
 *
 * Errors (err.h): ERR_OK, or ERR_NOMEM, ERR_TOO_BIG or ERR_FAIL with a
 * one-line message in err naming the path and the cause.
 */
#ifndef RDMA_WEBHOOK_FSUTIL_H
#define RDMA_WEBHOOK_FSUTIL_H

#include "base/dynbuf.h"
#include "base/err.h"

#include <stddef.h>
#include <sys/types.h>

/* What changes when a file is rewritten or a symlink is swapped to another
 * file (the kubelet's ..data swap for ConfigMap and Secret volumes). */
struct fsutil_identity {
    dev_t dev;
    ino_t ino;
    off_t size;
    long long mtime_ns;
    int exists;
};

/* Reads path ("-" for standard input) into out, whose cap limits the size:
 * ERR_TOO_BIG for a file over the cap (the message names the cap), ERR_NOMEM
 * ("out of memory") when out cannot grow, ERR_FAIL when the file cannot be
 * opened or read. out then holds what was read so far. */
int fsutil_read(const char *path, struct dynbuf *out, char *err, size_t errlen);

/* fsutil_read for the files serve keeps reading (profiles, certificate,
 * key, token, --pod-security-config): only a regular file, opened without
 * blocking, so a FIFO or a device put in its place is refused (ERR_FAIL, a
 * message naming the path) instead of blocking a reload, and the shutdown
 * after it, for ever. No "-". */
int fsutil_read_regular(const char *path, struct dynbuf *out, char *err, size_t errlen);

/* Reads at most size - 1 bytes of the regular file path into buf and
 * NUL-terminates them (*len gets the count), for the kernel's small files
 * (sysfs attributes, /proc/net/route), whose size stat does not tell (sysfs
 * says 4096, procfs 0). Returns ERR_TOO_BIG when the file holds more (buf then
 * has its first size - 1 bytes), and ERR_FAIL when it cannot be opened or read
 * or is not a regular file: a FIFO or a device in place of such a file is
 * refused without blocking or reading without end. */
int fsutil_read_small(const char *path, char *buf, size_t size, size_t *len, char *err,
                      size_t errlen);

/* Replaces path with data (mode bits mode) through a temporary file in the
 * same directory and rename(2), so a reader sees the old file or the whole new
 * one, never a part. */
int fsutil_write_replace(const char *path, const void *data, size_t len, unsigned mode, char *err,
                         size_t errlen);

/* Follows symlinks; a missing file gives exists = 0 and returns ERR_OK;
 * ERR_FAIL when stat fails otherwise (errno says why). */
int fsutil_identity(const char *path, struct fsutil_identity *id);
int fsutil_identity_equal(const struct fsutil_identity *a, const struct fsutil_identity *b);

#endif
