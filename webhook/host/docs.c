#include "host/docs.h"

#include "base/jsoncheck.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define DOCS_TAG_PREFIX "tag:yaml.org,2002:"

static const struct docs_limits docs_limits_default = {DOCS_MAX_DEPTH, DOCS_MAX_NODES,
                                                       DOCS_MAX_ALIASES, 0};

void docs_init(struct docs *d)
{
    memset(d, 0, sizeof(*d));
}

void docs_free(struct docs *d)
{
    for (size_t i = 0; i < d->n; i++)
        cJSON_Delete(d->v[i]);
    free(d->v);
    free(d->line);
    docs_init(d);
}

static int docs_push(struct docs *d, cJSON *v, size_t line)
{
    if (d->n == d->alloc) {
        size_t n = d->alloc ? d->alloc * 2 : 8;
        cJSON **nv = realloc(d->v, n * sizeof(*nv));
        size_t *nl;

        if (!nv)
            return ERR_NOMEM;
        d->v = nv;
        if (!(nl = realloc(d->line, n * sizeof(*nl))))
            return ERR_NOMEM;
        d->line = nl;
        d->alloc = n;
    }
    d->v[d->n] = v;
    d->line[d->n++] = line;
    return ERR_OK;
}

/* ---- numbers, exactly ---- */

/* The shortest of 15, 16 or 17 digits that reads back as v exactly (cJSON
 * prints 15 when they are merely close: DBL_MAX as 1.79769313486232e+308,
 * which reads back as an infinity). */
static void docs_number_text(double v, char *out, size_t outlen)
{
    if (!isfinite(v)) {
        snprintf(out, outlen, "null");
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, outlen, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* A number as read: when its text is not what docs_number_text() makes of
 * the double (an integer beyond 2^53, "1.0", "1e3"), the text is kept in the
 * node's valuestring, which cJSON copies and frees with the node and no
 * reader of numbers looks at, and written back instead. NULL: out of
 * memory. */
static cJSON *docs_number(double v, const char *text, size_t len)
{
    cJSON *n = cJSON_CreateNumber(v);
    char shown[32];

    if (!n || !text)
        return n;
    docs_number_text(v, shown, sizeof(shown));
    if (strlen(shown) == len && memcmp(shown, text, len) == 0)
        return n;
    if (!(n->valuestring = cJSON_malloc(len + 1))) {
        cJSON_Delete(n);
        return NULL;
    }
    memcpy(n->valuestring, text, len);
    n->valuestring[len] = '\0';
    return n;
}

/* What a number node is written as. */
static const char *docs_number_of(const cJSON *v, char *buf, size_t buflen)
{
    if (v->valuestring)
        return v->valuestring;
    docs_number_text(v->valuedouble, buf, buflen);
    return buf;
}

/* ---- scalars, as go-yaml v2 resolves them ---- */

enum docs_kind { DOCS_K_STR, DOCS_K_NULL, DOCS_K_BOOL, DOCS_K_INT, DOCS_K_FLOAT, DOCS_K_NONFINITE };

struct docs_scalar {
    enum docs_kind kind;
    int truth;              /* DOCS_K_BOOL */
    double num;             /* DOCS_K_INT and DOCS_K_FLOAT */
    int negative;           /* DOCS_K_INT: the value is -mag */
    unsigned long long mag; /* DOCS_K_INT: its magnitude, exactly */
};

static int docs_word_in(const char *s, size_t len, const char *const *words)
{
    for (; *words; words++)
        if (strlen(*words) == len && memcmp(s, *words, len) == 0)
            return 1;
    return 0;
}

/* The words go-yaml v2 looks up before anything else. */
static int docs_lookup(const char *s, size_t len, struct docs_scalar *out)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"y",  "Y",  "yes",  "Yes",  "YES",  "on",
                                        "On", "ON", "true", "True", "TRUE", NULL};
    static const char *const falses[] = {"n",   "N",   "no",    "No",    "NO",    "off",
                                         "Off", "OFF", "false", "False", "FALSE", NULL};
    static const char *const nonfinite[] = {".nan",  ".NaN",  ".NAN",  ".inf",  ".Inf",
                                            ".INF",  "+.inf", "+.Inf", "+.INF", "-.inf",
                                            "-.Inf", "-.INF", NULL};

    if (len == 0 || docs_word_in(s, len, nulls))
        out->kind = DOCS_K_NULL;
    else if (docs_word_in(s, len, trues) || docs_word_in(s, len, falses))
        out->kind = DOCS_K_BOOL, out->truth = docs_word_in(s, len, trues);
    else if (docs_word_in(s, len, nonfinite))
        out->kind = DOCS_K_NONFINITE;
    else
        return 0;
    return 1;
}

static int docs_digit(char c, unsigned base)
{
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'z' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'Z' ? (unsigned)(c - 'A' + 10)
                                        : 99;

    return d < base ? (int)d : -1;
}

/* Go's strconv.ParseInt(s, 0, 64), then ParseUint for a larger one without
 * a sign: [+-], then 0x, 0o, 0b or a leading 0 (octal), then digits. */
