/* labelsel: a Kubernetes label selector (metav1.LabelSelector: matchLabels
 * and matchExpressions with In, NotIn, Exists and DoesNotExist), read and
 * checked as the apiserver checks one, matched against an object's labels,
 * and decided for satisfiability (whether any labels at all, or any labels
 * a second selector also matches, could satisfy it).
 *
 * A selector is the AND of its requirements; matchLabels k: v is k In [v].
 * A parsed selector holds pointers into the cJSON it was read from (keys
 * and values are not copied) and into memory from the sink's allocator:
 * both must outlive it. Nothing is allocated or formatted by matching, so
 * the request path can match in any number of threads at once.
 *
 * Some objects carry one label whatever their owner writes: every Namespace
 * has kubernetes.io/metadata.name, its name. The functions that reason about
 * labels not yet seen take that key as name_key (NULL: no such label), so
 * that a key every object has is never thought absent.
 */
#ifndef RDMA_WEBHOOK_LABELSEL_H
#define RDMA_WEBHOOK_LABELSEL_H

#include <stdarg.h>
#include <stddef.h>

struct cJSON;

/* Requirements in one selector, and values of one requirement: a selector
 * tells a few groups of objects apart, and these bounds keep the
 * satisfiability checks (pairwise, at parse time) small. */
#define LABELSEL_MAX_REQS   16
#define LABELSEL_MAX_VALUES 16

enum labelsel_op {
    LABELSEL_IN,
    LABELSEL_NOT_IN,
    LABELSEL_EXISTS,
    LABELSEL_DOES_NOT_EXIST,
};

struct labelsel_req {
    const char *key;
    enum labelsel_op op;
    const char **values;
    size_t n_values;
};

struct labelsel {
    struct labelsel_req *reqs;
    size_t n_reqs;
};

/* Where labelsel_parse reports problems and takes memory: the caller's, so
 * that the problems join the caller's list (each line prefixed as it
 * prefixes its own) and the memory lives as long as the caller's snapshot.
 * problem gets one line without its newline, printf-style; calloc returns
 * zeroed memory for n elements (n may be 0) or NULL. */
struct labelsel_sink {
    void *ctx;
    void (*problem)(void *ctx, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
    void *(*calloc)(void *ctx, size_t n, size_t size);
};

/* Reads the selector object sel into *out, naming field ("match.namespaces")
 * in every problem: an unknown member, a key that is not a qualified name, a
 * value that is not a label value, an operator Kubernetes does not take for
 * a label selector, values where the operator takes none or too few or too
 * many, more than LABELSEL_MAX_REQS requirements. Returns ERR_OK (*out is
 * the selector), ERR_FAIL after one problem or more, or ERR_NOMEM when the
 * sink's allocator failed (*out is then short). */
int labelsel_parse(struct labelsel *out, const struct cJSON *sel, const char *field,
                   const struct labelsel_sink *sink);

/* Whether name is one of known (a NULL-terminated list). The selector's
 * parser refuses an unknown member with it, and so does profiles.c, which
 * sits above this module, for the objects around the selectors. */
int labelsel_known_key(const char *const *known, const char *name);

/* The operator's name as a selector spells it ("In", "NotIn", ...). */
const char *labelsel_op_name(enum labelsel_op op);

/* Whether requirement r holds for the label value v (NULL: no such label). */
int labelsel_req_holds(const struct labelsel_req *r, const char *v);

/* Whether labels (a JSON object of strings; a member that is not a string
 * counts as absent) satisfy every requirement of s. */
int labelsel_matches(const struct labelsel *s, const struct cJSON *labels);

/* Whether s matches every object: no requirement but name_key Exists ({}
 * included). */
int labelsel_matches_all(const struct labelsel *s, const char *name_key);

/* Whether some object could have labels that a and b (b NULL: a alone) both
 * match; with name not NULL, an object whose name_key label is name. Exact:
 * the requirements on different keys are independent, and each key is tried
 * absent, at each value a requirement names and at one value none names. */
int labelsel_satisfiable(const struct labelsel *a, const struct labelsel *b, const char *name_key,
                         const char *name);

#endif
