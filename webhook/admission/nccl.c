#include "admission/nccl.h"

#include "base/utf8.h"

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
        snprintf(msg, msglen, "%s=%s: write a whole number", v->name, shown);
        return NCCL_VALUE_NOT_INT;
    }
    if (digits[0] == '0' && digits[1] != '\0') {
        /* NCCL reads it as hex or octal (strtoll base 0). */
        snprintf(msg, msglen, "%s=%s: %s", v->name, shown,
                 (digits[1] == 'x' || digits[1] == 'X') ? "write it in decimal"
                                                        : "drop the leading 0");
        return NCCL_VALUE_NOT_DECIMAL;
    }
    if (n < v->min || n > v->max) {
        snprintf(msg, msglen, "%s=%s: use %lld..%lld", v->name, shown, v->min, v->max);
        return NCCL_VALUE_RANGE;
    }
    return NCCL_VALUE_OK;
}

static enum nccl_verdict nccl_check_word(const struct nccl_word_var *v, const char *value,
                                         const char *shown, char *msg, size_t msglen)
{
    size_t n = strlen(value), i;
    char words[64];

    for (const char *w = v->words; *w;) {
        size_t wl = strcspn(w, " ");

        if (wl == n && strncasecmp(w, value, n) == 0)
            return NCCL_VALUE_OK;
        w += wl;
        w += *w == ' ';
    }
    /* "VERSION|WARN|INFO": the words, short enough for a warning. */
    for (i = 0; v->words[i] && i < sizeof(words) - 1; i++)
        words[i] = v->words[i] == ' ' ? '|' : v->words[i];
    words[i] = '\0';
    snprintf(msg, msglen, "%s=%s: use %s", v->name, shown, words);
    return NCCL_VALUE_BAD_WORD;
}

/* NCCL_IB_HCA as NCCL reads it (net_ib's init and parseStringList): an
 * optional '^' (exclude the list), then an optional '=' (names are exact, not
 * prefixes), then entries "name" or "name:port" separated by ','. Empty
 * entries are skipped, an entry ":port" without a name is skipped, a port is
 * read with atoi (so "x" or "" is port 0, which no device has), spaces are
 * part of a name, and only the first NCCL_HCA_MAX_ENTRIES entries count. */
#define NCCL_HCA_MAX_ENTRIES 32

struct nccl_hca {
    int exclude, exact;
    const char *list; /* after the markers */
};

static struct nccl_hca nccl_hca_split(const char *value)
{
    struct nccl_hca h = {0};

    h.exclude = value[0] == '^';
    value += h.exclude;
    h.exact = value[0] == '=';
    h.list = value + h.exact;
    return h;
}

/* The name part of the entry at *tok (up to ':' or ','), and the whole
 * entry's length; advances *tok past the entry and its comma. */
static size_t nccl_hca_next(const char **tok, size_t *entry_len)
{
    const char *t = *tok;
    size_t len = strcspn(t, ",");

    *entry_len = len;
    *tok = t + len + (t[len] == ',');
    return strcspn(t, ":,");
}

static int nccl_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* 1 when the port text (after ':', len bytes) is a whole number 1..255. */
static int nccl_hca_port_ok(const char *s, size_t len)
{
    unsigned port = 0;

    if (len == 0 || len > 3)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (!nccl_is_digit(s[i]))
            return 0;
        port = port * 10 + (unsigned)(s[i] - '0');
    }
    return port >= 1 && port <= 255;
}

