// The HTTP side of the gateway: the listener's set-up (http_server.h),
// which requests run on its loop, the headers every response carries,
// CORS, x-ms-version, authentication, and the dispatch to tables.cc,
// entities.cc and batch.cc.
#include "sidecar/rest/gateway.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

#include "common/log_throttle.h"
#include "engine/utf8.h"
#include "sidecar/listener_policy.h"
#include "sidecar/rest/call.h"
#include "sidecar/rest/cors.h"
#include "sidecar/rest/http_server.h"
#include "sidecar/rest/shared_key.h"

namespace sidetable::sidecar::rest {

// Oldest x-ms-version served: what the current SDKs send and later.
inline constexpr std::string_view kMinVersion = "2019-02-02";
// Bodies up to this run on the listener's loop (as sidecar.inline_max_bytes
// does for the ZeroMQ frontend): larger ones would hold up every other
// connection while they are decoded.
inline constexpr size_t kInlineMaxBytes = 16 << 10;

class Gateway::Impl {
 public:
  Impl(const RestConfig& config, const Handler* handler, bool tokens_required, bool loopback)
      : config_(config), handler_(handler), tokens_required_(tokens_required),
        accounts_(EffectiveAccounts(config, loopback, tokens_required)), log_(spdlog::default_logger()->clone("rest")) {}

  void Serve(const HttpRequest& req, HttpResponse& res);
  // Logs what the 5xx throttle counted since its last line (the listener's tick).
  void WarnServerErrorsOverdue();
  // The response to what the listener refuses itself (malformed, too
  // large, over its bounds), in the service's form.
  void ListenerError(int status, const std::string& message, HttpResponse& res);
  // Cheap requests run on the listener's loop: point reads, and single-
  // entity writes when a write cannot wait (no fsync, no replica, no
  // RocksDB stall). Queries, $batch and table operations go to the pool.
  bool RunsInline(const HttpRequest& req) const;

  const RestConfig config_;
  const Handler* handler_;
  GatewayHooks hooks_;
  const bool tokens_required_;
  const std::vector<RestAccount> accounts_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<HttpServer> http_;
  std::string host_;
  int port_ = 0;
  std::atomic<uint64_t> next_id_{1};
  const pid_t pid_ = getpid();  // in every request id; a system call per request otherwise

