// Reads a JSON array of Kubernetes objects on stdin and validates each one
// against the Kubernetes OpenAPI schemas shipped by the kubernetes-models
// package. Prints one JSON line per object: {"index", "ok", "error"}.
// Exits 0 whatever the objects hold; only a crash (bad input) exits non-zero.
import { Pod } from "kubernetes-models/v1";
import { ConfigMap } from "kubernetes-models/v1";

const MODELS = {
  "v1/Pod": Pod,
  "v1/ConfigMap": ConfigMap,
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
