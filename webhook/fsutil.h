/* fsutil: whole-file reads with a size cap, and file identity for change
 * detection.
 *
 * Errors: functions return 0 or -1 with a one-line message in err naming the
 * path and the cause.
 */
#ifndef RDMA_WEBHOOK_FSUTIL_H
#define RDMA_WEBHOOK_FSUTIL_H

#include "dynbuf.h"

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

/* Reads path ("-" for standard input) into out, whose cap limits the size;
 * the message tells a file over the cap from a read out of memory. */
int fsutil_read(const char *path, struct dynbuf *out, char *err, size_t errlen);

/* Follows symlinks; a missing file gives exists = 0 and returns 0. */
int fsutil_identity(const char *path, struct fsutil_identity *id);
int fsutil_identity_equal(const struct fsutil_identity *a, const struct fsutil_identity *b);

#endif
