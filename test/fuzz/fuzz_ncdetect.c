/* libFuzzer target: nccl-detect's readers and choice (ncdetect), on a sysfs
 * and procfs tree that the input describes, as a hostile node or container
 * image could lay it out: the GID tables, the state and link-layer files,
 * the netdev names, net/route and net/fib_trie.
 *
 * The input is records split by NUL bytes. The first holds the options: a
 * line with --hca (empty: none) and one with --socket-ifname (empty: none),
 * each used only when nccl-detect would take it. Each other record is a
 * path under the tree's root, a newline, and the file's content; "<fifo>"
 * makes a FIFO there and "<dir>" a directory. Path shorthands: "I/" for
 * sys/class/infiniband/, "N/" for sys/class/net/, "V/" for
 * sys/class/infiniband_verbs/, "D/" for dev/infiniband/, "R" for
 * proc/net/route, "F" for proc/net/fib_trie. A path with an empty, "." or
 * ".." component is skipped. The tree's dev is the --dev-root only when
 * some record made it: the older inputs keep fuzzing the rest unchecked.
 *
 * What must hold, whatever the tree:
 * - the file is KEY=VALUE lines of NCCL_IB_HCA or NCCL_NET, then
 *   NCCL_IB_GID_INDEX, then NCCL_SOCKET_IFNAME, each at most once, without
 *   a control character, each value within the 1023 bytes NCCL keeps;
 * - NCCL reads it as the choice says: read the way NCCL's own code reads a
 *   configuration file and NCCL_IB_HCA (modelled here apart from the
 *   webhook's nccl module), NCCL uses exactly the scanned ports chosen as
 *   selected, and at most 32 of them;
 * - the report has no control character but its newlines. */
#include "base/dynbuf.h"
#include "admission/nccl.h"
#include "host/ncdetect.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_NCDETECT_RECORDS 1024
#define FUZZ_NCDETECT_DEPTH   12
#define FUZZ_NCDETECT_NCCL    32 /* MAX_IB_DEVS */

static char fuzz_ncdetect_root[PATH_MAX], fuzz_ncdetect_top[PATH_MAX];

static int fuzz_ncdetect_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void fuzz_ncdetect_cleanup(void)
{
    nftw(fuzz_ncdetect_top, fuzz_ncdetect_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdir -p of the directories of rel under the tree (rel itself too with
 * self). 0, or -1 for a path the target refuses. */
static int fuzz_ncdetect_mkdirs(char *path, size_t rootlen, int self)
{
    int depth = 0;

    for (char *s = path + rootlen + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        if (++depth > FUZZ_NCDETECT_DEPTH || (mkdir(path, 0755) != 0 && errno != EEXIST)) {
            *s = '/';
            return -1;
        }
        *s = '/';
    }
    return self && mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* A path the record may name: components neither empty nor "." or "..". */
static int fuzz_ncdetect_safe(const char *rel)
{
    const char *c = rel;

    if (!*rel)
        return 0;
    for (;;) {
        size_t n = strcspn(c, "/");

        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        if (!c[n])
            return 1;
        c += n + 1;
    }
}

static void fuzz_ncdetect_record(const char *rec, size_t len, size_t rootlen)
{
    const char *nl = memchr(rec, '\n', len), *body;
    char rel[256], path[PATH_MAX];
    size_t blen;
    const char *expand = "";
    int fd;

    if (!nl || (size_t)(nl - rec) >= 200)
        return;
    snprintf(rel, sizeof(rel), "%.*s", (int)(nl - rec), rec);
    if (strncmp(rel, "I/", 2) == 0)
        expand = "sys/class/infiniband/";
    else if (strncmp(rel, "N/", 2) == 0)
        expand = "sys/class/net/";
    else if (strncmp(rel, "V/", 2) == 0)
        expand = "sys/class/infiniband_verbs/";
    else if (strncmp(rel, "D/", 2) == 0)
        expand = "dev/infiniband/";
    if (strcmp(rel, "R") == 0)
        snprintf(rel, sizeof(rel), "proc/net/route");
    else if (strcmp(rel, "F") == 0)
        snprintf(rel, sizeof(rel), "proc/net/fib_trie");
    if (!fuzz_ncdetect_safe(rel))
        return;
    snprintf(path, sizeof(path), "%.*s/%s%s", (int)rootlen, fuzz_ncdetect_root, expand,
             rel + (expand[0] ? 2 : 0));
    body = nl + 1;
    blen = len - (size_t)(body - rec);
    if (fuzz_ncdetect_mkdirs(path, rootlen, 0) != 0)
        return;
    if (blen == 5 && memcmp(body, "<dir>", 5) == 0) {
        fuzz_ncdetect_mkdirs(path, rootlen, 1);
        return;
    }
    if (blen == 6 && memcmp(body, "<fifo>", 6) == 0) {
        mkfifo(path, 0644);
        return;
    }
    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644)) < 0)
        return;
    if (write(fd, body, blen) < 0) {
        /* A short tree is still a tree. */
    }
    close(fd);
}

