#include "admission/mutns.h"

#include "admission/mutate_ctx.h"
#include "base/err.h"
#include "admission/select.h"

#include <cjson/cJSON.h>
#include <string.h>

/* The labels of the pod's Namespace, asked of the hook once per call,
 * whoever asks first (select, or mutcaps_podsec_plan); ERR_OK, or ERR_FAIL
 * when they cannot be had. */
int mutns_labels(struct mutate_ctx *m, const cJSON **labels)
{
    const struct select_hooks *h = &m->hooks->select;

    if (!m->ns_asked) {
        m->ns_asked = 1;
        m->ns_rc =
            h->namespace_labels(h->ctx, m->in->namespace_ ? m->in->namespace_ : "", &m->ns_labels);
    }
    *labels = m->ns_labels;
    return m->ns_rc || !m->ns_labels ? ERR_FAIL : ERR_OK;
}

static int mutns_node_labels_through(void *ctx, const char *name, cJSON **labels)
{
    const struct mutate_ctx *m = ctx;

    return m->hooks->select.node_labels(m->hooks->select.ctx, name, labels);
}

/* The namespace_labels hook select gets: the pod's own Namespace through
 * mutns_labels, any other straight through. */
static int mutns_namespace_labels_once(void *ctx, const char *name, cJSON **labels)
{
    struct mutate_ctx *m = ctx;
    const cJSON *have;

    if (strcmp(name, m->in->namespace_ ? m->in->namespace_ : "") != 0)
        return m->hooks->select.namespace_labels(m->hooks->select.ctx, name, labels);
    if (mutns_labels(m, &have))
        return ERR_FAIL;
    *labels = cJSON_Duplicate(have, 1);
    return *labels ? ERR_OK : ERR_NOMEM;
}

void mutns_select_hooks(struct mutate_ctx *m)
{
    if (!m->hooks)
        return;
    m->select.ctx = m;
    m->select.node_labels = m->hooks->select.node_labels ? mutns_node_labels_through : NULL;
    m->select.namespace_labels =
        m->hooks->select.namespace_labels ? mutns_namespace_labels_once : NULL;
}
