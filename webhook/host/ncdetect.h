/* ncdetect: the RDMA set-up a container sees, and the NCCL configuration that
 * follows from it (`rdma-webhook nccl-detect`, run as an init container).
 *
 * Three steps, each testable alone:
 * - ncdetect_scan reads, under a sysfs root, a procfs root and a /dev root
 *   (struct ncdetect_roots), and from the environment, every
 *   class/infiniband/DEV/ports/N (state, link_layer, gids/I,
 *   gid_attrs/types/I, gid_attrs/ndevs/I), whether each GID's netdev is in
 *   class/net (this network namespace), the IPv4 default route from
 *   net/route and the local IPv4 addresses from net/fib_trie; which devices
 *   the container can open (class/infiniband_verbs/uverbsN/ibdev names the
 *   device of DEV/infiniband/uverbsN, which must open read-write, as
 *   rdma-core opens it); and the devices DRA allocated (below), into a
 *   struct ncdetect_scan of plain facts;
 * - ncdetect_choose turns the facts and the profile's options into a struct
 *   ncdetect_choice (no I/O): which ports go into NCCL_IB_HCA, the GID index
 *   when one fits every selected port, the socket interface, and why;
 * - ncdetect_format writes the KEY=VALUE file NCCL reads (NCCL_CONF_FILE or
 *   ~/.nccl.conf), and ncdetect_report the text a person reads in the init
 *   container's log.
 *
 * The choice. A port is selected when its device's uverbs node opens (or
 * could not be checked), DRA allocated its device (when DRA allocated any),
 * its state is ACTIVE, its link layer is known, its netdev is not the
 * default route's, and --hca (NCCL's own matching) takes it. Without a
 * DEV/infiniband at all the container was given no RDMA device: no port is
 * selected and no NCCL_IB_HCA is written (NCCL finds none it can open and
 * uses sockets).
 *
 * DRA. dra-driver-sriov (k8snetworkplumbingwg/dra-driver-sriov,
 * pkg/devicestate/state.go) puts, through CDI, one variable for each RDMA
 * device it allocated into the container's environment:
 * SRIOVNETWORK_<device>_RDMA_DEVICE=<RDMA device name>, <device> being the
 * DRA device's name with '-' as '_'. Those devices are preferred: with any
 * such variable, the ports of other devices are left out
 * (NCDETECT_NOT_ALLOCATED). dranet (kubernetes-sigs/dranet) gives the
 * container the /dev/infiniband/uverbsN of its allocated devices only, and
 * moves them into the pod's network namespace: the uverbs check covers it.
 *
 * One list for the whole job. When --hca is an exact list ("=" and device
 * names, a profile's "hca"), every entry of it that no selected port
 * satisfies is missing: the file holds the list's usable part, and the
 * choice says so in one JSON line (its mismatch_json) with the node's
 * name, what was expected, found and missing, so that ranks that differ
 * are seen; the caller decides whether that ends in a non-zero exit.
 *
 * A GID is the pod's own when its netdev is in class/net and its IPv4
 * address is a local one (a shared GID table also holds other pods' GIDs,
 * on netdevs of the same name); a port's netdev is that of its own RoCE v2
 * IPv4 GID, else of its first GID whose netdev is here.
 * - NCCL_IB_HCA: "=" and the selected ports, "dev" when all of a device's
 *   ports are selected (and read) and "dev:port" for each otherwise; with
 *   none selected but some found, "^=" and all of them (NCCL would otherwise
 *   take those left out, the default route's device too); nothing without
 *   any port. Never more than NCCL reads (NCDETECT_NCCL_HCA_MAX entries and
 *   ports, NCDETECT_NCCL_VALUE_MAX bytes): the selected ports past that are
 *   left out (NCDETECT_PAST_LIMIT), and an exclusion that does not fit,
 *   or cannot name every device (a bound, a name NCCL_IB_HCA cannot hold),
 *   is NCCL_NET=Socket instead: the file always means to NCCL what the
 *   notes say.
 * - NCCL_IB_GID_INDEX: the index of the own RoCE v2 IPv4 GID when it is the
 *   same on every selected port and they are all RoCE (any NCCL reads it);
 *   else nothing, and the notes say that the file relies on NCCL 2.21+,
 *   which, with NCCL_IB_GID_INDEX unset, picks each device's RoCE v2 IPv4
 *   GID itself (older NCCL would use GID 0), and which index each device
 *   has (ncdetect_report's port lines).
 * - NCCL_SOCKET_IFNAME: opts->socket_ifname as given, else "=" and the
 *   lowest-metric IPv4 default route's interface, else nothing.
 *
 * Nothing here fails as a whole: a file that cannot be read is a note, and
 * the rest is used. Everything read is bounded: at most NCDETECT_MAX_DEVICES
 * devices, NCDETECT_MAX_PORTS ports in all, GID indexes below
 * NCDETECT_MAX_GIDS, NCDETECT_MAX_DIR_ENTRIES entries of any directory, and
 * each file read with a small cap (NCDETECT_ATTR_MAX for sysfs attributes);
 * what a bound leaves out is noted. A device whose name NCCL_IB_HCA cannot
 * hold (a blank, a control character, ',' or ':', a leading '.', '^' or '=')
 * is not read, and noted. Only ERR_NOMEM is an error (the scan is then
 * partial, and says so).
 */
