// Typed values at their edges: Int32, Int64, Double (NaN, ±Infinity, -0, extremes),
// String near 64 KiB, Binary (empty, 64 KiB), Guid, DateTime (7 fractional digits,
// the range ends), Boolean, unicode and quotes in keys; the metadata levels.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { odata } from "@azure/data-tables";
import { startTarget, tableName, expectRestError, azuriteDeviation } from "./harness.mjs";
import { raw } from "./raw.mjs";

let t, c, table;
before(async () => {
  t = await startTarget();
  table = tableName("types");
  c = t.tableClient(table);
  await c.createTable();
});
after(async () => {
  await t?.stop();
});

let seq = 0;
// Writes the properties, reads them back with every value as {value, type} (no
// conversion, so DateTime keeps 7 digits and Int64 stays a string).
async function roundTrip(props, how = "create") {
  const rowKey = `r${++seq}`;
  const e = { partitionKey: "types", rowKey, ...props };
  if (how === "create") await c.createEntity(e);
  else await c.upsertEntity(e, how);
  const got = await c.getEntity("types", rowKey, { disableTypeConversion: true });
  const out = {};
  for (const k of Object.keys(props)) out[k] = got[k];
  return { out, rowKey, got };
}

test("Int32 at its limits", async () => {
  const { out } = await roundTrip({ lo: -2147483648, hi: 2147483647, zero: 0 });
  assert.deepEqual(out, {
    lo: { value: "-2147483648", type: "Int32" },
    hi: { value: "2147483647", type: "Int32" },
    zero: { value: "0", type: "Int32" },
  });
  const { got } = await roundTrip({ n: 7 });
  const plain = await c.getEntity("types", got.rowKey);
  assert.equal(plain.n, 7);
});

test("Int64 at its limits, as {value, type: 'Int64'}, comes back as BigInt by default", async () => {
  const { out, rowKey } = await roundTrip({
    lo: { value: "-9223372036854775808", type: "Int64" },
    hi: { value: "9223372036854775807", type: "Int64" },
    small: { value: "1", type: "Int64" },
  });
  assert.deepEqual(out, {
    lo: { value: "-9223372036854775808", type: "Int64" },
    hi: { value: "9223372036854775807", type: "Int64" },
    small: { value: "1", type: "Int64" },
  });
  const plain = await c.getEntity("types", rowKey);
  assert.equal(plain.hi, 9223372036854775807n);
  assert.equal(plain.lo, -9223372036854775808n);
  const { out: big } = await roundTrip({ b: 12345678901234n });
  assert.deepEqual(big.b, { value: "12345678901234", type: "Int64" });
});

test("typed values out of their range or malformed (Int32, Int64, Guid, DateTime) are rejected with 400", { skip: azuriteDeviation("typed-value-validation") }, async () => {
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "bad32", v: { value: "2147483648", type: "Int32" } }), 400);
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "bad64", v: { value: "9223372036854775808", type: "Int64" } }), 400);
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "badguid", v: { value: "not-a-guid", type: "Guid" } }), 400);
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "baddt", v: { value: "1600-12-31T23:59:59.9999999Z", type: "DateTime" } }), 400);
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "baddt2", v: { value: "yesterday", type: "DateTime" } }), 400);
});

test("Double: NaN, Infinity, -Infinity, -0, the extremes and whole numbers keep their type", async () => {
  const { out, rowKey } = await roundTrip({
    nan: { value: "NaN", type: "Double" },
    inf: { value: "Infinity", type: "Double" },
    ninf: { value: "-Infinity", type: "Double" },
    tiny: 5e-324,
    huge: 1.7976931348623157e308,
    tenth: 0.1,
    neg: -2.5,
  });
  assert.deepEqual(out, {
    nan: { value: "NaN", type: "Double" },
    inf: { value: "Infinity", type: "Double" },
    ninf: { value: "-Infinity", type: "Double" },
    tiny: { value: "5e-324", type: "Double" },
    huge: { value: "1.7976931348623157e+308", type: "Double" },
    tenth: { value: "0.1", type: "Double" },
    neg: { value: "-2.5", type: "Double" },
  });
  // NaN etc. arrive as strings with an Edm.Double annotation; the SDK passes the string on.
  const plain = await c.getEntity("types", rowKey);
  assert.equal(plain.nan, "NaN");
  assert.equal(plain.inf, "Infinity");
  // A whole-number Double (2.0, -0.0) is written with an Edm.Double annotation and must
  // stay a Double: the SDK cannot tell 2.0 from 2 in JSON, so look at the raw body.
  // (-0 cannot go through the SDK: JSON.stringify(-0) is "0"; it is sent by hand.)
  await c.createEntity({ partitionKey: "types", rowKey: "dbl", two: { value: 2, type: "Double" }, int: 2 });
  const w = await raw(t, "POST", `/${table}`, {
    body: '{"PartitionKey":"types","RowKey":"negzero","negzero":-0.0,"negzero@odata.type":"Edm.Double"}',
    headers: { Prefer: "return-no-content" },
  });
  assert.equal(w.status, 204, w.text);
  const nz = await raw(t, "GET", `/${table}(PartitionKey='types',RowKey='negzero')`, { headers: { Accept: "application/json;odata=nometadata" } });
  assert.match(nz.text, /"negzero":-?0(\.0+|E[+-]?0+)/i, nz.text);
  assert.ok(nz.json.negzero === 0, `-0.0 came back as ${nz.json.negzero}`); // the sign may be kept (-0) or not
  const r = await raw(t, "GET", `/${table}(PartitionKey='types',RowKey='dbl')`, { headers: { Accept: "application/json;odata=nometadata" } });
  assert.equal(r.status, 200);
  assert.match(r.text, /"two":2(\.0+)?(E\+?0+)?[,}]/i);
  assert.doesNotMatch(r.text, /"two":2[,}]/, `a Double came back as an integer: ${r.text}`);
  assert.match(r.text, /"int":2[,}]/);
  // And a Double filter matches it.
  const hits = [];
  for await (const e of c.listEntities({ queryOptions: { filter: `PartitionKey eq 'types' and two eq 2.0` } })) hits.push(e.rowKey);
  assert.deepEqual(hits, ["dbl"]);
});

