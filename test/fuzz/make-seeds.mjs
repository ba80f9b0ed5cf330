// Writes the fuzzers' seed corpora: every fixture pod wrapped in the
// AdmissionReview the apiserver would send, and the shipped profiles; for
// the offline reader (docs), every fixture pod as JSON and the YAML files
// named after the profiles; for nccl-detect (ncdetect), the trees of its
// tests in fuzz_ncdetect.c's record format.
import { readFileSync, writeFileSync, readdirSync, mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";

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

// ---- nccl-detect trees: records "PATH\nCONTENT" split by NUL, the first
// the options ("--hca\n--socket-ifname", empty: none).
const route = (dev) =>
  "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
  `${dev}\t00000000\t013C000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n` +
  "eth0\t003C000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
const fib = (addrs) =>
  ["Main", "Local"]
    .map((t) => `${t}:\n  +-- 0.0.0.0/0 3 0 5\n` +
      addrs.map((a) => `     +-- ${a}/24 2 0 2\n        |-- ${a}\n           /32 host LOCAL\n`).join(""))
    .join("");
const tree = (opts, files) => [opts, ...files.map(([p, c]) => `${p}\n${c}`)].join("\0");

// show_gids lines ("DEV PORT INDEX GID [IPv4] VER [NDEV]") as a tree.
function showGids(text) {
  const files = [], addrs = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || f[0] === "DEV" || f[0] === "---") continue;
    const [dev, port, index, gid] = f;
    const [ipv4, ver, ndev] = f.length === 7 ? [f[4], f[5], f[6]] : f.length === 6 ? ["", f[4], f[5]] : ["", f[4], ""];
    const p = `I/${dev}/ports/${port}`;
    files.push([`${p}/state`, "4: ACTIVE\n"], [`${p}/link_layer`, "Ethernet\n"], [`${p}/gids/${index}`, gid + "\n"],
      [`${p}/gid_attrs/types/${index}`, ver === "v2" ? "RoCE v2\n" : "IB/RoCE v1\n"]);
    if (ndev) files.push([`${p}/gid_attrs/ndevs/${index}`, ndev + "\n"], [`N/${ndev}`, "<dir>"]);
    if (ipv4) addrs.push(ipv4);
  }
  return { files, addrs };
}

// n devices, one ACTIVE RoCE port each, on ethI+1 or all on eth0 (the
// default route's).
function roce(n, name, onRoute) {
  const files = [];
  for (let i = 0; i < n; i++) {
    const p = `I/${name(i)}/ports/1`, ndev = onRoute ? "eth0" : `eth${i + 1}`;
    files.push([`${p}/state`, "4: ACTIVE\n"], [`${p}/link_layer`, "Ethernet\n"],
      [`${p}/gids/0`, `fe80:0000:0000:0000:6c2a:11ff:fe01:${i.toString(16).padStart(4, "0")}\n`],
      [`${p}/gid_attrs/types/0`, "RoCE v2\n"], [`${p}/gid_attrs/ndevs/0`, ndev + "\n"], [`N/${ndev}`, "<dir>"]);
  }
  return [...files, ["R", route("eth0")]];
}

mkdirSync(join(out, "ncdetect"), { recursive: true });
const seed = showGids(readFileSync(fileURLToPath(new URL("../e2e/testdata/show_gids-seed-8card.txt", import.meta.url)), "utf8"));
const seedFiles = [...seed.files, ["R", route("eth0")], ["F", fib(seed.addrs)]];
const long = (i) => "x".repeat(61) + String(i).padStart(2, "0");
const short = (i) => `mlx5_${i}`;
const ncdetectSeeds = {
  "seed-8card": tree("\n", seedFiles),
  "seed-8card-profile-hca": tree("=mlx5_1,mlx5_2,mlx5_3,mlx5_4\neth0", seedFiles),
  "seed-8card-fifo-state": tree("\n", [...seedFiles.filter(([p]) => p !== "I/mlx5_2/ports/1/state"), ["I/mlx5_2/ports/1/state", "<fifo>"]]),
  "seed-8card-no-fib": tree("\n", seed.files.concat([["R", route("eth0")]])),
  "40-on-default-route": tree("\n", roce(40, short, true)),
  "40-selected": tree("\n", roce(40, short, false)),
  "64-long-names-selected": tree("\n", roce(64, long, false)),
  "64-long-names-on-default-route": tree("\n", roce(64, long, true)),
  "hostile-names": tree("\n", [...roce(1, short, true), ...roce(3, (i) => ["a,b", "=mlx5_1", "^mlx5_2"][i], false)]),
  "ports-past-the-bound": tree("\n", Array.from({ length: 10 }, (_, i) => [
    [`I/mlx5_0/ports/${i + 1}/state`, "4: ACTIVE\n"], [`I/mlx5_0/ports/${i + 1}/link_layer`, "InfiniBand\n"]]).flat()),
};
for (const [name, text] of Object.entries(ncdetectSeeds)) writeFileSync(join(out, "ncdetect", name), text);
