// azurite_load.mjs: the @azure/data-tables client of bench/compare/run.sh.
//
// Drives an Azure Table REST endpoint on loopback with @azure/data-tables
// (installed under AZURITE_DIR, default /tmp/sidetable-azurite): Azurite's, or
// sidetable's REST gateway (issue 18) with --endpoint and --system sidetable-rest;
// the same client and workloads for both. Appends one JSON line per workload to
// --json, with the fields sidetable-loadgen writes (label, ops_per_s,
// entities_per_s, p50_us, p99_us).
//
//   node azurite_load.mjs --port 10002 --workload insert|get|egt|query \
//        [--endpoint http://127.0.0.1:PORT/devstoreaccount1] [--system azurite|sidetable-rest] \
//        [--duration 6] [--inflight 32] [--preload 10000] [--partitions 100] \
//        [--query-entities 5000] [--page-size 1000] [--queries 5] [--json out.jsonl] [--label x]
//        [--procs N]   (insert, get, egt: N client processes share --inflight; rates summed)
//        [--server-pid PID | --server-pgid PGID] [--clk-tck 100]
//                      (the server's CPU per operation over the measured window, from
//                      /proc: one process, or every process of a group, as Azurite runs)
//
// The entity is the sidetable benchmark's ~1 KiB entity: six typed
// properties (String, Int32, Double, Boolean, DateTime, Guid) plus a
// 760-character string of random text.
import { createRequire } from "node:module";
import { appendFileSync, readFileSync, readdirSync } from "node:fs";
import { randomUUID } from "node:crypto";

const azDir = process.env.AZURITE_DIR || "/tmp/sidetable-azurite";
const require = createRequire(`${azDir}/package.json`);
const { TableClient, odata } = require("@azure/data-tables");

// ---- flags ------------------------------------------------------------------
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
    return acc;
  }, []),
);
const port = Number(args.port || 10002);
const workload = args.workload || "insert";
const duration = Number(args.duration || 6);
const warmup = Number(args.warmup || 1);
const inflight = Number(args.inflight || 32);
const preload = Number(args.preload || 10000);
const partitions = Number(args.partitions || 100);
const queryEntities = Number(args["query-entities"] || 5000);
const pageSize = Number(args["page-size"] || 1000);
const queries = Number(args.queries || 5);
const system = args.system || "azurite";
const label = args.label || `${system}-${workload}`;

// Azurite's documented well-known development account (not a secret).
const account = "devstoreaccount1";
const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const endpoint = args.endpoint || `http://127.0.0.1:${port}/${account}`;
const conn =
  `DefaultEndpointsProtocol=http;AccountName=${account};AccountKey=${key};` +
  `TableEndpoint=${endpoint};`;
const table = args.table || `${workload}${Date.now() % 1e9}`.replace(/[^A-Za-z0-9]/g, "");
// --procs N: this process prepares the table (and the preload), then N copies of this
// script (--child) run the closed loop with inflight/N each; one record with the sums.
const procs = workload === "query" ? 1 : Math.max(1, Number(args.procs || 1));
const childIndex = args.child !== undefined ? Number(args.child) : -1;
const client = TableClient.fromConnectionString(conn, table, { allowInsecureConnection: true });

