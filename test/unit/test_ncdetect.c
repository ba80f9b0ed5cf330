/*
 * Unit tests for webhook/host/ncdetect.c and `rdma-webhook nccl-detect`
 * (cmd_nccl_detect.c, linked in for its exit status): each test builds a
 * sysfs and a procfs tree in a temporary directory from show_gids output, as
 * the cloud guide's platform prints it inside a container, runs the subcommand on
 * it with --out FILE, and asserts the file's exact content, the exit status
 * and the log's reasons.
 */
#include "unit.h"
#include "support.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "base/dynbuf.h"
#include "host/fsutil.h"
#include "host/ncdetect.h"

/* The cloud provider guide's 8-card node (`show_gids` in that guide):
 * mlx5_0 on eth0, the TCP network, and mlx5_1..mlx5_8 on eth1..eth8, each
 * with the v1 and v2 GIDs of its link-local and of its IPv4 address. */
static const char SEED_8CARD[] =
    "DEV PORT INDEX GID IPv4 VER DEV\n"
    "--- ---- ----- --- ------------ --- ---\n"
    "mlx5_0 1 0 fe80:0000:0000:0000:f820:20ff:fe28:c769 v1 eth0\n"
    "mlx5_0 1 1 fe80:0000:0000:0000:f820:20ff:fe28:c769 v2 eth0\n"
    "mlx5_0 1 2 0000:0000:0000:0000:0000:ffff:0a00:3c03 10.0.60.3 v1 eth0\n"
    "mlx5_0 1 3 0000:0000:0000:0000:0000:ffff:0a00:3c03 10.0.60.3 v2 eth0\n"
    "mlx5_1 1 0 fe80:0000:0000:0000:eaeb:d3ff:fecc:c920 v1 eth1\n"
    "mlx5_1 1 1 fe80:0000:0000:0000:eaeb:d3ff:fecc:c920 v2 eth1\n"
    "mlx5_1 1 2 0000:0000:0000:0000:0000:ffff:190b:8002 25.11.128.2 v1 eth1\n"
    "mlx5_1 1 3 0000:0000:0000:0000:0000:ffff:190b:8002 25.11.128.2 v2 eth1\n"
    "mlx5_2 1 0 fe80:0000:0000:0000:eaeb:d3ff:fecc:c921 v1 eth2\n"
    "mlx5_2 1 1 fe80:0000:0000:0000:eaeb:d3ff:fecc:c921 v2 eth2\n"
    "mlx5_2 1 2 0000:0000:0000:0000:0000:ffff:190b:8022 25.11.128.34 v1 eth2\n"
    "mlx5_2 1 3 0000:0000:0000:0000:0000:ffff:190b:8022 25.11.128.34 v2 eth2\n"
    "mlx5_3 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe6c:51d2 v1 eth3\n"
    "mlx5_3 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe6c:51d2 v2 eth3\n"
    "mlx5_3 1 2 0000:0000:0000:0000:0000:ffff:190b:8042 25.11.128.66 v1 eth3\n"
    "mlx5_3 1 3 0000:0000:0000:0000:0000:ffff:190b:8042 25.11.128.66 v2 eth3\n"
    "mlx5_4 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe6c:51d3 v1 eth4\n"
    "mlx5_4 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe6c:51d3 v2 eth4\n"
    "mlx5_4 1 2 0000:0000:0000:0000:0000:ffff:190b:8062 25.11.128.98 v1 eth4\n"
    "mlx5_4 1 3 0000:0000:0000:0000:0000:ffff:190b:8062 25.11.128.98 v2 eth4\n"
    "mlx5_5 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe33:1366 v1 eth5\n"
    "mlx5_5 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe33:1366 v2 eth5\n"
    "mlx5_5 1 2 0000:0000:0000:0000:0000:ffff:190b:8082 25.11.128.130 v1 eth5\n"
    "mlx5_5 1 3 0000:0000:0000:0000:0000:ffff:190b:8082 25.11.128.130 v2 eth5\n"
    "mlx5_6 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe33:1367 v1 eth6\n"
    "mlx5_6 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe33:1367 v2 eth6\n"
    "mlx5_6 1 2 0000:0000:0000:0000:0000:ffff:190b:80a2 25.11.128.162 v1 eth6\n"
    "mlx5_6 1 3 0000:0000:0000:0000:0000:ffff:190b:80a2 25.11.128.162 v2 eth6\n"
    "mlx5_7 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe6c:68ae v1 eth7\n"
    "mlx5_7 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe6c:68ae v2 eth7\n"
    "mlx5_7 1 2 0000:0000:0000:0000:0000:ffff:190b:80c2 25.11.128.194 v1 eth7\n"
    "mlx5_7 1 3 0000:0000:0000:0000:0000:ffff:190b:80c2 25.11.128.194 v2 eth7\n"
    "mlx5_8 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe6c:68af v1 eth8\n"
    "mlx5_8 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe6c:68af v2 eth8\n"
    "mlx5_8 1 2 0000:0000:0000:0000:0000:ffff:190b:80e2 25.11.128.226 v1 eth8\n"
    "mlx5_8 1 3 0000:0000:0000:0000:0000:ffff:190b:80e2 25.11.128.226 v2 eth8\n";

/* A 4-card node of the same platform: mlx5_0 for TCP, mlx5_1..mlx5_4. */
static const char NODE_4CARD[] =
    "mlx5_0 1 0 fe80:0000:0000:0000:f820:20ff:fe31:0a17 v1 eth0\n"
    "mlx5_0 1 1 fe80:0000:0000:0000:f820:20ff:fe31:0a17 v2 eth0\n"
    "mlx5_0 1 2 0000:0000:0000:0000:0000:ffff:0a00:3d07 10.0.61.7 v1 eth0\n"
    "mlx5_0 1 3 0000:0000:0000:0000:0000:ffff:0a00:3d07 10.0.61.7 v2 eth0\n"
    "mlx5_1 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b10 v1 eth1\n"
    "mlx5_1 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b10 v2 eth1\n"
    "mlx5_1 1 2 0000:0000:0000:0000:0000:ffff:190b:8102 25.11.129.2 v1 eth1\n"
    "mlx5_1 1 3 0000:0000:0000:0000:0000:ffff:190b:8102 25.11.129.2 v2 eth1\n"
    "mlx5_2 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b11 v1 eth2\n"
    "mlx5_2 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b11 v2 eth2\n"
    "mlx5_2 1 2 0000:0000:0000:0000:0000:ffff:190b:8122 25.11.129.34 v1 eth2\n"
    "mlx5_2 1 3 0000:0000:0000:0000:0000:ffff:190b:8122 25.11.129.34 v2 eth2\n"
    "mlx5_3 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b12 v1 eth3\n"
    "mlx5_3 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b12 v2 eth3\n"
    "mlx5_3 1 2 0000:0000:0000:0000:0000:ffff:190b:8142 25.11.129.66 v1 eth3\n"
    "mlx5_3 1 3 0000:0000:0000:0000:0000:ffff:190b:8142 25.11.129.66 v2 eth3\n"
    "mlx5_4 1 0 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b13 v1 eth4\n"
    "mlx5_4 1 1 fe80:0000:0000:0000:eaeb:d3ff:fe71:0b13 v2 eth4\n"
    "mlx5_4 1 2 0000:0000:0000:0000:0000:ffff:190b:8162 25.11.129.98 v1 eth4\n"
    "mlx5_4 1 3 0000:0000:0000:0000:0000:ffff:190b:8162 25.11.129.98 v2 eth4\n";

