#!/bin/sh
# Writes the three AdmissionReviews `make bench` posts, compact as the
# apiserver sends them:
#   OUT/review-8gpu.json   test/example-review.json (an 8-GPU PyTorchJob master
#                          pod) without the pretty-printing, about 3.4 KB;
#   OUT/review-worker.json bench/review-worker.json as it is: the review
#                          kube-apiserver v1.37.2 sent a mutating webhook for
#                          bench/cluster/worker-pod.json, about 6 KB (below);
#   OUT/review-large.json  a PyTorchJob pod with 10 containers, each asking for
#                          a GPU and carrying 200 env entries (about 150 KB);
#                          nodeSelector picks the roce-8card profile, so every
#                          container is a target.
# Usage: bench/gen-reviews.sh REPO_DIR OUT_DIR
#
# bench/review-worker.json was recorded once, not built here, so that it holds
# what the apiserver adds by the time a mutating webhook is called, in the
# order and form it writes them, rather than our idea of them. It is the body
# kube-apiserver v1.37.2 (test/cluster/up.sh, default admission plugins) POSTed
# to a webhook that only wrote bodies to a file, registered for pod CREATE in
# namespace default, when bench/cluster/worker-pod.json was POSTed there with a
# User-Agent naming the field manager "training-operator" (as the operator's
# own pods get in that cluster) and a token of ServiceAccount
# kubeflow/training-operator bound to an operator pod on a node (`kubectl create
# token --bound-object-kind Pod`), as an in-cluster operator's is. The wire
# format is AdmissionReview/AdmissionRequest of k8s.io/api/admission/v1
# (types.go in k8s.io/api@v0.37.2): uid, kind, resource, requestKind,
# requestResource, name, namespace, operation, userInfo, object, oldObject,
# dryRun, options; subResource is omitempty and absent for a pod CREATE. In
# the object, beside the defaults already in worker-pod.json:
#   - metadata.namespace (the request's);
#   - metadata.managedFields, the training-operator's Update entry: the
#     create handler runs the field manager before mutating admission
#     (pkg/endpoints/handlers/create.go in k8s.io/apiserver@v0.37.2);
#   - the ServiceAccount plugin's projected volume kube-api-access-<5 chars>
#     (token, kube-root-ca.crt, the namespace by downward API) and its
#     read-only mount in the container and the init container
#     (plugin/pkg/admission/serviceaccount/admission.go, k8s.io/kubernetes
#     v1.37.2);
#   - no uid and no creationTimestamp: the registry sets them after admission.
# userInfo carries the bound token's extras (credential-id, node and pod name
# and uid). To record it again: start the webhook capturing bodies, register
# it, and POST worker-pod.json as above; the random parts (uids, the volume
# suffix, the managedFields time) differ, nothing else should.
set -eu
repo=$1
out=$2
mkdir -p "$out"

cp "$repo/bench/review-worker.json" "$out/review-worker.json"

# JSON whitespace outside strings removed; strings (with escapes) kept as is.
awk '
{
    line = $0; s = ""
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (instr) {
            s = s c
            if (esc) esc = 0
            else if (c == "\\") esc = 1
            else if (c == "\"") instr = 0
        } else if (c == "\"") { s = s c; instr = 1 }
        else if (c != " " && c != "\t" && c != "\r") s = s c
    }
    printf "%s", s
}' "$repo/test/example-review.json" >"$out/review-8gpu.json"

awk -v ncont=10 -v nenv=200 'BEGIN {
    printf "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
    printf "\"uid\":\"6b1d2c3e-1f2a-4c5d-9e8f-0a1b2c3d4e5f\","
    printf "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    printf "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    printf "\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    printf "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    printf "\"name\":\"big-job-worker-0\",\"namespace\":\"training\",\"operation\":\"CREATE\","
    printf "\"userInfo\":{\"username\":\"system:serviceaccount:kubeflow:training-operator\","
    printf "\"uid\":\"4a1c2f0e-2b7d-4c55-8f0e-3c6d9b1a7e21\",\"groups\":[\"system:serviceaccounts\","
    printf "\"system:serviceaccounts:kubeflow\",\"system:authenticated\"]},"
    printf "\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    printf "\"name\":\"big-job-worker-0\",\"namespace\":\"training\",\"labels\":{"
    printf "\"training.kubeflow.org/job-name\":\"big-job\",\"training.kubeflow.org/job-role\":\"worker\","
    printf "\"training.kubeflow.org/operator-name\":\"pytorchjob-controller\","
    printf "\"training.kubeflow.org/replica-index\":\"0\",\"training.kubeflow.org/replica-type\":\"worker\"},"
    printf "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
    printf "\"name\":\"big-job\",\"uid\":\"0c6f3a52-61b5-4f0e-9d0e-2f4b8f1f6a11\","
    printf "\"controller\":true,\"blockOwnerDeletion\":true}],\"creationTimestamp\":null},"
    printf "\"spec\":{\"volumes\":[{\"name\":\"kube-api-access-x7k2p\",\"projected\":{\"sources\":["
    printf "{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
    printf "{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}"
    printf "],\"defaultMode\":420}}],\"containers\":["
    for (c = 0; c < ncont; c++) {
        if (c) printf ","
        printf "{\"name\":\"%s\",\"image\":\"nvcr.io/nvidia/pytorch:24.01-py3\",", c ? "side" c : "pytorch"
        printf "\"command\":[\"torchrun\",\"--nnodes=16\",\"--nproc_per_node=8\",\"/workspace/train.py\"],"
        printf "\"env\":["
        for (e = 0; e < nenv; e++) {
            if (e) printf ","
            printf "{\"name\":\"APP_SETTING_%03d\",\"value\":\"value-%d-%d-abcdefghijklmnop\"}", e, c, e
        }
        printf "],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"memory\":\"16Gi\"},"
        printf "\"requests\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"}},"
        printf "\"volumeMounts\":[{\"name\":\"kube-api-access-x7k2p\",\"readOnly\":true,"
        printf "\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],"
        printf "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\","
        printf "\"imagePullPolicy\":\"IfNotPresent\"}"
    }
    printf "],\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,"
    printf "\"dnsPolicy\":\"ClusterFirst\",\"nodeSelector\":{\"nvidia.com/gpu.count\":\"8\"},"
    printf "\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\",\"securityContext\":{},"
    printf "\"schedulerName\":\"default-scheduler\",\"tolerations\":[{\"key\":\"nvidia.com/gpu\","
    printf "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"priority\":0,"
    printf "\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},"
    printf "\"status\":{}},\"oldObject\":null,\"dryRun\":false,"
    printf "\"options\":{\"kind\":\"CreateOptions\",\"apiVersion\":\"meta.k8s.io/v1\"}}}"
}' >"$out/review-large.json"
