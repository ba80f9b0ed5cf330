// Self-test of validate.mjs: `node --test` in test/validate.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";

const script = new URL("./validate.mjs", import.meta.url).pathname;

function run(objects) {
  const res = spawnSync(process.execPath, [script], { input: JSON.stringify(objects), encoding: "utf8" });
  assert.equal(res.status, 0, `validate.mjs exited ${res.status}: ${res.stderr}`);
  return res.stdout.trim().split("\n").map((l) => JSON.parse(l));
}

function pod() {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "default", creationTimestamp: null },
    spec: {
      containers: [{
        name: "pytorch",
        image: "pytorch/pytorch:2.3.0",
        env: [{ name: "NCCL_IB_HCA", value: "=mlx5_1,mlx5_2" }],
        resources: { limits: { "nvidia.com/gpu": "8", "rdma/hca": "1" } },
        securityContext: { capabilities: { add: ["IPC_LOCK"] } },
        volumeMounts: [{ name: "rdma-webhook-shm", mountPath: "/dev/shm" }],
      }],
      volumes: [{ name: "rdma-webhook-shm", emptyDir: { medium: "Memory" } }],
      schedulerName: "volcano",
    },
    status: {},
  };
}

function broken(change) {
  const p = pod();
  change(p);
  return p;
}

test("a valid pod passes", () => {
  assert.deepEqual(run([pod()]), [{ index: 0, ok: true, error: null }]);
});

test("broken pods are rejected, one result line each, in order", () => {
  const objects = [
    broken((p) => { p.spec.containers = "x"; }),
    broken((p) => { p.spec.containers[0].securityContext.capabilities.add = "IPC_LOCK"; }),
    broken((p) => { p.spec.containers[0].resources.limits["rdma/hca"] = "1x"; }),
    broken((p) => { p.spec.volumes[0].emptyDir.sizeLimit = "abc"; }),
    broken((p) => { p.spec.containers[0].env[0].value = 22; }),
    broken((p) => { delete p.spec.containers[0].name; }),
    { apiVersion: "v1", kind: "Nope" },
  ];
  const results = run(objects);
  assert.equal(results.length, objects.length);
  results.forEach((r, i) => {
    assert.equal(r.index, i);
    assert.equal(r.ok, false, `object ${i} should fail`);
    assert.match(r.error, /\S/);
  });
});

test("deployment kinds and cert-manager's validate; broken ones are rejected", () => {
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "w", namespace: "rdma-webhook" },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: "w" } },
      template: { metadata: { labels: { app: "w" } }, spec: { containers: [{ name: "w", image: "w:1" }] } },
    },
  };
  const webhookConfig = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: { name: "w" },
    webhooks: [{
      name: "w.example.io",
      admissionReviewVersions: ["v1"],
      sideEffects: "None",
      clientConfig: { service: { name: "w", namespace: "rdma-webhook", path: "/mutate", port: 443 } },
    }],
  };
  const certificate = {
    apiVersion: "cert-manager.io/v1",
    kind: "Certificate",
    metadata: { name: "c", namespace: "rdma-webhook" },
    spec: { secretName: "s", dnsNames: ["w.rdma-webhook.svc"], issuerRef: { name: "i" }, privateKey: { algorithm: "ECDSA", size: 256 } },
  };
  const issuer = { apiVersion: "cert-manager.io/v1", kind: "Issuer", metadata: { name: "i" }, spec: { selfSigned: {} } };
  assert.deepEqual(run([deployment, webhookConfig, certificate, issuer]).map((r) => r.ok), [true, true, true, true]);

  const badDeployment = structuredClone(deployment);
  badDeployment.spec.replicas = "two";
  const badWebhook = structuredClone(webhookConfig);
  badWebhook.webhooks[0].sideEffects = "Nope";
  const badCertificate = structuredClone(certificate);
  badCertificate.spec.privateKey.algorithm = "DSA";
  const results = run([badDeployment, badWebhook, badCertificate]);
  results.forEach((r, i) => assert.equal(r.ok, false, `broken object ${i} should fail`));
});