/* An InfiniBand node as show_gids prints it: a link-local GID per port, no
 * IPv4 and no netdev (InfiniBand GIDs have none); mlx5_4 is the Ethernet
 * NIC that carries the node's TCP network (eth0). */
static const char NODE_IB[] =
    "mlx5_0 1 0 fe80:0000:0000:0000:b859:9f03:00d4:2a36 v1\n"
    "mlx5_1 1 0 fe80:0000:0000:0000:b859:9f03:00d4:2a37 v1\n"
    "mlx5_2 1 0 fe80:0000:0000:0000:b859:9f03:00d4:2a3e v1\n"
    "mlx5_3 1 0 fe80:0000:0000:0000:b859:9f03:00d4:2a3f v1\n"
    "mlx5_4 1 0 fe80:0000:0000:0000:0e42:a1ff:fe5c:71e2 v1 eth0\n"
    "mlx5_4 1 1 fe80:0000:0000:0000:0e42:a1ff:fe5c:71e2 v2 eth0\n"
    "mlx5_4 1 2 0000:0000:0000:0000:0000:ffff:0a00:4005 10.0.64.5 v1 eth0\n"
    "mlx5_4 1 3 0000:0000:0000:0000:0000:ffff:0a00:4005 10.0.64.5 v2 eth0\n";

/* A container whose CNI gave it macvlan sub-interfaces eth1..eth8 on the
 * node's RoCE NICs (its eth0 is a veth, no RDMA). Its own GIDs sit at 4 and
 * 5 of each table; 0 and 1 belong to the host's ens netdevs, which this
 * namespace does not have, and 2 and 3 are empty (zero) slots, except on
 * mlx5_1, where another pod's eth1 (25.11.128.9) holds them: same netdev
 * name, another address. */
static const char CONTAINER_OWN[] =
    "mlx5_1 1 4 fe80:0000:0000:0000:6c2a:11ff:fe01:0001 v1 eth1\n"
    "mlx5_1 1 5 fe80:0000:0000:0000:6c2a:11ff:fe01:0001 v2 eth1\n"
    "mlx5_1 1 6 0000:0000:0000:0000:0000:ffff:190b:8002 25.11.128.2 v1 eth1\n"
    "mlx5_1 1 7 0000:0000:0000:0000:0000:ffff:190b:8002 25.11.128.2 v2 eth1\n";
static const char CONTAINER_FOREIGN[] =
    "mlx5_1 1 0 fe80:0000:0000:0000:eaeb:d3ff:fecc:c920 v1 ens11f0np0\n"
    "mlx5_1 1 1 fe80:0000:0000:0000:eaeb:d3ff:fecc:c920 v2 ens11f0np0\n"
    "mlx5_1 1 2 0000:0000:0000:0000:0000:ffff:190b:8009 25.11.128.9 v1 eth1\n"
    "mlx5_1 1 3 0000:0000:0000:0000:0000:ffff:190b:8009 25.11.128.9 v2 eth1\n";

static char root[] = "/tmp/test_ncdetect.XXXXXX";
static char sys_root[PATH_MAX], proc_root[PATH_MAX], dev_root[PATH_MAX], out_file[PATH_MAX];
/* tree_nodes: the devices whose uverbs node the container is not given
 * ("!dev": sysfs shows no uverbs device for it either), and whether it has
 * no /dev/infiniband at all. */
static const char *withheld[8];
static int no_dev_infiniband, no_verbs_class;
static char got_file[8192], got_log[65536];
/* The IPv4 addresses tree_gids marked as this namespace's, for fib_trie. */
static char locals[128][16];
static size_t nlocals;

static int tree_setup(void **state __attribute__((unused)))
{
    strcpy(root, "/tmp/test_ncdetect.XXXXXX");
    if (mkdtemp(root) == NULL)
        return -1;
    snprintf(sys_root, sizeof(sys_root), "%s/sys", root);
    snprintf(proc_root, sizeof(proc_root), "%s/proc", root);
    snprintf(dev_root, sizeof(dev_root), "%s/dev", root);
    snprintf(out_file, sizeof(out_file), "%s/out/nccl.conf", root);
    nlocals = 0;
    memset(withheld, 0, sizeof(withheld));
    no_dev_infiniband = no_verbs_class = 0;
    return 0;
}

static int tree_rm(const char *path, const struct stat *st __attribute__((unused)),
                   int flag __attribute__((unused)), struct FTW *ftw __attribute__((unused)))
{
    return remove(path);
}