static int docs_int(const char *s, size_t len, struct docs_scalar *out)
{
    size_t i = 0;
    unsigned base = 10;
    unsigned long long v = 0;
    int sign = 0;

    if (len && (s[0] == '+' || s[0] == '-'))
        sign = s[i++] == '-' ? -1 : 1;
    if (i == len)
        return 0;
    if (s[i] == '0') {
        char p = len - i >= 3 ? (char)(s[i + 1] | 0x20) : 0;

        base = p == 'x' ? 16 : p == 'b' ? 2 : 8;
        i += p == 'x' || p == 'b' || p == 'o' ? 2 : 1;
    }
    for (; i < len; i++) {
        int d = docs_digit(s[i], base);

        if (d < 0 || v > (~0ull - (unsigned)d) / base)
            return 0;
        v = v * base + (unsigned)d;
    }
    /* int64 with a sign; up to uint64 without one. */
    if ((sign < 0 && v > (1ull << 63)) || (sign > 0 && v > (1ull << 63) - 1))
        return 0;
    out->kind = DOCS_K_INT;
    out->negative = sign < 0 && v != 0;
    out->mag = v;
    out->num = out->negative ? -(double)v : (double)v;
    return 1;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? (go-yaml's
 * yamlStyleFloat), read as strconv.ParseFloat does; one beyond a double's
 * range stays a string there too. */
static int docs_float(const char *s, size_t len, struct docs_scalar *out)
{
    size_t i = 0, digits = 0;
    char *end;
    double v;

    if (i < len && (s[i] == '+' || s[i] == '-'))
        i++;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        digits++;
    if (i < len && s[i] == '.') {
        size_t frac = 0;

        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            frac++;
        if (!digits && !frac)
            return 0;
    } else if (!digits) {
        return 0;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp = 0;

        if (++i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            exp++;
        if (!exp)
            return 0;
    }
    if (i != len)
        return 0;
    v = strtod(s, &end); /* s is NUL-terminated right after len */
    if (isinf(v))
        return 0;
    out->kind = DOCS_K_FLOAT;
    out->num = v;
    return 1;
}

/* A plain, untagged scalar (or one tagged !!int, !!float, !!bool, !!null:
 * go-yaml resolves those the same way, then checks the type). s[len] is
 * NUL. Returns ERR_NOMEM or ERR_OK. */
static int docs_resolve(const char *s, size_t len, struct docs_scalar *out)
{
    char small[128], *plain = small;
    size_t n = 0;

    memset(out, 0, sizeof(*out));
    if (docs_lookup(s, len, out))
        return ERR_OK;
    if (s[0] == '.') {
        docs_float(s, len, out); /* ".5": read as written, without '_' removed */
        return ERR_OK;
    }
    if (!(s[0] == '+' || s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
        return ERR_OK;
    /* go-yaml drops every '_' before reading a number. */
    if (len >= sizeof(small) && !(plain = malloc(len + 1)))
        return ERR_NOMEM;
    for (size_t i = 0; i < len; i++)
        if (s[i] != '_')
            plain[n++] = s[i];
    plain[n] = '\0';
    if (!docs_int(plain, n, out))
        docs_float(plain, n, out);
    if (plain != small)
        free(plain);
    return ERR_OK;
}

/* ---- YAML in ---- */

struct docs_anchor {
    char *name;
    cJSON *node;   /* in the document being built */
    size_t nodes;  /* the values a copy holds */
    size_t bytes;  /* and the bytes it counts for (docs_count) */
    size_t height; /* its nesting: 0 for a scalar */
    int done;      /* its end was seen, so an alias may copy it */
};

struct docs_frame {
    cJSON *node;           /* an object or an array, already in the tree */
    char *key;             /* an object's key that waits for its value */
    size_t nodes_at_start; /* for its anchor's count */
    size_t bytes_at_start;
    size_t height; /* the tallest child so far */
    size_t anchor; /* its anchor's index plus 1, or 0 */
    yaml_mark_t mark;
};

struct docs_yaml {
    yaml_parser_t parser;
    const struct docs_limits *lim;
    struct docs *out;
    struct docs_frame *stack; /* lim->depth of them */
    size_t depth;
    struct docs_anchor *anchors; /* lim->aliases of them */
    size_t n_anchors;
    size_t nodes, aliases;
    size_t bytes, max_bytes; /* what the values count for, aliases expanded */
    cJSON *root;
    size_t root_line;
    const char *text; /* the input, for what libyaml's events do not say */
    size_t len;
    size_t at_char, at_byte; /* a mark's index (characters) and its byte */
    char *err;
    size_t errlen;
};

static int docs_at(struct docs_yaml *y, int code, const yaml_mark_t *m, const char *what)
{
    return err_set(y->err, y->errlen, code, "%s at line %zu, column %zu", what, m->line + 1,
                   m->column + 1);
}

static int docs_syntax(struct docs_yaml *y, const char *text, size_t len)
{
    const yaml_parser_t *p = &y->parser;
    size_t line, column;

    if (p->error == YAML_MEMORY_ERROR)
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    if (p->error == YAML_READER_ERROR) {
        jsoncheck_line_column(text, len, p->problem_offset, &line, &column);
        return err_set(
            y->err, y->errlen, ERR_FAIL, "not valid YAML: %s at line %zu, column %zu (byte %zu)",
            p->problem ? p->problem : "unreadable input", line, column, p->problem_offset);
    }
    if (p->context)
        return err_set(y->err, y->errlen, ERR_FAIL,
                       "not valid YAML at line %zu, column %zu: %s (%s at line %zu, column %zu)",
                       p->problem_mark.line + 1, p->problem_mark.column + 1,
                       p->problem ? p->problem : "syntax error", p->context,
                       p->context_mark.line + 1, p->context_mark.column + 1);
    return err_set(y->err, y->errlen, ERR_FAIL, "not valid YAML at line %zu, column %zu: %s",
                   p->problem_mark.line + 1, p->problem_mark.column + 1,
                   p->problem ? p->problem : "syntax error");
}

static struct docs_frame *docs_top(struct docs_yaml *y)
{
    return y->depth ? &y->stack[y->depth - 1] : NULL;
}

/* In a mapping, before its key: the next event is a key. */
static int docs_wants_key(struct docs_yaml *y)
{
    struct docs_frame *f = docs_top(y);

    return f && cJSON_IsObject(f->node) && !f->key;
}

/* Counts n values of bytes bytes (a value counts its text, a key its name,
 * and one byte each besides), before they are made: an alias costs what it
 * copies, so a few aliases of a large value are refused before the copies
 * take the memory, as are many aliases of many values. */
static int docs_count(struct docs_yaml *y, size_t n, size_t bytes, const yaml_mark_t *m)
{
    char what[224];

    if (n > y->lim->nodes - y->nodes) {
        snprintf(what, sizeof(what), "more than %zu values (aliases expanded)", y->lim->nodes);
        return docs_at(y, ERR_TOO_BIG, m, what);
    }
    if (bytes > y->max_bytes - y->bytes) {
        snprintf(what, sizeof(what),
                 "aliases expand the input to more than %zu bytes (the limit: %u times the "
                 "input's size, at least %u MiB); write the values out or use fewer aliases,",
                 y->max_bytes, DOCS_BYTES_PER_INPUT, DOCS_MIN_BYTES >> 20);
        return docs_at(y, ERR_TOO_BIG, m, what);
    }
    y->nodes += n;
    y->bytes += bytes;
    return ERR_OK;
}

static int docs_nest(struct docs_yaml *y, size_t height, const yaml_mark_t *m)
{
    char what[96];

    if (height > y->lim->depth || y->depth > y->lim->depth - height) {
        snprintf(what, sizeof(what), "nested deeper than %zu", y->lim->depth);
        return docs_at(y, ERR_TOO_BIG, m, what);
    }
    return ERR_OK;
}

/* Hangs v where the stream is: the root, a sequence's next item or the
 * pending key's value. v is the tree's (or freed) either way. */
static int docs_attach(struct docs_yaml *y, cJSON *v, size_t height, const yaml_mark_t *m)
{
    struct docs_frame *f = docs_top(y);
    int ok;

    if (!f) {
        y->root = v;
        y->root_line = m->line + 1;
        return ERR_OK;
    }
    ok = cJSON_IsArray(f->node) ? cJSON_AddItemToArray(f->node, v)
                                : cJSON_AddItemToObject(f->node, f->key, v);
    free(f->key);
    f->key = NULL;
    if (!ok) {
        cJSON_Delete(v);
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    }
    if (height > f->height)
        f->height = height;
    return ERR_OK;
}

static int docs_anchor(struct docs_yaml *y, const yaml_char_t *name, cJSON *node, size_t *index,
                       const yaml_mark_t *m)
{
    char what[64];

    *index = 0;
    if (!name)
        return ERR_OK;
    if (y->n_anchors == y->lim->aliases) {
        snprintf(what, sizeof(what), "more than %zu anchors", y->lim->aliases);
        return docs_at(y, ERR_TOO_BIG, m, what);
    }
    if (!(y->anchors[y->n_anchors].name = strdup((const char *)name)))
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    y->anchors[y->n_anchors].node = node;
    y->anchors[y->n_anchors].done = 0;
    *index = ++y->n_anchors;
    return ERR_OK;
}

static void docs_drop_anchors(struct docs_yaml *y)
{
    for (size_t i = 0; i < y->n_anchors; i++)
        free(y->anchors[i].name);
    y->n_anchors = 0;
}

static int docs_start(struct docs_yaml *y, const yaml_event_t *ev)
{
    int map = ev->type == YAML_MAPPING_START_EVENT;
    const yaml_char_t *anchor =
        map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
    struct docs_frame *f;
    cJSON *node;
    int rc;

    if (docs_wants_key(y))
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       map ? "a mapping as a key" : "a sequence as a key");
    if ((rc = docs_nest(y, 1, &ev->start_mark)) || (rc = docs_count(y, 1, 1, &ev->start_mark)))
        return rc;
    if (!(node = map ? cJSON_CreateObject() : cJSON_CreateArray()))
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    if ((rc = docs_attach(y, node, 0, &ev->start_mark)))
        return rc;
    f = &y->stack[y->depth++];
    memset(f, 0, sizeof(*f));
    f->node = node;
    f->nodes_at_start = y->nodes - 1;
    f->bytes_at_start = y->bytes - 1;
    f->mark = ev->start_mark;
    return docs_anchor(y, anchor, node, &f->anchor, &ev->start_mark);
}

static int docs_key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A key object holds twice, in *dup (NULL: none); sorted, so an object of
 * many keys costs n log n. ERR_OK or ERR_NOMEM. */
static int docs_duplicate_key(const cJSON *object, const char **dup)
{
    const char **keys;
    size_t n = 0, i = 0;

    *dup = NULL;
    for (const cJSON *c = object->child; c; c = c->next)
        n++;
    if (n < 2)
        return ERR_OK;
    if (!(keys = malloc(n * sizeof(*keys))))
        return ERR_NOMEM;
    for (const cJSON *c = object->child; c; c = c->next)
        keys[i++] = c->string;
    qsort(keys, n, sizeof(*keys), docs_key_cmp);
    for (i = 1; i < n && !*dup; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
            *dup = keys[i]; /* points into object, which outlives the call */
    free(keys);
    return ERR_OK;
}

static int docs_unique_keys(struct docs_yaml *y, const struct docs_frame *f)
{
    const char *dup;
    char what[160];

    if (docs_duplicate_key(f->node, &dup) != ERR_OK)
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    if (!dup)
        return ERR_OK;
    snprintf(what, sizeof(what), "key \"%.64s\" twice in the mapping", dup);
    return docs_at(y, ERR_FAIL, &f->mark, what);
}

static int docs_end(struct docs_yaml *y)
{
    struct docs_frame *f = docs_top(y);
    struct docs_frame *parent;
    size_t height = f->height + 1;
    int rc = cJSON_IsObject(f->node) ? docs_unique_keys(y, f) : ERR_OK;

    if (f->anchor) {
        struct docs_anchor *a = &y->anchors[f->anchor - 1];

        a->nodes = y->nodes - f->nodes_at_start;
        a->bytes = y->bytes - f->bytes_at_start;
        a->height = height;
        a->done = 1;
    }
    free(f->key);
    y->depth--;
    parent = docs_top(y);
    if (parent && height > parent->height)
        parent->height = height;
    return rc;
}

static int docs_tag_is(const yaml_char_t *tag, const char *name)
{
    return tag && strncmp((const char *)tag, DOCS_TAG_PREFIX, strlen(DOCS_TAG_PREFIX)) == 0 &&
           strcmp((const char *)tag + strlen(DOCS_TAG_PREFIX), name) == 0;
}

/* 1 or 2 digits at *p (Go's getnum, not fixed), into *v. */
static int docs_ts_num(const char **p, const char *end, int *v)
{
    const char *s = *p;

    if (s >= end || *s < '0' || *s > '9')
        return 0;
    *v = *s++ - '0';
    if (s < end && *s >= '0' && *s <= '9')
        *v = *v * 10 + (*s++ - '0');
    *p = s;
    return 1;
}

static int docs_ts_days(int month, int year)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);

    return days[month - 1] + (month == 2 && leap);
}

/* go-yaml v2's parseTimestamp: time.Parse with "2006-1-2T15:4:5.999999999Z07:00"
 * (T or t), "2006-1-2 15:4:5.999999999" or "2006-1-2", which is what a
 * scalar tagged !!timestamp must be for kubectl. */
static int docs_timestamp(const char *s, size_t len)
{
    const char *p = s + 4, *end = s + len;
    int year = 0, month, day, hour, min, sec, tz = 0, tzh, tzm;

    if (len < 5 || strspn(s, "0123456789") != 4)
        return 0;
    for (int i = 0; i < 4; i++)
        year = year * 10 + (s[i] - '0');
    if (*p++ != '-' || !docs_ts_num(&p, end, &month) || month < 1 || month > 12 || p >= end ||
        *p++ != '-' || !docs_ts_num(&p, end, &day) || day < 1 || day > docs_ts_days(month, year))
        return 0;
    if (p == end)
        return 1;
    if (*p == 'T' || *p == 't')
        tz = 1;
    else if (*p != ' ')
        return 0;
    p++;
    if (!docs_ts_num(&p, end, &hour) || hour > 23 || p >= end || *p++ != ':' ||
        !docs_ts_num(&p, end, &min) || min > 59 || p >= end || *p++ != ':' ||
        !docs_ts_num(&p, end, &sec) || sec > 59)
        return 0;
    if (end - p >= 2 && (*p == '.' || *p == ',') && p[1] >= '0' && p[1] <= '9')
        for (p++; p < end && *p >= '0' && *p <= '9'; p++)
            ;
    if (!tz)
        return p == end;
    if (p < end && *p == 'Z')
        return p + 1 == end;
    /* ±hh:mm, two digits each, hh at most 24 and mm at most 60 as Go
     * allows; s is NUL-terminated after len (libyaml's values are). */
    if (end - p != 6 || (*p != '+' && *p != '-') || p[3] != ':' ||
        strspn(p + 1, "0123456789") != 2 || strspn(p + 4, "0123456789") != 2)
        return 0;
    tzh = (p[1] - '0') * 10 + (p[2] - '0');
    tzm = (p[4] - '0') * 10 + (p[5] - '0');
    return tzh <= 24 && tzm <= 60;
}

/* The byte of the input at a mark's index, which libyaml counts in
 * characters: from the last one asked for (marks come in order), or from
 * the start. SIZE_MAX for input in UTF-16 (libyaml reads it too). */
static size_t docs_byte_at(struct docs_yaml *y, size_t index)
{
    const unsigned char *t = (const unsigned char *)y->text;

    if (y->len >= 2 && ((t[0] == 0xff && t[1] == 0xfe) || (t[0] == 0xfe && t[1] == 0xff)))
        return SIZE_MAX;
    if (index < y->at_char)
        y->at_char = y->at_byte = 0;
    while (y->at_char < index && y->at_byte < y->len) {
        y->at_byte++;
        while (y->at_byte < y->len && (t[y->at_byte] & 0xc0) == 0x80)
            y->at_byte++;
        y->at_char++;
    }
    return y->at_byte;
}

/* A tag right before a ',' in a flow collection (`[!!str, 1]`): libyaml
 * ends the tag at the ',', go-yaml (kubectl) reads the ',' and what follows
 * as part of a shorthand tag, and refuses it after a verbatim one
 * (`!<...>,`). libyaml makes such a tag's empty scalar end where the tag
 * ends. */
static int docs_tag_before_comma(struct docs_yaml *y, const yaml_event_t *ev)
{
    size_t at;

    if (!ev->data.scalar.tag || ev->data.scalar.length != 0)
        return 0;
    at = docs_byte_at(y, ev->end_mark.index);
    return at < y->len && y->text[at] == ',';
}

/* What a scalar event is: a string, or what its plain text or its
 * !!int/!!float/!!bool/!!null tag resolves to. libyaml's values are
 * NUL-terminated after their length (its string buffers are zero-filled and
 * always keep room), which the string functions here rely on. */
static int docs_classify(struct docs_yaml *y, const yaml_event_t *ev, struct docs_scalar *s)
{
    const yaml_char_t *tag = ev->data.scalar.tag;
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    enum docs_kind want;
    int rc;

    memset(s, 0, sizeof(*s));
    if (memchr(v, '\0', len))
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "a string holds NUL (\\0), which this tool cannot keep,");
    if (docs_tag_is(tag, "binary"))
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "!!binary is not supported: give the base64 text as a plain string");
    if (!tag && !ev->data.scalar.plain_implicit)
        return ERR_OK; /* quoted, literal or folded */
    want = docs_tag_is(tag, "int")     ? DOCS_K_INT
           : docs_tag_is(tag, "float") ? DOCS_K_FLOAT
           : docs_tag_is(tag, "bool")  ? DOCS_K_BOOL
           : docs_tag_is(tag, "null")  ? DOCS_K_NULL
                                       : DOCS_K_STR;
    if (docs_tag_before_comma(y, ev))
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "a tag right before ',', which kubectl reads as part of the tag (put a "
                       "space between them),");
    if (docs_tag_is(tag, "timestamp") && !docs_timestamp(v, len))
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "a scalar tagged !!timestamp that is no timestamp (kubectl refuses it; "
                       "drop the tag for a string),");
    if (tag && want == DOCS_K_STR)
        return ERR_OK; /* !!str, !!timestamp, !, !own: the text */
    if ((rc = docs_resolve(v, len, s)))
        return err_set(y->err, y->errlen, rc, "out of memory reading YAML");
    if (s->kind == DOCS_K_NONFINITE)
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "NaN or an infinity, which JSON cannot hold (quote it for a string),");
    /* go-yaml makes an int64 a float for !!float, not a larger integer. */
    if (want == DOCS_K_FLOAT && s->kind == DOCS_K_INT && (s->negative || s->mag <= INT64_MAX))
        s->kind = DOCS_K_FLOAT;
    if (tag && s->kind != want)
        return docs_at(y, ERR_FAIL, &ev->start_mark, "a scalar that does not fit its tag");
    return ERR_OK;
}

