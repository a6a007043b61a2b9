#include "sidecar/rest/call.h"

#include <charconv>

#include "engine/limits.h"
#include "events/base64.h"
#include "sidecar/admission.h"
#include "sidecar/auth/tenant_metrics.h"
#include "sidecar/auth/tenant_quotas.h"
#include "sidecar/metrics.h"

namespace sidetable::sidecar::rest {

std::string_view Call::Header(const char* name) const {
  return req.Header(name);
}

std::string Call::ClientRequestId() const {
  const std::string_view id = Header("x-ms-client-request-id");
  if (id.empty() || !ValidateClientRequestId(id).ok()) return "";
  return std::string(id);
}

Status Call::Execute(wire::Request& r, std::string* frame, std::string_view* body) const {
  r.caller = caller;
  const auto started = std::chrono::steady_clock::now();
  const uint64_t bytes_in = req.body.size();
  const std::string* tenant = principal ? &principal->spec.tenant : nullptr;
  if (tenant != nullptr && hooks != nullptr && hooks->quotas != nullptr &&
      !hooks->quotas->TryAdmit(*tenant, bytes_in, started)) {
    if (hooks->tenant_metrics != nullptr) hooks->tenant_metrics->Record(*tenant, Code::kServerBusy, bytes_in, 0, 0);
    if (hooks->metrics != nullptr) hooks->metrics->RecordBusy(BusyReason::kTenantQuota);
    return Status(Code::kServerBusy, "tenant '" + *tenant + "' is over its quota (auth.quotas); retry later");
  }
  uint64_t entities = 0;
  // Without await_lsn the Handler waits until the write is durable itself.
  const Code code = handler->Handle(r, Principal(), frame, &entities);
  if (hooks != nullptr && hooks->metrics != nullptr) {
    hooks->metrics->RecordRequest(r.op, code,
                                  static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                            std::chrono::steady_clock::now() - started)
                                                            .count()));
  }
  if (tenant != nullptr && hooks != nullptr) {
    if (hooks->tenant_metrics != nullptr) hooks->tenant_metrics->Record(*tenant, code, bytes_in, frame->size(), entities);
    if (hooks->quotas != nullptr) hooks->quotas->Release(*tenant);
  }
  wire::Header h;
  return wire::DecodeReply(*frame, &h, body);
}

std::string ServiceMessage(std::string_view message, std::string_view request_id) {
  std::string m(message);
  m += "\nRequestId:";
  m.append(request_id);
  m += "\nTime:";
  m += FormatDateTime(NowTicks());
  return m;
}

void SendError(Call& c, int status, std::string_view code, std::string_view message) {
  c.res.status = status;
  c.res.set_header("x-ms-error-code", std::string(code));
  c.res.set_content(ErrorBody(code, ServiceMessage(message, c.request_id)), ContentType(c.meta == Metadata::kNone ? Metadata::kNone : Metadata::kMinimal));
}

void SendStatus(Call& c, const Status& s) {
  const int http = HttpStatus(s.code());
  SendError(c, http == 0 ? 500 : http, ErrorCodeName(s.code()), s.message());
}

void SendJson(Call& c, int status, std::string body) {
  c.res.status = status;
  c.res.set_content(std::move(body), ContentType(c.meta));
}

std::string EncodeToken(std::string_view key) {
  std::string b = json::Base64Encode(key);
  for (char& ch : b) {
    if (ch == '+') ch = '-';
    else if (ch == '/') ch = '_';
  }
  while (!b.empty() && b.back() == '=') b.pop_back();
  return "1!" + b;  // a version prefix, as the service's tokens carry one
}

std::optional<std::string> DecodeToken(std::string_view token) {
  if (token.substr(0, 2) != "1!") return std::nullopt;
  std::string b(token.substr(2));
  for (char& ch : b) {
    if (ch == '-') ch = '+';
    else if (ch == '_') ch = '/';
  }
  while (b.size() % 4 != 0) b += '=';
  return json::Base64Decode(b);
}

bool ParseTop(Call& c, wire::Request* r) {
  auto it = c.query.find("$top");
  if (it == c.query.end()) return true;
  int64_t top = 0;
  auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), top);
  if (ec != std::errc() || end != it->second.data() + it->second.size()) {
    SendError(c, 400, "InvalidInput", "$top must be an integer between 1 and 1000");
    return false;
  }
  r->top = top;
  return true;
}

}  // namespace sidetable::sidecar::rest
