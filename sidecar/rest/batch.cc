// POST /<account>/$batch: one changeset, executed as one EGT (all or
// nothing), answered with the service's multipart response. A failing
// operation makes the whole changeset fail: one response part with the
// error, its message prefixed with the operation's index ("2:...").
#include <atomic>

#include "sidecar/rest/call.h"
#include "sidecar/rest/multipart.h"

namespace sidetable::sidecar::rest {
namespace {

struct Planned {
  Operation op;
  bool no_content = false;
};

// The path of an operation's URL (absolute, as SDKs write it, or a path).
std::string_view PathOf(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    const size_t slash = url.find('/', scheme + 3);
    url = slash == std::string_view::npos ? std::string_view("/") : url.substr(slash);
  }
  return url.substr(0, url.find('?'));
}

// *code: the service's error code when it is not the Status code's name
// (MissingRequiredHeader, which the engine has no code for).
Status Plan(const Call& c, const BatchRequest& b, std::string* table, Planned* out,
            std::string* code) {
  auto path = ParsePath(PathOf(b.url));
  if (!path.ok()) return path.status();
  if (path->account != c.path.account) return Status(Code::kInvalidInput, "the operation names another account");
  if (path->resource != Resource::kEntities && path->resource != Resource::kEntity) {
    return Status(Code::kInvalidInput, "a changeset holds entity operations only");
  }
  if (table->empty()) *table = path->table;
  else if (*table != path->table) return Status(Code::kInvalidInput, "all operations of a changeset must name one table");
  std::string method = b.method;
  if (method == "POST" && !b.Header("x-http-method").empty()) method = std::string(b.Header("x-http-method"));
  const std::string if_match(b.Header("if-match"));
  Operation& op = out->op;
  out->no_content = b.Header("prefer").find("return-no-content") != std::string_view::npos;
  if (path->resource == Resource::kEntities) {
    if (method != "POST") return Status(Code::kInvalidInput, "only POST (insert) may name the table itself");
    auto e = ParseEntityBody(b.body, nullptr, nullptr);
    if (!e.ok()) return e.status();
    op.kind = OpKind::kInsert;
    op.entity = std::move(e).value();
    return Status::OK();
  }
  if (method == "DELETE") {
    op.kind = OpKind::kDelete;
    op.entity.partition_key = path->pk;
    op.entity.row_key = path->rk;
    // As for a single DELETE (entities.cc): no If-Match is not "any
    // version", it is a request the service refuses.
    if (if_match.empty()) {
      *code = "MissingRequiredHeader";
      return Status(Code::kInvalidInput,
                    "An HTTP header that's mandatory for this request is not specified. (If-Match: "
                    "an ETag or *)");
    }
    op.if_match = if_match;
    return Status::OK();
  }
  const bool merge = method == "MERGE" || method == "PATCH";
  if (!merge && method != "PUT") {
    return Status(Code::kInvalidInput, "unsupported method '" + method + "' in a changeset");
  }
  auto e = ParseEntityBody(b.body, &path->pk, &path->rk);
  if (!e.ok()) return e.status();
  op.entity = std::move(e).value();
  op.kind = merge ? (if_match.empty() ? OpKind::kInsertOrMerge : OpKind::kMerge)
                  : (if_match.empty() ? OpKind::kInsertOrReplace : OpKind::kUpdate);
  op.if_match = if_match;
  return Status::OK();
}

std::string BatchId() {
  static std::atomic<uint64_t> next{1};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx-%08llx", static_cast<unsigned long long>(NowTicks()),
                static_cast<unsigned long long>(next.fetch_add(1)));
  return buf;
}

const HeaderList& PartHeaders() {
  static const HeaderList h = {{"X-Content-Type-Options", "nosniff"},
                               {"Cache-Control", "no-cache"},
                               {"DataServiceVersion", "3.0;"}};
  return h;
}

