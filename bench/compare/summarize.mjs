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
// The targets of issue 17, each a ratio measured in this run.
out.push("| workload | sidetable | reference (same run) | ratio | target |");
out.push("|---|---:|---:|---:|---|");
const target = (name, stKey, refKey, f, fmt, refName, atLeast, goal, invert = false) => {
  const a = med(stKey, f), b = med(refKey, f);
  const r = invert ? b / a : a / b;
  const ok = atLeast ? r >= goal : r <= goal;
  out.push(
    `| ${name} | ${fmt(a)} | ${refName} ${fmt(b)} | ${ratio(r)} (${list(perRepeat(stKey, refKey, f, invert))}) | ` +
      `${atLeast ? "≥" : "≤"} ${goal}: ${Number.isFinite(r) ? verdict(ok) : "–"} |`,
  );
};
const rate = (x) => `${int(x)} /s`;
target("single inserts, 32 in flight, os", "st-os-insert", "az-insert", "ops_per_s", rate, "Azurite", true, 30);
// Issue 18: the REST gateway through @azure/data-tables, the same client as Azurite's.
if (has("rest-insert")) {
  // With --rest-procs N both sides ran N client processes (Azurite's runs are azp-*).
  const az = has("azp-insert") ? "azp" : "az";
  const procs = (runs.get("rest-insert")[0].procs || 1);
  const pr = procs > 1 ? `, ${procs} client processes` : "";
  target(`REST: single inserts, 32 in flight${pr} (@azure/data-tables)`, "rest-insert", `${az}-insert`, "ops_per_s", rate, "Azurite", true, 10);
  target(`REST: point reads, 32 in flight${pr}`, "rest-get", `${az}-get`, "ops_per_s", rate, "Azurite", true, 10);
  target(`REST: EGTs of 100 × 1 KiB (entities/s)${procs > 1 ? `, ${procs} in flight` : ""}`, "rest-egt", `${az}-egt`, "entities_per_s", rate, "Azurite", true, 10);
  const rq = med("rest-query", "p50_us"), aq = med("az-query", "p50_us");
  out.push(`| REST: partition query, 5,000 entities (time per query) | ${sec(rq)} | Azurite ${sec(aq)} | ${ratio(aq / rq)} (${list(perRepeat("rest-query", "az-query", "p50_us", true))}) | (for information) |`);
  for (const [name, k] of [["inserts", "insert"], ["point reads", "get"], ["EGTs", "egt"]]) {
    out.push(`| REST: the client's CPU during the ${name} | sidetable ${med(`rest-${k}`, "client_cpu_pct").toFixed(0)}% of a core | Azurite ${med(`${az}-${k}`, "client_cpu_pct").toFixed(0)}% | – | near 100% per process: the client set the pace |`);
  }
  // What each server spends per request, whatever pace the client set: the
  // comparison the client cannot cap (run.sh passes --server-pid/--server-pgid).
  for (const [name, k] of [["insert", "insert"], ["point read", "get"], ["EGT of 100", "egt"]]) {
    const st = med(`rest-${k}`, "server_cpu_us_per_op"), a = med(`${az}-${k}`, "server_cpu_us_per_op");
    if (!Number.isFinite(st) || !Number.isFinite(a)) continue;
    out.push(`| REST: server CPU per ${name} | sidetable ${st.toFixed(0)} µs | Azurite ${a.toFixed(0)} µs | ${ratio(a / st)} (${list(perRepeat(`rest-${k}`, `${az}-${k}`, "server_cpu_us_per_op", true))}) | (for information: Azurite's CPU ÷ sidetable's) |`);
  }
}
target("single inserts, 32 in flight, os", "st-os-insert", "echo-depth32", "ops_per_s", rate, "ZeroMQ echo, depth 32,", true, 0.4);
target("point reads, 32 in flight", "st-os-get", "echo-depth32", "ops_per_s", rate, "ZeroMQ echo, depth 32,", true, 0.7);
// The same echo with getpid() from memory on both ends (libzmq asks on
// every wait; the sidecar and the loadgen answer from memory): what the
// ratios are without that workaround counted as the request path's speed.
if (has("echo-pidc-depth32")) {
  target("single inserts, 32 in flight, os", "st-os-insert", "echo-pidc-depth32", "ops_per_s", rate, "echo with getpid() from memory,", true, 0.4);
  target("point reads, 32 in flight", "st-os-get", "echo-pidc-depth32", "ops_per_s", rate, "echo with getpid() from memory,", true, 0.7);
}
target("EGTs of 100 × 1 KiB (entities/s)", "st-os-egt", "az-egt", "entities_per_s", rate, "Azurite", true, 20);
target("partition query, 5,000 entities (time per query)", "st-os-query", "az-query", "p50_us", sec, "Azurite", true, 30, true);
target("single inserts, fsync, 32 in flight", "st-fsync-insert", "st-os-insert", "ops_per_s", rate, "the same in os", true, 0.5);
target("strict round trip p50: Get", "st-os-strict-get", "echo-strict", "p50_us", us, "echo", false, 1.25);
target("strict round trip p50: Insert", "st-os-strict-insert", "echo-strict", "p50_us", us, "echo", false, 1.5);
for (const [name, k, goal] of [
  ["server CPU per insert (os, 32 in flight)", "st-os-insert", 35],
  ["server CPU per point read (32 in flight)", "st-os-get", 15],
  ["server CPU per insert (fsync, 32 in flight)", "st-fsync-insert", NaN],
]) {
  if (!has(k)) continue;
  const x = med(k, "server_cpu_us_per_op");
  out.push(`| ${name} | ${us(x)} | – | – | ${Number.isFinite(goal) ? `≤ ${goal} µs: ${verdict(x <= goal)}` : "(for information)"} |`);
}
out.push("");
out.push("| memory | median |");
out.push("|---|---:|");
for (const [name, k, f, unit] of [
  ["sidecar RSS after 5 s of inserts (os), peak", "st-os-insert", "server_rss_peak_kb", "MB"],
  ["sidecar RSS after the point reads, peak", "st-os-get", "server_rss_peak_kb", "MB"],
  ["sidecar RSS after the EGTs (os), peak", "st-os-egt", "server_rss_peak_kb", "MB"],
  ["sidecar RSS after the queries, peak", "st-os-query", "server_rss_peak_kb", "MB"],
  ["per idle connection (1,000 connections, one Ping each, fresh process)", "st-idle-conn", "kb_per_connection", "KB"],
]) {
  if (!has(k)) continue;
  const x = med(k, f);
  out.push(`| ${name} | ${unit === "MB" ? (x / 1024).toFixed(0) + " MB" : x.toFixed(1) + " KB"} |`);
}
out.push("");
out.push("For information, against raw RocksDB in process (1 thread):", "");
out.push("| workload | sidetable | raw RocksDB | ratio |");
out.push("|---|---:|---:|---:|");
for (const [name, st, raw, f] of [
  ["single inserts", "st-os-insert", "raw-insert", "ops_per_s"],
  ["point reads", "st-os-get", "raw-get", "ops_per_s"],
  ["EGTs of 100 (entities/s)", "st-os-egt", "raw-egt", "entities_per_s"],
]) {
  out.push(`| ${name} | ${rate(med(st, f))} | ${rate(med(raw, f))} | ${ratio(med(st, f) / med(raw, f))} |`);
}
out.push("");
out.push("| strict round trip (1 connection, 1 in flight) | p50 | p99 | rate |");
out.push("|---|---:|---:|---:|");
out.push(`| bare ZeroMQ DEALER/ROUTER echo, 1 KiB | ${us(med("echo-strict", "p50_us"))} | ${us(med("echo-strict", "p99_us"))} | ${int(med("echo-strict", "ops_per_s"))} /s |`);
for (const [k, name] of [
  ["st-os-strict-get", "sidetable Get of the 1 KiB entity"],
  ["st-os-strict-insert", "sidetable Insert of the 1 KiB entity (os)"],
]) {
  out.push(`| ${name} | ${us(med(k, "p50_us"))} | ${us(med(k, "p99_us"))} | ${int(med(k, "ops_per_s"))} /s |`);
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
  ["the echo with getpid() from memory, 1 KiB, 32 in flight", "echo-pidc-depth32", "ops_per_s", "/s"],
  ["sidetable fsync: single inserts, 32 in flight", "st-fsync-insert", "ops_per_s", "/s"],
  ["sidetable fsync: EGTs of 100 (entities/s)", "st-fsync-egt", "entities_per_s", "/s"],
];
for (const [name, k, f, u] of info) if (has(k)) out.push(`| ${name} | ${int(med(k, f))} ${u} |`);
out.push("");
out.push("Every run (in repeat order):", "");
for (const [k, recs] of runs) {
  const f = /egt/.test(k) ? "entities_per_s" : /query/.test(k) ? "p50_us" : /strict/.test(k) ? "p50_us" : "ops_per_s";
  const fmt = f === "p50_us" ? us : int;
  const errs = recs
    .map((r) => (r.server_busy || 0) + (typeof r.errors === "number" ? r.errors : Object.values(r.errors || {}).reduce((a, b) => a + (typeof b === "number" ? b : 0), 0)))
    .reduce((a, b) => a + b, 0);
  out.push(`- ${k} (${f}): ${each(k, f, fmt)}${errs ? ` — errors/busy: ${errs}` : ""}`);
}
console.log(out.join("\n"));
