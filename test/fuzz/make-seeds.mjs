// Writes the fuzzers' seed corpora: every fixture pod wrapped in the
// AdmissionReview the apiserver would send, and the shipped profiles; for
// the offline reader (docs), every fixture pod as JSON and the YAML files
// named after the profiles.
import { readFileSync, writeFileSync, readdirSync, mkdirSync } from "node:fs";
import { basename, join } from "node:path";

const [out, podsDir, profiles, ...yamlFiles] = process.argv.slice(2);
mkdirSync(join(out, "review"), { recursive: true });
mkdirSync(join(out, "profiles"), { recursive: true });
mkdirSync(join(out, "docs"), { recursive: true });
yamlFiles.forEach((y, i) => writeFileSync(join(out, "docs", `${i}-${basename(y)}`), readFileSync(y)));
for (const f of readdirSync(podsDir).filter((n) => n.endsWith(".json"))) {
  const fx = JSON.parse(readFileSync(join(podsDir, f), "utf8"));
  const review = {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "00000000-0000-4000-8000-000000000000",
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      namespace: fx.namespace ?? "default",
      operation: "CREATE",
      object: fx.object,
    },
  };
  writeFileSync(join(out, "review", f), JSON.stringify(review));
  writeFileSync(join(out, "docs", f), JSON.stringify(fx.object, null, 2));
}
writeFileSync(join(out, "profiles", "profiles.json"), readFileSync(profiles));