static int tree_teardown(void **state __attribute__((unused)))
{
    return nftw(root, tree_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* snprintf into a PATH_MAX buffer (through a va_list, which keeps gcc's
 * truncation warning quiet: these paths are far shorter). */
__attribute__((format(printf, 2, 3))) static char *tree_path(char *buf, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, PATH_MAX, fmt, ap);
    va_end(ap);
    return buf;
}

/* mkdir -p of path (under root) and all its parents. */
static void tree_mkdirs(const char *path)
{
    char p[PATH_MAX];

    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", p, strerror(errno));
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", p, strerror(errno));
}

__attribute__((format(printf, 2, 3))) static void tree_put(const char *text, const char *fmt, ...)
{
    char path[PATH_MAX], *slash;
    va_list ap;
    FILE *f;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    slash = strrchr(path, '/');
    *slash = '\0';
    tree_mkdirs(path);
    *slash = '/';
    if ((f = fopen(path, "w")) == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        fail_msg("writing %s: %s", path, strerror(errno));
}

static void tree_port(const char *dev, unsigned port, const char *state, const char *link)
{
    tree_put(state, "%s/class/infiniband/%s/ports/%u/state", sys_root, dev, port);
    tree_put(link, "%s/class/infiniband/%s/ports/%u/link_layer", sys_root, dev, port);
}

static void tree_netdev(const char *name)
{
    char path[PATH_MAX];

    tree_path(path, "%s/class/net/%s", sys_root, name);
    tree_mkdirs(path);
}

/* Builds the GID tables from show_gids lines ("DEV PORT INDEX GID [IPv4] VER
 * [NDEV]"; the header lines are skipped), each port ACTIVE with link layer
 * link and a table of table entries, the unlisted ones zero as sysfs shows
 * empty slots. here: the netdevs and addresses are this namespace's. */
static void tree_gids(const char *show_gids, const char *link, unsigned table, int here)
{
    const char *line = show_gids;

    for (; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n')) {
        char tok[7][64], l[256];
        int n;
        const char *ver, *ndev, *ipv4 = NULL;

        snprintf(l, sizeof(l), "%.*s", (int)strcspn(line, "\n"), line);
        n = sscanf(l, "%63s %63s %63s %63s %63s %63s %63s", tok[0], tok[1], tok[2], tok[3], tok[4],
                   tok[5], tok[6]);
        if (n < 5 || strcmp(tok[0], "DEV") == 0 || strcmp(tok[0], "---") == 0)
            continue;
        ver = n == 7 ? tok[5] : tok[4];
        ndev = n == 7 ? tok[6] : n == 6 ? tok[5] : NULL;
        ipv4 = n == 7 ? tok[4] : NULL;
        if (strcmp(ver, "v1") != 0 && strcmp(ver, "v2") != 0) { /* "GID IPv4 VER" without NDEV */
            ver = tok[5];
            ipv4 = tok[4];
            ndev = NULL;
        }
        tree_port(tok[0], (unsigned)atoi(tok[1]), "4: ACTIVE\n", link);
        tree_put(tok[3], "%s/class/infiniband/%s/ports/%s/gids/%s", sys_root, tok[0], tok[1],
                 tok[2]);
        tree_put(strcmp(ver, "v2") == 0 ? "RoCE v2\n" : "IB/RoCE v1\n",
                 "%s/class/infiniband/%s/ports/%s/gid_attrs/types/%s", sys_root, tok[0], tok[1],
                 tok[2]);
        if (ndev)
            tree_put(ndev, "%s/class/infiniband/%s/ports/%s/gid_attrs/ndevs/%s", sys_root, tok[0],
                     tok[1], tok[2]);
        if (here && ndev)
            tree_netdev(ndev);
        if (here && ipv4 && nlocals < sizeof(locals) / sizeof(locals[0]))
            snprintf(locals[nlocals++], sizeof(locals[0]), "%.15s", ipv4);
        for (unsigned i = 0; i < table; i++) {
            char path[PATH_MAX];

            tree_path(path, "%s/class/infiniband/%s/ports/%s/gids/%u", sys_root, tok[0], tok[1], i);
            if (access(path, F_OK) != 0)
                tree_put("0000:0000:0000:0000:0000:0000:0000:0000\n", "%s", path);
        }
    }
}

/* /proc/net/route as the kernel pads it, the default route first. */
static void tree_route(const char *default_if)
{
    char text[2048];
    static const char header[] = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\t"
                                 "Mask\t\tMTU\tWindow\tIRTT";

    snprintf(text, sizeof(text),
             "%-127s\n"
             "%s\t00000000\t013C000A\t0003\t0\t0\t0\t00000000\t0\t0\t0%-40s\n"
             "eth1\t00000000\t01800B19\t0003\t0\t0\t100\t00000000\t0\t0\t0%-40s\n"
             "eth0\t003C000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0%-40s\n"
             "eth1\t00800B19\t00000000\t0001\t0\t0\t0\tE0FFFFFF\t0\t0\t0%-40s\n",
             header, default_if, "", "", "", "");
    tree_put(text, "%s/net/route", proc_root);
}

/* /proc/net/fib_trie with the addresses tree_gids marked as local, the
 * way the kernel lists them (and a broadcast leaf, which is not one). */
static void tree_fib(void)
{
    struct dynbuf b;

    dynbuf_init(&b, 1 << 16);
    for (int table = 0; table < 2; table++) {
        dynbuf_printf(&b, "%s:\n  +-- 0.0.0.0/0 3 0 5\n", table ? "Local" : "Main");
        if (!table)
            dynbuf_addstr(&b, "     |-- 0.0.0.0\n        /0 universe UNICAST\n");
        for (size_t i = 0; i < nlocals; i++)
            dynbuf_printf(&b, "     +-- %s/24 2 0 2\n        |-- %s\n           /32 host LOCAL\n",
                          locals[i], locals[i]);
        dynbuf_addstr(&b, "     |-- 10.0.60.255\n        /32 link BROADCAST\n"
                          "     |-- 127.0.0.1\n        /32 host LOCAL\n");
    }
    tree_put(dynbuf_ptr(&b), "%s/net/fib_trie", proc_root);
    dynbuf_free(&b);
}

/* 1: dev's node withheld; 2: not in sysfs either; 0: given. */
static int tree_withheld(const char *dev)
{
    for (size_t i = 0; i < sizeof(withheld) / sizeof(withheld[0]) && withheld[i]; i++) {
        if (strcmp(withheld[i], dev) == 0)
            return 1;
        if (withheld[i][0] == '!' && strcmp(withheld[i] + 1, dev) == 0)
            return 2;
    }
    return 0;
}

/* uverbsK of dev in class/infiniband_verbs, as the kernel lays it out:
 * its K, made at the first free one when there is none. */
static unsigned tree_uverbs(const char *dev)
{
    char path[PATH_MAX], text[PATH_MAX];
    unsigned k = 0;

    for (;; k++) {
        FILE *f =
            fopen(tree_path(path, "%s/class/infiniband_verbs/uverbs%u/ibdev", sys_root, k), "r");

        if (f == NULL)
            break;
        text[0] = '\0';
        if (fgets(text, sizeof(text), f) == NULL)
            text[0] = '\0';
        fclose(f);
        text[strcspn(text, "\n")] = '\0';
        if (strcmp(text, dev) == 0)
            return k;
    }
    tree_put(tree_path(text, "%s\n", dev), "%s", path);
    return k;
}

/* Every device in class/infiniband gets its uverbs node in sysfs, and in
 * dev/infiniband unless withheld (a shared device plugin gives a container
 * some of them only); no dev/infiniband with no_dev_infiniband, no
 * class/infiniband_verbs with no_verbs_class. */
static void tree_nodes(void)
{
    char path[PATH_MAX];
    struct dirent *e;
    DIR *d;

    if (!no_dev_infiniband)
        tree_mkdirs(tree_path(path, "%s/infiniband", dev_root));
    if (no_verbs_class || (d = opendir(tree_path(path, "%s/class/infiniband", sys_root))) == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        unsigned k;

        if (e->d_name[0] == '.' || tree_withheld(e->d_name) == 2)
            continue;
        k = tree_uverbs(e->d_name);
        if (!no_dev_infiniband && !tree_withheld(e->d_name))
            tree_put("", "%s/infiniband/uverbs%u", dev_root, k);
        else /* withheld since an earlier run */
            unlink(tree_path(path, "%s/infiniband/uverbs%u", dev_root, k));
    }
    closedir(d);
}

static void read_into(const char *path, char *buf, size_t size)
{
    struct dynbuf b;
    char err[ERR_LEN];

    dynbuf_init(&b, size - 1);
    if (fsutil_read(path, &b, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    snprintf(buf, size, "%s", dynbuf_ptr(&b));
    dynbuf_free(&b);
}

/* Runs `nccl-detect --sysfs-root SYS --proc-root PROC --dev-root DEV --out
 * FILE` (after tree_nodes) and the
 * extra arguments (NULL-terminated) with stderr in got_log; the file, if
 * written, in got_file ("(none)" otherwise). Returns the exit status. */
static int run_detect(const char *extra, ...)
{
    char *argv[20] = {"nccl-detect", "--sysfs-root", sys_root, "--proc-root", proc_root,
                      "--dev-root",  dev_root,       "--out",  out_file};
    char logpath[PATH_MAX];
    int argc = 9, saved, fd, rc;
    va_list ap;

    tree_nodes();
    va_start(ap, extra);
    for (const char *a = extra; a && argc < 19; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    snprintf(logpath, sizeof(logpath), "%s/log", root);
    snprintf(got_file, sizeof(got_file), "(none)");
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    optind = 0; /* getopt_long starts over */
    rc = cmd_nccl_detect(argc, argv);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    read_into(logpath, got_log, sizeof(got_log));
    if (access(out_file, F_OK) == 0)
        read_into(out_file, got_file, sizeof(got_file));
    return rc;
}

/* The directory of out_file, as the emptyDir would be. */
static void tree_out_dir(void)
{
    char dir[PATH_MAX];

    snprintf(dir, sizeof(dir), "%s/out", root);
    tree_mkdirs(dir);
}

static void seed_node(void)
{
    tree_gids(SEED_8CARD, "Ethernet\n", 16, 1);
    tree_netdev("lo");
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
}

/* The 8-card profile's hca list, as --hca takes it. */
#define PROFILE_HCA "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"
#define SEED_HCA    "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8\n"

TEST(test_seed_8card_node)
{
    seed_node();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_IB_GID_INDEX=3\n"
                                           "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "nccl-detect: default route: eth0\n");
    assert_contains(got_log, "nccl-detect: mlx5_0 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth0, "
                             "RoCE v2 IPv4 GID 3 (10.0.60.3): left out: its netdev carries the "
                             "default route\n");
    assert_contains(got_log, "nccl-detect: mlx5_8 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth8, "
                             "RoCE v2 IPv4 GID 3 (25.11.128.226): selected\n");
    assert_contains(got_log, "NCCL_IB_GID_INDEX=3: the RoCE v2 IPv4 GID of every selected port "
                             "(NCCL behaviour relied on: none, every NCCL version reads it)\n");
    assert_contains(got_log, "NCCL_SOCKET_IFNAME==eth0: the default route's interface");
    assert_contains(got_log, "nccl-detect: wrote ");
}

/* The module alone: scan, choose and format are separate steps. */
TEST(test_seed_8card_scan_and_choice)
{
    struct ncdetect_scan s;
    struct ncdetect_choice c;
    struct ncdetect_opts o = {0};
    struct ncdetect_roots roots = {.sys = sys_root, .proc = proc_root, .dev = dev_root};
    struct dynbuf file;

    seed_node();
    ncdetect_scan_init(&s);
    ncdetect_choice_init(&c);
    dynbuf_init(&file, 4096);
    tree_nodes();
    assert_int_equal(ncdetect_scan(&s, &roots), ERR_OK);
    assert_int_equal(s.nports, 9);
    assert_string_equal(s.ports[0].dev, "mlx5_0");
    assert_int_equal(s.ports[0].ngids, 4); /* the 12 zero slots are not kept */
    assert_int_equal(s.ports[1].gids[3].type, NCDETECT_GID_V2);
    assert_string_equal(s.ports[1].gids[3].ndev, "eth1");
    assert_int_equal(s.ports[1].gids[3].ndev_here, 1);
    assert_string_equal(s.default_ifname, "eth0");
    assert_true(s.locals_complete);
    assert_int_equal(ncdetect_choose(&c, &s, &o), ERR_OK);
    assert_int_equal(c.verdict[0], NCDETECT_DEFAULT_ROUTE);
    for (size_t i = 1; i < 9; i++) {
        assert_int_equal(c.verdict[i], NCDETECT_SELECTED);
        assert_int_equal(c.gid[i], 3);
    }
    assert_int_equal(ncdetect_format(&c, &file), ERR_OK);
    assert_string_equal(dynbuf_ptr(&file), SEED_HCA "NCCL_IB_GID_INDEX=3\n"
                                                    "NCCL_SOCKET_IFNAME==eth0\n");
    dynbuf_free(&file);
    ncdetect_choice_free(&c);
    ncdetect_scan_free(&s);
    ncdetect_scan_free(&s); /* twice is harmless */
}

TEST(test_seed_8card_with_the_profile_hca)
{
    seed_node();
    assert_int_equal(run_detect("--hca", PROFILE_HCA, NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_IB_GID_INDEX=3\n"
                                           "NCCL_SOCKET_IFNAME==eth0\n");
}

TEST(test_seed_8card_without_a_default_route)
{
    seed_node();
    tree_put("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\t"
             "IRTT\n"
             "eth0\t003C000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
             "%s/net/route", proc_root);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,"
                                  "mlx5_7,mlx5_8\n"
                                  "NCCL_IB_GID_INDEX=3\n");
    assert_contains(got_log, "no IPv4 default route in ");
    assert_contains(got_log, "no NCCL_SOCKET_IFNAME: no IPv4 default route, NCCL picks");
}

TEST(test_socket_ifname_given)
{
    seed_node();
    assert_int_equal(run_detect("--socket-ifname", "eth0", NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_IB_GID_INDEX=3\n"
                                           "NCCL_SOCKET_IFNAME=eth0\n");
    assert_contains(got_log, "NCCL_SOCKET_IFNAME=eth0: the profile's");
}

TEST(test_4card_node)
{
    tree_gids(NODE_4CARD, "Ethernet\n", 16, 1);
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
}

/* The 8-card profile's list on a 4-card node: only the devices that exist. */
TEST(test_4card_node_with_the_8card_profile)
{
    tree_gids(NODE_4CARD, "Ethernet\n", 16, 1);
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect("--hca", PROFILE_HCA, NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_int_equal(run_detect("--hca", "^=mlx5_3", NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_4\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_3 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth3, RoCE v2 IPv4 GID "
                             "3 (25.11.129.66): left out: not in --hca\n");
}

#define LIST_8CARD "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"

static void node_4card(void)
{
    tree_gids(NODE_4CARD, "Ethernet\n", 16, 1);
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
}

/* One list for the whole job: the 8-card job's list on a 4-card node is
 * written in its usable part, and the difference is one JSON line with the
 * node's name; by default the pod goes on. */
TEST(test_job_list_mismatch_is_one_json_line)
{
    node_4card();
    setenv("NODE_NAME", "node-\"a\"", 1);
    assert_int_equal(run_detect("--hca", LIST_8CARD, NULL), 0);
    unsetenv("NODE_NAME");
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log,
                    "\n{\"event\":\"nccl-detect-hca-mismatch\",\"node\":\"node-\\\"a\\\"\","
                    "\"expected\":[\"mlx5_1\",\"mlx5_2\",\"mlx5_3\",\"mlx5_4\",\"mlx5_5\","
                    "\"mlx5_6\",\"mlx5_7\",\"mlx5_8\"],\"found\":[\"mlx5_1\",\"mlx5_2\","
                    "\"mlx5_3\",\"mlx5_4\"],\"missing\":[\"mlx5_5\",\"mlx5_6\",\"mlx5_7\","
                    "\"mlx5_8\"],\"written\":\"=mlx5_1,mlx5_2,mlx5_3,mlx5_4\"}\n");
    assert_contains(got_log, "the job's list " LIST_8CARD ": 4 entries without a usable port "
                             "here; NCCL_IB_HCA holds the usable part");
}

/* --require-hca (a profile's detect.requireHca): the file is written, and
 * the exit status is 1 so that the pod restarts. */
TEST(test_job_list_required_exits_1)
{
    node_4card();
    assert_int_equal(run_detect("--hca", LIST_8CARD, "--require-hca", NULL), 1);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "\"node\":null,");
    assert_contains(got_log, "nccl-detect: exit 1: the job's list is not whole on this node");
    /* The whole list here: exit 0, no JSON line. */
    assert_int_equal(run_detect("--hca", "=mlx5_1,mlx5_2:1,mlx5_4", "--require-hca", NULL), 0);
    assert_contains(got_log, "the job's list =mlx5_1,mlx5_2:1,mlx5_4: every entry has a usable "
                             "port here\n");
    assert_true(strstr(got_log, "nccl-detect-hca-mismatch") == NULL);
    /* A port that is down, or a device the container was not given, is
     * missing too. */
    withheld[0] = "mlx5_2";
    assert_int_equal(run_detect("--hca", "=mlx5_1,mlx5_2:1,mlx5_4", "--require-hca", NULL), 1);
    assert_contains(got_log, "\"missing\":[\"mlx5_2:1\"],\"written\":\"=mlx5_1,mlx5_4\"}\n");
    /* Not an exact list: nothing to require, exit 0. */
    assert_int_equal(run_detect("--hca", "mlx5", "--require-hca", NULL), 0);
    assert_contains(got_log, "--require-hca: --hca is not an exact list");
}

/* DRA: dra-driver-sriov's CDI variables name the allocated devices, which
 * are preferred over sysfs; one that sysfs does not show, or a value
 * NCCL_IB_HCA cannot hold, is said in the log. */
TEST(test_dra_sriov_environment)
{
    seed_node();
    setenv("SRIOVNETWORK_vf_a_RDMA_DEVICE", "mlx5_2", 1);
    setenv("SRIOVNETWORK_vf_b_RDMA_DEVICE", "mlx5_9", 1);
    setenv("SRIOVNETWORK_vf_c_RDMA_DEVICE", "mlx5,1", 1);
    setenv("SRIOVNETWORK__RDMA_DEVICE", "mlx5_3", 1); /* no device name: not the format */
    setenv("SRIOVNETWORK_vf_a_RDMA_UVERB", "/dev/infiniband/uverbs2", 1);
    assert_int_equal(run_detect(NULL), 0);
    unsetenv("SRIOVNETWORK_vf_a_RDMA_DEVICE");
    unsetenv("SRIOVNETWORK_vf_b_RDMA_DEVICE");
    unsetenv("SRIOVNETWORK_vf_c_RDMA_DEVICE");
    unsetenv("SRIOVNETWORK__RDMA_DEVICE");
    unsetenv("SRIOVNETWORK_vf_a_RDMA_UVERB");
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_2\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "nccl-detect: DRA allocated mlx5_9, but sysfs does not show it\n");
    assert_contains(got_log, "nccl-detect: DRA: SRIOVNETWORK_vf_c_RDMA_DEVICE names no device "
                             "NCCL_IB_HCA can hold: not used\n");
    assert_contains(got_log, "mlx5_3 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth3, RoCE v2 IPv4 GID 3 "
                             "(25.11.128.66): left out: DRA allocated other devices\n");
}

TEST(test_infiniband_node)
{
    tree_gids(NODE_IB, "InfiniBand\n", 8, 1);
    /* mlx5_4 is the node's Ethernet NIC. */
    tree_port("mlx5_4", 1, "4: ACTIVE\n", "Ethernet\n");
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_0 port 1: ACTIVE, InfiniBand, 1 GID: selected\n");
    assert_contains(got_log, "mlx5_4 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth0, RoCE v2 IPv4 GID "
                             "3 (10.0.64.5): left out: its netdev carries the default route\n");
    assert_contains(got_log, "no NCCL_IB_GID_INDEX: InfiniBand needs none");
}

/* The container: its own GIDs at 4..7 of each table, host and other pods'
 * entries and empty slots around them. */
static void container(int with_fib)
{
    char own[1024], foreign[1024];

    tree_gids(CONTAINER_OWN, "Ethernet\n", 16, 1);
    tree_gids(CONTAINER_FOREIGN, "Ethernet\n", 16, 0);
    for (int d = 2; d <= 8; d++) {
        snprintf(own, sizeof(own),
                 "mlx5_%d 1 4 fe80:0000:0000:0000:6c2a:11ff:fe01:000%d v1 eth%d\n"
                 "mlx5_%d 1 5 fe80:0000:0000:0000:6c2a:11ff:fe01:000%d v2 eth%d\n"
                 "mlx5_%d 1 6 0000:0000:0000:0000:0000:ffff:190b:80%02x 25.11.128.%d v1 eth%d\n"
                 "mlx5_%d 1 7 0000:0000:0000:0000:0000:ffff:190b:80%02x 25.11.128.%d v2 eth%d\n",
                 d, d, d, d, d, d, d, (d - 1) * 32 + 2, (d - 1) * 32 + 2, d, d, (d - 1) * 32 + 2,
                 (d - 1) * 32 + 2, d);
        snprintf(foreign, sizeof(foreign),
                 "mlx5_%d 1 0 fe80:0000:0000:0000:eaeb:d3ff:fecc:c9%02d v1 ens%df0np0\n"
                 "mlx5_%d 1 1 fe80:0000:0000:0000:eaeb:d3ff:fecc:c9%02d v2 ens%df0np0\n",
                 d, 20 + d, 10 + d, d, 20 + d, 10 + d);
        tree_gids(own, "Ethernet\n", 16, 1);
        tree_gids(foreign, "Ethernet\n", 16, 0);
    }
    tree_netdev("eth0");
    tree_netdev("lo");
    /* The default route goes out of the veth eth0, which has no RDMA device. */
    tree_route("eth0");
    if (with_fib) {
        snprintf(locals[nlocals++], sizeof(locals[0]), "10.244.3.17");
        tree_fib();
    }
    tree_out_dir();
}

TEST(test_container_sparse_gid_table)
{
    container(1);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_IB_GID_INDEX=7\n"
                                           "NCCL_SOCKET_IFNAME==eth0\n");
    /* 25.11.128.9 at 3 is another pod's eth1. */
    assert_contains(got_log, "mlx5_1 port 1: ACTIVE, RoCE, 8 GIDs, netdev eth1, RoCE v2 IPv4 GID "
                             "7 (25.11.128.2): selected\n");
    assert_contains(got_log, "mlx5_2 port 1: ACTIVE, RoCE, 6 GIDs, netdev eth2, RoCE v2 IPv4 GID "
                             "7 (25.11.128.34): selected\n");
}

/* The RDMA devices in the pod's own network namespace (exclusive mode): the
 * table holds only its GIDs, link-local at 0 and 1, IPv4 at 4 and 5, and
 * the slots of an address that went away (2, 3) empty. */
TEST(test_container_own_namespace_gaps)
{
    char gids[512];

    for (int d = 1; d <= 8; d++) {
        int a = (d - 1) * 32 + 2;

        snprintf(gids, sizeof(gids),
                 "mlx5_%d 1 0 fe80:0000:0000:0000:6c2a:11ff:fe01:000%d v1 eth%d\n"
                 "mlx5_%d 1 1 fe80:0000:0000:0000:6c2a:11ff:fe01:000%d v2 eth%d\n"
                 "mlx5_%d 1 4 0000:0000:0000:0000:0000:ffff:190b:80%02x 25.11.128.%d v1 eth%d\n"
                 "mlx5_%d 1 5 0000:0000:0000:0000:0000:ffff:190b:80%02x 25.11.128.%d v2 eth%d\n",
                 d, d, d, d, d, d, d, a, a, d, d, a, a, d);
        tree_gids(gids, "Ethernet\n", 8, 1);
    }
    tree_netdev("eth0");
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect("--hca", PROFILE_HCA, NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_IB_GID_INDEX=5\n"
                                           "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_8 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth8, RoCE v2 IPv4 GID "
                             "5 (25.11.128.226): selected\n");
}

/* Without fib_trie the pod's addresses are unknown, and the other pod's
 * eth1 GID at 3 looks like its own: the indexes then differ. */
TEST(test_container_without_fib_trie)
{
    container(0);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "fib_trie");
    assert_contains(got_log, "by its netdev's name alone");
    assert_contains(got_log, "no NCCL_IB_GID_INDEX: the RoCE v2 IPv4 GID is 3 on mlx5_1 port 1 "
                             "but 7 on mlx5_2 port 1; NCCL 2.21+ picks the GID per device itself");
}

TEST(test_container_gid_index_differs)
{
    container(1);
    /* mlx5_5's own IPv4 GIDs move to 8 and 9 (another pod took 6 and 7). */
    tree_put("0000:0000:0000:0000:0000:ffff:190b:8099\n",
             "%s/class/infiniband/mlx5_5/ports/1/gids/6", sys_root);
    tree_put("0000:0000:0000:0000:0000:ffff:190b:8099\n",
             "%s/class/infiniband/mlx5_5/ports/1/gids/7", sys_root);
    tree_gids("mlx5_5 1 8 0000:0000:0000:0000:0000:ffff:190b:8082 25.11.128.130 v1 eth5\n"
              "mlx5_5 1 9 0000:0000:0000:0000:0000:ffff:190b:8082 25.11.128.130 v2 eth5\n",
              "Ethernet\n", 16, 1);
    tree_fib();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "no NCCL_IB_GID_INDEX: the RoCE v2 IPv4 GID is 7 on mlx5_1 port 1 "
                             "but 9 on mlx5_5 port 1; NCCL 2.21+ picks the GID per device itself");
    /* Which NCCL the file relies on, and the index of each device. */
    assert_contains(got_log, "NCCL behaviour relied on: NCCL 2.21+, which with NCCL_IB_GID_INDEX "
                             "unset picks each device's RoCE v2 IPv4 GID itself (here mlx5_1:1 7, "
                             "mlx5_2:1 7, mlx5_3:1 7, mlx5_4:1 7, mlx5_5:1 9, mlx5_6:1 7, "
                             "mlx5_7:1 7, mlx5_8:1 7); NCCL before 2.21 uses GID 0 on every "
                             "device\n");
}

TEST(test_port_down)
{
    seed_node();
    tree_put("1: DOWN\n", "%s/class/infiniband/mlx5_3/ports/1/state", sys_root);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_3 port 1: DOWN, RoCE, 4 GIDs, netdev eth3, RoCE v2 IPv4 GID 3 "
                             "(25.11.128.66): left out: not ACTIVE\n");
}

/* A device with two ports, one down: the active one is named with its port,
 * since NCCL would take the other too if it came up. */
TEST(test_dual_port_device_one_down)
{
    tree_gids("mlx5_0 1 0 0000:0000:0000:0000:0000:ffff:190b:8002 25.11.128.2 v2 eth1\n"
              "mlx5_0 2 0 0000:0000:0000:0000:0000:ffff:190b:8022 25.11.128.34 v2 eth2\n"
              "mlx5_1 1 0 0000:0000:0000:0000:0000:ffff:190b:8042 25.11.128.66 v2 eth3\n"
              "mlx5_1 2 0 0000:0000:0000:0000:0000:ffff:190b:8062 25.11.128.98 v2 eth4\n",
              "Ethernet\n", 4, 1);
    tree_put("1: DOWN\n", "%s/class/infiniband/mlx5_0/ports/2/state", sys_root);
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_0:1,mlx5_1\n"
                                  "NCCL_IB_GID_INDEX=0\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    /* A port named in --hca. */
    assert_int_equal(run_detect("--hca", "=mlx5_1:2", NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1:2\n"
                                  "NCCL_IB_GID_INDEX=0\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
}

TEST(test_gid_entry_unreadable)
{
    char path[PATH_MAX];

    seed_node();
    /* A directory where mlx5_4's RoCE v2 IPv4 GID should be: read(2) fails
     * (as root too, which ignores mode bits). */
    tree_path(path, "%s/class/infiniband/mlx5_4/ports/1/gids/3", sys_root);
    assert_int_equal(unlink(path), 0);
    tree_mkdirs(path);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_4 port 1: 1 GID entry unreadable (cannot read ");
    assert_contains(got_log, "mlx5_4/ports/1/gids/3: not a regular file)");
    assert_contains(got_log, "mlx5_4 port 1: ACTIVE, RoCE, 3 GIDs, netdev eth4: selected\n");
    assert_contains(got_log, "no NCCL_IB_GID_INDEX: mlx5_4 port 1 has no RoCE v2 GID with an IPv4 "
                             "address of this pod; NCCL 2.21+ picks the GID per device itself");
}

/* A FIFO in place of an attribute is refused without blocking, a huge file
 * is read no further than the cap, and a GID index past the bound is left. */
TEST(test_reads_are_bounded)
{
    char path[PATH_MAX], *big = malloc(1 << 20);

    seed_node();
    tree_path(path, "%s/class/infiniband/mlx5_2/ports/1/state", sys_root);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_non_null(big);
    memset(big, 'f', (1 << 20) - 1);
    big[(1 << 20) - 1] = '\0';
    tree_put(big, "%s/class/infiniband/mlx5_5/ports/1/gids/0", sys_root);
    free(big);
    tree_put("0000:0000:0000:0000:0000:ffff:190b:80e2\n",
             "%s/class/infiniband/mlx5_6/ports/1/gids/300", sys_root);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_2/ports/1/state: not a regular file");
    assert_contains(got_log, "mlx5_2 port 1: state unknown, RoCE, 4 GIDs, netdev eth2, RoCE v2 "
                             "IPv4 GID 3 (25.11.128.34): left out: its state or link layer could "
                             "not be read\n");
    assert_contains(got_log, "mlx5_5/ports/1/gids/0 is larger than 256 bytes");
    assert_contains(got_log, "mlx5_6 port 1: GID indexes from 256 on not read");
}

TEST(test_no_rdma_devices)
{
    char path[PATH_MAX];

    tree_netdev("eth0");
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "no RDMA devices: ");
    assert_contains(got_log, "no NCCL_IB_HCA: no RDMA port found");
    /* class/infiniband there but empty: the same file. */
    tree_path(path, "%s/class/infiniband", sys_root);
    tree_mkdirs(path);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "no RDMA devices in ");
}

/* Only the default route's device: NCCL is kept off it, not left to take it. */
TEST(test_only_the_default_route_device)
{
    tree_gids(SEED_8CARD, "Ethernet\n", 16, 1);
    for (int d = 1; d <= 8; d++) {
        char path[PATH_MAX];

        tree_path(path, "%s/class/infiniband/mlx5_%d", sys_root, d);
        assert_int_equal(nftw(path, tree_rm, 16, FTW_DEPTH | FTW_PHYS), 0);
    }
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA=^=mlx5_0\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "NCCL_IB_HCA=^=mlx5_0: no port selected");
}

TEST(test_bad_roots_write_an_empty_file)
{
    char *argv[] = {"nccl-detect",       "--sysfs-root", "/nonexistent/sys", "--proc-root",
                    "/nonexistent/proc", "--out",        out_file,           NULL};
    int saved = dup(STDERR_FILENO), fd = open("/dev/null", O_WRONLY), rc;

    tree_out_dir();
    assert_true(saved >= 0 && fd >= 0);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    close(fd);
    optind = 0;
    rc = cmd_nccl_detect(7, argv);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    assert_int_equal(rc, 0);
    read_into(out_file, got_file, sizeof(got_file));
    assert_string_equal(got_file, "");
}

TEST(test_unwritable_out_still_exits_0)
{
    seed_node();
    snprintf(out_file, sizeof(out_file), "%s/no-such-dir/nccl.conf", root);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "(none)");
    assert_contains(got_log, "cannot create a file beside ");
    assert_contains(got_log, "NCCL keeps its own defaults");
}