#ifndef RDMA_WEBHOOK_NCDETECT_H
#define RDMA_WEBHOOK_NCDETECT_H

#include "base/dynbuf.h"

#include <stddef.h>

#define NCDETECT_MAX_DEVICES     64
#define NCDETECT_MAX_PORTS       64   /* all devices together */
#define NCDETECT_MAX_DEV_PORTS   8    /* one device */
#define NCDETECT_MAX_GIDS        256  /* indexes 0..255 of each port's table */
#define NCDETECT_MAX_DIR_ENTRIES 4096 /* entries read from one directory */
#define NCDETECT_MAX_LOCAL_ADDRS 256
#define NCDETECT_ATTR_MAX        256          /* a sysfs attribute's bytes */
#define NCDETECT_ROUTE_MAX       (64u << 10)  /* net/route */
#define NCDETECT_FIB_MAX         (256u << 10) /* net/fib_trie */
#define NCDETECT_NOTES_MAX       (64u << 10)
#define NCDETECT_DEVNAME_MAX     64  /* IB_DEVICE_NAME_MAX, with the NUL */
#define NCDETECT_IFNAME_MAX      16  /* IFNAMSIZ, with the NUL */
#define NCDETECT_SOCKET_MAX      255 /* bytes of --socket-ifname */
/* What NCCL reads of NCCL_IB_HCA: its MAX_IB_DEVS (32) entries, and as many
 * ports it opens; and of any value in its configuration file, 1023 bytes. */
#define NCDETECT_NCCL_HCA_MAX   32
#define NCDETECT_NCCL_VALUE_MAX 1023

enum ncdetect_link {
    NCDETECT_LINK_UNKNOWN = 0, /* link_layer unreadable or another word */
    NCDETECT_LINK_ETHERNET,    /* RoCE */
    NCDETECT_LINK_INFINIBAND,
};

enum ncdetect_gid_type {
    NCDETECT_GID_UNKNOWN = 0, /* types/I unreadable or another word */
    NCDETECT_GID_V1,          /* "IB/RoCE v1" */
    NCDETECT_GID_V2,          /* "RoCE v2" */
};

/* Whether the container can open a device's uverbs node. */
enum ncdetect_node {
    NCDETECT_NODE_UNCHECKED = 0, /* not known: every device counts as usable */
    NCDETECT_NODE_OPENS,         /* DEV/infiniband/uverbsN opened read-write */
    NCDETECT_NODE_NO_UVERBS,     /* class/infiniband_verbs names no uverbsN for it */
    NCDETECT_NODE_CANNOT_OPEN,   /* its uverbsN did not open (open_errno) */
    /* EACCES: the node is there, and the device cgroup lets it be opened
     * (that is EPERM), but its mode keeps this init container's user
     * (65532) out while the training container may run as root: usable. */
    NCDETECT_NODE_NO_ACCESS,
};

/* What DEV/infiniband says of the container's devices. */
enum ncdetect_devroot {
    NCDETECT_DEVROOT_UNCHECKED = 0, /* no --dev-root, or it could not be read */
    NCDETECT_DEVROOT_ABSENT,        /* no DEV/infiniband: no RDMA device given */
    NCDETECT_DEVROOT_CHECKED,       /* each device's node is known (ports' node) */
};

#define NCDETECT_MAX_DRA  32  /* DRA devices kept: as many as NCCL_IB_HCA holds */
#define NCDETECT_NODE_MAX 253 /* bytes of a node's name (a DNS subdomain) */
#define NCDETECT_MISMATCH_MAX                                                                      \
    (32u << 10) /* the mismatch line */ /* DRA devices kept: as many as NCCL_IB_HCA holds */

/* One non-empty entry of a port's GID table (a zero GID is an empty slot and
 * is not kept; an entry whose gids/I cannot be read is counted, not kept). */
struct ncdetect_gid {
    unsigned index;
    unsigned char gid[16];
    enum ncdetect_gid_type type;
    char ndev[NCDETECT_IFNAME_MAX]; /* "" when ndevs/I cannot be read (InfiniBand) */
    int ndev_here;                  /* class/net/NDEV: 1 exists, 0 does not, -1 unknown */
};

struct ncdetect_port {
    char dev[NCDETECT_DEVNAME_MAX];
    unsigned port;
    int state; /* the number in "4: ACTIVE"; -1 unreadable */
    enum ncdetect_link link;
    struct ncdetect_gid *gids; /* ascending index */
    size_t ngids;
    size_t unreadable_gids; /* entries whose gids/I could not be read */
    int dev_partial;        /* a bound left some ports of its device unread */
    enum ncdetect_node node;
    char uverbs[NCDETECT_DEVNAME_MAX]; /* "uverbsN"; "" none found */
    int open_errno;                    /* why uverbsN did not open */
};

