// summarize.mjs: turns bench/compare/run.sh's results.jsonl into markdown
// tables of medians (over the repeats) and the issue's targets.
//
//   node summarize.mjs results.jsonl
import { readFileSync } from "node:fs";

const lines = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.trim());
const runs = new Map(); // label without "-<repeat>" -> [records]
for (const l of lines) {
  const r = JSON.parse(l);
  const m = /^(.*)-(\d+)$/.exec(r.label);
  const key = m ? m[1] : r.label;
  if (!runs.has(key)) runs.set(key, []);
  runs.get(key).push(r);
}

// The strict echo runs twice per repeat, around the sidecar's strict runs:
// "echo-strict" is the mean of the two.
{
  const a = runs.get("echo-strict-a") || [], b = runs.get("echo-strict-b") || [];
  if (a.length && a.length === b.length) {
    runs.set("echo-strict", a.map((x, i) => {
      const m = { label: `echo-strict-${i + 1}` };
      for (const f of ["p50_us", "p99_us", "ops_per_s"]) m[f] = (x[f] + b[i][f]) / 2;
      return m;
    }));
  }
}
const median = (v) => {
  if (!v.length) return NaN;
  const s = [...v].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
};
// A field of one record: loadgen nests per-op figures under ops.<kind>.
const field = (r, f) => {
  if (r[f] !== undefined) return r[f];
  if (r.ops && typeof r.ops === "object") {
    const k = Object.keys(r.ops)[0];
    if (k && r.ops[k][f] !== undefined) return r.ops[k][f];
  }
  return NaN;
};
const med = (key, f) => median((runs.get(key) || []).map((r) => field(r, f)).filter((x) => Number.isFinite(x)));
const each = (key, f, fmt) => (runs.get(key) || []).map((r) => fmt(field(r, f))).join(" ");
const has = (key) => runs.has(key);
// Per-repeat ratios a/b (runs matched by their repeat number), as a list.
const perRepeat = (ka, kb, f, invert = false) => {
  const a = runs.get(ka) || [], b = runs.get(kb) || [];
  const out = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = field(a[i], f) / field(b[i], f);
    out.push(invert ? 1 / x : x);
  }
  return out;
};
const list = (v) => v.map((x) => (x >= 10 ? x.toFixed(0) : x.toFixed(2))).join(", ");

const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");
const us = (x) => (Number.isFinite(x) ? (x >= 10000 ? `${(x / 1000).toFixed(1)} ms` : `${x.toFixed(0)} µs`) : "–");
const sec = (x) => (Number.isFinite(x) ? (x >= 1e6 ? `${(x / 1e6).toFixed(2)} s` : `${(x / 1000).toFixed(1)} ms`) : "–");
const ratio = (x) => (Number.isFinite(x) ? (x >= 10 ? x.toFixed(0) : x.toFixed(2)) : "–");
const verdict = (ok) => (ok ? "met" : "**missed**");

