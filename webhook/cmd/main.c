/* rdma-webhook: a Kubernetes mutating admission webhook that makes
 * distributed-training pods RDMA-ready for NCCL. This file only dispatches to
 * the subcommands. */
#include "cmd/cmd.h"

#include "base/version.h"

#include <stdio.h>
#include <string.h>

static void main_usage(FILE *f)
{
    fprintf(f, "Usage: rdma-webhook COMMAND [flags]\n"
               "\n"
               "Makes Kubeflow PyTorchJob pods RDMA-ready for NCCL at admission.\n"
               "\n"
               "Commands:\n"
               "  serve            serve the admission webhook over HTTPS\n"
               "  mutate           run the mutation offline on reviews, Pods and PyTorchJobs\n"
               "                   (JSON or YAML)\n"
               "  check-profiles   validate a profiles file (--show: as the webhook applies it)\n"
               "  gen-certs        make a CA and a serving certificate (ECDSA P-256)\n"
               "  nccl-detect      write the NCCL configuration of the RDMA ports this container\n"
               "                   sees (the init container rdma-webhook-detect)\n"
               "  unregister       delete the webhook configurations before an uninstall\n"
               "                   (the Helm chart's pre-delete hook)\n"
               "\n"
               "  --help           show this help; COMMAND --help shows a command's flags\n"
               "  --version        print the version\n");
}

/* serve takes SIGHUP, SIGTERM and SIGINT by sigwait. A SIGHUP before they
 * are blocked ends the process (status 129), so they are blocked before
 * anything else runs: from .preinit_array, which glibc calls with main's
 * arguments once the libraries are loaded, before their initialisers
 * (GnuTLS's, OpenSSL's: milliseconds on a loaded node) and main. */
static void main_preinit(int argc, char **argv, char **envp)
{
    sigset_t set;

    (void)envp;
    if (argc >= 2 && argv && argv[1] && strcmp(argv[1], "serve") == 0)
        cmd_serve_block_signals(&set);
}

__attribute__((used, section(".preinit_array"))) static void (*const main_preinit_entry)(
    int, char **, char **) = main_preinit;

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = {{"serve", cmd_serve},
                {"mutate", cmd_mutate},
                {"check-profiles", cmd_check_profiles},
                {"gen-certs", cmd_gen_certs},
                {"nccl-detect", cmd_nccl_detect},
                {"unregister", cmd_unregister}};

    if (argc < 2) {
        main_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        main_usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("rdma-webhook %s\n", RDMA_WEBHOOK_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "rdma-webhook: unknown command \"%s\"; run 'rdma-webhook --help'\n", argv[1]);
    return 2;
}
