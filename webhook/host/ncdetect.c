/* ncdetect: the RDMA set-up a container sees, and the NCCL configuration that
 * follows from it (see ncdetect.h). */
#include "host/ncdetect.h"

#include "host/fsutil.h"
#include "base/jsonw.h"
#include "admission/nccl.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NCDETECT_STATE_ACTIVE 4
#define NCDETECT_RTF_UP       0x1

/* A bounded list of directory entry names, the cap smallest in natural order
 * (kept in the caller's storage); dropped counts the names left out. */
struct ncdetect_names {
    char (*v)[NCDETECT_DEVNAME_MAX];
    size_t n, cap;
    size_t dropped;
    size_t rejected; /* entries other than . and .. that accept refused */
    int truncated;   /* the directory had more than NCDETECT_MAX_DIR_ENTRIES entries */
};

__attribute__((format(printf, 2, 3))) static void ncdetect_note(struct dynbuf *notes,
                                                                const char *fmt, ...)
{
    size_t before = notes->len;
    va_list ap;

    /* A note past NCDETECT_NOTES_MAX is dropped whole: the buffer stays as it
     * was when an add fails. */
    va_start(ap, fmt);
    if (dynbuf_vprintf(notes, fmt, ap) == ERR_OK && dynbuf_addc(notes, '\n') != ERR_OK)
        dynbuf_truncate(notes, before);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static int ncdetect_path(char *buf, size_t size,
                                                               const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= size ? ERR_TOO_BIG : ERR_OK;
}

/* Copies src into dst[size] when it fits; the callers have checked that it
 * does, and a longer one is cut rather than overrun. */
static void ncdetect_copy(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* mlx5_2 before mlx5_10: runs of digits compare as numbers. */
static int ncdetect_natcmp(const char *a, const char *b)
{
    const char *a0 = a, *b0 = b;

    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            size_t la, lb;
            int c;

            while (*a == '0')
                a++;
            while (*b == '0')
                b++;
            la = strspn(a, "0123456789");
            lb = strspn(b, "0123456789");
            if (la != lb)
                return la < lb ? -1 : 1;
            if ((c = strncmp(a, b, la)) != 0)
                return c;
            a += la;
            b += lb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a - (unsigned char)*b;
        a++;
        b++;
    }
    if (*a != *b)
        return (unsigned char)*a - (unsigned char)*b;
    return strcmp(a0, b0);
}

static void ncdetect_names_insert(struct ncdetect_names *l, const char *name)
{
    size_t i = l->n;

    while (i > 0 && ncdetect_natcmp(l->v[i - 1], name) > 0)
        i--;
    if (i == l->cap) {
        l->dropped++;
        return;
    }
    if (l->n == l->cap) {
        l->n--;
        l->dropped++;
    }
    memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof(l->v[0]));
    ncdetect_copy(l->v[i], sizeof(l->v[i]), name);
    l->n++;
}

/* A name the kernel could have given a device, a netdev or a port: no path
 * separator, no dot file, nothing unprintable, short enough to keep. */
static int ncdetect_plain_name(const char *name, size_t max)
{
    size_t n = strlen(name);

    if (n == 0 || n >= max || name[0] == '.')
        return 0;
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '/' || *p == ':' ||
            *p == ',')
            return 0;
    return 1;
}

/* A device name NCCL_IB_HCA can hold anywhere in its list: NCCL 2.2x's
 * parser (src/misc/utils.cc, parseStringList) drops a '^' or '=' at the
 * start of the list, after those of the list's own prefix. */
static int ncdetect_dev_name(const char *name)
{
    return name[0] != '^' && name[0] != '=' && ncdetect_plain_name(name, NCDETECT_DEVNAME_MAX);
}

/* A decimal index of at most 6 digits without a leading zero ("0" itself). */
static int ncdetect_index_name(const char *name)
{
    size_t n = strspn(name, "0123456789");

    return n > 0 && n <= 6 && name[n] == '\0' && (name[0] != '0' || n == 1);
}

static int ncdetect_list(const char *dir, int (*accept)(const char *), struct ncdetect_names *l,
                         char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t seen = 0;

    l->n = l->dropped = l->rejected = 0;
    l->truncated = 0;
    if (d == NULL)
        return err_set(err, errlen, ERR_FAIL, "cannot list %s: %s", dir, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        if (++seen > NCDETECT_MAX_DIR_ENTRIES) {
            l->truncated = 1;
            break;
        }
        if (accept(e->d_name))
            ncdetect_names_insert(l, e->d_name);
        else if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            l->rejected++;
    }
    closedir(d);
    return ERR_OK;
}

/* Reads a sysfs attribute into buf (NCDETECT_ATTR_MAX + 1 bytes), without
 * the trailing newline and blanks. */