const n = Math.max(...[...runs.values()].map((v) => v.length));
const out = [];
out.push(`Medians of ${n} repeat(s); ratios are ratios of the medians, with the per-repeat ratios in parentheses.`, "");
out.push("| workload | sidetable (os) | raw RocksDB, 1 thread | Azurite 3.35 (memory) | sidetable / Azurite (target ≥ 30) | sidetable / raw (target ≥ 0.5) |");
out.push("|---|---:|---:|---:|---:|---:|");
const row = (name, st, raw, az, unit, withRaw) => {
  const sa = med(st, unit) / med(az, unit);
  const sr = withRaw ? med(st, unit) / med(raw, unit) : NaN;
  out.push(
    `| ${name} | ${int(med(st, unit))} /s | ${withRaw || has(raw) ? int(med(raw, unit)) + " /s" : "–"} | ${int(med(az, unit))} /s | ` +
      `${ratio(sa)} ${verdict(sa >= 30)} (${list(perRepeat(st, az, unit))}) | ` +
      `${withRaw ? `${ratio(sr)} ${verdict(sr >= 0.5)} (${list(perRepeat(st, raw, unit))})` : "(not a target)"} |`,
  );
};
row("single inserts, 32 in flight", "st-os-insert", "raw-insert", "az-insert", "ops_per_s", true);
row("point reads, 32 in flight", "st-os-get", "raw-get", "az-get", "ops_per_s", true);
row("EGTs of 100 × 1 KiB, one at a time (entities/s)", "st-os-egt", "raw-egt", "az-egt", "entities_per_s", false);
{
  const st = med("st-os-query", "p50_us"), az = med("az-query", "p50_us");
  const r = az / st;
  out.push(
    `| partition query, 5,000 entities, pages of 1,000 (time per query, p50) | ${sec(st)} | – | ${sec(az)} | ` +
      `${ratio(r)} ${verdict(r >= 30)} (${list(perRepeat("st-os-query", "az-query", "p50_us", true))}) | (not a target) |`,
  );
}
out.push("");
out.push("| strict round trip (1 connection, 1 in flight) | p50 | p99 | rate | p50 / echo p50 (target ≤ 1.5) |");
out.push("|---|---:|---:|---:|---:|");
const echo = med("echo-strict", "p50_us");
out.push(`| bare ZeroMQ DEALER/ROUTER echo, 1 KiB | ${us(echo)} | ${us(med("echo-strict", "p99_us"))} | ${int(med("echo-strict", "ops_per_s"))} /s | 1 |`);
for (const [k, name] of [
  ["st-os-strict-get", "sidetable Get of the 1 KiB entity"],
  ["st-os-strict-insert", "sidetable Insert of the 1 KiB entity (os)"],
]) {
  const r = med(k, "p50_us") / echo;
  out.push(`| ${name} | ${us(med(k, "p50_us"))} | ${us(med(k, "p99_us"))} | ${int(med(k, "ops_per_s"))} /s | ${ratio(r)} ${verdict(r <= 1.5)} (${list(perRepeat(k, "echo-strict", "p50_us"))}) |`);
}
out.push("");
out.push("Latency (medians of the per-run p50 and p99):", "");
out.push("| workload | sidetable p50 | sidetable p99 | raw p50 | raw p99 | Azurite p50 | Azurite p99 |");
out.push("|---|---:|---:|---:|---:|---:|---:|");
for (const [name, st, raw, az] of [
  ["single insert, 32 in flight", "st-os-insert", "raw-insert", "az-insert"],
  ["point read, 32 in flight", "st-os-get", "raw-get", "az-get"],
  ["EGT of 100", "st-os-egt", "raw-egt", "az-egt"],
  ["query of 5,000", "st-os-query", "", "az-query"],
]) {
  out.push(
    `| ${name} | ${us(med(st, "p50_us"))} | ${us(med(st, "p99_us"))} | ${raw ? us(med(raw, "p50_us")) : "–"} | ` +
      `${raw ? us(med(raw, "p99_us")) : "–"} | ${us(med(az, "p50_us"))} | ${us(med(az, "p99_us"))} |`,
  );
}
out.push("");
out.push("Other references measured in the same run:", "");
out.push("| what | median |");
out.push("|---|---:|");
const info = [
  ["raw RocksDB single inserts, 2 threads", "raw2-insert", "ops_per_s", "/s"],
  ["raw RocksDB point reads, 2 threads", "raw2-get", "ops_per_s", "/s"],
  ["raw RocksDB WriteBatch of 100 (entities/s)", "raw-egt", "entities_per_s", "/s"],
  ["bare ZeroMQ echo, 1 KiB, 32 in flight", "echo-depth32", "ops_per_s", "/s"],
  ["sidetable fsync: single inserts, 32 in flight", "st-fsync-insert", "ops_per_s", "/s"],
  ["sidetable fsync: EGTs of 100 (entities/s)", "st-fsync-egt", "entities_per_s", "/s"],
];
for (const [name, k, f, u] of info) if (has(k)) out.push(`| ${name} | ${int(med(k, f))} ${u} |`);
out.push("");
out.push("Every run (in repeat order):", "");
for (const [k, recs] of runs) {
  const f = /egt/.test(k) ? "entities_per_s" : /query/.test(k) ? "p50_us" : /strict/.test(k) ? "p50_us" : "ops_per_s";
  const fmt = f === "p50_us" ? us : int;
  const errs = recs.map((r) => (r.server_busy || 0) + Object.values(r.errors || {}).reduce((a, b) => a + (typeof b === "number" ? b : 0), 0)).reduce((a, b) => a + b, 0);
  out.push(`- ${k} (${f}): ${each(k, f, fmt)}${errs ? ` — errors/busy: ${errs}` : ""}`);
}
console.log(out.join("\n"));