static int docs_set_key(struct docs_yaml *y, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    struct docs_frame *f = docs_top(y);
    struct docs_scalar s;
    char num[32];
    int rc;

    if (ev->data.scalar.anchor)
        return docs_at(y, ERR_FAIL, &ev->start_mark, "an anchor on a key is not supported");
    if (!ev->data.scalar.tag && ev->data.scalar.plain_implicit && strcmp(v, "<<") == 0)
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "merge keys (<<) are not supported: write the keys out");
    if ((rc = docs_classify(y, ev, &s)))
        return rc;
    if (s.kind == DOCS_K_NULL || s.kind == DOCS_K_FLOAT)
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       s.kind == DOCS_K_NULL ? "a null key" : "a number key (quote it)");
    if (s.kind == DOCS_K_INT && !s.negative && s.mag > INT64_MAX)
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "a key beyond int64, which kubectl cannot read (quote it)");
    if (s.kind == DOCS_K_BOOL)
        v = s.truth ? "true" : "false";
    if (s.kind == DOCS_K_INT) {
        snprintf(num, sizeof(num), "%s%llu", s.negative ? "-" : "", s.mag);
        v = num;
    }
    if ((rc = docs_count(y, 0, strlen(v) + 1, &ev->start_mark)))
        return rc;
    if (!(f->key = strdup(v)))
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    return ERR_OK;
}

