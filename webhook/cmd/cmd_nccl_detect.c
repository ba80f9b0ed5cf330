/* cmd_nccl_detect: `rdma-webhook nccl-detect`, the init container that writes
 * the NCCL configuration of the RDMA set-up its pod sees (ncdetect.h).
 *
 * It exits 0 whatever happens, a usage error included: it runs as an init
 * container whose arguments the webhook wrote, and a non-zero exit would keep
 * the pod from starting (Init:CrashLoopBackOff) over what is at worst a
 * version skew between the webhook and the image. A usage error writes
 * nothing, so NCCL runs with its own defaults; stderr says why. The one
 * exception is asked for: with --require-hca, a node that lacks part of the
 * job's exact --hca list exits 1 after writing the file, so that the pod
 * restarts rather than trains on a degraded set (a profile's
 * detect.requireHca).
 *
 * The mismatch line is printed as it is, one JSON object on a line of its
 * own, for a log collector to pick up; NODE_NAME (the downward API's
 * spec.nodeName, set by the webhook) names the node in it. */
#include "cmd/cmd.h"

#include "host/fsutil.h"
#include "admission/nccl.h"
#include "host/ncdetect.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD_NCCL_DETECT_ROOT_MAX   1024
#define CMD_NCCL_DETECT_FILE_MAX   (16u << 10)
#define CMD_NCCL_DETECT_REPORT_MAX (256u << 10)

static void cmd_nccl_detect_usage(FILE *f)
{
    fprintf(
        f, "Usage: rdma-webhook nccl-detect [--sysfs-root DIR] [--proc-root DIR] [--dev-root DIR]\n"
           "                                [--out FILE|-] [--hca LIST] [--socket-ifname VALUE]\n"
           "                                [--require-hca]\n"
           "\n"
           "Finds the RDMA ports this container can open (its /dev/infiniband/uverbsN), those\n"
           "DRA allocated (SRIOVNETWORK_*_RDMA_DEVICE), their GIDs and the default route, and\n"
           "writes the NCCL configuration for them as KEY=VALUE lines (NCCL_IB_HCA or\n"
           "NCCL_NET=Socket, NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME), the file NCCL reads from\n"
           "NCCL_CONF_FILE or ~/.nccl.conf, never longer than NCCL reads (32 ports, 1023 bytes\n"
           "a value). When --hca is an exact list (=mlx5_1,mlx5_2) that this node cannot give\n"
           "whole, it writes the usable part and logs one JSON line (the node from $NODE_NAME,\n"
           "expected, found, missing).\n"
           "Made for an init container: needs no privileges, logs what it found and chose on\n"
           "stderr, and exits 0 even when it cannot read something or is misused; only\n"
           "--require-hca makes it exit 1.\n"
           "\n"
           "  --sysfs-root DIR       where sysfs is mounted (default /sys)\n"
           "  --proc-root DIR        where procfs is mounted (default /proc)\n"
           "  --dev-root DIR         where the container's devices are (default /dev): a device\n"
           "                         whose DIR/infiniband/uverbsN does not open is left out\n"
           "  --out FILE|-           the file to write, replaced whole (default -, stdout)\n"
           "  --hca LIST             only these devices, in NCCL_IB_HCA's syntax: =mlx5_1,mlx5_2\n"
           "                         (exact), mlx5 (prefix), ^=mlx5_0 (all but), mlx5_1:1 (port)\n"
           "  --socket-ifname VALUE  write NCCL_SOCKET_IFNAME=VALUE rather than the default\n"
           "                         route's interface\n"
           "  --require-hca          exit 1 (after writing) when the exact --hca list is not\n"
           "                         whole here, so that the pod restarts\n"
           "  -h, --help             show this help\n");
}

/* Prints a usage problem; the exit status stays 0 (see the file comment). */
static int cmd_nccl_detect_misuse(const char *problem)
{
    if (problem)
        fprintf(stderr, "rdma-webhook nccl-detect: %s\n", problem);
    fprintf(stderr, "rdma-webhook nccl-detect: nothing written, NCCL keeps its own defaults "
                    "(exit 0 all the same, so that the pod starts)\n");
    cmd_nccl_detect_usage(stderr);
    return 0;
}

/* A value that goes on one line of the file: no newline or other control
 * character, which would start another variable. */
static int cmd_nccl_detect_one_line(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n > max)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

static void cmd_nccl_detect_print(const char *text)
{
    while (*text) {
        size_t n = strcspn(text, "\n");

        fprintf(stderr, "nccl-detect: %.*s\n", (int)n, text);
        text += n + (text[n] == '\n');
    }
}

static void cmd_nccl_detect_write(const char *out, const struct dynbuf *file)
{
    char err[ERR_LEN] = "";

    if (strcmp(out, "-") == 0) {
        if (fwrite(dynbuf_ptr(file), 1, dynbuf_len(file), stdout) != dynbuf_len(file) ||
            fflush(stdout) != 0)
            fprintf(stderr, "nccl-detect: cannot write the configuration to stdout\n");
        return;
    }
    /* 0644: the target containers may run as another user than this one. */
    if (fsutil_write_replace(out, dynbuf_ptr(file), dynbuf_len(file), 0644, err, sizeof(err)))
        fprintf(stderr, "nccl-detect: %s; NCCL keeps its own defaults\n", err);
    else
        fprintf(stderr, "nccl-detect: wrote %s\n", out);
}

