/* nccl: how NCCL will read an environment variable's value.
 *
 * NCCL parses integer variables with strtoll(value, NULL, 0), so "022" is
 * octal 18 and "0x16" is 22, and it treats each NCCL_IB_HCA entry as a prefix
 * unless the list starts with '=' (after an optional '^', which excludes the
 * list): "^=mlx5_0", "=mlx5_1:1,mlx5_2:1". Values that parse but do not mean
 * what their author intended are the mistakes this module catches, both in
 * the admin's profiles (an error) and in the user's pods (a warning).
 */
#ifndef RDMA_WEBHOOK_NCCL_H
#define RDMA_WEBHOOK_NCCL_H

#include <stddef.h>

enum nccl_verdict {
    NCCL_VALUE_OK = 0,
    NCCL_VALUE_RANGE,       /* an integer outside the range NCCL accepts */
    NCCL_VALUE_NOT_DECIMAL, /* a leading 0 (octal) or 0x: NCCL reads another number */
    NCCL_VALUE_NOT_INT,     /* not a number at all */
    NCCL_VALUE_HCA_PREFIX,  /* an NCCL_IB_HCA entry that also matches another known device */
    NCCL_VALUE_HCA_SYNTAX,  /* NCCL_IB_HCA that NCCL parses into something else than written */
    NCCL_VALUE_BAD_WORD,    /* not one of the words NCCL knows for this variable */
    NCCL_VALUE_EMPTY,
};

/* Room for every explanation below: a variable's name, its value shortened
 * to a few bytes, and what to write instead. */
#define NCCL_MSG_LEN 200

/* Checks value as NCCL would read it for variable name. Unknown variables
 * are OK. On a problem, writes a one-line explanation that starts with
 * "NAME=VALUE " (the value shortened when long) into msg. The verdict is
 * the answer, not a failure of the call: the admin's profile makes it an
 * error, a user's pod a warning, so each caller words the rest. */
enum nccl_verdict nccl_check(const char *name, const char *value, char *msg, size_t msglen);

/* Checks an NCCL_IB_HCA value: its syntax as NCCL parses it (^ before =,
 * ports 1..255 after ':', no spaces, at least one and at most 32 entries) and,
 * for a prefix list (no '='), whether an entry really collides: an entry
 * ending in a digit that also matches another device named in value itself
 * or in known (an NCCL_IB_HCA-style list of devices the node has, NULL when
 * none is known), as mlx5_1 matches mlx5_10. mlx5 or mlx5_ matching mlx5_1 is
 * what such a prefix is for. nccl_check() calls it with known NULL. */
enum nccl_verdict nccl_check_hca(const char *value, const char *known, char *msg, size_t msglen);

/* 1 when NCCL, given value as NCCL_IB_HCA, would use port port of device
 * dev: each entry a prefix of dev (the whole name after '='), its port when
 * it names one, only the first 32 entries, '^' inverting the
 * answer. value is best checked with nccl_check_hca() first. */
int nccl_hca_matches(const char *value, const char *dev, unsigned port);

/* 1 when s is one entry of a profile's "hca" list: a device name (1-63 of
 * A-Z a-z 0-9 _ - .), optionally ":port" with port 1..255. */
int nccl_is_hca_entry(const char *s);

/* 1 when NCCL reads value as a non-zero integer: strtoll(value, NULL, 0),
 * with the default 0 for an empty or overflowing value. So
 * NCCL_IB_DISABLE=1, but also 2, -1, 0x1, " 1" and "1abc", turn InfiniBand
 * off, while "true" and "yes" read as 0 and leave it on. */
int nccl_reads_nonzero(const char *value);

/* 1 when name looks like an NCCL variable (NCCL_ prefix). */
int nccl_is_nccl_var(const char *name);

/* 1 when s is a C identifier, the form every env name in a profile must have. */
int nccl_is_c_identifier(const char *s);

#endif
