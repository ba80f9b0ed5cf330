#include "base/quantity.h"

#include "base/err.h"

#include <string.h>

static const char *quantity_digits(const char *s)
{
    while (*s >= '0' && *s <= '9')
        s++;
    return s;
}

/* <number> ::= digits | digits.digits | digits. | .digits; returns the end or NULL. */
static const char *quantity_number(const char *s)
{
    const char *int_end = quantity_digits(s);
    const char *frac_end = int_end;

    if (*int_end == '.')
        frac_end = quantity_digits(int_end + 1);
    if (int_end == s && frac_end <= int_end + 1)
        return NULL;
    return frac_end;
}

static int quantity_suffix_valid(const char *s)
{
    static const char *const suffixes[] = {"",  "n", "u",  "m",  "k",  "M",  "G",  "T",
                                           "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    const char *end;

    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (strcmp(s, suffixes[i]) == 0)
            return 1;
    if (*s != 'e' && *s != 'E')
        return 0;
    s++;
    if (*s == '+' || *s == '-')
        s++;
    end = quantity_digits(s);
    return end != s && *end == '\0';
}

int quantity_valid(const char *s)
{
    const char *end;

    if (*s == '+' || *s == '-')
        s++;
    end = quantity_number(s);
    return end && quantity_suffix_valid(end);
}

int quantity_whole(const char *s, long long *out)
{
    long long v = 0;
    const char *p;

    if (*s == '\0')
        return ERR_FAIL;
    for (p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000)
            return ERR_FAIL;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return ERR_OK;
}
