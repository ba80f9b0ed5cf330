# rdma-webhook image: `docker build -t REGISTRY/rdma-webhook:TAG .`
#
# VERSION: the version the binary reports (--version, rdma_webhook_build_info)
# and the image's org.opencontainers.image.version label. Its default is the
# top-level VERSION file's content (test/e2e's TestVersionIsOneValue checks
# they agree); `--build-arg VERSION=1.2.3-rc1` stamps another into both.
ARG VERSION=0.1.0
#
# Build stage: Debian 12 with the -dev packages, installed by the same
# script CI uses (.ci/deps build: gcc make pkg-config libmicrohttpd-dev
# libgnutls28-dev libcjson-dev libssl-dev libcurl4-openssl-dev libyaml-dev
# openssl), then the same `make build`.
FROM debian:12 AS build
ARG VERSION
WORKDIR /src
COPY .ci/deps .ci/deps
RUN .ci/deps build && rm -rf /var/lib/apt/lists/*
COPY Makefile VERSION ./
COPY webhook/ webhook/
COPY manifests/profiles.json manifests/profiles.json
RUN make build VERSION="$VERSION" \
 && test "$(build/rdma-webhook --version)" = "rdma-webhook $VERSION" \
 && build/rdma-webhook check-profiles manifests/profiles.json

# Runtime stage: only the shared libraries the binary links (the rest of
# what `ldd` lists comes with these; test/e2e checks that), no compiler, no
# shell use at run time beyond the Deployment's preStop sleep.
FROM debian:12-slim
ARG VERSION
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libmicrohttpd12 libcjson1 libssl3 libcurl4 libyaml-0-2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/rdma-webhook /usr/local/bin/rdma-webhook
# The shipped profiles at the default path; the Deployment mounts the
# profiles ConfigMap over this directory.
COPY manifests/profiles.json /etc/rdma-webhook/profiles/profiles.json
LABEL org.opencontainers.image.title="rdma-webhook" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.description="Kubernetes mutating admission webhook that makes PyTorchJob pods RDMA-ready for NCCL"
# The nonroot user of distroless images; the Deployment runs as it too.
USER 65532:65532
EXPOSE 8443 9090
ENTRYPOINT ["/usr/local/bin/rdma-webhook"]
CMD ["serve", "--listen", ":8443", "--metrics-listen", ":9090", \
     "--tls-cert-file", "/etc/rdma-webhook/tls/tls.crt", \
     "--tls-private-key-file", "/etc/rdma-webhook/tls/tls.key", \
     "--profiles", "/etc/rdma-webhook/profiles/profiles.json"]