/* 1 when the job's list is not whole here; the mismatch line printed. */
static int cmd_nccl_detect_run(const struct ncdetect_roots *roots, const char *out,
                               const struct ncdetect_opts *o)
{
    struct ncdetect_scan scan;
    struct ncdetect_choice choice;
    struct dynbuf file, report;
    int rc, mismatch;

    ncdetect_scan_init(&scan);
    ncdetect_choice_init(&choice);
    dynbuf_init(&file, CMD_NCCL_DETECT_FILE_MAX);
    dynbuf_init(&report, CMD_NCCL_DETECT_REPORT_MAX);
    rc = ncdetect_scan(&scan, roots);
    if (ncdetect_choose(&choice, &scan, o) != ERR_OK || rc != ERR_OK)
        fprintf(stderr, "nccl-detect: out of memory: the configuration may be incomplete\n");
    if (ncdetect_report(&scan, &choice, &report) != ERR_OK)
        fprintf(stderr, "nccl-detect: the log below is cut short\n");
    cmd_nccl_detect_print(dynbuf_ptr(&report));
    if ((rc = ncdetect_format(&choice, &file)) != ERR_OK)
        fprintf(stderr, "nccl-detect: the configuration is cut short (%s)\n", err_name(rc));
    cmd_nccl_detect_write(out, &file);
    if (choice.mismatch)
        fprintf(stderr, "%s\n", dynbuf_ptr(&choice.mismatch_json));
    mismatch = choice.mismatch;
    dynbuf_free(&report);
    dynbuf_free(&file);
    ncdetect_choice_free(&choice);
    ncdetect_scan_free(&scan);
    return mismatch;
}

int cmd_nccl_detect(int argc, char **argv)
{
    static const struct option opts[] = {{"sysfs-root", required_argument, NULL, 's'},
                                         {"proc-root", required_argument, NULL, 'p'},
                                         {"dev-root", required_argument, NULL, 'd'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"hca", required_argument, NULL, 'a'},
                                         {"socket-ifname", required_argument, NULL, 'i'},
                                         {"require-hca", no_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct ncdetect_roots roots = {.sys = "/sys", .proc = "/proc", .dev = "/dev", .env = environ};
    const char *out = "-", *hca_spec = NULL;
    struct ncdetect_opts o = {0};
    char msg[ERR_LEN], problem[ERR_LEN + 8];
    enum nccl_verdict v;
    int c, require = 0;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': roots.sys = optarg; break;
        case 'p': roots.proc = optarg; break;
        case 'd': roots.dev = optarg; break;
        case 'o': out = optarg; break;
        case 'a': hca_spec = optarg; break;
        case 'i': o.socket_ifname = optarg; break;
        case 'r': require = 1; break;
        case 'h': cmd_nccl_detect_usage(stdout); return 0;
        default: return cmd_nccl_detect_misuse(NULL);
        }
    }
    if (optind < argc)
        return cmd_nccl_detect_misuse("takes no arguments, only flags");
    if (!cmd_nccl_detect_one_line(roots.sys, CMD_NCCL_DETECT_ROOT_MAX) ||
        !cmd_nccl_detect_one_line(roots.proc, CMD_NCCL_DETECT_ROOT_MAX) ||
        !cmd_nccl_detect_one_line(roots.dev, CMD_NCCL_DETECT_ROOT_MAX))
        return cmd_nccl_detect_misuse("--sysfs-root, --proc-root and --dev-root take a directory "
                                      "(1 to 1024 bytes, no control characters)");
    if (out[0] == '\0')
        return cmd_nccl_detect_misuse("--out takes a file or -");
    if (o.socket_ifname && !cmd_nccl_detect_one_line(o.socket_ifname, NCDETECT_SOCKET_MAX))
        return cmd_nccl_detect_misuse("--socket-ifname takes 1 to 255 bytes, no control "
                                      "characters");
    /* The syntax checks of the profile's own NCCL_IB_HCA. A prefix that
     * catches more than meant is what the profile asked for: NCCL would
     * read it the same way. */
    if (hca_spec) {
        v = nccl_check_hca(hca_spec, NULL, msg, sizeof(msg));
        if (v != NCCL_VALUE_OK && v != NCCL_VALUE_HCA_PREFIX) {
            snprintf(problem, sizeof(problem), "--hca: %s", msg);
            return cmd_nccl_detect_misuse(problem);
        }
        o.hca = hca_spec;
    }
    o.node = getenv("NODE_NAME");
    if (o.node && !cmd_nccl_detect_one_line(o.node, NCDETECT_NODE_MAX))
        o.node = NULL;
    if (require && (!o.hca || o.hca[0] != '='))
        fprintf(stderr, "nccl-detect: --require-hca: --hca is not an exact list (=dev,...): "
                        "nothing to require\n");
    if (cmd_nccl_detect_run(&roots, out, &o) && require && o.hca && o.hca[0] == '=') {
        fprintf(stderr, "nccl-detect: exit 1: the job's list is not whole on this node and "
                        "--require-hca asks for it whole; the pod's init container restarts\n");
        return 1;
    }
    return 0;
}
