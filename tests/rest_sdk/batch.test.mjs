// Entity group transactions through submitTransaction ($batch with one changeset):
// mixed operations commit together; one failing operation rolls back all of them and
// its index is in the error message ("<index>:<message>"); limits.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { odata } from "@azure/data-tables";
import { startTarget, tableName, expectRestError, codeOf, azuriteDeviation } from "./harness.mjs";
import { rawBatch } from "./raw.mjs";

let t, c;
before(async () => {
  t = await startTarget();
  c = t.tableClient(tableName("egt"));
  await c.createTable();
});
after(async () => {
  await t?.stop();
});

async function partition(pk) {
  const out = {};
  for await (const e of c.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${pk}` } })) {
    const { etag, timestamp, partitionKey, rowKey, ...props } = e;
    for (const k of Object.keys(props)) if (k.startsWith("odata.")) delete props[k];
    out[rowKey] = props;
  }
  return out;
}

test("a transaction of mixed operations commits all of them; one sub-response per operation", async () => {
  await c.createEntity({ partitionKey: "mix", rowKey: "upd", A: 1, B: 1 });
  const { etag } = await c.createEntity({ partitionKey: "mix", rowKey: "mrg", A: 1, B: 1 });
  await c.createEntity({ partitionKey: "mix", rowKey: "del", A: 1 });
  await c.createEntity({ partitionKey: "mix", rowKey: "ups", A: 1, B: 1 });
  const res = await c.submitTransaction([
    ["create", { partitionKey: "mix", rowKey: "new", A: 7 }],
    ["update", { partitionKey: "mix", rowKey: "upd", C: 3 }, "Replace"],
    ["update", { partitionKey: "mix", rowKey: "mrg", C: 3 }, "Merge", { etag }],
    ["delete", { partitionKey: "mix", rowKey: "del" }],
    ["upsert", { partitionKey: "mix", rowKey: "ups", D: 4 }, "Merge"],
    ["upsert", { partitionKey: "mix", rowKey: "fresh", E: 5 }, "Replace"],
  ]);
  assert.equal(res.status, 202);
  assert.equal(res.subResponses.length, 6);
  for (const s of res.subResponses) assert.equal(s.status, 204);
  assert.equal(res.getResponseForEntity("new")?.status, 204);
  assert.ok(res.subResponses[0].etag, "an ETag for the insert");
  assert.deepEqual(await partition("mix"), {
    fresh: { E: 5 },
    mrg: { A: 1, B: 1, C: 3 },
    new: { A: 7 },
    ups: { A: 1, B: 1, D: 4 },
    upd: { C: 3 },
  });
  // The ETag a sub-response returns is the entity's new ETag.
  const got = await c.getEntity("mix", "new");
  assert.equal(got.etag, res.subResponses[0].etag);
});

test("100 operations are allowed", async () => {
  const ops = Array.from({ length: 100 }, (_, i) => ["create", { partitionKey: "hundred", rowKey: `r${String(i).padStart(3, "0")}`, i }]);
  const res = await c.submitTransaction(ops);
  assert.equal(res.subResponses.length, 100);
  assert.equal(Object.keys(await partition("hundred")).length, 100);
});

test("a failing operation rolls back the whole transaction; the error names its index", async () => {
  await c.createEntity({ partitionKey: "fail", rowKey: "exists", V: 1 });
  const before_ = await partition("fail");
  const cases = [
    // [operations, index of the failing one, status, code]
    [[["create", { partitionKey: "fail", rowKey: "a" }], ["create", { partitionKey: "fail", rowKey: "exists" }], ["create", { partitionKey: "fail", rowKey: "b" }]], 1, 409, "EntityAlreadyExists"],
    [[["upsert", { partitionKey: "fail", rowKey: "a" }, "Replace"], ["upsert", { partitionKey: "fail", rowKey: "c" }, "Merge"], ["update", { partitionKey: "fail", rowKey: "missing", X: 1 }, "Merge"]], 2, 404, "ResourceNotFound"],
    [[["update", { partitionKey: "fail", rowKey: "exists", V: 2 }, "Replace"], ["delete", { partitionKey: "fail", rowKey: "missing" }]], 1, 404, "ResourceNotFound"],
    [[["create", { partitionKey: "fail", rowKey: "a" }], ["update", { partitionKey: "fail", rowKey: "exists", V: 3 }, "Replace", { etag: 'W/"datetime\'2001-01-01T00%3A00%3A00.0000000Z\'"' }]], 1, 412, "UpdateConditionNotSatisfied"],
    [[["create", { partitionKey: "fail", rowKey: "a" }], ["create", { partitionKey: "fail", rowKey: "bad#key" }]], 1, 400, ["InvalidInput", "OutOfRangeInput"]],
  ];
  for (const [ops, index, status, code] of cases) {
    const err = await expectRestError(c.submitTransaction(ops), status, Array.isArray(code) ? undefined : code);
    if (Array.isArray(code)) assert.ok(code.includes(codeOf(err)), `code ${codeOf(err)}`);
    assert.match(err.message, new RegExp(`^${index}:`), `index ${index} in "${err.message.slice(0, 80)}"`);
    assert.deepEqual(await partition("fail"), before_, `nothing of a failed transaction is visible (${code})`);
  }
});

test("a stale ETag on a delete (hand-built $batch) fails the transaction with 412", async () => {
  const { etag } = await c.createEntity({ partitionKey: "stale", rowKey: "x", V: 1 });
  await c.updateEntity({ partitionKey: "stale", rowKey: "x", V: 2 }, "Replace");
  const table = c.tableName;
  const r = await rawBatch(t, [
    { method: "POST", path: `/${table}`, body: { PartitionKey: "stale", RowKey: "y" } },
    { method: "DELETE", path: `/${table}(PartitionKey='stale',RowKey='x')`, etag },
  ]);
  assert.equal(r.status, 202, "a failed changeset still answers 202 with the failure inside");
  assert.match(r.text, /HTTP\/1.1 412/);
  assert.match(r.text, /UpdateConditionNotSatisfied/);
  assert.match(r.text, /"1:/);
  assert.deepEqual(await partition("stale"), { x: { V: 2 } });
});

test("more than 100 operations are refused and nothing is written", async () => {
  const ops = Array.from({ length: 101 }, (_, i) => ["create", { partitionKey: "over", rowKey: `r${i}` }]);
  const err = await expectRestError(c.submitTransaction(ops), 400);
  assert.ok(["InvalidInput", "TooManyOperations"].includes(codeOf(err)), codeOf(err));
  assert.deepEqual(await partition("over"), {});
});

test("the SDK itself refuses two partitions in one transaction", async () => {
  await assert.rejects(
    c.submitTransaction([["create", { partitionKey: "x", rowKey: "1" }], ["create", { partitionKey: "y", rowKey: "1" }]]),
    /same partitionKey/,
  );
});

test("two partitions in one $batch (hand-built) are refused by the server, nothing written", { skip: azuriteDeviation("batch-cross-partition") }, async () => {
  const table = c.tableName;
  const r = await rawBatch(t, [
    { method: "POST", path: `/${table}`, body: { PartitionKey: "cp1", RowKey: "a" } },
    { method: "POST", path: `/${table}`, body: { PartitionKey: "cp2", RowKey: "b" } },
  ]);
  assert.ok([202, 400].includes(r.status), `status ${r.status}`);
  assert.match(r.text, /HTTP\/1.1 400|"code"\s*:\s*"(CommandsInBatchActUponDifferentPartitions|InvalidInput)"/);
  assert.deepEqual(await partition("cp1"), {});
  assert.deepEqual(await partition("cp2"), {});
});

test("the same entity twice in one transaction: 400 InvalidDuplicateRow, nothing written", async () => {
  for (const second of [["upsert", { partitionKey: "twice", rowKey: "a" }, "Merge"], ["create", { partitionKey: "twice", rowKey: "a" }], ["delete", { partitionKey: "twice", rowKey: "a" }]]) {
    const err = await expectRestError(c.submitTransaction([["create", { partitionKey: "twice", rowKey: "a" }], second]), 400, "InvalidDuplicateRow");
    assert.match(err.message, /^\d+:/, "an index in the message");
    assert.deepEqual(await partition("twice"), {});
  }
});

test("a transaction on a missing table fails with TableNotFound", async () => {
  const m = t.tableClient(tableName("nosuch"));
  const err = await expectRestError(m.submitTransaction([["create", { partitionKey: "p", rowKey: "r" }]]), 404);
  assert.equal(codeOf(err), "TableNotFound");
});