TEST(test_usage_errors_write_nothing_and_exit_0)
{
    static const char *const bad[][2] = {
        {"--hca", ""},
        {"--hca", "=mlx5_1:0"},
        {"--hca", "=mlx5_1:x"},
        {"--hca", "^=,"},
        {"--socket-ifname", "eth0\nNCCL_IB_DISABLE=1"},
        {"--socket-ifname", ""},
        {"--out", ""},
        {"--bogus", NULL},
    };

    seed_node();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(run_detect(bad[i][0], bad[i][1], NULL), 0);
        if (strcmp(got_file, "(none)") != 0)
            fail_msg("%s %s: expected no file, got \"%s\"", bad[i][0], bad[i][1], got_file);
        assert_contains(got_log, "nothing written, NCCL keeps its own defaults");
    }
    assert_int_equal(run_detect("stray", NULL), 0);
    assert_contains(got_log, "takes no arguments");
    assert_string_equal(got_file, "(none)");
}

/* --hca is checked as the profile's NCCL_IB_HCA is, with those messages;
 * matching itself is nccl_hca_matches() (test_nccl). */
TEST(test_hca_syntax)
{
    static const char *const bad[][2] = {
        {"=mlx5_0:256", "--hca: NCCL_IB_HCA==mlx5_0:256: use ports from 1 to 255"},
        {"=", "--hca: NCCL_IB_HCA==: name at least one device"},
        {"=:1", "--hca: NCCL_IB_HCA==:1: name a device before each :port"},
        {"=mlx 5", "--hca: NCCL_IB_HCA==mlx 5: remove the spaces"},
        {"=^mlx5_0", "write ^= (NCCL reads ^ only before =)"},
    };

    seed_node();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(run_detect("--hca", bad[i][0], NULL), 0);
        assert_contains(got_log, bad[i][1]);
        assert_string_equal(got_file, "(none)");
    }
    /* A prefix that also catches mlx5_10 is how NCCL would read it: taken. */
    assert_int_equal(run_detect("--hca", "mlx5_1,mlx5_10", NULL), 0);
    assert_contains(got_file, "NCCL_IB_HCA==mlx5_1\n");
}