static cJSON *docs_node_of(const struct docs_scalar *s, const char *text)
{
    char num[32];

    switch (s->kind) {
    case DOCS_K_NULL: return cJSON_CreateNull();
    case DOCS_K_BOOL: return cJSON_CreateBool(s->truth);
    case DOCS_K_INT: /* exact, as kubectl keeps an int64 or a uint64 */
        snprintf(num, sizeof(num), "%s%llu", s->negative ? "-" : "", s->mag);
        return docs_number(s->num, num, strlen(num));
    case DOCS_K_FLOAT: return docs_number(s->num, NULL, 0); /* a float64 there too */
    default: return cJSON_CreateString(text);
    }
}

static int docs_scalar(struct docs_yaml *y, const yaml_event_t *ev)
{
    struct docs_scalar s;
    size_t index;
    cJSON *node;
    int rc;

    if (docs_wants_key(y))
        return docs_set_key(y, ev);
    if ((rc = docs_classify(y, ev, &s)) ||
        (rc = docs_count(y, 1, ev->data.scalar.length + 1, &ev->start_mark)))
        return rc;
    if (!(node = docs_node_of(&s, (const char *)ev->data.scalar.value)))
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    if ((rc = docs_attach(y, node, 0, &ev->start_mark)) ||
        (rc = docs_anchor(y, ev->data.scalar.anchor, node, &index, &ev->start_mark)))
        return rc;
    if (index) {
        y->anchors[index - 1].nodes = 1;
        y->anchors[index - 1].bytes = ev->data.scalar.length + 1;
        y->anchors[index - 1].height = 0;
        y->anchors[index - 1].done = 1;
    }
    return ERR_OK;
}