static int ncdetect_attr(const char *path, char *buf, char *err, size_t errlen)
{
    size_t len;
    int rc = fsutil_read_small(path, buf, NCDETECT_ATTR_MAX + 1, &len, err, errlen);

    if (rc != ERR_OK) {
        buf[0] = '\0';
        return rc;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        buf[--len] = '\0';
    return ERR_OK;
}

static int ncdetect_is_zero(const unsigned char gid[16])
{
    for (int i = 0; i < 16; i++)
        if (gid[i])
            return 0;
    return 1;
}

/* ::ffff:a.b.c.d, the GID of an IPv4 address (RoCE v2 over IPv4). */
static int ncdetect_is_ipv4(const unsigned char gid[16])
{
    static const unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

/* One GID entry. 1: kept in *g; 0: empty (a zero GID); ERR_FAIL: unreadable
 * (err says why). */
static int ncdetect_scan_gid(const char *sysroot, const char *portdir, unsigned index,
                             struct ncdetect_gid *g, char *err, size_t errlen)
{
    char path[PATH_MAX], text[NCDETECT_ATTR_MAX + 1];
    struct stat st;

    memset(g, 0, sizeof(*g));
    g->index = index;
    if (ncdetect_path(path, sizeof(path), "%s/gids/%u", portdir, index))
        return err_set(err, errlen, ERR_FAIL, "%s/gids/%u: path too long", portdir, index);
    if (ncdetect_attr(path, text, err, errlen) != ERR_OK)
        return ERR_FAIL;
    if (inet_pton(AF_INET6, text, g->gid) != 1)
        return err_set(err, errlen, ERR_FAIL, "%s does not hold a GID", path);
    if (ncdetect_is_zero(g->gid))
        return 0;
    /* Empty-slot reads fail with EINVAL in sysfs; only a kept GID needs these. */
    if (ncdetect_path(path, sizeof(path), "%s/gid_attrs/types/%u", portdir, index) == ERR_OK &&
        ncdetect_attr(path, text, NULL, 0) == ERR_OK)
        g->type = strcmp(text, "RoCE v2") == 0      ? NCDETECT_GID_V2
                  : strcmp(text, "IB/RoCE v1") == 0 ? NCDETECT_GID_V1
                                                    : NCDETECT_GID_UNKNOWN;
    g->ndev_here = -1;
    if (ncdetect_path(path, sizeof(path), "%s/gid_attrs/ndevs/%u", portdir, index) != ERR_OK ||
        ncdetect_attr(path, text, NULL, 0) != ERR_OK ||
        !ncdetect_plain_name(text, NCDETECT_IFNAME_MAX))
        return 1;
    ncdetect_copy(g->ndev, sizeof(g->ndev), text);
    if (ncdetect_path(path, sizeof(path), "%s/class/net/%s", sysroot, g->ndev) == ERR_OK)
        g->ndev_here = stat(path, &st) == 0 ? 1 : (errno == ENOENT || errno == ENOTDIR) ? 0 : -1;
    return 1;
}

static int ncdetect_scan_gids(struct ncdetect_scan *s, const char *sysroot, const char *portdir,
                              struct ncdetect_port *p)
{
    char names[NCDETECT_MAX_GIDS][NCDETECT_DEVNAME_MAX];
    struct ncdetect_names l = {.v = names, .cap = NCDETECT_MAX_GIDS};
    char path[PATH_MAX], err[ERR_LEN] = "", first[ERR_LEN] = "";
    size_t beyond = 0;

    if (ncdetect_path(path, sizeof(path), "%s/gids", portdir) ||
        ncdetect_list(path, ncdetect_index_name, &l, err, sizeof(err))) {
        ncdetect_note(&s->notes, "%s port %u: %s", p->dev, p->port, err[0] ? err : "path too long");
        return ERR_OK;
    }
    if (l.n == 0)
        return ERR_OK;
    if ((p->gids = calloc(l.n, sizeof(p->gids[0]))) == NULL)
        return ERR_NOMEM;
    for (size_t i = 0; i < l.n; i++) {
        unsigned long index = strtoul(names[i], NULL, 10);
        int r;

        if (index >= NCDETECT_MAX_GIDS) {
            beyond++;
            continue;
        }
        err[0] = '\0';
        r = ncdetect_scan_gid(sysroot, portdir, (unsigned)index, &p->gids[p->ngids], err,
                              sizeof(err));
        if (r > 0)
            p->ngids++;
        if (r < 0 && p->unreadable_gids++ == 0)
            ncdetect_copy(first, sizeof(first), err);
    }
    if (p->unreadable_gids)
        ncdetect_note(&s->notes, "%s port %u: %zu GID entr%s unreadable (%s)", p->dev, p->port,
                      p->unreadable_gids, p->unreadable_gids == 1 ? "y" : "ies", first);
    if (beyond + l.dropped || l.truncated)
        ncdetect_note(&s->notes, "%s port %u: GID indexes from %d on not read", p->dev, p->port,
                      NCDETECT_MAX_GIDS);
    return ERR_OK;
}

static int ncdetect_scan_port(struct ncdetect_scan *s, const char *sysroot, const char *dev,
                              unsigned port)
{
    struct ncdetect_port *p = &s->ports[s->nports++];
    char portdir[PATH_MAX], path[PATH_MAX], text[NCDETECT_ATTR_MAX + 1], err[ERR_LEN];

    memset(p, 0, sizeof(*p));
    ncdetect_copy(p->dev, sizeof(p->dev), dev);
    p->port = port;
    p->state = -1;
    if (ncdetect_path(portdir, sizeof(portdir), "%s/class/infiniband/%s/ports/%u", sysroot, dev,
                      port) ||
        ncdetect_path(path, sizeof(path), "%s/state", portdir)) {
        ncdetect_note(&s->notes, "%s port %u: path too long under %s", dev, port, sysroot);
        return ERR_OK;
    }
    if (ncdetect_attr(path, text, err, sizeof(err)) != ERR_OK)
        ncdetect_note(&s->notes, "%s port %u: %s", dev, port, err);
    else if (text[0] >= '0' && text[0] <= '9')
        p->state = atoi(text);
    else
        ncdetect_note(&s->notes, "%s port %u: %s does not start with a state number", dev, port,
                      path);
    ncdetect_path(path, sizeof(path), "%s/link_layer", portdir); /* no longer than state's */
    if (ncdetect_attr(path, text, err, sizeof(err)) != ERR_OK)
        ncdetect_note(&s->notes, "%s port %u: %s", dev, port, err);
    else if (strcmp(text, "Ethernet") == 0)
        p->link = NCDETECT_LINK_ETHERNET;
    else if (strcmp(text, "InfiniBand") == 0)
        p->link = NCDETECT_LINK_INFINIBAND;
    else
        ncdetect_note(&s->notes, "%s port %u: %s is neither Ethernet nor InfiniBand", dev, port,
                      path);
    return ncdetect_scan_gids(s, sysroot, portdir, p);
}

/* The ports from first on are of a device some of whose ports were not
 * read: NCCL_IB_HCA names them one by one, never the device whole. */
static void ncdetect_partial(struct ncdetect_scan *s, size_t first)
{
    s->incomplete = 1;
    for (size_t i = first; i < s->nports; i++)
        s->ports[i].dev_partial = 1;
}

static int ncdetect_scan_device(struct ncdetect_scan *s, const char *sysroot, const char *dev)
{
    char names[NCDETECT_MAX_DEV_PORTS][NCDETECT_DEVNAME_MAX];
    struct ncdetect_names l = {.v = names, .cap = NCDETECT_MAX_DEV_PORTS};
    char path[PATH_MAX], err[ERR_LEN] = "";
    size_t first = s->nports;
    int rc;

    if (ncdetect_path(path, sizeof(path), "%s/class/infiniband/%s/ports", sysroot, dev) ||
        ncdetect_list(path, ncdetect_index_name, &l, err, sizeof(err))) {
        ncdetect_note(&s->notes, "%s: %s", dev, err[0] ? err : "path too long");
        s->incomplete = 1;
        return ERR_OK;
    }
    if (l.n == 0) {
        ncdetect_note(&s->notes, "%s: no ports in %s", dev, path);
        s->incomplete = 1;
    }
    if (l.dropped || l.truncated)
        ncdetect_note(&s->notes, "%s: only its first %d ports read", dev, NCDETECT_MAX_DEV_PORTS);
    for (size_t i = 0; i < l.n; i++) {
        if (s->nports == NCDETECT_MAX_PORTS) {
            ncdetect_note(&s->notes, "%s port %s and later ones not read: %d ports in all at most",
                          dev, names[i], NCDETECT_MAX_PORTS);
            ncdetect_partial(s, first);
            return ERR_TOO_BIG;
        }
        if ((rc = ncdetect_scan_port(s, sysroot, dev, (unsigned)strtoul(names[i], NULL, 10))))
            return rc;
    }
    if (l.dropped || l.truncated)
        ncdetect_partial(s, first);
    return ERR_OK;
}

static int ncdetect_scan_devices(struct ncdetect_scan *s, const char *sysroot)
{
    char names[NCDETECT_MAX_DEVICES][NCDETECT_DEVNAME_MAX];
    struct ncdetect_names l = {.v = names, .cap = NCDETECT_MAX_DEVICES};
    char path[PATH_MAX], err[ERR_LEN] = "";
    struct stat st;
    int rc;

    if (ncdetect_path(path, sizeof(path), "%s/class/infiniband", sysroot)) {
        ncdetect_note(&s->notes, "--sysfs-root %s: path too long", sysroot);
        return ERR_OK;
    }
    if (stat(path, &st) != 0 && errno == ENOENT) {
        ncdetect_note(&s->notes, "no RDMA devices: %s does not exist", path);
        return ERR_OK;
    }
    if (ncdetect_list(path, ncdetect_dev_name, &l, err, sizeof(err))) {
        ncdetect_note(&s->notes, "%s", err);
        return ERR_OK;
    }
    if (l.rejected)
        ncdetect_note(&s->notes,
                      "%zu entr%s of %s not read: a name NCCL_IB_HCA cannot hold (a blank, a "
                      "control character, ',' or ':', a leading '.', '^' or '=', or over %d bytes)",
                      l.rejected, l.rejected == 1 ? "y" : "ies", path, NCDETECT_DEVNAME_MAX - 1);
    else if (l.n == 0)
        ncdetect_note(&s->notes, "no RDMA devices in %s", path);
    if (l.dropped || l.truncated)
        ncdetect_note(&s->notes, "only the first %d RDMA devices read", NCDETECT_MAX_DEVICES);
    s->incomplete = l.rejected || l.dropped || l.truncated;
    if ((s->ports = calloc(NCDETECT_MAX_PORTS, sizeof(s->ports[0]))) == NULL)
        return ERR_NOMEM;
    for (size_t i = 0; i < l.n; i++)
        if ((rc = ncdetect_scan_device(s, sysroot, names[i])) != ERR_OK)
            return rc == ERR_TOO_BIG ? ERR_OK : rc;
    return ERR_OK;
}

/* ---- the devices the container can open, and those DRA allocated ---- */

/* "uverbsN", the name the kernel gives a verbs character device. */
static int ncdetect_uverbs_name(const char *name)
{
    return strncmp(name, "uverbs", 6) == 0 && ncdetect_index_name(name + 6);
}

/* Gives the ports of device ibdev the uverbs node name, unless one of them
 * has one already (the first entry read wins). */
static void ncdetect_set_uverbs(struct ncdetect_scan *s, const char *ibdev, const char *name)
{
    for (size_t i = 0; i < s->nports; i++)
        if (strcmp(s->ports[i].dev, ibdev) == 0 && s->ports[i].uverbs[0] == '\0')
            ncdetect_copy(s->ports[i].uverbs, sizeof(s->ports[i].uverbs), name);
}

/* class/infiniband_verbs/uverbsN/ibdev: the device of each node. 0, or -1
 * when the directory cannot be listed. */
static int ncdetect_map_uverbs(struct ncdetect_scan *s, const char *sysroot)
{
    char dir[PATH_MAX], path[PATH_MAX], ibdev[NCDETECT_ATTR_MAX + 1];
    struct dirent *e;
    size_t seen = 0;
    DIR *d;

    if (ncdetect_path(dir, sizeof(dir), "%s/class/infiniband_verbs", sysroot) ||
        (d = opendir(dir)) == NULL) {
        ncdetect_note(&s->notes,
                      "cannot list %s/class/infiniband_verbs: %s: which devices this container "
                      "can open is not known, all are taken",
                      sysroot, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (++seen > NCDETECT_MAX_DIR_ENTRIES) {
            ncdetect_note(&s->notes, "only the first %d entries of %s read",
                          NCDETECT_MAX_DIR_ENTRIES, dir);
            break;
        }
        if (ncdetect_uverbs_name(e->d_name) &&
            ncdetect_path(path, sizeof(path), "%s/%s/ibdev", dir, e->d_name) == ERR_OK &&
            ncdetect_attr(path, ibdev, NULL, 0) == ERR_OK)
            ncdetect_set_uverbs(s, ibdev, e->d_name);
    }
    closedir(d);
    return 0;
}

/* Opens devdir/uverbsN as rdma-core does (read-write): 0, or the errno. */
static int ncdetect_open_node(const char *devdir, const char *uverbs)
{
    char path[PATH_MAX];
    int fd;

    if (ncdetect_path(path, sizeof(path), "%s/%s", devdir, uverbs))
        return ENAMETOOLONG;
    if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
        return errno;
    close(fd);
    return 0;
}

/* Each device's node: opened, or why not, one note per device left out. */
static void ncdetect_check_nodes(struct ncdetect_scan *s, const char *devdir)
{
    for (size_t i = 0, j; i < s->nports; i = j) {
        struct ncdetect_port *p = &s->ports[i];
        enum ncdetect_node node = NCDETECT_NODE_NO_UVERBS;
        int e = 0;

        if (p->uverbs[0])
            node = (e = ncdetect_open_node(devdir, p->uverbs)) == 0 ? NCDETECT_NODE_OPENS
                   : e == EACCES                                    ? NCDETECT_NODE_NO_ACCESS
                                                                    : NCDETECT_NODE_CANNOT_OPEN;
        for (j = i; j < s->nports && strcmp(s->ports[j].dev, p->dev) == 0; j++) {
            s->ports[j].node = node;
            s->ports[j].open_errno = e;
        }
        if (node == NCDETECT_NODE_NO_UVERBS)
            ncdetect_note(&s->notes, "%s: left out: sysfs shows no uverbs device for it", p->dev);
        else if (node == NCDETECT_NODE_CANNOT_OPEN)
            ncdetect_note(&s->notes,
                          "%s: left out: sysfs shows it, but %s/%s does not open (%s): the "
                          "container was not given it",
                          p->dev, devdir, p->uverbs, strerror(e));
        else if (node == NCDETECT_NODE_NO_ACCESS)
            ncdetect_note(&s->notes,
                          "%s: kept: %s/%s is there but its mode keeps this user out (%s); the "
                          "training container may run as another user",
                          p->dev, devdir, p->uverbs, strerror(e));
    }
}

static void ncdetect_scan_nodes(struct ncdetect_scan *s, const char *sysroot, const char *devroot)
{
    char devdir[PATH_MAX];
    struct stat st;

    if (devroot == NULL)
        return;
    if (ncdetect_path(devdir, sizeof(devdir), "%s/infiniband", devroot)) {
        ncdetect_note(&s->notes, "--dev-root %s: path too long", devroot);
        return;
    }
    if (stat(devdir, &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            ncdetect_note(&s->notes, "cannot read %s: %s: all devices are taken", devdir,
                          strerror(errno));
            return;
        }
        s->devroot = NCDETECT_DEVROOT_ABSENT;
        ncdetect_note(&s->notes, "no RDMA device given to this container: %s does not exist",
                      devdir);
        return;
    }
    if (s->nports == 0 || ncdetect_map_uverbs(s, sysroot) != 0)
        return;
    s->devroot = NCDETECT_DEVROOT_CHECKED;
    ncdetect_check_nodes(s, devdir);
}

/* value, the RDMA device of SRIOVNETWORK_<device>_RDMA_DEVICE, once. */
static void ncdetect_add_dra(struct ncdetect_scan *s, const char *var, const char *value)
{
    for (size_t i = 0; i < s->ndra; i++)
        if (strcmp(s->dra[i], value) == 0)
            return;
    if (!ncdetect_dev_name(value)) {
        /* The name only, and only when it is plain: the value may hold
         * anything, a newline that would forge a log line too. */
        size_t n = strspn(var, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

        ncdetect_note(&s->notes, "DRA: %.*s names no device NCCL_IB_HCA can hold: not used",
                      var[n] == '=' && n < NCDETECT_ATTR_MAX ? (int)n : 0, var);
        return;
    }
    if (s->ndra == NCDETECT_MAX_DRA) {
        ncdetect_note(&s->notes, "DRA: %s and later devices not used: %d at most", value,
                      NCDETECT_MAX_DRA);
        return;
    }
    ncdetect_copy(s->dra[s->ndra++], sizeof(s->dra[0]), value);
}

/* dra-driver-sriov's CDI variables (see ncdetect.h), each NAME=VALUE. */
static void ncdetect_scan_dra(struct ncdetect_scan *s, char *const *env)
{
    static const char prefix[] = "SRIOVNETWORK_", suffix[] = "_RDMA_DEVICE=";
    const size_t np = sizeof(prefix) - 1, ns = sizeof(suffix) - 1;

    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        size_t n;

        if (strncmp(env[i], prefix, np) != 0 || eq == NULL)
            continue;
        n = (size_t)(eq - env[i]) + 1; /* the name and its '=' */
        if (n > np + ns && memcmp(eq + 1 - ns, suffix, ns) == 0)
            ncdetect_add_dra(s, env[i], eq + 1);
    }
    for (size_t i = 0; i < s->ndra; i++) {
        size_t k = 0;

        while (k < s->nports && strcmp(s->ports[k].dev, s->dra[i]) != 0)
            k++;
        if (k == s->nports)
            ncdetect_note(&s->notes, "DRA allocated %s, but sysfs does not show it", s->dra[i]);
    }
}

/* Reads a procfs file into a new buffer of at most cap bytes, whole lines
 * only; NULL (noted) when it cannot be read at all. *complete: not cut. */
static char *ncdetect_read_proc(struct ncdetect_scan *s, const char *path, size_t cap,
                                int *complete)
{
    char *buf = malloc(cap + 1), err[ERR_LEN] = "";
    size_t len;
    int rc;

    *complete = 0;
    if (buf == NULL) {
        ncdetect_note(&s->notes, "out of memory reading %s", path);
        return NULL;
    }
    rc = fsutil_read_small(path, buf, cap + 1, &len, err, sizeof(err));
    if (rc == ERR_TOO_BIG) {
        char *nl = strrchr(buf, '\n');

        ncdetect_note(&s->notes, "%s: only its first %zu KiB read", path, cap >> 10);
        *(nl ? nl + 1 : buf) = '\0';
        return buf;
    }
    if (rc != ERR_OK) {
        ncdetect_note(&s->notes, "%s", err);
        free(buf);
        return NULL;
    }
    *complete = 1;
    return buf;
}

/* The lowest-metric IPv4 route to 0.0.0.0/0 that is up. */
static void ncdetect_scan_route(struct ncdetect_scan *s, const char *procroot)
{
    char path[PATH_MAX], *buf, *line, *next;
    unsigned long best = ULONG_MAX;
    int complete;

    if (ncdetect_path(path, sizeof(path), "%s/net/route", procroot) ||
        (buf = ncdetect_read_proc(s, path, NCDETECT_ROUTE_MAX, &complete)) == NULL)
        return;
    line = strchr(buf, '\n'); /* the header */
    for (line = line ? line + 1 : NULL; line && *line; line = next) {
        char ifname[NCDETECT_IFNAME_MAX];
        unsigned long dest, gw, flags, metric, mask;

        if ((next = strchr(line, '\n')) != NULL)
            *next++ = '\0';
        if (sscanf(line, "%15s %lx %lx %lx %*s %*s %lu %lx", ifname, &dest, &gw, &flags, &metric,
                   &mask) != 6)
            continue;
        if (dest == 0 && mask == 0 && (flags & NCDETECT_RTF_UP) && metric < best &&
            ncdetect_plain_name(ifname, sizeof(ifname))) {
            best = metric;
            ncdetect_copy(s->default_ifname, sizeof(s->default_ifname), ifname);
        }
    }
    if (s->default_ifname[0] == '\0')
        ncdetect_note(&s->notes, "no IPv4 default route in %s", path);
    free(buf);
}

static void ncdetect_add_local(struct ncdetect_scan *s, const unsigned char a[4])
{
    for (size_t i = 0; i < s->nlocals; i++)
        if (memcmp(s->locals[i], a, 4) == 0)
            return;
    if (s->nlocals == NCDETECT_MAX_LOCAL_ADDRS) {
        s->locals_complete = 0;
        return;
    }
    memcpy(s->locals[s->nlocals++], a, 4);
}

/* fib_trie lists each address of this network namespace as a leaf
 * "|-- a.b.c.d" followed by "/32 host LOCAL". */
static void ncdetect_scan_locals(struct ncdetect_scan *s, const char *procroot)
{
    char path[PATH_MAX], *buf, *line, *next;
    unsigned char last[4];
    int have_last = 0;

    if (ncdetect_path(path, sizeof(path), "%s/net/fib_trie", procroot) ||
        (buf = ncdetect_read_proc(s, path, NCDETECT_FIB_MAX, &s->locals_complete)) == NULL)
        goto out;
    if ((s->locals = calloc(NCDETECT_MAX_LOCAL_ADDRS, sizeof(s->locals[0]))) == NULL) {
        s->locals_complete = 0;
        free(buf);
        goto out;
    }
    for (line = buf; line && *line; line = next) {
        char addr[INET_ADDRSTRLEN];

        if ((next = strchr(line, '\n')) != NULL)
            *next++ = '\0';
        line += strspn(line, " \t");
        if (strncmp(line, "|-- ", 4) == 0) {
            have_last = sscanf(line + 4, "%15s", addr) == 1 && inet_pton(AF_INET, addr, last) == 1;
        } else if (strncmp(line, "/32 host LOCAL", 14) == 0 && have_last) {
            ncdetect_add_local(s, last);
        } else if (strncmp(line, "+-- ", 4) == 0) {
            have_last = 0;
        }
    }
    free(buf);
out:
    if (!s->locals_complete)
        ncdetect_note(&s->notes, "the pod's IPv4 addresses are not all known: a GID counts as "
                                 "the pod's by its netdev's name alone");
}

void ncdetect_scan_init(struct ncdetect_scan *s)
{
    memset(s, 0, sizeof(*s));
    dynbuf_init(&s->notes, NCDETECT_NOTES_MAX);
}

int ncdetect_scan(struct ncdetect_scan *s, const struct ncdetect_roots *r)
{
    int rc = ncdetect_scan_devices(s, r->sys);

    if (rc == ERR_NOMEM)
        ncdetect_note(&s->notes, "out of memory reading the RDMA devices");
    ncdetect_scan_nodes(s, r->sys, r->dev);
    ncdetect_scan_dra(s, r->env);
    ncdetect_scan_route(s, r->proc);
    ncdetect_scan_locals(s, r->proc);
    return rc;
}

void ncdetect_scan_free(struct ncdetect_scan *s)
{
    for (size_t i = 0; i < s->nports; i++)
        free(s->ports[i].gids);
    free(s->ports);
    free(s->locals);
    dynbuf_free(&s->notes);
    ncdetect_scan_init(s);
}

/* ---- the choice ---- */

static int ncdetect_is_local(const struct ncdetect_scan *s, const unsigned char gid[16])
{
    for (size_t i = 0; i < s->nlocals; i++)
        if (memcmp(s->locals[i], gid + 12, 4) == 0)
            return 1;
    return !s->locals_complete;
}

/* This pod's RoCE v2 IPv4 GID on p: its netdev is in this network namespace
 * (or cannot be told) and its address is one of the pod's (or cannot be
 * told). A shared GID table also holds other pods' GIDs, often on netdevs of
 * the same name (eth1), so the address decides. The lowest index wins. */
static const struct ncdetect_gid *ncdetect_own_v2(const struct ncdetect_scan *s,
                                                  const struct ncdetect_port *p)
{
    for (size_t i = 0; i < p->ngids; i++) {
        const struct ncdetect_gid *g = &p->gids[i];

        if (g->type == NCDETECT_GID_V2 && ncdetect_is_ipv4(g->gid) && g->ndev_here != 0 &&
            ncdetect_is_local(s, g->gid))
            return g;
    }
    return NULL;
}

/* The port's netdev: that of its own RoCE v2 IPv4 GID, else the first GID's
 * whose netdev is in this namespace; "" when none is. */
static const char *ncdetect_port_netdev(const struct ncdetect_port *p,
                                        const struct ncdetect_gid *own)
{
    if (own && own->ndev[0])
        return own->ndev;
    for (size_t i = 0; i < p->ngids; i++)
        if (p->gids[i].ndev_here == 1)
            return p->gids[i].ndev;
    return "";
}

static int ncdetect_is_dra(const struct ncdetect_scan *s, const char *dev)
{
    for (size_t i = 0; i < s->ndra; i++)
        if (strcmp(s->dra[i], dev) == 0)
            return 1;
    return 0;
}

static enum ncdetect_verdict ncdetect_judge(const struct ncdetect_scan *s,
                                            const struct ncdetect_port *p,
                                            const struct ncdetect_opts *o, const char *netdev)
{
    if (s->devroot == NCDETECT_DEVROOT_ABSENT || p->node == NCDETECT_NODE_NO_UVERBS ||
        p->node == NCDETECT_NODE_CANNOT_OPEN)
        return NCDETECT_NO_NODE;
    if (s->ndra > 0 && !ncdetect_is_dra(s, p->dev))
        return NCDETECT_NOT_ALLOCATED;
    if (p->state < 0 || p->link == NCDETECT_LINK_UNKNOWN)
        return NCDETECT_UNREADABLE;
    if (p->state != NCDETECT_STATE_ACTIVE)
        return NCDETECT_DOWN;
    if (s->default_ifname[0] && strcmp(netdev, s->default_ifname) == 0)
        return NCDETECT_DEFAULT_ROUTE;
    /* Last, so that NOT_IN_HCA means usable here: what the mismatch line
     * calls found. */
    if (o->hca && !nccl_hca_matches(o->hca, p->dev, p->port))
        return NCDETECT_NOT_IN_HCA;
    return NCDETECT_SELECTED;
}

/* Sets hca to prefix and the ports in the set (selected or not) as NCCL
 * names them: "dev" when every port of the device is in it (and was read),
 * "dev:port" for each one otherwise (a port not listed could come up later,
 * and NCCL takes every active port of a device named without one). Then 1
 * when NCCL reads the value whole: at most NCDETECT_NCCL_HCA_MAX entries
 * (NCCL's src/transport/net_ib.cc parses MAX_IB_DEVS of them) and
 * NCDETECT_NCCL_VALUE_MAX bytes (src/misc/param.cc, setEnvFile, keeps 1023
 * bytes of a value); 0 when not (or past hca's cap); or ERR_NOMEM. */
static int ncdetect_list_ports(const struct ncdetect_scan *s, const struct ncdetect_choice *c,
                               const char *prefix, int selected, struct dynbuf *hca)
{
    size_t entries = 0;
    int rc;

    dynbuf_truncate(hca, 0);
    rc = dynbuf_addstr(hca, prefix);
    for (size_t i = 0; i < s->nports && rc == ERR_OK;) {
        size_t j = i, in = 0;

        while (j < s->nports && strcmp(s->ports[j].dev, s->ports[i].dev) == 0)
            in += (c->verdict[j++] == NCDETECT_SELECTED) == selected;
        for (size_t k = i; k < j && rc == ERR_OK; k++) {
            int whole = in == j - i && !s->ports[k].dev_partial;

            if ((c->verdict[k] == NCDETECT_SELECTED) != selected || (whole && k > i))
                continue;
            rc = dynbuf_printf(hca, entries++ ? ",%s" : "%s", s->ports[k].dev);
            if (rc == ERR_OK && !whole)
                rc = dynbuf_printf(hca, ":%u", s->ports[k].port);
        }
        i = j;
    }
    if (rc != ERR_OK)
        return rc == ERR_TOO_BIG ? 0 : rc;
    return entries <= NCDETECT_NCCL_HCA_MAX && dynbuf_len(hca) <= NCDETECT_NCCL_VALUE_MAX;
}

/* "=" and the selected ports, as many as NCCL reads: it opens at most
 * NCDETECT_NCCL_HCA_MAX ports, and the value must fit; the last selected
 * ones give way (NCDETECT_PAST_LIMIT) until it does. */
static int ncdetect_choose_included(struct ncdetect_choice *c, const struct ncdetect_scan *s,
                                    size_t nselected)
{
    size_t kept = 0, over = 0;
    int fits;

    for (size_t i = 0; i < s->nports; i++)
        if (c->verdict[i] == NCDETECT_SELECTED && ++kept > NCDETECT_NCCL_HCA_MAX) {
            c->verdict[i] = NCDETECT_PAST_LIMIT;
            over++;
        }
    /* One port always fits: the loop ends with one selected at least. */
    while ((fits = ncdetect_list_ports(s, c, "=", 1, &c->hca)) == 0) {
        size_t i = s->nports;

        while (c->verdict[--i] != NCDETECT_SELECTED)
            ;
        c->verdict[i] = NCDETECT_PAST_LIMIT;
        over++;
    }
    if (fits < 0)
        return fits;
    nselected -= over;
    if (over == 0)
        ncdetect_note(&c->notes, "NCCL_IB_HCA=%s: the %zu selected port%s", dynbuf_ptr(&c->hca),
                      nselected, nselected == 1 ? "" : "s");
    else
        ncdetect_note(&c->notes,
                      "NCCL_IB_HCA=%s: the %zu selected port%s, and %zu more left out: NCCL "
                      "reads at most %d ports and %d bytes of NCCL_IB_HCA",
                      dynbuf_ptr(&c->hca), nselected, nselected == 1 ? "" : "s", over,
                      NCDETECT_NCCL_HCA_MAX, NCDETECT_NCCL_VALUE_MAX);
    return ERR_OK;
}

static int ncdetect_choose_hca(struct ncdetect_choice *c, const struct ncdetect_scan *s,
                               size_t nselected)
{
    int fits;

    if (nselected > 0)
        return ncdetect_choose_included(c, s, nselected);
    if (s->nports == 0) {
        ncdetect_note(&c->notes, "no NCCL_IB_HCA: no RDMA port found");
        return ERR_OK;
    }
    if (s->devroot == NCDETECT_DEVROOT_ABSENT) {
        ncdetect_note(&c->notes, "no NCCL_IB_HCA: this container has no /dev/infiniband, so NCCL "
                                 "can open no RDMA device and uses sockets");
        return ERR_OK;
    }
    /* Without a list NCCL would take every active port, those left out too. */
    if ((fits = ncdetect_list_ports(s, c, "^=", 0, &c->hca)) < 0)
        return fits;
    if (fits && !s->incomplete) {
        ncdetect_note(&c->notes,
                      "NCCL_IB_HCA=%s: no port selected, so NCCL keeps off all of them and uses "
                      "sockets",
                      dynbuf_ptr(&c->hca));
        return ERR_OK;
    }
    /* NCCL would take a port the list leaves out: sockets, said outright. */
    ncdetect_note(&c->notes, "no NCCL_IB_HCA: no port selected, and %s",
                  s->incomplete ? "a list of the ports read would not keep NCCL off those not "
                                  "read"
                                : "the list of all of them is longer than NCCL reads");
    dynbuf_truncate(&c->hca, 0);
    c->net_socket = 1;
    ncdetect_note(&c->notes, "NCCL_NET=Socket: NCCL uses sockets, none of the RDMA ports");
    return ERR_OK;
}

/* ---- one list for the whole job ---- */

/* Whether a selected port satisfies entry (n bytes: "dev" or "dev:port"). */
static int ncdetect_entry_met(const struct ncdetect_scan *s, const struct ncdetect_choice *c,
                              const char *entry, size_t n)
{
    const char *colon = memchr(entry, ':', n);
    size_t dn = colon ? (size_t)(colon - entry) : n;
    unsigned long port = colon ? strtoul(colon + 1, NULL, 10) : 0;

    for (size_t i = 0; i < s->nports; i++)
        if (c->verdict[i] == NCDETECT_SELECTED && strlen(s->ports[i].dev) == dn &&
            memcmp(s->ports[i].dev, entry, dn) == 0 && (!colon || port == s->ports[i].port))
            return 1;
    return 0;
}

/* The entries of the exact list hca ("=a,b:1"), as NCCL reads them (empty
 * ones skipped, the first NCDETECT_NCCL_HCA_MAX), met or not: a JSON array
 * of those with met == want (want < 0: all). Returns how many. */
static size_t ncdetect_json_entries(struct jsonw *w, const struct ncdetect_scan *s,
                                    const struct ncdetect_choice *c, const char *hca, int want)
{
    size_t count = 0, seen = 0;

    jsonw_raw(w, "[");
    for (const char *e = hca + 1; *e && seen < NCDETECT_NCCL_HCA_MAX;) {
        size_t n = strcspn(e, ",");

        if (n > 0 && (seen++, want < 0 || ncdetect_entry_met(s, c, e, n) == want)) {
            jsonw_raw(w, count++ ? "," : "");
            jsonw_strn(w, e, n);
        }
        e += n + (e[n] == ',');
    }
    jsonw_raw(w, "]");
    return count;
}

/* The devices with a port usable here, whether the list names them or not:
 * a JSON array, each device once. */
static void ncdetect_json_found(struct jsonw *w, const struct ncdetect_scan *s,
                                const struct ncdetect_choice *c)
{
    const char *last = NULL;
    size_t count = 0;

    jsonw_raw(w, "[");
    for (size_t i = 0; i < s->nports; i++) {
        if (c->verdict[i] != NCDETECT_SELECTED && c->verdict[i] != NCDETECT_NOT_IN_HCA)
            continue;
        if (last && strcmp(last, s->ports[i].dev) == 0)
            continue;
        jsonw_raw(w, count++ ? "," : "");
        jsonw_str(w, last = s->ports[i].dev);
    }
    jsonw_raw(w, "]");
}

/* With an exact --hca list, the entries no selected port meets: the
 * mismatch line (see ncdetect.h), or a note that the list is whole here. */
static int ncdetect_check_expected(struct ncdetect_choice *c, const struct ncdetect_scan *s,
                                   const struct ncdetect_opts *o)
{
    struct jsonw w;
    size_t missing;

    if (!o->hca || o->hca[0] != '=')
        return ERR_OK;
    jsonw_init(&w, &c->mismatch_json);
    jsonw_raw(&w, "{\"event\":\"nccl-detect-hca-mismatch\",\"node\":");
    if (o->node)
        jsonw_strn(&w, o->node, strnlen(o->node, NCDETECT_NODE_MAX));
    else
        jsonw_raw(&w, "null");
    jsonw_raw(&w, ",\"expected\":");
    ncdetect_json_entries(&w, s, c, o->hca, -1);
    jsonw_raw(&w, ",\"found\":");
    ncdetect_json_found(&w, s, c);
    jsonw_raw(&w, ",\"missing\":");
    missing = ncdetect_json_entries(&w, s, c, o->hca, 0);
    jsonw_raw(&w, ",\"written\":");
    jsonw_str(&w, dynbuf_ptr(&c->hca));
    jsonw_raw(&w, "}");
    if (missing == 0) {
        dynbuf_truncate(&c->mismatch_json, 0);
        ncdetect_note(&c->notes, "the job's list %s: every entry has a usable port here", o->hca);
        return ERR_OK;
    }
    c->mismatch = 1;
    ncdetect_note(&c->notes,
                  "the job's list %s: %zu entr%s without a usable port here; NCCL_IB_HCA holds "
                  "the usable part, and other nodes may differ (see the JSON line)",
                  o->hca, missing, missing == 1 ? "y" : "ies");
    return jsonw_error(&w) == ERR_NOMEM ? ERR_NOMEM : ERR_OK;
}

/* NCCL_IB_GID_INDEX left out of a file with RoCE ports: what the file relies
 * on, and each selected RoCE port's own index (none: "-"), as one note. */
static void ncdetect_note_per_device(struct ncdetect_choice *c, const struct ncdetect_scan *s)
{
    char line[NCDETECT_NCCL_HCA_MAX * (NCDETECT_DEVNAME_MAX + 16)];
    size_t o = 0;

    line[0] = '\0';
    for (size_t i = 0; i < s->nports && o < sizeof(line); i++) {
        int n;

        if (c->verdict[i] != NCDETECT_SELECTED || s->ports[i].link != NCDETECT_LINK_ETHERNET)
            continue;
        n = c->gid[i] >= 0 ? snprintf(line + o, sizeof(line) - o, "%s%s:%u %d", o ? ", " : "",
                                      s->ports[i].dev, s->ports[i].port, c->gid[i])
                           : snprintf(line + o, sizeof(line) - o, "%s%s:%u -", o ? ", " : "",
                                      s->ports[i].dev, s->ports[i].port);
        o += n > 0 ? (size_t)n : 0;
    }
    ncdetect_note(&c->notes,
                  "NCCL behaviour relied on: NCCL 2.21+, which with NCCL_IB_GID_INDEX unset picks "
                  "each device's RoCE v2 IPv4 GID itself (here %s); NCCL before 2.21 uses GID 0 "
                  "on every device",
                  line);
}

/* Why NCCL_IB_GID_INDEX is left out, or the index every selected RoCE port
 * has. */
static void ncdetect_choose_gid(struct ncdetect_choice *c, const struct ncdetect_scan *s)
{
    size_t roce = 0, ib = 0, missing = 0, other = 0;
    size_t first_missing = 0, first_index = 0, first_other = 0;
    int index = -1;

    for (size_t i = 0; i < s->nports; i++) {
        if (c->verdict[i] != NCDETECT_SELECTED)
            continue;
        if (s->ports[i].link == NCDETECT_LINK_INFINIBAND) {
            ib++;
            continue;
        }
        roce++;
        if (c->gid[i] < 0) {
            if (missing++ == 0)
                first_missing = i;
        } else if (index < 0) {
            index = c->gid[i];
            first_index = i;
        } else if (c->gid[i] != index && other++ == 0) {
            first_other = i;
        }
    }
    if (roce == 0) {
        if (ib > 0)
            ncdetect_note(&c->notes, "no NCCL_IB_GID_INDEX: InfiniBand needs none");
        return;
    }
    if (ib > 0) {
        ncdetect_note(&c->notes, "no NCCL_IB_GID_INDEX: the selected ports mix RoCE and "
                                 "InfiniBand; NCCL 2.21+ picks the GID per device itself");
        ncdetect_note_per_device(c, s);
        return;
    }
    if (missing > 0) {
        ncdetect_note(&c->notes,
                      "no NCCL_IB_GID_INDEX: %s port %u has no RoCE v2 GID with an IPv4 address "
                      "of this pod; NCCL 2.21+ picks the GID per device itself",
                      s->ports[first_missing].dev, s->ports[first_missing].port);
        ncdetect_note_per_device(c, s);
        return;
    }
    if (other > 0) {
        ncdetect_note(&c->notes,
                      "no NCCL_IB_GID_INDEX: the RoCE v2 IPv4 GID is %d on %s port %u but %d on "
                      "%s port %u; NCCL 2.21+ picks the GID per device itself",
                      index, s->ports[first_index].dev, s->ports[first_index].port,
                      c->gid[first_other], s->ports[first_other].dev, s->ports[first_other].port);
        ncdetect_note_per_device(c, s);
        return;
    }
    c->gid_index = index;
    ncdetect_note(&c->notes,
                  "NCCL_IB_GID_INDEX=%d: the RoCE v2 IPv4 GID of every selected port (NCCL "
                  "behaviour relied on: none, every NCCL version reads it)",
                  index);
}

static void ncdetect_choose_socket(struct ncdetect_choice *c, const struct ncdetect_scan *s,
                                   const struct ncdetect_opts *o)
{
    if (o->socket_ifname) {
        ncdetect_copy(c->socket_ifname, sizeof(c->socket_ifname), o->socket_ifname);
        ncdetect_note(&c->notes, "NCCL_SOCKET_IFNAME=%s: the profile's", c->socket_ifname);
    } else if (s->default_ifname[0]) {
        snprintf(c->socket_ifname, sizeof(c->socket_ifname), "=%s", s->default_ifname);
        ncdetect_note(&c->notes, "NCCL_SOCKET_IFNAME=%s: the default route's interface",
                      c->socket_ifname);
    } else {
        ncdetect_note(&c->notes, "no NCCL_SOCKET_IFNAME: no IPv4 default route, NCCL picks");
    }
}

void ncdetect_choice_init(struct ncdetect_choice *c)
{
    memset(c, 0, sizeof(*c));
    c->gid_index = -1;
    /* The longest list: every port as "dev:port,". */
    dynbuf_init(&c->hca, NCDETECT_MAX_PORTS * (NCDETECT_DEVNAME_MAX + 5) + 2);
    dynbuf_init(&c->notes, NCDETECT_NOTES_MAX);
    dynbuf_init(&c->mismatch_json, NCDETECT_MISMATCH_MAX);
}

int ncdetect_choose(struct ncdetect_choice *c, const struct ncdetect_scan *s,
                    const struct ncdetect_opts *o)
{
    size_t nselected = 0;
    int rc;

    if (s->nports > 0) {
        c->verdict = calloc(s->nports, sizeof(c->verdict[0]));
        c->gid = calloc(s->nports, sizeof(c->gid[0]));
        if (c->verdict == NULL || c->gid == NULL)
            return ERR_NOMEM;
    }
    for (size_t i = 0; i < s->nports; i++) {
        const struct ncdetect_port *p = &s->ports[i];
        const struct ncdetect_gid *own =
            p->link == NCDETECT_LINK_ETHERNET ? ncdetect_own_v2(s, p) : NULL;

        c->gid[i] = own ? (int)own->index : -1;
        c->verdict[i] = ncdetect_judge(s, p, o, ncdetect_port_netdev(p, own));
        nselected += c->verdict[i] == NCDETECT_SELECTED;
    }
    /* The notes come in the file's order. */
    rc = ncdetect_choose_hca(c, s, nselected);
    if (rc == ERR_OK)
        rc = ncdetect_check_expected(c, s, o);
    ncdetect_choose_gid(c, s);
    ncdetect_choose_socket(c, s, o);
    return rc;
}

void ncdetect_choice_free(struct ncdetect_choice *c)
{
    free(c->verdict);
    free(c->gid);
    dynbuf_free(&c->hca);
    dynbuf_free(&c->notes);
    dynbuf_free(&c->mismatch_json);
    ncdetect_choice_init(c);
}

/* ---- the file and the log ---- */

int ncdetect_format(const struct ncdetect_choice *c, struct dynbuf *out)
{
    int rc = ERR_OK;

    if (dynbuf_len(&c->hca))
        rc = dynbuf_printf(out, "NCCL_IB_HCA=%s\n", dynbuf_ptr(&c->hca));
    else if (c->net_socket)
        rc = dynbuf_addstr(out, "NCCL_NET=Socket\n");
    if (rc == ERR_OK && c->gid_index >= 0)
        rc = dynbuf_printf(out, "NCCL_IB_GID_INDEX=%d\n", c->gid_index);
    if (rc == ERR_OK && c->socket_ifname[0])
        rc = dynbuf_printf(out, "NCCL_SOCKET_IFNAME=%s\n", c->socket_ifname);
    return rc;
}

static const char *ncdetect_state_name(int state)
{
    static const char *const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

    return state >= 0 && state < (int)(sizeof(names) / sizeof(names[0])) ? names[state] : "?";
}

static const char *ncdetect_verdict_text(enum ncdetect_verdict v)
{
    switch (v) {
    case NCDETECT_SELECTED: return "selected";
    case NCDETECT_DOWN: return "left out: not ACTIVE";
    case NCDETECT_UNREADABLE: return "left out: its state or link layer could not be read";
    case NCDETECT_NOT_IN_HCA: return "left out: not in --hca";
    case NCDETECT_DEFAULT_ROUTE: return "left out: its netdev carries the default route";
    case NCDETECT_PAST_LIMIT: return "left out: past what NCCL reads of NCCL_IB_HCA";
    case NCDETECT_NO_NODE: return "left out: this container cannot open the device";
    case NCDETECT_NOT_ALLOCATED: return "left out: DRA allocated other devices";
    }
    return "?";
}

static int ncdetect_report_port(const struct ncdetect_scan *s, const struct ncdetect_choice *c,
                                size_t i, struct dynbuf *out)
{
    const struct ncdetect_port *p = &s->ports[i];
    const struct ncdetect_gid *own = NULL;
    const char *netdev;
    int rc;

    for (size_t k = 0; k < p->ngids && c->gid[i] >= 0; k++)
        if (p->gids[k].index == (unsigned)c->gid[i])
            own = &p->gids[k];
    netdev = ncdetect_port_netdev(p, own);
    rc = dynbuf_printf(out, "%s port %u: %s, %s, %zu GID%s", p->dev, p->port,
                       p->state < 0 ? "state unknown" : ncdetect_state_name(p->state),
                       p->link == NCDETECT_LINK_ETHERNET     ? "RoCE"
                       : p->link == NCDETECT_LINK_INFINIBAND ? "InfiniBand"
                                                             : "link layer unknown",
                       p->ngids, p->ngids == 1 ? "" : "s");
    if (rc == ERR_OK && netdev[0])
        rc = dynbuf_printf(out, ", netdev %s", netdev);
    if (rc == ERR_OK && own)
        rc = dynbuf_printf(out, ", RoCE v2 IPv4 GID %u (%u.%u.%u.%u)", own->index, own->gid[12],
                           own->gid[13], own->gid[14], own->gid[15]);
    if (rc == ERR_OK)
        rc = dynbuf_printf(out, ": %s\n", ncdetect_verdict_text(c->verdict[i]));
    return rc;
}

int ncdetect_report(const struct ncdetect_scan *s, const struct ncdetect_choice *c,
                    struct dynbuf *out)
{
    int rc = dynbuf_addstr(out, dynbuf_ptr(&s->notes));

    if (rc == ERR_OK)
        rc = s->default_ifname[0] ? dynbuf_printf(out, "default route: %s\n", s->default_ifname)
                                  : ERR_OK;
    for (size_t i = 0; i < s->nports && rc == ERR_OK && c->verdict; i++)
        rc = ncdetect_report_port(s, c, i, out);
    if (rc == ERR_OK)
        rc = dynbuf_addstr(out, dynbuf_ptr(&c->notes));
    return rc;
}
