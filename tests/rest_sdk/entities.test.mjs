// Entities: insert, get, update (Replace/Merge) with an ETag and with *, upserts,
// delete with an ETag and with *, conditional writes (412 with a stale ETag).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTarget, tableName, expectRestError } from "./harness.mjs";
import { raw, errorCode } from "./raw.mjs";

let t, c, table;
before(async () => {
  t = await startTarget();
  table = tableName("ent");
  c = t.tableClient(table);
  await c.createTable();
});
after(async () => {
  await t?.stop();
});

const userProps = (e) =>
  Object.fromEntries(Object.entries(e).filter(([k]) => !["etag", "timestamp"].includes(k) && !k.startsWith("odata.")));

test("createEntity: the SDK asks for no content and gets 204 with an ETag", async () => {
  let status, prefer;
  const res = await c.createEntity(
    { partitionKey: "p1", rowKey: "r1", Name: "a", N: 1 },
    { onResponse: (r) => ((status = r.status), (prefer = r.headers.get("preference-applied"))) },
  );
  assert.equal(status, 204);
  assert.equal(prefer, "return-no-content");
  assert.match(res.etag, /^W\/"/);
  const got = await c.getEntity("p1", "r1");
  assert.equal(got.etag, res.etag);
  assert.ok(got.timestamp, "Timestamp set by the server");
  assert.deepEqual(userProps(got), { partitionKey: "p1", rowKey: "r1", Name: "a", N: 1 });
});

test("insert without Prefer: 201 with the entity in the body (hand-signed request)", async () => {
  const r = await raw(t, "POST", `/${table}`, { body: { PartitionKey: "p1", RowKey: "r201", Name: "b", "Big@odata.type": "Edm.Int64", Big: "5" } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.PartitionKey, "p1");
  assert.equal(r.json.RowKey, "r201");
  assert.equal(r.json.Name, "b");
  assert.equal(r.json.Big, "5");
  assert.equal(r.json["Big@odata.type"], "Edm.Int64");
  assert.ok(r.json["odata.etag"], "odata.etag in the body");
  assert.equal(r.headers.get("etag"), r.json["odata.etag"]);
  assert.ok(r.json.Timestamp);
});

test("createEntity of an existing entity: 409 EntityAlreadyExists", async () => {
  await c.createEntity({ partitionKey: "p1", rowKey: "dup" });
  await expectRestError(c.createEntity({ partitionKey: "p1", rowKey: "dup" }), 409, "EntityAlreadyExists");
});

test("getEntity of a missing entity: 404 ResourceNotFound", async () => {
  await expectRestError(c.getEntity("p1", "nope"), 404, "ResourceNotFound");
});

test("getEntity with select returns only the chosen properties", async () => {
  await c.createEntity({ partitionKey: "p1", rowKey: "sel", A: 1, B: "two", C: true });
  const got = await c.getEntity("p1", "sel", { queryOptions: { select: ["A", "C"] } });
  assert.equal(got.A, 1);
  assert.equal(got.C, true);
  assert.equal("B" in got, false);
});

test("updateEntity Replace with the current ETag replaces every property and changes the ETag", async () => {
  const { etag } = await c.createEntity({ partitionKey: "p2", rowKey: "rep", A: 1, B: "x" });
  const res = await c.updateEntity({ partitionKey: "p2", rowKey: "rep", C: 3 }, "Replace", { etag });
  assert.notEqual(res.etag, etag);
  const got = await c.getEntity("p2", "rep");
  assert.deepEqual(userProps(got), { partitionKey: "p2", rowKey: "rep", C: 3 });
  assert.equal(got.etag, res.etag);
});

test("updateEntity Merge with the current ETag keeps the other properties", async () => {
  const { etag } = await c.createEntity({ partitionKey: "p2", rowKey: "mrg", A: 1, B: "x" });
  const res = await c.updateEntity({ partitionKey: "p2", rowKey: "mrg", B: "y", C: 3 }, "Merge", { etag });
  assert.notEqual(res.etag, etag);
  const got = await c.getEntity("p2", "mrg");
  assert.deepEqual(userProps(got), { partitionKey: "p2", rowKey: "mrg", A: 1, B: "y", C: 3 });
});

test("updateEntity with a stale ETag: 412 UpdateConditionNotSatisfied and nothing changes", async () => {
  const { etag: old } = await c.createEntity({ partitionKey: "p2", rowKey: "stale", A: 1 });
  const { etag: cur } = await c.updateEntity({ partitionKey: "p2", rowKey: "stale", A: 2 }, "Replace", { etag: old });
  for (const mode of ["Replace", "Merge"]) {
    await expectRestError(
      c.updateEntity({ partitionKey: "p2", rowKey: "stale", A: 99 }, mode, { etag: old }),
      412,
      "UpdateConditionNotSatisfied",
    );
  }
  await expectRestError(c.deleteEntity("p2", "stale", { etag: old }), 412, "UpdateConditionNotSatisfied");
  const got = await c.getEntity("p2", "stale");
  assert.equal(got.A, 2);
  assert.equal(got.etag, cur);
});

test("updateEntity with * (the SDK's default) is unconditional; a missing entity is 404", async () => {
  await c.createEntity({ partitionKey: "p2", rowKey: "star", A: 1 });
  await c.updateEntity({ partitionKey: "p2", rowKey: "star", A: 2 }, "Replace");
  await c.updateEntity({ partitionKey: "p2", rowKey: "star", B: 3 }, "Merge", { etag: "*" });
  const got = await c.getEntity("p2", "star");
  assert.deepEqual(userProps(got), { partitionKey: "p2", rowKey: "star", A: 2, B: 3 });
  for (const mode of ["Replace", "Merge"]) {
    await expectRestError(c.updateEntity({ partitionKey: "p2", rowKey: "ghost", A: 1 }, mode), 404, "ResourceNotFound");
    await expectRestError(
      c.updateEntity({ partitionKey: "p2", rowKey: "ghost", A: 1 }, mode, { etag: 'W/"datetime\'2020-01-01T00%3A00%3A00.0000000Z\'"' }),
      404,
      "ResourceNotFound",
    );
  }
});

test("upsertEntity Replace and Merge create or overwrite without any ETag condition", async () => {
  await c.upsertEntity({ partitionKey: "p3", rowKey: "u", A: 1, B: "b" }, "Replace");
  assert.deepEqual(userProps(await c.getEntity("p3", "u")), { partitionKey: "p3", rowKey: "u", A: 1, B: "b" });
  await c.upsertEntity({ partitionKey: "p3", rowKey: "u", C: 3 }, "Merge");
  assert.deepEqual(userProps(await c.getEntity("p3", "u")), { partitionKey: "p3", rowKey: "u", A: 1, B: "b", C: 3 });
  await c.upsertEntity({ partitionKey: "p3", rowKey: "u", D: 4 }, "Replace");
  assert.deepEqual(userProps(await c.getEntity("p3", "u")), { partitionKey: "p3", rowKey: "u", D: 4 });
  await c.upsertEntity({ partitionKey: "p3", rowKey: "m", E: 5 }, "Merge");
  assert.deepEqual(userProps(await c.getEntity("p3", "m")), { partitionKey: "p3", rowKey: "m", E: 5 });
});

test("every write changes the ETag; the old one is rejected afterwards", async () => {
  const seen = new Set();
  let { etag } = await c.createEntity({ partitionKey: "p3", rowKey: "chain", N: 0 });
  seen.add(etag);
  for (let i = 1; i <= 5; i++) {
    const prev = etag;
    ({ etag } = await c.updateEntity({ partitionKey: "p3", rowKey: "chain", N: i }, i % 2 ? "Merge" : "Replace", { etag }));
    assert.ok(!seen.has(etag), `ETag reused at write ${i}`);
    seen.add(etag);
    await expectRestError(c.updateEntity({ partitionKey: "p3", rowKey: "chain", N: -1 }, "Merge", { etag: prev }), 412);
  }
  ({ etag } = await c.upsertEntity({ partitionKey: "p3", rowKey: "chain", N: 9 }, "Replace"));
  assert.ok(!seen.has(etag));
});

test("deleteEntity with the current ETag, with *, and of a missing entity", async () => {
  const { etag } = await c.createEntity({ partitionKey: "p4", rowKey: "d1" });
  await c.deleteEntity("p4", "d1", { etag });
  await expectRestError(c.getEntity("p4", "d1"), 404, "ResourceNotFound");
  await c.createEntity({ partitionKey: "p4", rowKey: "d2" });
  let status;
  await c.deleteEntity("p4", "d2", { onResponse: (r) => (status = r.status) }); // * by default
  assert.equal(status, 204);
  await expectRestError(c.getEntity("p4", "d2"), 404, "ResourceNotFound");
  await expectRestError(c.deleteEntity("p4", "d2"), 404, "ResourceNotFound");
});

test("an entity deleted and inserted again is new: the old ETag does not match it", async () => {
  const { etag } = await c.createEntity({ partitionKey: "p4", rowKey: "again", A: 1 });
  await c.deleteEntity("p4", "again");
  await c.createEntity({ partitionKey: "p4", rowKey: "again", A: 2 });
  await expectRestError(c.updateEntity({ partitionKey: "p4", rowKey: "again", A: 3 }, "Replace", { etag }), 412, "UpdateConditionNotSatisfied");
});

test("operations on a missing table: 404 TableNotFound", async () => {
  const m = t.tableClient(tableName("nosuch"));
  await expectRestError(m.createEntity({ partitionKey: "p", rowKey: "r" }), 404, "TableNotFound");
  await expectRestError(m.upsertEntity({ partitionKey: "p", rowKey: "r" }), 404, "TableNotFound");
  const r = await raw(t, "GET", `/${tableName("nosuch")}()`);
  assert.equal(r.status, 404);
  assert.equal(errorCode(r), "TableNotFound");
});