/* An alias is a copy of its anchor's value, counted as the values it holds,
 * before it is made. */
static int docs_alias(struct docs_yaml *y, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const struct docs_anchor *a = NULL;
    char what[128];
    cJSON *copy;
    int rc;

    for (size_t i = y->n_anchors; i > 0 && !a; i--)
        if (strcmp(y->anchors[i - 1].name, name) == 0)
            a = &y->anchors[i - 1];
    snprintf(what, sizeof(what), "alias *%.64s", name);
    if (!a)
        return docs_at(y, ERR_FAIL, &ev->start_mark, strcat(what, " names no anchor before it"));
    if (!a->done)
        return docs_at(y, ERR_FAIL, &ev->start_mark, strcat(what, " is inside its own anchor"));
    if (y->aliases == y->lim->aliases) {
        snprintf(what, sizeof(what), "more than %zu aliases", y->lim->aliases);
        return docs_at(y, ERR_TOO_BIG, &ev->start_mark, what);
    }
    y->aliases++;
    if (docs_wants_key(y)) {
        if (!cJSON_IsString(a->node))
            return docs_at(y, ERR_FAIL, &ev->start_mark, strcat(what, " as a key is no string"));
        if ((rc = docs_count(y, 0, a->bytes, &ev->start_mark)))
            return rc;
        if (!(docs_top(y)->key = strdup(a->node->valuestring)))
            return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
        return ERR_OK;
    }
    if ((rc = docs_nest(y, a->height, &ev->start_mark)) ||
        (rc = docs_count(y, a->nodes, a->bytes, &ev->start_mark)))
        return rc;
    if (!(copy = cJSON_Duplicate(a->node, 1)))
        return err_set(y->err, y->errlen, ERR_NOMEM, "out of memory reading YAML");
    return docs_attach(y, copy, a->height, &ev->start_mark);
}

/* kubectl cuts its input at each line that starts with "---" (its
 * separator, docs_separators), and reads the first document of each piece:
 * libyaml starts every document but the first at such a line (it wants
 * "---" after "..." too), so they see the same documents, but for a
 * directive, which kubectl leaves alone in a piece of its own and cannot
 * read. */
static int docs_document_start(struct docs_yaml *y, const yaml_event_t *ev)
{
    if (ev->data.document_start.version_directive ||
        ev->data.document_start.tag_directives.start != ev->data.document_start.tag_directives.end)
        return docs_at(y, ERR_FAIL, &ev->start_mark,
                       "a %YAML or %TAG directive, which kubectl cannot read (it cuts the input "
                       "at the --- after it): drop it,");
    return ERR_OK;
}

static int docs_document_end(struct docs_yaml *y)
{
    cJSON *root = y->root;
    int rc = ERR_OK;

    y->root = NULL;
    docs_drop_anchors(y);
    /* An empty document (or one that is null): kubectl skips it. */
    if (!root || cJSON_IsNull(root))
        cJSON_Delete(root);
    else if ((rc = docs_push(y->out, root, y->root_line)) != ERR_OK) {
        cJSON_Delete(root);
        rc = err_set(y->err, y->errlen, rc, "out of memory reading YAML");
    }
    return rc;
}

static int docs_event(struct docs_yaml *y, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: return docs_start(y, ev);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT: return docs_end(y);
    case YAML_SCALAR_EVENT: return docs_scalar(y, ev);
    case YAML_ALIAS_EVENT: return docs_alias(y, ev);
    case YAML_DOCUMENT_START_EVENT: return docs_document_start(y, ev);
    case YAML_DOCUMENT_END_EVENT: return docs_document_end(y);
    default: return ERR_OK; /* the stream's start and end */
    }
}

/* Each line that starts with "---" as kubectl's splitter accepts it: "---"
 * alone, or then a blank and only a comment; it refuses "--- x" (a document
 * on the marker's line), and "---x" or "---#" are no marker for libyaml. */
