/* docs: the objects of an input as an admin has it at hand, and the same
 * objects written back: JSON, or YAML read the way kubectl reads it; one
 * document or a stream of them (`---`); a List of items.
 *
 * docs_read() decides the format as kubectl does: JSON when the first byte
 * other than whitespace is '{' or '[', YAML otherwise. JSON is one value,
 * strict RFC 8259 (jsoncheck.h), and text after it is an error. YAML is a
 * stream (libyaml) of documents, each turned into the JSON value
 * sigs.k8s.io/yaml's YAMLToJSON (kubectl's) would make of it:
 *   - a quoted, literal or folded scalar is a string; so is one tagged !!str,
 *     !!timestamp, ! or a tag of the user's own (`!foo x` is "x");
 *   - a plain one is null for "", ~, null, Null, NULL; true for y, Y, yes,
 *     Yes, YES, on, On, ON, true, True, TRUE and false for n, N, no, No, NO,
 *     off, Off, OFF, false, False, FALSE (YAML 1.1, as go-yaml v2); an
 *     integer for [+-] then 0x hex, 0o or a leading 0 octal, 0b binary or
 *     decimal digits, '_' allowed anywhere (`0777` is 511, `1_000` 1000); a
 *     number for a decimal with a fraction or exponent (`1e3`, `.5`); and a
 *     string for anything else, timestamps included, kept as written;
 *   - !!int, !!float, !!bool and !!null make the scalar that type, or are an
 *     error (!!float takes an integer only within int64, as go-yaml);
 *     !!timestamp must be one of go-yaml's timestamps, kept as a string;
 *   - keys become strings: an integer's decimal value ("0x10" is "16"), a
 *     boolean's "true" or "false", any other scalar its text.
 * Numbers become cJSON numbers, as they do for JSON input: doubles; where
 * the double would be written otherwise (an integer beyond 2^53, a JSON
 * literal such as 1.0), the node keeps the exact text in its valuestring
 * (docs_write() writes it; nothing else reads a number's valuestring). A
 * document that is empty or null is left out, as kubectl skips it.
 *
 * Refused, with the line and column (as ERR_FAIL): syntax errors; NaN and
 * infinities (JSON has none); !!binary; a string holding NUL; a key that is
 * null, a float, a mapping or a sequence; a key twice in one mapping (the
 * apiserver's strict field validation refuses it too; in JSON as well,
 * named by its path); merge keys (`<<`); an alias to an anchor not yet
 * complete or not defined; a JSON number beyond a double's range (1e400,
 * which cJSON would read as an infinity; named by its path). And what
 * kubectl (apimachinery's splitter, then sigs.k8s.io/yaml) refuses or reads
 * otherwise: %YAML and %TAG directives, a line that starts with "---" and
 * goes on but for a comment, "..." right after "---", a tag right before
 * ',' in a flow collection, an integer key beyond int64.
 *
 * Bounded (ERR_TOO_BIG, naming the limit): the nesting depth, the values in
 * the whole stream, their bytes, and the anchors and aliases in it, aliases
 * counted as the values and bytes they expand to. libyaml expands no alias
 * by itself; this module copies each one, so a "billion laughs" document
 * stops at the value cap, and a few aliases of a large scalar at the byte
 * cap, before the copy is made. The input's own size is the caller's cap.
 */
#ifndef RDMA_WEBHOOK_DOCS_H
#define RDMA_WEBHOOK_DOCS_H

#include "base/dynbuf.h"
#include "base/err.h"
#include "base/jsoncheck.h"

#include <stddef.h>

struct cJSON;

enum docs_format { DOCS_JSON, DOCS_YAML };

struct docs_limits {
    size_t depth;   /* nesting of mappings and sequences, aliases expanded */
    size_t nodes;   /* values (scalars, mappings, sequences) in the stream */
    size_t aliases; /* anchors in a document, and aliases in the stream */
    size_t bytes;   /* the stream's values in bytes, aliases expanded (each
                     * value its text plus one, each key its name plus one);
                     * 0: DOCS_BYTES_PER_INPUT times the input's length, at
                     * least DOCS_MIN_BYTES */
};

/* The limits of `rdma-webhook mutate`: JSON's own depth limit (so a YAML
 * document is never deeper than a JSON one could be), 4 Mi values (a PodList
 * of thousands of pods), 1000 anchors and aliases. */
#define DOCS_MAX_DEPTH   JSONCHECK_MAX_DEPTH
#define DOCS_MAX_NODES   (4u << 20)
#define DOCS_MAX_ALIASES 1000u
/* What aliases may expand an input to: a few times its size (a manifest
 * that shares a block a few times), never the gigabytes a small input can
 * ask for with aliases of aliases of a large scalar. */
#define DOCS_BYTES_PER_INPUT 4u
#define DOCS_MIN_BYTES       (16u << 20)

struct docs {
    enum docs_format format;
    struct cJSON **v; /* the documents, in order */
    size_t *line;     /* the line each starts at (from 1), for messages */
    size_t n;
    size_t alloc;
};

void docs_init(struct docs *d);
void docs_free(struct docs *d);

/* Reads text[0..len) into d (which docs_init made; documents are appended).
 * lim NULL: the DOCS_MAX_* limits. ERR_OK; ERR_FAIL with the line and column
 * in err; ERR_TOO_BIG naming the limit; ERR_NOMEM. On failure d holds no
 * documents. */
int docs_read(struct docs *d, const char *text, size_t len, const struct docs_limits *lim,
              char *err, size_t errlen);

/* A List's items: when doc has kind "List", or a kind ending in "List"
 * (v1's "PodList"), and an array "items", returns the array, and puts into
 * kind the kind of an item that names none ("Pod" for a PodList, "" for a
 * List; cut to kindlen). Otherwise NULL. */
struct cJSON *docs_list_items(const struct cJSON *doc, char *kind, size_t kindlen);

/* Appends v to out as one document: JSON as cJSON_Print() formats it, then a
 * newline, numbers exact (above); YAML in block style with kubectl's layout (two-space indent,
 * sequences in a mapping not indented), strings quoted wherever a plain
 * scalar would be read back as something else, no "---" (the caller
 * separates documents). ERR_OK, ERR_TOO_BIG (out's cap), ERR_NOMEM. */
int docs_write(struct dynbuf *out, const struct cJSON *v, enum docs_format format, char *err,
               size_t errlen);

#endif