int nccl_is_hca_entry(const char *s)
{
    size_t name = strcspn(s, ":");

    if (name == 0 || name > 63)
        return 0;
    for (size_t i = 0; i < name; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || nccl_is_digit(s[i]) ||
              s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return 0;
    return s[name] == '\0' || nccl_hca_port_ok(s + name + 1, strlen(s + name + 1));
}

/* Whether device name d (dlen bytes) is caught by prefix n (nlen bytes)
 * without being n: a real collision is an index extended by more digits
 * (mlx5_1 catching mlx5_10), never a driver prefix that ends before an index
 * (mlx5 or mlx5_ catching mlx5_1, which is what such a prefix is for). */
static int nccl_hca_catches(const char *n, size_t nlen, const char *d, size_t dlen)
{
    return nlen > 0 && dlen > nlen && nccl_is_digit(n[nlen - 1]) && nccl_is_digit(d[nlen]) &&
           memcmp(n, d, nlen) == 0;
}

/* Looks for a device in list (an NCCL_IB_HCA-style text, markers allowed)
 * that prefix n catches; returns its name and length through *d. */
static int nccl_hca_find_caught(const char *n, size_t nlen, const char *list, const char **d,
                                size_t *dlen)
{
    const char *tok;
    size_t entry;

    if (!list)
        return 0;
    for (tok = nccl_hca_split(list).list; *tok;) {
        const char *at = tok;
        size_t len = nccl_hca_next(&tok, &entry);

        if (nccl_hca_catches(n, nlen, at, len)) {
            *d = at;
            *dlen = len;
            return 1;
        }
    }
    return 0;
}

/* A device name as quoted in a message: at most 12 bytes ("mlx5_bond_0"
 * whole), so that a warning naming two still fits MUTATE_WARNING_MAX. */
#define NCCL_SHOWN_DEVICE_MAX 12
static void nccl_hca_shown(const char *s, size_t len, char *out, size_t outlen)
{
    char name[64];

    if (len >= sizeof(name))
        len = sizeof(name) - 1;
    memcpy(name, s, len);
    name[len] = '\0';
    utf8_shorten(name, NCCL_SHOWN_DEVICE_MAX, out,
                 outlen < NCCL_SHOWN_DEVICE_MAX + 1 ? outlen : NCCL_SHOWN_DEVICE_MAX + 1);
}

/* The entries NCCL would misread, one at a time; 0 when all are fine. */
static enum nccl_verdict nccl_hca_entries(const struct nccl_hca *h, const char *shown, char *msg,
                                          size_t msglen)
{
    size_t entries = 0, entry;

    for (const char *tok = h->list; *tok;) {
        const char *at = tok;
        size_t name = nccl_hca_next(&tok, &entry);

        if (entry == 0)
            continue;
        if (memchr(at, ' ', entry) || memchr(at, '\t', entry)) {
            snprintf(msg, msglen, "NCCL_IB_HCA=%s: remove the spaces", shown);
            return NCCL_VALUE_HCA_SYNTAX;
        }
        if (name == 0) {
            snprintf(msg, msglen, "NCCL_IB_HCA=%s: name a device before each :port", shown);
            return NCCL_VALUE_HCA_SYNTAX;
        }
        if (name < entry && !nccl_hca_port_ok(at + name + 1, entry - name - 1)) {
            snprintf(msg, msglen, "NCCL_IB_HCA=%s: use ports from 1 to 255", shown);
            return NCCL_VALUE_HCA_SYNTAX;
        }
        entries++;
    }
    if (entries == 0) {
        snprintf(msg, msglen, "NCCL_IB_HCA=%s: name at least one device", shown);
        return NCCL_VALUE_HCA_SYNTAX;
    }
    if (entries > NCCL_HCA_MAX_ENTRIES) {
        snprintf(msg, msglen, "NCCL_IB_HCA=%s: list at most %d devices", shown,
                 NCCL_HCA_MAX_ENTRIES);
        return NCCL_VALUE_HCA_SYNTAX;
    }
    return NCCL_VALUE_OK;
}

enum nccl_verdict nccl_check_hca(const char *value, const char *known, char *msg, size_t msglen)
{
    struct nccl_hca h = nccl_hca_split(value);
    char shown[NCCL_SHOWN_VALUE_MAX + 4], n_shown[NCCL_SHOWN_VALUE_MAX + 4],
        d_shown[NCCL_SHOWN_VALUE_MAX + 4];
    enum nccl_verdict v;
    size_t entry;

    nccl_shown(value, shown, sizeof(shown));
    if (value[0] == '\0') {
        snprintf(msg, msglen, "NCCL_IB_HCA: set a device list or remove it (empty)");
        return NCCL_VALUE_EMPTY;
    }
    if (h.list[0] == '^') {
        snprintf(msg, msglen, "NCCL_IB_HCA=%s: write ^= (NCCL reads ^ only before =)", shown);
        return NCCL_VALUE_HCA_SYNTAX;
    }
    if ((v = nccl_hca_entries(&h, shown, msg, msglen)) != NCCL_VALUE_OK || h.exact)
        return v;
    for (const char *tok = h.list; *tok;) {
        const char *n = tok, *d;
        size_t nlen = nccl_hca_next(&tok, &entry), dlen;

        if (nccl_hca_find_caught(n, nlen, value, &d, &dlen) ||
            nccl_hca_find_caught(n, nlen, known, &d, &dlen)) {
            nccl_hca_shown(n, nlen, n_shown, sizeof(n_shown));
            nccl_hca_shown(d, dlen, d_shown, sizeof(d_shown));
            snprintf(msg, msglen, "NCCL_IB_HCA: write %s first (%s also takes %s)",
                     h.exclude ? "^=" : "=", n_shown, d_shown);
            return NCCL_VALUE_HCA_PREFIX;
        }
    }
    return NCCL_VALUE_OK;
}

/* A port as NCCL reads it with atoi: the leading digits (0 when none). */
static unsigned nccl_hca_port_num(const char *s, size_t len)
{
    unsigned port = 0;

    for (size_t i = 0; i < len && nccl_is_digit(s[i]) && port < 1000; i++)
        port = port * 10 + (unsigned)(s[i] - '0');
    return port;
}

int nccl_hca_matches(const char *value, const char *dev, unsigned port)
{
    struct nccl_hca h = nccl_hca_split(value);
    size_t entry, counted = 0;
    int found = 0;

    for (const char *tok = h.list; *tok && !found && counted < NCCL_HCA_MAX_ENTRIES;) {
        const char *at = tok;
        size_t name = nccl_hca_next(&tok, &entry);

        if (name == 0) /* "" or ":port": NCCL skips it */
            continue;
        counted++;
        if (name < entry && nccl_hca_port_num(at + name + 1, entry - name - 1) != port)
            continue;
        found = strncmp(dev, at, name) == 0 && (!h.exact || dev[name] == '\0');
    }
    return found != h.exclude;
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
        snprintf(msg, msglen, "%s: set a value or remove it (empty)", name);
        return NCCL_VALUE_EMPTY;
    }
    if (iv)
        return nccl_check_int(iv, value, shown, msg, msglen);
    if (wv)
        return nccl_check_word(wv, value, shown, msg, msglen);
    if (strcmp(name, "NCCL_IB_HCA") == 0)
        return nccl_check_hca(value, NULL, msg, msglen);
    return NCCL_VALUE_OK;
}

int nccl_reads_nonzero(const char *value)
{
    long long n;

    /* NCCL's ncclLoadParam: strtoll(value, NULL, 0), its default (0 for
     * every variable this is asked about) when the value is empty or errno
     * is set. */
    if (!*value)
        return 0;
    errno = 0;
    n = strtoll(value, NULL, 0);
    return errno == 0 && n != 0;
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