// ---- the server's CPU ---------------------------------------------------------------
// user + system seconds of --server-pid, or of every process in --server-pgid (Azurite
// runs under npx and a shell), from /proc/<pid>/stat; null without either flag.
const clkTck = Number(args["clk-tck"] || 100);
function statFields(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    return s.slice(s.lastIndexOf(")") + 2).split(" ");  // from the state field on
  } catch {
    return null;  // gone meanwhile
  }
}
function serverCpuSeconds() {
  const ticks = (f) => Number(f[11]) + Number(f[12]);  // utime, stime
  if (args["server-pid"]) {
    const f = statFields(args["server-pid"]);
    return f ? ticks(f) / clkTck : null;
  }
  if (args["server-pgid"]) {
    let sum = 0;
    for (const d of readdirSync("/proc")) {
      if (!/^\d+$/.test(d)) continue;
      const f = statFields(d);
      if (f && f[2] === String(args["server-pgid"])) sum += ticks(f);
    }
    return sum / clkTck;
  }
  return null;
}
// Samples the server's CPU when the measured window opens and closes (timers from now).
// The closing sample is taken when the window's timer fires or, if the load ended
// first (its last operations can finish before the timer runs), by finish().
function serverCpuWindow() {
  const w = { start: null, end: null, timers: [] };
  w.finish = () => {
    for (const t of w.timers) clearTimeout(t);
    if (w.start !== null && w.end === null) w.end = serverCpuSeconds();
  };
  if (!args["server-pid"] && !args["server-pgid"]) return w;
  w.timers.push(setTimeout(() => { w.start = serverCpuSeconds(); }, warmup * 1000));
  w.timers.push(setTimeout(() => { w.end = serverCpuSeconds(); }, (warmup + duration) * 1000));
  return w;
}
function serverCpuUsPerOp(w, ops) {
  w.finish();
  if (w.start === null || w.end === null || ops === 0) return undefined;
  return ((w.end - w.start) * 1e6) / ops;
}

// ---- the entity -----------------------------------------------------------------
let pool = "";
{
  const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,";
  let x = 42n;
  const chars = [];
  for (let i = 0; i < 1 << 16; i++) {
    x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    chars.push(alphabet[Number(x >> 33n) % alphabet.length]);
  }
  pool = chars.join("");
}
const guid = randomUUID();
function entity(pk, rk, n) {
  const off = (n * 7919) % (pool.length - 760);
  return {
    partitionKey: pk,
    rowKey: rk,
    Name: `customer-${String(n % 1000000).padStart(6, "0")}`,
    Age: n % 100,
    Balance: { value: n * 0.25 + 0.125, type: "Double" },
    Active: n % 2 === 0,
    Joined: new Date(Date.UTC(2023, 10, 14) + (n % 1000000) * 1000),
    CustomerId: { value: guid, type: "Guid" },
    Notes: pool.slice(off, off + 760),
  };
}
const pk = (p) => `p${String(p).padStart(6, "0")}`;
const rk = (r) => `r${String(r).padStart(10, "0")}`;

// ---- helpers ---------------------------------------------------------------------
const nowNs = () => process.hrtime.bigint();
function pct(sorted, p) {
  if (!sorted.length) return 0;
  const i = Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)));
  return sorted[i];
}
function report(ops, entitiesPerOp, seconds, latUs, extra = {}) {
  latUs.sort((a, b) => a - b);
  const r = {
    label,
    system,
    workload,
    ops: ops,
    seconds,
    ops_per_s: ops / seconds,
    entities_per_s: (ops * entitiesPerOp) / seconds,
    p50_us: pct(latUs, 50),
    p99_us: pct(latUs, 99),
    p999_us: pct(latUs, 99.9),
    ...extra,
  };
  console.log(
    `${system} ${workload}: ${ops} ops in ${seconds.toFixed(2)} s: ${r.ops_per_s.toFixed(0)} ops/s, ` +
      `${r.entities_per_s.toFixed(0)} entities/s, p50 ${(r.p50_us / 1000).toFixed(2)} ms, ` +
      `p99 ${(r.p99_us / 1000).toFixed(2)} ms` +
      (r.client_cpu_pct !== undefined ? `, client CPU ${r.client_cpu_pct.toFixed(0)}%` : "") +
      (r.server_cpu_us_per_op !== undefined ? `, server CPU ${r.server_cpu_us_per_op.toFixed(0)} us/op` : "") +
      (r.errors ? `, ${r.errors} errors` : ""),
  );
  if (args.json) appendFileSync(args.json, JSON.stringify(r) + "\n");
}

