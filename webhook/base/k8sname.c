#include "base/k8sname.h"

#include <string.h>

static int k8sname_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int k8sname_alnum(char c)
{
    return k8sname_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* One label of s[0..n): starts and ends alphanumeric, '-' inside. */
static int k8sname_label_n(const char *s, size_t n)
{
    if (n == 0 || !k8sname_lower_alnum(s[0]) || !k8sname_lower_alnum(s[n - 1]))
        return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (!k8sname_lower_alnum(s[i]) && s[i] != '-')
            return 0;
    return 1;
}

static int k8sname_subdomain_n(const char *s, size_t n)
{
    size_t start = 0;

    if (n == 0 || n > K8SNAME_SUBDOMAIN_MAX)
        return 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (!k8sname_label_n(s + start, i - start))
            return 0;
        start = i + 1;
    }
    return 1;
}

int k8sname_label(const char *s)
{
    size_t n = strlen(s);

    return n <= K8SNAME_LABEL_MAX && k8sname_label_n(s, n);
}

int k8sname_subdomain(const char *s)
{
    return k8sname_subdomain_n(s, strlen(s));
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 bytes. */
static int k8sname_name_n(const char *name, size_t n)
{
    if (n == 0 || n > K8SNAME_LABEL_MAX || !k8sname_alnum(name[0]) || !k8sname_alnum(name[n - 1]))
        return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (!k8sname_alnum(name[i]) && !strchr("-_.", name[i]))
            return 0;
    return 1;
}

int k8sname_qualified(const char *s)
{
    const char *slash = strchr(s, '/');
    const char *name = slash ? slash + 1 : s;

    if (slash && !k8sname_subdomain_n(s, (size_t)(slash - s)))
        return 0;
    return k8sname_name_n(name, strlen(name));
}

int k8sname_label_value(const char *s)
{
    size_t n = strlen(s);

    return n == 0 || k8sname_name_n(s, n);
}