static int docs_separators(const char *text, size_t len, char *err, size_t errlen)
{
    size_t line = 1;
    int content = 0; /* since the last separator: a line but blanks and comments */

    for (const char *p = text, *end = text + len; p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p)), *r = p + 3;
        size_t lead;

        if (!eol)
            eol = end;
        for (lead = 0; p + lead < eol && (p[lead] == ' ' || p[lead] == '\t' || p[lead] == '\r');)
            lead++; /* text is not NUL-terminated */
        /* go-yaml refuses a piece that starts with "...": the end of the
         * empty document libyaml reads after a separator. */
        if (!content && eol - p >= 3 && memcmp(p, "...", 3) == 0 &&
            (r == eol || *r == ' ' || *r == '\t' || *r == '\r'))
            return err_set(err, errlen, ERR_FAIL,
                           "line %zu is \"...\" right after \"---\" or the start, which kubectl "
                           "refuses: drop it",
                           line);
        if (p + lead < eol && p[lead] != '#')
            content = 1;
        if (eol - p >= 3 && memcmp(p, "---", 3) == 0 && r < eol) {
            int blank = *r == ' ' || *r == '\t' || *r == '\r';

            while (r < eol && (*r == ' ' || *r == '\t' || *r == '\r' || *r == '\v' || *r == '\f'))
                r++;
            if (!blank || (r < eol && *r != '#'))
                return err_set(err, errlen, ERR_FAIL,
                               "line %zu starts with \"---\" and goes on, which kubectl "
                               "refuses: put the document on the next line",
                               line);
        }
        if (eol - p >= 3 && memcmp(p, "---", 3) == 0)
            content = 0;
        p = eol + 1;
    }
    return ERR_OK;
}

static int docs_read_yaml(struct docs *d, const char *text, size_t len,
                          const struct docs_limits *lim, char *err, size_t errlen)
{
    struct docs_yaml y = {
        .lim = lim, .out = d, .err = err, .errlen = errlen, .text = text, .len = len};
    yaml_event_t ev;
    int rc = ERR_OK, done = 0;

    if ((rc = docs_separators(text, len, err, errlen)) != ERR_OK)
        return rc;
    if (!yaml_parser_initialize(&y.parser))
        return err_set(err, errlen, ERR_NOMEM, "out of memory reading YAML");
    y.max_bytes = lim->bytes                                    ? lim->bytes
                  : len > SIZE_MAX / DOCS_BYTES_PER_INPUT       ? SIZE_MAX
                  : len * DOCS_BYTES_PER_INPUT < DOCS_MIN_BYTES ? DOCS_MIN_BYTES
                                                                : len * DOCS_BYTES_PER_INPUT;
    y.stack = calloc(lim->depth ? lim->depth : 1, sizeof(*y.stack));
    y.anchors = calloc(lim->aliases ? lim->aliases : 1, sizeof(*y.anchors));
    if (!y.stack || !y.anchors) {
        rc = err_set(err, errlen, ERR_NOMEM, "out of memory reading YAML");
        goto out;
    }
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)text, len);
    while (rc == ERR_OK && !done) {
        if (!yaml_parser_parse(&y.parser, &ev)) {
            rc = docs_syntax(&y, text, len);
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = docs_event(&y, &ev);
        yaml_event_delete(&ev);
    }
out:
    while (y.depth)
        free(y.stack[--y.depth].key);
    cJSON_Delete(y.root);
    docs_drop_anchors(&y);
    free(y.stack);
    free(y.anchors);
    yaml_parser_delete(&y.parser);
    return rc;
}

/* ---- JSON in ---- */

/* The values in v and its nesting (0 for a scalar). */
static void docs_measure(const cJSON *v, size_t level, size_t *nodes, size_t *depth)
{
    (*nodes)++;
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return;
    if (level + 1 > *depth)
        *depth = level + 1;
    for (const cJSON *c = v->child; c; c = c->next)
        docs_measure(c, level + 1, nodes, depth);
}

/* Each key once in every object of v, as for YAML, and every number a
 * finite double: cJSON reads one beyond a double's range (1e400) as an
 * infinity, which JSON cannot hold (written back it would be null), and the
 * apiserver refuses it. path says where v is (".spec.containers[0]"), for
 * the message. */
static int docs_json_check(const cJSON *v, char *path, size_t pathlen, char *err, size_t errlen)
{
    size_t at = strlen(path), i = 0;
    const char *dup;
    int rc = ERR_OK;

    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        return err_set(err, errlen, ERR_FAIL,
                       "the number at %s is out of range: it must fit a double (about 1.8e308); "
                       "quote it for a string",
                       at ? path : "the top");
    if (cJSON_IsObject(v)) {
        if (docs_duplicate_key(v, &dup) != ERR_OK)
            return err_set(err, errlen, ERR_NOMEM, "out of memory reading JSON");
        if (dup)
            return err_set(err, errlen, ERR_FAIL, "key \"%.64s\" twice in the object at %s", dup,
                           at ? path : "the top");
    }
    for (const cJSON *c = cJSON_IsObject(v) || cJSON_IsArray(v) ? v->child : NULL;
         c && rc == ERR_OK; c = c->next, i++) {
        if (cJSON_IsObject(v))
            snprintf(path + at, pathlen - at, ".%.64s", c->string);
        else
            snprintf(path + at, pathlen - at, "[%zu]", i);
        rc = docs_json_check(c, path, pathlen, err, errlen);
        path[at] = '\0';
    }
    return rc;
}

/* The next number of the text from *at on, outside strings, in [*start,
 * *at): in the order of a pre-order walk of cJSON's tree of the same text
 * (keys are strings). The text is one jsoncheck_text() accepted. */
static int docs_next_number(const char **at, const char *end, const char **start)
{
    const char *p = *at;

    while (p < end && *p != '-' && !(*p >= '0' && *p <= '9')) {
        if (*p++ != '"')
            continue;
        for (; p < end && *p != '"'; p++)
            if (*p == '\\')
                p++;
        p++;
    }
    if (p >= end)
        return 0;
    *start = p;
    while (p < end && strchr("+-.eE0123456789", *p) && *p)
        p++;
    *at = p;
    return 1;
}