/* Devices in natural order, and no more than NCDETECT_MAX_DEVICES of them. */
TEST(test_device_order_and_bound)
{
    for (int d = 0; d < NCDETECT_MAX_DEVICES + 6; d++) {
        char dev[32];

        snprintf(dev, sizeof(dev), "mlx5_%d", d);
        tree_port(dev, 1, "4: ACTIVE\n", "Ethernet\n");
    }
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect("--hca", "=mlx5_2,mlx5_10,mlx5_1,mlx5_69", NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_10\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "only the first 64 RDMA devices read");
    assert_contains(got_log, "no NCCL_IB_GID_INDEX: mlx5_1 port 1 has no RoCE v2 GID");
}

/* n devices PREFIX0.. with one ACTIVE RoCE port each, whose GID is on
 * ethN+1, or on eth0 (the default route's) with on_route. */
static void tree_roce_devices(int n, const char *prefix, int on_route)
{
    for (int d = 0; d < n; d++) {
        char dev[NCDETECT_DEVNAME_MAX], ndev[16];

        snprintf(dev, sizeof(dev), "%s%02d", prefix, d);
        snprintf(ndev, sizeof(ndev), "eth%d", on_route ? 0 : d + 1);
        tree_port(dev, 1, "4: ACTIVE\n", "Ethernet\n");
        tree_put("fe80:0000:0000:0000:6c2a:11ff:fe01:0001\n",
                 "%s/class/infiniband/%s/ports/1/gids/0", sys_root, dev);
        tree_put("RoCE v2\n", "%s/class/infiniband/%s/ports/1/gid_attrs/types/0", sys_root, dev);
        tree_put(ndev, "%s/class/infiniband/%s/ports/1/gid_attrs/ndevs/0", sys_root, dev);
        tree_netdev(ndev);
    }
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
}

