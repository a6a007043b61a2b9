// Entity operations: insert, get, query, update/merge (and their upserts
// without If-Match), delete.

#include "sidecar/rest/call.h"

namespace sidetable::sidecar::rest {
namespace {

Result<std::vector<std::string>> Select(const Call& c) {
  std::vector<std::string> out;
  auto it = c.query.find("$select");
  if (it == c.query.end() || it->second.empty()) return out;
  std::string_view s = it->second;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view name = s.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) return Status(Code::kInvalidInput, "$select has an empty property name");
    if (name != "*") out.emplace_back(name);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  if (out.size() > 255) return Status(Code::kInvalidInput, "$select names more than 255 properties");
  return out;
}

void Insert(Call& c) {
  auto e = ParseEntityBody(c.req.body, nullptr, nullptr);
  if (!e.ok()) return SendStatus(c, e.status());
  wire::Request r;
  r.op = wire::Op::kWrite;
  r.table = c.path.table;
  r.no_content = c.PrefersNoContent();
  r.client_request_id = c.ClientRequestId();
  r.ops.push_back(Operation{OpKind::kInsert, std::move(e).value(), "", 0});
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  WriteResult w;
  if (Status s = wire::DecodeWrite(body, &w); !s.ok()) return SendStatus(c, s);
  if (!w.etags.empty()) c.res.set_header("ETag", w.etags[0]);
  const Entity& keys = r.ops[0].entity;
  const std::string url = c.links.base + "/" + c.path.table + "(PartitionKey=" + QuoteKey(keys.partition_key) +
                          ",RowKey=" + QuoteKey(keys.row_key) + ")";
  c.res.set_header("Location", url);
  c.res.set_header("DataServiceId", url);
  if (r.no_content || !w.entity) {
    c.res.status = 204;
    c.res.set_header("Preference-Applied", "return-no-content");
    return;
  }
  c.res.set_header("Preference-Applied", "return-content");
  std::string out;
  AppendEntity(*w.entity, c.meta, c.links, true, &out);
  SendJson(c, 201, std::move(out));
}

void GetOne(Call& c) {
  auto select = Select(c);
  if (!select.ok()) return SendStatus(c, select.status());
  wire::Request r;
  r.op = wire::Op::kGet;
  r.table = c.path.table;
  r.pk = c.path.pk;
  r.rk = c.path.rk;
  r.select = std::move(select).value();
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  Entity e;
  if (Status s = wire::DecodeEntityReply(body, &e); !s.ok()) return SendStatus(c, s);
  if (!e.etag.empty()) c.res.set_header("ETag", e.etag);
  std::string out;
  AppendEntity(e, c.meta, c.links, true, &out, &r.select);
  SendJson(c, 200, std::move(out));
}

void QueryEntities(Call& c) {
  auto select = Select(c);
  if (!select.ok()) return SendStatus(c, select.status());
  wire::Request r;
  r.op = wire::Op::kQuery;
  r.table = c.path.table;
  r.select = std::move(select).value();
  if (auto it = c.query.find("$filter"); it != c.query.end()) r.filter = it->second;
  if (!ParseTop(c, &r)) return;
  if (auto it = c.query.find("NextPartitionKey"); it != c.query.end()) {
    auto pk = DecodeToken(it->second);
    if (!pk) return SendError(c, 400, "InvalidInput", "NextPartitionKey is not a continuation token of this service");
    r.next_pk = *pk;
    r.next_rk = "";
    if (auto rk_it = c.query.find("NextRowKey"); rk_it != c.query.end()) {
      auto rk = DecodeToken(rk_it->second);
      if (!rk) return SendError(c, 400, "InvalidInput", "NextRowKey is not a continuation token of this service");
      r.next_rk = *rk;
    }
  } else if (c.query.count("NextRowKey")) {
    // Without its partition the token names no place: before session 38 it
    // was ignored and the query started over, so a client that lost
    // NextPartitionKey read the first page again, for ever. The ZeroMQ
    // protocol refuses the same (npk without nrk, or nrk without npk).
    return SendError(c, 400, "InvalidInput", "NextRowKey needs NextPartitionKey");
  }
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  wire::QueryReply reply;
  if (Status s = wire::DecodeQuery(body, &reply); !s.ok()) return SendStatus(c, s);
  if (reply.next_pk) {
    c.res.set_header("x-ms-continuation-NextPartitionKey", EncodeToken(*reply.next_pk));
    c.res.set_header("x-ms-continuation-NextRowKey", EncodeToken(reply.next_rk.value_or("")));
  }
  SendJson(c, 200, EntityPage(reply.entities, c.meta, c.links, &r.select));
}

// PUT (replace), MERGE/PATCH (merge); without If-Match the upserts.
void Write(Call& c, bool merge) {
  auto e = ParseEntityBody(c.req.body, &c.path.pk, &c.path.rk);
  if (!e.ok()) return SendStatus(c, e.status());
  const std::string if_match(c.Header("If-Match"));
  OpKind kind = merge ? (if_match.empty() ? OpKind::kInsertOrMerge : OpKind::kMerge)
                      : (if_match.empty() ? OpKind::kInsertOrReplace : OpKind::kUpdate);
  wire::Request r;
  r.op = wire::Op::kWrite;
  r.table = c.path.table;
  r.client_request_id = c.ClientRequestId();
  r.ops.push_back(Operation{kind, std::move(e).value(), if_match, 0});
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  WriteResult w;
  if (Status s = wire::DecodeWrite(body, &w); !s.ok()) return SendStatus(c, s);
  if (!w.etags.empty()) c.res.set_header("ETag", w.etags[0]);
  c.res.status = 204;
}

void DeleteEntity(Call& c) {
  const std::string if_match(c.Header("If-Match"));
  if (if_match.empty()) {
    return SendError(c, 400, "MissingRequiredHeader",
                     "An HTTP header that's mandatory for this request is not specified. (If-Match: an ETag or *)");
  }
  wire::Request r;
  r.op = wire::Op::kWrite;
  r.table = c.path.table;
  r.client_request_id = c.ClientRequestId();
  Entity e;
  e.partition_key = c.path.pk;
  e.row_key = c.path.rk;
  r.ops.push_back(Operation{OpKind::kDelete, std::move(e), if_match, 0});
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  c.res.status = 204;
}

}  // namespace

void ServeEntities(Call& c) {
  if (c.path.resource == Resource::kEntities) {
    if (c.method == "POST") return Insert(c);
    if (c.method == "GET") return QueryEntities(c);
  } else {
    if (c.method == "GET") return GetOne(c);
    if (c.method == "PUT") return Write(c, false);
    if (c.method == "MERGE" || c.method == "PATCH") return Write(c, true);
    if (c.method == "DELETE") return DeleteEntity(c);
  }
  SendError(c, 405, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb.");
}

}  // namespace sidetable::sidecar::rest
