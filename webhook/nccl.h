/* nccl: how NCCL will read an environment variable's value.
 *
 * NCCL parses integer variables with strtoll(value, NULL, 0), so "022" is
 * octal 18 and "0x16" is 22, and it treats each NCCL_IB_HCA entry as a prefix
 * unless the list starts with '='. Values that parse but do not mean what
 * their author intended are the mistakes this module catches, both in the
 * admin's profiles (an error) and in the user's pods (a warning).
 */
#ifndef RDMA_WEBHOOK_NCCL_H
#define RDMA_WEBHOOK_NCCL_H

#include <stddef.h>

enum nccl_verdict {
    NCCL_VALUE_OK = 0,
    NCCL_VALUE_RANGE,       /* an integer outside the range NCCL accepts */
    NCCL_VALUE_NOT_DECIMAL, /* a leading 0 (octal) or 0x: NCCL reads another number */
    NCCL_VALUE_NOT_INT,     /* not a number at all */
    NCCL_VALUE_HCA_PREFIX,  /* NCCL_IB_HCA entries that are prefixes of other devices */
    NCCL_VALUE_BAD_WORD,    /* not one of the words NCCL knows for this variable */
    NCCL_VALUE_EMPTY,
};

/* Checks value as NCCL would read it for variable name. Unknown variables
 * are OK. On a problem, writes a one-line explanation that starts with
 * "NAME=VALUE " (the value shortened when long) into msg. */
enum nccl_verdict nccl_check(const char *name, const char *value, char *msg, size_t msglen);

/* 1 when name looks like an NCCL variable (NCCL_ prefix). */
int nccl_is_nccl_var(const char *name);

/* 1 when s is a C identifier, the form every env name in a profile must have. */
int nccl_is_c_identifier(const char *s);

#endif
