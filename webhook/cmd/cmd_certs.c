#include "cmd/cmd.h"

#include "wire/certs.h"

#include <getopt.h>
#include <stdio.h>

static void cmd_certs_usage(FILE *f)
{
    fprintf(f, "Usage: rdma-webhook gen-certs [--out-dir DIR] [--service NAME] [--namespace NS]\n"
               "                              [--days N] [--force]\n"
               "\n"
               "Writes a CA (ca.crt, ca.key) and a serving certificate signed by it (tls.crt,\n"
               "tls.key), ECDSA P-256, with SANs NAME, NAME.NS, NAME.NS.svc,\n"
               "NAME.NS.svc.cluster.local, localhost, 127.0.0.1 and ::1.\n"
               "\n"
               "  --out-dir DIR     where to write (default certs/dev)\n"
               "  --service NAME    the webhook's Service name (default rdma-webhook)\n"
               "  --namespace NS    its namespace (default rdma-webhook)\n"
               "  --days N          validity in days (default 365)\n"
               "  --force           replace the files DIR already holds (without it,\n"
               "                    gen-certs writes nothing if any of the four exists)\n"
               "  -h, --help        show this help\n");
}

int cmd_gen_certs(int argc, char **argv)
{
    static const struct option opts[] = {{"out-dir", required_argument, NULL, 'o'},
                                         {"service", required_argument, NULL, 's'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"days", required_argument, NULL, 'd'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct certs_gen_opts o = {.out_dir = "certs/dev"};
    unsigned long long days;
    char err[ERR_LEN];
    int c;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.out_dir = optarg; break;
        case 's': o.service = optarg; break;
        case 'n': o.namespace_ = optarg; break;
        case 'd':
            if (cmd_parse_uint("days", optarg, 1, 36500, &days, err, sizeof(err))) {
                fprintf(stderr, "rdma-webhook gen-certs: %s\n", err);
                return 2;
            }
            o.days = (int)days;
            break;
        case 'f': o.force = 1; break;
        case 'h': cmd_certs_usage(stdout); return 0;
        default: cmd_certs_usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        cmd_certs_usage(stderr);
        return 2;
    }
    if (certs_generate(&o, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook gen-certs: %s\n", err);
        return 1;
    }
    printf("wrote %s/ca.crt, ca.key, tls.crt, tls.key\n", o.out_dir);
    return 0;
}