struct ncdetect_scan {
    struct ncdetect_port *ports; /* by device (natural order: mlx5_2 before mlx5_10), then port */
    size_t nports;
    char default_ifname[NCDETECT_IFNAME_MAX]; /* "" when there is no IPv4 default route */
    unsigned char (*locals)[4];               /* local IPv4 addresses from net/fib_trie */
    size_t nlocals;
    int locals_complete; /* fib_trie read whole: an address not in locals is not ours */
    /* Some device or port was not read (a bound, a name NCCL_IB_HCA cannot
     * hold, a directory that cannot be listed): a list of what was read
     * cannot name every port NCCL may find. */
    int incomplete;
    enum ncdetect_devroot devroot;
    /* The RDMA devices DRA allocated (SRIOVNETWORK_*_RDMA_DEVICE), in the
     * environment's order; none: DRA allocated none. */
    char dra[NCDETECT_MAX_DRA][NCDETECT_DEVNAME_MAX];
    size_t ndra;
    struct dynbuf notes; /* one line each: what could not be read or was left out */
};

/* Where ncdetect_scan reads: sys "/sys", proc "/proc", dev "/dev" (NULL:
 * the device nodes are not checked) and env (NULL-terminated NAME=VALUE
 * strings, environ; NULL: none). */
struct ncdetect_roots {
    const char *sys;
    const char *proc;
    const char *dev;
    char *const *env;
};

void ncdetect_scan_init(struct ncdetect_scan *s);
/* Fills s (after ncdetect_scan_init) from r. ERR_OK, or ERR_NOMEM with what
 * was read so far kept. */
int ncdetect_scan(struct ncdetect_scan *s, const struct ncdetect_roots *r);
void ncdetect_scan_free(struct ncdetect_scan *s);

struct ncdetect_opts {
    /* The profile's list or pattern, an NCCL_IB_HCA value that passed
     * nccl_check_hca(); NULL: every device. */
    const char *hca;
    const char *socket_ifname; /* the profile's NCCL_SOCKET_IFNAME; NULL: detect */
    const char *node;          /* the node's name for the mismatch line; NULL: unknown */
};

enum ncdetect_verdict {
    NCDETECT_SELECTED = 0,
    NCDETECT_DOWN,          /* state is not 4 (ACTIVE) */
    NCDETECT_UNREADABLE,    /* state or link_layer could not be read */
    NCDETECT_NOT_IN_HCA,    /* the profile's hca leaves it out */
    NCDETECT_DEFAULT_ROUTE, /* its netdev carries the default route */
    NCDETECT_NO_NODE,       /* the container cannot open its device (node) */
    NCDETECT_NOT_ALLOCATED, /* DRA allocated other devices, not this one */
    NCDETECT_PAST_LIMIT,    /* past the ports or bytes NCCL reads of NCCL_IB_HCA */
};

struct ncdetect_choice {
    enum ncdetect_verdict *verdict;              /* one per scanned port, in the scan's order */
    int *gid;                                    /* per port: its RoCE v2 IPv4 GID index, -1 none */
    struct dynbuf hca;                           /* NCCL_IB_HCA's value; empty: none */
    int net_socket;                              /* NCCL_NET=Socket (then no hca) */
    int gid_index;                               /* NCCL_IB_GID_INDEX; -1: none */
    char socket_ifname[NCDETECT_SOCKET_MAX + 2]; /* NCCL_SOCKET_IFNAME's value; "": none */
    /* --hca is an exact list and some entry of it has no selected port:
     * mismatch holds the one JSON line that says so (no newline). */
    int mismatch;
    struct dynbuf mismatch_json;
    struct dynbuf notes; /* why, one line each */
};

void ncdetect_choice_init(struct ncdetect_choice *c);
/* Chooses from s (c after ncdetect_choice_init); ERR_OK or ERR_NOMEM. */
int ncdetect_choose(struct ncdetect_choice *c, const struct ncdetect_scan *s,
                    const struct ncdetect_opts *opts);
void ncdetect_choice_free(struct ncdetect_choice *c);

/* Appends the configuration file: one KEY=VALUE line for each of
 * NCCL_IB_HCA (or NCCL_NET), NCCL_IB_GID_INDEX and NCCL_SOCKET_IFNAME that
 * was chosen, in that order, and nothing else (NCCL reads any line with a
 * '=' as a variable, so the file carries no comments). ERR_OK, or out's
 * first error (ERR_TOO_BIG, ERR_NOMEM). */
int ncdetect_format(const struct ncdetect_choice *c, struct dynbuf *out);

/* Appends what was found, left out and chosen, one line each. ERR_OK, or
 * out's first error (ERR_TOO_BIG, ERR_NOMEM). */
int ncdetect_report(const struct ncdetect_scan *s, const struct ncdetect_choice *c,
                    struct dynbuf *out);

#endif
