#include "sidecar/rest/cors.h"

#include <algorithm>

namespace sidetable::sidecar::rest {
namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

bool HeaderAllowed(const CorsRule& r, std::string_view header) {
  const std::string h = LowerAscii(header);
  for (const auto& a : r.allowed_headers) {
    if (a == "*" || a == h) return true;
    // A rule may allow a prefix: x-ms-meta*
    if (!a.empty() && a.back() == '*' && h.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0) return true;
  }
  return false;
}

}  // namespace

const CorsRule* MatchCors(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
                          std::string_view request_headers) {
  if (origin.empty()) return nullptr;
  for (const auto& r : rules) {
    const bool origin_ok = std::any_of(
        r.allowed_origins.begin(), r.allowed_origins.end(),
        [&](const std::string& o) { return o == "*" || LowerAscii(o) == LowerAscii(origin); });
    const bool method_ok = std::find(r.allowed_methods.begin(), r.allowed_methods.end(), method) != r.allowed_methods.end();
    if (!origin_ok || !method_ok) continue;
    bool headers_ok = true;
    std::string_view rest = request_headers;
    while (headers_ok && !rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view h = rest.substr(0, comma);
      while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
      while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
      if (!h.empty()) headers_ok = HeaderAllowed(r, h);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (headers_ok) return &r;
  }
  return nullptr;
}

void Preflight(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
               std::string_view request_headers, HttpResponse* res) {
  const CorsRule* r = MatchCors(rules, origin, method, request_headers);
  if (r == nullptr) {
    res->status = 403;
    return;
  }
  res->status = 200;
  const bool any = std::find(r->allowed_origins.begin(), r->allowed_origins.end(), "*") != r->allowed_origins.end();
  res->set_header("Access-Control-Allow-Origin", any ? std::string("*") : std::string(origin));
  res->set_header("Access-Control-Allow-Methods", Join(r->allowed_methods));
  if (!request_headers.empty()) res->set_header("Access-Control-Allow-Headers", std::string(request_headers));
  if (r->max_age_seconds > 0) res->set_header("Access-Control-Max-Age", std::to_string(r->max_age_seconds));
  if (!any) res->set_header("Vary", "Origin");
}

void AddCorsHeaders(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
                    HttpResponse* res) {
  const CorsRule* r = MatchCors(rules, origin, method, "");
  if (r == nullptr) return;
  const bool any = std::find(r->allowed_origins.begin(), r->allowed_origins.end(), "*") != r->allowed_origins.end();
  res->set_header("Access-Control-Allow-Origin", any ? std::string("*") : std::string(origin));
  if (!r->exposed_headers.empty()) res->set_header("Access-Control-Expose-Headers", Join(r->exposed_headers));
  if (!any) res->set_header("Vary", "Origin");
}

}  // namespace sidetable::sidecar::rest
