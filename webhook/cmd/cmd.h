/* cmd: the subcommands of the rdma-webhook binary. Each takes the arguments
 * after its name (argv[0] is the subcommand) and returns the exit status:
 * 0 success, 1 failure at run time, 2 a usage error; nccl-detect, an init
 * container that must never keep its pod from starting, always 0. Only the
 * subcommands print: their helpers (cmd_parse_uint too) fill in a message by
 * err.h's convention, which the subcommand prints on stderr. */
#ifndef RDMA_WEBHOOK_CMD_H
#define RDMA_WEBHOOK_CMD_H

#include "base/err.h"

#include <signal.h>
#include <stddef.h>

#define CMD_DEFAULT_PROFILES "/etc/rdma-webhook/profiles/profiles.json"
#define CMD_DEFAULT_CERT     "/etc/rdma-webhook/tls/tls.crt"
#define CMD_DEFAULT_KEY      "/etc/rdma-webhook/tls/tls.key"

int cmd_serve(int argc, char **argv);
int cmd_mutate(int argc, char **argv);
int cmd_check_profiles(int argc, char **argv);
int cmd_gen_certs(int argc, char **argv);
int cmd_nccl_detect(int argc, char **argv);
int cmd_unregister(int argc, char **argv);

/* Blocks the signals serve takes by sigwait (SIGTERM, SIGINT, SIGHUP) in the
 * calling thread and puts them in set. main calls it first thing for serve:
 * one sent at once (a SIGHUP during a start) stays pending instead of ending
 * the process, and every thread started later inherits the mask. */
void cmd_serve_block_signals(sigset_t *set);

struct profiles;

/* Loads and validates the profiles file at path for a subcommand; on
 * failure prints why on stderr (hint, e.g. "pass --profiles FILE", follows
 * an unreadable file) and returns NULL. */
struct profiles *cmd_profiles_load(const char *path, const char *hint);

/* Parses a whole decimal number in [min, max] for --flag into *out: ERR_OK, or
 * ERR_FAIL with a message naming the flag and its range. */
int cmd_parse_uint(const char *flag, const char *s, unsigned long long min, unsigned long long max,
                   unsigned long long *out, char *err, size_t errlen);

/* Most bytes of --detect-image. */
#define CMD_IMAGE_MAX 1024

/* Checks --detect-image's value (or the image read for
 * --detect-image-from-deployment): 1 to CMD_IMAGE_MAX printable ASCII
 * characters without spaces or '$' (a $(VAR) the kubelet did not expand).
 * ERR_OK, or ERR_FAIL with a message that says what to fix. */
int cmd_check_image(const char *image, char *err, size_t errlen);

#endif
