/* quantity: Kubernetes resource quantities ("1", "500m", "64Gi", "1e3").
 *
 * The grammar is the one k8s.io/apimachinery's resource.ParseQuantity accepts,
 * so a profile the webhook validates is one the apiserver will accept in a
 * patched pod.
 */
#ifndef RDMA_WEBHOOK_QUANTITY_H
#define RDMA_WEBHOOK_QUANTITY_H

/* 1 when s is a syntactically valid quantity. */
int quantity_valid(const char *s);

/* Reads a quantity that is a plain non-negative whole number ("8"), the form
 * the apiserver gives extended resources such as GPUs. Returns ERR_OK and
 * sets *out, or ERR_FAIL for anything else (no message: the caller names the
 * field). */
int quantity_whole(const char *s, long long *out);

#endif
