// Reads a JSON array of Kubernetes objects on stdin and validates each one
// against the Kubernetes OpenAPI schemas shipped by the kubernetes-models
// package (and cert-manager's, from @kubernetes-models/cert-manager). Prints
// one JSON line per object: {"index", "ok", "error"}.
// Exits 0 whatever the objects hold; only a crash (bad input) exits non-zero.
import { ConfigMap, Namespace, Pod, PodTemplate, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { Job } from "kubernetes-models/batch/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { MutatingWebhookConfiguration, ValidatingWebhookConfiguration } from "kubernetes-models/admissionregistration.k8s.io/v1";
import { Certificate, ClusterIssuer, Issuer } from "@kubernetes-models/cert-manager/cert-manager.io/v1";

const MODELS = {
  "v1/Pod": Pod,
  "v1/PodTemplate": PodTemplate,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Namespace": Namespace,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "apps/v1/Deployment": Deployment,
  "batch/v1/Job": Job,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding,
  "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": MutatingWebhookConfiguration,
  "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": ValidatingWebhookConfiguration,
  "cert-manager.io/v1/Certificate": Certificate,
  "cert-manager.io/v1/Issuer": Issuer,
  "cert-manager.io/v1/ClusterIssuer": ClusterIssuer,
};

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

function modelFor(obj) {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
    return null;
  }
  return MODELS[`${obj.apiVersion}/${obj.kind}`] ?? null;
}

function describe(err) {
  return String(err?.message ?? err);
}

function validateOne(obj, index) {
  const Model = modelFor(obj);
  if (Model === null) {
    const what = obj && typeof obj === "object" ? `${obj.apiVersion}/${obj.kind}` : typeof obj;
    return { index, ok: false, error: `unsupported object ${what}` };
  }
  try {
    new Model(obj).validate();
    return { index, ok: true, error: null };
  } catch (err) {
    return { index, ok: false, error: describe(err) };
  }
}

const input = JSON.parse(await readStdin());
if (!Array.isArray(input)) {
  throw new Error("stdin must hold a JSON array of objects");
}
input.forEach((obj, i) => process.stdout.write(JSON.stringify(validateOne(obj, i)) + "\n"));
