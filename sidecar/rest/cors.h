// CORS from the config's rules (rest.cors), as the service applies its CORS
// rules: the first rule whose origin and method match (and, for a
// preflight, every requested header) answers.
//
// Thread safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "sidecar/rest/http.h"
#include "sidecar/rest/rest_config.h"

namespace sidetable::sidecar::rest {

// The first rule allowing `origin` and `method` (and `request_headers`, a
// comma-separated list; "" = none), or null.
const CorsRule* MatchCors(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
                          std::string_view request_headers);

// OPTIONS: 200 with the Access-Control-Allow-* headers, or status 403 when
// no rule matches (the caller writes the error body).
void Preflight(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
               std::string_view request_headers, HttpResponse* res);

// On an actual request with an Origin: Access-Control-Allow-Origin and
// -Expose-Headers when a rule matches.
void AddCorsHeaders(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
                    HttpResponse* res);

}  // namespace sidetable::sidecar::rest