/* 40 selected ports: NCCL reads 32 entries of NCCL_IB_HCA and opens 32
 * ports, so the list holds the first 32 and the log says the rest are out. */
TEST(test_more_selected_ports_than_nccl_reads)
{
    tree_roce_devices(40, "mlx5_", 0);
    assert_int_equal(run_detect(NULL), 0);
    assert_true(strncmp(got_file, "NCCL_IB_HCA==mlx5_00,mlx5_01,", 29) == 0);
    assert_int_equal(support_count(strtok(got_file, "\n"), ","), 31);
    assert_contains(got_log, "mlx5_31 port 1: ACTIVE, RoCE, 1 GID, netdev eth32: selected\n");
    assert_contains(got_log, "mlx5_32 port 1: ACTIVE, RoCE, 1 GID, netdev eth33: left out: past "
                             "what NCCL reads of NCCL_IB_HCA\n");
    assert_contains(got_log, "the 32 selected ports, and 8 more left out: NCCL reads at most 32 "
                             "ports and 1023 bytes of NCCL_IB_HCA");
}

/* 64 names of 63 bytes: a list of 4,096 bytes, of which NCCL keeps 1,023
 * from its file; the list stops at 15 entries (960 bytes). */
TEST(test_selected_list_longer_than_nccl_keeps)
{
    char prefix[62];

    memset(prefix, 'x', 61);
    prefix[61] = '\0';
    tree_roce_devices(64, prefix, 0);
    assert_int_equal(run_detect(NULL), 0);
    assert_true(strlen(strtok(got_file, "\n")) - strlen("NCCL_IB_HCA=") <= 1023);
    assert_int_equal(support_count(got_file, ","), 14);
    assert_contains(got_log, "the 15 selected ports, and 49 more left out");
}

