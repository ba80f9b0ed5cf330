// The Prometheus Operator, pinned for its CRDs only (ServiceMonitor,
// PrometheusRule: example/prometheus-operator-crd/), which
// realcluster/monitoring_crds_test.go applies to validate the chart's and
// manifests/components' monitoring objects. Nothing is built from it; a
// module of its own so that test/cluster's Kubernetes build graph is untouched.
module rdma-webhook/test/cluster/promop

go 1.25.0

require github.com/prometheus-operator/prometheus-operator v0.86.1