// The changeset failed: one part with the error, the index in the message.
// `code`: the service's error code, when not the Status code's name.
void SendChangesetError(Call& c, const std::string& id, const Status& s,
                        std::string_view code = {}) {
  BatchResponsePart part;
  part.status = HttpStatus(s.code()) == 0 ? 500 : HttpStatus(s.code());
  part.headers = PartHeaders();
  part.headers.emplace_back("Content-Type", ContentType(c.meta == Metadata::kNone ? Metadata::kNone : Metadata::kMinimal));
  const int index = s.op_index() < 0 ? 0 : s.op_index();
  part.body = ErrorBody(code.empty() ? ErrorCodeName(s.code()) : code,
                        ServiceMessage(std::to_string(index) + ":" + s.message(), c.request_id));
  c.res.status = 202;
  c.res.set_content(WriteBatchResponse(id, {part}), "multipart/mixed; boundary=batchresponse_" + id);
}

}  // namespace

void ServeBatch(Call& c) {
  if (c.method != "POST") {
    return SendError(c, 405, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb.");
  }
  auto requests = ParseBatch(c.Header("Content-Type"), c.req.body);
  if (!requests.ok() && requests.status().op_index() < 0) return SendStatus(c, requests.status());
  const std::string id = BatchId();
  if (!requests.ok()) return SendChangesetError(c, id, requests.status());
  std::string table;
  std::vector<Planned> planned(requests->size());
  for (size_t i = 0; i < planned.size(); i++) {
    std::string code;
    Status s = Plan(c, (*requests)[i], &table, &planned[i], &code);
    if (!s.ok())
      return SendChangesetError(c, id, Status(s.code(), s.message(), static_cast<int>(i)), code);
  }
  wire::Request r;
  r.op = wire::Op::kWrite;
  r.table = table;
  r.client_request_id = c.ClientRequestId();
  r.ops.reserve(planned.size());
  for (auto& p : planned) r.ops.push_back(p.op);  // kept for the inserts' response bodies
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) {
    // Authentication and throttling concern the request, not an operation.
    if (s.op_index() < 0 && (s.code() == Code::kServerBusy || s.code() == Code::kUnavailable)) {
      return SendStatus(c, s);
    }
    return SendChangesetError(c, id, s);
  }
  WriteResult w;
  if (Status s = wire::DecodeWrite(body, &w); !s.ok()) return SendStatus(c, s);
  std::vector<BatchResponsePart> parts(planned.size());
  Links links = c.links;
  links.table = table;
  for (size_t i = 0; i < planned.size(); i++) {
    BatchResponsePart& part = parts[i];
    part.headers = PartHeaders();
    const std::string etag = i < w.etags.size() ? w.etags[i] : "";
    if (planned[i].op.kind == OpKind::kInsert && !planned[i].no_content) {
      part.status = 201;
      Entity e = planned[i].op.entity;
      e.timestamp = w.timestamp;
      e.etag = etag;
      AppendEntity(e, c.meta, links, true, &part.body);
      part.headers.emplace_back("Content-Type", ContentType(c.meta));
      part.headers.emplace_back("Preference-Applied", "return-content");
    } else {
      part.status = 204;
      if (planned[i].op.kind == OpKind::kInsert) part.headers.emplace_back("Preference-Applied", "return-no-content");
    }
    if (!etag.empty()) part.headers.emplace_back("ETag", etag);
    // The entity's URL, as the service sends it: SDKs match sub-responses
    // to entities by the RowKey in it.
    const Entity& keys = planned[i].op.entity;
    const std::string url = c.links.base + "/" + table + "(PartitionKey=" + QuoteKey(keys.partition_key) +
                            ",RowKey=" + QuoteKey(keys.row_key) + ")";
    if (planned[i].op.kind != OpKind::kDelete) {
      part.headers.emplace_back("Location", url);
      part.headers.emplace_back("DataServiceId", url);
    }
  }
  c.res.status = 202;
  c.res.set_content(WriteBatchResponse(id, parts), "multipart/mixed; boundary=batchresponse_" + id);
}

}  // namespace sidetable::sidecar::rest