/* A value nccl-detect takes as a flag: 1 to 255 bytes, no control
 * character. */
static const char *fuzz_ncdetect_flag(char *line)
{
    size_t n = strlen(line);

    if (n == 0 || n > NCDETECT_SOCKET_MAX)
        return NULL;
    for (const char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return NULL;
    return line;
}

static void fuzz_ncdetect_options(const char *rec, size_t len, char *hca, char *ifname,
                                  struct ncdetect_opts *o)
{
    const char *nl = memchr(rec, '\n', len);
    size_t n1 = nl ? (size_t)(nl - rec) : len, n2 = nl ? len - n1 - 1 : 0;
    char msg[256];

    snprintf(hca, 256, "%.*s", (int)(n1 < 255 ? n1 : 255), rec);
    snprintf(ifname, 256, "%.*s", (int)(n2 < 255 ? n2 : 255), nl ? nl + 1 : "");
    ifname[strcspn(ifname, "\n")] = '\0';
    o->socket_ifname = fuzz_ncdetect_flag(ifname);
    if (fuzz_ncdetect_flag(hca)) {
        enum nccl_verdict v = nccl_check_hca(hca, NULL, msg, sizeof(msg));

        if (v == NCCL_VALUE_OK || v == NCCL_VALUE_HCA_PREFIX)
            o->hca = hca;
    }
}

/* ---- NCCL's reading, modelled on its code (not on the webhook's) ---- */

struct fuzz_ncdetect_entry {
    char prefix[64];
    int port; /* -1: every port */
};

/* NCCL_IB_HCA as src/transport/net_ib.cc and src/misc/utils.cc read it:
 * '^', '=', one more leading '^' or '=' dropped, then at most 32 entries
 * "prefix[:port]". */
static int fuzz_ncdetect_parse(const char *v, int *excl, int *exact,
                               struct fuzz_ncdetect_entry *list)
{
    int n = 0, len = 0;
    char c;

    *excl = *v == '^';
    v += *excl;
    *exact = *v == '=';
    v += *exact;
    if (*v == '^' || *v == '=')
        v++;
    do {
        c = *v;
        if (c == ':') {
            if (len > 0) {
                list[n].prefix[len] = '\0';
                list[n++].port = atoi(v + 1);
                len = 0;
            }
            while (c != ',' && c != '\0')
                c = *++v;
        } else if (c == ',' || c == '\0') {
            if (len > 0) {
                list[n].prefix[len] = '\0';
                list[n++].port = -1;
                len = 0;
            }
        } else {
            if (len == 63)
                abort(); /* NCCL's netIf holds 64 bytes: an overflow there */
            list[n].prefix[len++] = c;
        }
        v++;
    } while (n < FUZZ_NCDETECT_NCCL && c);
    return n;
}

static int fuzz_ncdetect_match(const char *dev, unsigned port, int exact,
                               const struct fuzz_ncdetect_entry *list, int n)
{
    if (n == 0)
        return 1;
    for (int i = 0; i < n; i++) {
        int name = exact ? strcmp(dev, list[i].prefix) == 0
                         : strncmp(dev, list[i].prefix, strlen(list[i].prefix)) == 0;

        if (name && (list[i].port == -1 || list[i].port == (int)port))
            return 1;
    }
    return 0;
}

/* The file's lines, in order, and the values NCCL keeps (1023 bytes). */
static void fuzz_ncdetect_check_file(const char *file, char *hca, int *have_hca, int *net)
{
    static const char *const keys[] = {"NCCL_IB_HCA", "NCCL_NET", "NCCL_IB_GID_INDEX",
                                       "NCCL_SOCKET_IFNAME"};
    int next = 0;

    *have_hca = *net = 0;
    for (const char *line = file; *line;) {
        size_t n = strcspn(line, "\n"), k;
        const char *eq = memchr(line, '=', n);
        int key = -1;

        if (line[n] != '\n' || !eq)
            abort();
        k = (size_t)(eq - line);
        for (int i = next; i < 4 && key < 0; i++)
            if (strlen(keys[i]) == k && memcmp(line, keys[i], k) == 0)
                key = i;
        if (key < 0 || (key == 1 && *have_hca) || n - k - 1 > NCDETECT_NCCL_VALUE_MAX)
            abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
                abort();
        if (key == 0) {
            *have_hca = 1;
            snprintf(hca, NCDETECT_NCCL_VALUE_MAX + 1, "%.*s", (int)(n - k - 1), eq + 1);
        }
        *net |= key == 1 && strncasecmp(eq + 1, "Socket\n", 7) == 0;
        next = key + 1;
        line += n + 1;
    }
}

static void fuzz_ncdetect_check_meaning(const struct ncdetect_scan *s,
                                        const struct ncdetect_choice *c, const char *file)
{
    static char hca[NCDETECT_NCCL_VALUE_MAX + 1];
    struct fuzz_ncdetect_entry list[FUZZ_NCDETECT_NCCL];
    int have_hca, net, excl = 0, exact = 0, n = 0, selected = 0;

    fuzz_ncdetect_check_file(file, hca, &have_hca, &net);
    /* NCCL would take every port, those left out too; but without a
     * /dev/infiniband it can open none of them. */
    if (s->nports > 0 && !have_hca && !net && s->devroot != NCDETECT_DEVROOT_ABSENT)
        abort();
    if (have_hca)
        n = fuzz_ncdetect_parse(hca, &excl, &exact, list);
    for (size_t i = 0; i < s->nports; i++) {
        int uses = s->devroot != NCDETECT_DEVROOT_ABSENT && !net &&
                   fuzz_ncdetect_match(s->ports[i].dev, s->ports[i].port, exact, list, n) != excl;
        int sel = c->verdict[i] == NCDETECT_SELECTED;

        if (uses != sel)
            abort();
        selected += sel;
    }
    if (selected > FUZZ_NCDETECT_NCCL)
        abort();
}

static void fuzz_ncdetect_check_report(const char *text)
{
    for (const char *p = text; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f)
            abort();
}

static void fuzz_ncdetect_run(const struct ncdetect_opts *o, const struct ncdetect_roots *r)
{
    struct ncdetect_scan s;
    struct ncdetect_choice c;
    struct dynbuf file, report;

    ncdetect_scan_init(&s);
    ncdetect_choice_init(&c);
    dynbuf_init(&file, 16u << 10);
    dynbuf_init(&report, 256u << 10);
    if (ncdetect_scan(&s, r) == ERR_OK && ncdetect_choose(&c, &s, o) == ERR_OK &&
        ncdetect_format(&c, &file) == ERR_OK) {
        fuzz_ncdetect_check_meaning(&s, &c, dynbuf_ptr(&file));
        if (ncdetect_report(&s, &c, &report) == ERR_OK)
            fuzz_ncdetect_check_report(dynbuf_ptr(&report));
    }
    dynbuf_free(&report);
    dynbuf_free(&file);
    ncdetect_choice_free(&c);
    ncdetect_scan_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    char hca[256], ifname[256], sys[PATH_MAX], proc[PATH_MAX], dev[PATH_MAX];
    struct ncdetect_roots r = {.sys = sys, .proc = proc, .dev = dev};
    struct ncdetect_opts o = {0};
    size_t rootlen;
    int records = 0;

    if (!fuzz_ncdetect_root[0]) {
        const char *tmp = getenv("TMPDIR");

        /* tmpfs when there is one: a tree a run, made and removed, on a
         * disk is a hundred times slower. */
        snprintf(fuzz_ncdetect_root, sizeof(fuzz_ncdetect_root), "/dev/shm/fuzz_ncdetect.XXXXXX");
        if (!mkdtemp(fuzz_ncdetect_root)) {
            snprintf(fuzz_ncdetect_root, sizeof(fuzz_ncdetect_root), "%s/fuzz_ncdetect.XXXXXX",
                     tmp && *tmp ? tmp : "/tmp");
            if (!mkdtemp(fuzz_ncdetect_root))
                abort();
        }
        memcpy(fuzz_ncdetect_top, fuzz_ncdetect_root, sizeof(fuzz_ncdetect_top));
        strcat(fuzz_ncdetect_root, "/t");
        atexit(fuzz_ncdetect_cleanup);
    }
    rootlen = strlen(fuzz_ncdetect_root);
    nftw(fuzz_ncdetect_root, fuzz_ncdetect_rm, 16, FTW_DEPTH | FTW_PHYS);
    if (mkdir(fuzz_ncdetect_root, 0755) != 0)
        abort();
    for (const char *rec = p; rec < end && records <= FUZZ_NCDETECT_RECORDS; records++) {
        const char *nul = memchr(rec, '\0', (size_t)(end - rec));
        size_t len = nul ? (size_t)(nul - rec) : (size_t)(end - rec);

        if (records == 0)
            fuzz_ncdetect_options(rec, len, hca, ifname, &o);
        else
            fuzz_ncdetect_record(rec, len, rootlen);
        rec += len + 1;
    }
    snprintf(sys, sizeof(sys), "%s/sys", fuzz_ncdetect_root);
    snprintf(proc, sizeof(proc), "%s/proc", fuzz_ncdetect_root);
    snprintf(dev, sizeof(dev), "%s/dev", fuzz_ncdetect_root);
    if (access(dev, F_OK) != 0)
        r.dev = NULL;
    fuzz_ncdetect_run(&o, &r);
    return 0;
}