/* Keeps the text of each number of v whose double would be written
 * differently (docs_number): 9007199254740993, "1.0". ERR_OK or ERR_NOMEM. */
static int docs_json_literals(cJSON *v, const char **at, const char *end)
{
    const char *start;
    cJSON *n;

    if (cJSON_IsNumber(v)) {
        if (!docs_next_number(at, end, &start))
            return ERR_OK; /* cannot happen: the tree is of this text */
        if (!(n = docs_number(v->valuedouble, start, (size_t)(*at - start))))
            return ERR_NOMEM;
        v->valuestring = n->valuestring;
        n->valuestring = NULL;
        cJSON_Delete(n);
        return ERR_OK;
    }
    for (cJSON *c = cJSON_IsObject(v) || cJSON_IsArray(v) ? v->child : NULL; c; c = c->next)
        if (docs_json_literals(c, at, end) != ERR_OK)
            return ERR_NOMEM;
    return ERR_OK;
}

static int docs_read_json(struct docs *d, const char *text, size_t len,
                          const struct docs_limits *lim, char *err, size_t errlen)
{
    struct jsoncheck_result chk;
    size_t line, column, nodes = 0, depth = 0;
    char why[JSONCHECK_WHY_LEN], path[256];
    cJSON *v;
    int rc;

    if (jsoncheck_text(text, len, &chk)) {
        jsoncheck_describe_text(&chk, text, len, why, sizeof(why));
        return err_set(err, errlen, ERR_FAIL, "not valid JSON: %s", why);
    }
    if (chk.first_nul != JSONCHECK_NONE) {
        jsoncheck_line_column(text, len, chk.first_nul, &line, &column);
        return err_set(err, errlen, ERR_FAIL,
                       "a string holds \\u0000 at line %zu, column %zu, which this tool cannot "
                       "keep",
                       line, column);
    }
    /* Strict JSON cJSON cannot read: out of memory, or a number longer than
     * the 63 characters cJSON 1.7.15 reads. */
    if (!(v = cJSON_ParseWithLength(text, len)))
        return err_set(err, errlen, ERR_FAIL,
                       "the JSON parser cannot read the input: out of memory, or a number "
                       "longer than 63 characters");
    docs_measure(v, 0, &nodes, &depth);
    if (depth > lim->depth || nodes > lim->nodes) {
        cJSON_Delete(v);
        return depth > lim->depth
                   ? err_set(err, errlen, ERR_TOO_BIG, "JSON nested deeper than %zu", lim->depth)
                   : err_set(err, errlen, ERR_TOO_BIG, "JSON of more than %zu values", lim->nodes);
    }
    path[0] = '\0';
    if ((rc = docs_json_check(v, path, sizeof(path), err, errlen)) != ERR_OK || cJSON_IsNull(v)) {
        cJSON_Delete(v);
        return rc;
    }
    if (docs_json_literals(v, &text, text + len) != ERR_OK) {
        cJSON_Delete(v);
        return err_set(err, errlen, ERR_NOMEM, "out of memory reading JSON");
    }
    if ((rc = docs_push(d, v, 1)) != ERR_OK) {
        cJSON_Delete(v);
        return err_set(err, errlen, rc, "out of memory reading JSON");
    }
    return ERR_OK;
}

int docs_read(struct docs *d, const char *text, size_t len, const struct docs_limits *lim,
              char *err, size_t errlen)
{
    size_t i = 0;
    int rc;

    if (!lim)
        lim = &docs_limits_default;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
        i++;
    d->format = i < len && (text[i] == '{' || text[i] == '[') ? DOCS_JSON : DOCS_YAML;
    rc = d->format == DOCS_JSON ? docs_read_json(d, text, len, lim, err, errlen)
                                : docs_read_yaml(d, text, len, lim, err, errlen);
    if (rc != ERR_OK) {
        enum docs_format f = d->format;

        docs_free(d);
        d->format = f;
    }
    return rc;
}

cJSON *docs_list_items(const cJSON *doc, char *kind, size_t kindlen)
{
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "kind"));
    cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items");
    size_t n = k ? strlen(k) : 0;

    if (n < 4 || strcmp(k + n - 4, "List") != 0 || !cJSON_IsArray(items))
        return NULL;
    snprintf(kind, kindlen, "%.*s", (int)(n - 4), k);
    return items;
}

/* ---- out ---- */

struct docs_sink {
    struct dynbuf *b;
    int rc;
};

static int docs_sink_write(void *data, unsigned char *buf, size_t size)
{
    struct docs_sink *s = data;

    s->rc = dynbuf_add(s->b, buf, size);
    return s->rc == ERR_OK;
}

/* 1 when s written plain would be read back as something other than this
 * string: by the rules above, or as YAML 1.1 readers (PyYAML) read a
 * timestamp or a base-60 number ("1:20"), "=" or "<<". */
static int docs_needs_quotes(const char *s)
{
    struct docs_scalar r;
    size_t len = strlen(s);
    const char *p = s + (*s == '+' || *s == '-');

    if (docs_resolve(s, len, &r) != ERR_OK || r.kind != DOCS_K_STR)
        return 1;
    if (strcmp(s, "=") == 0 || strcmp(s, "<<") == 0)
        return 1;
    if (*p >= '0' && *p <= '9' && strspn(p, "0123456789_:.+-eE") == strlen(p) && strchr(p, ':'))
        return 1;
    return len >= 5 && strspn(s, "0123456789") == 4 && s[4] == '-';
}

static int docs_emit_scalar(yaml_emitter_t *e, const char *text, yaml_scalar_style_t style)
{
    yaml_event_t ev;

    return yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), 1,
                                        1, style) &&
           yaml_emitter_emit(e, &ev);
}

static int docs_emit_string(yaml_emitter_t *e, const char *s, int key)
{
    yaml_scalar_style_t style = docs_needs_quotes(s)      ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                : !key && strchr(s, '\n') ? YAML_LITERAL_SCALAR_STYLE
                                                          : YAML_ANY_SCALAR_STYLE;

    return docs_emit_scalar(e, s, style);
}