test("String: 32,768 UTF-16 code units (64 KiB) fit, one more is 400 PropertyValueTooLarge", async () => {
  const s = "x".repeat(32767) + "é";
  const { out } = await roundTrip({ s });
  assert.ok(out.s.value === s, `string of ${s.length} changed: ${out.s.value?.length} units back`);
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "s2", s: "x".repeat(32769) }), 400, "PropertyValueTooLarge");
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "s3", s: "😀".repeat(16384) + "a" }), 400, "PropertyValueTooLarge");
  await expectRestError(c.upsertEntity({ partitionKey: "types", rowKey: "s4", s: "é".repeat(32769) }, "Merge"), 400, "PropertyValueTooLarge");
});

test("a 64 KiB string of 4-byte characters (surrogate pairs count two) round-trips unchanged", { skip: azuriteDeviation("utf8-chunk-boundary") }, async () => {
  const emoji = "😀".repeat(16384);
  const { out } = await roundTrip({ e: emoji });
  assert.ok(out.e.value === emoji, `string changed: ${out.e.value?.length} units back`);
  const mixed = "aé€😀".repeat(6553);
  const { out: o2 } = await roundTrip({ m: mixed }, "Replace");
  assert.ok(o2.m.value === mixed, `string changed: ${o2.m.value?.length} units back`);
});

test("Binary: empty and 64 KiB fit, one byte more is 400 PropertyValueTooLarge", async () => {
  const full = new Uint8Array(65536).map((_, i) => (i * 31) & 0xff);
  const { out, rowKey } = await roundTrip({ empty: new Uint8Array(0), full, small: new Uint8Array([0, 255, 1]) });
  assert.deepEqual(out.empty, { value: "", type: "Binary" });
  assert.ok(out.full.value === Buffer.from(full).toString("base64"), "64 KiB binary changed");
  const plain = await c.getEntity("types", rowKey);
  assert.ok(plain.empty instanceof Uint8Array);
  assert.equal(plain.empty.length, 0);
  assert.deepEqual([...plain.small], [0, 255, 1]);
  await expectRestError(c.createEntity({ partitionKey: "types", rowKey: "b2", b: new Uint8Array(65537) }), 400, "PropertyValueTooLarge");
});

test("Guid and Boolean", async () => {
  const g = "c9da6455-213d-42c9-9a79-3e9149a57833";
  const { out, rowKey } = await roundTrip({ g: { value: g, type: "Guid" }, yes: true, no: false });
  assert.deepEqual(out, { g: { value: g, type: "Guid" }, yes: { value: "true", type: "Boolean" }, no: { value: "false", type: "Boolean" } });
  const hits = [];
  for await (const e of c.listEntities({ queryOptions: { filter: `PartitionKey eq 'types' and g eq guid'${g}' and yes eq true` } })) hits.push(e.rowKey);
  assert.deepEqual(hits, [rowKey]);
});

test("DateTime: 7 fractional digits and the range ends survive; a JS Date round-trips", async () => {
  const { out, rowKey } = await roundTrip({
    d7: { value: "2020-01-02T03:04:05.1234567Z", type: "DateTime" },
    min: { value: "1601-01-01T00:00:00.0000000Z", type: "DateTime" },
    max: { value: "9999-12-31T23:59:59.9999999Z", type: "DateTime" },
    js: new Date("2021-06-07T08:09:10.123Z"),
  });
  assert.equal(out.d7.value, "2020-01-02T03:04:05.1234567Z");
  assert.equal(out.d7.type, "DateTime");
  assert.equal(out.min.value, "1601-01-01T00:00:00.0000000Z");
  assert.equal(out.max.value, "9999-12-31T23:59:59.9999999Z");
  assert.equal(new Date(out.js.value).toISOString(), "2021-06-07T08:09:10.123Z");
  const plain = await c.getEntity("types", rowKey);
  assert.ok(plain.js instanceof Date);
  assert.equal(plain.js.toISOString(), "2021-06-07T08:09:10.123Z");
});

