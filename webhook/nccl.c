#include "nccl.h"

#include "utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct nccl_int_var {
    const char *name;
    long long min, max;
};

/* Ranges from NCCL's environment variable documentation. */
static const struct nccl_int_var nccl_int_vars[] = {
    {"NCCL_IB_TIMEOUT", 1, 31},
    {"NCCL_IB_RETRY_CNT", 0, 7},
    {"NCCL_IB_QPS_PER_CONNECTION", 1, 128},
    {"NCCL_IB_DISABLE", 0, 1},
    {"NCCL_IB_GID_INDEX", -1, 255},
    {"NCCL_IB_SL", 0, 15},
    {"NCCL_IB_TC", 0, 255},
    {"NCCL_IB_ROCE_VERSION_NUM", 1, 2},
    {"NCCL_IB_PCI_RELAXED_ORDERING", 0, 2},
    {"NCCL_IB_ADAPTIVE_ROUTING", 0, 1},
    {"NCCL_IB_SPLIT_DATA_ON_QPS", 0, 1},
    {"NCCL_IB_CUDA_SUPPORT", 0, 1},
    {"NCCL_NET_GDR_READ", 0, 1},
    {"NCCL_P2P_DISABLE", 0, 1},
    {"NCCL_SHM_DISABLE", 0, 1},
    {"NCCL_SOCKET_NTHREADS", 1, 16},
    {"NCCL_NSOCKS_PERTHREAD", 1, 64},
};

struct nccl_word_var {
    const char *name;
    const char *words; /* space-separated, compared without case */
};

static const struct nccl_word_var nccl_word_vars[] = {
    {"NCCL_DEBUG", "VERSION WARN INFO TRACE ABORT"},
    {"NCCL_IB_ADDR_FAMILY", "AF_INET AF_INET6"},
};

#define NCCL_SHOWN_VALUE_MAX 16

/* The value as quoted in messages: short, so a long user value cannot push a
 * warning past what kubectl shows well. */
static void nccl_shown(const char *value, char *out, size_t outlen)
{
    utf8_shorten(value, NCCL_SHOWN_VALUE_MAX, out, outlen);
}

static const struct nccl_int_var *nccl_find_int(const char *name)
{
    for (size_t i = 0; i < sizeof(nccl_int_vars) / sizeof(nccl_int_vars[0]); i++)
        if (strcmp(nccl_int_vars[i].name, name) == 0)
            return &nccl_int_vars[i];
    return NULL;
}

static const struct nccl_word_var *nccl_find_word(const char *name)
{
    for (size_t i = 0; i < sizeof(nccl_word_vars) / sizeof(nccl_word_vars[0]); i++)
        if (strcmp(nccl_word_vars[i].name, name) == 0)
            return &nccl_word_vars[i];
    return NULL;
}

static enum nccl_verdict nccl_check_int(const struct nccl_int_var *v, const char *value,
                                        const char *shown, char *msg, size_t msglen)
{
    const char *digits = value[0] == '-' ? value + 1 : value;
    char *end;
    long long n;

    errno = 0;
    n = strtoll(value, &end, 0);
    if (end == value || *end != '\0' || errno == ERANGE || !strchr("0123456789", digits[0])) {
        snprintf(msg, msglen, "%s=%s is not an integer", v->name, shown);
        return NCCL_VALUE_NOT_INT;
    }
    if (digits[0] == '0' && digits[1] != '\0') {
        snprintf(msg, msglen, "%s=%s is %s to NCCL (%lld); drop the leading 0", v->name, shown,
                 (digits[1] == 'x' || digits[1] == 'X') ? "hex" : "octal", n);
        return NCCL_VALUE_NOT_DECIMAL;
    }
    if (n < v->min || n > v->max) {
        snprintf(msg, msglen, "%s=%s is outside %lld..%lld", v->name, shown, v->min, v->max);
        return NCCL_VALUE_RANGE;
    }
    return NCCL_VALUE_OK;
}

static enum nccl_verdict nccl_check_word(const struct nccl_word_var *v, const char *value,
                                         const char *shown, char *msg, size_t msglen)
{
    size_t n = strlen(value);

    for (const char *w = v->words; *w;) {
        size_t wl = strcspn(w, " ");

        if (wl == n && strncasecmp(w, value, n) == 0)
            return NCCL_VALUE_OK;
        w += wl;
        w += *w == ' ';
    }
    snprintf(msg, msglen, "%s=%s is not one of %s", v->name, shown, v->words);
    return NCCL_VALUE_BAD_WORD;
}

/* 1 when a device name ends in "_<digits>", a port-less index such as
 * mlx5_1, which as a prefix also takes mlx5_10 and up; a driver prefix such
 * as "mlx5" is meant as a prefix. */
static int nccl_indexed_name(const char *tok, size_t len)
{
    size_t i = len;

    while (i > 0 && tok[i - 1] >= '0' && tok[i - 1] <= '9')
        i--;
    return i < len && i > 0 && tok[i - 1] == '_';
}

/* Without a leading '=' (after an optional '^'), NCCL matches each entry as a
 * prefix. */
static enum nccl_verdict nccl_check_hca(const char *value, const char *shown, char *msg,
                                        size_t msglen)
{
    const char *p = value + (value[0] == '^');
    const char *tok;

    if (*p == '=')
        return NCCL_VALUE_OK;
    for (tok = p; *tok;) {
        size_t len = strcspn(tok, ",");

        if (nccl_indexed_name(tok, strcspn(tok, ":,"))) {
            snprintf(msg, msglen,
                     "NCCL_IB_HCA=%s: names are prefixes (mlx5_1 also takes mlx5_1x); "
                     "start the list with =",
                     shown);
            return NCCL_VALUE_HCA_PREFIX;
        }
        tok += len;
        tok += *tok == ',';
    }
    return NCCL_VALUE_OK;
}

enum nccl_verdict nccl_check(const char *name, const char *value, char *msg, size_t msglen)
{
    const struct nccl_int_var *iv = nccl_find_int(name);
    const struct nccl_word_var *wv = nccl_find_word(name);
    char shown[NCCL_SHOWN_VALUE_MAX + 4];

    if (!iv && !wv && strcmp(name, "NCCL_IB_HCA") != 0 && strcmp(name, "NCCL_SOCKET_IFNAME") != 0)
        return NCCL_VALUE_OK;
    nccl_shown(value, shown, sizeof(shown));
    if (value[0] == '\0') {
        snprintf(msg, msglen, "%s is empty", name);
        return NCCL_VALUE_EMPTY;
    }
    if (iv)
        return nccl_check_int(iv, value, shown, msg, msglen);
    if (wv)
        return nccl_check_word(wv, value, shown, msg, msglen);
    if (strcmp(name, "NCCL_IB_HCA") == 0)
        return nccl_check_hca(value, shown, msg, msglen);
    return NCCL_VALUE_OK;
}

int nccl_is_nccl_var(const char *name)
{
    return strncmp(name, "NCCL_", 5) == 0;
}

int nccl_is_c_identifier(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_' ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}