/* 40 ports on the default route's netdev: "^=" and all 40 kept NCCL off the
 * first 32 only, and it took the other 8. */
TEST(test_exclusion_nccl_cannot_read_is_sockets)
{
    tree_roce_devices(40, "mlx5_", 1);
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_NET=Socket\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "no NCCL_IB_HCA: no port selected, and the list of all of them is "
                             "longer than NCCL reads\n");
    assert_contains(got_log, "NCCL_NET=Socket: NCCL uses sockets, none of the RDMA ports\n");
}

/* Devices whose names NCCL_IB_HCA cannot hold are not read; with only the
 * default route's device besides, a list of what was read would let NCCL
 * take them: sockets. */
TEST(test_names_nccl_cannot_hold)
{
    tree_roce_devices(1, "mlx5_", 1);
    tree_port("a,b", 1, "4: ACTIVE\n", "Ethernet\n");
    tree_port("=mlx5_1", 1, "4: ACTIVE\n", "Ethernet\n");
    tree_port("^mlx5_2", 1, "4: ACTIVE\n", "Ethernet\n");
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_NET=Socket\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "3 entries of ");
    assert_contains(got_log, "not read: a name NCCL_IB_HCA cannot hold");
    assert_contains(got_log, "a list of the ports read would not keep NCCL off those not read");
}