 private:
  bool WritesMayWait() const { return !hooks_.writes_may_wait || hooks_.writes_may_wait(); }
  // A new x-ms-request-id: port, pid and a counter, GUID-shaped.
  std::string NextRequestId();
  bool Authenticate(Call& c, std::string_view raw_path, std::string_view comp);
  // The warning for a 5xx answer, one a second at most with the number
  // answered since the last: a tenant over its quota, or a full disk, must
  // not turn each refused request into a log line.
  void WarnServerError(const HttpRequest& req, const HttpResponse& res,
                       const std::string& client_id, const std::string& request_id);
  common::LogThrottle error_log_;
  void Dispatch(Call& c, std::string_view raw_path, std::string_view raw_query);
};

namespace {

std::string HttpDate() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

// An x-ms-version this gateway serves: a YYYY-MM-DD date, kMinVersion or
// later. (String order is date order for that form.) Later versions than
// any this code knows are served too, unlike the service, which refuses
// versions it does not know: the Table API has not changed for a client
// since 2019, and an SDK upgrade must not break the sidecar next to it.
bool ServedVersion(std::string_view v) {
  return v.size() == 10 && v[4] == '-' && v[7] == '-' &&
         ParseDateTime(std::string(v) + "T00:00:00Z").has_value() && v >= kMinVersion;
}

Status ParseQuery(std::string_view q, QueryParams* out) {
  size_t n = 0;
  while (!q.empty()) {
    if (++n > 64) return Status(Code::kInvalidInput, "too many query parameters");
    const size_t amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    const size_t eq = pair.find('=');
    auto key = PercentDecode(pair.substr(0, eq), true);
    if (!key.ok()) return key.status();
    auto value = PercentDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!value.ok()) return value.status();
    // A name given twice is refused, not resolved: before session 38 the last
    // one counted, so `$filter=A&$filter=B` answered B's rows (a proxy or a
    // client appending its own option silently changed the query). The
    // service has one value per option too.
    if (!key->empty() && !out->emplace(*key, std::move(value).value()).second) {
      return Status(Code::kInvalidInput,
                    "query parameter '" + ToValidUtf8(*key, 64) + "' given twice");
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return Status::OK();
}

}  // namespace

bool Gateway::Impl::Authenticate(Call& c, std::string_view raw_path, std::string_view comp) {
  if (HasSas(c.query)) {
    auto t = VerifySas(c.query, c.path.account, accounts_, NowTicks(), &c.sas_lists_tables);
    if (!t.ok()) {
      SendStatus(c, t.status());
      return false;
    }
    if (c.query.count("ss")) {
      // An account SAS names the kinds of resource it reaches: c tables, o entities.
      const std::string& srt = c.query["srt"];
      const bool entities = c.path.resource == Resource::kEntities || c.path.resource == Resource::kEntity ||
                            c.path.resource == Resource::kBatch;
      const bool tables = c.path.resource == Resource::kTables || c.path.resource == Resource::kTable;
      if ((entities && srt.find('o') == std::string::npos) || (tables && srt.find('c') == std::string::npos)) {
        SendError(c, 403, "AuthorizationResourceTypeMismatch",
                  "This request is not authorized to perform this operation using this resource type. (srt " + srt +
                      ")");
        return false;
      }
      // m (create and delete tables) comes from c, w or d; a SAS that may
      // create tables but not delete anything must not delete a table with
      // every row in it.
      if (c.path.resource == Resource::kTable && c.method == "DELETE" &&
          !AccountSasDeletesTables(c.query)) {
        SendError(c, 403, "AuthorizationPermissionMismatch",
                  "This request is not authorized to perform this operation using this permission. "
                  "(deleting a "
                  "table needs d in sp)");
        return false;
      }
      if (c.path.resource == Resource::kTables && c.method == "POST" &&
          !AccountSasCreatesTables(c.query)) {
        SendError(c, 403, "AuthorizationPermissionMismatch",
                  "This request is not authorized to perform this operation using this permission. "
                  "(creating a table needs c or w in sp)");
        return false;
      }
    }
    c.caller = t->spec.identity;
    c.principal = std::move(t).value();
    return true;
  }
  const std::string_view authorization = c.Header("Authorization");
  if (authorization.empty()) {
    SendError(c, 403, "AuthenticationFailed",
              "Server failed to authenticate the request. No Authorization header and no SAS in the query string.");
    return false;
  }
  SignedParts parts;
  parts.verb = c.req.method;
  parts.content_md5 = c.Header("Content-MD5");
  parts.content_type = c.Header("Content-Type");
  parts.date = c.Header("Date");
  parts.x_ms_date = c.Header("x-ms-date");
  parts.raw_path = raw_path;
  parts.comp = comp;
  parts.path_account = c.path.account;
  if (Status s = VerifySharedKey(authorization, parts, accounts_, NowTicks()); !s.ok()) {
    SendStatus(c, s);
    return false;
  }
  c.caller = c.path.account;
  if (tokens_required_) {
    // The account key is the whole account: every table, every permission.
    token::Token t;
    t.key_id = "account";
    t.spec.table_is_prefix = true;
    t.spec.permissions = token::kAllPermissions;
    t.spec.tenant = c.path.account;
    t.spec.identity = c.path.account;
    c.principal = std::move(t);
  }
  return true;
}

void Gateway::Impl::Dispatch(Call& c, std::string_view raw_path, std::string_view raw_query) {
  if (Status s = ParseQuery(raw_query, &c.query); !s.ok()) return SendStatus(c, s);
  const std::string_view version = c.Header("x-ms-version");
  if (!version.empty() && !ServedVersion(version)) {
    return SendError(
        c, 400, "InvalidHeaderValue",
        "The value for one of the HTTP headers is not in the correct format. (x-ms-version '" +
            std::string(version.substr(0, 64)) + "': this service serves the versions " +
            std::string(kMinVersion) + " and later)");
  }
  auto path = ParsePath(raw_path);
  if (!path.ok()) return SendStatus(c, path.status());
  c.path = std::move(path).value();
  auto meta = ParseAccept(c.Header("Accept"));
  if (c.query.count("$format")) meta = ParseAccept(c.query["$format"]);
  if (!meta) {
    return SendError(c, 415, "AtomFormatNotSupported",
                     "Atom and XML are not served by this gateway: send Accept: application/json;odata=minimalmetadata");
  }
  c.meta = *meta;
  const std::string_view content_type = c.Header("Content-Type");
  if (content_type.find("xml") != std::string_view::npos) {
    return SendError(c, 415, "AtomFormatNotSupported", "Atom and XML bodies are not served by this gateway: send JSON");
  }
  const std::string comp = c.query.count("comp") ? c.query["comp"] : "";
  if (!Authenticate(c, raw_path, comp)) {
    // In sidetable_errors_total as the ZeroMQ frontend's refused tokens
    // are (found from outside in session 41: a flood of bad signatures
    // showed in no error series). Codes the engine has no name for
    // (AuthorizationResourceTypeMismatch) count as AuthorizationFailure.
    if (hooks_.metrics != nullptr) {
      hooks_.metrics->RecordError(ParseErrorCode(c.res.get_header_value("x-ms-error-code"))
                                      .value_or(Code::kAuthorizationFailure));
    }
    return;
  }
  c.links.base = "http://" + std::string(c.Header("Host")) + "/" + c.path.account;
  c.links.table = c.path.table;
  if (c.query.count("$callback")) return SendError(c, 501, "NotImplemented", "JSONP ($callback) is not supported.");
  if (!comp.empty() || c.query.count("restype")) {
    return SendError(c, 501, "NotImplemented",
                     "This gateway does not serve comp=" + comp +
                         " (service properties, statistics and table ACLs are not supported; see docs/rest.md)");
  }
  switch (c.path.resource) {
    case Resource::kTables:
    case Resource::kTable: return ServeTables(c);
    case Resource::kEntities:
    case Resource::kEntity:
      if (c.path.table == "$metadata") break;
      return ServeEntities(c);
    case Resource::kBatch: return ServeBatch(c);
    case Resource::kService: break;
  }
  SendError(c, 501, "NotImplemented", "This resource is not served by the gateway (see docs/rest.md).");
}

void Gateway::Impl::Serve(const HttpRequest& req, HttpResponse& res) {
  const auto started = std::chrono::steady_clock::now();
  Call c{req, res};
  c.handler = handler_;
  c.hooks = &hooks_;
  c.request_id = NextRequestId();
  res.set_header("x-ms-request-id", c.request_id);
  const std::string_view version = c.Header("x-ms-version");
  res.set_header("x-ms-version",
                 ServedVersion(version) ? std::string(version) : std::string(kMinVersion));
  res.set_header("Date", HttpDate());
  const std::string client_id(c.Header("x-ms-client-request-id"));
  if (!client_id.empty()) res.set_header("x-ms-client-request-id", client_id.substr(0, 1024));
  c.method = req.method;
  if (c.method == "HEAD") c.method = "GET";  // the listener drops the body
  if (c.method == "POST") {
    const std::string_view tunnelled = c.Header("X-HTTP-Method");
    if (tunnelled == "MERGE" || tunnelled == "DELETE" || tunnelled == "PUT") c.method = std::string(tunnelled);
  }
  const std::string_view origin = c.Header("Origin");
  if (c.method == "OPTIONS") {
    Preflight(config_.cors, origin, c.Header("Access-Control-Request-Method"),
              c.Header("Access-Control-Request-Headers"), &res);
    if (res.status >= 400) SendError(c, 403, "CorsPreflightFailure", "CORS not enabled or no matching rule found for this request.");
  } else {
    const std::string_view target = req.target;
    const size_t q = target.find('?');
    Dispatch(c, target.substr(0, q), q == std::string_view::npos ? std::string_view() : target.substr(q + 1));
    if (!origin.empty()) AddCorsHeaders(config_.cors, origin, c.method, &res);
  }
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  if (log_->should_log(spdlog::level::debug)) {
    log_->debug(
        "{} {} {} -> {} in {} us (account '{}', caller '{}', clientRequestId '{}', requestId {})",
        req.method, c.method, RedactSasSignature(req.target), res.status, us, c.path.account,
        c.caller, client_id, c.request_id);
  }
  if (res.status >= 500) WarnServerError(req, res, client_id, c.request_id);
}

void Gateway::Impl::WarnServerError(const HttpRequest& req, const HttpResponse& res,
                                    const std::string& client_id, const std::string& request_id) {
  // Serve runs on the listener's loop and the pool's threads.
  const uint64_t n = error_log_.Record();
  if (n == 0) return;
  log_->warn(
      "{} {} -> {} (clientRequestId '{}', requestId {}): {} ({} answered 5xx since the last "
      "warning)",
      req.method, RedactSasSignature(req.target), res.status, client_id, request_id,
      res.get_header_value("x-ms-error-code"), n);
}

void Gateway::Impl::WarnServerErrorsOverdue() {
  // The end of a burst of 5xx answers, once it is a second old: without it
  // what a burst answered after its last warning waited for the next burst.
  if (const uint64_t n = error_log_.TakeOverdue(); n != 0) {
    log_->warn("answered 5xx {} more times after the last warning", n);
  }
}

std::string Gateway::Impl::NextRequestId() {
  char id[48];
  std::snprintf(id, sizeof id, "%08x-%04x-4000-8000-%012llx", static_cast<unsigned>(port_),
                static_cast<unsigned>(pid_ & 0xffff),
                static_cast<unsigned long long>(next_id_.fetch_add(1)));
  return id;
}

// The listener's refusals are responses like any other: a request id in the
// header and the message (the request may not even have been parsed, so
// there is nothing else to go on when a client reports one).
void Gateway::Impl::ListenerError(int status, const std::string& message, HttpResponse& res) {
  std::string code = "InvalidInput";
  switch (status) {
    case 413: code = "RequestBodyTooLarge"; break;
    case 408: code = "OperationTimedOut"; break;
    case 417: code = "InvalidHeaderValue"; break;
    case 501: code = "NotImplemented"; break;
    case 503: code = "ServerBusy"; break;
    case 505: code = "UnsupportedHttpVersion"; break;
    default: break;
  }
  std::string text = message;
  if (status == 413) text += " (rest.max_body_mb: " + std::to_string(config_.max_body_bytes >> 20) + " MiB)";
  const std::string request_id = NextRequestId();
  res.status = status;
  res.set_header("x-ms-request-id", request_id);
  res.set_header("x-ms-error-code", code);
  res.set_header("x-ms-version", std::string(kMinVersion));
  res.set_header("Date", HttpDate());
  res.set_content(ErrorBody(code, ServiceMessage(text, request_id)),
                  ContentType(Metadata::kMinimal));
}

bool Gateway::Impl::RunsInline(const HttpRequest& req) const {
  if (req.body.size() > kInlineMaxBytes) return false;
  const std::string_view target = req.target;
  const std::string_view path = target.substr(0, target.find('?'));
  // /<account>/<resource>: only single-entity resources, "name(keys)".
  const size_t slash = path.find('/', 1);
  if (slash == std::string_view::npos) return false;
  const std::string_view resource = path.substr(slash + 1);
  if (resource.size() < 3 || resource.back() != ')' || resource[resource.size() - 2] == '(') {
    // A collection: an insert is a single write, a query is not.
    const bool insert = req.method == "POST" && req.Header("X-HTTP-Method").empty() && !resource.empty() &&
                        resource.find('/') == std::string_view::npos && resource.find('(') == std::string_view::npos &&
                        resource != "Tables" && resource != "$batch";
    return insert && !WritesMayWait();
  }
  if (resource.size() >= 7 && resource.substr(0, 7) == "Tables(") return req.method == "GET";
  if (req.method == "GET" || req.method == "HEAD") return true;
  return !WritesMayWait();
}

Result<std::unique_ptr<Gateway>> Gateway::Start(const RestConfig& config, const Handler* handler,
                                                bool tokens_required, GatewayHooks hooks) {
  const std::string& hp = config.address;
  const size_t colon = hp.rfind(':');
  if (colon == std::string::npos) return Status(Code::kInvalidInput, "rest.address: expected host:port, got '" + hp + "'");
  std::string host = hp.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(hp.substr(colon + 1));
  } catch (...) {
    return Status(Code::kInvalidInput, "rest.address: bad port in '" + hp + "'");
  }
  if (port < 0 || port > 65535) return Status(Code::kInvalidInput, "rest.address: bad port in '" + hp + "'");
  std::unique_ptr<Gateway> g(new Gateway());
  g->impl_ = std::make_unique<Impl>(config, handler, tokens_required, IsLoopbackHostPort(hp));
  Impl* impl = g->impl_.get();
  impl->hooks_ = hooks;
  if (host == "localhost") host = "127.0.0.1";
  HttpServerOptions o;
  o.host = host;
  o.port = port;
  o.pool_threads = config.threads;
  o.io_threads = config.io_threads;
  o.max_connections = config.max_connections;
  o.max_buffered_bytes = config.max_buffered_bytes;
  o.idle_timeout_ms = config.idle_timeout_ms;
  o.request_timeout_ms = config.request_timeout_ms;
  o.limits.max_body_bytes = config.max_body_bytes;
  HttpServerCallbacks cb;
  cb.handle = [impl](HttpRequest& req, HttpResponse& res) { impl->Serve(req, res); };
  cb.runs_inline = [impl](const HttpRequest& req) { return impl->RunsInline(req); };
  cb.error = [impl](int status, const std::string& message, HttpResponse& res) { impl->ListenerError(status, message, res); };
  cb.tick = [impl] { impl->WarnServerErrorsOverdue(); };
  auto server = HttpServer::Start(o, std::move(cb));
  if (!server.ok()) return server.status();
  impl->http_ = std::move(server).value();
  impl->host_ = host;
  impl->port_ = impl->http_->port();
  std::string names;
  for (const auto& a : impl->accounts_) names += (names.empty() ? "" : ", ") + a.name;
  spdlog::info("Azure Table REST gateway on http://{}:{}/<account> (accounts: {})", host, impl->port_,
               names.empty() ? "none: every request will be refused" : names);
  if (!config.exposed_keys_file.empty()) {
    spdlog::warn(
        "rest.accounts: {} holds account keys and group or others may read it: an account key "
        "reaches "
        "every table; chmod 600 it, or move the keys to key_file (owner-only)",
        config.exposed_keys_file);
  }
  return g;
}

HttpServerStats Gateway::Stats() const { return impl_->http_ ? impl_->http_->Stats() : HttpServerStats{}; }

std::string Gateway::address() const { return impl_->host_ + ":" + std::to_string(impl_->port_); }

void Gateway::Stop() {
  if (impl_ && impl_->http_) impl_->http_->Stop();
}

Gateway::~Gateway() { Stop(); }

}  // namespace sidetable::sidecar::rest
