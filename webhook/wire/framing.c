#include "wire/framing.h"

#include <string.h>
#include <strings.h>

/* The codings of every field, as one list (RFC 9110 5.3). */
struct framing_scan {
    int codings;
    int chunked;      /* how many of them are chunked */
    int last_chunked; /* the last one is */
    int last_params;  /* the last one has parameters */
    int bad;
};

/* A token character (RFC 9110 5.6.2). */
static int framing_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int framing_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* One list element s[0..n): OWS coding [ OWS ";" parameters ] OWS. Empty
 * elements are allowed and skipped, as the RFC's list rule says. */
static void framing_element(struct framing_scan *sc, const char *s, size_t n)
{
    size_t i = 0, start;
    int is_chunked, has_params;

    while (n > 0 && framing_ows(s[n - 1]))
        n--;
    while (i < n && framing_ows(s[i]))
        i++;
    if (i == n)
        return;
    start = i;
    while (i < n && framing_tchar((unsigned char)s[i]))
        i++;
    is_chunked = i - start == 7 && strncasecmp(s + start, "chunked", 7) == 0;
    while (i < n && framing_ows(s[i]))
        i++;
    has_params = i < n && s[i] == ';';
    if (i == start || (i < n && !has_params) || (has_params && i + 1 == n)) {
        sc->bad = 1;
        return;
    }
    sc->codings++;
    sc->chunked += is_chunked;
    sc->last_chunked = is_chunked;
    sc->last_params = has_params;
}

static void framing_field(struct framing_scan *sc, const char *v)
{
    const char *comma;

    if (!*v)
        sc->bad = 1;
    while ((comma = strchr(v, ',')) != NULL) {
        framing_element(sc, v, (size_t)(comma - v));
        v = comma + 1;
    }
    framing_element(sc, v, strlen(v));
}

static unsigned framing_refuse(const char **why, unsigned status, const char *reason)
{
    *why = reason;
    return status;
}

unsigned framing_check(const char *const *te, size_t n, int has_length, const char **why)
{
    struct framing_scan sc = {0};

    if (n == 0)
        return 0;
    if (has_length)
        return framing_refuse(why, 400,
                              "send either Content-Length or Transfer-Encoding, not both\n");
    if (n > FRAMING_MAX_FIELDS)
        return framing_refuse(why, 400, "too many Transfer-Encoding fields\n");
    for (size_t i = 0; i < n; i++)
        framing_field(&sc, te[i]);
    if (sc.bad || sc.codings == 0)
        return framing_refuse(why, 400, "malformed Transfer-Encoding\n");
    if (sc.chunked != 1 || !sc.last_chunked)
        return framing_refuse(why, 400,
                              "Transfer-Encoding must end in chunked, once; the "
                              "body's length cannot be known\n");
    if (sc.last_params || n != 1 || strcasecmp(te[0], "chunked") != 0)
        return framing_refuse(why, 501,
                              "only Transfer-Encoding: chunked is supported; send "
                              "Content-Length or chunked alone\n");
    return 0;
}
