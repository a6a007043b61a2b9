// Tables: create, delete, list with a filter on TableName, paging by NextTableName.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { odata, TableServiceClient, TableClient } from "@azure/data-tables";
import { startTarget, tableName, expectRestError, codeOf, azuriteDeviation } from "./harness.mjs";
import { raw, errorCode } from "./raw.mjs";

let t;
before(async () => {
  t = await startTarget();
});
after(async () => {
  await t?.stop();
});

async function names(iter) {
  const out = [];
  for await (const x of iter) out.push(x.name);
  return out;
}

test("createTable creates a table that listTables finds by name", async () => {
  const svc = t.serviceClient();
  const name = tableName("create");
  let status;
  await svc.createTable(name, { onResponse: (r) => (status = r.status) });
  assert.equal(status, 201);
  const found = await names(svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } }));
  assert.deepEqual(found, [name]);
});

test("createTable of an existing table: 409 TableAlreadyExists in the service's error body", async () => {
  const svc = t.serviceClient();
  const name = tableName("dup");
  await svc.createTable(name);
  // The SDK swallows TableAlreadyExists, but only when the body is the service's
  // odata.error with that code; onResponse shows what came back.
  let resp;
  await svc.createTable(name, { onResponse: (r) => (resp = r) });
  assert.equal(resp.status, 409);
  assert.equal(resp.parsedBody?.odataError?.code, "TableAlreadyExists");
  // Table names are case-insensitive.
  resp = undefined;
  await svc.createTable(name.toUpperCase(), { onResponse: (r) => (resp = r) });
  assert.equal(resp.status, 409);
});

test("deleteTable removes the table; its entities are gone with it", async () => {
  const svc = t.serviceClient();
  const name = tableName("del");
  await svc.createTable(name);
  const c = t.tableClient(name);
  await c.createEntity({ partitionKey: "p", rowKey: "r", v: 1 });
  let status;
  await svc.deleteTable(name, { onResponse: (r) => (status = r.status) });
  assert.equal(status, 204);
  assert.deepEqual(await names(svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } })), []);
  await expectRestError(c.getEntity("p", "r"), 404);
  await expectRestError(c.createEntity({ partitionKey: "p", rowKey: "r" }), 404, "TableNotFound");
});

test("deleteTable of a missing table is a 404 (the SDK does not throw)", async () => {
  const c = t.tableClient(tableName("missing"));
  let status;
  await c.deleteTable({ onResponse: (r) => (status = r.status) });
  assert.equal(status, 404);
});

const BAD_TABLE_NAMES = ["ab", "1abc", "a-b-c", "x".repeat(64), "tables"];

test("bad table names are rejected with 400", async () => {
  const svc = t.serviceClient();
  for (const bad of BAD_TABLE_NAMES) await expectRestError(svc.createTable(bad), 400);
});

test("bad table names carry the service's error code", { skip: azuriteDeviation("table-name-error-code") }, async () => {
  const svc = t.serviceClient();
  for (const bad of BAD_TABLE_NAMES) {
    const err = await expectRestError(svc.createTable(bad), 400);
    assert.ok(["InvalidResourceName", "OutOfRangeInput"].includes(codeOf(err)), `${bad}: ${codeOf(err)}`);
  }
});

test("listTables filters on TableName with ranges and pages with NextTableName", async () => {
  const svc = t.serviceClient();
  const prefix = tableName("pg");
  const made = [];
  for (let i = 0; i < 7; i++) {
    const n = `${prefix}n${i}`;
    made.push(n);
    await svc.createTable(n);
  }
  const filter = odata`TableName ge ${prefix} and TableName lt ${prefix + "z"}`;
  const all = await names(svc.listTables({ queryOptions: { filter } }));
  assert.deepEqual(all, made);

  const pages = [];
  let token;
  for (const page of [1, 2, 3, 4]) {
    const it = svc.listTables({ queryOptions: { filter } }).byPage({ maxPageSize: 3, continuationToken: token });
    const { value, done } = await it.next();
    assert.equal(done, false, `page ${page}`);
    pages.push(value.map((x) => x.name));
    token = value.continuationToken;
    if (!token) break;
  }
  assert.deepEqual(pages, [made.slice(0, 3), made.slice(3, 6), made.slice(6)]);
  assert.equal(token, undefined);

  // $top alone is a page size: the iterator follows the continuation.
  const top = await names(svc.listTables({ queryOptions: { filter, top: 2 } }));
  assert.deepEqual(top, made);
});

test("clients made from a connection string (what an application changes) work", async () => {
  const opts = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
  const svc = TableServiceClient.fromConnectionString(t.connectionString, opts);
  const name = tableName("conn");
  await svc.createTable(name);
  const c = TableClient.fromConnectionString(t.connectionString, name, opts);
  await c.createEntity({ partitionKey: "p", rowKey: "r", v: "x" });
  assert.equal((await c.getEntity("p", "r")).v, "x");
  const props = await svc.getProperties().catch((e) => e);
  // Service properties are not in the scope; only a crash would be wrong.
  assert.ok(props && (props.statusCode === undefined || props.statusCode < 500), `getProperties: ${props?.statusCode}`);
});

test("GET Tables('name') finds a table whatever the case of the name, under its name as created", { skip: azuriteDeviation("get-table-by-name") }, async () => {
  const name = tableName("CaseT");
  await t.serviceClient().createTable(name);
  for (const asked of [name, name.toLowerCase(), name.toUpperCase()]) {
    const r = await raw(t, "GET", `/Tables('${asked}')`, { headers: { Accept: "application/json;odata=nometadata" } });
    assert.equal(r.status, 200, `${asked}: ${r.text}`);
    assert.equal(r.json.TableName, name);
  }
  const missing = await raw(t, "GET", `/Tables('${name.toLowerCase()}x')`);
  assert.equal(missing.status, 404, missing.text);
  assert.equal(errorCode(missing), "TableNotFound");
  await t.serviceClient().deleteTable(name);
});
