// raw.mjs: hand-signed REST requests (fetch + node:crypto) for what the SDK cannot
// send: SharedKeyLite, the 201 insert with the entity in the body, other metadata
// levels, a tampered signature.
//
// Signing follows "Authorize with Shared Key" (Table service):
//   SharedKey:     VERB\nContent-MD5\nContent-Type\nDate\nCanonicalizedResource
//   SharedKeyLite: Date\nCanonicalizedResource
// where Date is x-ms-date and CanonicalizedResource is /<account><url path> plus
// ?comp=<v> when the URL has one. With path-style URLs the path starts with the
// account again (/devstoreaccount1/devstoreaccount1/Tables), as the SDK signs it.
import { createHmac } from "node:crypto";
import { ACCOUNT, KEY } from "./harness.mjs";

export function sign(scheme, { method, url, contentType = "", date, key = KEY }) {
  const u = new URL(url);
  let resource = `/${ACCOUNT}${u.pathname}`;
  const comp = u.searchParams.get("comp");
  if (comp !== null) resource += `?comp=${comp}`;
  const toSign =
    scheme === "SharedKeyLite"
      ? `${date}\n${resource}`
      : `${method}\n\n${contentType}\n${date}\n${resource}`;
  const sig = createHmac("sha256", Buffer.from(key, "base64")).update(toSign, "utf8").digest("base64");
  return `${scheme} ${ACCOUNT}:${sig}`;
}

// One request; returns { status, headers, text, json }. `date`: the x-ms-date sent and
// signed (default now; null sends none and signs an empty date).
export async function raw(target, method, path, { body, headers = {}, scheme = "SharedKey", key, date = new Date().toUTCString() } = {}) {
  const url = `${target.endpoint}${path}`;
  const h = {
    ...(date === null ? {} : { "x-ms-date": date }),
    "x-ms-version": "2019-02-02",
    Accept: "application/json;odata=minimalmetadata",
    DataServiceVersion: "3.0;NetFx",
    ...headers,
  };
  let payload;
  if (body !== undefined) {
    payload = typeof body === "string" ? body : JSON.stringify(body);
    h["Content-Type"] = h["Content-Type"] || "application/json";
  }
  if (scheme) h.Authorization = sign(scheme, { method, url, contentType: h["Content-Type"] || "", date: date ?? "", key });
  const ac = AbortSignal.timeout(15_000);
  const res = await fetch(url, { method, headers: h, body: payload, signal: ac });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, text, json };
}

// The error code of a raw response: the x-ms-error-code header, else the body's.
export function errorCode(r) {
  return r.headers.get("x-ms-error-code") || r.json?.["odata.error"]?.code;
}

// A hand-built $batch with one changeset (what the SDK refuses to send, e.g. two
// partitions). ops: [{ method, path, body?, etag? }], path relative to the account
// ("/table" or "/table(PartitionKey='p',RowKey='r')"). Returns the raw response.
export async function rawBatch(target, ops) {
  const batch = `batch_${Math.random().toString(16).slice(2)}`;
  const cs = `changeset_${Math.random().toString(16).slice(2)}`;
  const lines = [`--${batch}`, `Content-Type: multipart/mixed; boundary=${cs}`, ""];
  for (const op of ops) {
    lines.push(`--${cs}`, "Content-Type: application/http", "Content-Transfer-Encoding: binary", "");
    lines.push(`${op.method} ${target.endpoint}${op.path} HTTP/1.1`);
    lines.push("Accept: application/json;odata=minimalmetadata", "DataServiceVersion: 3.0;");
    if (op.etag) lines.push(`If-Match: ${op.etag}`);
    if (op.body !== undefined) {
      lines.push("Content-Type: application/json", "Prefer: return-no-content", "", JSON.stringify(op.body));
    } else {
      lines.push("");
    }
  }
  lines.push(`--${cs}--`, `--${batch}--`, "");
  return raw(target, "POST", "/$batch", {
    body: lines.join("\r\n"),
    headers: { "Content-Type": `multipart/mixed; boundary=${batch}` },
  });
}