// Loads `count` entities into partitions [0, parts) in transactions of 100, 4 at a time.
async function load(count, parts) {
  const perPart = Math.ceil(count / parts);
  const jobs = [];
  for (let p = 0; p < parts; p++)
    for (let first = 0; first < perPart; first += 100) jobs.push([p, first, Math.min(first + 100, perPart)]);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const [p, first, last] = jobs[next++];
      const actions = [];
      for (let r = first; r < last; r++) actions.push(["upsert", entity(pk(p), rk(r), r), "Replace"]);
      await client.submitTransaction(actions);
    }
  };
  const t0 = Date.now();
  await Promise.all(Array.from({ length: 4 }, worker));
  console.error(`${system}: loaded ${perPart * parts} entities in ${((Date.now() - t0) / 1000).toFixed(2)} s`);
  return perPart;
}

// Runs `op` with `inflight` concurrent loops for warmup + duration seconds;
// measures operations that start after the warm-up and end before the deadline.
async function closedLoop(op, concurrency) {
  const start = Date.now();
  const measureStart = start + warmup * 1000;
  const measureEnd = measureStart + duration * 1000;
  const lat = [];
  let ops = 0;
  let errors = 0;
  let seq = 0;
  const cpu0 = process.cpuUsage();
  const wall0 = Date.now();
  const server = serverCpuWindow();
  const loop = async (id) => {
    while (Date.now() < measureEnd) {
      const measured = Date.now() >= measureStart;
      const t0 = nowNs();
      try {
        await op(id, seq++);
      } catch (e) {
        errors++;
        if (errors <= 3) console.error(`${system} ${workload}: ${e.message}`);
        continue;
      }
      if (measured && Date.now() <= measureEnd) {
        ops++;
        lat.push(Number(nowNs() - t0) / 1000);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => loop(i)));
  // The client's own CPU (user + system) over the whole loop, in % of one core: near 100
  // means the Node client, not the server, set the pace.
  const cpu = process.cpuUsage(cpu0);
  const client_cpu_pct = ((cpu.user + cpu.system) / 1000 / (Date.now() - wall0)) * 100;
  return { ops, lat, errors, client_cpu_pct, server_cpu_us_per_op: serverCpuUsPerOp(server, ops) };
}

// ---- workloads -----------------------------------------------------------------------
await client.createTable();
const run = `${process.pid}x${Date.now() % 100000}`;
if (procs > 1 && childIndex < 0) {
  const { spawn } = await import("node:child_process");
  const { mkdtempSync, readFileSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  if (workload === "get") await load(preload, partitions);
  const dir = mkdtempSync(`${tmpdir()}/azload-`);
  const own = ["--json", "--label", "--procs", "--inflight", "--server-pid", "--server-pgid"];
  const argv = process.argv.slice(2).filter((a, i, all) => !own.includes(a) && !own.includes(all[i - 1]));
  // The children's windows open together (each warms up from its start): one
  // sample of the server's CPU around all of them.
  const server = serverCpuWindow();
  const codes = await Promise.all(
    Array.from({ length: procs }, (_, i) =>
      new Promise((res) => {
        const c = spawn(process.execPath, [process.argv[1], ...argv, "--table", table, "--child", String(i),
          "--inflight", String(Math.max(1, Math.round(inflight / procs))), "--json", `${dir}/${i}.jsonl`, "--label", `${label}-part${i}`],
          { stdio: ["ignore", "ignore", "inherit"], env: process.env });
        c.on("exit", (code) => res(code));
      }),
    ),
  );
  const parts = Array.from({ length: procs }, (_, i) => {
    try {
      return JSON.parse(readFileSync(`${dir}/${i}.jsonl`, "utf8").trim());
    } catch {
      return null;
    }
  });
  rmSync(dir, { recursive: true, force: true });
  if (parts.some((p) => !p) || codes.some((c) => c !== 0)) throw new Error(`a client process failed: exit codes ${codes}`);
  const sum = (f) => parts.reduce((a, p) => a + (p[f] || 0), 0);
  const sorted = (f) => parts.map((p) => p[f]).sort((a, b) => a - b);
  const r = {
    label, system, workload, procs, inflight,
    ops: sum("ops"), seconds: duration,
    ops_per_s: sum("ops_per_s"), entities_per_s: sum("entities_per_s"),
    // Approximations: the median of the processes' p50s, the largest p99.
    p50_us: sorted("p50_us")[procs >> 1], p99_us: sorted("p99_us")[procs - 1], p999_us: sorted("p999_us")[procs - 1],
    errors: sum("errors"), client_cpu_pct: sum("client_cpu_pct"),
    server_cpu_us_per_op: serverCpuUsPerOp(server, sum("ops")),
  };
  console.log(`${system} ${workload} (${procs} client processes): ${r.ops} ops: ${r.ops_per_s.toFixed(0)} ops/s, ` +
    `${r.entities_per_s.toFixed(0)} entities/s, p50 ~${(r.p50_us / 1000).toFixed(2)} ms, client CPU ${r.client_cpu_pct.toFixed(0)}%` +
    (r.server_cpu_us_per_op !== undefined ? `, server CPU ${r.server_cpu_us_per_op.toFixed(0)} us/op` : "") +
    (r.errors ? `, ${r.errors} errors` : ""));
  if (args.json) appendFileSync(args.json, JSON.stringify(r) + "\n");
  process.exit(0);
}
if (workload === "insert") {
  const { ops, lat, errors, client_cpu_pct, server_cpu_us_per_op } = await closedLoop(
    (id, n) => client.createEntity(entity(pk(n % partitions), `n${run}-${id}-${n}`, n)),
    inflight,
  );
  report(ops, 1, duration, lat, { errors, inflight, client_cpu_pct, server_cpu_us_per_op });
} else if (workload === "get") {
  // A child of --procs finds the parent's preload in place.
  const perPart = childIndex >= 0 ? Math.ceil(preload / partitions) : await load(preload, partitions);
  const { ops, lat, errors, client_cpu_pct, server_cpu_us_per_op } = await closedLoop(async () => {
    const p = Math.floor(Math.random() * partitions);
    const r = Math.floor(Math.random() * perPart);
    const e = await client.getEntity(pk(p), rk(r));
    if (!e.Notes) throw new Error("entity without Notes");
  }, inflight);
  report(ops, 1, duration, lat, { errors, inflight, preload, client_cpu_pct, server_cpu_us_per_op });
} else if (workload === "egt") {
  const { ops, lat, errors, client_cpu_pct, server_cpu_us_per_op } = await closedLoop(async (id, n) => {
    const actions = [];
    // Each client process of --procs writes partitions of its own.
    const part = pk(1000 + n + Math.max(0, childIndex) * 1000000);
    for (let i = 0; i < 100; i++) actions.push(["create", entity(part, `n${run}-${i}`, n * 100 + i)]);
    await client.submitTransaction(actions);
  }, 1);
  report(ops, 100, duration, lat, { errors, client_cpu_pct, server_cpu_us_per_op });
} else if (workload === "query") {
  await load(queryEntities, 1);
  const lat = [];
  let entities = 0;
  const t0 = Date.now();
  for (let q = 0; q < queries + 1; q++) {
    const s = nowNs();
    let n = 0;
    const pages = client
      .listEntities({ queryOptions: { filter: odata`PartitionKey eq ${pk(0)}` } })
      .byPage({ maxPageSize: pageSize });
    for await (const page of pages) n += page.length;
    if (n !== queryEntities) throw new Error(`query returned ${n} entities, expected ${queryEntities}`);
    if (q > 0) {
      lat.push(Number(nowNs() - s) / 1000);
      entities += n;
    }
  }
  const seconds = lat.reduce((a, b) => a + b, 0) / 1e6;
  report(queries, queryEntities, seconds, lat, { errors: 0, entities });
} else {
  throw new Error(`unknown workload ${workload}`);
}