/* Returns 1, or 0 when the emitter failed (it says why). */
static int docs_emit_value(yaml_emitter_t *e, const cJSON *v)
{
    char num[32];
    yaml_event_t ev;
    int ok;

    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        int map = cJSON_IsObject(v);

        ok = map ? yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                                       v->child ? YAML_BLOCK_MAPPING_STYLE
                                                                : YAML_FLOW_MAPPING_STYLE)
                 : yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                                        v->child ? YAML_BLOCK_SEQUENCE_STYLE
                                                                 : YAML_FLOW_SEQUENCE_STYLE);
        ok = ok && yaml_emitter_emit(e, &ev);
        for (const cJSON *c = v->child; ok && c; c = c->next)
            ok = (!map || docs_emit_string(e, c->string, 1)) && docs_emit_value(e, c);
        ok = ok && (map ? yaml_mapping_end_event_initialize(&ev)
                        : yaml_sequence_end_event_initialize(&ev));
        return ok && yaml_emitter_emit(e, &ev);
    }
    if (cJSON_IsString(v))
        return docs_emit_string(e, v->valuestring, 0);
    return docs_emit_scalar(e,
                            cJSON_IsNumber(v)  ? docs_number_of(v, num, sizeof(num))
                            : cJSON_IsTrue(v)  ? "true"
                            : cJSON_IsFalse(v) ? "false"
                                               : "null",
                            YAML_PLAIN_SCALAR_STYLE);
}

static int docs_write_yaml(struct dynbuf *out, const cJSON *v, char *err, size_t errlen)
{
    struct docs_sink sink = {out, ERR_OK};
    yaml_emitter_t e;
    yaml_event_t ev;
    int ok;

    if (!yaml_emitter_initialize(&e))
        return err_set(err, errlen, ERR_NOMEM, "out of memory writing YAML");
    yaml_emitter_set_output(&e, docs_sink_write, &sink);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_indent(&e, 2);
    yaml_emitter_set_width(&e, -1); /* never fold a long value */
    ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&e, &ev);
    ok = ok && yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
         yaml_emitter_emit(&e, &ev);
    ok = ok && docs_emit_value(&e, v);
    ok = ok && yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev);
    ok = ok && yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev);
    ok = ok && yaml_emitter_flush(&e);
    if (!ok) {
        int rc = sink.rc != ERR_OK ? sink.rc : e.error == YAML_MEMORY_ERROR ? ERR_NOMEM : ERR_FAIL;

        /* e.problem is static text, but yaml_emitter_delete() clears e. */
        err_set(err, errlen, rc, "cannot write YAML: %s",
                rc == ERR_FAIL && e.problem ? e.problem : err_name(rc));
        yaml_emitter_delete(&e);
        return rc;
    }
    yaml_emitter_delete(&e);
    return ERR_OK;
}

/* Appends s[0..len) to the sink unless an earlier append failed. */
static void docs_put(struct docs_sink *o, const char *s, size_t len)
{
    if (o->rc == ERR_OK)
        o->rc = dynbuf_add(o->b, s, len);
}

static void docs_puts(struct docs_sink *o, const char *s)
{
    docs_put(o, s, strlen(s));
}

/* The control characters JSON names (\b, \f, ...), in "bfnrt"'s order. */
#define DOCS_JSON_NAMED "\b\f\n\r\t"

/* A string as cJSON_Print() writes it: the runs that need no escape at
 * once. */
static void docs_json_string(struct docs_sink *o, const char *s)
{
    const char *named;
    char esc[8];

    docs_puts(o, "\"");
    while (*s) {
        size_t run = 0;
        unsigned char c;

        while ((c = (unsigned char)s[run]) >= 0x20 && c != '"' && c != '\\')
            run++;
        docs_put(o, s, run);
        if (!(c = (unsigned char)s[run]))
            break;
        s += run + 1;
        named = strchr(DOCS_JSON_NAMED, c); /* c is no NUL here */
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof(esc), "\\%c", c);
        else if (named)
            snprintf(esc, sizeof(esc), "\\%c", "bfnrt"[named - DOCS_JSON_NAMED]);
        else
            snprintf(esc, sizeof(esc), "\\u%04x", c);
        docs_puts(o, esc);
    }
    docs_puts(o, "\"");
}

static void docs_json_indent(struct docs_sink *o, size_t depth)
{
    for (size_t i = 0; i < depth; i++)
        docs_put(o, "\t", 1);
}

/* v as cJSON_Print() lays it out (tabs, "key":\tvalue, a sequence's items
 * on one line), but numbers exactly (docs_number_of). */
static void docs_json_value(struct docs_sink *o, const cJSON *v, size_t depth)
{
    char num[32];

    if (cJSON_IsObject(v)) {
        docs_puts(o, "{\n");
        for (const cJSON *c = v->child; c; c = c->next) {
            docs_json_indent(o, depth + 1);
            docs_json_string(o, c->string);
            docs_puts(o, ":\t");
            docs_json_value(o, c, depth + 1);
            docs_puts(o, c->next ? ",\n" : "\n");
        }
        docs_json_indent(o, depth);
        docs_puts(o, "}");
    } else if (cJSON_IsArray(v)) {
        docs_puts(o, "[");
        for (const cJSON *c = v->child; c; c = c->next) {
            docs_json_value(o, c, depth + 1); /* cJSON indents an item's members so */
            if (c->next)
                docs_puts(o, ", ");
        }
        docs_puts(o, "]");
    } else if (cJSON_IsString(v)) {
        docs_json_string(o, v->valuestring);
    } else {
        docs_puts(o, cJSON_IsNumber(v)  ? docs_number_of(v, num, sizeof(num))
                     : cJSON_IsTrue(v)  ? "true"
                     : cJSON_IsFalse(v) ? "false"
                                        : "null");
    }
}

int docs_write(struct dynbuf *out, const cJSON *v, enum docs_format format, char *err,
               size_t errlen)
{
    size_t was = dynbuf_len(out);
    int rc;

    if (format == DOCS_YAML) {
        rc = docs_write_yaml(out, v, err, errlen);
    } else {
        struct docs_sink sink = {out, ERR_OK};

        docs_json_value(&sink, v, 0);
        docs_puts(&sink, "\n");
        if ((rc = sink.rc) != ERR_OK)
            err_set(err, errlen, rc, "cannot write JSON: %s", err_name(rc));
    }
    if (rc != ERR_OK)
        dynbuf_truncate(out, was);
    return rc;
}