test("DateTime filters compare at 100 ns precision", { skip: azuriteDeviation("datetime-filter-precision") }, async () => {
  const { rowKey } = await roundTrip({ d7f: { value: "2020-01-02T03:04:05.1234567Z", type: "DateTime" } });
  const q = async (f) => {
    const hits = [];
    for await (const e of c.listEntities({ queryOptions: { filter: `PartitionKey eq 'types' and ${f}` } })) hits.push(e.rowKey);
    return hits;
  };
  assert.deepEqual(await q(`d7f eq datetime'2020-01-02T03:04:05.1234567Z'`), [rowKey]);
  assert.deepEqual(await q(`d7f gt datetime'2020-01-02T03:04:05.1234566Z' and d7f lt datetime'2020-01-02T03:04:05.1234568Z'`), [rowKey]);
  assert.deepEqual(await q(`d7f eq datetime'2020-01-02T03:04:05.1234566Z'`), []);
  assert.deepEqual(await q(`d7f eq datetime'2020-01-02T03:04:05.123Z'`), []);
});

test("unicode, quotes, spaces and percent signs in keys: get, update, delete, filter", async () => {
  const keys = [
    ["O'Brien", "it's"],
    ["''", "'"],
    ["ключ", "値"],
    ["😀 emoji", "a%20b%"],
    ["with space", "tab\tno"],
  ];
  const tk = t.tableClient(table);
  for (const [pk, rk] of keys) {
    if (rk.includes("\t")) continue; // control characters are not allowed; tested in errors
    const { etag } = await tk.createEntity({ partitionKey: pk, rowKey: rk, v: 1 });
    const got = await tk.getEntity(pk, rk);
    assert.equal(got.partitionKey, pk);
    assert.equal(got.rowKey, rk);
    await tk.updateEntity({ partitionKey: pk, rowKey: rk, v: 2 }, "Merge", { etag });
    const hits = [];
    for await (const e of tk.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${pk} and RowKey eq ${rk}` } })) hits.push([e.partitionKey, e.rowKey, e.v]);
    assert.deepEqual(hits, [[pk, rk, 2]]);
    await tk.submitTransaction([["update", { partitionKey: pk, rowKey: rk, v: 3 }, "Replace"]]);
    assert.equal((await tk.getEntity(pk, rk)).v, 3);
    await tk.deleteEntity(pk, rk);
    await expectRestError(tk.getEntity(pk, rk), 404, "ResourceNotFound");
  }
});

test("empty PartitionKey and RowKey are allowed", async () => {
  await c.createEntity({ partitionKey: "", rowKey: "", v: 1 });
  const got = await c.getEntity("", "");
  assert.equal(got.v, 1);
  await c.deleteEntity("", "");
});

test("the three JSON metadata levels", async () => {
  await c.createEntity({ partitionKey: "meta", rowKey: "m", big: { value: "5", type: "Int64" }, s: "x" });
  const url = `/${table}(PartitionKey='meta',RowKey='m')`;
  const none = await raw(t, "GET", url, { headers: { Accept: "application/json;odata=nometadata" } });
  assert.equal(none.status, 200);
  assert.match(none.headers.get("content-type"), /odata=nometadata/);
  assert.equal(none.json.big, "5");
  assert.equal(Object.keys(none.json).some((k) => k.startsWith("odata.") || k.includes("@odata")), false, none.text);
  const min = await raw(t, "GET", url, { headers: { Accept: "application/json;odata=minimalmetadata" } });
  assert.match(min.headers.get("content-type"), /odata=minimalmetadata/);
  assert.equal(min.json["big@odata.type"], "Edm.Int64");
  assert.ok(min.json["odata.etag"]);
  assert.ok(min.json["odata.metadata"]);
  const full = await raw(t, "GET", url, { headers: { Accept: "application/json;odata=fullmetadata" } });
  assert.match(full.headers.get("content-type"), /odata=fullmetadata/);
  assert.equal(full.json["big@odata.type"], "Edm.Int64");
  assert.equal(full.json["Timestamp@odata.type"], "Edm.DateTime");
  for (const k of ["odata.etag", "odata.metadata", "odata.id", "odata.editLink", "odata.type"]) assert.ok(full.json[k], `${k} in ${full.text}`);
  const q = await raw(t, "GET", `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'meta'")}`, { headers: { Accept: "application/json;odata=nometadata" } });
  assert.equal(q.status, 200);
  assert.deepEqual(q.json.value.map((e) => e.RowKey), ["m"]);
});

test("x-ms-client-request-id is echoed", async () => {
  const r = await raw(t, "GET", "/Tables", { headers: { "x-ms-client-request-id": "sdk-test-42" } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("x-ms-client-request-id"), "sdk-test-42");
  assert.ok(r.headers.get("x-ms-request-id"));
  assert.ok(r.headers.get("x-ms-version"));
});
