/* version: the program's version, defined once.
 *
 * `rdma-webhook --version`, the rdma_webhook_build_info metric and the
 * User-Agent of every Kubernetes API call all say this. A build may set it
 * instead, e.g. CFLAGS=-DRDMA_WEBHOOK_VERSION='"1.2.3"' from git describe.
 */
#ifndef RDMA_WEBHOOK_VERSION_H
#define RDMA_WEBHOOK_VERSION_H

#ifndef RDMA_WEBHOOK_VERSION
#define RDMA_WEBHOOK_VERSION "0.1.0-dev"
#endif

#endif
