/* version: the program's version, defined once, outside the sources.
 *
 * `rdma-webhook --version`, the rdma_webhook_build_info metric and the
 * User-Agent of every Kubernetes API call all say RDMA_WEBHOOK_VERSION. Its
 * one source is the top-level VERSION file: the Makefile passes it as
 * -DRDMA_WEBHOOK_VERSION='"..."' (`make VERSION=1.2.3` overrides it, e.g.
 * from git describe; the Dockerfile's VERSION build argument does the same).
 * No default here: a second copy of the number would drift from the file, so
 * a build that does not set it stops.
 */
#ifndef RDMA_WEBHOOK_VERSION_H
#define RDMA_WEBHOOK_VERSION_H

#ifndef RDMA_WEBHOOK_VERSION
#error "RDMA_WEBHOOK_VERSION unset: build with make, which reads the VERSION file"
#endif

#endif
