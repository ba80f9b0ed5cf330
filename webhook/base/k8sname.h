/* k8sname: the Kubernetes name rules the webhook relies on.
 *
 * Names go into URL paths of API requests and into JSON Pointers of the
 * patch. Holding them to the apiserver's own rules (k8s.io/apimachinery
 * validation) bounds their length and keeps out the bytes that would change
 * a path's meaning, and an admin hears about a bad name when the profiles
 * load, not from a failing pod.
 */
#ifndef RDMA_WEBHOOK_K8SNAME_H
#define RDMA_WEBHOOK_K8SNAME_H

#define K8SNAME_LABEL_MAX     63
#define K8SNAME_SUBDOMAIN_MAX 253
/* prefix "/" name */
#define K8SNAME_QUALIFIED_MAX (K8SNAME_SUBDOMAIN_MAX + 1 + K8SNAME_LABEL_MAX)

/* Each returns 1 when s follows the rule and 0 otherwise. */

/* DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes. */
int k8sname_label(const char *s);

/* DNS-1123 subdomain: labels joined by '.', at most 253 bytes. Node and
 * ConfigMap names follow it. */
int k8sname_subdomain(const char *s);

/* Qualified name: an optional subdomain prefix and '/', then
 * ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] of at most 63 bytes. Resource
 * names and label keys follow it. */
int k8sname_qualified(const char *s);

/* Label value: empty, or the name part of a qualified name. */
int k8sname_label_value(const char *s);

#endif