/* A device with more ports than are read is named port by port: named whole,
 * NCCL would take its ports 9 and 10 too. */
TEST(test_device_with_ports_past_the_bound)
{
    for (unsigned p = 1; p <= NCDETECT_MAX_DEV_PORTS + 2; p++)
        tree_port("mlx5_0", p, "4: ACTIVE\n", "InfiniBand\n");
    tree_route("eth0");
    tree_fib();
    tree_out_dir();
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_0:1,mlx5_0:2,mlx5_0:3,mlx5_0:4,mlx5_0:5,"
                                  "mlx5_0:6,mlx5_0:7,mlx5_0:8\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_0: only its first 8 ports read");
}

/* A shared device plugin without an exclusive network namespace: sysfs
 * shows every HCA of the host, the container was given uverbs nodes of
 * mlx5_1 and mlx5_2 only. */
TEST(test_shared_plugin_only_given_devices)
{
    seed_node();
    for (int i = 3; i <= 8; i++) {
        static char names[6][24];

        snprintf(names[i - 3], sizeof(names[0]), "mlx5_%d", i);
        withheld[i - 3] = names[i - 3];
    }
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "mlx5_3: left out: sysfs shows it, but ");
    assert_contains(got_log, "/dev/infiniband/uverbs");
    assert_contains(got_log, " does not open (No such file or directory): the container was not "
                             "given it\n");
    assert_contains(got_log, "mlx5_8 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth8, RoCE v2 IPv4 GID 3 "
                             "(25.11.128.226): left out: this container cannot open the device\n");
    assert_contains(got_log, "mlx5_2 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth2, RoCE v2 IPv4 GID 3 "
                             "(25.11.128.34): selected\n");
}

TEST(test_device_without_uverbs_in_sysfs)
{
    seed_node();
    withheld[0] = "!mlx5_4";
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_5,mlx5_6,mlx5_7,mlx5_8\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log,
                    "nccl-detect: mlx5_4: left out: sysfs shows no uverbs device for it\n");
}

/* No /dev/infiniband: the container was given no RDMA device at all. */
TEST(test_no_dev_infiniband_writes_no_hca)
{
    seed_node();
    no_dev_infiniband = 1;
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "no RDMA device given to this container: ");
    assert_contains(got_log, "/dev/infiniband does not exist\n");
    assert_contains(got_log, "no NCCL_IB_HCA: this container has no /dev/infiniband, so NCCL can "
                             "open no RDMA device and uses sockets\n");
}

/* A sysfs without class/infiniband_verbs cannot tell which node is which
 * device: every device is taken, and the log says why. */
TEST(test_uverbs_map_unreadable_takes_all)
{
    seed_node();
    no_verbs_class = 1;
    assert_int_equal(run_detect(NULL), 0);
    assert_string_equal(got_file, SEED_HCA "NCCL_IB_GID_INDEX=3\n"
                                           "NCCL_SOCKET_IFNAME==eth0\n");
    assert_contains(got_log, "/class/infiniband_verbs: No such file or directory: which devices "
                             "this container can open is not known, all are taken\n");
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, tree_setup, tree_teardown)
    const struct CMUnitTest tests[] = {
        T_(test_seed_8card_node),
        T_(test_seed_8card_scan_and_choice),
        T_(test_seed_8card_with_the_profile_hca),
        T_(test_seed_8card_without_a_default_route),
        T_(test_socket_ifname_given),
        T_(test_4card_node),
        T_(test_4card_node_with_the_8card_profile),
        T_(test_job_list_mismatch_is_one_json_line),
        T_(test_job_list_required_exits_1),
        T_(test_dra_sriov_environment),
        T_(test_infiniband_node),
        T_(test_container_sparse_gid_table),
        T_(test_container_own_namespace_gaps),
        T_(test_container_without_fib_trie),
        T_(test_container_gid_index_differs),
        T_(test_port_down),
        T_(test_dual_port_device_one_down),
        T_(test_gid_entry_unreadable),
        T_(test_reads_are_bounded),
        T_(test_no_rdma_devices),
        T_(test_only_the_default_route_device),
        T_(test_bad_roots_write_an_empty_file),
        T_(test_unwritable_out_still_exits_0),
        T_(test_usage_errors_write_nothing_and_exit_0),
        T_(test_hca_syntax),
        T_(test_device_order_and_bound),
        T_(test_more_selected_ports_than_nccl_reads),
        T_(test_selected_list_longer_than_nccl_keeps),
        T_(test_exclusion_nccl_cannot_read_is_sockets),
        T_(test_names_nccl_cannot_hold),
        T_(test_device_with_ports_past_the_bound),
        T_(test_shared_plugin_only_given_devices),
        T_(test_device_without_uverbs_in_sysfs),
        T_(test_no_dev_infiniband_writes_no_hca),
        T_(test_uverbs_map_unreadable_takes_all),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
