// Shared Key and Shared Key Lite with the account key, hand-signed (the SDK signs with
// SharedKey only); wrong keys and stale dates are refused with 403 AuthenticationFailed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTarget, tableName, azuriteDeviation } from "./harness.mjs";
import { raw, errorCode } from "./raw.mjs";

let t, table;
before(async () => {
  t = await startTarget();
  table = tableName("auth");
  await t.tableClient(table).createTable();
});
after(async () => {
  await t?.stop();
});

for (const scheme of ["SharedKey", "SharedKeyLite"]) {
  test(`${scheme}: create a table, insert, read, query, delete`, async () => {
    const name = tableName(scheme.toLowerCase());
    let r = await raw(t, "POST", "/Tables", { scheme, body: { TableName: name }, headers: { Prefer: "return-no-content" } });
    assert.equal(r.status, 204, r.text);
    r = await raw(t, "POST", `/${name}`, { scheme, body: { PartitionKey: "p", RowKey: "r", V: 1 } });
    assert.equal(r.status, 201, r.text);
    r = await raw(t, "GET", `/${name}(PartitionKey='p',RowKey='r')`, { scheme });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.V, 1);
    r = await raw(t, "GET", `/${name}()?$filter=${encodeURIComponent("V eq 1")}`, { scheme });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.value.map((e) => e.RowKey), ["r"]);
    r = await raw(t, "DELETE", `/${name}(PartitionKey='p',RowKey='r')`, { scheme, headers: { "If-Match": "*" } });
    assert.equal(r.status, 204, r.text);
    r = await raw(t, "DELETE", `/Tables('${name}')`, { scheme });
    assert.equal(r.status, 204, r.text);
  });

  test(`${scheme} signed with a wrong key: 403, nothing written`, async () => {
    const key = Buffer.alloc(64, 9).toString("base64");
    const r = await raw(t, "POST", `/${table}`, { scheme, key, body: { PartitionKey: "p", RowKey: `bad-${scheme}` } });
    assert.equal(r.status, 403, r.text);
    assert.ok(["AuthenticationFailed", "AuthorizationFailure"].includes(errorCode(r)), errorCode(r));
    const g = await raw(t, "GET", `/${table}(PartitionKey='p',RowKey='bad-${scheme}')`);
    assert.equal(g.status, 404);
  });

  test(`${scheme} signed with a wrong key: the code is AuthenticationFailed`, { skip: azuriteDeviation("authentication-failed") }, async () => {
    const key = Buffer.alloc(64, 9).toString("base64");
    const r = await raw(t, "GET", `/${table}()`, { scheme, key });
    assert.equal(r.status, 403, r.text);
    assert.equal(errorCode(r), "AuthenticationFailed");
  });
}

for (const scheme of ["SharedKey", "SharedKeyLite"]) {
  test(`${scheme}: an undated, stale, future or malformed date is refused with 403 AuthenticationFailed, nothing written`, { skip: azuriteDeviation("request-date") }, async () => {
    const cases = [
      ["no date", null],
      ["2001", "Mon, 01 Jan 2001 00:00:00 GMT"],
      ["20 minutes ago", new Date(Date.now() - 20 * 60_000).toUTCString()],
      ["20 minutes ahead", new Date(Date.now() + 20 * 60_000).toUTCString()],
      ["not a date", "not a date"],
      ["ISO 8601", new Date().toISOString()],
    ];
    for (const [what, date] of cases) {
      const r = await raw(t, "POST", `/${table}`, { scheme, date, body: { PartitionKey: `date${scheme}`, RowKey: what } });
      assert.equal(r.status, 403, `${what}: ${r.text}`);
      assert.equal(errorCode(r), "AuthenticationFailed", what);
    }
    const q = await raw(t, "GET", `/${table}()?$filter=${encodeURIComponent(`PartitionKey eq 'date${scheme}'`)}`);
    assert.equal(q.status, 200, q.text);
    assert.deepEqual(q.json.value, []);
    // Within the 15 minutes, either way.
    for (const offset of [-10, 10]) {
      const date = new Date(Date.now() + offset * 60_000).toUTCString();
      const r = await raw(t, "POST", `/${table}`, { scheme, date, body: { PartitionKey: `date${scheme}`, RowKey: `${offset}` } });
      assert.equal(r.status, 201, r.text);
    }
  });
}

test("a signature over another resource is refused (the path is signed)", async () => {
  // Sign a GET of one entity, send it for another.
  const { sign } = await import("./raw.mjs");
  const date = new Date().toUTCString();
  const signedUrl = `${t.endpoint}/${table}(PartitionKey='p',RowKey='one')`;
  const auth = sign("SharedKey", { method: "GET", url: signedUrl, date });
  const res = await fetch(`${t.endpoint}/${table}(PartitionKey='p',RowKey='two')`, {
    headers: { Authorization: auth, "x-ms-date": date, "x-ms-version": "2019-02-02", Accept: "application/json;odata=nometadata" },
    signal: AbortSignal.timeout(15_000),
  });
  assert.equal(res.status, 403);
});

test("a malformed Authorization header is refused with 403", async () => {
  for (const bad of ["SharedKey devstoreaccount1", "SharedKey nosuchaccount:abc=", "Bearer x", "SharedKey devstoreaccount1:%%%"]) {
    const res = await fetch(`${t.endpoint}/Tables`, {
      headers: { Authorization: bad, "x-ms-date": new Date().toUTCString(), "x-ms-version": "2019-02-02", Accept: "application/json;odata=nometadata" },
      signal: AbortSignal.timeout(15_000),
    });
    assert.ok([401, 403].includes(res.status), `${bad}: ${res.status}`);
    await res.text();
  }
});
